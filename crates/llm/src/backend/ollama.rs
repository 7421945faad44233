//! Ollama's native chat API: `POST /api/chat` (NDJSON stream), `GET /api/tags`.

use super::http::{server_error, HttpClient, LineReader};
use super::stop::StopWatch;
use super::{end_stream, protocol, whole_reply, Backend, BackendCall, BackendReply};
use crate::config::BackendKind;
use crate::error::TransportError;
use serde_json::{json, Value};

/// The Ollama native-chat backend; sends the configured context window
/// as `num_ctx`.
pub struct OllamaBackend {
    http: HttpClient,
    context_window: u32,
}

impl OllamaBackend {
    pub(crate) fn new(http: HttpClient, context_window: u32) -> Self {
        OllamaBackend {
            http,
            context_window,
        }
    }

    fn body(&self, call: &BackendCall) -> Value {
        let mut messages = Vec::new();
        if let Some(system) = &call.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": call.prompt}));
        let mut body = json!({
            "model": call.model,
            "messages": messages,
            "stream": call.stream,
            "options": {
                "temperature": call.temperature,
                "num_predict": call.max_tokens,
                "num_ctx": self.context_window,
            },
        });
        // Streamed answers are cut by the host at the marker (which the
        // text keeps); a whole answer can only be stopped by the server.
        if !call.stream && !call.stop_markers.is_empty() {
            body["options"]["stop"] = json!(call.stop_markers);
        }
        body
    }
}

/// Reads usage and metadata from a final (`done: true`) object.
fn finish(reply: &mut BackendReply, obj: &Value) {
    reply.prompt_tokens = obj.get("prompt_eval_count").and_then(Value::as_u64);
    reply.completion_tokens = obj.get("eval_count").and_then(Value::as_u64);
    reply.finish_reason = obj
        .get("done_reason")
        .and_then(Value::as_str)
        .map(str::to_string);
}

fn read_stream(mut lines: LineReader, call: &BackendCall) -> Result<BackendReply, TransportError> {
    let mut watch = StopWatch::new(&call.stop_markers, &call.complete_after, call.prose_until);
    let mut reply = BackendReply::default();
    let mut done = false;
    loop {
        let line = match lines.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => return Err(e.with_partial(watch.text())),
        };
        if line.trim().is_empty() {
            continue;
        }
        let obj: Value = serde_json::from_str(&line).map_err(|e| {
            protocol(format!("malformed NDJSON line from /api/chat: {e}"))
                .with_partial(watch.text())
        })?;
        if let Some(err) = server_error(&obj) {
            return Err(err.with_partial(watch.text()));
        }
        if reply.model.is_none() {
            reply.model = obj.get("model").and_then(Value::as_str).map(str::to_string);
        }
        let piece = obj
            .pointer("/message/content")
            .and_then(Value::as_str)
            .unwrap_or("");
        if watch.push(piece) {
            break;
        }
        if obj.get("done").and_then(Value::as_bool) == Some(true) {
            finish(&mut reply, &obj);
            done = true;
            break;
        }
    }
    let ended = done;
    end_stream(
        reply,
        watch,
        ended,
        "the /api/chat stream ended before `done: true`",
    )
}

impl Backend for OllamaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Ollama
    }

    fn endpoint(&self) -> &str {
        self.http.endpoint()
    }

    fn complete(&self, call: &BackendCall) -> Result<BackendReply, TransportError> {
        let url = self.http.url("/api/chat");
        let mut lines = self.http.post(
            &url,
            &[],
            &self.body(call),
            call.deadline,
            call.cancel.as_ref(),
        )?;
        // Text that is not JSON lines (an HTML page, a plain-text error)
        // is read whole, so the error can quote it.
        if call.stream && lines.starts_like_json_lines()? {
            return read_stream(lines, call);
        }
        let obj = lines.read_json(&url)?;
        let content = obj
            .pointer("/message/content")
            .and_then(Value::as_str)
            .ok_or_else(|| protocol(format!("{url} answer has no message.content")))?;
        let mut reply = whole_reply(content, &obj, call);
        finish(&mut reply, &obj);
        Ok(reply)
    }

    fn list_models(&self) -> Result<Vec<String>, TransportError> {
        let url = self.http.url("/api/tags");
        let doc = self.http.get_json(&url, &[])?;
        let models = doc
            .get("models")
            .and_then(Value::as_array)
            .ok_or_else(|| protocol(format!("{url} answer has no `models` list")))?;
        Ok(models
            .iter()
            .filter_map(|m| m.get("name").or_else(|| m.get("model")))
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect())
    }
}
