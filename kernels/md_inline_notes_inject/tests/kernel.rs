//! `md_inline_notes_inject` through the plugin glue.

use koas_edit::apply::{apply_batch, BatchInput};
use koas_edit::clock::SteppingClock;
use koas_edit::session::MemorySession;
use koas_kernel_api::testing::TestHarness;
use koas_kernel_api::{Kernel, KernelOutput};
use koas_kernel_md_inline_notes_inject::MdInlineNotesInject;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::apply::ApplyOutcome;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::ledger::Actor;
use koas_review_schema::notes::InlineNotes;
use koas_review_schema::review::ViewSource;
use koas_review_schema::stage1::ChunkConfig;
use koas_review_schema::stage1::ProtectedSpans;
use serde_json::{json, Value};

const DOC: &str =
    "# Guide\n\nThe bandwith is high\nand stable.\n\n```sh\nrun --fast\n```\n\nEnd.\n";

fn spans(text: &str) -> Value {
    let s = koas_md::stage1::run("guide.md", text, ChunkConfig::default()).unwrap();
    serde_json::to_value(&s.spans).unwrap()
}

fn harness() -> TestHarness {
    TestHarness::new()
        .input("doc_raw", DOC)
        .input("protected_spans", spans(DOC))
}

fn ops() -> Vec<Value> {
    vec![
        json!({"action": "replace", "kind": "terminology", "severity": "attention",
               "target": {"line_start": 3}, "before_text": "bandwith", "after_text": "throughput",
               "rationale": "Section 2 says throughput."}),
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 10},
               "before_text": "End", "after_text": "The end"}),
        json!({"action": "replace", "kind": "command", "severity": "critical",
               "target": {"line_start": 7}, "after_text": "run --safe", "rationale": "unsafe flag"}),
    ]
}

fn outcome() -> ApplyOutcome {
    // Without the content guards: "End" → "The end" stands for a silent
    // typo here, which a guard would call a rewrite.
    let mut options = ApplyOptions::default();
    options.normalize.content_guards = false;
    let spans: ProtectedSpans = serde_json::from_value(spans(DOC)).unwrap();
    let batch = apply_batch(BatchInput {
        doc_name: "guide.md",
        text: DOC,
        ops: &ops(),
        protected: &spans,
        ledger_ids: &Default::default(),
        first_id: ChangeId::first(),
        options: &options,
        origins: &[koas_review_schema::apply::OpOrigin::Person; 64],
        known: Default::default(),
    });
    assert_eq!(batch.applied.len(), 3, "{:?}", batch.rejected);
    ApplyOutcome {
        doc_name: "guide.md".into(),
        options,
        protected: spans.clone(),
        batch,
    }
}

fn notes(out: &KernelOutput) -> InlineNotes {
    serde_json::from_value(out.value("inline_notes")).unwrap()
}

#[test]
fn spec_writes_the_reviewed_document() {
    let spec = MdInlineNotesInject.spec();
    assert_eq!(spec.validate(), Ok(()));
    let file = spec
        .outputs
        .iter()
        .find(|o| o.artifact == "annotated_doc")
        .unwrap();
    assert_eq!(file.file.as_deref(), Some("stage3/doc.REVIEWED.md"));
    assert_eq!(
        spec.default_config["severity_alert_map"]["critical"],
        "IMPORTANT"
    );
}

#[test]
fn a_preview_gets_alerts_after_paragraphs_and_after_protected_blocks() {
    let out = harness()
        .input("apply_outcome", outcome())
        .run(&MdInlineNotesInject)
        .unwrap();
    let text: String = out.parse("annotated_doc").unwrap();
    let expected = "# Guide\n\nThe throughput is high\nand stable.\n\n> [!WARNING]\n> REVIEWER: RVW-0001 — Section 2 says throughput.\n\n```sh\nrun --safe\n```\n\n> [!IMPORTANT]\n> REVIEWER: RVW-0003 — unsafe flag\n\nThe end.\n";
    assert_eq!(text, expected);
    let n = notes(&out);
    assert_eq!(n.source, ViewSource::Preview);
    assert_eq!(n.notes.len(), 2, "the silent typo gets no note");
    assert_eq!(out.summary, "2 notes (1 IMPORTANT, 1 WARNING)");
}

#[test]
fn in_a_workspace_reverted_changes_lose_their_note_and_the_map_is_configurable() {
    let mut s = MemorySession::new("guide.md", DOC);
    let actor = Actor {
        tool: "t".into(),
        operator: "o".into(),
    };
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    let spans: ProtectedSpans = serde_json::from_value(spans(DOC)).unwrap();
    s.apply(
        &ops(),
        &spans,
        &ApplyOptions::default(),
        &actor,
        &clock,
        "r",
    )
    .unwrap();
    s.revert(&[ChangeId::new(3).unwrap()], "", &actor, &clock, "r2")
        .unwrap();
    let out = harness()
        .config(json!({"severity_alert_map": {"attention": "CAUTION"}}))
        .input("review_doc", &s.text)
        .input("ledger", &s.entries)
        .run(&MdInlineNotesInject)
        .unwrap();
    let text: String = out.parse("annotated_doc").unwrap();
    assert!(
        text.contains("> [!CAUTION]\n> REVIEWER: RVW-0001"),
        "{text}"
    );
    assert!(!text.contains("RVW-0003"), "{text}");
    assert!(text.contains("run --fast"), "reverted");
    assert_eq!(notes(&out).source, ViewSource::Workspace);
}

#[test]
fn without_changes_the_annotated_document_is_the_original() {
    let out = harness().run(&MdInlineNotesInject).unwrap();
    assert_eq!(out.value("annotated_doc"), DOC);
    assert!(notes(&out).notes.is_empty());
    assert!(out.summary.starts_with("no change needs attention"));
}
