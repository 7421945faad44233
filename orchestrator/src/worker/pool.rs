//! The parent's side: starting, reusing and supervising workers.

use super::{
    read_frame, write_frame, write_frame_body, Body, FrameError, FromWorker, ToWorker,
    WireLoadError, PROTOCOL_VERSION, WORKER_ARG,
};
use crate::host::RunHost;
use crate::limits::{KernelLimits, CANCEL_GRACE, DESCRIBE_TIMEOUT};
use koas_kernel_api::abi::ABI_VERSION;
use koas_kernel_api::protocol::HostCallResponse;
use koas_kernel_api::{Host, KernelSpec, LogLevel};
use std::collections::VecDeque;
use std::io::{BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How often the watchdog looks at the clock and the cancel flag.
const TICK: Duration = Duration::from_millis(20);
/// The bytes of a worker's stderr kept for failure messages.
const STDERR_TAIL_BYTES: usize = 8192;
/// The most of that tail shown in a failure message, in characters.
const STDERR_SHOWN_CHARS: usize = 2000;

/// Why a worker stopped serving a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndCause {
    /// It could not be started, or the program is not a koas worker.
    Start(String),
    /// It died on its own: killed by a signal (a crash, an abort) or an
    /// exit in the middle of a request.
    Died,
    /// It was killed after running past its time limit.
    TimedOut(Duration),
    /// It was killed for not stopping within the grace period after the
    /// run was cancelled.
    CancelIgnored,
    /// It sent something that is not the worker protocol, and was killed.
    Protocol(String),
}

/// How a worker ended a request it did not complete: the cause, the exit
/// status and the end of its stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerEnd {
    /// Why it stopped.
    pub cause: EndCause,
    /// Its process id, when it was started.
    pub pid: Option<u32>,
    /// The signal that ended it (Unix).
    pub signal: Option<i32>,
    /// Its exit status, when it exited.
    pub exit_code: Option<i32>,
    /// The last lines it wrote to stderr during the request.
    pub stderr_tail: String,
}

impl WorkerEnd {
    fn start(message: String) -> WorkerEnd {
        WorkerEnd {
            cause: EndCause::Start(message),
            pid: None,
            signal: None,
            exit_code: None,
            stderr_tail: String::new(),
        }
    }

    /// `true` when the worker was killed because the run was cancelled.
    pub fn is_cancellation(&self) -> bool {
        self.cause == EndCause::CancelIgnored
    }

    /// `true` when the worker seems to have run out of memory under a cap:
    /// its stderr says an allocation failed.
    pub fn out_of_memory(&self) -> bool {
        self.cause == EndCause::Died
            && ["memory allocation of", "bad_alloc", "out of memory"]
                .iter()
                .any(|m| self.stderr_tail.contains(m))
    }

    /// `killed by signal 6 (SIGABRT)` or `exited with status 0`.
    pub fn status_text(&self) -> String {
        match (self.signal, self.exit_code) {
            (Some(s), _) => format!("killed by signal {s} ({})", signal_name(s)),
            (None, Some(c)) => format!("exited with status {c}"),
            (None, None) => "ended".to_string(),
        }
    }

    /// What happened, in words, for a kernel with these limits.
    pub fn message(&self, limits: &KernelLimits) -> String {
        let pid = self.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
        let mut text = match &self.cause {
            EndCause::Start(m) => format!("cannot start a worker process: {m}"),
            EndCause::Died if self.out_of_memory() => format!(
                "ran out of memory: an allocation failed {} and its worker process{pid} was {}",
                match limits.memory_mb {
                    Some(mb) => format!("under the limit of {mb} MB (`memory` in the pipeline's [limits], --kernel-memory)"),
                    None => "(no memory limit was set)".to_string(),
                },
                self.status_text()
            ),
            EndCause::Died if self.signal.is_some() => format!(
                "its worker process{pid} was {} while the kernel ran (a crash in the plugin)",
                self.status_text()
            ),
            EndCause::Died => format!(
                "its worker process{pid} {} while the kernel ran, before it answered (a plugin must return, not end the process)",
                self.status_text()
            ),
            EndCause::TimedOut(after) => format!(
                "ran longer than its time limit of {} s (`timeout` in the pipeline's [limits], --kernel-timeout); its worker process{pid} was killed",
                after.as_secs_f64()
            ),
            EndCause::CancelIgnored => format!(
                "did not stop within {} s of the cancellation; its worker process{pid} was killed",
                CANCEL_GRACE.as_secs()
            ),
            EndCause::Protocol(m) => {
                format!("its worker process{pid} sent {m}; it was killed")
            }
        };
        if !self.stderr_tail.is_empty() {
            text.push_str(&format!("; its stderr: {}", self.stderr_tail));
        }
        text
    }
}

/// The name of a Unix signal.
pub fn signal_name(signal: i32) -> &'static str {
    #[cfg(unix)]
    {
        match signal {
            libc::SIGABRT => "SIGABRT",
            libc::SIGSEGV => "SIGSEGV",
            libc::SIGBUS => "SIGBUS",
            libc::SIGILL => "SIGILL",
            libc::SIGFPE => "SIGFPE",
            libc::SIGKILL => "SIGKILL",
            libc::SIGTERM => "SIGTERM",
            libc::SIGINT => "SIGINT",
            libc::SIGPIPE => "SIGPIPE",
            libc::SIGXCPU => "SIGXCPU",
            libc::SIGSYS => "SIGSYS",
            _ => "signal",
        }
    }
    #[cfg(not(unix))]
    {
        let _ = signal;
        "signal"
    }
}

/// What a worker wrote to stderr: the start of what it wrote during the
/// current request (a crash report's first line says what happened) and
/// the last bytes (where it ended). Filled by a thread that drains the
/// pipe, so a chatty plugin never blocks on it.
struct StderrTail {
    state: Mutex<StderrState>,
    closed: (Mutex<bool>, Condvar),
}

#[derive(Default)]
struct StderrState {
    /// The last [`STDERR_TAIL_BYTES`] bytes.
    tail: VecDeque<u8>,
    /// Bytes written so far.
    total: u64,
    /// The first [`STDERR_HEAD_BYTES`] bytes written since `head_from`.
    head: Vec<u8>,
    head_from: u64,
}

/// The bytes kept from the start of a request's stderr.
const STDERR_HEAD_BYTES: usize = 1024;

impl StderrTail {
    fn drain(mut stderr: impl Read + Send + 'static) -> Arc<StderrTail> {
        let tail = Arc::new(StderrTail {
            state: Mutex::new(StderrState::default()),
            closed: (Mutex::new(false), Condvar::new()),
        });
        let writer = tail.clone();
        let spawned = std::thread::Builder::new()
            .name("koas-worker-stderr".into())
            .spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut state) = writer.state.lock() {
                        let room = STDERR_HEAD_BYTES.saturating_sub(state.head.len());
                        state.head.extend(&chunk[..n.min(room)]);
                        state.tail.extend(&chunk[..n]);
                        state.total += n as u64;
                        let excess = state.tail.len().saturating_sub(STDERR_TAIL_BYTES);
                        state.tail.drain(..excess);
                    }
                }
                let (done, cv) = &writer.closed;
                if let Ok(mut d) = done.lock() {
                    *d = true;
                }
                cv.notify_all();
            });
        if spawned.is_err() {
            // Without a drain the worker could block on a full pipe; it
            // then times out like any stuck kernel.
            let (done, _) = &tail.closed;
            if let Ok(mut d) = done.lock() {
                *d = true;
            }
        }
        tail
    }

    /// Starts a request: what the worker writes from now on is its stderr.
    fn start_request(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.head.clear();
            state.head_from = state.total;
        }
    }

    /// Waits (a little) for the worker's stderr to close after its death.
    fn wait_closed(&self, at_most: Duration) {
        let (done, cv) = &self.closed;
        if let Ok(guard) = done.lock() {
            let _ = cv.wait_timeout_while(guard, at_most, |d| !*d);
        }
    }

    /// What the worker wrote during the request, as one line of text: all
    /// of it when short, else its start and its end.
    fn request_text(&self) -> String {
        let Ok(state) = self.state.lock() else {
            return String::new();
        };
        let written = (state.total - state.head_from) as usize;
        let tail_len = state.tail.len().min(written);
        let tail: Vec<u8> = state
            .tail
            .iter()
            .skip(state.tail.len() - tail_len)
            .copied()
            .collect();
        let one_line = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes)
                .trim()
                .lines()
                .map(str::trim_end)
                .collect::<Vec<_>>()
                .join(" | ")
        };
        let last_chars = |text: String| {
            let count = text.chars().count();
            if count <= STDERR_SHOWN_CHARS {
                text
            } else {
                let kept: String = text.chars().skip(count - STDERR_SHOWN_CHARS).collect();
                format!("…{kept}")
            }
        };
        if written <= state.head.len() + STDERR_SHOWN_CHARS && tail_len == written {
            last_chars(one_line(&tail))
        } else {
            format!(
                "{} […] {}",
                one_line(&state.head),
                last_chars(one_line(&tail))
            )
        }
    }
}

/// One worker process.
struct Worker {
    child: Arc<Mutex<Child>>,
    pid: u32,
    stdin: Arc<Mutex<BufWriter<ChildStdin>>>,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<StderrTail>,
    seq: u64,
}

impl Worker {
    fn spawn(program: &Path) -> Result<Worker, WorkerEnd> {
        let mut cmd = Command::new(program);
        cmd.arg(WORKER_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group: a Ctrl-C on the terminal reaches koas
        // only, which forwards it as a cancellation.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd
            .spawn()
            .map_err(|e| WorkerEnd::start(format!("{}: {e}", program.display())))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(WorkerEnd::start("its pipes were not created".into()));
        };
        let mut worker = Worker {
            pid: child.id(),
            child: Arc::new(Mutex::new(child)),
            stdin: Arc::new(Mutex::new(BufWriter::new(stdin))),
            stdout: BufReader::new(stdout),
            stderr: StderrTail::drain(stderr),
            seq: 0,
        };
        let not_a_worker = |what: String| {
            format!(
                "{} is not a koas worker ({what}); kernels run in worker processes of the koas executable, or with --in-process",
                program.display()
            )
        };
        match read_frame::<FromWorker>(&mut worker.stdout, 0) {
            Ok(Some((FromWorker::Hello { protocol, abi }, _)))
                if protocol == PROTOCOL_VERSION && abi == ABI_VERSION =>
            {
                Ok(worker)
            }
            Ok(Some((FromWorker::Hello { protocol, abi }, _))) => {
                let end = worker.end(EndCause::Start(not_a_worker(format!(
                    "it speaks worker protocol {protocol} and plugin ABI {abi}, this koas {PROTOCOL_VERSION} and {ABI_VERSION}"
))));
                Err(end)
            }
            Ok(Some(_)) => {
                Err(worker.end(EndCause::Start(not_a_worker("it did not greet".into()))))
            }
            Ok(None) | Err(FrameError::Broken) => Err(worker.end(EndCause::Start(not_a_worker(
                "it ended without greeting".into(),
            )))),
            Err(FrameError::Malformed(m)) => {
                Err(worker.end(EndCause::Start(not_a_worker(format!("it printed {m}")))))
            }
        }
    }

    fn kill(&self) {
        kill(&self.child);
    }

    /// Kills the worker if it still runs, reaps it and describes its end.
    fn end(self, cause: EndCause) -> WorkerEnd {
        if !matches!(cause, EndCause::Died) {
            self.kill();
        }
        let status: Option<ExitStatus> = self.child.lock().ok().and_then(|mut c| c.wait().ok());
        // A plugin's own child process may hold the pipe open: wait a
        // little only.
        self.stderr.wait_closed(Duration::from_millis(500));
        #[cfg(unix)]
        let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
        #[cfg(not(unix))]
        let signal = None;
        WorkerEnd {
            cause,
            pid: Some(self.pid),
            signal,
            exit_code: status.and_then(|s| s.code()),
            stderr_tail: self.stderr.request_text(),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing stdin (dropping it) ends an idle worker; a worker dropped
        // in the middle of a request is killed. Either way it is reaped.
        if let Ok(mut child) = self.child.lock() {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

/// Writes one frame to a worker.
fn send(
    stdin: &Mutex<BufWriter<ChildStdin>>,
    header: &ToWorker,
    body: &dyn Body,
) -> std::io::Result<()> {
    let mut stdin = stdin
        .lock()
        .map_err(|_| std::io::Error::other("worker stdin lock poisoned"))?;
    write_frame_body(&mut *stdin, header, body)
}

/// Kills a worker (SIGKILL); its pipes then close.
fn kill(child: &Mutex<Child>) {
    if let Ok(mut child) = child.lock() {
        let _ = child.kill();
    }
}

/// Why the watchdog killed a worker.
enum Kill {
    Timeout(Duration),
    Cancel,
}

/// Watches one request: kills the worker when its time budget is spent
/// (the budget does not run while a host call is being answered), forwards
/// a cancellation and kills the worker if it does not stop within the grace
/// period. Ends when `stop` says the request is over.
struct Watchdog<'a> {
    child: &'a Mutex<Child>,
    stdin: &'a Mutex<BufWriter<ChildStdin>>,
    seq: u64,
    timeout: Option<Duration>,
    cancel: Option<&'a AtomicBool>,
    in_calls: &'a AtomicUsize,
}

impl Watchdog<'_> {
    fn watch(self, stop: mpsc::Receiver<()>) -> Option<Kill> {
        let mut left = self.timeout;
        let mut last = Instant::now();
        let mut cancelled_at: Option<Instant> = None;
        loop {
            match stop.recv_timeout(TICK) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return None,
            }
            let now = Instant::now();
            let elapsed = now - last;
            last = now;
            if self.in_calls.load(Ordering::SeqCst) == 0 {
                if let Some(left) = &mut left {
                    *left = left.saturating_sub(elapsed);
                    if left.is_zero() {
                        kill(self.child);
                        return Some(Kill::Timeout(self.timeout.unwrap_or_default()));
                    }
                }
            }
            if self.cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
                match cancelled_at {
                    None => {
                        let _ = send(self.stdin, &ToWorker::Cancel { seq: self.seq }, &&[][..]);
                        cancelled_at = Some(now);
                    }
                    Some(at) if now - at > CANCEL_GRACE => {
                        kill(self.child);
                        return Some(Kill::Cancel);
                    }
                    Some(_) => {}
                }
            }
        }
    }
}

/// What a library's describe gave, from a worker.
pub type Described = Result<Vec<Result<KernelSpec, String>>, DescribeProblem>;

/// Why a library could not be described in a worker.
#[derive(Debug, Clone)]
pub enum DescribeProblem {
    /// The loader refused it (as in-process discovery would).
    Load(crate::loader::LoadError),
    /// The worker died or hung while loading or describing it.
    Worker(WorkerEnd),
}

/// One kernel run to do in a worker.
pub struct KernelCall<'a> {
    /// The plugin library.
    pub library: &'a Path,
    /// The kernel's index in it.
    pub index: u32,
    /// The run request, written to the worker as it is encoded.
    pub request: &'a dyn Body,
    /// The kernel's limits.
    pub limits: KernelLimits,
    /// Answers the kernel's callbacks.
    pub host: &'a RunHost<'a>,
    /// The run's cancel flag.
    pub cancel: &'a AtomicBool,
}

/// Worker processes of one program, kept for reuse by every run of this
/// process (a review's passes, discovery then the run).
pub struct WorkerPool {
    program: PathBuf,
    idle: Mutex<Vec<Worker>>,
}

static POOLS: Mutex<Vec<Arc<WorkerPool>>> = Mutex::new(Vec::new());

impl WorkerPool {
    /// The process's pool of workers of `program`.
    pub fn shared(program: &Path) -> Arc<WorkerPool> {
        let mut pools = POOLS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pool) = pools.iter().find(|p| p.program == program) {
            return pool.clone();
        }
        let pool = Arc::new(WorkerPool {
            program: program.to_path_buf(),
            idle: Mutex::new(Vec::new()),
        });
        pools.push(pool.clone());
        pool
    }

    /// The executable started as a worker.
    pub fn program(&self) -> &Path {
        &self.program
    }

    fn take(&self) -> Result<Worker, WorkerEnd> {
        let idle = self.idle.lock().ok().and_then(|mut i| i.pop());
        match idle {
            Some(w) => Ok(w),
            None => Worker::spawn(&self.program),
        }
    }

    fn give_back(&self, worker: Worker) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(worker);
        }
    }

    /// Loads `library` in a worker and describes its kernels. A library
    /// that crashes or hangs the worker costs only that worker.
    pub fn describe(&self, library: &Path, memory_mb: Option<u64>) -> Described {
        let mut worker = self.take().map_err(DescribeProblem::Worker)?;
        worker.stderr.start_request();
        let request = ToWorker::Describe {
            library: library.to_path_buf(),
            memory_mb,
        };
        let in_calls = AtomicUsize::new(0);
        let (stop, stopped) = mpsc::channel();
        let answer = std::thread::scope(|s| {
            let watchdog = Watchdog {
                child: &worker.child,
                stdin: &worker.stdin,
                seq: 0,
                timeout: Some(DESCRIBE_TIMEOUT),
                cancel: None,
                in_calls: &in_calls,
            };
            let watching = s.spawn(move || watchdog.watch(stopped));
            let answer = if send(&worker.stdin, &request, &&[][..]).is_err() {
                Err(EndCause::Died)
            } else {
                loop {
                    match read_frame::<FromWorker>(&mut worker.stdout, 0) {
                        Ok(Some((FromWorker::Described { result }, _))) => break Ok(result),
                        Ok(Some(_)) => {}
                        Ok(None) | Err(FrameError::Broken) => break Err(EndCause::Died),
                        Err(FrameError::Malformed(m)) => break Err(EndCause::Protocol(m)),
                    }
                }
            };
            let _ = stop.send(());
            let killed = watching.join().ok().flatten();
            match (answer, killed) {
                (_, Some(Kill::Timeout(after))) => Err(EndCause::TimedOut(after)),
                (_, Some(Kill::Cancel)) => Err(EndCause::CancelIgnored),
                (answer, None) => answer,
            }
        });
        match answer {
            Ok(result) => {
                self.give_back(worker);
                result.map_err(|e| {
                    DescribeProblem::Load(match e {
                        WireLoadError::Open { message } => crate::loader::LoadError::Open(message),
                        WireLoadError::MissingSymbol => crate::loader::LoadError::MissingSymbol,
                        WireLoadError::AbiMismatch { found, expected } => {
                            crate::loader::LoadError::Plugin(
                                koas_kernel_api::abi::PluginError::AbiMismatch { found, expected },
                            )
                        }
                        WireLoadError::Other { message } => crate::loader::LoadError::Open(message),
                    })
                })
            }
            Err(cause) => Err(DescribeProblem::Worker(worker.end(cause))),
        }
    }

    /// Runs one kernel in a worker; the plugin's answer (JSON, unchecked)
    /// or how the worker ended. A worker that completed the run goes back
    /// to the pool; any other is killed and reaped.
    pub fn run(&self, call: KernelCall<'_>) -> Result<Vec<u8>, WorkerEnd> {
        let mut worker = self.take()?;
        worker.seq += 1;
        let seq = worker.seq;
        worker.stderr.start_request();
        let max_output = call.limits.output_bytes();
        let request = ToWorker::Run {
            seq,
            library: call.library.to_path_buf(),
            index: call.index,
            memory_mb: call.limits.memory_mb,
            max_output: max_output as u64,
        };
        let in_calls = AtomicUsize::new(0);
        let (stop, stopped) = mpsc::channel();
        let answer = std::thread::scope(|s| {
            let watchdog = Watchdog {
                child: &worker.child,
                stdin: &worker.stdin,
                seq,
                timeout: call.limits.timeout(),
                cancel: Some(call.cancel),
                in_calls: &in_calls,
            };
            let watching = s.spawn(move || watchdog.watch(stopped));
            let answer = if send(&worker.stdin, &request, call.request).is_err() {
                Err(EndCause::Died)
            } else {
                // Frames are at most the output cap (the answer, a file
                // body), plus room for the JSON around an answer.
                let max_body = (max_output as u64).saturating_add(1024 * 1024);
                let stdin = worker.stdin.clone();
                let in_calls = &in_calls;
                let host = call.host;
                loop {
                    match read_frame::<FromWorker>(&mut worker.stdout, max_body) {
                        Ok(Some((FromWorker::Done { seq: n }, body))) if n == seq => {
                            break Ok(body)
                        }
                        Ok(Some((
                            FromWorker::Log {
                                seq: n,
                                level,
                                message,
                            },
                            _,
                        ))) if n == seq => {
                            host.log(LogLevel::from_u32(level), &message);
                        }
                        Ok(Some((
                            FromWorker::Progress {
                                seq: n,
                                done,
                                total,
                            },
                            _,
                        ))) if n == seq => {
                            host.progress(done, total);
                        }
                        Ok(Some((FromWorker::Call { seq: n, id, header }, body))) if n == seq => {
                            in_calls.fetch_add(1, Ordering::SeqCst);
                            let stdin = stdin.clone();
                            s.spawn(move || {
                                let answer = match host.call(&header, &body) {
                                    Ok(value) => HostCallResponse::Ok { value },
                                    Err(message) => HostCallResponse::Error { message },
                                };
                                in_calls.fetch_sub(1, Ordering::SeqCst);
                                if let Ok(mut stdin) = stdin.lock() {
                                    let _ = write_frame(
                                        &mut *stdin,
                                        &ToWorker::Reply { id, answer },
                                        &[],
                                    );
                                }
                            });
                        }
                        Ok(Some(_)) => {}
                        Ok(None) | Err(FrameError::Broken) => break Err(EndCause::Died),
                        Err(FrameError::Malformed(m)) => break Err(EndCause::Protocol(m)),
                    }
                }
            };
            let _ = stop.send(());
            let killed = watching.join().ok().flatten();
            match (answer, killed) {
                (_, Some(Kill::Timeout(after))) => Err(EndCause::TimedOut(after)),
                (_, Some(Kill::Cancel)) => Err(EndCause::CancelIgnored),
                (answer, None) => answer,
            }
        });
        match answer {
            Ok(body) => {
                self.give_back(worker);
                Ok(body)
            }
            Err(cause) => Err(worker.end(cause)),
        }
    }
}
