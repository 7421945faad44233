//! Reading a file someone named: a regular file only, and only up to a
//! size limit.
//!
//! A FIFO would block a reader forever (holding whatever lock it took),
//! and `/dev/zero` or `/dev/urandom` would grow memory without end, so
//! anything that is not a regular file is refused. The path is opened
//! non-blocking (opening a FIFO for reading otherwise waits for a writer)
//! and the type is checked on the opened handle, so a path replaced
//! between a look and the open is still caught; at most `limit + 1` bytes
//! are ever read. The runtime reads a pipeline's `[inputs]` files through
//! [`read_regular_file`], and hosts read what a person names through it
//! too, so there is one guard.

use std::io::Read;
use std::path::Path;

/// The default limit on one file read through this module: 256 MiB.
pub const DEFAULT_MAX_READ_BYTES: u64 = 256 * 1024 * 1024;

/// The environment variable `koas run` reads its input size limit from
/// when `--max-input-size` is not given.
pub const MAX_INPUT_SIZE_ENV: &str = "KOAS_MAX_INPUT_SIZE";

/// The limit in force: `flag` (named `flag_name` in errors), else the
/// environment variable `env`, else `default`.
pub fn limit_from(
    flag: Option<&str>,
    flag_name: &str,
    env: &str,
    default: u64,
) -> Result<u64, String> {
    if let Some(flag) = flag {
        return parse_size(flag).map_err(|e| format!("{flag_name}: {e}"));
    }
    match std::env::var(env) {
        Ok(value) if !value.trim().is_empty() => {
            parse_size(&value).map_err(|e| format!("{env}: {e}"))
        }
        _ => Ok(default),
    }
}

/// Why a guarded read refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum GuardedReadError {
    /// The path is not a regular file (`kind` says what it is).
    #[error("it is {kind}, not a regular file")]
    NotRegular {
        /// `a FIFO (named pipe)`, `a character device`, `a folder`…
        kind: &'static str,
    },
    /// The file holds more than the limit.
    #[error("it is {}over the limit of {}", size.map_or_else(String::new, |s| format!("{}, ", human_size(s))), human_size(*limit))]
    TooLarge {
        /// Its size, when known before reading (a file's length).
        size: Option<u64>,
        /// The limit in force.
        limit: u64,
    },
    /// The operating system refused (missing file, permissions…).
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What a file is, when it is not a regular file.
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// Reads the regular file at `path` (links followed), refusing anything
/// else and anything over `limit` bytes.
pub fn read_regular_file(path: &Path, limit: u64) -> Result<Vec<u8>, GuardedReadError> {
    // A look first, for a clear refusal of what cannot be opened at all
    // (a socket's open fails with ENXIO, which says nothing useful).
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(GuardedReadError::NotRegular {
            kind: kind_of(&meta),
        });
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        // Opening a FIFO for reading waits for a writer: should the path
        // have been replaced by one since the look, the open returns at
        // once and the check below refuses it.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let opened = file.metadata()?;
    if !opened.is_file() {
        return Err(GuardedReadError::NotRegular {
            kind: kind_of(&opened),
        });
    }
    if opened.len() > limit {
        return Err(GuardedReadError::TooLarge {
            size: Some(opened.len()),
            limit,
        });
    }
    read_bounded(file, usize::try_from(opened.len()).unwrap_or(0), limit)
}

/// Reads `reader` to its end, refusing more than `limit` bytes (at most
/// `limit + 1` are read); `expected` sizes the buffer.
pub fn read_bounded(
    reader: impl Read,
    expected: usize,
    limit: u64,
) -> Result<Vec<u8>, GuardedReadError> {
    let cap = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut buf = Vec::with_capacity(expected.min(cap));
    reader.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(GuardedReadError::TooLarge { size: None, limit });
    }
    Ok(buf)
}

/// Parses a size: bytes, or a number with `K`, `M` or `G` (powers of
/// 1024; `KB`, `MiB`… accepted).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 300M, 2G, 1048576)"))?;
    let factor: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        other => {
            return Err(format!(
                "'{text}': unknown size unit '{other}' (use K, M or G)"
            ))
        }
    };
    if !(number.is_finite() && number > 0.0) {
        return Err(format!("'{text}' is not a positive size"));
    }
    Ok((number * factor as f64) as u64)
}

/// `1.5 MiB`, for messages.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["bytes", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("300M"), Ok(300 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("1.5KiB"), Ok(1536));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5X").is_err());
        assert!(parse_size("0").is_err());
    }

    #[test]
    fn a_file_over_the_limit_is_refused_and_one_within_it_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "x".repeat(2048)).unwrap();
        let err = read_regular_file(&path, 1024).unwrap_err();
        assert!(
            matches!(
                err,
                GuardedReadError::TooLarge {
                    size: Some(2048),
                    limit: 1024
                }
            ),
            "{err}"
        );
        assert_eq!(err.to_string(), "it is 2.0 KiB, over the limit of 1.0 KiB");
        assert_eq!(read_regular_file(&path, 2048).unwrap().len(), 2048);
    }

    #[test]
    fn a_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_regular_file(dir.path(), 1024).unwrap_err();
        assert_eq!(err.to_string(), "it is a folder, not a regular file");
    }

    #[cfg(unix)]
    #[test]
    fn a_device_is_refused_without_reading_it() {
        let started = Instant::now();
        let err = read_regular_file(Path::new("/dev/zero"), 1024).unwrap_err();
        assert_eq!(
            err.to_string(),
            "it is a character device, not a regular file"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            return; // no mkfifo here: nothing to test
        }
        // Were the open blocking, this thread would never answer.
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(read_regular_file(&path, 1024).map_err(|e| e.to_string()));
        });
        let answer = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the read of a FIFO returned");
        assert_eq!(
            answer.unwrap_err(),
            "it is a FIFO (named pipe), not a regular file"
        );
    }

    #[test]
    fn a_stream_is_read_up_to_the_limit_and_no_further() {
        let endless = std::io::repeat(b'x');
        let started = Instant::now();
        let err = read_bounded(endless, 0, 1 << 20).unwrap_err();
        assert!(matches!(err, GuardedReadError::TooLarge { size: None, .. }));
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(read_bounded(&b"abc"[..], 3, 3).unwrap(), b"abc");
    }
}
