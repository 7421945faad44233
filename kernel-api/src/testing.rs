//! Run a kernel in-process, without building or loading a plugin.
//!
//! [`TestHarness`] resolves the config exactly as the host does, sends the
//! request through the same JSON encoding and panic catching as the plugin
//! glue, and records what the kernel logs and writes:
//!
//! ```
//! # use koas_kernel_api::prelude::*;
//! # struct Echo;
//! # impl Kernel for Echo {
//! #     fn spec(&self) -> KernelSpec { KernelSpec::new("echo", "1.0.0").input("doc").output("out") }
//! #     fn run(&self, ctx: &Context, _: &KernelConfig, i: &Inputs) -> KernelResult {
//! #         ctx.write_file("notes/echo.txt", b"hi")?;
//! #         Ok(KernelOutput::new().artifact("out", i.source_text("doc")?))
//! #     }
//! # }
//! use koas_kernel_api::testing::TestHarness;
//! let mut h = TestHarness::new().source_text("doc", "text");
//! let out = h.run(&Echo).expect("runs");
//! assert_eq!(out.value("out"), "text");
//! assert_eq!(h.file("notes/echo.txt"), Some(b"hi".to_vec()));
//! ```

use crate::abi::run_kernel;
use crate::context::{Host, LogLevel};
use crate::protocol::{RunRequest, RunResponse, WireRunRequest};
use crate::{Kernel, KernelError, KernelOutput, LlmRequest};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

type LlmFn = dyn Fn(&LlmRequest) -> Result<String, String> + Send + Sync;

/// An in-memory host for running one kernel in a test.
pub struct TestHarness {
    config: Value,
    inputs: BTreeMap<String, Value>,
    state: Arc<HarnessHost>,
}

#[derive(Default)]
struct HarnessHost {
    logs: Mutex<Vec<(LogLevel, String)>>,
    progress: Mutex<Vec<(u64, u64)>>,
    files: Mutex<BTreeMap<String, Vec<u8>>>,
    cancelled: AtomicBool,
    llm: Mutex<Option<Arc<LlmFn>>>,
    /// Requests submitted to each stream and not yet answered.
    streams: Mutex<HashMap<u64, VecDeque<(u64, LlmRequest)>>>,
    next_ticket: AtomicU64,
    /// Streamed requests are answered last submitted first.
    last_first: AtomicBool,
}

impl Default for TestHarness {
    fn default() -> Self {
        Self::new()
    }
}

impl TestHarness {
    /// A harness with no inputs, the kernel's default config and no LLM.
    pub fn new() -> Self {
        TestHarness {
            config: json!({}),
            inputs: BTreeMap::new(),
            state: Arc::new(HarnessHost::default()),
        }
    }

    /// Sets config values to merge over the kernel's defaults.
    pub fn config(mut self, overrides: Value) -> Self {
        self.config = overrides;
        self
    }

    /// Provides input artifact `name` with `value` serialized to JSON (a
    /// value that fails to serialize becomes `null`).
    pub fn input(mut self, name: &str, value: impl serde::Serialize) -> Self {
        self.inputs.insert(
            name.to_string(),
            serde_json::to_value(value).unwrap_or(Value::Null),
        );
        self
    }

    /// Provides a source-file artifact holding `text`, as the host would for
    /// a UTF-8 file named `<name>.md`.
    pub fn source_text(self, name: &str, text: &str) -> Self {
        let path = format!("{name}.md");
        self.source_bytes(name, &path, text.as_bytes())
    }

    /// Provides a source-file artifact from raw bytes, as the host would
    /// for the file at `path` (invalid UTF-8 included).
    pub fn source_bytes(self, name: &str, path: &str, bytes: &[u8]) -> Self {
        let file = crate::SourceFile::from_bytes(path, bytes);
        self.input(name, file)
    }

    /// Provides prompt template `name` with `text`, as a host that read it
    /// from its prompts folder.
    pub fn prompt(mut self, name: &str, text: &str) -> Self {
        let template = crate::PromptTemplate {
            name: name.to_string(),
            text: text.to_string(),
            hash: crate::hash::sha256(text),
            source: "test harness".to_string(),
        };
        let prompts = self
            .inputs
            .entry(crate::PROMPTS_INPUT.to_string())
            .or_insert_with(|| json!({}));
        if let Some(map) = prompts.as_object_mut() {
            map.insert(
                name.to_string(),
                serde_json::to_value(template).unwrap_or(Value::Null),
            );
        }
        self
    }

    /// Provides the kernel's own output `artifact` of a previous run, as a
    /// host does for an incremental kernel.
    pub fn previous(mut self, artifact: &str, value: impl serde::Serialize) -> Self {
        let previous = self
            .inputs
            .entry(crate::PREVIOUS_INPUT.to_string())
            .or_insert_with(|| json!({}));
        if let Some(map) = previous.as_object_mut() {
            map.insert(
                artifact.to_string(),
                serde_json::to_value(value).unwrap_or(Value::Null),
            );
        }
        self
    }

    /// Makes [`crate::Context::llm_complete`] answer with `f`'s text.
    ///
    /// Like a host with a model, the harness then also hands the kernel a
    /// model identity under [`crate::LLM_INPUT`] (unless the test provides
    /// its own with [`TestHarness::input`]): a host hands it exactly when
    /// a model is configured, so kernels may skip their work without it.
    pub fn llm(
        mut self,
        f: impl Fn(&LlmRequest) -> Result<String, String> + Send + Sync + 'static,
    ) -> Self {
        if let Ok(mut slot) = self.state.llm.lock() {
            *slot = Some(Arc::new(f));
        }
        self.inputs
            .entry(crate::LLM_INPUT.to_string())
            .or_insert_with(|| {
                json!({
                    "backend": "test-harness",
                    "models": { "default": "test-harness" },
                })
            });
        self
    }

    /// Answers streamed requests ([`crate::Context::llm_stream`]) last
    /// submitted first, the opposite of the order they were sent in: a
    /// kernel whose result depends on the order answers complete shows it.
    pub fn llm_last_first(self) -> Self {
        self.state.last_first.store(true, Ordering::SeqCst);
        self
    }

    /// Makes [`crate::Context::is_cancelled`] answer `true` from the start,
    /// to test how the kernel stops.
    pub fn cancelled(self) -> Self {
        self.state.cancelled.store(true, Ordering::SeqCst);
        self
    }

    /// Resolves the config, runs the kernel and returns its output.
    pub fn run(&mut self, kernel: &dyn Kernel) -> Result<KernelOutput, KernelError> {
        let spec = kernel.spec();
        spec.validate().map_err(KernelError::failed)?;
        let config = crate::config::resolve(&spec.default_config, &self.config)
            .map_err(|e| KernelError::invalid_config(e.to_string()))?;
        // Round-trip through JSON bytes, as across the real boundary.
        let bytes = serde_json::to_vec(&RunRequest {
            config,
            inputs: self.inputs.clone(),
        })?;
        let request: WireRunRequest = serde_json::from_slice(&bytes)?;
        let host: &dyn Host = self.state.as_ref();
        let inputs = crate::Inputs::from_raw(request.inputs);
        match run_kernel(kernel, host, &spec.name, request.config, inputs) {
            RunResponse::Ok(out) => {
                // The host's check and message: a test passes here only if
                // the kernel passes there.
                spec.check_returned(out.artifacts.keys())
                    .and_then(|()| spec.check_findings(&out.artifacts))
                    .map_err(|e| KernelError::failed(format!("kernel `{}` {e}", spec.name)))?;
                Ok(out)
            }
            RunResponse::Error(e) => Err(e),
        }
    }

    /// The lines the kernel logged.
    pub fn logs(&self) -> Vec<(LogLevel, String)> {
        self.state
            .logs
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default()
    }

    /// The progress reports the kernel made.
    pub fn progress(&self) -> Vec<(u64, u64)> {
        self.state
            .progress
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default()
    }

    /// The content of a file the kernel wrote, if any.
    pub fn file(&self, path: &str) -> Option<Vec<u8>> {
        self.state.files.lock().ok()?.get(path).cloned()
    }

    /// The paths of every file the kernel wrote.
    pub fn files(&self) -> Vec<String> {
        self.state
            .files
            .lock()
            .map(|f| f.keys().cloned().collect())
            .unwrap_or_default()
    }
}

impl HarnessHost {
    /// The scripted answer to one request, as the host's LLM service
    /// shapes it.
    fn answer(&self, request: &LlmRequest) -> Result<Value, String> {
        let responder = self.llm.lock().ok().and_then(|l| l.clone());
        let Some(f) = responder else {
            return Err(crate::llm::NO_BACKEND.to_string());
        };
        let text = f(request)?;
        Ok(json!({
            "text": text,
            "model": "test-harness",
            "prompt_tokens": request.prompt.len() / 4,
            "completion_tokens": text.len() / 4,
            "tokens_estimated": true,
        }))
    }
}

impl Host for HarnessHost {
    fn log(&self, level: LogLevel, message: &str) {
        if let Ok(mut l) = self.logs.lock() {
            l.push((level, message.to_string()));
        }
    }

    fn progress(&self, done: u64, total: u64) {
        if let Ok(mut p) = self.progress.lock() {
            p.push((done, total));
        }
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    fn call(&self, header: &Value, body: &[u8]) -> Result<Value, String> {
        let method = header.get("method").and_then(Value::as_str).unwrap_or("");
        match method {
            "write_file" | "append_file" => {
                let path = header
                    .get("path")
                    .and_then(Value::as_str)
                    .ok_or("file call without a path")?;
                if !crate::spec::is_relative_inside(path) {
                    return Err(format!(
                        "{path:?} is not a relative path inside the workspace"
                    ));
                }
                let mut files = self.files.lock().map_err(|_| "poisoned".to_string())?;
                let entry = files.entry(path.to_string()).or_default();
                if method == "write_file" {
                    entry.clear();
                }
                entry.extend_from_slice(body);
                Ok(Value::Null)
            }
            "llm_complete" => {
                let request: LlmRequest =
                    serde_json::from_value(header.get("request").cloned().unwrap_or(Value::Null))
                        .map_err(|e| format!("malformed LLM request: {e}"))?;
                self.answer(&request)
            }
            "llm_complete_many" => {
                let requests: Vec<LlmRequest> =
                    serde_json::from_value(header.get("requests").cloned().unwrap_or(Value::Null))
                        .map_err(|e| format!("malformed LLM requests: {e}"))?;
                if self.llm.lock().ok().and_then(|l| l.clone()).is_none() {
                    return Err(crate::llm::NO_BACKEND.to_string());
                }
                Ok(Value::Array(
                    requests
                        .iter()
                        .map(|r| match self.answer(r) {
                            Ok(v) => json!({ "ok": v }),
                            Err(e) => json!({ "error": e }),
                        })
                        .collect(),
                ))
            }
            "llm_submit" => {
                let request: LlmRequest =
                    serde_json::from_value(header.get("request").cloned().unwrap_or(Value::Null))
                        .map_err(|e| format!("malformed LLM request: {e}"))?;
                let stream = header.get("stream").and_then(Value::as_u64).unwrap_or(0);
                let ticket = self.next_ticket.fetch_add(1, Ordering::SeqCst);
                let mut streams = self.streams.lock().map_err(|_| "poisoned".to_string())?;
                streams
                    .entry(stream)
                    .or_default()
                    .push_back((ticket, request));
                Ok(json!({ "ticket": ticket }))
            }
            "llm_next" => {
                let stream = header.get("stream").and_then(Value::as_u64).unwrap_or(0);
                let next = {
                    let mut streams = self.streams.lock().map_err(|_| "poisoned".to_string())?;
                    let queue = streams.entry(stream).or_default();
                    if self.last_first.load(Ordering::SeqCst) {
                        queue.pop_back()
                    } else {
                        queue.pop_front()
                    }
                };
                let (ticket, request) = next.ok_or("llm_next: no request is outstanding")?;
                Ok(match self.answer(&request) {
                    Ok(v) => json!({ "ticket": ticket, "ok": v }),
                    Err(e) => json!({ "ticket": ticket, "error": e }),
                })
            }
            other => Err(format!("unknown host method {other:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prelude::*;

    struct Batch;

    impl crate::Kernel for Batch {
        fn spec(&self) -> KernelSpec {
            KernelSpec::new("batch", "1.0.0")
                .output("answers")
                .uses_llm()
        }
        fn run(&self, ctx: &Context, _config: &KernelConfig, _inputs: &Inputs) -> KernelResult {
            let requests: Vec<LlmRequest> = ["a", "fail", "c"]
                .iter()
                .map(|p| LlmRequest::new("edit", *p))
                .collect();
            let answers: Vec<String> = ctx
                .llm_complete_many(&requests)
                .into_iter()
                .map(|a| {
                    a.map(|r| r.text)
                        .unwrap_or_else(|e| format!("error: {}", e.message))
                })
                .collect();
            Ok(KernelOutput::new().artifact("answers", answers))
        }
    }

    /// Streams "a", "fail", "c"; the answer to "a" gets a follow-up "a2".
    struct Streamer;

    impl crate::Kernel for Streamer {
        fn spec(&self) -> KernelSpec {
            KernelSpec::new("streamer", "1.0.0")
                .output("answers")
                .output("order")
                .uses_llm()
        }
        fn run(&self, ctx: &Context, _config: &KernelConfig, _inputs: &Inputs) -> KernelResult {
            let mut stream = ctx.llm_stream();
            let mut asked = std::collections::BTreeMap::new();
            for p in ["a", "fail", "c"] {
                asked.insert(stream.submit(&LlmRequest::new("edit", p)), p.to_owned());
            }
            let mut answers = std::collections::BTreeMap::new();
            let mut order = Vec::new();
            while let Some((ticket, answer)) = stream.next() {
                let prompt = asked.get(&ticket).cloned().unwrap_or_default();
                order.push(prompt.clone());
                if prompt == "a" {
                    asked.insert(stream.submit(&LlmRequest::new("edit", "a2")), "a2".into());
                }
                let text = answer
                    .map(|r| r.text)
                    .unwrap_or_else(|e| format!("error: {}", e.message));
                answers.insert(prompt, text);
            }
            assert_eq!(stream.outstanding(), 0);
            Ok(KernelOutput::new()
                .artifact("answers", answers)
                .artifact("order", order))
        }
    }

    #[test]
    fn a_stream_answers_every_request_once_with_follow_ups() {
        let upper = |r: &LlmRequest| {
            if r.prompt == "fail" {
                Err("the model refused".to_string())
            } else {
                Ok(r.prompt.to_uppercase())
            }
        };
        let expected = json!({"a": "A", "a2": "A2", "c": "C", "fail": "error: the model refused"});
        let out = TestHarness::new().llm(upper).run(&Streamer).expect("runs");
        assert_eq!(out.value("answers"), expected);
        assert_eq!(out.value("order"), json!(["a", "fail", "c", "a2"]));
        let out = TestHarness::new()
            .llm(upper)
            .llm_last_first()
            .run(&Streamer)
            .expect("runs");
        assert_eq!(out.value("answers"), expected);
        assert_eq!(out.value("order"), json!(["c", "fail", "a", "a2"]));
        // Without a model every request is answered with the host's error.
        let out = TestHarness::new().run(&Streamer).expect("runs");
        let answers = out.value("answers");
        assert!(
            answers["c"]
                .as_str()
                .is_some_and(|a| a.contains("no LLM backend")),
            "{answers}"
        );
    }

    struct Sloppy(&'static str);

    impl crate::Kernel for Sloppy {
        fn spec(&self) -> KernelSpec {
            KernelSpec::new("sloppy", "1.0.0").output("count")
        }
        fn run(&self, _ctx: &Context, _config: &KernelConfig, _inputs: &Inputs) -> KernelResult {
            Ok(KernelOutput::new().artifact(self.0, 1))
        }
    }

    #[test]
    fn an_undeclared_output_is_refused_as_the_host_refuses_it() {
        let err = TestHarness::new()
            .run(&Sloppy("conut"))
            .expect_err("undeclared output");
        assert_eq!(
            err.message,
            "kernel `sloppy` returned artifact `conut`, which its spec does not declare (declared: count) (did you mean `count`?)"
        );
        assert!(TestHarness::new().run(&Sloppy("count")).is_ok());
    }

    #[test]
    fn batched_llm_calls_answer_in_order_and_fail_one_by_one() {
        let out = TestHarness::new()
            .llm(|r| {
                if r.prompt == "fail" {
                    Err("the model refused".into())
                } else {
                    Ok(r.prompt.to_uppercase())
                }
            })
            .run(&Batch)
            .expect("runs");
        assert_eq!(
            out.value("answers"),
            json!(["A", "error: the model refused", "C"])
        );
        let no_llm = TestHarness::new().run(&Batch).expect("runs");
        assert!(no_llm.value("answers")[0]
            .as_str()
            .is_some_and(|a| a.contains("no LLM backend")));
    }
}
