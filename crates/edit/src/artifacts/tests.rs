use super::*;
use crate::apply::{apply_batch, BatchInput};
use koas_kernel_api::hash::sha256;
use koas_review_schema::apply::OpOrigin;
use koas_review_schema::apply::{ApplyOptions, ApplyOutcome};
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::ledger::Actor;
use koas_review_schema::review::ViewSource;
use koas_review_schema::stage1::{ProtectedSpans, SectionEntry};
use serde_json::json;
use std::collections::BTreeSet;

/// Options without the content guards: these tests are about other
/// things, with synthetic edits a guard would flag.
fn unguarded() -> ApplyOptions {
    let mut o = ApplyOptions::default();
    o.normalize.content_guards = false;
    o
}

const DOC: &str =
    "# Title\n\nIntro with `code` here.\n\n## Part\n\nFirst para.\nstill first.\n\nSecond para.\n";

fn spans() -> ProtectedSpans {
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

fn sections() -> SectionIndex {
    let mut title = SectionEntry::from_lines("S1", "Title", 1, 10);
    title.anchor = "title".into();
    title.body_line_end = 4;
    let mut part = SectionEntry::from_lines("S1.1", "Part", 5, 10);
    part.anchor = "part".into();
    SectionIndex {
        doc_hash: sha256(DOC),
        line_count: 10,
        sections: vec![title, part],
    }
}

#[test]
fn stage1_artifacts_describe_only_their_document() {
    let s = spans();
    assert!(describes(&s.doc_hash, DOC));
    assert!(!describes(&s.doc_hash, "other"));
    let span = &s.inlines[0];
    assert_eq!((span.column, span.end_column), (12, 17));
    assert_eq!(
        &DOC[span.byte_start as usize..span.byte_end as usize],
        "`code`"
    );
}

#[test]
fn scope_counts_blocks_of_the_innermost_section() {
    let s = sections();
    let doc = LineBuf::parse(DOC);
    assert_eq!(scope_of(&s, &doc, 1), Some(("title".into(), "S1".into())));
    assert_eq!(
        scope_of(&s, &doc, 3),
        Some(("title".into(), "S1.p1".into()))
    );
    assert_eq!(scope_of(&s, &doc, 5), Some(("part".into(), "S1.1".into())));
    assert_eq!(
        scope_of(&s, &doc, 8),
        Some(("part".into(), "S1.1.p1".into()))
    );
    assert_eq!(
        scope_of(&s, &doc, 10),
        Some(("part".into(), "S1.1.p2".into()))
    );
    // A blank line belongs to the block before it.
    assert_eq!(
        scope_of(&s, &doc, 9),
        Some(("part".into(), "S1.1.p1".into()))
    );
    assert_eq!(scope_of(&s, &doc, 11), None);
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

fn outcome() -> ApplyOutcome {
    let ops = vec![
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 7},
               "before_text": "First", "after_text": "1st"}),
        json!({"action": "flag_only", "target": {"line_start": 10}, "rationale": "vague"}),
        json!({"action": "replace", "target": {"line_start": 99}, "after_text": "x"}),
    ];
    let options = unguarded();
    let batch = apply_batch(BatchInput {
        doc_name: "d.md",
        text: DOC,
        ops: &ops,
        protected: &ProtectedSpans::default(),
        ledger_ids: &BTreeSet::new(),
        first_id: ChangeId::first(),
        options: &options,
        origins: &[OpOrigin::Person; 3],
        known: Default::default(),
    });
    ApplyOutcome {
        doc_name: "d.md".into(),
        options,
        protected: ProtectedSpans::default(),
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
