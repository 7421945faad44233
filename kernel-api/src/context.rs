//! The services a kernel may call while it runs.

use crate::{KernelError, LlmRequest, LlmResponse};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[repr(u32)]
pub enum LogLevel {
    /// Detail for debugging a kernel.
    Debug = 0,
    /// Normal progress information; printed with `--verbose`.
    Info = 1,
    /// Something the user should know about.
    Warn = 2,
    /// A failure the kernel is about to report.
    Error = 3,
}

impl LogLevel {
    /// The level for a raw ABI value; unknown values are `Info`.
    pub fn from_u32(v: u32) -> LogLevel {
        match v {
            0 => LogLevel::Debug,
            2 => LogLevel::Warn,
            3 => LogLevel::Error,
            _ => LogLevel::Info,
        }
    }
}

/// The host side of a [`Context`].
///
/// Inside a loaded plugin this is backed by the host's C callbacks; in tests
/// [`crate::testing::TestHarness`] provides an in-memory one. Kernel authors
/// never implement it.
pub trait Host: Send + Sync {
    /// Records a log line from the kernel at `level`.
    fn log(&self, level: LogLevel, message: &str);
    /// Reports progress: `done` of `total` units.
    fn progress(&self, done: u64, total: u64);
    /// `true` once the run has been cancelled.
    fn is_cancelled(&self) -> bool;
    /// A generic host call: `header` is a JSON object with a `method` field,
    /// `body` raw bytes. Returns the host's JSON answer or an error message.
    fn call(&self, header: &serde_json::Value, body: &[u8]) -> Result<serde_json::Value, String>;
}

/// What a running kernel can ask of the host.
pub struct Context<'a> {
    host: &'a dyn Host,
    kernel: &'a str,
}

impl<'a> Context<'a> {
    /// Wraps a host for the kernel named `kernel`. Used by the plugin glue
    /// and by test harnesses.
    pub fn new(host: &'a dyn Host, kernel: &'a str) -> Self {
        Context { host, kernel }
    }

    /// The name of the kernel being run.
    pub fn kernel_name(&self) -> &str {
        self.kernel
    }

    /// Logs a line at `level`.
    pub fn log(&self, level: LogLevel, message: &str) {
        self.host.log(level, message);
    }

    /// Logs a debug line: kept in the run record, never printed.
    pub fn debug(&self, message: &str) {
        self.log(LogLevel::Debug, message);
    }

    /// Logs an informational line: printed with `--verbose`, kept in the run
    /// record.
    pub fn info(&self, message: &str) {
        self.log(LogLevel::Info, message);
    }

    /// Logs a warning: always printed, kept in the run record. Use
    /// [`KernelOutput::warning`](crate::KernelOutput::warning) for a problem
    /// that must be reported again when the outputs come from the cache.
    pub fn warn(&self, message: &str) {
        self.log(LogLevel::Warn, message);
    }

    /// Reports progress, e.g. items done out of items total.
    pub fn progress(&self, done: u64, total: u64) {
        self.host.progress(done, total);
    }

    /// `true` once the user pressed Ctrl-C or the run was otherwise
    /// cancelled. Long loops should check it regularly.
    pub fn is_cancelled(&self) -> bool {
        self.host.is_cancelled()
    }

    /// `Err(KernelError::cancelled())` once the run is cancelled, so a loop
    /// can write `ctx.check_cancelled()?;`.
    pub fn check_cancelled(&self) -> Result<(), KernelError> {
        if self.is_cancelled() {
            Err(KernelError::cancelled())
        } else {
            Ok(())
        }
    }

    /// Writes (creates or replaces, atomically) a file inside the run's
    /// workspace. `path` is relative with `/` separators; a path that is
    /// absolute or leaves the workspace is refused.
    pub fn write_file(&self, path: &str, contents: &[u8]) -> Result<(), KernelError> {
        self.file_call("write_file", path, contents)
    }

    /// Appends to a file inside the run's workspace, creating it if needed
    /// (for example one line of a `status.jsonl`).
    pub fn append_file(&self, path: &str, contents: &[u8]) -> Result<(), KernelError> {
        self.file_call("append_file", path, contents)
    }

    fn file_call(&self, method: &str, path: &str, contents: &[u8]) -> Result<(), KernelError> {
        if !crate::spec::is_relative_inside(path) {
            return Err(KernelError::new(
                crate::ErrorKind::Host,
                format!("{method} refused: {path:?} is not a relative path inside the workspace"),
            ));
        }
        self.host
            .call(&json!({ "method": method, "path": path }), contents)
            .map(|_| ())
            .map_err(|e| KernelError::new(crate::ErrorKind::Host, e))
    }

    /// Asks the host to complete a prompt with its configured LLM backend.
    pub fn llm_complete(&self, request: &LlmRequest) -> Result<LlmResponse, KernelError> {
        let header = json!({ "method": "llm_complete", "request": request });
        let answer = self
            .host
            .call(&header, &[])
            .map_err(|e| KernelError::new(crate::ErrorKind::Host, e))?;
        serde_json::from_value(answer).map_err(|e| {
            KernelError::new(
                crate::ErrorKind::Host,
                format!("the host's LLM answer has an unexpected shape: {e}"),
            )
        })
    }

    /// Asks the host to complete several prompts at once. The host runs
    /// them concurrently, up to the in-flight bound of its LLM service, so
    /// a kernel with independent requests (one per part, one per section)
    /// does not wait for each in turn. The answers come in the order of
    /// the requests; one failed request does not fail the others.
    ///
    /// A host that does not know batches gets the requests one by one.
    pub fn llm_complete_many(
        &self,
        requests: &[LlmRequest],
    ) -> Vec<Result<LlmResponse, KernelError>> {
        if requests.is_empty() {
            return Vec::new();
        }
        let header = json!({ "method": "llm_complete_many", "requests": requests });
        let answer = match self.host.call(&header, &[]) {
            Ok(answer) => answer,
            Err(e) if e.starts_with("unknown host method") => {
                return requests.iter().map(|r| self.llm_complete(r)).collect();
            }
            Err(e) => {
                return requests
                    .iter()
                    .map(|_| Err(KernelError::new(crate::ErrorKind::Host, e.clone())))
                    .collect();
            }
        };
        let items = answer.as_array().cloned().unwrap_or_default();
        (0..requests.len())
            .map(|i| parse_item(items.get(i).unwrap_or(&Value::Null), i as u64))
            .collect()
    }

    /// A stream of LLM requests: [`LlmStream::submit`] hands a request to
    /// the host at once and [`LlmStream::next`] waits for whichever answer
    /// completes first, so a kernel can send a follow-up (a retry, a
    /// second opinion, a parent's summary) as soon as the answer it
    /// depends on is in, while its other requests are still being
    /// answered. The host applies the same cache, budgets, exchange log
    /// and replay as [`Context::llm_complete`].
    pub fn llm_stream(&self) -> LlmStream<'_> {
        LlmStream {
            ctx: self,
            id: NEXT_STREAM.fetch_add(1, Ordering::SeqCst),
            local: VecDeque::new(),
            next_local: 0,
            host_streams: true,
            pending: BTreeSet::new(),
            broken: None,
        }
    }
}

/// Stream IDs, unique within the process that runs the kernel: a kernel
/// may hold several streams, and the host keeps their answers apart.
static NEXT_STREAM: AtomicU64 = AtomicU64::new(1);

/// A request handed to the host by [`LlmStream::submit`]; its answer comes
/// back from [`LlmStream::next`] with the same ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(pub u64);

/// Requests in flight at the host, answered as they complete; see
/// [`Context::llm_stream`].
///
/// How many requests a kernel keeps outstanding is its choice: the host
/// sends at most its in-flight bound to the model servers and queues the
/// rest. Requests still outstanding when the stream is dropped are
/// answered and logged by the host, and their answers dropped.
pub struct LlmStream<'c> {
    ctx: &'c Context<'c>,
    id: u64,
    /// Requests kept here when the host does not stream (an older koas),
    /// each asked, one by one, when [`LlmStream::next`] is called; and the
    /// host's refusals, answered there.
    local: VecDeque<(Ticket, Result<LlmRequest, String>)>,
    next_local: u64,
    host_streams: bool,
    /// The host's tickets not yet answered.
    pending: BTreeSet<u64>,
    /// Why the host stopped answering, if it did.
    broken: Option<String>,
}

impl LlmStream<'_> {
    /// Hands `request` to the host and returns its ticket. Every
    /// submitted request gets exactly one answer from [`LlmStream::next`]:
    /// a request the host refuses (no model configured, a malformed
    /// request) is answered there with the host's error.
    pub fn submit(&mut self, request: &LlmRequest) -> Ticket {
        if self.host_streams {
            let header = json!({ "method": "llm_submit", "stream": self.id, "request": request });
            match self.ctx.host.call(&header, &[]) {
                Ok(answer) => {
                    if let Some(ticket) = answer.get("ticket").and_then(Value::as_u64) {
                        self.pending.insert(ticket);
                        return Ticket(ticket);
                    }
                    let message =
                        format!("the host's answer to llm_submit has no ticket: {answer}");
                    return self.refused(message);
                }
                Err(e) if e.starts_with("unknown host method") => self.host_streams = false,
                Err(e) => return self.refused(e),
            }
        }
        let ticket = self.local_ticket();
        self.local.push_back((ticket, Ok(request.clone())));
        ticket
    }

    /// A ticket of this stream's own, above the host's (which count up
    /// from 0), so the two never meet.
    fn local_ticket(&mut self) -> Ticket {
        self.next_local += 1;
        Ticket(u64::MAX - self.next_local)
    }

    fn refused(&mut self, message: String) -> Ticket {
        let ticket = self.local_ticket();
        self.local.push_back((ticket, Err(message)));
        ticket
    }

    /// Waits for the next answer to complete and returns it with its
    /// ticket; `None` when no request is outstanding. Answers come in the
    /// order they complete, not the order they were submitted.
    ///
    /// When the host stops answering (the run was cancelled), every
    /// request still outstanding is answered with that error, one per
    /// call.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<(Ticket, Result<LlmResponse, KernelError>)> {
        let failed = |message: &str| KernelError::new(crate::ErrorKind::Host, message);
        if let Some((ticket, request)) = self.local.pop_front() {
            let answer = match request {
                Ok(request) => self.ctx.llm_complete(&request),
                Err(message) => Err(failed(&message)),
            };
            return Some((ticket, answer));
        }
        if let Some(why) = &self.broken {
            let ticket = self.pending.pop_first()?;
            return Some((Ticket(ticket), Err(failed(why))));
        }
        if self.pending.is_empty() {
            return None;
        }
        let header = json!({ "method": "llm_next", "stream": self.id });
        let answer = self.ctx.host.call(&header, &[]);
        let ticket = match &answer {
            Ok(answer) => answer.get("ticket").and_then(Value::as_u64),
            Err(_) => None,
        };
        match ticket.filter(|t| self.pending.remove(t)) {
            Some(ticket) => Some((
                Ticket(ticket),
                parse_item(answer.as_ref().unwrap_or(&Value::Null), ticket),
            )),
            None => {
                self.broken = Some(match answer {
                    Err(e) => e,
                    Ok(answer) => format!(
                        "the host's answer to llm_next names no outstanding request: {answer}"
                    ),
                });
                self.next()
            }
        }
    }

    /// Requests submitted and not yet returned by [`LlmStream::next`].
    pub fn outstanding(&self) -> usize {
        self.local.len() + self.pending.len()
    }
}

/// One answer of a batch or a stream: `{"ok": response}` or
/// `{"error": message}`.
fn parse_item(item: &Value, i: u64) -> Result<LlmResponse, KernelError> {
    if let Some(message) = item.get("error").and_then(Value::as_str) {
        return Err(KernelError::new(crate::ErrorKind::Host, message));
    }
    serde_json::from_value(item.get("ok").cloned().unwrap_or(Value::Null)).map_err(|e| {
        KernelError::new(
            crate::ErrorKind::Host,
            format!("the host's LLM answer {i} has an unexpected shape: {e}"),
        )
    })
}
