//! A kernel of our own, run through the kernel-api test harness with the
//! host service behind `ctx.llm_complete`: a live run against a loopback
//! OpenAI-compatible server, then a replay from the exchange log with no
//! network that must produce identical artifacts.

use crate::support::{dead_port_url, MockServer, Proto};
use koas_extract::relaxed_json::to_strict_json;
use koas_extract::{extract_json_block, fences, normalize_text};
use koas_kernel_api::prelude::*;
use koas_kernel_api::testing::TestHarness;
use koas_llm::{LlmService, ReplaySource};
use serde_json::{json, Value};
use std::sync::Arc;

const SAMPLE: &str = include_str!("../fixtures/sample.md");

/// Sends each paragraph to the LLM and reads the one JSON object of each
/// answer: strictly with the canonicalizer, else as relaxed JSON.
struct ParagraphAnnotator;

impl Kernel for ParagraphAnnotator {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("paragraph_annotator", "0.1.0")
            .input("doc")
            .output("notes")
            .default_config(json!({}))
    }

    fn run(&self, ctx: &Context, _: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let doc = inputs.source_text("doc")?;
        let mut notes = Vec::new();
        let mut line = 1;
        for para in doc.split("\n\n") {
            let first_line = line;
            line += para.lines().count() + 1;
            if para.trim_start().starts_with('#') || para.trim().is_empty() {
                continue;
            }
            let request = LlmRequest::new("edit", format!("Lines from {first_line}:\n{para}"))
                .system("Answer with one JSON object between BEGIN_ANSWER and END_ANSWER.")
                .stop_marker("END_ANSWER");
            let answer = ctx.llm_complete(&request)?;
            let text = normalize_text(&answer.text);
            let (read, value) = match extract_json_block(&text) {
                Ok(block) => ("strict", block.value),
                Err(_) => {
                    match serde_json::from_str::<Value>(&to_strict_json(fences::payload(&text))) {
                        Ok(value) => ("relaxed", value),
                        Err(_) => ("none", Value::Null),
                    }
                }
            };
            notes.push(json!({"first_line": first_line, "read": read, "value": value}));
        }
        Ok(KernelOutput::new().artifact("notes", notes))
    }
}

fn harness_with(service: Arc<LlmService>) -> TestHarness {
    TestHarness::new()
        .source_text("doc", SAMPLE)
        .llm(move |req| {
            service
                .complete(req)
                .map(|r| r.text)
                .map_err(|e| e.to_string())
        })
}

#[test]
fn live_run_then_offline_replay_gives_identical_artifacts() {
    let answers = [
        "BEGIN_ANSWER\n{\"line\": 3, \"word\": \"preasure\", \"spelled\": \"pressure\"}\nEND_ANSWER\nI stopped here",
        "```json\n{\"line\": 8, \"topic\": \"délai d'attente\"}\n```",
        "{'line': 13, word: 'The the', spelled: 'The',}",
        "Nothing to add.",
    ];
    let server = MockServer::start(
        answers
            .iter()
            .map(|a| Proto::Openai.stream(&[a], Some((30, 12))))
            .collect(),
        None,
    );
    let ws = tempfile::tempdir().unwrap();
    let config = Proto::Openai.config(&server.url());
    let live = Arc::new(LlmService::new(config.clone(), ws.path()).unwrap());
    let out = harness_with(live.clone())
        .run(&ParagraphAnnotator)
        .expect("live run");
    let notes = out.value("notes");
    let reads: Vec<&str> = notes
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["read"].as_str().unwrap())
        .collect();
    assert_eq!(reads, ["strict", "strict", "relaxed", "none"]);
    assert_eq!(notes[0]["value"]["spelled"], "pressure");
    assert_eq!(notes[1]["value"]["line"], 8);
    assert_eq!(notes[2]["value"]["word"], "The the");
    assert_eq!(notes[3]["value"], Value::Null);
    assert_eq!(server.request_count(), 4);
    // The stop marker cut the first answer at END_ANSWER.
    let prompt = Proto::Openai
        .user_prompt(&server.requests()[0].json())
        .unwrap();
    assert!(
        prompt.starts_with("Lines from 3:\nThe operator"),
        "{prompt}"
    );

    // Replay: no server, the exchange log answers.
    drop(server);
    let source = ReplaySource::from_exchange_log(&ws.path().join("llm/exchanges.jsonl")).unwrap();
    let mut offline = config;
    offline.endpoint = Some(dead_port_url());
    let replay = Arc::new(LlmService::replay(offline, ws.path(), source).unwrap());
    let again = harness_with(replay.clone())
        .run(&ParagraphAnnotator)
        .expect("replayed run");
    assert_eq!(again.value("notes"), notes);
    assert_eq!(hash(&again.value("notes")), hash(&notes));
    assert_eq!(replay.session_metadata().calls.replay, 4);

    // A re-run on the live service is served by the response cache.
    let rerun = harness_with(live.clone())
        .run(&ParagraphAnnotator)
        .expect("cached run");
    assert_eq!(rerun.value("notes"), notes);
    assert_eq!(live.session_metadata().calls.cache, 4);
}

#[test]
fn a_kernel_sees_transport_failure_as_a_host_error() {
    let ws = tempfile::tempdir().unwrap();
    let mut config = Proto::Openai.config(&dead_port_url());
    config.max_retries = 0;
    let svc = Arc::new(LlmService::new(config, ws.path()).unwrap());
    let err = harness_with(svc).run(&ParagraphAnnotator).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Host);
    assert!(err.message.contains("TRANSPORT_FAILURE"), "{}", err.message);
}

fn hash(v: &Value) -> String {
    koas_kernel_api::hash::canonical_sha256(v)
}
