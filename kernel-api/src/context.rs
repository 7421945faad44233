//! The services a kernel may call while it runs.

use crate::{KernelError, LlmRequest, LlmResponse};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

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
            .map(|i| {
                let item = items.get(i).cloned().unwrap_or(Value::Null);
                if let Some(message) = item.get("error").and_then(Value::as_str) {
                    return Err(KernelError::new(crate::ErrorKind::Host, message));
                }
                serde_json::from_value(item.get("ok").cloned().unwrap_or(Value::Null)).map_err(
                    |e| {
                        KernelError::new(
                            crate::ErrorKind::Host,
                            format!("the host's LLM answer {i} has an unexpected shape: {e}"),
                        )
                    },
                )
            })
            .collect()
    }
}
