//! Wire-level tests: real HTTP servers on 127.0.0.1 speaking the exact
//! Ollama, OpenAI and Anthropic formats, streaming included. Every case
//! runs against all three backends.

use crate::support::{dead_port_url, MockServer, Proto, Reply, ALL};
use koas_kernel_api::LlmRequest;
use koas_llm::{read_exchanges, ExchangeOutcome, LlmConfig, LlmService};
use std::time::{Duration, Instant};

fn service(config: LlmConfig, dir: &std::path::Path) -> LlmService {
    LlmService::builder(config, dir)
        .cache_dir(None)
        .build()
        .expect("service builds")
}

fn request(prompt: &str) -> LlmRequest {
    LlmRequest::new("edit", prompt).system("You read documents.")
}

#[test]
fn streaming_success_reads_text_usage_and_the_exact_request() {
    for proto in ALL {
        let server = MockServer::start(
            vec![proto.stream(&["{\"ops\": ", "[]}"], Some((11, 7)))],
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        let svc = service(proto.config(&server.url()), dir.path());
        let r = svc.complete(&request("Read part 1")).expect("success");
        assert_eq!(r.text, "{\"ops\": []}", "{proto:?}");
        assert_eq!(
            (r.prompt_tokens, r.completion_tokens, r.tokens_estimated),
            (11, 7, false),
            "{proto:?}"
        );
        assert!(!r.cached);

        let req = &server.requests()[0];
        assert_eq!(
            (req.method.as_str(), req.path.as_str()),
            ("POST", proto.chat_path()),
            "{proto:?}"
        );
        let body = req.json();
        assert_eq!(body["model"], "test-model");
        assert_eq!(body["stream"], true);
        assert_eq!(proto.user_prompt(&body).as_deref(), Some("Read part 1"));
        assert_eq!(proto.temperature(&body), Some(0.1));
        match proto {
            Proto::Ollama => {
                assert_eq!(body["options"]["num_predict"], 2048);
                assert_eq!(body["options"]["num_ctx"], 4096);
                assert_eq!(body["messages"][0]["role"], "system");
            }
            Proto::Openai => {
                assert_eq!(body["max_tokens"], 2048);
                assert_eq!(body["stream_options"]["include_usage"], true);
                assert_eq!(body["messages"][0]["content"], "You read documents.");
            }
            Proto::Anthropic => {
                assert_eq!(body["max_tokens"], 2048);
                assert_eq!(body["system"], "You read documents.");
                assert_eq!(req.header("x-api-key"), Some(crate::support::TEST_KEY));
                assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
            }
        }

        let log = read_exchanges(&dir.path().join("llm/exchanges.jsonl")).unwrap();
        assert_eq!(log.len(), 1);
        let e = &log[0];
        assert_eq!(e.outcome, ExchangeOutcome::Ok);
        assert_eq!(e.model, "test-model");
        assert_eq!(e.raw_text, "{\"ops\": []}");
        assert_eq!(e.canonical_text, "{\"ops\": []}");
        assert_eq!(e.extraction.canonical_status, "OK");
        assert_eq!(e.extraction.canonical_json.as_deref(), Some("{\"ops\":[]}"));
        assert!(e.input_hash.starts_with("sha256:"));
        assert_eq!(
            (e.prompt_tokens, e.completion_tokens, e.retries),
            (11, 7, 0)
        );
    }
}

#[test]
fn non_streaming_success() {
    for proto in ALL {
        let server = MockServer::start(vec![proto.full("[]", Some((5, 1)))], None);
        let dir = tempfile::tempdir().unwrap();
        let mut config = proto.config(&server.url());
        config.stream = false;
        let r = service(config, dir.path())
            .complete(&request("p"))
            .expect("success");
        assert_eq!(
            (r.text.as_str(), r.prompt_tokens, r.completion_tokens),
            ("[]", 5, 1),
            "{proto:?}"
        );
        assert_eq!(server.requests()[0].json()["stream"], false);
    }
}

#[test]
fn http_500s_then_success_is_retried_transparently() {
    for proto in ALL {
        let server = MockServer::start(
            vec![
                Reply::status(500, "{\"error\":\"boom\"}"),
                Reply::status(503, "{\"error\":\"busy\"}"),
                proto.stream(&["ok"], Some((3, 1))),
            ],
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        let r = service(proto.config(&server.url()), dir.path()).complete(&request("p"));
        assert_eq!(r.expect("third attempt succeeds").text, "ok", "{proto:?}");
        assert_eq!(server.request_count(), 3);
        let log = read_exchanges(&dir.path().join("llm/exchanges.jsonl")).unwrap();
        assert_eq!(log[0].retries, 2);
    }
}

#[test]
fn persistent_500s_end_in_transport_failure_and_abort_the_session() {
    for proto in ALL {
        let server = MockServer::start(vec![], Some(Reply::status(500, "{\"error\":\"down\"}")));
        let dir = tempfile::tempdir().unwrap();
        let svc = service(proto.config(&server.url()), dir.path());
        let err = svc.complete(&request("p")).unwrap_err();
        assert_eq!(err.code(), "TRANSPORT_FAILURE", "{proto:?}");
        let text = err.to_string();
        assert!(text.contains(&server.url()), "names the endpoint: {text}");
        assert!(text.contains("4 attempt"), "1 + 3 retries: {text}");
        assert!(text.contains("HTTP 500"), "names the last error: {text}");
        assert_eq!(server.request_count(), 4);
        // After a transport failure the session is aborted: further calls
        // fail at once and make no request.
        assert_eq!(
            svc.complete(&request("q")).unwrap_err().code(),
            "SESSION_ABORTED"
        );
        assert_eq!(server.request_count(), 4);
        let meta = svc.session_metadata();
        assert_eq!(
            meta.abort_reason,
            Some(koas_llm::AbortReason::TransportFailure)
        );
        assert_eq!(meta.calls.transport_failures, 1);
        let log = read_exchanges(&dir.path().join("llm/exchanges.jsonl")).unwrap();
        assert_eq!(log[0].outcome, ExchangeOutcome::TransportFailure);
        assert!(log[0]
            .error
            .as_deref()
            .unwrap_or("")
            .contains("TRANSPORT_FAILURE"));
    }
}

#[test]
fn client_errors_are_not_retried() {
    for proto in ALL {
        let server = MockServer::start(
            vec![],
            Some(Reply::status(404, "{\"error\":\"model not found\"}")),
        );
        let dir = tempfile::tempdir().unwrap();
        let err = service(proto.config(&server.url()), dir.path())
            .complete(&request("p"))
            .unwrap_err();
        assert!(err.to_string().contains("1 attempt"), "{err}");
        assert_eq!(server.request_count(), 1, "{proto:?}");
    }
}

#[test]
fn a_silent_server_times_out_per_attempt() {
    for proto in ALL {
        let server = MockServer::start(vec![], Some(Reply::Hang(Duration::from_secs(3))));
        let dir = tempfile::tempdir().unwrap();
        let mut config = proto.config(&server.url());
        config.timeout_secs = 0.3;
        config.max_retries = 1;
        let started = Instant::now();
        let err = service(config, dir.path())
            .complete(&request("p"))
            .unwrap_err();
        let elapsed = started.elapsed();
        assert_eq!(err.code(), "TRANSPORT_FAILURE", "{proto:?}");
        assert!(err.to_string().contains("2 attempt"), "{err}");
        assert!(
            elapsed < Duration::from_millis(2500),
            "each attempt is cut at its deadline: {elapsed:?}"
        );
        assert_eq!(server.request_count(), 2);
    }
}

#[test]
fn connection_refused_is_retried_then_reported() {
    for proto in ALL {
        let url = dead_port_url();
        let dir = tempfile::tempdir().unwrap();
        let err = service(proto.config(&url), dir.path())
            .complete(&request("p"))
            .unwrap_err();
        assert_eq!(err.code(), "TRANSPORT_FAILURE", "{proto:?}");
        let text = err.to_string();
        assert!(text.contains(&url) && text.contains("4 attempt"), "{text}");
    }
}

#[test]
fn a_slow_drip_within_the_deadline_succeeds() {
    for proto in ALL {
        let pieces = proto.stream_pieces(&["sl", "ow", " ", "dr", "ip"], Some((2, 5)));
        let server = MockServer::start(
            vec![Reply::stream(
                proto.content_type(),
                pieces,
                Duration::from_millis(40),
            )],
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        let r = service(proto.config(&server.url()), dir.path()).complete(&request("p"));
        assert_eq!(r.expect("drip completes").text, "slow drip", "{proto:?}");
    }
}

#[test]
fn a_slow_drip_past_the_deadline_fails_and_keeps_the_partial_text() {
    for proto in ALL {
        let many: Vec<&str> = vec!["tok "; 40];
        let pieces = proto.stream_pieces(&many, None);
        let server = MockServer::start(
            vec![],
            Some(Reply::stream(
                proto.content_type(),
                pieces,
                Duration::from_millis(50),
            )),
        );
        let dir = tempfile::tempdir().unwrap();
        let mut config = proto.config(&server.url());
        config.timeout_secs = 0.6;
        config.max_retries = 0;
        let err = service(config, dir.path())
            .complete(&request("p"))
            .unwrap_err();
        assert_eq!(err.code(), "TRANSPORT_FAILURE", "{proto:?}");
        assert!(
            err.to_string().contains("deadline") || err.to_string().contains("timed out"),
            "{err}"
        );
        let log = read_exchanges(&dir.path().join("llm/exchanges.jsonl")).unwrap();
        assert_eq!(log[0].outcome, ExchangeOutcome::TransportFailure);
        assert!(
            log[0].raw_text.starts_with("tok tok"),
            "partial text kept: {:?}",
            log[0].raw_text
        );
    }
}

#[test]
fn malformed_model_json_is_a_result_not_a_failure() {
    for proto in ALL {
        let server = MockServer::start(vec![proto.stream(&["{\"ops\": [,]}"], Some((1, 1)))], None);
        let dir = tempfile::tempdir().unwrap();
        let r = service(proto.config(&server.url()), dir.path()).complete(&request("p"));
        assert_eq!(r.expect("a result").text, "{\"ops\": [,]}", "{proto:?}");
        let log = read_exchanges(&dir.path().join("llm/exchanges.jsonl")).unwrap();
        assert_eq!(log[0].outcome, ExchangeOutcome::Ok);
        assert_eq!(log[0].extraction.canonical_status, "PARSE_ERROR");
        assert!(log[0].extraction.rejection.is_some());
    }
}

#[test]
fn malformed_wire_data_is_a_transport_error() {
    let broken = |proto: Proto| {
        match proto {
        Proto::Ollama => "{\"message\":{\"content\":\"par\"},\"done\":false}\n{not json\n".to_string(),
        Proto::Openai => "data: {\"choices\":[{\"delta\":{\"content\":\"par\"}}]}\n\ndata: {not json\n\n".to_string(),
        Proto::Anthropic => "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"par\"}}\n\nevent: content_block_delta\ndata: {not json\n\n".to_string(),
    }
    };
    for proto in ALL {
        let server = MockServer::start(
            vec![],
            Some(Reply::raw(proto.content_type(), &broken(proto))),
        );
        let dir = tempfile::tempdir().unwrap();
        let mut config = proto.config(&server.url());
        config.max_retries = 1;
        let err = service(config, dir.path())
            .complete(&request("p"))
            .unwrap_err();
        assert_eq!(err.code(), "TRANSPORT_FAILURE", "{proto:?}");
        assert!(err.to_string().contains("malformed"), "{err}");
        assert_eq!(server.request_count(), 2, "protocol errors are retried");
        let log = read_exchanges(&dir.path().join("llm/exchanges.jsonl")).unwrap();
        assert_eq!(log[0].raw_text, "par", "partial text kept");
    }
}

#[test]
fn empty_output_is_retried_with_temperature_nudges() {
    for proto in ALL {
        let server = MockServer::start(
            vec![
                proto.stream(&[], Some((4, 0))),
                proto.stream(&["  \n"], Some((4, 1))),
                proto.stream(&["finally"], Some((4, 2))),
            ],
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        let r = service(proto.config(&server.url()), dir.path())
            .complete(&request("p"))
            .unwrap();
        assert_eq!(r.text, "finally", "{proto:?}");
        let temps: Vec<f64> = server
            .requests()
            .iter()
            .map(|q| proto.temperature(&q.json()).unwrap())
            .collect();
        assert_eq!(temps.len(), 3);
        for (got, want) in temps.iter().zip([0.10, 0.15, 0.20]) {
            assert!((got - want).abs() < 1e-9, "{temps:?}");
        }
        let log = read_exchanges(&dir.path().join("llm/exchanges.jsonl")).unwrap();
        assert_eq!(log[0].empty_retries, 2);
        assert_eq!(log[0].total_tokens_spent, 4 + 4 + 1 + 4 + 2);
    }
}

#[test]
fn output_that_stays_empty_is_returned_as_empty_and_logged() {
    for proto in ALL {
        let server = MockServer::start(vec![], Some(proto.stream(&[], Some((4, 0)))));
        let dir = tempfile::tempdir().unwrap();
        let r = service(proto.config(&server.url()), dir.path())
            .complete(&request("p"))
            .unwrap();
        assert_eq!(r.text, "", "{proto:?}");
        assert_eq!(server.request_count(), 3);
        let log = read_exchanges(&dir.path().join("llm/exchanges.jsonl")).unwrap();
        assert_eq!(log[0].outcome, ExchangeOutcome::EmptyResponse);
        assert_eq!(log[0].extraction.canonical_status, "NO_JSON");
    }
}

#[test]
fn multiple_json_blocks_are_recorded_as_ambiguous() {
    for proto in ALL {
        let server = MockServer::start(
            vec![proto.stream(&["{\"a\": 1}\n", "{\"b\": 2}"], Some((1, 1)))],
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        service(proto.config(&server.url()), dir.path())
            .complete(&request("p"))
            .unwrap();
        let log = read_exchanges(&dir.path().join("llm/exchanges.jsonl")).unwrap();
        assert_eq!(
            log[0].extraction.canonical_status, "AMBIGUOUS_MULTI_BLOCK",
            "{proto:?}"
        );
    }
}

#[test]
fn missing_usage_fields_are_estimated_and_flagged() {
    for proto in ALL {
        for stream in [true, false] {
            let reply = if stream {
                proto.stream(&["twelve chars"], None)
            } else {
                proto.full("twelve chars", None)
            };
            let server = MockServer::start(vec![reply], None);
            let dir = tempfile::tempdir().unwrap();
            let mut config = proto.config(&server.url());
            config.stream = stream;
            let svc = service(config, dir.path());
            let r = svc
                .complete(&LlmRequest::new("edit", "sixteen bytes!!!"))
                .unwrap();
            assert!(r.tokens_estimated, "{proto:?} stream={stream}");
            assert_eq!((r.prompt_tokens, r.completion_tokens), (4, 3));
            assert_eq!(svc.session_metadata().calls.estimated_usage, 1);
            let log = read_exchanges(&dir.path().join("llm/exchanges.jsonl")).unwrap();
            assert!(log[0].tokens_estimated);
        }
    }
}

#[test]
fn a_stop_marker_ends_generation_early_and_keeps_the_text_up_to_it() {
    for proto in ALL {
        let mut pieces = proto.stream_pieces(
            &["BEGIN_ANSWER\n[]\nEND_AN", "SWER\nrambling", " on and on"],
            Some((9, 9)),
        );
        // The server would keep the connection busy for 5 s after the marker.
        let marker_at = pieces
            .iter()
            .position(|p| p.contains("SWER\\nrambling"))
            .unwrap();
        let tail = pieces.split_off(marker_at + 1);
        let mut timed: Vec<(Duration, String)> =
            pieces.into_iter().map(|p| (Duration::ZERO, p)).collect();
        timed.extend(tail.into_iter().map(|p| (Duration::from_secs(5), p)));
        let server = MockServer::start(
            vec![Reply::Pieces {
                status: 200,
                content_type: proto.content_type(),
                pieces: timed,
            }],
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        let mut config = proto.config(&server.url());
        config.timeout_secs = 10.0;
        let started = Instant::now();
        let r = service(config, dir.path())
            .complete(&request("p").stop_marker("END_ANSWER"))
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{proto:?} did not stop early"
        );
        assert_eq!(r.text, "BEGIN_ANSWER\n[]\nEND_ANSWER", "{proto:?}");
        assert!(r.stopped_at_marker);
        let log = read_exchanges(&dir.path().join("llm/exchanges.jsonl")).unwrap();
        assert!(log[0].stopped_at_marker);
        assert_eq!(log[0].extraction.canonical_status, "NO_JSON");
    }
}

#[test]
fn ping_lists_the_models() {
    for proto in ALL {
        let server = MockServer::start(vec![proto.models(&["test-model", "other:7b"])], None);
        let report = koas_llm::ping(&proto.config(&server.url())).expect("ping");
        assert_eq!(report.models, vec!["test-model", "other:7b"], "{proto:?}");
        assert_eq!(
            report.configured["default"],
            ("test-model".to_string(), true)
        );
        let path = &server.requests()[0].path;
        assert_eq!(
            path,
            match proto {
                Proto::Ollama => "/api/tags",
                _ => "/v1/models",
            }
        );
    }
    let err = koas_llm::ping(&Proto::Openai.config(&dead_port_url())).unwrap_err();
    assert_eq!(err.code(), "TRANSPORT_FAILURE");
}

#[test]
fn openai_endpoint_may_end_in_v1() {
    let server = MockServer::start(
        vec![crate::support::openai::stream("m", &["x"], Some((1, 1)))],
        None,
    );
    let dir = tempfile::tempdir().unwrap();
    let config = Proto::Openai.config(&format!("{}/v1/", server.url()));
    service(config, dir.path()).complete(&request("p")).unwrap();
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");
}

/// The configured `max_tokens` is a ceiling: a request asking for more is
/// sent with the configured value, one asking for less keeps its own.
#[test]
fn the_configured_max_tokens_caps_every_request() {
    for proto in ALL {
        let server = MockServer::start(
            vec![
                proto.full("[]", Some((5, 1))),
                proto.full("[]", Some((5, 1))),
            ],
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        let mut config = proto.config(&server.url());
        config.stream = false;
        config.max_tokens = 300;
        let svc = service(config, dir.path());
        svc.complete(&request("asks for more").max_tokens(4096))
            .expect("success");
        svc.complete(&request("asks for less").max_tokens(100))
            .expect("success");
        let sent: Vec<serde_json::Value> = server
            .requests()
            .iter()
            .map(|r| {
                let body = r.json();
                match proto {
                    Proto::Ollama => body["options"]["num_predict"].clone(),
                    _ => body["max_tokens"].clone(),
                }
            })
            .collect();
        assert_eq!(
            sent,
            vec![serde_json::json!(300), serde_json::json!(100)],
            "{proto:?}"
        );
    }
}
