//! The host side of a running kernel's [`Context`](koas_kernel_api::Context):
//! logging, progress, cancellation, workspace files and the LLM service.

use crate::limits::{cut, MAX_LOG_LINE_CHARS, MAX_PRINTED_LOG_LINES};
use crate::progress::Reporter;
use crate::workspace::{resolve_inside, WriteRules};
use koas_kernel_api::{Host, LlmRequest, LogLevel};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
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
    /// Which workspace paths the kernel may write.
    pub rules: &'a WriteRules,
    /// Set when the run is cancelled.
    pub cancel: &'a AtomicBool,
    /// Where logs and progress go.
    pub reporter: &'a Reporter,
    /// The LLM service; `None` makes every `llm_complete` call fail with
    /// "no LLM backend configured".
    pub llm: Option<SharedLlm>,
    /// Log lines kept for the run record.
    pub logs: Mutex<Vec<String>>,
    /// Files the kernel wrote, for the run record.
    pub files: Mutex<Vec<String>>,
    /// Log lines received, printed or not.
    log_count: AtomicUsize,
    /// The kernel's LLM streams, by the ID the kernel gave them.
    streams: Mutex<HashMap<u64, Arc<Stream>>>,
    /// Tickets of streamed requests, unique in the run.
    next_ticket: AtomicU64,
    /// Streamed requests submitted and not yet taken by `llm_next`.
    outstanding: Arc<AtomicUsize>,
}

/// The most streamed requests a kernel may have outstanding: each waits on
/// a thread of its own, so a kernel submitting without bound would
/// exhaust the host.
pub const MAX_OUTSTANDING_LLM_REQUESTS: usize = 4096;

/// One LLM stream of a kernel: answers arrive on the channel as they
/// complete.
struct Stream {
    tx: Mutex<Sender<(u64, Result<Value, String>)>>,
    rx: Mutex<Receiver<(u64, Result<Value, String>)>>,
    /// Submitted and not yet taken.
    outstanding: AtomicUsize,
}

/// How often a host call waiting for the model looks at the cancel flag.
const CANCEL_POLL: std::time::Duration = std::time::Duration::from_millis(50);

impl RunHost<'_> {
    /// Runs `work` (a model call, which may take minutes) on a thread of
    /// its own and waits for it unless the run is cancelled: then the
    /// kernel gets an error at once and the call is left to finish alone,
    /// so a cancelled run stops within its grace period instead of after
    /// the model's answer.
    fn unless_cancelled<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, String> {
        const CANCELLED: &str = "the run was cancelled while the model was answering";
        if self.is_cancelled() {
            return Err(CANCELLED.to_owned());
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name(format!("koas-llm-{}", self.kernel))
            .spawn(move || {
                let _ = tx.send(work());
            })
            .map_err(|e| format!("cannot start the model call: {e}"))?;
        loop {
            match rx.recv_timeout(CANCEL_POLL) {
                Ok(answer) => return Ok(answer),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if self.is_cancelled() {
                        return Err(CANCELLED.to_owned());
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("the model call ended without an answer".to_owned())
                }
            }
        }
    }
}

impl<'a> RunHost<'a> {
    /// A host for one run of `kernel`, writing only what `rules` allow.
    pub fn new(
        kernel: &'a str,
        workspace: &'a Path,
        rules: &'a WriteRules,
        cancel: &'a AtomicBool,
        reporter: &'a Reporter,
        llm: Option<SharedLlm>,
    ) -> Self {
        RunHost {
            kernel,
            workspace,
            rules,
            cancel,
            reporter,
            llm,
            logs: Mutex::new(Vec::new()),
            files: Mutex::new(Vec::new()),
            log_count: AtomicUsize::new(0),
            streams: Mutex::new(HashMap::new()),
            next_ticket: AtomicU64::new(0),
            outstanding: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn stream(&self, header: &Value) -> Result<Arc<Stream>, String> {
        let id = header.get("stream").and_then(Value::as_u64).unwrap_or(0);
        let mut streams = self
            .streams
            .lock()
            .map_err(|_| "the host's streams are poisoned")?;
        Ok(streams
            .entry(id)
            .or_insert_with(|| {
                let (tx, rx) = std::sync::mpsc::channel();
                Arc::new(Stream {
                    tx: Mutex::new(tx),
                    rx: Mutex::new(rx),
                    outstanding: AtomicUsize::new(0),
                })
            })
            .clone())
    }

    /// `llm_submit`: the request starts on a thread of its own (it waits
    /// there for a free slot of the LLM service) and its answer goes to
    /// the stream's channel.
    fn llm_submit(&self, header: &Value) -> Result<Value, String> {
        let request: LlmRequest =
            serde_json::from_value(header.get("request").cloned().unwrap_or(Value::Null))
                .map_err(|e| format!("malformed LLM request: {e}"))?;
        let Some(llm) = self.llm.clone() else {
            return Err(koas_kernel_api::NO_BACKEND.to_string());
        };
        if self.is_cancelled() {
            return Err("the run was cancelled".to_owned());
        }
        if self.outstanding.load(Ordering::SeqCst) >= MAX_OUTSTANDING_LLM_REQUESTS {
            return Err(format!(
                "kernel `{}` has {MAX_OUTSTANDING_LLM_REQUESTS} LLM requests outstanding, the most a kernel may: take answers with llm_next before submitting more",
                self.kernel
            ));
        }
        let stream = self.stream(header)?;
        let ticket = self.next_ticket.fetch_add(1, Ordering::SeqCst);
        let tx = stream
            .tx
            .lock()
            .map_err(|_| "the host's stream is poisoned")?
            .clone();
        let kernel = self.kernel.to_owned();
        stream.outstanding.fetch_add(1, Ordering::SeqCst);
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        let outstanding = self.outstanding.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("koas-llm-{kernel}"))
            .spawn(move || {
                let answer = llm.complete(&kernel, &request);
                outstanding.fetch_sub(1, Ordering::SeqCst);
                let _ = tx.send((ticket, answer));
            });
        if let Err(e) = spawned {
            stream.outstanding.fetch_sub(1, Ordering::SeqCst);
            self.outstanding.fetch_sub(1, Ordering::SeqCst);
            return Err(format!("cannot start the model call: {e}"));
        }
        Ok(serde_json::json!({ "ticket": ticket }))
    }

    /// `llm_next`: the next answer of the stream to complete, waited for
    /// unless the run is cancelled.
    fn llm_next(&self, header: &Value) -> Result<Value, String> {
        let stream = self.stream(header)?;
        if stream.outstanding.load(Ordering::SeqCst) == 0 {
            return Err("llm_next: no request of this stream is outstanding".to_owned());
        }
        let rx = stream
            .rx
            .lock()
            .map_err(|_| "the host's stream is poisoned")?;
        loop {
            match rx.recv_timeout(CANCEL_POLL) {
                Ok((ticket, answer)) => {
                    stream.outstanding.fetch_sub(1, Ordering::SeqCst);
                    return Ok(match answer {
                        Ok(v) => serde_json::json!({ "ticket": ticket, "ok": v }),
                        Err(e) => serde_json::json!({ "ticket": ticket, "error": e }),
                    });
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if self.is_cancelled() {
                        return Err(
                            "the run was cancelled while the model was answering".to_owned()
                        );
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("the model calls ended without an answer".to_owned())
                }
            }
        }
    }

    /// The log lines kept for the run record, with a last line counting
    /// those that were not kept.
    pub fn recorded_logs(&self) -> Vec<String> {
        let mut logs = self.logs.lock().map(|l| l.clone()).unwrap_or_default();
        let dropped = self
            .log_count
            .load(Ordering::SeqCst)
            .saturating_sub(logs.len());
        if dropped > 0 {
            logs.push(format!(
                "note: {dropped} more log lines were not kept (the run record keeps {MAX_RECORDED_LOG_LINES} per kernel)"
            ));
        }
        logs
    }

    fn file_call(&self, method: &str, header: &Value, body: &[u8]) -> Result<Value, String> {
        let rel = header
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{method}: no `path` given"))?;
        resolve_inside(self.workspace, rel)
            .map_err(|e| format!("kernel `{}`: {e}", self.kernel))?;
        self.rules.check(self.kernel, rel)?;
        // Below the held workspace folder: a link inside the workspace,
        // even one leading to another of its files, is refused by name.
        let result = crate::workspace::hold(self.workspace, true).and_then(|dir| {
            if method == "write_file" {
                dir.write_atomic(rel, body)
            } else {
                dir.append(rel, body)
            }
        });
        result.map_err(|e| format!("kernel `{}`: {e}", self.kernel))?;
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
        let n = self.log_count.fetch_add(1, Ordering::SeqCst);
        if n > MAX_PRINTED_LOG_LINES.max(MAX_RECORDED_LOG_LINES) {
            return;
        }
        let message = cut(message.to_string(), MAX_LOG_LINE_CHARS, "log line");
        if n < MAX_PRINTED_LOG_LINES {
            self.reporter.kernel_log(self.kernel, level, &message);
        } else if n == MAX_PRINTED_LOG_LINES {
            self.reporter.kernel_log(
                self.kernel,
                LogLevel::Warn,
                &format!("further log lines are not shown (a kernel run shows at most {MAX_PRINTED_LOG_LINES})"),
            );
        }
        if let Ok(mut logs) = self.logs.lock() {
            if logs.len() < MAX_RECORDED_LOG_LINES {
                logs.push(format!("{}: {message}", crate::progress::level_name(level)));
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
                let Some(llm) = self.llm.clone() else {
                    return Err(koas_kernel_api::NO_BACKEND.to_string());
                };
                let kernel = self.kernel.to_owned();
                self.unless_cancelled(move || llm.complete(&kernel, &request))?
            }
            "llm_complete_many" => {
                let requests: Vec<LlmRequest> =
                    serde_json::from_value(header.get("requests").cloned().unwrap_or(Value::Null))
                        .map_err(|e| format!("malformed LLM requests: {e}"))?;
                let Some(llm) = self.llm.clone() else {
                    return Err(koas_kernel_api::NO_BACKEND.to_string());
                };
                let kernel = self.kernel.to_owned();
                let answers =
                    self.unless_cancelled(move || llm.complete_many(&kernel, &requests))?;
                Ok(Value::Array(
                    answers
                        .into_iter()
                        .map(|answer| match answer {
                            Ok(v) => serde_json::json!({ "ok": v }),
                            Err(e) => serde_json::json!({ "error": e }),
                        })
                        .collect(),
                ))
            }
            "llm_submit" => self.llm_submit(header),
            "llm_next" => self.llm_next(header),
            other => Err(format!(
                "unknown host method {other:?} (this koas knows write_file, append_file, llm_complete, llm_complete_many, llm_submit, llm_next)"
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

    /// A model that answers after a long time.
    struct Slow(std::time::Duration);

    impl LlmHandler for Slow {
        fn complete(&self, _kernel: &str, _request: &LlmRequest) -> Result<Value, String> {
            std::thread::sleep(self.0);
            Ok(json!({"text": "late"}))
        }
    }

    #[test]
    fn a_cancelled_run_does_not_wait_for_the_model() {
        let ws = tempfile::tempdir().expect("tmp");
        let cancel = Arc::new(AtomicBool::new(false));
        let reporter = Reporter::quiet();
        let spec = koas_kernel_api::KernelSpec::new("k", "1.0.0");
        let rules = WriteRules::new([&spec], Vec::new());
        let slow: SharedLlm = Arc::new(Slow(std::time::Duration::from_millis(200)));
        let host = RunHost::new("k", ws.path(), &rules, &cancel, &reporter, Some(slow));
        let request = json!({"method": "llm_complete", "request": {"prompt": "p"}});
        // Not cancelled: the answer comes.
        let answer = host.call(&request, b"").expect("answer");
        assert_eq!(answer["text"], "late");
        // Cancelled while waiting: an error, and the call is not waited for
        // (the model here would take an hour).
        let forever: SharedLlm = Arc::new(Slow(std::time::Duration::from_secs(3600)));
        let host = RunHost::new("k", ws.path(), &rules, &cancel, &reporter, Some(forever));
        let flag = cancel.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            flag.store(true, Ordering::SeqCst);
        });
        let err = host.call(&request, b"").expect_err("cancelled");
        assert!(err.contains("cancelled"), "{err}");
        let many = json!({"method": "llm_complete_many", "requests": [{"prompt": "p"}]});
        let err = host.call(&many, b"").expect_err("cancelled before");
        assert!(err.contains("cancelled"), "{err}");
        setter.join().expect("setter");
    }

    /// A model that answers with the request's prose option.
    struct Echo;

    impl LlmHandler for Echo {
        fn complete(&self, _kernel: &str, request: &LlmRequest) -> Result<Value, String> {
            Ok(json!({"text": format!("{:?}", request.prose_until)}))
        }
    }

    #[test]
    fn a_request_s_prose_option_reaches_the_model_side() {
        // The kernel's request crosses the boundary as JSON: every option
        // it set must reach the service, or the host silently drops a
        // stop rule the kernel relies on.
        let ws = tempfile::tempdir().expect("tmp");
        let cancel = AtomicBool::new(false);
        let reporter = Reporter::quiet();
        let spec = koas_kernel_api::KernelSpec::new("k", "1.0.0");
        let rules = WriteRules::new([&spec], Vec::new());
        let host = RunHost::new(
            "k",
            ws.path(),
            &rules,
            &cancel,
            &reporter,
            Some(Arc::new(Echo)),
        );
        let request =
            serde_json::to_value(LlmRequest::new("r", "p").prose_until(320)).expect("json");
        let one = json!({"method": "llm_complete", "request": request});
        assert_eq!(host.call(&one, b"").expect("answer")["text"], "Some(320)");
        let many = json!({"method": "llm_complete_many", "requests": [request, {"prompt": "q"}]});
        let answers = host.call(&many, b"").expect("answers").to_string();
        assert!(
            answers.contains("Some(320)") && answers.contains("None"),
            "{answers}"
        );
    }

    /// A model whose answer to prompt `"N"` takes N × 10 ms.
    struct Timed;

    impl LlmHandler for Timed {
        fn complete(&self, _kernel: &str, request: &LlmRequest) -> Result<Value, String> {
            let n: u64 = request.prompt.parse().map_err(|_| "not a number")?;
            std::thread::sleep(std::time::Duration::from_millis(n * 10));
            Ok(json!({"text": request.prompt}))
        }
    }

    #[test]
    fn streamed_requests_are_answered_as_they_complete() {
        let ws = tempfile::tempdir().expect("tmp");
        let cancel = AtomicBool::new(false);
        let reporter = Reporter::quiet();
        let spec = koas_kernel_api::KernelSpec::new("k", "1.0.0");
        let rules = WriteRules::new([&spec], Vec::new());
        let host = RunHost::new(
            "k",
            ws.path(),
            &rules,
            &cancel,
            &reporter,
            Some(Arc::new(Timed)),
        );
        let submit = |prompt: &str, stream: u64| {
            host.call(
                &json!({"method": "llm_submit", "stream": stream, "request": {"prompt": prompt}}),
                b"",
            )
            .expect("submitted")["ticket"]
                .as_u64()
                .expect("a ticket")
        };
        let slow = submit("30", 1);
        let fast = submit("1", 1);
        let bad = submit("x", 1);
        let other = submit("2", 2);
        let next = |stream: u64| host.call(&json!({"method": "llm_next", "stream": stream}), b"");
        // Stream 1's answers in the order they complete, each once.
        let mut got = Vec::new();
        for _ in 0..3 {
            let a = next(1).expect("an answer");
            got.push((a["ticket"].as_u64().expect("ticket"), a));
        }
        let order: Vec<u64> = got.iter().map(|(t, _)| *t).collect();
        assert_eq!(order[2], slow, "{got:?}");
        assert!(order[..2].contains(&fast) && order[..2].contains(&bad));
        assert_eq!(got[2].1["ok"]["text"], "30");
        let failed = got.iter().find(|(t, _)| *t == bad).expect("bad");
        assert_eq!(failed.1["error"], "not a number");
        // Nothing is left on stream 1; stream 2 kept its own answer.
        let err = next(1).expect_err("nothing out");
        assert!(
            err.contains("no request of this stream is outstanding"),
            "{err}"
        );
        assert_eq!(next(2).expect("answer")["ticket"].as_u64(), Some(other));
        // Cancelled: a wait ends at once with an error, and nothing more
        // is accepted.
        let forever = Arc::new(Slow(std::time::Duration::from_secs(3600)));
        let host = RunHost::new("k", ws.path(), &rules, &cancel, &reporter, Some(forever));
        host.call(
            &json!({"method": "llm_submit", "stream": 1, "request": {"prompt": "p"}}),
            b"",
        )
        .expect("submitted");
        cancel.store(true, Ordering::SeqCst);
        let err = host
            .call(&json!({"method": "llm_next", "stream": 1}), b"")
            .expect_err("cancelled");
        assert!(err.contains("cancelled"), "{err}");
        let err = host
            .call(
                &json!({"method": "llm_submit", "stream": 1, "request": {"prompt": "p"}}),
                b"",
            )
            .expect_err("cancelled");
        assert!(err.contains("cancelled"), "{err}");
    }

    #[test]
    fn file_calls_stay_inside_the_workspace() {
        let ws = tempfile::tempdir().expect("tmp");
        let cancel = AtomicBool::new(false);
        let reporter = Reporter::quiet();
        let spec = koas_kernel_api::KernelSpec::new("k", "1.0.0").writes("a/");
        let rules = WriteRules::new([&spec], Vec::new());
        let host = RunHost::new("k", ws.path(), &rules, &cancel, &reporter, None);
        host.call(&json!({"method": "write_file", "path": "a/b.txt"}), b"x")
            .expect("inside");
        host.call(&json!({"method": "append_file", "path": "a/b.txt"}), b"y")
            .expect("append");
        assert_eq!(
            std::fs::read(ws.path().join("a/b.txt")).expect("read"),
            b"xy"
        );
        host.call(
            &json!({"method": "append_file", "path": "scratch/k/s.txt"}),
            b"z",
        )
        .expect("its scratch folder");
        for refused in [".lock", "run.json", "b/c.txt"] {
            let err = host
                .call(&json!({"method": "append_file", "path": refused}), b"x")
                .expect_err(refused);
            assert!(err.contains("kernel `k` may not write"), "{err}");
            assert!(!ws.path().join(refused).exists());
        }
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
        let err = host
            .call(
                &json!({"method": "llm_submit", "stream": 1, "request": {"prompt": "p"}}),
                b"",
            )
            .expect_err("no backend");
        assert!(err.contains("no LLM backend configured"));
        assert!(host.call(&json!({"method": "nope"}), b"").is_err());
        host.log(LogLevel::Warn, "careful");
        assert_eq!(host.logs.lock().expect("lock")[0], "warn: careful");
        for _ in 0..MAX_RECORDED_LOG_LINES + 5 {
            host.log(LogLevel::Debug, &"d".repeat(MAX_LOG_LINE_CHARS * 2));
        }
        let logs = host.recorded_logs();
        assert_eq!(logs.len(), MAX_RECORDED_LOG_LINES + 1);
        assert!(logs[1].len() < MAX_LOG_LINE_CHARS + 100, "cut");
        assert!(
            logs[MAX_RECORDED_LOG_LINES].contains("6 more log lines"),
            "{logs:?}"
        );
    }
}
