//! Two things the service learns from an answer, end to end against
//! loopback servers: when a prose answer is done (the request's
//! `prose_until`: cut at the first sentence end once long enough, logged
//! `ended_by: "enough"`), and what the server says it reused of the
//! prompt (llama.cpp's `timings.cache_n`, OpenAI-style `cached_tokens`,
//! Anthropic's `cache_read_input_tokens`), recorded in the exchange log
//! and added up in the session metadata, absent when the server said
//! nothing believable.

use crate::support::{anthropic, openai, MockServer, Proto, Reply};
use koas_kernel_api::LlmRequest;
use koas_llm::{read_exchanges, Exchange, LlmService};
use serde_json::{json, Value};
use std::time::Duration;

/// A model that was asked for a short paragraph and writes on and on.
const LONG_PROSE: [&str; 8] = [
    "The server starts ",
    "at boot. It reads ",
    "its configuration",
    ". It then opens ",
    "its ports and waits. ",
    "It logs every request. ",
    "It never stops. ",
    "It writes more and more.",
];

fn service(server: &MockServer, proto: Proto, stream: bool) -> (tempfile::TempDir, LlmService) {
    let ws = tempfile::tempdir().expect("tempdir");
    let mut config = proto.config(&server.url());
    config.stream = stream;
    let service = LlmService::builder(config, ws.path())
        .cache_dir(None)
        .build()
        .expect("service");
    (ws, service)
}

fn log(ws: &tempfile::TempDir) -> Vec<Exchange> {
    read_exchanges(&ws.path().join("llm/exchanges.jsonl")).expect("exchange log")
}

/// The exchange log's lines as raw JSON, to see which fields were written.
fn raw_log(ws: &tempfile::TempDir) -> Vec<Value> {
    std::fs::read_to_string(ws.path().join("llm/exchanges.jsonl"))
        .expect("exchange log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn a_streamed_prose_answer_ends_once_enough_is_written_and_is_logged_as_enough() {
    // After its text the server holds the stream for a minute: only an
    // answer cut by the host comes back (the attempt would time out).
    let events = openai::stream_events("test-model", &LONG_PROSE, Some((20, 60)));
    let held = events.len() - 3;
    let pieces = events
        .into_iter()
        .enumerate()
        .map(|(i, e)| match i == held {
            true => (Duration::from_secs(60), e),
            false => (Duration::ZERO, e),
        })
        .collect();
    let stream = Reply::Pieces {
        status: 200,
        content_type: "text/event-stream",
        pieces,
    };
    let server = MockServer::start(
        vec![stream],
        Some(Proto::Openai.stream(&LONG_PROSE, Some((20, 60)))),
    );
    let (ws, service) = service(&server, Proto::Openai, true);
    let answer = service
        .complete(&LlmRequest::new("edit", "Write one paragraph.").prose_until(30))
        .expect("answer");
    // "The server starts at boot." holds 26 characters: not enough; the
    // next sentence end is, once the word after it shows.
    assert_eq!(
        answer.text,
        "The server starts at boot. It reads its configuration."
    );
    assert_eq!(server.request_count(), 1, "no retry");
    let lines = log(&ws);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].ended_by.as_deref(), Some("enough"));
    assert_eq!(lines[0].params.prose_until, Some(30));
    assert!(!lines[0].stopped_at_marker);

    // Without the option the same answer runs to its end.
    let answer = service
        .complete(&LlmRequest::new("edit", "Write one paragraph."))
        .expect("answer");
    assert_eq!(answer.text, LONG_PROSE.concat());
    assert_eq!(log(&ws)[1].ended_by.as_deref(), Some("end"));
}

#[test]
fn a_whole_prose_answer_is_cut_after_the_fact_and_a_repeated_sentence_too() {
    let server = MockServer::start(
        vec![
            Proto::Openai.full(&LONG_PROSE.concat(), Some((20, 60))),
            Proto::Openai.full(
                "It opens the ports of the server. It waits. It opens the ports of the server. And",
                Some((20, 60)),
            ),
        ],
        None,
    );
    let (ws, service) = service(&server, Proto::Openai, false);
    let answer = service
        .complete(&LlmRequest::new("edit", "Write one paragraph.").prose_until(30))
        .expect("answer");
    assert_eq!(
        answer.text,
        "The server starts at boot. It reads its configuration."
    );
    let answer = service
        .complete(&LlmRequest::new("edit", "Another paragraph.").prose_until(1000))
        .expect("answer");
    assert_eq!(answer.text, "It opens the ports of the server. It waits.");
    let lines = log(&ws);
    assert_eq!(lines[0].ended_by.as_deref(), Some("enough"));
    assert_eq!(lines[1].ended_by.as_deref(), Some("repetition"));
}

/// An OpenAI-compatible stream whose last event carries `last` (usage,
/// timings) before `[DONE]`.
fn openai_stream_ending_with(last: Value) -> Reply {
    let mut events = openai::stream_events("test-model", &["An answer."], None);
    let done = events.pop().expect("[DONE]");
    events.push(format!("data: {last}\n\n"));
    events.push(done);
    Reply::stream("text/event-stream", events, Duration::ZERO)
}

/// A whole OpenAI-compatible answer with `extra` fields merged in.
fn openai_full_with(extra: Value) -> Reply {
    let mut body = json!({"id": "c", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "An answer."},
                     "finish_reason": "stop"}]});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    Reply::json(body)
}

/// An Anthropic stream whose `message_start` reports `usage`.
fn anthropic_stream_with(usage: Value) -> Reply {
    let mut events = anthropic::stream_events("test-model", &["An answer."], Some((1, 3)));
    events[0] = format!(
        "event: message_start\ndata: {}\n\n",
        json!({"type": "message_start", "message": {"id": "m", "type": "message",
            "role": "assistant", "content": [], "model": "test-model", "usage": usage}})
    );
    Reply::stream("text/event-stream", events, Duration::ZERO)
}

#[test]
fn the_prompt_tokens_a_server_reused_are_logged_and_added_up() {
    let usage = |p: u64, extra: Value| {
        let mut u = json!({"prompt_tokens": p, "completion_tokens": 3});
        if let (Some(u), Some(extra)) = (u.as_object_mut(), extra.as_object()) {
            u.extend(extra.clone());
        }
        u
    };
    // (protocol, stream, reply, prompt tokens and reuse to be logged)
    let cases: Vec<(Proto, bool, Reply, u64, Option<u64>)> = vec![
        // llama.cpp, streamed: `timings` in the last event.
        (
            Proto::Openai,
            true,
            openai_stream_ending_with(json!({"choices": [], "usage": usage(100, json!({})),
                "timings": {"cache_n": 64, "prompt_n": 36}})),
            100,
            Some(64),
        ),
        // llama.cpp, whole answer.
        (
            Proto::Openai,
            false,
            openai_full_with(json!({"usage": usage(90, json!({})), "timings": {"cache_n": 80}})),
            90,
            Some(80),
        ),
        // vLLM / OpenAI: `usage.prompt_tokens_details.cached_tokens`.
        (
            Proto::Openai,
            true,
            openai_stream_ending_with(json!({"choices": [],
                "usage": usage(50, json!({"prompt_tokens_details": {"cached_tokens": 32}}))})),
            50,
            Some(32),
        ),
        // A server that reports nothing: unknown, not 0.
        (
            Proto::Openai,
            true,
            Proto::Openai.stream(&["An answer."], Some((40, 3))),
            40,
            None,
        ),
        // Anthropic: the prompt is input + cache creation + cache read.
        (
            Proto::Anthropic,
            true,
            anthropic_stream_with(json!({"input_tokens": 10, "cache_creation_input_tokens": 5,
                "cache_read_input_tokens": 85, "output_tokens": 1})),
            100,
            Some(85),
        ),
        (
            Proto::Anthropic,
            false,
            Reply::json(json!({"id": "m", "type": "message", "role": "assistant",
                "model": "test-model", "content": [{"type": "text", "text": "An answer."}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 7, "cache_read_input_tokens": 0, "output_tokens": 3}})),
            7,
            Some(0),
        ),
        // Ollama says nothing of its cache.
        (
            Proto::Ollama,
            true,
            Proto::Ollama.stream(&["An answer."], Some((30, 3))),
            30,
            None,
        ),
    ];
    for (i, (proto, stream, reply, prompt, reused)) in cases.into_iter().enumerate() {
        let server = MockServer::start(vec![reply], None);
        let (ws, service) = service(&server, proto, stream);
        let answer = service
            .complete(&LlmRequest::new("edit", format!("prompt {i}")))
            .unwrap_or_else(|e| panic!("case {i}: {e}"));
        assert_eq!(answer.text, "An answer.", "case {i}");
        let line = &log(&ws)[0];
        assert_eq!(line.prompt_tokens, prompt, "case {i}");
        assert_eq!(line.reused_prompt_tokens, reused, "case {i}");
        assert_eq!(
            raw_log(&ws)[0].get("reused_prompt_tokens").is_some(),
            reused.is_some(),
            "case {i}: the field is written only when the server said"
        );
        let session = service.session_metadata();
        assert_eq!(session.prompt_tokens, prompt, "case {i}");
        assert_eq!(session.reused_prompt_tokens, reused, "case {i}");
    }
}

#[test]
fn a_reuse_count_that_is_not_believable_is_ignored() {
    let usage = |p: u64| json!({"prompt_tokens": p, "completion_tokens": 3});
    let hostile = [
        // More reused than the prompt holds.
        json!({"choices": [], "usage": usage(10), "timings": {"cache_n": 11}}),
        // Not a non-negative integer.
        json!({"choices": [], "usage": usage(10), "timings": {"cache_n": -1}}),
        json!({"choices": [], "usage": usage(10), "timings": {"cache_n": 2.5}}),
        json!({"choices": [], "usage": usage(10), "timings": {"cache_n": "8"}}),
        json!({"choices": [], "usage": usage(10), "timings": {"cache_n": null}}),
        json!({"choices": [], "usage": usage(10), "timings": [8]}),
        json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 3,
            "prompt_tokens_details": {"cached_tokens": 1e30}}}),
        // No prompt count to check it against.
        json!({"choices": [], "timings": {"cache_n": 8}}),
    ];
    for (i, last) in hostile.into_iter().enumerate() {
        let server = MockServer::start(vec![openai_stream_ending_with(last.clone())], None);
        let (ws, service) = service(&server, Proto::Openai, true);
        service
            .complete(&LlmRequest::new("edit", "p"))
            .unwrap_or_else(|e| panic!("case {i}: {e}"));
        assert_eq!(log(&ws)[0].reused_prompt_tokens, None, "case {i}: {last}");
        assert!(raw_log(&ws)[0].get("reused_prompt_tokens").is_none());
        assert_eq!(service.session_metadata().reused_prompt_tokens, None);
    }
    // A believable count next to a hostile one: the session adds up what
    // it can believe, over the answers that said.
    let server = MockServer::start(
        vec![
            openai_stream_ending_with(
                json!({"choices": [], "usage": usage(10), "timings": {"cache_n": 6}}),
            ),
            openai_stream_ending_with(
                json!({"choices": [], "usage": usage(20), "timings": {"cache_n": 99}}),
            ),
            openai_stream_ending_with(
                json!({"choices": [], "usage": usage(30), "timings": {"cache_n": 30}}),
            ),
        ],
        None,
    );
    let (_ws, service) = service(&server, Proto::Openai, true);
    for p in ["a", "b", "c"] {
        service
            .complete(&LlmRequest::new("edit", p))
            .expect("answer");
    }
    let session = service.session_metadata();
    assert_eq!(session.prompt_tokens, 60);
    assert_eq!(session.reused_prompt_tokens, Some(36));
    assert_eq!(service.prompt_totals(), (60, Some(36)));
}

/// A backend of an embedder's own that reports whatever it is given.
struct Reports {
    prompt: Option<u64>,
    reused: Option<u64>,
}

impl koas_llm::backend::Backend for Reports {
    fn kind(&self) -> koas_llm::BackendKind {
        koas_llm::BackendKind::Openai
    }

    fn endpoint(&self) -> &str {
        "http://127.0.0.1:9"
    }

    fn complete(
        &self,
        _call: &koas_llm::backend::BackendCall,
    ) -> Result<koas_llm::backend::BackendReply, koas_llm::TransportError> {
        Ok(koas_llm::backend::BackendReply {
            text: "An answer.".to_string(),
            prompt_tokens: self.prompt,
            completion_tokens: Some(3),
            reused_prompt_tokens: self.reused,
            ..Default::default()
        })
    }

    fn list_models(&self) -> Result<Vec<String>, koas_llm::TransportError> {
        Ok(vec!["test-model".to_string()])
    }
}

#[test]
fn a_custom_backend_s_reuse_count_is_checked_like_a_server_s() {
    let cases = [
        (Some(10), Some(50), None),
        (None, Some(5), None),
        (Some(10), Some(10), Some(10)),
    ];
    for (prompt, reused, logged) in cases {
        let ws = tempfile::tempdir().expect("tempdir");
        let service = LlmService::builder(Proto::Openai.config("http://127.0.0.1:9"), ws.path())
            .backend(std::sync::Arc::new(Reports { prompt, reused }))
            .cache_dir(None)
            .build()
            .expect("service");
        service
            .complete(&LlmRequest::new("edit", "p"))
            .expect("answer");
        assert_eq!(
            log(&ws)[0].reused_prompt_tokens,
            logged,
            "{prompt:?} {reused:?}"
        );
        assert_eq!(service.prompt_totals().1, logged);
    }
}

#[test]
fn an_answer_cut_short_still_knows_its_reuse_from_per_token_timings() {
    // llama.cpp with `timings_per_token`: every event says what the
    // prompt reused; the host cuts the answer before the last one.
    let timings = json!({"cache_n": 48, "prompt_n": 16, "predicted_n": 5});
    let mut events = vec![];
    for piece in LONG_PROSE {
        let event = json!({"id": "c", "object": "chat.completion.chunk", "model": "test-model",
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}],
            "timings": timings});
        events.push(format!("data: {event}\n\n"));
    }
    events.push("data: [DONE]\n\n".to_string());
    let server = MockServer::start(
        vec![Reply::stream("text/event-stream", events, Duration::ZERO)],
        None,
    );
    let (ws, service) = service(&server, Proto::Openai, true);
    let answer = service
        .complete(&LlmRequest::new("edit", "Write one paragraph.").prose_until(10))
        .expect("answer");
    assert_eq!(answer.text, "The server starts at boot.");
    let line = &log(&ws)[0];
    assert_eq!(line.ended_by.as_deref(), Some("enough"));
    assert_eq!((line.prompt_tokens, line.completion_tokens), (64, 5));
    assert!(!line.tokens_estimated);
    assert_eq!(line.reused_prompt_tokens, Some(48));
    // Asked for, since every endpoint is local under strict sovereignty.
    let body = server.requests()[0].json();
    assert_eq!(body["timings_per_token"], true, "{body}");
}

#[test]
fn per_token_timings_are_not_asked_of_a_server_that_may_not_be_local() {
    let server = MockServer::start(vec![], Some(Proto::Openai.stream(&["ok"], Some((3, 1)))));
    let ws = tempfile::tempdir().expect("tempdir");
    let mut config = Proto::Openai.config(&server.url());
    config.strict_sovereign = false;
    let service = LlmService::builder(config, ws.path())
        .cache_dir(None)
        .build()
        .expect("service");
    service
        .complete(&LlmRequest::new("edit", "p"))
        .expect("answer");
    // OpenAI's own API refuses a field it does not know.
    let body = server.requests()[0].json();
    assert!(body.get("timings_per_token").is_none(), "{body}");
    assert_eq!(body["stream_options"]["include_usage"], true);
}

#[test]
fn a_local_server_that_refuses_per_token_timings_is_asked_again_without_them() {
    // An older vLLM forbids a field it does not know.
    let refusal = r#"{"object":"error","message":"[{'type': 'extra_forbidden', 'loc': ('body', 'timings_per_token'), 'msg': 'Extra inputs are not permitted'}]","type":"BadRequestError","code":400}"#;
    let too_long = r#"{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}"#;
    let ok = || Proto::Openai.stream(&["An answer."], Some((3, 1)));
    let server = MockServer::start(
        vec![
            Reply::status(400, too_long),
            Reply::status(400, refusal),
            ok(),
            ok(),
        ],
        None,
    );
    let (_ws, service) = service(&server, Proto::Openai, true);
    // Another 400 is the request's own failure: not asked again.
    assert!(service.complete(&LlmRequest::new("edit", "a")).is_err());
    assert_eq!(server.request_count(), 1);
    let answer = service
        .complete(&LlmRequest::new("edit", "b"))
        .expect("answered without the field");
    assert_eq!(answer.text, "An answer.");
    service
        .complete(&LlmRequest::new("edit", "c"))
        .expect("answer");
    let asked: Vec<bool> = server
        .requests()
        .iter()
        .map(|r| r.json().get("timings_per_token").is_some())
        .collect();
    assert_eq!(asked, [true, true, false, false]);
}
