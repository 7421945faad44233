//! A small HTTP/1.1 server on 127.0.0.1 for wire-level tests and the
//! benchmark, plus the exact Ollama, OpenAI and Anthropic wire formats.
//!
//! Each connection is served on its own thread: the request is read and
//! recorded, then the next scripted [`Reply`] (or the default one) is
//! played. Replies close the connection (`Connection: close`), so a body
//! without `Content-Length` ends at EOF, as streamed bodies do.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the server does with one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A complete response after `delay`.
    Full {
        status: u16,
        content_type: &'static str,
        body: String,
        delay: Duration,
    },
    /// Status and headers, then each piece after its delay (streaming).
    Pieces {
        status: u16,
        content_type: &'static str,
        pieces: Vec<(Duration, String)>,
    },
    /// Reads the request, then says nothing for `Duration` and closes.
    Hang(Duration),
    /// A redirect (`status` 301, 302, 307, 308) to `location`.
    Redirect { status: u16, location: String },
    /// A 200 stream that never ends: `piece` every `gap` until the client
    /// hangs up (or ten minutes pass).
    Endless {
        content_type: &'static str,
        piece: String,
        gap: Duration,
    },
}

impl Reply {
    pub fn json(body: Value) -> Reply {
        Reply::Full {
            status: 200,
            content_type: "application/json",
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Full {
            status,
            content_type: "application/json",
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    pub fn raw(content_type: &'static str, body: &str) -> Reply {
        Reply::Full {
            status: 200,
            content_type,
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::Redirect {
            status,
            location: location.to_string(),
        }
    }

    /// An HTML page with a 200 status.
    pub fn html(title: &str) -> Reply {
        Reply::raw(
            "text/html; charset=utf-8",
            &format!("<!DOCTYPE html>\n<html><head><title>{title}</title></head><body><h1>{title}</h1></body></html>\n"),
        )
    }

    pub fn delayed(self, by: Duration) -> Reply {
        match self {
            Reply::Full {
                status,
                content_type,
                body,
                ..
            } => Reply::Full {
                status,
                content_type,
                body,
                delay: by,
            },
            other => other,
        }
    }

    /// A stream whose pieces arrive `gap` apart.
    pub fn stream(content_type: &'static str, pieces: Vec<String>, gap: Duration) -> Reply {
        Reply::Pieces {
            status: 200,
            content_type,
            pieces: pieces.into_iter().map(|p| (gap, p)).collect(),
        }
    }
}

/// A request as the server received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    script: Mutex<VecDeque<Reply>>,
    default: Mutex<Option<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    in_flight: AtomicUsize,
    peak_in_flight: AtomicUsize,
    stop: AtomicBool,
}

/// The server. Stops when dropped.
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<State>,
    accept: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Starts a server playing `script` in order, then `default` (a 500 if
    /// none).
    pub fn start(script: Vec<Reply>, default: Option<Reply>) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(State::default());
        *state.script.lock().unwrap() = script.into();
        *state.default.lock().unwrap() = default;
        let s = state.clone();
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let s = s.clone();
                std::thread::spawn(move || serve(stream, &s));
            }
        });
        MockServer {
            addr,
            state,
            accept: Some(accept),
        }
    }

    /// The server's base URL, `http://127.0.0.1:PORT` (an ephemeral port).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn request_count(&self) -> usize {
        self.state.requests.lock().unwrap().len()
    }

    /// The most requests that were being answered at the same time.
    pub fn peak_in_flight(&self) -> usize {
        self.state.peak_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// A loopback port with nothing listening (bound, then released).
pub fn dead_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}")
}

fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            let (name, value) = (name.trim().to_string(), value.trim().to_string());
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().unwrap_or(0);
            }
            headers.push((name, value));
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn serve(mut stream: TcpStream, state: &State) {
    let Some(request) = read_request(&mut stream) else {
        return;
    };
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.peak_in_flight.fetch_max(now, Ordering::SeqCst);
    state.requests.lock().unwrap().push(request);
    let reply = state
        .script
        .lock()
        .unwrap()
        .pop_front()
        .or_else(|| state.default.lock().unwrap().clone())
        .unwrap_or(Reply::status(500, "{\"error\":\"no scripted reply\"}"));
    let _ = play(&mut stream, reply);
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn play(stream: &mut TcpStream, reply: Reply) -> std::io::Result<()> {
    match reply {
        Reply::Full {
            status,
            content_type,
            body,
            delay,
        } => {
            std::thread::sleep(delay);
            write!(
                stream,
                "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                reason(status),
                body.len()
            )?;
            stream.flush()
        }
        Reply::Pieces {
            status,
            content_type,
            pieces,
        } => {
            write!(
                stream,
                "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n",
                reason(status)
            )?;
            stream.flush()?;
            for (gap, piece) in pieces {
                std::thread::sleep(gap);
                stream.write_all(piece.as_bytes())?;
                stream.flush()?;
            }
            Ok(())
        }
        Reply::Hang(d) => {
            std::thread::sleep(d);
            Ok(())
        }
        Reply::Redirect { status, location } => {
            write!(
                stream,
                "HTTP/1.1 {status} {}\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                reason(status)
            )?;
            stream.flush()
        }
        Reply::Endless {
            content_type,
            piece,
            gap,
        } => {
            write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n"
            )?;
            let until = std::time::Instant::now() + Duration::from_secs(600);
            while std::time::Instant::now() < until {
                stream.write_all(piece.as_bytes())?;
                stream.flush()?;
                std::thread::sleep(gap);
            }
            Ok(())
        }
    }
}

/// Usage to report, or `None` to leave the usage fields out.
pub type Usage = Option<(u64, u64)>;

/// Ollama `/api/chat`: NDJSON lines, the last with `done: true`.
pub mod ollama {
    use super::*;

    pub fn stream_lines(model: &str, pieces: &[&str], usage: Usage) -> Vec<String> {
        let mut lines: Vec<String> = pieces
            .iter()
            .map(|p| {
                json!({"model": model, "created_at": "2026-01-01T00:00:00Z",
                       "message": {"role": "assistant", "content": p}, "done": false})
                .to_string()
                    + "\n"
            })
            .collect();
        let mut last = json!({"model": model, "created_at": "2026-01-01T00:00:01Z",
            "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop",
            "total_duration": 1000});
        if let Some((p, c)) = usage {
            last["prompt_eval_count"] = json!(p);
            last["eval_count"] = json!(c);
        }
        lines.push(last.to_string() + "\n");
        lines
    }

    pub fn stream(model: &str, pieces: &[&str], usage: Usage) -> Reply {
        Reply::stream(
            "application/x-ndjson",
            stream_lines(model, pieces, usage),
            Duration::ZERO,
        )
    }

    pub fn full(model: &str, text: &str, usage: Usage) -> Reply {
        let mut body = json!({"model": model, "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": text}, "done": true, "done_reason": "stop"});
        if let Some((p, c)) = usage {
            body["prompt_eval_count"] = json!(p);
            body["eval_count"] = json!(c);
        }
        Reply::json(body)
    }

    pub fn tags(models: &[&str]) -> Reply {
        Reply::json(
            json!({"models": models.iter().map(|m| json!({"name": m, "model": m, "size": 1})).collect::<Vec<_>>()}),
        )
    }
}

/// OpenAI `/v1/chat/completions`: SSE `data:` lines and `[DONE]`.
pub mod openai {
    use super::*;

    pub fn stream_events(model: &str, pieces: &[&str], usage: Usage) -> Vec<String> {
        let event = |delta: Value, finish: Value| {
            format!(
                "data: {}\n\n",
                json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                       "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            )
        };
        let mut events = vec![event(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )];
        events.extend(
            pieces
                .iter()
                .map(|p| event(json!({"content": p}), Value::Null)),
        );
        events.push(event(json!({}), json!("stop")));
        if let Some((p, c)) = usage {
            events.push(format!(
                "data: {}\n\n",
                json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
                       "choices": [], "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}})
            ));
        }
        events.push("data: [DONE]\n\n".to_string());
        events
    }

    pub fn stream(model: &str, pieces: &[&str], usage: Usage) -> Reply {
        Reply::stream(
            "text/event-stream",
            stream_events(model, pieces, usage),
            Duration::ZERO,
        )
    }

    pub fn full(model: &str, text: &str, usage: Usage) -> Reply {
        let mut body = json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]});
        if let Some((p, c)) = usage {
            body["usage"] =
                json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c});
        }
        Reply::json(body)
    }

    pub fn models(ids: &[&str]) -> Reply {
        Reply::json(
            json!({"object": "list", "data": ids.iter().map(|i| json!({"id": i, "object": "model", "owned_by": "local"})).collect::<Vec<_>>()}),
        )
    }
}

/// Anthropic `/v1/messages`: SSE events.
pub mod anthropic {
    use super::*;

    fn event(name: &str, data: Value) -> String {
        format!("event: {name}\ndata: {data}\n\n")
    }

    pub fn stream_events(model: &str, pieces: &[&str], usage: Usage) -> Vec<String> {
        let (input, output) = usage.unwrap_or((0, 0));
        let mut start_usage = json!({"input_tokens": input, "output_tokens": 1});
        if usage.is_none() {
            start_usage = json!({});
        }
        let mut events = vec![
            event(
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "content": [], "model": model, "stop_reason": null, "usage": start_usage}}),
            ),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            event("ping", json!({"type": "ping"})),
        ];
        events.extend(pieces.iter().map(|p| {
            event("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}))
        }));
        events.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ));
        let mut delta = json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}});
        if usage.is_some() {
            delta["usage"] = json!({"output_tokens": output});
        }
        events.push(event("message_delta", delta));
        events.push(event("message_stop", json!({"type": "message_stop"})));
        events
    }

    pub fn stream(model: &str, pieces: &[&str], usage: Usage) -> Reply {
        Reply::stream(
            "text/event-stream",
            stream_events(model, pieces, usage),
            Duration::ZERO,
        )
    }

    pub fn full(model: &str, text: &str, usage: Usage) -> Reply {
        let mut body = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null});
        if let Some((p, c)) = usage {
            body["usage"] = json!({"input_tokens": p, "output_tokens": c});
        }
        Reply::json(body)
    }

    pub fn models(ids: &[&str]) -> Reply {
        Reply::json(
            json!({"data": ids.iter().map(|i| json!({"type": "model", "id": i, "display_name": i})).collect::<Vec<_>>(), "has_more": false}),
        )
    }
}

/// The three protocols, for tests that run every case against each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Ollama,
    Openai,
    Anthropic,
}

pub const ALL: [Proto; 3] = [Proto::Ollama, Proto::Openai, Proto::Anthropic];

/// The fake API key the Anthropic tests put in the environment.
pub const TEST_KEY_VAR: &str = "KOAS_LLM_TEST_ANTHROPIC_KEY";
pub const TEST_KEY: &str = "sk-ant-test-DO-NOT-LEAK-5f3c9a";

impl Proto {
    pub fn backend(self) -> koas_llm::BackendKind {
        match self {
            Proto::Ollama => koas_llm::BackendKind::Ollama,
            Proto::Openai => koas_llm::BackendKind::Openai,
            Proto::Anthropic => koas_llm::BackendKind::Anthropic,
        }
    }

    pub fn chat_path(self) -> &'static str {
        match self {
            Proto::Ollama => "/api/chat",
            Proto::Openai => "/v1/chat/completions",
            Proto::Anthropic => "/v1/messages",
        }
    }

    pub fn stream(self, pieces: &[&str], usage: Usage) -> Reply {
        match self {
            Proto::Ollama => ollama::stream("test-model", pieces, usage),
            Proto::Openai => openai::stream("test-model", pieces, usage),
            Proto::Anthropic => anthropic::stream("test-model", pieces, usage),
        }
    }

    pub fn stream_pieces(self, pieces: &[&str], usage: Usage) -> Vec<String> {
        match self {
            Proto::Ollama => ollama::stream_lines("test-model", pieces, usage),
            Proto::Openai => openai::stream_events("test-model", pieces, usage),
            Proto::Anthropic => anthropic::stream_events("test-model", pieces, usage),
        }
    }

    /// One piece of text in this protocol's stream format, repeatable
    /// without ever ending the stream.
    pub fn endless_piece(self) -> String {
        let one = self.stream_pieces(&["tick "], None);
        match self {
            Proto::Ollama => one[0].clone(),
            // [0] is the role event or message_start; [1] carries text.
            Proto::Openai => one[1].clone(),
            Proto::Anthropic => one[3].clone(),
        }
    }

    /// A stream that never ends, a piece every 50 ms.
    pub fn endless(self) -> Reply {
        Reply::Endless {
            content_type: self.content_type(),
            piece: self.endless_piece(),
            gap: Duration::from_millis(50),
        }
    }

    /// The server's error inside a 200 answer, in this API's own shape.
    pub fn error_object(self, message: &str) -> Reply {
        Reply::json(match self {
            Proto::Ollama => json!({"error": message}),
            Proto::Openai => {
                json!({"error": {"message": message, "type": "invalid_request_error", "code": "model_not_found"}})
            }
            Proto::Anthropic => {
                json!({"type": "error", "error": {"type": "not_found_error", "message": message}})
            }
        })
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Proto::Ollama => "application/x-ndjson",
            _ => "text/event-stream",
        }
    }

    pub fn full(self, text: &str, usage: Usage) -> Reply {
        match self {
            Proto::Ollama => ollama::full("test-model", text, usage),
            Proto::Openai => openai::full("test-model", text, usage),
            Proto::Anthropic => anthropic::full("test-model", text, usage),
        }
    }

    pub fn models(self, ids: &[&str]) -> Reply {
        match self {
            Proto::Ollama => ollama::tags(ids),
            Proto::Openai => openai::models(ids),
            Proto::Anthropic => anthropic::models(ids),
        }
    }

    /// A config for this protocol at `url` with short, test-sized timings.
    pub fn config(self, url: &str) -> koas_llm::LlmConfig {
        let mut c = koas_llm::LlmConfig::new(self.backend(), url, "test-model");
        c.timeout_secs = 2.0;
        c.connect_timeout_secs = 0.5;
        c.backoff_initial_ms = 5;
        c.backoff_max_ms = 20;
        c.empty_retry_wait_ms = [1, 5];
        if self == Proto::Anthropic {
            std::env::set_var(TEST_KEY_VAR, TEST_KEY);
            c.api_key_env = Some(TEST_KEY_VAR.to_string());
            c.strict_sovereign = false;
        }
        c
    }

    /// The text of the user message as the server received it.
    pub fn user_prompt(self, body: &Value) -> Option<String> {
        let messages = body.get("messages")?.as_array()?;
        messages
            .iter()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    /// The temperature as the server received it.
    pub fn temperature(self, body: &Value) -> Option<f64> {
        match self {
            Proto::Ollama => body.pointer("/options/temperature")?.as_f64(),
            _ => body.get("temperature")?.as_f64(),
        }
    }
}
