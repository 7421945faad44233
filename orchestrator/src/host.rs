//! The host side of a running kernel's [`Context`](koas_kernel_api::Context):
//! logging, progress, cancellation, workspace files and the LLM service.

use crate::fsio::{append, atomic_write};
use crate::report::Reporter;
use crate::workspace::resolve_inside;
use koas_kernel_api::{Host, LlmRequest, LogLevel};
use serde_json::Value;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The most log lines kept per kernel in the run record.
pub const MAX_RECORDED_LOG_LINES: usize = 200;

/// Answers kernels' LLM requests. The host's LLM service implements it;
/// without one every request fails with "no LLM backend configured".
pub trait LlmHandler: Send + Sync {
    /// Completes a request; the answer is a JSON
    /// [`LlmResponse`](koas_kernel_api::LlmResponse).
    fn complete(&self, kernel: &str, request: &LlmRequest) -> Result<Value, String>;

    /// Completes independent requests, answering in their order. The
    /// default asks one by one; the host's service runs them concurrently
    /// up to its in-flight bound.
    fn complete_many(&self, kernel: &str, requests: &[LlmRequest]) -> Vec<Result<Value, String>> {
        requests.iter().map(|r| self.complete(kernel, r)).collect()
    }

    /// What the run record keeps about the LLM session (models, budgets,
    /// token use, why it stopped early), if anything.
    fn session_metadata(&self) -> Option<Value> {
        None
    }
}

/// The host callbacks for one kernel run.
pub struct RunHost<'a> {
    /// The kernel's name: labels its log lines and progress, and is passed
    /// to the LLM handler.
    pub kernel: &'a str,
    /// The workspace folder; the kernel's file writes are resolved inside it.
    pub workspace: &'a Path,
    /// Set when the run is cancelled.
    pub cancel: &'a AtomicBool,
    /// Where logs and progress go.
    pub reporter: &'a Reporter,
    /// The LLM service; `None` makes every `llm_complete` call fail with
    /// "no LLM backend configured".
    pub llm: Option<&'a dyn LlmHandler>,
    /// Log lines kept for the run record.
    pub logs: Mutex<Vec<String>>,
    /// Files the kernel wrote, for the run record.
    pub files: Mutex<Vec<String>>,
}

impl<'a> RunHost<'a> {
    /// A host for one run of `kernel`.
    pub fn new(
        kernel: &'a str,
        workspace: &'a Path,
        cancel: &'a AtomicBool,
        reporter: &'a Reporter,
        llm: Option<&'a dyn LlmHandler>,
    ) -> Self {
        RunHost {
            kernel,
            workspace,
            cancel,
            reporter,
            llm,
            logs: Mutex::new(Vec::new()),
            files: Mutex::new(Vec::new()),
        }
    }

    fn file_call(&self, method: &str, header: &Value, body: &[u8]) -> Result<Value, String> {
        let rel = header
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{method}: no `path` given"))?;
        let path = resolve_inside(self.workspace, rel).map_err(|e| e.to_string())?;
        let result = if method == "write_file" {
            atomic_write(&path, body)
        } else {
            append(&path, body)
        };
        result.map_err(|e| e.to_string())?;
        if let Ok(mut files) = self.files.lock() {
            if !files.iter().any(|f| f == rel) {
                files.push(rel.to_string());
            }
        }
        Ok(Value::Null)
    }
}

impl Host for RunHost<'_> {
    fn log(&self, level: LogLevel, message: &str) {
        self.reporter.kernel_log(self.kernel, level, message);
        if let Ok(mut logs) = self.logs.lock() {
            if logs.len() < MAX_RECORDED_LOG_LINES {
                logs.push(format!("{}: {message}", crate::report::level_name(level)));
            }
        }
    }

    fn progress(&self, done: u64, total: u64) {
        self.reporter.kernel_progress(self.kernel, done, total);
    }

    fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    fn call(&self, header: &Value, body: &[u8]) -> Result<Value, String> {
        let method = header.get("method").and_then(Value::as_str).unwrap_or("");
        match method {
            "write_file" | "append_file" => self.file_call(method, header, body),
            "llm_complete" => {
                let request: LlmRequest =
                    serde_json::from_value(header.get("request").cloned().unwrap_or(Value::Null))
                        .map_err(|e| format!("malformed LLM request: {e}"))?;
                match self.llm {
                    Some(llm) => llm.complete(self.kernel, &request),
                    None => Err(koas_kernel_api::NO_BACKEND.to_string()),
                }
            }
            "llm_complete_many" => {
                let requests: Vec<LlmRequest> =
                    serde_json::from_value(header.get("requests").cloned().unwrap_or(Value::Null))
                        .map_err(|e| format!("malformed LLM requests: {e}"))?;
                let Some(llm) = self.llm else {
                    return Err(koas_kernel_api::NO_BACKEND.to_string());
                };
                Ok(Value::Array(
                    llm.complete_many(self.kernel, &requests)
                        .into_iter()
                        .map(|answer| match answer {
                            Ok(v) => serde_json::json!({ "ok": v }),
                            Err(e) => serde_json::json!({ "error": e }),
                        })
                        .collect(),
                ))
            }
            other => Err(format!(
                "unknown host method {other:?} (this koas knows write_file, append_file, llm_complete, llm_complete_many)"
            )),
        }
    }
}

/// An LLM handler shared by the kernel threads of a run.
pub type SharedLlm = Arc<dyn LlmHandler>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_calls_stay_inside_the_workspace() {
        let ws = tempfile::tempdir().expect("tmp");
        let cancel = AtomicBool::new(false);
        let reporter = Reporter::quiet();
        let host = RunHost::new("k", ws.path(), &cancel, &reporter, None);
        host.call(&json!({"method": "write_file", "path": "a/b.txt"}), b"x")
            .expect("inside");
        host.call(&json!({"method": "append_file", "path": "a/b.txt"}), b"y")
            .expect("append");
        assert_eq!(
            std::fs::read(ws.path().join("a/b.txt")).expect("read"),
            b"xy"
        );
        let err = host
            .call(
                &json!({"method": "write_file", "path": "../escape.txt"}),
                b"x",
            )
            .expect_err("escape");
        assert!(
            err.contains("not a relative path inside the workspace"),
            "{err}"
        );
        assert!(!ws
            .path()
            .parent()
            .expect("parent")
            .join("escape.txt")
            .exists());
        let err = host
            .call(
                &json!({"method": "llm_complete", "request": {"prompt": "p"}}),
                b"",
            )
            .expect_err("no backend");
        assert!(err.contains("no LLM backend configured"));
        let err = host
            .call(
                &json!({"method": "llm_complete_many", "requests": [{"prompt": "p"}]}),
                b"",
            )
            .expect_err("no backend");
        assert!(err.contains("no LLM backend configured"));
        assert!(host.call(&json!({"method": "nope"}), b"").is_err());
        host.log(LogLevel::Warn, "careful");
        assert_eq!(host.logs.lock().expect("lock")[0], "warn: careful");
    }
}
