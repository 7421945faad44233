//! The service's features end to end against loopback servers: response
//! cache, replay, budgets, the in-flight bound, sovereignty, secrets,
//! calibration and session metadata.

use crate::support::{dead_port_url, MockServer, Proto, Reply, TEST_KEY};
use koas_kernel_api::LlmRequest;
use koas_llm::{
    calibrate, read_exchanges, AbortReason, ExchangeSource, LlmService, LogLinesProgress,
    ReplaySource,
};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn req(prompt: &str) -> LlmRequest {
    LlmRequest::new("edit", prompt).system("sys")
}

#[test]
fn an_unchanged_rerun_makes_zero_llm_calls() {
    let server = MockServer::start(
        vec![],
        Some(Proto::Openai.stream(&["answer"], Some((3, 1)))),
    );
    let ws = tempfile::tempdir().unwrap();
    let config = Proto::Openai.config(&server.url());
    let first = LlmService::new(config.clone(), ws.path()).unwrap();
    for p in ["a", "b", "a"] {
        first.complete(&req(p)).unwrap();
    }
    assert_eq!(
        server.request_count(),
        2,
        "the repeated prompt came from the cache"
    );
    assert_eq!(first.session_metadata().calls.cache, 1);

    let rerun = LlmService::new(config.clone(), ws.path()).unwrap();
    for p in ["a", "b"] {
        let r = rerun.complete(&req(p)).unwrap();
        assert!(r.cached);
        assert_eq!(r.text, "answer");
    }
    assert_eq!(server.request_count(), 2, "re-run made no call");
    // A different model or parameter is a different key.
    rerun.complete(&req("a").temperature(0.0)).unwrap();
    assert_eq!(server.request_count(), 3);
    let log = read_exchanges(&ws.path().join("llm/exchanges.jsonl")).unwrap();
    assert_eq!(log.len(), 6);
    assert_eq!(
        log.iter()
            .filter(|e| e.source == ExchangeSource::Cache)
            .count(),
        3
    );
    let seqs: Vec<u64> = log.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (0..6).collect::<Vec<_>>(),
        "append-only numbering continues"
    );
}

#[test]
fn replay_answers_from_the_log_without_network() {
    let server = MockServer::start(
        vec![
            Proto::Ollama.stream(&["first ", "answer"], Some((2, 2))),
            Proto::Ollama.stream(&["{\"ops\": []}"], Some((2, 2))),
        ],
        None,
    );
    let ws = tempfile::tempdir().unwrap();
    let config = Proto::Ollama.config(&server.url());
    let live = LlmService::builder(config.clone(), ws.path())
        .cache_dir(None)
        .build()
        .unwrap();
    let a = live.complete(&req("one")).unwrap();
    let b = live.complete(&req("two")).unwrap();
    drop(server);

    let log = ws.path().join("llm/exchanges.jsonl");
    let source = ReplaySource::from_exchange_log(&log).unwrap();
    assert_eq!(source.len(), 2);
    let mut offline = config.clone();
    offline.endpoint = Some(dead_port_url());
    let replay = LlmService::replay(offline, ws.path(), source).unwrap();
    assert_eq!(replay.complete(&req("two")).unwrap().text, b.text);
    let ra = replay.complete(&req("one")).unwrap();
    // A replayed answer is what the original run saw: the model's, not a
    // cached one, so a kernel counting cached answers writes the same.
    assert_eq!((ra.text.as_str(), ra.cached), (a.text.as_str(), a.cached));
    assert!(!ra.cached);
    let miss = replay.complete(&req("three")).unwrap_err();
    assert_eq!(miss.code(), "REPLAY_MISS");
    assert!(miss.to_string().contains("sha256:"), "{miss}");
    let meta = replay.session_metadata();
    assert_eq!(
        (meta.mode.as_str(), meta.calls.replay, meta.calls.backend),
        ("replay", 2, 0)
    );
    assert!(ws.path().join("llm/replay-exchanges.jsonl").exists());
    assert_eq!(
        read_exchanges(&log).unwrap().len(),
        2,
        "the replayed log is not written to"
    );
}

#[test]
fn replay_detects_a_tampered_log() {
    let server = MockServer::start(
        vec![Proto::Openai.stream(&["{\"x\": 1}"], Some((1, 1)))],
        None,
    );
    let ws = tempfile::tempdir().unwrap();
    let svc = LlmService::new(Proto::Openai.config(&server.url()), ws.path()).unwrap();
    svc.complete(&req("p")).unwrap();
    let log = ws.path().join("llm/exchanges.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(
        &log,
        text.replace(
            "\"canonical_text\":\"{\\\"x\\\": 1}\"",
            "\"canonical_text\":\"{\\\"x\\\": 2}\"",
        ),
    )
    .unwrap();
    let err = ReplaySource::from_exchange_log(&log).unwrap_err();
    assert_eq!(err.code(), "REPLAY_LOG");
    assert!(err.to_string().contains("drift"), "{err}");
    std::fs::write(&log, "{not json}\n").unwrap();
    assert!(ReplaySource::from_exchange_log(&log)
        .unwrap_err()
        .to_string()
        .contains("line 1"));
}

#[test]
fn b2_exhaustion_stops_all_calls_and_is_recorded() {
    let server = MockServer::start(vec![], Some(Proto::Openai.stream(&["ok"], Some((40, 10)))));
    let ws = tempfile::tempdir().unwrap();
    let mut config = Proto::Openai.config(&server.url());
    config.max_tokens = 50;
    config.budget_per_run = 140;
    let svc = LlmService::new(config, ws.path()).unwrap();
    svc.complete(&req("first")).unwrap(); // worst case 3 + 50, real 50
    svc.complete(&req("second")).unwrap(); // 100 used
    let err = svc.complete(&req("third")).unwrap_err(); // 100 + 53 > 140: not executed
    assert_eq!(err.code(), "SESSION_BUDGET_EXHAUSTED", "{err}");
    assert_eq!(server.request_count(), 2);
    let meta = svc.session_metadata();
    assert_eq!(meta.abort_reason, Some(AbortReason::SessionBudgetExhausted));
    assert_eq!(meta.tokens_used, 100);
    assert_eq!(
        svc.complete(&req("fourth")).unwrap_err().code(),
        "SESSION_ABORTED"
    );
    let json = serde_json::to_value(&meta).unwrap();
    assert_eq!(json["abort_reason"], "SESSION_BUDGET_EXHAUSTED");
}

#[test]
fn b1_refuses_an_oversized_prompt_without_calling() {
    let server = MockServer::start(vec![], Some(Proto::Openai.stream(&["ok"], Some((1, 1)))));
    let ws = tempfile::tempdir().unwrap();
    let mut config = Proto::Openai.config(&server.url());
    config.budget_per_call = 100;
    let svc = LlmService::new(config, ws.path()).unwrap();
    let err = svc.complete(&req(&"word ".repeat(200))).unwrap_err();
    assert_eq!(err.code(), "CALL_BUDGET_EXCEEDED");
    assert_eq!(server.request_count(), 0);
    assert!(
        svc.complete(&req("small")).is_ok(),
        "B1 refusals do not abort the session"
    );
}

#[test]
fn the_host_keeps_exactly_max_in_flight_requests_busy() {
    let server = MockServer::start(
        vec![],
        Some(
            Proto::Openai
                .full("ok", Some((1, 1)))
                .delayed(Duration::from_millis(150)),
        ),
    );
    let ws = tempfile::tempdir().unwrap();
    let mut config = Proto::Openai.config(&server.url());
    config.stream = false;
    config.max_in_flight = 3;
    let svc = LlmService::builder(config, ws.path())
        .cache_dir(None)
        .build()
        .unwrap();
    let requests: Vec<LlmRequest> = (0..9).map(|i| req(&format!("part {i}"))).collect();
    // Callers beyond the bound: 9 threads submit at once.
    std::thread::scope(|s| {
        for r in &requests {
            let svc = &svc;
            s.spawn(move || svc.complete(r).unwrap());
        }
    });
    assert_eq!(server.peak_in_flight(), 3);
    let results = svc.complete_many(&requests);
    assert!(results.iter().all(|r| r.is_ok()));
    assert_eq!(server.request_count(), 18);
    assert!(server.peak_in_flight() <= 3);
}

#[test]
fn strict_sovereignty_refuses_remote_endpoints_and_anthropic() {
    let ws = tempfile::tempdir().unwrap();
    let remote = koas_llm::LlmConfig::new(
        koas_llm::BackendKind::Ollama,
        "http://gpu.example.invalid:11434",
        "m",
    );
    let err = LlmService::new(remote.clone(), ws.path()).err().unwrap();
    assert_eq!(err.code(), "SOVEREIGNTY");
    assert!(err.to_string().contains("gpu.example.invalid"));
    let mut allowed = remote;
    allowed.local_hosts = vec!["gpu.example.invalid".into()];
    assert!(
        LlmService::new(allowed, ws.path()).is_ok(),
        "declared-local hosts pass"
    );

    let mut claude = Proto::Anthropic.config("http://127.0.0.1:1");
    claude.strict_sovereign = true;
    let err = LlmService::new(claude.clone(), ws.path()).err().unwrap();
    assert_eq!(err.code(), "SOVEREIGNTY");
    claude.strict_sovereign = false;
    claude.api_key_env = Some("KOAS_LLM_TEST_UNSET_KEY_VAR".into());
    let err = LlmService::new(claude, ws.path()).err().unwrap();
    assert_eq!(err.code(), "MISSING_API_KEY");
    assert!(err.to_string().contains("KOAS_LLM_TEST_UNSET_KEY_VAR"));
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn all_files_under(dir: &std::path::Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.push_str(&all_files_under(&path));
        } else {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
    out
}

#[test]
fn the_api_key_never_appears_in_logs_records_or_errors() {
    // The server echoes the key back in an error body and in model output.
    let leak = format!("{{\"type\":\"error\",\"error\":{{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key {TEST_KEY}\"}}}}");
    let server = MockServer::start(
        vec![
            Reply::status(500, &leak),
            Proto::Anthropic.stream(&["your key is ", TEST_KEY], Some((1, 1))),
            Reply::status(401, &leak),
        ],
        None,
    );
    let ws = tempfile::tempdir().unwrap();
    let config = Proto::Anthropic.config(&server.url());
    let lines = Captured::default();
    let svc = LlmService::builder(config.clone(), ws.path())
        .progress(Box::new(LogLinesProgress::new(Box::new(lines.clone()))))
        .build()
        .unwrap();
    let ok = svc.complete(&req("p")).unwrap();
    let err = svc.complete(&req("q")).unwrap_err();
    assert_eq!(
        server.requests()[0].header("x-api-key"),
        Some(TEST_KEY),
        "the key was really sent"
    );

    let mut seen = vec![
        ok.text.clone(),
        err.to_string(),
        format!("{err:?}"),
        format!("{config:?}"),
        serde_json::to_string(&config).unwrap(),
        serde_json::to_string(&svc.session_metadata()).unwrap(),
        format!("{:?}", svc.session_metadata()),
        String::from_utf8(lines.0.lock().unwrap().clone()).unwrap(),
        all_files_under(ws.path()),
        format!(
            "{:?}",
            koas_llm::ApiKey::from_env(crate::support::TEST_KEY_VAR)
        ),
    ];
    let ping_err = {
        let s = MockServer::start(vec![], Some(Reply::status(401, &leak)));
        koas_llm::ping(&Proto::Anthropic.config(&s.url())).unwrap_err()
    };
    seen.push(ping_err.to_string());
    assert!(
        seen[7].contains("retrying"),
        "progress lines were captured: {}",
        seen[7]
    );
    assert!(
        seen[8].contains("<redacted>"),
        "the log kept the redacted text"
    );
    for (i, text) in seen.iter().enumerate() {
        assert!(!text.contains(TEST_KEY), "item {i} leaks the key: {text}");
    }
    assert_eq!(
        svc.session_metadata().api_key_env.as_deref(),
        Some(crate::support::TEST_KEY_VAR),
        "only the variable's name is recorded"
    );
}

#[test]
fn calibration_passes_when_only_formatting_varies() {
    let answers = [
        "{\"calibration\": \"koas\", \"version\": 1, \"items\": [1, 2, 3]}",
        "Sure!\n```json\n{\"items\": [1,2,3], \"version\": 1, \"calibration\": \"koas\"}\n```",
        "  {\r\n  \"version\": 1,\r\n  \"calibration\": \"koas\",\r\n  \"items\": [1, 2, 3]\r\n}",
    ];
    let server = MockServer::start(
        answers
            .iter()
            .map(|a| Proto::Openai.stream(&[a], Some((20, 15))))
            .collect(),
        Some(Proto::Openai.stream(&[answers[0]], Some((20, 15)))),
    );
    let ws = tempfile::tempdir().unwrap();
    let svc = LlmService::new(Proto::Openai.config(&server.url()), ws.path()).unwrap();
    let report = calibrate(&svc).unwrap();
    assert!(report.passed, "{}", report.verdict);
    assert_eq!(report.runs.len(), 3);
    for r in server.requests() {
        assert_eq!(r.json()["temperature"], 0.0);
    }
    // Calibration never reads the cache: a second calibration calls again.
    calibrate(&svc).ok();
    assert_eq!(server.request_count(), 6);
    let log = read_exchanges(&ws.path().join("llm/exchanges.jsonl")).unwrap();
    assert!(log.iter().all(|e| e.purpose == "calibration"));
}

#[test]
fn calibration_fails_on_drift() {
    let server = MockServer::start(
        vec![
            Proto::Openai.stream(
                &["{\"calibration\": \"koas\", \"version\": 1, \"items\": [1, 2, 3]}"],
                None,
            ),
            Proto::Openai.stream(
                &["{\"calibration\": \"koas\", \"version\": 2, \"items\": [1, 2, 3]}"],
                None,
            ),
            Proto::Openai.stream(
                &["{\"calibration\": \"koas\", \"version\": 1, \"items\": [1, 2, 3]}"],
                None,
            ),
        ],
        None,
    );
    let ws = tempfile::tempdir().unwrap();
    let svc = LlmService::new(Proto::Openai.config(&server.url()), ws.path()).unwrap();
    let report = calibrate(&svc).unwrap();
    assert!(!report.passed);
    assert_eq!(
        report.require_pass().unwrap_err().code(),
        "CALIBRATION_FAILED"
    );
}

#[test]
fn session_metadata_records_the_frozen_parameters_and_canonicalizer() {
    let ws = tempfile::tempdir().unwrap();
    let mut config = Proto::Ollama.config("http://127.0.0.1:9");
    config.edit_model = Some("mistral:instruct".into());
    config.context_window = 8192;
    let svc = LlmService::new(config, ws.path()).unwrap();
    let meta = serde_json::to_value(svc.session_metadata()).unwrap();
    assert_eq!(meta["models"]["edit"], "mistral:instruct");
    assert_eq!(meta["context_window"], 8192);
    assert_eq!(meta["max_tokens"], 2048);
    assert_eq!(meta["temperature"], 0.1);
    let st = koas_extract::self_test().unwrap();
    assert_eq!(meta["canonicalizer"]["self_test_hash"], st.output_hash);
    assert_eq!(meta["canonicalizer"]["source_hash"], st.source_hash);
}

#[test]
fn an_answer_that_stayed_empty_is_cached_too() {
    let server = MockServer::start(vec![], Some(Proto::Ollama.stream(&[], Some((2, 0)))));
    let ws = tempfile::tempdir().unwrap();
    let config = Proto::Ollama.config(&server.url());
    let first = LlmService::new(config.clone(), ws.path()).unwrap();
    assert_eq!(first.complete(&req("p")).unwrap().text, "");
    assert_eq!(
        server.request_count(),
        3,
        "initial attempt + 2 empty retries"
    );
    let rerun = LlmService::new(config, ws.path()).unwrap();
    let r = rerun.complete(&req("p")).unwrap();
    assert_eq!((r.text.as_str(), r.cached), ("", true));
    assert_eq!(server.request_count(), 3, "the re-run made no call");
    let log = read_exchanges(&ws.path().join("llm/exchanges.jsonl")).unwrap();
    assert_eq!(log[1].outcome, koas_llm::ExchangeOutcome::EmptyResponse);
}
