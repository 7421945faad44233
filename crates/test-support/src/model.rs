//! A scripted model on loopback: an OpenAI-compatible server
//! (`POST /v1/chat/completions`, streamed or not; `GET /v1/models`) whose
//! answers a test writes as a function of the request, with a delay, a
//! call count, the prompts it received and the most requests it was
//! answering at once.
//!
//! Tests of LLM kernels and of `koas review` with a model use it instead
//! of a real server: they can script a model that answers well, one that
//! degenerates, one that is slow, and check what koas sent.
//!
//! [`ScriptedModel::start_with`] also makes a server that lists and
//! answers as another model id, and one with a fixed number of slots that
//! queues the requests beyond them like llama-server does;
//! [`ScriptedModel::timeline`] says when each chat request arrived, got a
//! slot and ended; [`ScriptedModel::kill`] is a server dying mid-run.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Condvar;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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

/// How a scripted server presents itself.
#[derive(Debug, Clone)]
pub struct ModelOptions {
    /// The model id it lists and answers as (default [`MODEL`]).
    pub model: String,
    /// Requests answered at once; the others wait in a queue, in arrival
    /// order as far as the scheduler allows. `None`: no limit.
    pub slots: Option<usize>,
    /// Reports, as llama.cpp's server does in `timings.cache_n`, the
    /// prompt tokens it could reuse: the longest beginning the prompt
    /// shares with an earlier request's, counted as its prompt tokens are
    /// (characters / 4); in the last streamed event, or in every one when
    /// the request asks for `timings_per_token`. `false`: no `timings`,
    /// like most servers.
    pub report_reuse: bool,
}

impl Default for ModelOptions {
    fn default() -> Self {
        ModelOptions {
            model: MODEL.to_string(),
            slots: None,
            report_reuse: false,
        }
    }
}

/// When one chat request arrived, got a slot and ended, measured from
/// the server's start.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestTimes {
    /// When the request was read.
    pub arrival: Duration,
    /// When it got a slot (its answer began); `None` while queued, or if
    /// the server was killed first.
    pub start: Option<Duration>,
    /// When its answer ended or was cut; `None` while being answered.
    pub end: Option<Duration>,
    /// Whether the whole answer was written (not cut by [`kill`]).
    ///
    /// [`kill`]: ScriptedModel::kill
    pub answered: bool,
}

impl RequestTimes {
    /// Whether the request was being answered (had a slot) at `t`.
    pub fn answering_at(&self, t: Duration) -> bool {
        self.start.is_some_and(|s| s <= t) && self.end.map_or(true, |e| t < e)
    }
}

struct State {
    script: Box<Script>,
    model: String,
    requests: Mutex<Vec<ModelRequest>>,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    stop: AtomicBool,
    killed: AtomicBool,
    started: Instant,
    timeline: Mutex<Vec<RequestTimes>>,
    /// Whether answers carry `timings.cache_n`.
    report_reuse: bool,
    /// Free slots, when the server has a limit.
    free: Option<Mutex<usize>>,
    freed: Condvar,
    /// The connections being answered or queued, so `kill` can cut them.
    live: Mutex<Vec<(usize, TcpStream)>>,
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
        Self::start_with(ModelOptions::default(), script)
    }

    /// Starts a model that lists and answers as `model`.
    pub fn start_as(
        model: &str,
        script: impl Fn(&ModelRequest) -> ModelAnswer + Send + Sync + 'static,
    ) -> ScriptedModel {
        let options = ModelOptions {
            model: model.to_string(),
            ..ModelOptions::default()
        };
        Self::start_with(options, script)
    }

    /// Starts a model presenting itself as `options` say.
    pub fn start_with(
        options: ModelOptions,
        script: impl Fn(&ModelRequest) -> ModelAnswer + Send + Sync + 'static,
    ) -> ScriptedModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let state = Arc::new(State {
            script: Box::new(script),
            model: options.model,
            requests: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            started: Instant::now(),
            timeline: Mutex::new(Vec::new()),
            report_reuse: options.report_reuse,
            free: options.slots.map(|n| Mutex::new(n.max(1))),
            freed: Condvar::new(),
            live: Mutex::new(Vec::new()),
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

    /// The most chat requests that were being answered at the same time
    /// (queued ones not counted).
    pub fn peak_in_flight(&self) -> usize {
        self.state.peak.load(Ordering::SeqCst)
    }

    /// Each chat request's arrival, start and end, in arrival order.
    pub fn timeline(&self) -> Vec<RequestTimes> {
        self.state
            .timeline
            .lock()
            .map(|t| t.clone())
            .unwrap_or_default()
    }

    /// How many chat requests got their whole answer.
    pub fn answered(&self) -> usize {
        self.timeline().iter().filter(|t| t.answered).count()
    }

    /// The model id the server lists and answers as.
    pub fn model(&self) -> &str {
        &self.state.model
    }

    /// Kills the server: it stops accepting connections, and the requests
    /// being answered or queued lose their connection at once (a server
    /// that died mid-run).
    pub fn kill(&mut self) {
        self.state.killed.store(true, Ordering::SeqCst);
        if let Ok(live) = self.state.live.lock() {
            for (_, stream) in live.iter() {
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
        }
        self.state.freed.notify_all();
        self.stop();
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

/// Writes a whole answer; `false` when the connection is gone.
fn respond(stream: &mut TcpStream, status: u16, content_type: &str, body: &str) -> bool {
    write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .and_then(|()| stream.flush())
    .is_ok()
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
        let body = json!({"object": "list", "data": [{"id": state.model, "object": "model"}]});
        respond(&mut stream, 200, "application/json", &body.to_string());
        return;
    }
    if !(raw.method == "POST" && raw.path.ends_with("/chat/completions")) {
        respond(&mut stream, 404, "text/plain", "not found");
        return;
    }
    let body: Value = serde_json::from_slice(&raw.body).unwrap_or(Value::Null);
    let request = chat_request(&body);
    let mut reused = None;
    if let Ok(mut r) = state.requests.lock() {
        if state.report_reuse {
            let shared = r
                .iter()
                .map(|earlier| shared_beginning(&earlier.prompt, &request.prompt))
                .max()
                .unwrap_or(0);
            reused = Some(shared / 4);
        }
        r.push(request.clone());
    }
    let id = state
        .timeline
        .lock()
        .map(|mut t| {
            t.push(RequestTimes {
                arrival: state.started.elapsed(),
                start: None,
                end: None,
                answered: false,
            });
            t.len() - 1
        })
        .unwrap_or(usize::MAX);
    if let (Ok(mut live), Ok(clone)) = (state.live.lock(), stream.try_clone()) {
        live.push((id, clone));
    }
    if state.killed.load(Ordering::SeqCst) || !take_slot(state) {
        let _ = stream.shutdown(std::net::Shutdown::Both);
        finish(state, id, false);
        return;
    }
    set_time(state, id, |t, now| t.start = Some(now));
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.peak.fetch_max(now, Ordering::SeqCst);
    let counted = AtomicBool::new(true);
    let answered = answer(&mut stream, state, &request, reused, &counted);
    release(state, &counted);
    // Ended before the slot is given back, so the next request's start
    // never comes before this end.
    finish(state, id, answered && !state.killed.load(Ordering::SeqCst));
    if let Some(free) = &state.free {
        if let Ok(mut n) = free.lock() {
            *n += 1;
        }
        state.freed.notify_all();
    }
}

/// Waits for a free slot (at once without a limit); `false` when the
/// server was killed while waiting.
fn take_slot(state: &State) -> bool {
    let Some(free) = &state.free else {
        return true;
    };
    let mut n = free.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if state.killed.load(Ordering::SeqCst) {
            return false;
        }
        if *n > 0 {
            *n -= 1;
            return true;
        }
        n = state
            .freed
            .wait_timeout(n, Duration::from_millis(50))
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0);
    }
}

fn set_time(state: &State, id: usize, f: impl FnOnce(&mut RequestTimes, Duration)) {
    let now = state.started.elapsed();
    if let Ok(mut t) = state.timeline.lock() {
        if let Some(entry) = t.get_mut(id) {
            f(entry, now);
        }
    }
}

/// Records the end of request `id` and forgets its connection.
fn finish(state: &State, id: usize, answered: bool) {
    set_time(state, id, |t, now| {
        t.end = Some(now);
        t.answered = answered;
    });
    if let Ok(mut live) = state.live.lock() {
        live.retain(|(i, _)| *i != id);
    }
}

/// Answers one chat request as the script says; `true` when the whole
/// answer was written.
/// Stops counting a request as in flight, once. A whole answer is
/// released just before it is written: the client may send its next
/// request the moment it has read this one, and that request must not
/// find this one still counted (a peak one too high).
fn release(state: &State, counted: &AtomicBool) {
    if counted.swap(false, Ordering::SeqCst) {
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The characters two prompts share from their beginning.
fn shared_beginning(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

fn answer(
    stream: &mut TcpStream,
    state: &State,
    request: &ModelRequest,
    reused: Option<usize>,
    counted: &AtomicBool,
) -> bool {
    let model = state.model.as_str();
    let answer = (state.script)(request);
    let request = request.clone();
    match answer {
        ModelAnswer::Text { text, delay } => {
            std::thread::sleep(delay);
            let prompt_tokens = request.prompt.chars().count() / 4;
            let completion_tokens = text.chars().count() / 4;
            if request.stream {
                let mut out = String::new();
                // Timings in every event when asked, as llama.cpp does.
                let per_token = request.body["timings_per_token"] == true;
                let mut written = 0;
                for piece in split_pieces(&text) {
                    let mut event = json!({"id": "s", "object": "chat.completion.chunk", "model": model,
                        "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
                    written += piece.chars().count();
                    if let Some(n) = reused.filter(|_| per_token) {
                        event["timings"] = json!({"cache_n": n, "prompt_n": prompt_tokens - n,
                            "predicted_n": written / 4});
                    }
                    out.push_str(&format!("data: {event}\n\n"));
                }
                let mut last = json!({"id": "s", "object": "chat.completion.chunk", "model": model,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}});
                if let Some(n) = reused {
                    last["timings"] = json!({"cache_n": n, "prompt_n": prompt_tokens - n});
                }
                out.push_str(&format!("data: {last}\n\ndata: [DONE]\n\n"));
                release(state, counted);
                respond(stream, 200, "text/event-stream", &out)
            } else {
                let mut body = json!({"id": "s", "object": "chat.completion", "model": model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}});
                if let Some(n) = reused {
                    body["timings"] = json!({"cache_n": n, "prompt_n": prompt_tokens - n});
                }
                release(state, counted);
                respond(stream, 200, "application/json", &body.to_string())
            }
        }
        ModelAnswer::Status(status, body) => {
            release(state, counted);
            respond(stream, status, "application/json", &body)
        }
        ModelAnswer::Drop(delay) => {
            std::thread::sleep(delay);
            let _ = stream.shutdown(std::net::Shutdown::Both);
            false
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
            stream_looping(stream, model, &text, &repeat, every, cap)
        }
        ModelAnswer::Looping { text, repeat, .. } => {
            let content = format!("{text}{}", repeat.repeat(50));
            let body = json!({"id": "s", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "length"}]});
            respond(stream, 200, "application/json", &body.to_string())
        }
    }
}

/// Streams `text` then `repeat` until `cap` tokens (characters / 4) are
/// sent, a write fails (the client left) or five minutes have passed.
fn stream_looping(
    stream: &mut TcpStream,
    model: &str,
    text: &str,
    repeat: &str,
    every: Duration,
    cap: u64,
) -> bool {
    let event = |piece: &str, finish: Option<&str>| {
        let chunk = json!({"id": "s", "object": "chat.completion.chunk", "model": model,
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let tokens = |s: &str| (s.chars().count() as u64).div_ceil(4);
    let head = "HTTP/1.1 200 X\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    if write!(stream, "{head}{}", event(text, None)).is_err() || stream.flush().is_err() {
        return false;
    }
    let mut sent = tokens(text);
    let until = std::time::Instant::now() + Duration::from_secs(300);
    while std::time::Instant::now() < until && sent < cap {
        std::thread::sleep(every);
        if write!(stream, "{}", event(repeat, None)).is_err() || stream.flush().is_err() {
            return false;
        }
        sent += tokens(repeat).max(1);
    }
    write!(stream, "{}data: [DONE]\n\n", event("", Some("length"))).is_ok()
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
        assert_eq!(model.answered(), 2);
    }

    fn models(url: &str) -> String {
        let mut stream = TcpStream::connect(url.trim_start_matches("http://")).expect("connect");
        write!(stream, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n").expect("write");
        let mut out = String::new();
        stream.read_to_string(&mut out).expect("read");
        out
    }

    #[test]
    fn another_model_id_is_listed_and_answered_as() {
        let model = ScriptedModel::start_as("other-model", |_| ModelAnswer::text("hi"));
        assert!(models(&model.url()).contains("\"id\":\"other-model\""));
        let out = post(&model.url(), &json!({"model": "x", "messages": []}));
        assert!(out.contains("\"model\":\"other-model\""), "{out}");
    }

    #[test]
    fn slots_queue_the_rest_and_the_queue_wait_is_not_answering() {
        let options = ModelOptions {
            slots: Some(2),
            ..ModelOptions::default()
        };
        let model = ScriptedModel::start_with(options, |_| {
            ModelAnswer::after(Duration::from_millis(100), "ok")
        });
        let url = model.url();
        std::thread::scope(|s| {
            for _ in 0..5 {
                s.spawn(|| post(&url, &json!({"messages": []})));
            }
        });
        assert_eq!(model.peak_in_flight(), 2);
        let timeline = model.timeline();
        assert_eq!(timeline.len(), 5);
        assert!(timeline.iter().all(|t| t.answered));
        let waited = timeline
            .iter()
            .filter(|t| t.start.unwrap() - t.arrival >= Duration::from_millis(80))
            .count();
        assert!(waited >= 3, "{timeline:?}");
        // Never more than two answering at any start instant.
        for t in &timeline {
            let at = t.start.unwrap();
            assert!(timeline.iter().filter(|o| o.answering_at(at)).count() <= 2);
        }
    }

    #[test]
    fn reuse_is_reported_as_the_beginning_shared_with_an_earlier_prompt() {
        let cache_n = |model: &ScriptedModel, prompt: &str| {
            let body = json!({"messages": [{"role": "user", "content": prompt}]});
            let out = post(&model.url(), &body);
            let answer = out.split("\r\n\r\n").nth(1).unwrap_or("");
            let answer: Value = serde_json::from_str(answer).expect("json");
            answer.pointer("/timings/cache_n").and_then(Value::as_u64)
        };
        let options = ModelOptions {
            report_reuse: true,
            ..ModelOptions::default()
        };
        let model = ScriptedModel::start_with(options, |_| ModelAnswer::text("ok"));
        let shared = "s".repeat(40);
        assert_eq!(
            cache_n(&model, &format!("{shared}{}", "a".repeat(40))),
            Some(0)
        );
        assert_eq!(
            cache_n(&model, &format!("{shared}{}", "b".repeat(40))),
            Some(10)
        );
        assert_eq!(
            cache_n(&model, &format!("{shared}{}", "a".repeat(40))),
            Some(20)
        );
        let plain = ScriptedModel::start(|_| ModelAnswer::text("ok"));
        assert_eq!(cache_n(&plain, &shared), None);
    }

    #[test]
    fn kill_drops_the_connections_being_answered_and_refuses_new_ones() {
        let mut model =
            ScriptedModel::start(|_| ModelAnswer::after(Duration::from_secs(5), "late"));
        let url = model.url();
        let started = std::time::Instant::now();
        std::thread::scope(|s| {
            let cut = s.spawn(|| post(&url, &json!({"messages": []})));
            while model.timeline().is_empty() {
                std::thread::sleep(Duration::from_millis(5));
            }
            model.kill();
            assert!(!cut.join().unwrap().contains("late"));
        });
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(TcpStream::connect(url.trim_start_matches("http://")).is_err());
        let timeline = model.timeline();
        assert_eq!(timeline.len(), 1);
        assert!(!timeline[0].answered);
    }
}
