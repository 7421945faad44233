//! The LLM host service wired into the runtime: a kernel's `llm_complete`
//! answered by a real HTTP server on loopback (speaking the OpenAI wire
//! format), the response cache, replay without network, sovereignty, ping,
//! calibration, and API keys kept out of every record; and hostile servers
//! seen through `koas llm ping|calibrate` (a redirect to a refused host, a
//! server that never answers, a stream that never ends, an error or an HTML
//! page inside a 200 answer).

use crate::common::*;
use koas_test_support::test_plugin;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

const ANSWER: &str = "{\"answer\": 42}";
const SECRET: &str = "sk-test-secret-do-not-leak-4711";

/// A loopback server speaking the OpenAI chat-completions wire format.
struct FakeServer {
    port: u16,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeServer {
    fn start() -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (requests.clone(), stop.clone());
        // Serves until dropped: a fixed lifetime would run out while a
        // loaded machine builds the test plugin.
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        r.fetch_add(1, Ordering::SeqCst);
                        let _ = stream.set_nonblocking(false);
                        serve(stream);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeServer {
            port,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(stream: std::net::TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line == "\r\n" || line.is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    let _ = reader.read_exact(&mut body);
    let payload = if request_line.starts_with("GET /v1/models") {
        serde_json::json!({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
    } else {
        serde_json::json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "fake-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12},
        })
    };
    let text = payload.to_string();
    let mut out = stream;
    let _ = write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        text.len(),
        text
    );
    let _ = out.flush();
}

fn llm_table(endpoint: &str) -> String {
    format!(
        "[llm]\nbackend = \"openai\"\nendpoint = \"{endpoint}\"\nmodel = \"fake-model\"\nstream = false\napi_key_env = \"KOAS_TEST_LLM_KEY\"\n"
    )
}

fn run_with_key(p: &Project, args: &[&str]) -> std::process::Output {
    let mut c = koas();
    c.arg("run")
        .arg(p.pipeline())
        .arg("--kernel-path")
        .arg(test_plugin("testkit"))
        .args(args)
        .env("KOAS_TEST_LLM_KEY", SECRET)
        .current_dir(p.dir.path());
    run(&mut c)
}

fn all_text_under(dir: &std::path::Path) -> String {
    let mut text = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("dir").filter_map(Result::ok) {
            if e.path().is_dir() {
                stack.push(e.path());
            } else if let Ok(bytes) = std::fs::read(e.path()) {
                text.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
    }
    text
}

#[test]
fn a_kernel_gets_answers_from_the_configured_server_and_replay_needs_no_network() {
    let server = FakeServer::start();
    let p = Project::new(
        "a document\n",
        &["source_len", "asks_llm"],
        &llm_table(&server.endpoint()),
    );
    let out = run_with_key(&p, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests(), 1);
    let r = p.record();
    assert_eq!(kernel(&r, "asks_llm")["status"], "ok");
    let session = &r["llm_session"];
    assert_eq!(session["models"]["default"], "fake-model", "{session}");
    assert_eq!(session["max_tokens"], 2048);
    assert!(session["canonicalizer"].is_object(), "{session}");
    assert_eq!(session["calls"]["backend"], 1);
    assert!(p.ws().join("llm/exchanges.jsonl").exists());
    assert_eq!(r["plan"]["llm"]["model"], "fake-model");

    // Unchanged: the kernel is a cache hit, no request.
    let out = run_with_key(&p, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(kernel(&p.record(), "asks_llm")["cache"], "hit");
    assert_eq!(server.requests(), 1);
    // Forced to execute: the response cache answers, still no request.
    let out = run_with_key(&p, &["--no-cache"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(p.record()["llm_session"]["calls"]["cache"], 1);
    assert_eq!(server.requests(), 1);

    // The API key appears nowhere: not in the workspace, not on stderr.
    let everything = all_text_under(&p.ws()) + &stderr(&out) + &stdout(&out);
    assert!(!everything.contains(SECRET), "the API key leaked");

    // Replay with the server gone.
    drop(server);
    let out = run(koas()
        .arg("replay")
        .arg(p.ws())
        .arg("--kernel-path")
        .arg(test_plugin("testkit")));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("replay: PASS"), "{err}");
    assert!(err.contains("0 network LLM call(s)"), "{err}");

    // A changed document makes the replay fail, naming the input.
    std::fs::write(p.dir.path().join("doc.md"), "another document\n").expect("write");
    let out = run(koas()
        .args(["replay", "--json"])
        .arg(p.ws())
        .arg("--kernel-path")
        .arg(test_plugin("testkit")));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(v["verdict"], "fail");
    let diffs = v["differences"].to_string();
    assert!(diffs.contains("source input `doc` changed"), "{diffs}");
}

#[test]
fn a_non_local_endpoint_is_refused_unless_opted_out() {
    let p = Project::new(
        "x\n",
        &["source_len", "asks_llm"],
        "[llm]\nbackend = \"openai\"\nendpoint = \"http://llm.example.com:8080\"\nmodel = \"m\"\n",
    );
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("llm.example.com"), "{err}");
    assert!(err.contains("--no-strict-sovereign"), "{err}");
    // Without an LLM kernel in the run, the [llm] table is not an obstacle.
    let out = p.run(&["--until", "source_len"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // An unknown key in [llm] names the key and the file.
    let p = Project::new(
        "x\n",
        &["source_len", "asks_llm"],
        "[llm]\nbackend = \"openai\"\ntemprature = 0.2\n",
    );
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("temprature") && err.contains("pipeline.toml"),
        "{err}"
    );
}

#[test]
fn ping_and_calibrate_talk_to_the_server() {
    let server = FakeServer::start();
    let out = run(koas().args([
        "llm",
        "ping",
        "--llm-backend",
        "openai",
        "--llm-endpoint",
        &server.endpoint(),
        "--llm-model",
        "fake-model",
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("fake-model"));

    let p = Project::new("x\n", &["source_len"], &llm_table(&server.endpoint()));
    let out = run(koas()
        .args(["llm", "calibrate", "--json"])
        .arg(p.pipeline())
        .env("KOAS_TEST_LLM_KEY", SECRET));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(v["passed"], true);
    assert_eq!(v["runs"].as_array().map(Vec::len), Some(3));
    assert!(server.requests() >= 4, "ping + 3 calibration calls");
    assert!(!stdout(&out).contains(SECRET));

    let out = run(koas().args(["llm", "ping"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no LLM configured"));
}

#[test]
fn an_exhausted_run_budget_is_recorded_in_the_run_record() {
    let server = FakeServer::start();
    let table = llm_table(&server.endpoint()) + "budget_per_run = 10\n";
    let p = Project::new("x\n", &["source_len", "asks_llm"], &table);
    let out = run_with_key(&p, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(server.requests(), 0, "no call is made past the budget");
    let r = p.record();
    let err = kernel(&r, "asks_llm")["error"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(err.contains("SESSION_BUDGET_EXHAUSTED"), "{err}");
    let session = r["llm_session"].to_string();
    assert!(session.contains("SESSION_BUDGET_EXHAUSTED"), "{session}");
}

/// What a [`HostileServer`] does with each request.
#[derive(Clone)]
enum Hostile {
    /// `307 Temporary Redirect` to this location.
    Redirect(String),
    /// Reads the request and never answers (until the test ends).
    Hang,
    /// A 200 SSE stream of chat chunks that never ends.
    EndlessStream,
    /// A 200 answer with this content type and body.
    Answer(&'static str, String),
}

/// A loopback server misbehaving on purpose; each connection is served on
/// its own thread, so a hung or endless one does not block the next.
struct HostileServer {
    port: u16,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl HostileServer {
    fn start(behaviour: Hostile) -> HostileServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (r, s, b) = (r.clone(), s.clone(), behaviour.clone());
                std::thread::spawn(move || misbehave(stream, &r, &s, b));
            }
        });
        HostileServer {
            port,
            requests,
            stop,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn misbehave(stream: std::net::TcpStream, requests: &AtomicUsize, stop: &AtomicBool, b: Hostile) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() || request_line.is_empty() {
        return;
    }
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    let _ = reader.read_exact(&mut body);
    requests.fetch_add(1, Ordering::SeqCst);
    let mut out = stream;
    let until = std::time::Instant::now() + Duration::from_secs(120);
    match b {
        Hostile::Redirect(location) => {
            let _ = write!(
                out,
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
        Hostile::Hang => {
            while !stop.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Hostile::EndlessStream => {
            if write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            )
            .is_err()
            {
                return;
            }
            let chunk = "data: {\"model\":\"fake-model\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"and \"},\"finish_reason\":null}]}\n\n";
            while !stop.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                if out
                    .write_all(chunk.as_bytes())
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Hostile::Answer(content_type, text) => {
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    }
    let _ = out.flush();
}

fn ping(endpoint: &str, extra: &[&str]) -> std::process::Output {
    run(koas()
        .args(["llm", "ping", "--llm-backend", "openai", "--llm-endpoint"])
        .arg(endpoint)
        .args(["--llm-model", "fake-model"])
        .args(extra))
}

#[test]
fn ping_does_not_follow_a_redirect_to_a_refused_host() {
    // The target listens on loopback; on Linux a connection to 0.0.0.0
    // reaches it, so following the redirect would show up there.
    let target = FakeServer::start();
    let location = format!("http://0.0.0.0:{}/v1/models", target.port);
    let server = HostileServer::start(Hostile::Redirect(location.clone()));
    let out = ping(&server.endpoint(), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains(&location), "names the Location: {err}");
    assert!(err.contains("does not follow redirects"), "{err}");
    assert!(
        err.contains("strict sovereignty refuses that host"),
        "{err}"
    );
    assert_eq!(server.requests(), 1);
    assert_eq!(target.requests(), 0, "the redirect was followed");
}

#[test]
fn ping_of_localhost_with_a_trailing_dot_connects_to_loopback() {
    // `localhost.` is answered as loopback by koas itself: no DNS query
    // (which may fail, or answer anything) decides where the ping goes.
    let server = FakeServer::start();
    let endpoint = format!("http://localhost.:{}", server.port);
    let out = ping(&endpoint, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("fake-model"), "{}", stdout(&out));
    assert_eq!(server.requests(), 1);
}

#[test]
fn ping_gives_up_on_a_hung_server_within_its_short_timeout() {
    let server = HostileServer::start(Hostile::Hang);
    let started = std::time::Instant::now();
    let out = ping(&server.endpoint(), &[]);
    let elapsed = started.elapsed();
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("DEADLINE_EXCEEDED"), "{err}");
    assert!(err.contains("ping_timeout_secs"), "{err}");
    assert!(err.contains("5 s"), "the default ping timeout: {err}");
    // Generous: the 120 s generation timeout is what must not apply.
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");

    let out = ping(&server.endpoint(), &["--deadline", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--deadline"), "{}", stderr(&out));
}

#[test]
fn calibrate_against_an_endless_stream_stops_at_its_deadline() {
    let server = HostileServer::start(Hostile::EndlessStream);
    let table = format!(
        "[llm]\nbackend = \"openai\"\nendpoint = \"{}\"\nmodel = \"fake-model\"\ntimeout_secs = 90\nbackoff_initial_ms = 10\n",
        server.endpoint()
    );
    let p = Project::new("x\n", &["source_len"], &table);
    let started = std::time::Instant::now();
    let out = run(koas()
        .args(["llm", "calibrate", "--deadline", "2"])
        .arg(p.pipeline()));
    let elapsed = started.elapsed();
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("DEADLINE_EXCEEDED"), "{err}");
    assert!(
        err.contains("calibration") && err.contains("2 s") && err.contains("--deadline"),
        "{err}"
    );
    assert_eq!(server.requests(), 1, "no retry past the deadline");
    // Generous: one 90 s attempt (or 4 of them) is what must not happen.
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
    let log = std::fs::read_to_string(p.ws().join("llm/exchanges.jsonl")).expect("log");
    assert!(log.contains("DEADLINE_EXCEEDED"), "{log}");
}

#[test]
fn calibrate_reports_the_servers_error_message() {
    let error = r#"{"error": {"message": "model 'fake-model' is not loaded", "type": "invalid_request_error"}}"#;
    let server = HostileServer::start(Hostile::Answer("application/json", error.to_string()));
    let out = run(koas().args([
        "llm",
        "calibrate",
        "--llm-backend",
        "openai",
        "--llm-endpoint",
        &server.endpoint(),
        "--llm-model",
        "fake-model",
    ]));
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("model 'fake-model' is not loaded"), "{err}");
    assert!(!err.contains("[DONE]"), "{err}");
    assert_eq!(server.requests(), 1, "the server's refusal is not retried");

    let page = "<!DOCTYPE html><html><head><title>Open WebUI</title></head><body></body></html>";
    let server = HostileServer::start(Hostile::Answer("text/html", page.to_string()));
    let out = ping(&server.endpoint(), &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("HTML page") && err.contains("Open WebUI"),
        "{err}"
    );
}

#[test]
fn calibrate_without_a_pipeline_logs_to_dot_koas_llm_once() {
    let server = FakeServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(koas()
        .args([
            "llm",
            "calibrate",
            "--llm-backend",
            "openai",
            "--llm-endpoint",
            &server.endpoint(),
            "--llm-model",
            "fake-model",
        ])
        .current_dir(dir.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = dir.path().join(".koas/llm/exchanges.jsonl");
    let text = std::fs::read_to_string(&log).expect("the calibration log");
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.lines()
            .all(|l| l.contains("\"purpose\":\"calibration\"")),
        "{text}"
    );
    assert!(!dir.path().join(".koas/llm/llm").exists(), "doubled llm/");
    assert!(
        !dir.path().join(".koas/.koas").exists(),
        "no response cache"
    );
}
