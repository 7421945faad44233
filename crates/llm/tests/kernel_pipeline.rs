//! A kernel of our own, run through the kernel-api test harness with the
//! host service behind `ctx.llm_complete`: a live run against a loopback
//! OpenAI-compatible server, then a replay from the exchange log with no
//! network that must produce identical artifacts.

mod support;

use koas_extract::extract_edit_ops;
use koas_kernel_api::prelude::*;
use koas_kernel_api::testing::TestHarness;
use koas_llm::{LlmService, ReplaySource};
use serde_json::{json, Value};
use std::sync::Arc;
use support::{dead_port_url, MockServer, Proto};

const SAMPLE: &str = include_str!("fixtures/review_sample.md");

/// Sends each paragraph to the LLM and extracts edit ops with the ladder.
struct ParagraphReviewer;

impl Kernel for ParagraphReviewer {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("paragraph_reviewer", "0.1.0")
            .input("doc")
            .output("proposals")
            .default_config(json!({}))
    }

    fn run(&self, ctx: &Context, _: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let doc = inputs.source_text("doc")?;
        let mut chunks = Vec::new();
        let mut line = 1;
        for para in doc.split("\n\n") {
            let first_line = line;
            line += para.lines().count() + 1;
            if para.trim_start().starts_with('#') || para.trim().is_empty() {
                continue;
            }
            let request = LlmRequest::new("edit", format!("Lines from {first_line}:\n{para}"))
                .system("Propose edits between BEGIN_EDIT_OPS and END_EDIT_OPS.")
                .stop_marker("END_EDIT_OPS");
            let answer = ctx.llm_complete(&request)?;
            let outcome = extract_edit_ops(&answer.text);
            chunks.push(json!({
                "first_line": first_line,
                "method": outcome.method.as_str(),
                "no_changes": outcome.no_changes,
                "ops": outcome.ops,
            }));
        }
        Ok(KernelOutput::new().artifact("proposals", chunks))
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
        "BEGIN_EDIT_OPS\n[{\"action\": \"replace\", \"lines\": \"3-3\", \"before\": \"preasure\", \"after\": \"pressure\", \"kind\": \"typo\"}]\nEND_EDIT_OPS\nI stopped here",
        "- action: flag\n  lines: 8-9\n  rationale: préciser le délai d'attente\n",
        "[RVW] action=replace / lines=13-13 / before=\"The the\" / after=\"The\" / kind=\"typo\"",
        "No changes needed.",
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
        .run(&ParagraphReviewer)
        .expect("live run");
    let proposals = out.value("proposals");
    let methods: Vec<&str> = proposals
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        [
            "tagged_payload",
            "yaml",
            "plaintext_regex",
            "freeform_salvage"
        ]
    );
    assert_eq!(proposals[0]["ops"][0]["after_text"], "pressure");
    assert_eq!(proposals[0]["ops"][0]["line_start"], 3);
    assert_eq!(proposals[2]["ops"][0]["line_start"], 13);
    assert_eq!(proposals[3]["no_changes"], true);
    assert_eq!(server.request_count(), 4);
    // The stop marker cut the first answer after END_EDIT_OPS.
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
        .run(&ParagraphReviewer)
        .expect("replayed run");
    assert_eq!(again.value("proposals"), proposals);
    assert_eq!(hash(&again.value("proposals")), hash(&proposals));
    assert_eq!(replay.session_metadata().calls.replay, 4);

    // A re-run on the live service is served by the response cache.
    let rerun = harness_with(live.clone())
        .run(&ParagraphReviewer)
        .expect("cached run");
    assert_eq!(rerun.value("proposals"), proposals);
    assert_eq!(live.session_metadata().calls.cache, 4);
}

#[test]
fn a_kernel_sees_transport_failure_as_a_host_error() {
    let ws = tempfile::tempdir().unwrap();
    let mut config = Proto::Openai.config(&dead_port_url());
    config.max_retries = 0;
    let svc = Arc::new(LlmService::new(config, ws.path()).unwrap());
    let err = harness_with(svc).run(&ParagraphReviewer).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Host);
    assert!(err.message.contains("TRANSPORT_FAILURE"), "{}", err.message);
}

fn hash(v: &Value) -> String {
    koas_kernel_api::hash::canonical_sha256(v)
}
