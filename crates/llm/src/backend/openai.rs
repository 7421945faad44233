//! OpenAI-compatible chat completions: `POST /v1/chat/completions` (SSE
//! `data:` lines ending with `[DONE]`), `GET /v1/models`. Spoken by
//! llama.cpp's server, vLLM, LM Studio and Ollama's `/v1`.

use super::http::{server_error, HttpClient, LineReader};
use super::sse::next_event;
use super::stop::StopWatch;
use super::{end_stream, first_count, protocol, whole_reply, Backend, BackendCall, BackendReply};
use crate::config::BackendKind;
use crate::error::TransportError;
use crate::secret::ApiKey;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};

/// The OpenAI-compatible backend; the API key is optional (local servers
/// usually need none).
pub struct OpenAiBackend {
    http: HttpClient,
    key: Option<ApiKey>,
    /// Ask for llama.cpp's timings in every streamed event; turned off
    /// for good by a server that refuses the field.
    timings_per_token: AtomicBool,
}

impl OpenAiBackend {
    pub(crate) fn new(http: HttpClient, key: Option<ApiKey>) -> Self {
        OpenAiBackend {
            http,
            key,
            timings_per_token: AtomicBool::new(false),
        }
    }

    /// Asks, with each streamed request, for llama.cpp's `timings` in
    /// every event (`timings_per_token`): an answer the host cuts short
    /// never reads the last event, the only one that otherwise says what
    /// the server reused of the prompt. Only for local servers, which
    /// ignore a field they do not know; OpenAI's own API refuses one.
    pub(crate) fn with_timings_per_token(self, on: bool) -> Self {
        self.timings_per_token.store(on, Ordering::Relaxed);
        self
    }

    /// `/v1/<path>`, accepting an endpoint that already ends in `/v1`.
    fn url(&self, path: &str) -> String {
        if self.http.endpoint().ends_with("/v1") {
            self.http.url(path)
        } else {
            self.http.url(&format!("/v1{path}"))
        }
    }

    fn auth(&self) -> Option<String> {
        self.key.as_ref().map(|k| format!("Bearer {}", k.expose()))
    }

    fn body(&self, call: &BackendCall, timings_per_token: bool) -> Value {
        let mut messages = Vec::new();
        if let Some(system) = &call.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": call.prompt}));
        let mut body = json!({
            "model": call.model,
            "messages": messages,
            "temperature": call.temperature,
            "max_tokens": call.max_tokens,
            "stream": call.stream,
        });
        if call.stream {
            body["stream_options"] = json!({"include_usage": true});
            if timings_per_token {
                body["timings_per_token"] = json!(true);
            }
        } else if !call.stop_markers.is_empty() {
            // Streamed answers are cut by the host at the marker (which the
            // text keeps); a whole answer can only be stopped by the server.
            body["stop"] = json!(call.stop_markers);
        }
        body
    }
}

fn read_usage(reply: &mut BackendReply, obj: &Value) {
    if let Some(usage) = obj.get("usage").filter(|u| u.is_object()) {
        reply.prompt_tokens = usage.get("prompt_tokens").and_then(Value::as_u64);
        reply.completion_tokens = usage.get("completion_tokens").and_then(Value::as_u64);
    }
    // What the server reused of the prompt: OpenAI-style servers (vLLM
    // with prefix caching, OpenAI, newer llama.cpp) say it in `usage`;
    // llama.cpp's server in `timings` (the non-streamed answer, the last
    // streamed event). The service checks it against the prompt's tokens.
    let reused = first_count(
        obj,
        &[
            "/usage/prompt_tokens_details/cached_tokens",
            "/timings/cache_n",
        ],
    );
    if reused.is_some() {
        reply.reused_prompt_tokens = reused;
    }
    // Per-token timings (an event before the last, when the host cuts the
    // answer) count the prompt in two parts, reused and read anew, and
    // the tokens generated so far; `usage`, when it comes, is the total.
    if !obj.get("usage").is_some_and(Value::is_object) {
        if let (Some(cached), Some(read)) = (
            first_count(obj, &["/timings/cache_n"]),
            first_count(obj, &["/timings/prompt_n"]),
        ) {
            reply.prompt_tokens = cached.checked_add(read);
        }
        if let Some(n) = first_count(obj, &["/timings/predicted_n"]) {
            reply.completion_tokens = Some(n);
        }
    }
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
        let data = event.data.trim();
        if data == "[DONE]" {
            finished = true;
            break;
        }
        let obj: Value = serde_json::from_str(data).map_err(|e| {
            protocol(format!("malformed SSE data from chat/completions: {e}"))
                .with_partial(watch.text())
        })?;
        if let Some(err) = server_error(&obj) {
            return Err(err.with_partial(watch.text()));
        }
        if reply.model.is_none() {
            reply.model = obj.get("model").and_then(Value::as_str).map(str::to_string);
        }
        read_usage(&mut reply, &obj);
        let choice = obj.pointer("/choices/0");
        if let Some(reason) = choice
            .and_then(|c| c.get("finish_reason"))
            .and_then(Value::as_str)
        {
            reply.finish_reason = Some(reason.to_string());
        }
        let piece = choice
            .and_then(|c| c.pointer("/delta/content"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if watch.push(piece) {
            break;
        }
    }
    let ended = finished || reply.finish_reason.is_some();
    end_stream(
        reply,
        watch,
        ended,
        "the chat/completions stream ended before [DONE]",
    )
}

impl Backend for OpenAiBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Openai
    }

    fn endpoint(&self) -> &str {
        self.http.endpoint()
    }

    fn complete(&self, call: &BackendCall) -> Result<BackendReply, TransportError> {
        let url = self.url("/chat/completions");
        let auth = self.auth();
        let headers: Vec<(&str, &str)> = auth
            .as_deref()
            .map(|a| vec![("authorization", a)])
            .unwrap_or_default();
        let per_token = call.stream && self.timings_per_token.load(Ordering::Relaxed);
        let posted = self.http.post(
            &url,
            &headers,
            &self.body(call, per_token),
            call.deadline,
            call.cancel.as_ref(),
        );
        let mut lines = match posted {
            // A server that refuses the field (an older vLLM forbids
            // fields it does not know) is asked again without it, and
            // never asked for it again.
            Err(e)
                if per_token
                    && matches!(e.status, Some(400 | 422))
                    && e.message.contains("timings_per_token") =>
            {
                self.timings_per_token.store(false, Ordering::Relaxed);
                self.http.post(
                    &url,
                    &headers,
                    &self.body(call, false),
                    call.deadline,
                    call.cancel.as_ref(),
                )?
            }
            other => other?,
        };
        // A server may answer a streamed request with one JSON document
        // (an error, or the whole answer): read it as such.
        if call.stream && lines.starts_like_sse()? {
            return read_stream(lines, call);
        }
        let obj = lines.read_json(&url)?;
        let content = obj
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .ok_or_else(|| protocol(format!("{url} answer has no choices[0].message.content")))?;
        let mut reply = BackendReply {
            finish_reason: obj
                .pointer("/choices/0/finish_reason")
                .and_then(Value::as_str)
                .map(str::to_string),
            ..whole_reply(content, &obj, call)
        };
        read_usage(&mut reply, &obj);
        Ok(reply)
    }

    fn list_models(&self) -> Result<Vec<String>, TransportError> {
        let url = self.url("/models");
        let auth = self.auth();
        let headers: Vec<(&str, &str)> = auth
            .as_deref()
            .map(|a| vec![("authorization", a)])
            .unwrap_or_default();
        let doc = self.http.get_json(&url, &headers)?;
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
