//! The worker's side: `koas __koas-worker` loads plugins and runs kernels
//! for its parent until its stdin closes.

use super::{
    read_frame, write_frame, FrameError, FromWorker, ToWorker, WireLoadError, PROTOCOL_VERSION,
};
use crate::described::LibraryKernels;
use crate::limits::{output_limit_message, MAX_LOG_LINE_CHARS};
use crate::loader::{load_plugin, LoadError};
use koas_kernel_api::abi::{PluginError, PluginHandle, ABI_VERSION};
use koas_kernel_api::protocol::{HostCallResponse, RunResponse};
use koas_kernel_api::{Host, KernelError, LogLevel};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

/// State shared by the worker's threads.
struct Shared {
    /// The protocol stream to the parent; whole frames under the lock.
    out: Mutex<BufWriter<File>>,
    /// The run in progress (set by the reader when a `Run` arrives, so a
    /// `Cancel` behind it on the pipe is matched in order).
    seq: AtomicU64,
    cancelled: AtomicBool,
    next_call: AtomicU64,
    pending: Mutex<HashMap<u64, Sender<HostCallResponse>>>,
}

impl Shared {
    fn send(&self, header: &FromWorker, body: &[u8]) {
        // A failed write means the parent is gone; the reader thread sees
        // the end of stdin and ends the process.
        if let Ok(mut out) = self.out.lock() {
            let _ = write_frame(&mut *out, header, body);
        }
    }
}

/// Runs the worker until its parent closes its stdin. Called by the
/// `koas` binary when its first argument is [`super::WORKER_ARG`].
pub fn serve() -> ExitCode {
    match serve_until_eof() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("koas worker: {e}");
            ExitCode::from(3)
        }
    }
}

fn serve_until_eof() -> io::Result<()> {
    let (input, output) = protocol_streams()?;
    let shared = Arc::new(Shared {
        out: Mutex::new(BufWriter::new(output)),
        seq: AtomicU64::new(0),
        cancelled: AtomicBool::new(false),
        next_call: AtomicU64::new(0),
        pending: Mutex::new(HashMap::new()),
    });
    shared.send(
        &FromWorker::Hello {
            protocol: PROTOCOL_VERSION,
            abi: ABI_VERSION,
        },
        &[],
    );
    let (jobs, job_queue) = mpsc::channel::<(ToWorker, Vec<u8>)>();
    let reader = shared.clone();
    std::thread::Builder::new()
        .name("koas-worker-reader".into())
        .spawn(move || read_parent(BufReader::new(input), &reader, &jobs))?;
    let mut libraries: HashMap<PathBuf, PluginHandle> = HashMap::new();
    for (job, body) in job_queue {
        match job {
            ToWorker::Describe { library, memory_mb } => {
                set_memory_limit(describe_limit(memory_mb));
                let before = thread_count();
                let (result, api_version) = match describe(&mut libraries, &library) {
                    Ok(described) => (Ok(described.kernels), described.api_version),
                    Err(e) => (Err(e), None),
                };
                let left_threads = threads_left(before);
                set_memory_limit(None);
                shared.send(
                    &FromWorker::Described {
                        result,
                        api_version,
                        left_threads,
                    },
                    &[],
                );
            }
            ToWorker::Run {
                seq,
                library,
                index,
                memory_mb,
                max_output,
            } => {
                let before = thread_count();
                let answer = match limit_below_own_use(memory_mb) {
                    Some(message) => error_answer(message),
                    None => {
                        set_memory_limit(memory_mb);
                        let answer = run(
                            &mut libraries,
                            &shared,
                            seq,
                            &library,
                            index,
                            &body,
                            max_output,
                            memory_mb,
                        );
                        // Lifted between kernels: the next request is read
                        // and the answer sent under no kernel's limit.
                        set_memory_limit(None);
                        answer
                    }
                };
                let left_threads = threads_left(before);
                shared.send(&FromWorker::Done { seq, left_threads }, &answer);
            }
            ToWorker::Reply { .. } | ToWorker::Cancel { .. } => {}
        }
    }
    Ok(())
}

/// Reads the parent's frames: replies and cancellations are handled here,
/// jobs go to the main thread. The end of stdin ends the process, whatever
/// a kernel is doing: the parent is gone or done with this worker.
fn read_parent(mut input: BufReader<File>, shared: &Shared, jobs: &Sender<(ToWorker, Vec<u8>)>) {
    loop {
        match read_frame::<ToWorker>(&mut input, u64::MAX) {
            Ok(Some((ToWorker::Reply { id, answer }, _))) => {
                let waiter = shared.pending.lock().ok().and_then(|mut p| p.remove(&id));
                if let Some(waiter) = waiter {
                    let _ = waiter.send(answer);
                }
            }
            Ok(Some((ToWorker::Cancel { seq }, _))) => {
                if shared.seq.load(Ordering::SeqCst) == seq {
                    shared.cancelled.store(true, Ordering::SeqCst);
                }
            }
            Ok(Some((job, body))) => {
                if let ToWorker::Run { seq, .. } = &job {
                    shared.seq.store(*seq, Ordering::SeqCst);
                    shared.cancelled.store(false, Ordering::SeqCst);
                }
                if jobs.send((job, body)).is_err() {
                    end_worker();
                }
            }
            Ok(None) | Err(FrameError::Broken) => end_worker(),
            Err(FrameError::Malformed(m)) => {
                eprintln!("koas worker: unreadable message from koas: {m}");
                std::process::exit(3);
            }
        }
    }
}

/// Ends the worker: its parent is done with it or gone. Whatever its
/// plugins forked in its process group ends with it, so nothing outlives
/// `koas`, even a `koas` killed with SIGKILL.
fn end_worker() -> ! {
    super::group::end_own_group();
    std::process::exit(0)
}

/// The number of threads of this process, where the system says it.
fn thread_count() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        std::fs::read_dir("/proc/self/task")
            .ok()
            .map(Iterator::count)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The threads started since `before` that still run: what a kernel (or
/// a library's loading) left behind.
fn threads_left(before: Option<usize>) -> Option<u32> {
    let after = thread_count()?;
    u32::try_from(after.saturating_sub(before?)).ok()
}

fn load<'a>(
    libraries: &'a mut HashMap<PathBuf, PluginHandle>,
    library: &Path,
) -> Result<&'a PluginHandle, LoadError> {
    if !libraries.contains_key(library) {
        let handle = load_plugin(library)?;
        libraries.insert(library.to_path_buf(), handle);
    }
    Ok(&libraries[library])
}

fn describe(
    libraries: &mut HashMap<PathBuf, PluginHandle>,
    library: &Path,
) -> Result<LibraryKernels, WireLoadError> {
    let handle = load(libraries, library).map_err(|e| match e {
        LoadError::Open(message) => WireLoadError::Open { message },
        LoadError::MissingSymbol => WireLoadError::MissingSymbol,
        LoadError::Plugin(PluginError::AbiMismatch {
            found,
            expected,
            api_version,
        }) => WireLoadError::AbiMismatch {
            found,
            expected,
            api_version,
        },
        LoadError::Plugin(other) => WireLoadError::Other {
            message: other.to_string(),
        },
    })?;
    Ok(LibraryKernels::describe(handle))
}

// One call site; a struct for these would only rename them.
#[allow(clippy::too_many_arguments)]
fn run(
    libraries: &mut HashMap<PathBuf, PluginHandle>,
    shared: &Arc<Shared>,
    seq: u64,
    library: &Path,
    index: u32,
    request: &[u8],
    max_output: u64,
    memory_mb: Option<u64>,
) -> Vec<u8> {
    let error = error_answer;
    let handle = match load(libraries, library) {
        Ok(h) => *h,
        Err(e) => {
            // The library is mapped under the kernel's cap: say so, since
            // the loader's own words ("failed to map segment") do not.
            let cap = memory_mb
                .map(|mb| format!(" (loaded under the memory limit of {mb} MB, `memory` in the pipeline's [limits], --kernel-memory)"))
                .unwrap_or_default();
            return error(format!("cannot load {}: {e}{cap}", library.display()));
        }
    };
    let host = WorkerHost {
        shared: shared.clone(),
        seq,
    };
    let max = usize::try_from(max_output).unwrap_or(usize::MAX);
    match handle.run_bytes(index, &host, request, max) {
        Ok(answer) => answer,
        Err(len) => error(output_limit_message(len, max)),
    }
}

/// A kernel's failure as the JSON answer a plugin would give.
fn error_answer(message: String) -> Vec<u8> {
    serde_json::to_vec(&RunResponse::Error(KernelError::failed(message))).unwrap_or_default()
}

/// The host a plugin sees inside a worker: every callback goes to the
/// parent.
struct WorkerHost {
    shared: Arc<Shared>,
    seq: u64,
}

impl Host for WorkerHost {
    fn log(&self, level: LogLevel, message: &str) {
        // Cut here already: a flood of huge lines should not cross the pipe.
        let message = crate::limits::cut(message.to_string(), MAX_LOG_LINE_CHARS, "log line");
        self.shared.send(
            &FromWorker::Log {
                seq: self.seq,
                level: level as u32,
                message,
            },
            &[],
        );
    }

    fn progress(&self, done: u64, total: u64) {
        self.shared.send(
            &FromWorker::Progress {
                seq: self.seq,
                done,
                total,
            },
            &[],
        );
    }

    fn is_cancelled(&self) -> bool {
        self.shared.cancelled.load(Ordering::SeqCst)
    }

    fn call(&self, header: &serde_json::Value, body: &[u8]) -> Result<serde_json::Value, String> {
        let id = self.shared.next_call.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::channel();
        if let Ok(mut pending) = self.shared.pending.lock() {
            pending.insert(id, tx);
        }
        self.shared.send(
            &FromWorker::Call {
                seq: self.seq,
                id,
                header: header.clone(),
            },
            body,
        );
        match rx.recv() {
            Ok(HostCallResponse::Ok { value }) => Ok(value),
            Ok(HostCallResponse::Error { message }) => Err(message),
            Err(_) => Err("koas stopped answering this worker".to_string()),
        }
    }
}

/// The worker's protocol streams: copies of its stdin and stdout. Then
/// stdin becomes `/dev/null` and stdout the worker's stderr, so a plugin
/// that reads stdin or prints cannot corrupt the protocol.
#[cfg(unix)]
fn protocol_streams() -> io::Result<(File, File)> {
    use std::os::fd::{AsFd, AsRawFd};
    let input = File::from(io::stdin().as_fd().try_clone_to_owned()?);
    let output = File::from(io::stdout().as_fd().try_clone_to_owned()?);
    let null = File::open("/dev/null")?;
    // SAFETY: dup2 only replaces file descriptors 0 and 1 of this process
    // by duplicates of descriptors it owns (`null`, and 2); no Rust object
    // owns 0 or 1 (std's stdin/stdout handles use the numbers, which stay
    // valid), and the copies made above keep the protocol pipes open.
    #[allow(unsafe_code)]
    let (a, b) = unsafe {
        (
            libc::dup2(null.as_raw_fd(), 0),
            libc::dup2(io::stderr().as_fd().as_raw_fd(), 1),
        )
    };
    if a < 0 || b < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((input, output))
}

#[cfg(not(unix))]
fn protocol_streams() -> io::Result<(File, File)> {
    use std::os::windows::io::AsHandle;
    Ok((
        File::from(io::stdin().as_handle().try_clone_to_owned()?),
        File::from(io::stdout().as_handle().try_clone_to_owned()?),
    ))
}

const MIB: u64 = 1024 * 1024;

/// Room given to a library's loading and describing above what the worker
/// already uses, when the run's limit is smaller than that.
const DESCRIBE_ROOM_MB: u64 = 256;

/// The worker's address space now, in bytes (`VmSize`), where the system
/// says it.
fn address_space_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kb.saturating_mul(1024))
}

/// Why a kernel cannot run under `memory_mb`: the cap is the address
/// space of the whole worker, and the worker already uses more than that
/// before the kernel starts (the executable, the loaded plugins, thread
/// stacks, its heap). Setting it anyway would let a kernel that happens
/// to fit in memory already mapped pass, and fail any other with an
/// allocation error that hides the cause.
fn limit_below_own_use(memory_mb: Option<u64>) -> Option<String> {
    let mb = memory_mb?;
    let used = address_space_bytes()?;
    if mb.saturating_mul(MIB) > used {
        return None;
    }
    let used_mb = used.div_ceil(MIB);
    Some(format!(
        "its memory limit of {mb} MB (`memory` in the pipeline's [limits], --kernel-memory) is below what its worker process uses before any kernel code runs ({used_mb} MB of address space: the koas executable, the plugins, thread stacks); the kernel was not run. The limit caps the worker's whole address space: give at least {} MB, or 0 for no limit",
        used_mb + 64
    ))
}

/// The cap while a library is loaded and described: the run's, but never
/// less than what the worker uses plus [`DESCRIBE_ROOM_MB`], so that a
/// too small `memory` fails the kernels that run under it, with the
/// message of [`limit_below_own_use`], rather than make their library
/// look unloadable.
fn describe_limit(memory_mb: Option<u64>) -> Option<u64> {
    let mb = memory_mb?;
    match address_space_bytes() {
        Some(used) => Some(mb.max(used.div_ceil(MIB) + DESCRIBE_ROOM_MB)),
        None => Some(mb),
    }
}

/// Caps the worker's address space (RLIMIT_AS) at `memory_mb`, or lifts
/// the cap to the hard limit for `None`. An allocation past it fails, and
/// a Rust plugin then aborts with "memory allocation of N bytes failed".
#[cfg(unix)]
fn set_memory_limit(memory_mb: Option<u64>) {
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `rlimit` into the struct we own.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut current) };
    if rc != 0 {
        return;
    }
    let wanted = memory_mb
        .map(|mb| mb.saturating_mul(1024 * 1024) as libc::rlim_t)
        .unwrap_or(current.rlim_max)
        .min(current.rlim_max);
    let limit = libc::rlimit {
        rlim_cur: wanted,
        rlim_max: current.rlim_max,
    };
    // SAFETY: setrlimit reads the struct we pass; lowering (or raising up
    // to the hard limit) the soft limit of our own process is always
    // allowed and shares no memory.
    #[allow(unsafe_code)]
    let _ = unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
}

#[cfg(not(unix))]
fn set_memory_limit(_memory_mb: Option<u64>) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_limit_below_the_workers_own_address_space_is_named() {
        let used_mb = address_space_bytes().expect("VmSize on Linux") / MIB;
        assert!(used_mb > 1, "a process maps more than 1 MB");
        let message = limit_below_own_use(Some(1)).expect("1 MB is too small");
        assert!(message.contains("memory limit of 1 MB"), "{message}");
        assert!(message.contains("--kernel-memory"), "{message}");
        assert!(message.contains("the kernel was not run"), "{message}");
        assert_eq!(limit_below_own_use(None), None);
        assert_eq!(limit_below_own_use(Some(used_mb * 4 + 1024)), None);
        assert!(describe_limit(Some(1)).expect("a cap") >= used_mb + DESCRIBE_ROOM_MB);
        assert_eq!(describe_limit(Some(1 << 30)), Some(1 << 30));
        assert_eq!(describe_limit(None), None);
    }
}
