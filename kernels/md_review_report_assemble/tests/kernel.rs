//! `md_review_report_assemble` through the plugin glue.

use koas_edit::apply::{apply_batch, BatchInput};
use koas_edit::clock::SteppingClock;
use koas_edit::session::MemorySession;
use koas_kernel_api::testing::TestHarness;
use koas_kernel_api::Kernel;
use koas_kernel_md_review_report_assemble::{
    MdReviewReportAssemble, ORIGINAL_NOTICE, PREVIEW_NOTICE,
};
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::apply::ApplyOutcome;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::ledger::Actor;
use koas_review_schema::review::ReportContext;
use koas_review_schema::review::ReportMeta;
use koas_review_schema::stage1::ChunkConfig;
use koas_review_schema::stage1::ProtectedSpans;
use serde_json::{json, Value};

const DOC: &str = "# Audit\n\n## 1. Scope\n\nThe scope is teh billing system.\n\n## 2. Findings\n\nSee section 9 for details.\n";

fn harness() -> TestHarness {
    let s = koas_md::stage1::run("audit.md", DOC, ChunkConfig::default()).unwrap();
    let issues = json!({
        "doc_hash": s.doc_hash, "kernel": "md_consistency_scan", "finding_count": 1,
        "by_kind": {"broken_reference": 1},
        "findings": [{"kind": "broken_reference", "line": 9, "line_end": 9, "severity": "error",
                      "message": "section 9 does not exist", "evidence": "See section 9",
                      "kernel": "md_consistency_scan", "section_id": "S1.2"}]
    });
    TestHarness::new()
        .input("doc_raw", DOC)
        .input("doc_hash", &s.doc_hash)
        .input("file_stats", serde_json::to_value(&s.stats).unwrap())
        .input(
            "section_index",
            serde_json::to_value(&s.structure.sections).unwrap(),
        )
        .input("issues", issues)
}

fn ops() -> Vec<Value> {
    vec![
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 5},
               "before_text": "teh", "after_text": "the"}),
        json!({"action": "replace", "kind": "reference", "target": {"line_start": 9},
               "after_text": "See section 2 for details.", "rationale": "Section 9 does not exist."}),
        json!({"action": "delete", "target": {"line_start": 77}}),
    ]
}

fn report(h: TestHarness) -> (String, String) {
    let mut h = h;
    let out = h.run(&MdReviewReportAssemble).unwrap();
    (
        out.value("review_report").as_str().unwrap().to_owned(),
        out.summary,
    )
}

#[test]
fn spec_writes_a_generic_report_file_the_host_renames() {
    let spec = MdReviewReportAssemble.spec();
    assert_eq!(spec.validate(), Ok(()));
    let out = spec
        .outputs
        .iter()
        .find(|o| o.artifact == "review_report")
        .unwrap();
    assert_eq!(out.file.as_deref(), Some("review/REVIEW.md"));
}

#[test]
fn without_ops_the_report_lists_findings_and_no_change() {
    let (text, summary) = report(harness());
    assert!(
        text.starts_with("# Review report — audit.md\n\n> [!NOTE]\n"),
        "{text}"
    );
    assert!(text.contains(&ORIGINAL_NOTICE.replace('|', "\\|")));
    assert!(text.contains("No changes."));
    assert!(text.contains("The ledger is empty."));
    assert!(text.contains("### 2. Findings\n"), "{text}");
    assert!(
        text.contains("| 9 | broken_reference | error | section 9 does not exist |"),
        "{text}"
    );
    assert!(summary.ends_with("1 findings (no ops)"), "{summary}");
}

/// Without the content guards: the fixture's typo fixes are not what the
/// report tests check, and a guard would re-kind some of them.
fn unguarded() -> ApplyOptions {
    let mut o = ApplyOptions::default();
    o.normalize.content_guards = false;
    o
}

#[test]
fn a_preview_shows_the_batch_and_its_rejections() {
    let options = unguarded();
    let batch = apply_batch(BatchInput {
        doc_name: "audit.md",
        text: DOC,
        ops: &ops(),
        protected: &ProtectedSpans::default(),
        ledger_ids: &Default::default(),
        first_id: ChangeId::first(),
        options: &options,
        origins: &[koas_review_schema::apply::OpOrigin::Person; 64],
        known: Default::default(),
    });
    let outcome = ApplyOutcome {
        doc_name: "audit.md".into(),
        options,
        protected: ProtectedSpans::default(),
        batch,
    };
    let (text, summary) = report(harness().input("apply_outcome", &outcome));
    assert!(
        text.contains(PREVIEW_NOTICE.split('`').next().unwrap()),
        "{text}"
    );
    assert!(
        text.contains("| 1 | RVW-0001 | preview (not recorded) | replace | typo |"),
        "{text}"
    );
    assert!(text.contains("### 1. Scope (lines"), "{text}");
    assert!(text.contains("## Rejected ops (last run)"), "{text}");
    assert!(text.contains("| 3 | REJECT_RANGE | op 3: "), "{text}");
    assert!(summary.contains("(preview, not recorded)"), "{summary}");
}

#[test]
fn in_a_workspace_the_host_metadata_and_ledger_are_shown() {
    let mut s = MemorySession::new("audit.md", DOC);
    let actor = Actor {
        tool: "t".into(),
        operator: "o".into(),
    };
    let clock = SteppingClock::new("2026-05-01T09:00:00Z");
    s.apply(
        &ops(),
        &ProtectedSpans::default(),
        &unguarded(),
        &actor,
        &clock,
        "r",
    )
    .unwrap();
    s.revert(&[ChangeId::first()], "", &actor, &clock, "r2")
        .unwrap();
    let meta = ReportContext {
        meta: ReportMeta {
            generated_at: "2026-05-01T10:00:00+00:00".into(),
            tool: "koas 9.9.9".into(),
            kernels: vec![("md_apply_ops".into(), "0.1.0".into())],
            doc_name: "audit.md".into(),
            original_hash: "sha256:original".into(),
            current_hash: "sha256:current".into(),
            notice: None,
        },
        apply_log: Vec::new(),
        model: None,
        earlier_findings: Vec::new(),
    };
    let (text, summary) = report(
        harness()
            .input("review_doc", &s.text)
            .input("ledger", &s.entries)
            .input("review_meta", &meta),
    );
    assert!(!text.contains("[!NOTE]"));
    for needle in [
        "| As of | 2026-05-01T10:00:00+00:00 |",
        "| Tool | koas 9.9.9 |",
        "| Kernel `md_apply_ops` | 0.1.0 |",
        "| Original hash | `sha256:original` |",
        "| RVW-0001 | replace | typo | info |",
        "reverted (REVERT-RVW-0001)",
        "| 3 | REVERT-RVW-0001 | 2026-05-01T09:00:0",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
    assert!(
        summary
            .starts_with("report of audit.md: 3 ledger entries (2 changes and flags), 1 findings"),
        "{summary}"
    );
}

#[test]
fn a_preview_without_ops_says_no_ops() {
    let options = unguarded();
    let batch = apply_batch(BatchInput {
        doc_name: "audit.md",
        text: DOC,
        ops: &[],
        protected: &ProtectedSpans::default(),
        ledger_ids: &Default::default(),
        first_id: ChangeId::first(),
        options: &options,
        origins: &[koas_review_schema::apply::OpOrigin::Person; 64],
        known: Default::default(),
    });
    let outcome = ApplyOutcome {
        doc_name: "audit.md".into(),
        options,
        protected: ProtectedSpans::default(),
        batch,
    };
    let (text, summary) = report(harness().input("apply_outcome", &outcome));
    assert!(text.contains("No ops were given"), "{text}");
    assert!(summary.ends_with("(no ops)"), "{summary}");
}
