//! Anthropic's Messages API: `POST /v1/messages` (SSE events
//! `message_start`, `content_block_delta`, `message_delta`,
//! `message_stop`), `GET /v1/models`. Non-local: refused under strict
//! sovereignty.

use super::http::{server_error, HttpClient, LineReader};
use super::sse::next_event;
use super::stop::StopWatch;
use super::{end_stream, first_count, protocol, whole_reply, Backend, BackendCall, BackendReply};
use crate::config::BackendKind;
use crate::error::TransportError;
use crate::secret::ApiKey;
use serde_json::{json, Value};

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The Anthropic Messages backend; always holds an API key (building it
/// without one fails).
pub struct AnthropicBackend {
    http: HttpClient,
    key: ApiKey,
}

impl AnthropicBackend {
    pub(crate) fn new(http: HttpClient, key: ApiKey) -> Self {
        AnthropicBackend { http, key }
    }

    fn headers(&self) -> [(&str, &str); 2] {
        [
            ("x-api-key", self.key.expose()),
            ("anthropic-version", ANTHROPIC_VERSION),
        ]
    }

    fn body(call: &BackendCall) -> Value {
        let mut body = json!({
            "model": call.model,
            "max_tokens": call.max_tokens,
            "temperature": call.temperature,
            "messages": [{"role": "user", "content": call.prompt}],
            "stream": call.stream,
        });
        if let Some(system) = &call.system {
            body["system"] = json!(system);
        }
        if !call.stream && !call.stop_markers.is_empty() {
            body["stop_sequences"] = json!(call.stop_markers);
        }
        body
    }
}

/// The prompt's tokens and those read from the prompt cache, from a
/// `usage` object. Anthropic counts a prompt in three parts:
/// `input_tokens` (read anew), `cache_creation_input_tokens` (written to
/// the cache) and `cache_read_input_tokens` (reused from it); the prompt
/// is their sum. A part that is not a count is left out (the reuse then
/// is unknown), as is a sum that overflows.
fn prompt_usage(usage: Option<&Value>) -> (Option<u64>, Option<u64>) {
    let Some(usage) = usage else {
        return (None, None);
    };
    let Some(input) = first_count(usage, &["/input_tokens"]) else {
        return (None, None);
    };
    let created = first_count(usage, &["/cache_creation_input_tokens"]).unwrap_or(0);
    let read = first_count(usage, &["/cache_read_input_tokens"]);
    match input
        .checked_add(created)
        .and_then(|n| n.checked_add(read.unwrap_or(0)))
    {
        Some(prompt) => (Some(prompt), read),
        None => (Some(input), None),
    }
}

/// An `error` event: overloaded, rate-limit and API errors are retryable.
fn stream_error(obj: &Value) -> TransportError {
    server_error(obj).unwrap_or_else(|| protocol(format!("the server sent an error event: {obj}")))
}

fn read_stream(mut lines: LineReader, call: &BackendCall) -> Result<BackendReply, TransportError> {
    let mut watch = StopWatch::new(&call.stop_markers, &call.complete_after, call.prose_until);
    let mut reply = BackendReply::default();
    let mut finished = false;
    loop {
        let event = match next_event(&mut lines) {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(e) => return Err(e.with_partial(watch.text())),
        };
        let obj: Value = serde_json::from_str(&event.data).map_err(|e| {
            protocol(format!("malformed SSE data from /v1/messages: {e}"))
                .with_partial(watch.text())
        })?;
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or("");
        match kind {
            "message_start" => {
                let message = obj.get("message");
                reply.model = message
                    .and_then(|m| m.get("model"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                (reply.prompt_tokens, reply.reused_prompt_tokens) =
                    prompt_usage(message.and_then(|m| m.get("usage")));
                reply.completion_tokens = message
                    .and_then(|m| m.pointer("/usage/output_tokens"))
                    .and_then(Value::as_u64);
            }
            "content_block_delta" => {
                let piece = obj
                    .pointer("/delta/text")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if watch.push(piece) {
                    break;
                }
            }
            "message_delta" => {
                if let Some(n) = obj.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    reply.completion_tokens = Some(n);
                }
                if let Some(r) = obj.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    reply.finish_reason = Some(r.to_string());
                }
            }
            "message_stop" => {
                finished = true;
                break;
            }
            "error" => return Err(stream_error(&obj).with_partial(watch.text())),
            _ => {}
        }
    }
    let ended = finished;
    end_stream(
        reply,
        watch,
        ended,
        "the /v1/messages stream ended before message_stop",
    )
}

impl Backend for AnthropicBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Anthropic
    }

    fn endpoint(&self) -> &str {
        self.http.endpoint()
    }

    fn complete(&self, call: &BackendCall) -> Result<BackendReply, TransportError> {
        let url = self.http.url("/v1/messages");
        let mut lines = self.http.post(
            &url,
            &self.headers(),
            &Self::body(call),
            call.deadline,
            call.cancel.as_ref(),
        )?;
        // A server may answer a streamed request with one JSON document
        // (an error, or the whole answer): read it as such.
        if call.stream && lines.starts_like_sse()? {
            return read_stream(lines, call);
        }
        let obj = lines.read_json(&url)?;
        let blocks = obj
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| protocol(format!("{url} answer has no content list")))?;
        let content: String = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        let (prompt_tokens, reused_prompt_tokens) = prompt_usage(obj.get("usage"));
        Ok(BackendReply {
            prompt_tokens,
            completion_tokens: obj.pointer("/usage/output_tokens").and_then(Value::as_u64),
            finish_reason: obj
                .get("stop_reason")
                .and_then(Value::as_str)
                .map(str::to_string),
            reused_prompt_tokens,
            ..whole_reply(&content, &obj, call)
        })
    }

    fn list_models(&self) -> Result<Vec<String>, TransportError> {
        let url = self.http.url("/v1/models");
        let doc = self.http.get_json(&url, &self.headers())?;
        let data = doc
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| protocol(format!("{url} answer has no `data` list")))?;
        Ok(data
            .iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str))
            .map(str::to_string)
            .collect())
    }
}
