//! A scripted model on loopback: an OpenAI-compatible server
//! (`POST /v1/chat/completions`, streamed or not; `GET /v1/models`) whose
//! answers a test writes as a function of the request, with a delay, a
//! call count, the prompts it received and the most requests it was
//! answering at once.
//!
//! Tests of LLM kernels and of `koas review` with a model use it instead
//! of a real server: they can script a model that answers well, one that
//! degenerates, one that is slow, and check what koas sent.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The model id the server answers as and lists.
pub const MODEL: &str = "scripted";

/// One chat request as the model saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The system message, if any.
    pub system: Option<String>,
    /// The last user message.
    pub prompt: String,
    /// The requested temperature, if any.
    pub temperature: Option<f64>,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// The whole JSON body.
    pub body: Value,
}

/// What the model does with one request.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelAnswer {
    /// Answers `text` after `delay`.
    Text {
        /// The completion.
        text: String,
        /// How long to think first.
        delay: Duration,
    },
    /// Answers with an HTTP error status and body.
    Status(u16, String),
    /// Closes the connection without a word after `delay` (a crash).
    Drop(Duration),
    /// Streams `text` after `think`, then `repeat` every `every`: a small
    /// model that wrote its answer and loops on it until the token cap.
    /// The stream ends, `finish_reason: length`, once it holds the
    /// request's `max_tokens` (counted as characters / 4), or when the
    /// client goes away, or after 5 minutes. A request that is not
    /// streamed gets `text` and 50 repeats.
    Looping {
        /// The answer.
        text: String,
        /// What comes back again and again after it.
        repeat: String,
        /// The pause between two repeats.
        every: Duration,
        /// The pause before the first piece (a server reading the prompt).
        think: Duration,
    },
}

impl ModelAnswer {
    /// `text`, at once.
    pub fn text(text: impl Into<String>) -> ModelAnswer {
        ModelAnswer::Text {
            text: text.into(),
            delay: Duration::ZERO,
        }
    }

    /// `text` after `delay`.
    pub fn after(delay: Duration, text: impl Into<String>) -> ModelAnswer {
        ModelAnswer::Text {
            text: text.into(),
            delay,
        }
    }
}

type Script = dyn Fn(&ModelRequest) -> ModelAnswer + Send + Sync;

struct State {
    script: Box<Script>,
    requests: Mutex<Vec<ModelRequest>>,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    stop: AtomicBool,
}

/// The scripted model server; stops when dropped (or on [`stop`]).
///
/// [`stop`]: ScriptedModel::stop
pub struct ScriptedModel {
    addr: SocketAddr,
    state: Arc<State>,
    accept: Option<JoinHandle<()>>,
}

impl ScriptedModel {
    /// Starts a model answering every request with `script(request)`.
    pub fn start(
        script: impl Fn(&ModelRequest) -> ModelAnswer + Send + Sync + 'static,
    ) -> ScriptedModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let state = Arc::new(State {
            script: Box::new(script),
            requests: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
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
        ScriptedModel {
            addr,
            state,
            accept: Some(accept),
        }
    }

    /// The base URL to configure as the endpoint (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The chat requests answered (or being answered) so far, in arrival
    /// order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.state
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// How many chat requests arrived.
    pub fn calls(&self) -> usize {
        self.state.requests.lock().map(|r| r.len()).unwrap_or(0)
    }

    /// The most chat requests that were being answered at the same time.
    pub fn peak_in_flight(&self) -> usize {
        self.state.peak.load(Ordering::SeqCst)
    }

    /// Stops accepting connections (a server that died); requests already
    /// being answered finish.
    pub fn stop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Raw {
    method: String,
    path: String,
    body: Vec<u8>,
}

fn read_request(stream: &TcpStream) -> Option<Raw> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let method = words.next()?.to_owned();
    let path = words.next()?.to_owned();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Raw { method, path, body })
}

fn respond(stream: &mut TcpStream, status: u16, content_type: &str, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}

fn chat_request(body: &Value) -> ModelRequest {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let text_of = |role: &str| {
        messages
            .iter()
            .rev()
            .find(|m| m["role"] == role)
            .and_then(|m| m["content"].as_str())
            .map(str::to_owned)
    };
    ModelRequest {
        system: text_of("system"),
        prompt: text_of("user").unwrap_or_default(),
        temperature: body["temperature"].as_f64(),
        stream: body["stream"].as_bool().unwrap_or(false),
        body: body.clone(),
    }
}

fn serve(mut stream: TcpStream, state: &State) {
    let Some(raw) = read_request(&stream) else {
        return;
    };
    if raw.method == "GET" && raw.path.ends_with("/models") {
        let body = json!({"object": "list", "data": [{"id": MODEL, "object": "model"}]});
        respond(&mut stream, 200, "application/json", &body.to_string());
        return;
    }
    if !(raw.method == "POST" && raw.path.ends_with("/chat/completions")) {
        respond(&mut stream, 404, "text/plain", "not found");
        return;
    }
    let body: Value = serde_json::from_slice(&raw.body).unwrap_or(Value::Null);
    let request = chat_request(&body);
    if let Ok(mut r) = state.requests.lock() {
        r.push(request.clone());
    }
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.peak.fetch_max(now, Ordering::SeqCst);
    let answer = (state.script)(&request);
    match answer {
        ModelAnswer::Text { text, delay } => {
            std::thread::sleep(delay);
            let prompt_tokens = request.prompt.chars().count() / 4;
            let completion_tokens = text.chars().count() / 4;
            if request.stream {
                let mut out = String::new();
                for piece in split_pieces(&text) {
                    let event = json!({"id": "s", "object": "chat.completion.chunk", "model": MODEL,
                        "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
                    out.push_str(&format!("data: {event}\n\n"));
                }
                let last = json!({"id": "s", "object": "chat.completion.chunk", "model": MODEL,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}});
                out.push_str(&format!("data: {last}\n\ndata: [DONE]\n\n"));
                respond(&mut stream, 200, "text/event-stream", &out);
            } else {
                let body = json!({"id": "s", "object": "chat.completion", "model": MODEL,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}});
                respond(&mut stream, 200, "application/json", &body.to_string());
            }
        }
        ModelAnswer::Status(status, body) => {
            respond(&mut stream, status, "application/json", &body)
        }
        ModelAnswer::Drop(delay) => {
            std::thread::sleep(delay);
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        ModelAnswer::Looping {
            text,
            repeat,
            every,
            think,
        } if request.stream => {
            std::thread::sleep(think);
            let cap = request
                .body
                .get("max_tokens")
                .or_else(|| request.body.get("max_completion_tokens"))
                .and_then(Value::as_u64)
                .unwrap_or(u64::MAX);
            stream_looping(&mut stream, &text, &repeat, every, cap)
        }
        ModelAnswer::Looping { text, repeat, .. } => {
            let content = format!("{text}{}", repeat.repeat(50));
            let body = json!({"id": "s", "object": "chat.completion", "model": MODEL,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "length"}]});
            respond(&mut stream, 200, "application/json", &body.to_string());
        }
    }
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
}

/// Streams `text` then `repeat` until `cap` tokens (characters / 4) are
/// sent, a write fails (the client left) or five minutes have passed.
fn stream_looping(stream: &mut TcpStream, text: &str, repeat: &str, every: Duration, cap: u64) {
    let event = |piece: &str, finish: Option<&str>| {
        let chunk = json!({"id": "s", "object": "chat.completion.chunk", "model": MODEL,
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let tokens = |s: &str| (s.chars().count() as u64).div_ceil(4);
    let head = "HTTP/1.1 200 X\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    if write!(stream, "{head}{}", event(text, None)).is_err() || stream.flush().is_err() {
        return;
    }
    let mut sent = tokens(text);
    let until = std::time::Instant::now() + Duration::from_secs(300);
    while std::time::Instant::now() < until && sent < cap {
        std::thread::sleep(every);
        if write!(stream, "{}", event(repeat, None)).is_err() || stream.flush().is_err() {
            return;
        }
        sent += tokens(repeat).max(1);
    }
    let _ = write!(stream, "{}data: [DONE]\n\n", event("", Some("length")));
}

/// The answer in a few pieces, as a streaming server sends it.
fn split_pieces(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    words.chunks(4).map(|c| c.concat()).collect()
}

/// When one entry of an exchange log (`llm/exchanges.jsonl`) was sent and
/// answered, in Unix milliseconds: `None` for an entry without timings.
pub fn request_span(entry: &Value) -> Option<(u64, u64)> {
    let end = entry["unix_ms"].as_u64()?;
    Some((end.saturating_sub(entry["latency_ms"].as_u64()?), end))
}

/// The model phase of `spans` in milliseconds: first request sent to last
/// answer in (0 without any).
pub fn model_phase_ms(spans: &[(u64, u64)]) -> u64 {
    let first = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let last = spans.iter().map(|s| s.1).max().unwrap_or(0);
    last.saturating_sub(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(url: &str, body: &Value) -> String {
        let addr = url.trim_start_matches("http://");
        let mut stream = TcpStream::connect(addr).expect("connect");
        let body = body.to_string();
        write!(
            stream,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .expect("write");
        let mut out = String::new();
        stream.read_to_string(&mut out).expect("read");
        out
    }

    #[test]
    fn answers_by_script_and_records_requests() {
        let model = ScriptedModel::start(|r| ModelAnswer::text(format!("echo: {}", r.prompt)));
        let plain = post(
            &model.url(),
            &json!({"model": MODEL, "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]}),
        );
        assert!(plain.contains("\"content\":\"echo: hi\""), "{plain}");
        let streamed = post(
            &model.url(),
            &json!({"model": MODEL, "stream": true, "messages": [{"role": "user", "content": "one two three four five"}]}),
        );
        assert!(
            streamed.contains("data: [DONE]") && streamed.contains("echo: one two"),
            "{streamed}"
        );
        let requests = model.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0].system.as_deref(), Some("s"));
        assert!(requests[1].stream);
        assert_eq!(model.peak_in_flight(), 1);
    }
}
