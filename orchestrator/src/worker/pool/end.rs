//! How a worker ended, and the tail of its stderr kept for the message.

use super::*;

/// The bytes of a worker's stderr kept for failure messages.
pub(super) const STDERR_TAIL_BYTES: usize = 8192;
/// The most of that tail shown in a failure message, in characters.
pub(super) const STDERR_SHOWN_CHARS: usize = 2000;

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
    pub(super) fn start(message: String) -> WorkerEnd {
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
pub(super) struct StderrTail {
    pub(super) state: Mutex<StderrState>,
    pub(super) closed: (Mutex<bool>, Condvar),
}

#[derive(Default)]
pub(super) struct StderrState {
    /// The last [`STDERR_TAIL_BYTES`] bytes.
    pub(super) tail: VecDeque<u8>,
    /// Bytes written so far.
    pub(super) total: u64,
    /// The first [`STDERR_HEAD_BYTES`] bytes written since `head_from`.
    pub(super) head: Vec<u8>,
    pub(super) head_from: u64,
}

/// The bytes kept from the start of a request's stderr.
pub(super) const STDERR_HEAD_BYTES: usize = 1024;

impl StderrTail {
    pub(super) fn drain(mut stderr: impl Read + Send + 'static) -> Arc<StderrTail> {
        let tail = Arc::new(StderrTail {
            state: Mutex::new(StderrState::default()),
            closed: (Mutex::new(false), Condvar::new()),
        });
        let writer = tail.clone();
        let spawned = std::thread::Builder::new()
            .name("koas-worker-stderr".into())
            .spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut state) = writer.state.lock() {
                        let room = STDERR_HEAD_BYTES.saturating_sub(state.head.len());
                        state.head.extend(&buf[..n.min(room)]);
                        state.tail.extend(&buf[..n]);
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
    pub(super) fn start_request(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.head.clear();
            state.head_from = state.total;
        }
    }

    /// Waits (a little) for the worker's stderr to close after its death.
    pub(super) fn wait_closed(&self, at_most: Duration) {
        let (done, cv) = &self.closed;
        if let Ok(guard) = done.lock() {
            let _ = cv.wait_timeout_while(guard, at_most, |d| !*d);
        }
    }

    /// What the worker wrote during the request, as one line of text: all
    /// of it when short, else its start and its end.
    pub(super) fn request_text(&self) -> String {
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
