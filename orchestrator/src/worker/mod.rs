//! Worker processes: kernels run out of process by default.
//!
//! A worker is the `koas` executable started with [`WORKER_ARG`] as its
//! only argument (a hidden mode: `--help` never shows it). It loads plugin
//! libraries with the same loader as the host, calls them through the same
//! C ABI, and relays everything to its parent over its stdin and stdout, so
//! a plugin cannot tell whether it runs in a worker or inside `koas`:
//!
//! ```text
//! parent (koas)                                  worker (koas __koas-worker)
//!   Run {library, index, limits} + request  ──►    load (once), setrlimit, run
//!   Reply {id, answer}                      ──►    ◄── Log / Progress        (fire and forget)
//!   Cancel                                  ──►    ◄── Call {id, header} + body (write_file,
//!                                                        append_file, llm_complete: waits for Reply)
//!                                                  ◄── Done {left_threads} + the plugin's answer (JSON)
//! ```
//!
//! Frames are `u32` header length, `u64` body length (little endian), a
//! JSON header and raw body bytes. The parent answers host calls with the
//! same [`RunHost`](crate::host::RunHost) as in-process runs, each on a
//! thread of its own so that a kernel's parallel LLM calls stay parallel.
//!
//! What the parent does with a worker ([`pool`]): keeps idle workers for
//! the next kernel (one process serves many kernels and libraries, at most
//! `--jobs` busy at a time); kills one that runs past its timeout or does
//! not stop within [`CANCEL_GRACE`](crate::limits::CANCEL_GRACE) of a
//! cancellation; and turns a worker that dies — a signal, an abort, an
//! `exit()` — into a failed kernel with the exit status and the tail of
//! its stderr.
//!
//! Each worker leads a process group of its own (`group.rs`): a Ctrl-C on
//! the terminal reaches only `koas`, which forwards it as a cancellation,
//! and whatever a plugin forks stays in the group. The parent watches the
//! worker's exit, not only its pipe (a forked child keeps the pipe open),
//! and kills the whole group whenever a worker ends, fails, times out or
//! is retired; a worker whose stdin closes (`koas` is done or gone) kills
//! its own group, so nothing a plugin forked outlives `koas`.
//!
//! A worker that dies after its kernel answered — a thread the plugin left
//! behind calls `exit()` or crashes — is blamed on the kernel that left
//! threads running (each `Done` says how many it left), never on the
//! kernel that happens to run next: that one is run again on a fresh
//! worker.

pub(crate) mod group;
pub mod pool;
pub mod serve;

use koas_kernel_api::protocol::HostCallResponse;
use koas_kernel_api::KernelSpec;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::path::PathBuf;

pub use pool::{Job, LateDeath, Noticed, Ran, WorkerEnd, WorkerPool};
pub use serve::serve;

/// The argument that starts the `koas` executable as a worker.
pub const WORKER_ARG: &str = "__koas-worker";

/// The protocol version a worker announces; the parent refuses another.
pub(crate) const PROTOCOL_VERSION: u32 = 2;

/// The largest header accepted (headers carry log lines, LLM requests and
/// answers, specs).
const MAX_HEADER_BYTES: u32 = 256 * 1024 * 1024;

/// What the parent sends.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum ToWorker {
    /// Load a library and describe its kernels.
    Describe {
        library: PathBuf,
        memory_mb: Option<u64>,
    },
    /// Run one kernel; the body is the JSON run request.
    Run {
        seq: u64,
        library: PathBuf,
        index: u32,
        memory_mb: Option<u64>,
        max_output: u64,
    },
    /// The answer to a host call.
    Reply { id: u64, answer: HostCallResponse },
    /// The run `seq` is cancelled.
    Cancel { seq: u64 },
}

/// Why a worker could not load a library.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum WireLoadError {
    Open {
        message: String,
    },
    MissingSymbol,
    AbiMismatch {
        found: u32,
        expected: u32,
        #[serde(default)]
        api_version: Option<String>,
    },
    Other {
        message: String,
    },
}

/// What the worker sends.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum FromWorker {
    /// The first frame of every worker.
    Hello {
        protocol: u32,
        abi: u32,
    },
    /// A library's kernels: each a spec or the describe error.
    Described {
        result: Result<Vec<Result<KernelSpec, String>>, WireLoadError>,
        /// The `koas-kernel-api` version the library was built with, when
        /// it says it.
        #[serde(default)]
        api_version: Option<String>,
        /// The threads loading and describing the library left running
        /// (`None` where the system does not say).
        left_threads: Option<u32>,
    },
    Log {
        seq: u64,
        level: u32,
        message: String,
    },
    Progress {
        seq: u64,
        done: u64,
        total: u64,
    },
    /// A host call; the body is the call's body. Answered with `Reply`.
    Call {
        seq: u64,
        id: u64,
        header: serde_json::Value,
    },
    /// The run ended; the body is the plugin's JSON answer.
    Done {
        seq: u64,
        /// The threads the kernel left running after it returned (`None`
        /// where the system does not say): a thread that outlives its
        /// kernel is what can end the worker between kernels.
        left_threads: Option<u32>,
    },
}

/// A frame that cannot be read.
#[derive(Debug)]
pub(crate) enum FrameError {
    /// The stream failed, or ended inside a frame.
    Broken,
    /// Sizes over the limits, or a header that is not the expected JSON.
    Malformed(String),
}

/// A frame's body: its length, known before it is written, and a way to
/// write it. A kernel's request is written straight from the engine's
/// values, never held whole in memory (a request that carries a record of
/// 100,000 entries is over 100 MB).
pub trait Body {
    /// The number of bytes [`Body::write_to`] writes.
    fn byte_len(&self) -> u64;
    /// Writes exactly [`Body::byte_len`] bytes.
    fn write_to(&self, w: &mut dyn Write) -> io::Result<()>;
}

impl Body for &[u8] {
    fn byte_len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn write_to(&self, w: &mut dyn Write) -> io::Result<()> {
        w.write_all(self)
    }
}

/// Writes one frame and flushes.
pub(crate) fn write_frame(
    w: &mut impl Write,
    header: &impl Serialize,
    body: &[u8],
) -> io::Result<()> {
    write_frame_body(w, header, &body)
}

/// Writes one frame whose body is produced while it is written, and
/// flushes.
pub(crate) fn write_frame_body(
    w: &mut impl Write,
    header: &impl Serialize,
    body: &dyn Body,
) -> io::Result<()> {
    let header = serde_json::to_vec(header).map_err(io::Error::other)?;
    let header_len =
        u32::try_from(header.len()).map_err(|_| io::Error::other("frame header over 4 GiB"))?;
    let mut prefix = [0u8; 12];
    prefix[..4].copy_from_slice(&header_len.to_le_bytes());
    prefix[4..].copy_from_slice(&body.byte_len().to_le_bytes());
    w.write_all(&prefix)?;
    w.write_all(&header)?;
    let mut counted = Counted::new(w);
    body.write_to(&mut counted)?;
    if counted.n != body.byte_len() {
        // The worker would read the next frame from the middle of this
        // one: fail the write, which ends the worker.
        return Err(io::Error::other(format!(
            "a frame body of {} bytes was announced as {}",
            counted.n,
            body.byte_len()
        )));
    }
    w.flush()
}

/// Counts what goes through it (into [`io::sink`] to measure a
/// serialization without keeping it).
pub(crate) struct Counted<'a, W: Write + ?Sized> {
    inner: &'a mut W,
    /// Bytes written so far.
    pub(crate) n: u64,
}

impl<'a, W: Write + ?Sized> Counted<'a, W> {
    pub(crate) fn new(inner: &'a mut W) -> Self {
        Counted { inner, n: 0 }
    }
}

impl<W: Write + ?Sized> Write for Counted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Reads one frame; `Ok(None)` at a clean end of stream. A body over
/// `max_body` bytes is refused before it is read.
pub(crate) fn read_frame<T: DeserializeOwned>(
    r: &mut impl Read,
    max_body: u64,
) -> Result<Option<(T, Vec<u8>)>, FrameError> {
    read_frame_with(r, || max_body)
}

/// [`read_frame`] with the body limit asked once the frame's prefix has
/// arrived: a reader that waits for frames on a thread of its own applies
/// the limit of the request the frame belongs to, set after it began
/// waiting.
pub(crate) fn read_frame_with<T: DeserializeOwned>(
    r: &mut impl Read,
    max_body: impl Fn() -> u64,
) -> Result<Option<(T, Vec<u8>)>, FrameError> {
    let mut prefix = [0u8; 12];
    let mut got = 0;
    while got < prefix.len() {
        match r.read(&mut prefix[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(FrameError::Broken),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(FrameError::Broken),
        }
    }
    let header_len = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    let mut body_len = [0u8; 8];
    body_len.copy_from_slice(&prefix[4..]);
    let body_len = u64::from_le_bytes(body_len);
    let max_body = max_body();
    if header_len > MAX_HEADER_BYTES {
        return Err(FrameError::Malformed(format!(
            "a frame header of {header_len} bytes (the limit is {MAX_HEADER_BYTES})"
        )));
    }
    if body_len > max_body {
        return Err(FrameError::Malformed(format!(
            "a frame body of {body_len} bytes (the limit is {max_body})"
        )));
    }
    let mut header = vec![0u8; header_len as usize];
    r.read_exact(&mut header).map_err(|_| FrameError::Broken)?;
    let body_len = usize::try_from(body_len)
        .map_err(|_| FrameError::Malformed("a frame body larger than memory".into()))?;
    let mut body = vec![0u8; body_len];
    r.read_exact(&mut body).map_err(|_| FrameError::Broken)?;
    let header = serde_json::from_slice(&header).map_err(|e| {
        FrameError::Malformed(format!(
            "a frame header that is not a koas worker message ({e}): {:?}",
            String::from_utf8_lossy(&header[..header.len().min(80)])
        ))
    })?;
    Ok(Some((header, body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body that writes `text` and announces `len`.
    struct Told {
        text: &'static str,
        len: u64,
    }

    impl Body for Told {
        fn byte_len(&self) -> u64 {
            self.len
        }
        fn write_to(&self, w: &mut dyn Write) -> io::Result<()> {
            // In small pieces, as a serializer writes.
            let mut rest = self.text.as_bytes();
            while !rest.is_empty() {
                let (piece, tail) = rest.split_at(rest.len().min(3));
                w.write_all(piece)?;
                rest = tail;
            }
            Ok(())
        }
    }

    #[test]
    fn a_streamed_body_is_one_frame_and_a_wrong_length_is_refused() {
        let mut buf = Vec::new();
        let body = Told {
            text: "{\"inputs\":{}}",
            len: 13,
        };
        write_frame_body(&mut buf, &ToWorker::Cancel { seq: 3 }, &body).expect("write");
        let (header, got) = read_frame::<ToWorker>(&mut buf.as_slice(), 100)
            .expect("read")
            .expect("a frame");
        assert!(matches!(header, ToWorker::Cancel { seq: 3 }));
        assert_eq!(got, b"{\"inputs\":{}}");
        let liar = Told { text: "{}", len: 3 };
        let err = write_frame_body(&mut Vec::new(), &ToWorker::Cancel { seq: 4 }, &liar)
            .expect_err("a body shorter than announced");
        assert!(err.to_string().contains("announced as 3"), "{err}");
    }

    #[test]
    fn frames_round_trip_and_sizes_are_checked() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &ToWorker::Cancel { seq: 7 }, b"body").expect("write");
        write_frame(&mut buf, &ToWorker::Cancel { seq: 8 }, b"").expect("write");
        let mut r = buf.as_slice();
        let (msg, body) = read_frame::<ToWorker>(&mut r, 10)
            .expect("ok")
            .expect("frame");
        assert!(matches!(msg, ToWorker::Cancel { seq: 7 }));
        assert_eq!(body, b"body");
        assert!(read_frame::<ToWorker>(&mut r, 10).expect("ok").is_some());
        assert!(read_frame::<ToWorker>(&mut r, 10).expect("ok").is_none());

        let mut r = buf.as_slice();
        assert!(matches!(
            read_frame::<ToWorker>(&mut r, 3),
            Err(FrameError::Malformed(m)) if m.contains("limit is 3")
        ));
        let mut cut = &buf[..buf.len() - 1];
        let _ = read_frame::<ToWorker>(&mut cut, 10);
        assert!(matches!(
            read_frame::<ToWorker>(&mut cut, 10),
            Err(FrameError::Broken)
        ));
        let mut junk: &[u8] = b"running 0 tests\n\ntest result: ok";
        assert!(read_frame::<FromWorker>(&mut junk, 10).is_err());
    }
}
