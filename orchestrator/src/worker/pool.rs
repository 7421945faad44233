//! The parent's side: starting, reusing and supervising workers.

use super::{
    group, read_frame_with, write_frame, write_frame_body, Body, FrameError, FromWorker, ToWorker,
    WireLoadError, PROTOCOL_VERSION, WORKER_ARG,
};
use crate::described::LibraryKernels;
use crate::host::RunHost;
use crate::limits::{KernelLimits, CANCEL_GRACE, DESCRIBE_TIMEOUT};
use koas_kernel_api::abi::ABI_VERSION;
use koas_kernel_api::protocol::HostCallResponse;
use koas_kernel_api::{Host, LogLevel};
use std::collections::VecDeque;
use std::io::{BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

mod end;
mod worker;
use end::StderrTail;
pub use end::{signal_name, EndCause, WorkerEnd};
use worker::{kill, send, worker_ended, Worker};

/// How often the watchdog looks at the clock and the cancel flag.
const TICK: Duration = Duration::from_millis(20);

/// A frame from a worker as its reader thread got it: `Ok(None)` at the
/// end of the pipe.
type Frame = Result<Option<(FromWorker, Vec<u8>)>, FrameError>;

/// Frames read ahead of the request loop; the reader waits beyond that,
/// so a worker that floods an idle pipe blocks instead of filling koas's
/// memory.
const FRAMES_AHEAD: usize = 16;

/// How long the request loop still takes frames once the worker has ended
/// and its group was killed: what it wrote before it ended is read, and a
/// process that left the group and keeps the pipe open is not waited for.
const DRAIN_AFTER_END: Duration = Duration::from_millis(500);

/// A piece of work a worker did, to blame a later death on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Job {
    /// A kernel run, with the ticket its [`Ran`] carried.
    Kernel {
        /// The kernel's name.
        name: String,
        /// The run's ticket.
        ticket: u64,
    },
    /// Loading a library and describing its kernels.
    Describe {
        /// The library.
        library: PathBuf,
    },
}

impl std::fmt::Display for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Kernel { name, .. } => write!(f, "kernel `{name}`"),
            Job::Describe { library } => {
                write!(f, "loading and describing {}", library.display())
            }
        }
    }
}

/// When koas found that a worker had died after its work was done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Noticed {
    /// Dead when it was taken for the next job or looked at when a run
    /// ended: it died between kernels.
    Idle,
    /// Dead as soon as it had answered.
    RightAfter,
    /// It died while running this kernel, which was run again on a fresh
    /// worker.
    During(String),
    /// It died while loading and describing this library, which was
    /// described again on a fresh worker.
    Describing(PathBuf),
}

/// A worker that died after a job had answered, and the job blamed: the
/// latest in that worker that left threads running (a thread that
/// outlives its kernel and calls `exit()` or crashes is what kills a
/// worker between kernels), else the last one it did.
#[derive(Debug, Clone)]
pub struct LateDeath {
    /// The job blamed.
    pub blamed: Job,
    /// The threads the blamed job left running, where the system says it.
    pub left_threads: Option<u32>,
    /// When koas noticed.
    pub noticed: Noticed,
    /// How the worker ended.
    pub end: WorkerEnd,
}

impl LateDeath {
    fn when(&self) -> String {
        match &self.noticed {
            Noticed::Idle => "between kernels".to_string(),
            Noticed::RightAfter => "right after it had answered".to_string(),
            Noticed::During(next) => {
                format!("while `{next}` ran in it (`{next}` was run again on a fresh worker)")
            }
            Noticed::Describing(library) => format!(
                "while it loaded and described {} (described again on a fresh worker)",
                library.display()
            ),
        }
    }

    fn why(&self) -> &'static str {
        match self.left_threads {
            Some(0) => "no kernel had left a thread running in it; this was the last work it did",
            Some(_) => "a thread a plugin leaves running must not end the process",
            None => "this was the last work it did",
        }
    }

    /// What happened, for the record of the blamed kernel.
    pub fn kernel_message(&self) -> String {
        let left = self
            .threads_left()
            .map(|n| format!("; the kernel had left {n} running in that process"))
            .unwrap_or_default();
        self.with_stderr(format!(
            "it answered, but then its worker process{} {} {}{left} ({})",
            self.pid_text(),
            self.end.status_text(),
            self.when(),
            self.why()
        ))
    }

    /// What happened, for a run that cannot name the job among its kernels
    /// (it was another run's, or a library's description).
    pub fn run_message(&self) -> String {
        let left = self
            .threads_left()
            .map(|n| format!(", which left {n} running in it"))
            .unwrap_or_default();
        self.with_stderr(format!(
            "a worker process{} {} {}, after {}{left} ({})",
            self.pid_text(),
            self.end.status_text(),
            self.when(),
            self.blamed,
            self.why()
        ))
    }

    /// ` (pid N)`, when the pid is known.
    fn pid_text(&self) -> String {
        self.end
            .pid
            .map(|p| format!(" (pid {p})"))
            .unwrap_or_default()
    }

    /// "N thread(s)" left running, when there were any.
    fn threads_left(&self) -> Option<String> {
        match self.left_threads {
            Some(n) if n > 0 => Some(format!("{n} thread{}", if n == 1 { "" } else { "s" })),
            _ => None,
        }
    }

    /// `text` followed by the worker's stderr tail, when it wrote one.
    fn with_stderr(&self, mut text: String) -> String {
        if !self.end.stderr_tail.is_empty() {
            text.push_str(&format!("; its stderr: {}", self.end.stderr_tail));
        }
        text
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
/// period, and kills the worker's group as soon as the worker has ended on
/// its own (a process it forked must not keep the request waiting). Ends
/// when `stop` says the request is over, or once the worker has ended.
struct Watchdog<'a> {
    child: &'a Mutex<Child>,
    pid: u32,
    stdin: &'a Mutex<BufWriter<ChildStdin>>,
    watch: Watch<'a>,
    /// When the worker was found ended or killed.
    ended: &'a Mutex<Option<Instant>>,
}

/// What a request's watchdog watches besides the worker.
#[derive(Clone, Copy)]
struct Watch<'a> {
    /// The request's sequence number, for a cancellation.
    seq: u64,
    /// The time budget.
    timeout: Option<Duration>,
    /// The run's cancel flag.
    cancel: Option<&'a AtomicBool>,
    /// Host calls being answered: the budget does not run meanwhile.
    in_calls: &'a AtomicUsize,
}

impl Watchdog<'_> {
    fn watch(self, stop: mpsc::Receiver<()>) -> Option<Kill> {
        let Watch {
            seq,
            timeout,
            cancel,
            in_calls,
        } = self.watch;
        let mut left = timeout;
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
            if worker_ended(self.child, self.pid) {
                // A crash or an exit: report it now, not when the last
                // process holding the pipe ends.
                kill(self.child, self.pid);
                self.mark_ended(now);
                return None;
            }
            if in_calls.load(Ordering::SeqCst) == 0 {
                if let Some(left) = &mut left {
                    *left = left.saturating_sub(elapsed);
                    if left.is_zero() {
                        kill(self.child, self.pid);
                        self.mark_ended(now);
                        return Some(Kill::Timeout(timeout.unwrap_or_default()));
                    }
                }
            }
            if cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
                match cancelled_at {
                    None => {
                        let _ = send(self.stdin, &ToWorker::Cancel { seq }, &&[][..]);
                        cancelled_at = Some(now);
                    }
                    Some(at) if now - at > CANCEL_GRACE => {
                        kill(self.child, self.pid);
                        self.mark_ended(now);
                        return Some(Kill::Cancel);
                    }
                    Some(_) => {}
                }
            }
        }
    }

    fn mark_ended(&self, at: Instant) {
        if let Ok(mut ended) = self.ended.lock() {
            *ended = Some(at);
        }
    }
}

/// What a library's describe gave, from a worker.
pub type Described = Result<LibraryKernels, DescribeProblem>;

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
    /// The kernel's name, to blame it for a death of its worker after it
    /// answered.
    pub kernel: &'a str,
    /// The plugin library.
    pub library: &'a Path,
    /// The kernel's index in it.
    pub index: u32,
    /// The run request, written to the worker as it is encoded (again,
    /// when the kernel is run a second time).
    pub request: &'a dyn Body,
    /// The kernel's limits.
    pub limits: KernelLimits,
    /// Answers the kernel's callbacks.
    pub host: &'a RunHost<'a>,
    /// The run's cancel flag.
    pub cancel: &'a AtomicBool,
}

/// A kernel run in a worker.
#[derive(Debug)]
pub struct Ran {
    /// Names this run in a later [`LateDeath`]'s [`Job::Kernel`].
    pub ticket: u64,
    /// The plugin's answer (JSON, unchecked) or how the worker ended.
    pub answer: Result<Vec<u8>, WorkerEnd>,
    /// Workers found dead after earlier work while this kernel was run;
    /// one may blame this very run (its worker died right after it
    /// answered).
    pub late_deaths: Vec<LateDeath>,
}

/// Worker processes of one program, kept for reuse by every run of this
/// process (a host's several engine runs of one command).
pub struct WorkerPool {
    program: PathBuf,
    idle: Mutex<Vec<Worker>>,
    next_ticket: AtomicU64,
    /// Deaths noticed while describing libraries, for the next run that
    /// ends to report.
    unclaimed: Mutex<Vec<LateDeath>>,
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
            next_ticket: AtomicU64::new(1),
            unclaimed: Mutex::new(Vec::new()),
        });
        pools.push(pool.clone());
        pool
    }

    /// The executable started as a worker.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// An idle worker that still lives, else a new one. Idle workers found
    /// dead died between jobs: their deaths go to `late`.
    fn take(&self, late: &mut Vec<LateDeath>) -> Result<Worker, WorkerEnd> {
        loop {
            let idle = self.idle.lock().ok().and_then(|mut i| i.pop());
            match idle {
                Some(w) if w.has_ended() => late.extend(w.late_death(Noticed::Idle)),
                Some(w) => return Ok(w),
                None => return Worker::spawn(&self.program),
            }
        }
    }

    /// Keeps a worker that completed its job for the next one, unless it
    /// died right after answering: that death goes to `late`.
    fn give_back(&self, worker: Worker, late: &mut Vec<LateDeath>) {
        if worker.has_ended() {
            late.extend(worker.late_death(Noticed::RightAfter));
        } else if let Ok(mut idle) = self.idle.lock() {
            idle.push(worker);
        }
    }

    /// Idle workers found dead, and deaths noticed while describing
    /// libraries: for the run that ends now to report. The dead workers
    /// are reaped, their groups killed.
    pub fn take_late_deaths(&self) -> Vec<LateDeath> {
        let dead: Vec<Worker> = match self.idle.lock() {
            Ok(mut idle) => {
                let (dead, alive) = std::mem::take(&mut *idle)
                    .into_iter()
                    .partition(Worker::has_ended);
                *idle = alive;
                dead
            }
            Err(_) => Vec::new(),
        };
        let mut late: Vec<LateDeath> = self
            .unclaimed
            .lock()
            .map(|mut u| std::mem::take(&mut *u))
            .unwrap_or_default();
        late.extend(dead.into_iter().filter_map(|w| w.late_death(Noticed::Idle)));
        late
    }

    /// Loads `library` in a worker and describes its kernels. A library
    /// that crashes or hangs the worker costs only that worker.
    pub fn describe(&self, library: &Path, memory_mb: Option<u64>) -> Described {
        let mut late = Vec::new();
        let described = match self.take(&mut late) {
            Ok(worker) => self.describe_on(worker, library, memory_mb, &mut late, true),
            Err(end) => Err(DescribeProblem::Worker(end)),
        };
        if !late.is_empty() {
            if let Ok(mut unclaimed) = self.unclaimed.lock() {
                unclaimed.extend(late);
            }
        }
        described
    }

    fn describe_on(
        &self,
        mut worker: Worker,
        library: &Path,
        memory_mb: Option<u64>,
        late: &mut Vec<LateDeath>,
        first_try: bool,
    ) -> Described {
        worker.stderr.start_request();
        let request = ToWorker::Describe {
            library: library.to_path_buf(),
            memory_mb,
        };
        let in_calls = AtomicUsize::new(0);
        let watch = Watch {
            seq: 0,
            timeout: Some(DESCRIBE_TIMEOUT),
            cancel: None,
            in_calls: &in_calls,
        };
        let answer = worker.exchange(&request, &&[][..], 0, watch, |frame, _| match frame {
            FromWorker::Described {
                result,
                api_version,
                left_threads,
            } => Some((result, api_version, left_threads)),
            _ => None,
        });
        let (result, api_version) = match answer {
            Ok((result, api_version, left_threads)) => {
                worker.served(
                    Job::Describe {
                        library: library.to_path_buf(),
                    },
                    left_threads,
                );
                self.give_back(worker, late);
                (result, api_version)
            }
            Err(EndCause::Died) if first_try && worker.suspect.is_some() => {
                // Maybe a thread an earlier library or kernel left running
                // ended it: describe on a fresh worker to know.
                let death = worker.late_death(Noticed::Describing(library.to_path_buf()));
                let again = match Worker::spawn(&self.program) {
                    Ok(fresh) => self.describe_on(fresh, library, memory_mb, late, false),
                    Err(end) => Err(DescribeProblem::Worker(end)),
                };
                if !matches!(&again, Err(DescribeProblem::Worker(end)) if end.cause == EndCause::Died)
                {
                    late.extend(death);
                }
                return again;
            }
            Err(cause) => return Err(DescribeProblem::Worker(worker.end(cause))),
        };
        result
            .map(|kernels| LibraryKernels {
                kernels,
                api_version,
            })
            .map_err(|e| {
                DescribeProblem::Load(match e {
                    WireLoadError::Open { message } => crate::loader::LoadError::Open(message),
                    WireLoadError::MissingSymbol => crate::loader::LoadError::MissingSymbol,
                    WireLoadError::AbiMismatch {
                        found,
                        expected,
                        api_version,
                    } => crate::loader::LoadError::Plugin(
                        koas_kernel_api::abi::PluginError::AbiMismatch {
                            found,
                            expected,
                            api_version,
                        },
                    ),
                    WireLoadError::Other { message } => crate::loader::LoadError::Open(message),
                })
            })
    }

    /// Runs one kernel in a worker: the plugin's answer or how the worker
    /// ended, and the deaths of workers noticed meanwhile. A worker that
    /// completed the run goes back to the pool; any other is killed with
    /// its process group and reaped.
    ///
    /// A worker that dies during the run after an earlier job in it left
    /// threads running may have been ended by one of those threads: the
    /// kernel is run again, once, on a fresh worker. If it then completes,
    /// the death is that earlier job's (a [`LateDeath`] in
    /// [`Ran::late_deaths`]); if its fresh worker dies too, the death is
    /// the kernel's own.
    pub fn run(&self, call: KernelCall<'_>) -> Ran {
        let ticket = self.next_ticket.fetch_add(1, Ordering::SeqCst);
        let mut late = Vec::new();
        let answer = match self.take(&mut late) {
            Ok(worker) => self.run_on(worker, &call, ticket, &mut late, true),
            Err(end) => Err(end),
        };
        Ran {
            ticket,
            answer,
            late_deaths: late,
        }
    }

    fn run_on(
        &self,
        mut worker: Worker,
        call: &KernelCall<'_>,
        ticket: u64,
        late: &mut Vec<LateDeath>,
        first_try: bool,
    ) -> Result<Vec<u8>, WorkerEnd> {
        match run_kernel(&mut worker, call) {
            Ok((body, left_threads)) => {
                let job = Job::Kernel {
                    name: call.kernel.to_string(),
                    ticket,
                };
                worker.served(job, left_threads);
                self.give_back(worker, late);
                Ok(body)
            }
            Err(EndCause::Died) if first_try && !call.cancel.load(Ordering::SeqCst) => {
                // Maybe a thread an earlier kernel left running ended it:
                // run it on a fresh worker to know.
                let Some(suspect) = worker.suspect.clone() else {
                    return Err(worker.end(EndCause::Died));
                };
                let death = worker.late_death_of(suspect, Noticed::During(call.kernel.to_string()));
                let left = match death.left_threads {
                    Some(1) => "a thread".to_string(),
                    Some(n) => format!("{n} threads"),
                    None => "threads".to_string(),
                };
                call.host.log(
                    LogLevel::Warn,
                    &format!(
                        "its worker process{} {} while it ran, and {} may have left {left} running in that process: it is run again on a fresh worker",
                        death.end.pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
                        death.end.status_text(),
                        death.blamed
                    ),
                );
                let again = match Worker::spawn(&self.program) {
                    Ok(fresh) => self.run_on(fresh, call, ticket, late, false),
                    Err(end) => return Err(end),
                };
                // Dying on a fresh worker too makes both deaths its own.
                if !matches!(&again, Err(end) if end.cause == EndCause::Died) {
                    late.push(death);
                }
                again
            }
            Err(cause) => Err(worker.end(cause)),
        }
    }
}

/// Runs one kernel on `worker`: the plugin's answer and the threads the
/// kernel left running, or why the worker stopped.
fn run_kernel(
    worker: &mut Worker,
    call: &KernelCall<'_>,
) -> Result<(Vec<u8>, Option<u32>), EndCause> {
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
    // Frames are at most the output cap (the answer, a file body), plus
    // room for the JSON around an answer.
    let max_body = (max_output as u64).saturating_add(1024 * 1024);
    let in_calls = AtomicUsize::new(0);
    let watch = Watch {
        seq,
        timeout: call.limits.timeout(),
        cancel: Some(call.cancel),
        in_calls: &in_calls,
    };
    let stdin = worker.stdin.clone();
    let host = call.host;
    let worker = &*worker;
    std::thread::scope(|s| {
        let in_calls = &in_calls;
        worker.exchange(&request, call.request, max_body, watch, |frame, body| {
            match frame {
                FromWorker::Done {
                    seq: n,
                    left_threads,
                } if n == seq => return Some((body, left_threads)),
                FromWorker::Log {
                    seq: n,
                    level,
                    message,
                } if n == seq => host.log(LogLevel::from_u32(level), &message),
                FromWorker::Progress {
                    seq: n,
                    done,
                    total,
                } if n == seq => host.progress(done, total),
                FromWorker::Call { seq: n, id, header } if n == seq => {
                    in_calls.fetch_add(1, Ordering::SeqCst);
                    let stdin = stdin.clone();
                    s.spawn(move || {
                        let answer = match host.call(&header, &body) {
                            Ok(value) => HostCallResponse::Ok { value },
                            Err(message) => HostCallResponse::Error { message },
                        };
                        in_calls.fetch_sub(1, Ordering::SeqCst);
                        if let Ok(mut stdin) = stdin.lock() {
                            let _ = write_frame(&mut *stdin, &ToWorker::Reply { id, answer }, &[]);
                        }
                    });
                }
                // Frames of an earlier request (a thread its kernel left
                // behind may still log) are not this kernel's.
                _ => {}
            }
            None
        })
    })
}
