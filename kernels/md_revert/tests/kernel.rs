//! `md_revert` through the plugin glue, on ledgers built by the engine.

use koas_edit::apply::{apply_batch, BatchInput};
use koas_edit::clock::SteppingClock;
use koas_edit::session::MemorySession;
use koas_kernel_api::testing::TestHarness;
use koas_kernel_api::{ErrorKind, Kernel, KernelOutput};
use koas_kernel_md_revert::MdRevert;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::apply::ApplyOutcome;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::ledger::Actor;
use koas_review_schema::revert::RevertOutcome;
use koas_review_schema::review::ReviewState;
use koas_review_schema::stage1::ProtectedSpans;
use serde_json::{json, Value};

const DOC: &str = "# Notes\n\nAlpha.\n\nBeta.\n\nGamma.\n";

fn actor() -> Actor {
    Actor {
        tool: "test".into(),
        operator: "ci".into(),
    }
}

/// A session with RVW-0001 (line 3), RVW-0002 (flag), RVW-0003 (line 7).
fn session() -> MemorySession {
    let mut s = MemorySession::new("notes.md", DOC);
    let ops = [
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 3}, "after_text": "Alpha!"}),
        json!({"action": "flag_only", "target": {"line_start": 5}, "rationale": "vague"}),
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 7}, "after_text": "Gamma!"}),
    ];
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    s.apply(
        &ops,
        &ProtectedSpans::default(),
        &ApplyOptions::default(),
        &actor(),
        &clock,
        "r1",
    )
    .unwrap();
    s
}

fn run(s: &MemorySession, config: Value) -> (RevertOutcome, KernelOutput) {
    let state = ReviewState {
        doc_name: s.doc_name.clone(),
        next_id: ChangeId::new(4).unwrap(),
        ledger_ids: Default::default(),
        original_hash: "sha256:00".into(),
        reverted: Vec::new(),
        applied: Vec::new(),
        flags: Vec::new(),
    };
    let out = TestHarness::new()
        .config(config)
        .input("ledger", &s.entries)
        .input("review_doc", &s.text)
        .input("review_state", &state)
        .run(&MdRevert)
        .unwrap();
    (
        serde_json::from_value(out.value("revert_outcome")).unwrap(),
        out,
    )
}

#[test]
fn spec_is_pure_planning_with_optional_host_inputs() {
    let spec = MdRevert.spec();
    assert_eq!(spec.validate(), Ok(()));
    assert!(spec.inputs.iter().all(|i| !i.required));
    assert_eq!(spec.default_config, json!({"ids": [], "all": false}));
}

#[test]
fn bulk_reverts_are_planned_latest_first_and_give_back_the_original() {
    let s = session();
    let (o, out) = run(&s, json!({"ids": ["RVW-0001", "RVW-0003"]}));
    assert_eq!(o.refused, None);
    assert_eq!(o.doc_name, "notes.md");
    let order: Vec<String> = o
        .plan
        .reverts
        .iter()
        .map(|r| r.reverted.to_string())
        .collect();
    assert_eq!(order, vec!["RVW-0003", "RVW-0001"]);
    assert_eq!(o.plan.final_text, DOC);
    assert_eq!(out.value("reverted_doc"), DOC);
    assert!(out
        .summary
        .starts_with("2 reverts planned, latest first (RVW-0003, RVW-0001)"));
    let (all, _) = run(&s, json!({"all": true}));
    assert_eq!(all.requested.len(), 2, "the flag is not revertible");
    assert_eq!(all.plan.final_text, DOC);
}

#[test]
fn refusals_are_outcomes_with_a_reason_and_no_plan() {
    let mut s = session();
    let clock = SteppingClock::new("2026-01-02T00:00:00Z");
    s.revert(&[ChangeId::first()], "", &actor(), &clock, "r2")
        .unwrap();
    let cases = [
        (json!({"ids": ["RVW-0001"]}), "already reverted"),
        (
            json!({"ids": ["REVERT-RVW-0001"]}),
            "cannot itself be reverted",
        ),
        (json!({"ids": ["RVW-0002"]}), "flag_only"),
        (json!({"ids": ["RVW-0099"]}), "not in the ledger"),
        (json!({"ids": ["banana"]}), "not a change ID"),
        (json!({"ids": ["RVW-0003"], "all": true}), "not both"),
    ];
    for (config, expected) in cases {
        let (o, out) = run(&s, config.clone());
        let reason = o.refused.clone().unwrap_or_default();
        assert!(reason.contains(expected), "{config}: {reason}");
        assert!(o.plan.reverts.is_empty());
        assert_eq!(o.plan.final_text, s.text, "refusal keeps the text");
        assert!(out.summary.starts_with("refused: "), "{}", out.summary);
        assert_eq!(out.warnings.len(), 1);
    }
}

#[test]
fn a_conflict_by_content_hash_is_refused() {
    let mut s = session();
    // Someone edited line 3 outside koas: the document no longer holds
    // what RVW-0001 wrote.
    s.text = s.text.replace("Alpha!", "Alpha?");
    let (o, _) = run(&s, json!({"ids": ["RVW-0001"]}));
    let reason = o.refused.unwrap();
    assert!(
        reason.contains("does not hold what RVW-0001 wrote"),
        "{reason}"
    );
    // A later change over the same lines.
    let mut s = session();
    let clock = SteppingClock::new("2026-01-03T00:00:00Z");
    s.apply(
        &[json!({"action": "replace", "kind": "typo", "target": {"line_start": 3}, "after_text": "ALPHA!"})],
        &ProtectedSpans::default(),
        &ApplyOptions::default(),
        &actor(),
        &clock,
        "r3",
    )
    .unwrap();
    let (o, _) = run(&s, json!({"ids": ["RVW-0001"]}));
    let reason = o.refused.unwrap();
    assert!(
        reason.contains("RVW-0004 changed the same lines"),
        "{reason}"
    );
}

#[test]
fn a_plain_run_plans_on_the_preview_and_nothing_is_nothing() {
    let ops = vec![
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 5}, "after_text": "Beta!"}),
    ];
    let options = ApplyOptions::default();
    let batch = apply_batch(BatchInput {
        doc_name: "notes.md",
        text: DOC,
        ops: &ops,
        protected: &ProtectedSpans::default(),
        ledger_ids: &Default::default(),
        first_id: ChangeId::first(),
        options: &options,
        origins: &[koas_review_schema::apply::OpOrigin::Person; 64],
        known: Default::default(),
    });
    let outcome = ApplyOutcome {
        doc_name: "notes.md".into(),
        options,
        protected: ProtectedSpans::default(),
        batch,
    };
    let out = TestHarness::new()
        .config(json!({"ids": ["RVW-0001"]}))
        .input("apply_outcome", &outcome)
        .run(&MdRevert)
        .unwrap();
    let o: RevertOutcome = serde_json::from_value(out.value("revert_outcome")).unwrap();
    assert_eq!(o.plan.final_text, DOC);
    let out = TestHarness::new().run(&MdRevert).unwrap();
    assert_eq!(out.summary, "nothing to revert");
    let out = TestHarness::new()
        .config(json!({"ids": ["RVW-0001"]}))
        .run(&MdRevert)
        .unwrap();
    assert!(out.summary.contains("not in the ledger"), "{}", out.summary);
    let err = TestHarness::new()
        .input("review_doc", "x")
        .run(&MdRevert)
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
}
