use super::*;
use crate::clock::SteppingClock;
use crate::patch::apply_patch_text;
use crate::session::MemorySession;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::ledger::Actor;
use koas_review_schema::revert::RevertPlan;
use koas_review_schema::stage1::ProtectedSpans;
use serde_json::{json, Value};

/// Options without the content guards: these tests are about other
/// things, with synthetic edits a guard would flag.
fn unguarded() -> ApplyOptions {
    let mut o = ApplyOptions::default();
    o.normalize.content_guards = false;
    o
}

const DOC: &str = "# Plan\n\nAlpha line.\nBeta line.\nGamma line.\n\nDelta line.\n";

fn actor() -> Actor {
    Actor {
        tool: "koas-review test".into(),
        operator: "tester".into(),
    }
}

fn session() -> MemorySession {
    MemorySession::new("plan.md", DOC)
}

fn apply(s: &mut MemorySession, ops: Vec<Value>) {
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    let out = s
        .apply(
            &ops,
            &ProtectedSpans::default(),
            &unguarded(),
            &actor(),
            &clock,
            "run",
        )
        .unwrap();
    assert!(out.rejected.is_empty(), "{:?}", out.rejected);
}

fn revert(s: &mut MemorySession, ids: &[u32]) -> Result<RevertPlan, RevertError> {
    let clock = SteppingClock::new("2026-01-02T00:00:00Z");
    let ids: Vec<ChangeId> = ids.iter().map(|&n| ChangeId::new(n).unwrap()).collect();
    s.revert(&ids, "test", &actor(), &clock, "revert-run")
}

fn replace(line: usize, text: &str) -> Value {
    json!({"action": "replace", "kind": "typo", "target": {"line_start": line}, "after_text": text})
}

fn three_changes() -> MemorySession {
    let mut s = session();
    apply(
        &mut s,
        vec![
            replace(3, "Alpha line, fixed."),
            json!({"action": "insert", "kind": "grammar", "target": {"line_start": 4, "line_end": 4}, "after_text": "Inserted one.\nInserted two."}),
            json!({"action": "delete", "target": {"line_start": 7}}),
        ],
    );
    s
}

#[test]
fn single_revert_restores_and_records() {
    let mut s = three_changes();
    let before = s.text.clone();
    let plan = revert(&mut s, &[2]).unwrap();
    assert_eq!(plan.reverts.len(), 1);
    assert!(!s.text.contains("Inserted"));
    assert!(s.text.contains("Alpha line, fixed."));
    let entry = s.entries.last().unwrap();
    assert_eq!(entry.id.to_string(), "REVERT-RVW-0002");
    assert!(entry.is_revert);
    assert_eq!(entry.reverted_id, "RVW-0002");
    assert_eq!(entry.patch_forward, "review/patches/REVERT-RVW-0002.patch");
    // The revert's own patches apply to the state it was made on.
    let forward = &s.patches[&entry.patch_forward];
    assert_eq!(apply_patch_text(&before, forward).unwrap(), s.text);
    assert_eq!(
        apply_patch_text(&s.text, &s.patches[&entry.patch_inverse]).unwrap(),
        before
    );
}

#[test]
fn bulk_revert_runs_latest_first_and_restores_the_original() {
    let mut s = three_changes();
    let plan = revert(&mut s, &[1, 3, 2]).unwrap();
    let order: Vec<u32> = plan.reverts.iter().map(|r| r.reverted.seq()).collect();
    assert_eq!(order, vec![3, 2, 1]);
    assert_eq!(s.text, DOC);
}

#[test]
fn any_single_order_of_independent_reverts_restores_the_original() {
    for order in [[1, 2, 3], [2, 1, 3], [3, 1, 2], [2, 3, 1]] {
        let mut s = three_changes();
        for id in order {
            revert(&mut s, &[id]).unwrap();
        }
        assert_eq!(s.text, DOC, "order {order:?}");
    }
}

#[test]
fn double_revert_and_revert_of_revert_are_refused() {
    let mut s = three_changes();
    revert(&mut s, &[1]).unwrap();
    let err = revert(&mut s, &[1]).unwrap_err();
    assert!(matches!(err, RevertError::AlreadyReverted { .. }), "{err}");
    assert!(err.to_string().contains("REVERT-RVW-0001"));
    let err = parse_revert_targets(&["REVERT-RVW-0001"]).unwrap_err();
    assert!(matches!(err, RevertError::RevertOfRevert(_)), "{err}");
    assert!(matches!(
        parse_revert_targets(&["RVW-1"]),
        Err(RevertError::Malformed(_))
    ));
    assert_eq!(
        parse_revert_targets(&[" RVW-0002 "]).unwrap(),
        vec![ChangeId::new(2).unwrap()]
    );
    assert!(matches!(
        revert(&mut s, &[9]),
        Err(RevertError::NotFound(_))
    ));
    assert!(matches!(
        revert(&mut s, &[2, 2]),
        Err(RevertError::Duplicate(_))
    ));
}

#[test]
fn a_later_change_on_the_same_lines_is_a_conflict_and_nothing_changes() {
    let mut s = session();
    apply(&mut s, vec![replace(3, "Alpha v2.")]);
    apply(&mut s, vec![replace(3, "Alpha v3.")]);
    let snapshot = s.clone();
    let err = revert(&mut s, &[1]).unwrap_err();
    assert_eq!(
        err,
        RevertError::Conflict {
            id: ChangeId::new(1).unwrap(),
            later: EntryId::Change(ChangeId::new(2).unwrap())
        }
    );
    assert!(err.to_string().contains("revert RVW-0002 first"));
    assert_eq!(s, snapshot, "a refused revert touches nothing");
    // Reverting both (bulk, latest first) works.
    revert(&mut s, &[1, 2]).unwrap();
    assert_eq!(s.text, DOC);
}

#[test]
fn outside_modification_is_detected_by_content() {
    let mut s = three_changes();
    s.text = s
        .text
        .replace("Alpha line, fixed.", "Alpha line, edited by hand.");
    let snapshot = s.clone();
    let err = revert(&mut s, &[1]).unwrap_err();
    assert_eq!(
        err,
        RevertError::ContentMismatch {
            id: ChangeId::new(1).unwrap(),
            line: 3
        }
    );
    assert_eq!(s, snapshot);
    // A bulk revert containing it fails as a whole.
    assert!(revert(&mut s, &[2, 1]).is_err());
    assert_eq!(s, snapshot);
}

#[test]
fn flags_have_nothing_to_revert() {
    let mut s = session();
    apply(
        &mut s,
        vec![json!({"action": "flag_only", "target": {"line_start": 4}, "rationale": "unclear"})],
    );
    assert!(matches!(
        revert(&mut s, &[1]),
        Err(RevertError::NothingToRevert(_))
    ));
}

#[test]
fn the_ledger_copy_of_a_patch_is_authoritative() {
    // A damaged patch file does not matter while the ledger has its copy.
    let mut s = three_changes();
    let path = s.entries[0].patch_inverse.clone();
    s.patches.insert(path.clone(), "garbage".into());
    revert(&mut s, &[1]).unwrap();
    assert!(s.text.contains("Alpha line.\n"));
}

#[test]
fn tampered_or_missing_patch_files_are_refused_without_a_ledger_copy() {
    let mut s = three_changes();
    for entry in &mut s.entries {
        entry.patch_text = None;
    }
    let path = s.entries[0].patch_inverse.clone();
    let original = s.patches[&path].clone();
    s.patches
        .insert(path.clone(), original.replace("Alpha line.", "Alpha LINE."));
    assert!(matches!(
        revert(&mut s, &[1]),
        Err(RevertError::PatchInvalid { .. })
    ));
    s.patches.remove(&path);
    assert!(matches!(
        revert(&mut s, &[1]),
        Err(RevertError::PatchUnreadable { .. })
    ));
    // A tampered ledger copy is caught by the region hashes too.
    let mut s = three_changes();
    if let Some(copy) = s.entries[0].patch_text.as_mut() {
        copy.inverse = copy.inverse.replace("Alpha line.", "Alpha LINE.");
    }
    assert!(matches!(
        revert(&mut s, &[1]),
        Err(RevertError::PatchInvalid { .. })
    ));
}

#[test]
fn revert_chain_ids_continue() {
    let mut s = three_changes();
    revert(&mut s, &[3]).unwrap();
    assert_eq!(s.next_id().unwrap(), ChangeId::new(4).unwrap());
    apply(&mut s, vec![replace(5, "Gamma line, improved.")]);
    assert_eq!(s.entries.last().unwrap().id.to_string(), "RVW-0004");
}

#[test]
fn revertible_ids_skip_flags_reverts_and_reverted_changes() {
    let mut s = MemorySession::new("d.md", "a\n\nb\n\nc\n");
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    let ops = [
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 1}, "after_text": "A"}),
        json!({"action": "flag_only", "target": {"line_start": 3}, "rationale": "r"}),
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 5}, "after_text": "C"}),
    ];
    s.apply(
        &ops,
        &ProtectedSpans::default(),
        &unguarded(),
        &actor(),
        &clock,
        "r",
    )
    .unwrap();
    let ids = |s: &MemorySession| -> Vec<String> {
        revertible_ids(&s.entries)
            .iter()
            .map(|i| i.to_string())
            .collect()
    };
    assert_eq!(ids(&s), vec!["RVW-0001", "RVW-0003"]);
    s.revert(&[ChangeId::first()], "", &actor(), &clock, "r2")
        .unwrap();
    assert_eq!(ids(&s), vec!["RVW-0003"]);
}
