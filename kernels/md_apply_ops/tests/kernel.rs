//! `md_apply_ops` through the plugin glue (TestHarness round-trips JSON
//! like the host), with real Stage 1 artifacts from `koas_md`.

use koas_kernel_api::hash::sha256;
use koas_kernel_api::testing::TestHarness;
use koas_kernel_api::{ErrorKind, Kernel};
use koas_kernel_md_apply_ops::MdApplyOps;
use koas_review_schema::apply::ApplyOutcome;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::rejection::RejectClass;
use koas_review_schema::review::ReviewState;
use koas_review_schema::stage1::ChunkConfig;
use serde_json::{json, Value};

const DOC: &str = "# Retention policy\n\n## 1. Scope\n\nThe polcy applies to `audit_log` records.\n\n```sql\nDELETE FROM audit_log;\n```\n\n## 2. Duration\n\nRecords are kept for five years.\nAs an AI, I recommend seven.\n";

/// Stage 1 artifacts of `text`, as the Stage 1 kernels produce them.
fn stage1(text: &str) -> (Value, Value, Value, Value) {
    let s = koas_md::stage1::run("policy.md", text, ChunkConfig::default()).unwrap();
    (
        Value::String(text.to_owned()),
        serde_json::to_value(&s.spans).unwrap(),
        serde_json::to_value(&s.structure.sections).unwrap(),
        serde_json::to_value(&s.stats).unwrap(),
    )
}

fn harness(text: &str, ops: Value) -> TestHarness {
    let (raw, spans, sections, stats) = stage1(text);
    TestHarness::new()
        .input("doc_raw", raw)
        .input("protected_spans", spans)
        .input("section_index", sections)
        .input("file_stats", stats)
        .source_bytes("ops", "review/ops.json", ops.to_string().as_bytes())
}

fn outcome(out: &koas_kernel_api::KernelOutput) -> ApplyOutcome {
    serde_json::from_value(out.value("apply_outcome")).unwrap()
}

fn typo() -> Value {
    json!({"action": "replace", "kind": "typo", "target": {"line_start": 5},
           "before_text": "polcy", "after_text": "policy"})
}

#[test]
fn spec_declares_optional_host_inputs_and_stage3_files() {
    let spec = MdApplyOps.spec();
    assert_eq!(spec.validate(), Ok(()));
    for host in [
        "review_doc",
        "review_state",
        "ops",
        "edit_plan",
        "file_stats",
    ] {
        let input = spec.inputs.iter().find(|i| i.artifact == host).unwrap();
        assert!(!input.required, "{host} must be optional");
    }
    let file = |a: &str| {
        spec.outputs
            .iter()
            .find(|o| o.artifact == a)
            .and_then(|o| o.file.clone())
    };
    assert_eq!(
        file("apply_outcome").as_deref(),
        Some("stage3/apply_outcome.json")
    );
    assert_eq!(file("edited_doc").as_deref(), Some("stage3/doc.edited.md"));
}

#[test]
fn a_plain_run_applies_ops_to_the_original_with_scope_filled() {
    let ops = json!([
        typo(),
        {"action": "delete", "target": {"line_start": 14}, "rationale": "AI leftover."},
        {"action": "replace", "kind": "typo", "target": {"line_start": 8}, "after_text": "DROP TABLE x;"},
    ]);
    let out = harness(DOC, ops).run(&MdApplyOps).unwrap();
    let o = outcome(&out);
    assert_eq!(o.doc_name, "policy.md", "named after file_stats.path");
    assert_eq!(o.batch.applied.len(), 2);
    let first = &o.batch.applied[0].op;
    assert_eq!(first.id, ChangeId::first());
    assert_eq!(first.target.anchor, "1-scope");
    assert_eq!(first.target.node_path, "S1.1.p1");
    assert_eq!(o.batch.applied[1].op.target.node_path, "S1.2.p1");
    // The code fence edit has no attention note: refused as protected.
    assert_eq!(o.batch.rejected.len(), 1);
    assert_eq!(o.batch.rejected[0].rejection.class, RejectClass::Protected);
    let edited: String = out.parse("edited_doc").unwrap();
    assert_eq!(edited, o.batch.final_text);
    assert!(edited.contains("The policy applies") && !edited.contains("As an AI"));
    assert!(
        out.summary.starts_with(
            "3 ops (review/ops.json: 3 ops): 2 applied, 0 flagged, 1 rejected (REJECT_PROTECTED 1)"
        ),
        "{}",
        out.summary
    );
    assert_eq!(out.warnings.len(), 1);
    assert!(
        out.warnings[0].starts_with("REJECT_PROTECTED: op 3: "),
        "{:?}",
        out.warnings
    );
    let patch = o.batch.applied[0].patches.as_ref().unwrap();
    assert!(patch
        .forward
        .starts_with("--- a/policy.md\n+++ b/policy.md\n"));
}

#[test]
fn strict_refuses_inline_protected_edits_that_attention_would_allow() {
    let op = json!([{"action": "replace", "kind": "terminology", "target": {"line_start": 5},
                     "before_text": "`audit_log`", "after_text": "`audit_events`",
                     "needs_attention": true, "rationale": "renamed table"}]);
    let out = harness(DOC, op.clone()).run(&MdApplyOps).unwrap();
    let o = outcome(&out);
    assert_eq!(o.batch.applied.len(), 1, "{:?}", o.batch.rejected);
    assert_eq!(o.batch.applied[0].touches_protected.len(), 1);
    let out = harness(DOC, op)
        .config(json!({"strict": true}))
        .run(&MdApplyOps)
        .unwrap();
    let o = outcome(&out);
    assert!(o.options.strict);
    assert_eq!(o.batch.rejected[0].rejection.class, RejectClass::Protected);
    assert!(o.batch.rejected[0].rejection.reason.contains("inline_code"));
}

#[test]
fn a_models_edit_plan_never_changes_protected_bytes_that_a_persons_op_may() {
    // The same flagged edits of inline code and of a code fence: from an
    // ops file (a person) they are applied; from an edit plan (a model)
    // they are refused, and the prose edit beside them is applied.
    let protected = [
        json!({"action": "replace", "kind": "terminology", "target": {"line_start": 5},
               "before_text": "`audit_log`", "after_text": "`audit_events`",
               "needs_attention": true, "rationale": "renamed table"}),
        json!({"action": "replace", "kind": "correction", "target": {"line_start": 8},
               "after_text": "DELETE FROM audit_log WHERE kept_until < now();",
               "needs_attention": true, "rationale": "keep what is kept"}),
    ];
    let person = harness(DOC, Value::Array(protected.to_vec()))
        .run(&MdApplyOps)
        .unwrap();
    let o = outcome(&person);
    assert_eq!(o.batch.applied.len(), 2, "{:?}", o.batch.rejected);
    assert!(o.batch.applied.iter().all(|a| a.origin.is_person()));

    let mut plan = protected.to_vec();
    plan.push(
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 13},
                     "before_text": "five", "after_text": "5"}),
    );
    let (raw, spans, sections, stats) = stage1(DOC);
    let model = TestHarness::new()
        .input("doc_raw", raw)
        .input("protected_spans", spans)
        .input("section_index", sections)
        .input("file_stats", stats)
        .input("edit_plan", json!({"ops": plan}))
        .run(&MdApplyOps)
        .unwrap();
    let o = outcome(&model);
    assert_eq!(o.batch.rejected.len(), 2, "{:?}", o.batch.applied);
    for r in &o.batch.rejected {
        assert_eq!(r.rejection.class, RejectClass::Protected);
        assert!(
            r.rejection.reason.contains("proposed by a model"),
            "{}",
            r.rejection.reason
        );
    }
    assert_eq!(o.batch.applied.len(), 1);
    assert_eq!(o.batch.applied[0].origin.as_str(), "model");
    let edited: String = model.parse("edited_doc").unwrap();
    assert!(edited.contains("`audit_log`") && edited.contains("DELETE FROM audit_log;\n"));
    assert!(edited.contains("kept for 5 years"));
}

#[test]
fn in_a_workspace_ops_address_the_current_document_with_its_own_regions() {
    // The current document has two more lines at the top: the fence moved
    // from lines 7–9 to 9–11. Stage 1 still describes the original.
    let current = format!("Draft\n\n{DOC}");
    let state = ReviewState {
        doc_name: "retention.md".into(),
        next_id: ChangeId::new(7).unwrap(),
        ledger_ids: [ChangeId::new(3).unwrap()].into_iter().collect(),
        original_hash: "sha256:00".into(),
        reverted: Vec::new(),
        applied: Vec::new(),
        flags: Vec::new(),
    };
    let ops = json!([
        {"action": "replace", "kind": "typo", "target": {"line_start": 10}, "after_text": "TRUNCATE audit_log;"},
        {"action": "replace", "kind": "typo", "target": {"line_start": 7},
         "before_text": "polcy", "after_text": "policy"},
    ]);
    let out = harness(DOC, ops)
        .input("review_doc", &current)
        .input("review_state", &state)
        .run(&MdApplyOps)
        .unwrap();
    let o = outcome(&out);
    assert_eq!(o.doc_name, "retention.md");
    assert_eq!(o.protected.blocks.len(), 1, "{:?}", o.protected);
    assert_eq!(
        o.protected.blocks[0].line_start, 9,
        "regions of the current document"
    );
    // A rejected op takes no ID: the applied one gets the first free one.
    assert_eq!(o.batch.rejected[0].id, None);
    assert_eq!(o.batch.rejected[0].rejection.class, RejectClass::Protected);
    assert_eq!(o.batch.applied[0].op.id.to_string(), "RVW-0007");
    assert_eq!(o.batch.applied[0].op.target.node_path, "S1.1.p1");
    assert_eq!(o.batch.initial_hash, sha256(current.as_bytes()));
}

#[test]
fn without_ops_the_document_is_unchanged() {
    let (raw, spans, sections, _) = stage1(DOC);
    let out = TestHarness::new()
        .input("doc_raw", raw)
        .input("protected_spans", spans)
        .input("section_index", sections)
        .run(&MdApplyOps)
        .unwrap();
    assert_eq!(out.value("edited_doc"), DOC);
    assert!(out.summary.starts_with("no ops"), "{}", out.summary);
    assert_eq!(outcome(&out).doc_name, "doc.md");
}

#[test]
fn half_a_workspace_and_bad_ops_files_are_input_errors() {
    let err = harness(DOC, json!([]))
        .input("review_doc", "x")
        .run(&MdApplyOps)
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(err.message.contains("review_state"), "{}", err.message);
    let (raw, spans, sections, _) = stage1(DOC);
    let err = TestHarness::new()
        .input("doc_raw", raw)
        .input("protected_spans", spans)
        .input("section_index", sections)
        .source_bytes("ops", "bad-ops.json", b"{\"ops\": 3}")
        .run(&MdApplyOps)
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(err.message.contains("bad-ops.json"), "{}", err.message);
}

#[test]
fn the_same_inputs_give_the_same_outcome() {
    let a = harness(DOC, json!([typo()])).run(&MdApplyOps).unwrap();
    let b = harness(DOC, json!([typo()])).run(&MdApplyOps).unwrap();
    assert_eq!(a.artifacts, b.artifacts);
}
