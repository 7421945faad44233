use super::*;
use crate::apply::{apply_batch, BatchInput};
use koas_kernel_api::hash::sha256;
use serde_json::json;

const DOC: &str =
    "# Title\n\nIntro with `code` here.\n\n## Part\n\nFirst para.\nstill first.\n\nSecond para.\n";

fn spans() -> Stage1Spans {
    serde_json::from_value(json!({
        "doc_hash": sha256(DOC),
        "line_count": 10,
        "blocks": [{"kind": "code_fence", "line_start": 5, "line_end": 7, "byte_start": 0,
                    "byte_end": 1, "content_hash": "sha256:00", "info": null}],
        "inlines": [{"kind": "inline_code", "line": 3, "column": 12, "end_line": 3,
                     "end_column": 17, "byte_start": 20, "byte_end": 26}]
    }))
    .unwrap()
}

fn sections() -> Stage1Sections {
    serde_json::from_value(json!({
        "doc_hash": sha256(DOC),
        "line_count": 10,
        "sections": [
            {"id": "S1", "level": 1, "title": "Title", "anchor": "title", "line_start": 1,
             "heading_line_end": 1, "body_line_end": 4, "line_end": 10},
            {"id": "S1.1", "level": 2, "title": "Part", "anchor": "part", "line_start": 5,
             "heading_line_end": 5, "body_line_end": 10, "line_end": 10}
        ]
    }))
    .unwrap()
}

#[test]
fn stage1_spans_become_regions_with_exclusive_end_columns() {
    let s = spans();
    assert!(s.describes(DOC));
    assert!(!s.describes("other"));
    let regions = s.to_regions();
    assert_eq!(regions.blocks[0].line_start, 5);
    assert_eq!(regions.blocks[0].kind, "code_fence");
    let span = &regions.inline[0];
    assert_eq!((span.col_start, span.col_end), (12, 18));
    assert_eq!(&DOC[span.start_byte..span.end_byte], "`code`");
}

#[test]
fn scope_counts_blocks_of_the_innermost_section() {
    let s = sections();
    let doc = LineBuf::parse(DOC);
    assert_eq!(s.scope_of(&doc, 1), Some(("title".into(), "S1".into())));
    assert_eq!(s.scope_of(&doc, 3), Some(("title".into(), "S1.p1".into())));
    assert_eq!(s.scope_of(&doc, 5), Some(("part".into(), "S1.1".into())));
    assert_eq!(s.scope_of(&doc, 8), Some(("part".into(), "S1.1.p1".into())));
    assert_eq!(
        s.scope_of(&doc, 10),
        Some(("part".into(), "S1.1.p2".into()))
    );
    // A blank line belongs to the block before it.
    assert_eq!(s.scope_of(&doc, 9), Some(("part".into(), "S1.1.p1".into())));
    assert_eq!(s.scope_of(&doc, 11), None);
}

#[test]
fn fill_scope_adds_only_what_is_missing() {
    let doc = LineBuf::parse(DOC);
    let mut ops = vec![
        json!({"action": "replace", "target": {"line_start": 7}}),
        json!({"action": "replace", "target": {"line_start": 10, "anchor": "mine", "node_path": ""}}),
        json!({"action": "replace", "target": {"line_start": 99}}),
        json!("not an op"),
    ];
    fill_scope(&mut ops, &sections(), &doc);
    assert_eq!(ops[0]["target"]["anchor"], "part");
    assert_eq!(ops[0]["target"]["node_path"], "S1.1.p1");
    assert_eq!(ops[1]["target"]["anchor"], "mine");
    assert_eq!(ops[1]["target"]["node_path"], "S1.1.p2");
    assert!(ops[2]["target"].get("anchor").is_none());
    assert_eq!(ops[3], "not an op");
}

#[test]
fn stage2_severities_use_the_review_vocabulary() {
    let findings: Stage2Findings = serde_json::from_value(json!({
        "doc_hash": "sha256:00", "kernel": "md_consistency_scan", "finding_count": 3,
        "findings": [
            {"kind": "ai_leftover", "line": 4, "line_end": 4, "severity": "error",
             "message": "m", "evidence": "e", "kernel": "k"},
            {"kind": "terminology_drift", "line": 9, "line_end": 7, "severity": "info",
             "message": "m2", "evidence": "e", "kernel": "k"},
            {"kind": "x", "line": 2, "severity": "warning", "message": "m3"}
        ]
    }))
    .unwrap();
    let out = findings.to_findings();
    assert_eq!(out[0].severity, "critical");
    assert_eq!(out[1].severity, "minor");
    assert_eq!(out[1].line_end, 9, "line_end never before line");
    assert_eq!(out[2].severity, "attention");
    assert_eq!(out[2].line_end, 2);
}

fn outcome() -> ApplyOutcome {
    let ops = vec![
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 7},
               "before_text": "First", "after_text": "1st"}),
        json!({"action": "flag_only", "target": {"line_start": 10}, "rationale": "vague"}),
        json!({"action": "replace", "target": {"line_start": 99}, "after_text": "x"}),
    ];
    let options = ApplyOptions::default();
    let batch = apply_batch(BatchInput {
        doc_name: "d.md",
        text: DOC,
        ops: &ops,
        protected: &ProtectedRegions::default(),
        ledger_ids: &BTreeSet::new(),
        first_id: ChangeId::first(),
        options: &options,
    });
    ApplyOutcome {
        doc_name: "d.md".into(),
        options,
        protected: ProtectedRegions::default(),
        batch,
    }
}

#[test]
fn apply_outcome_round_trips_through_json() {
    let o = outcome();
    let back: ApplyOutcome = serde_json::from_value(serde_json::to_value(&o).unwrap()).unwrap();
    assert_eq!(back, o);
    assert_eq!(back.batch.applied.len(), 2);
    assert_eq!(back.batch.rejected.len(), 1);
}

#[test]
fn preview_entries_are_marked_as_not_recorded() {
    let actor = Actor {
        tool: "t".into(),
        operator: "o".into(),
    };
    let entries = preview_entries(&outcome(), &actor);
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].id.to_string(), "RVW-0001");
    assert_eq!(entries[1].id.to_string(), "RVW-0002");
    assert!(entries.iter().all(|e| e.timestamp == PREVIEW_TIMESTAMP));
    assert!(entries.iter().all(|e| e.run_id == "preview"));
}

#[test]
fn views_resolve_workspace_then_preview_then_original() {
    let actor = Actor {
        tool: "t".into(),
        operator: "o".into(),
    };
    let o = outcome();
    let ws = ReviewView::resolve(Some("cur".into()), Some(vec![]), Some(&o), DOC, &actor).unwrap();
    assert_eq!(ws.source, ViewSource::Workspace);
    assert_eq!(ws.text, "cur");
    let preview = ReviewView::resolve(None, None, Some(&o), DOC, &actor).unwrap();
    assert_eq!(preview.source, ViewSource::Preview);
    assert_eq!(preview.text, o.batch.final_text);
    assert_eq!(preview.entries.len(), 2);
    let original = ReviewView::resolve(None, None, None, DOC, &actor).unwrap();
    assert_eq!(original.source, ViewSource::Original);
    assert_eq!(original.text, DOC);
    let err = ReviewView::resolve(Some("x".into()), None, None, DOC, &actor).unwrap_err();
    assert!(err.contains("`ledger`"), "{err}");
    let err = ReviewView::resolve(None, Some(vec![]), None, DOC, &actor).unwrap_err();
    assert!(err.contains("`review_doc`"), "{err}");
}
