//! The indexed `verify_revert_plan` against the linear-scan version it
//! replaced: the same answer, word for word, on valid and spoiled plans.

use super::*;
use koas_edit::clock::SteppingClock;
use koas_edit::session::MemorySession;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::ledger::Actor;
use koas_review_schema::stage1::ProtectedSpans;
use proptest::prelude::*;
use serde_json::{json, Value};

/// The previous version, a scan of the ledger per revert, kept as the
/// reference the indexed one must agree with.
fn reference(
    doc_name: &str,
    current: &str,
    entries: &[LedgerEntry],
    plan: &RevertPlan,
) -> Result<(), String> {
    let mut buf = LineBuf::parse(current);
    let mut hash = buf.hash();
    let mut previous_index: Option<usize> = None;
    let mut seen = BTreeSet::new();
    for revert in &plan.reverts {
        let id = revert.reverted;
        let label = format!("the revert of {id}");
        let index = entries
            .iter()
            .position(|e| e.id == EntryId::Change(id))
            .ok_or_else(|| format!("{label}: {id} is not in the ledger"))?;
        let original = &entries[index];
        if original != &revert.original {
            return Err(format!(
                "{label}: its copy of the ledger entry differs from the ledger"
            ));
        }
        if original.action == Action::FlagOnly {
            return Err(format!("{label}: {id} is a flag, nothing to revert"));
        }
        if !seen.insert(id) || entries.iter().any(|e| e.id == EntryId::Revert(id)) {
            return Err(format!("{label}: {id} is already reverted"));
        }
        if previous_index.is_some_and(|p| index >= p) {
            return Err(format!("{label}: reverts must run latest change first"));
        }
        previous_index = Some(index);
        if let Some(expected) = &original.region_hash_after {
            if &sha256_of_parts(&revert.change.old) != expected {
                return Err(format!(
                    "{label}: it removes lines that are not what {id} wrote"
                ));
            }
        }
        if let Some(expected) = &original.region_hash_before {
            if &sha256_of_parts(&revert.change.new) != expected {
                return Err(format!(
                    "{label}: it restores lines that are not what {id} removed"
                ));
            }
        }
        if !same_hash(&revert.doc_hash_before, &hash) {
            return Err(format!(
                "{label}: it records the document hash {} before it, but the replayed state is {hash}",
                revert.doc_hash_before
            ));
        }
        hash = replay_change(doc_name, &mut buf, &revert.change, &revert.patches, &label)?;
        if !same_hash(&revert.doc_hash_after, &hash) {
            return Err(format!(
                "{label}: it records the document hash {} after it, but the replayed state is {hash}",
                revert.doc_hash_after
            ));
        }
    }
    if buf.to_text() != plan.final_text {
        return Err("its final text is not the replayed document".into());
    }
    Ok(())
}

const LINES: usize = 16;

fn actor() -> Actor {
    Actor {
        tool: "verify test".into(),
        operator: "tester".into(),
    }
}

fn unguarded() -> ApplyOptions {
    let mut o = ApplyOptions::default();
    o.normalize.content_guards = false;
    o
}

/// A session with one batch: on each chosen line a replacement, or a flag
/// when `flag` says so; then the changes of `first_reverts` reverted.
fn session(lines: &[(usize, bool)], first_reverts: &[usize]) -> MemorySession {
    let text: String = (1..=LINES)
        .map(|i| format!("Line {i} of text.\n"))
        .collect();
    let mut s = MemorySession::new("doc.md", &text);
    let ops: Vec<Value> = lines
        .iter()
        .map(|&(line, flag)| {
            if flag {
                json!({"action": "flag_only", "target": {"line_start": line}, "rationale": "look"})
            } else {
                json!({"action": "replace", "kind": "typo", "target": {"line_start": line}, "after_text": format!("Line {line}, edited.")})
            }
        })
        .collect();
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    s.apply(
        &ops,
        &ProtectedSpans::default(),
        &unguarded(),
        &actor(),
        &clock,
        "run-1",
    )
    .expect("ids");
    let ids = revertible(&s);
    let picked: Vec<ChangeId> = first_reverts
        .iter()
        .filter_map(|&i| ids.get(i % ids.len().max(1)).copied())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !picked.is_empty() {
        let clock = SteppingClock::new("2026-01-02T00:00:00Z");
        let _ = s.revert(&picked, "first", &actor(), &clock, "run-2");
    }
    s
}

/// The applied, not reverted, not flag changes.
fn revertible(s: &MemorySession) -> Vec<ChangeId> {
    let reverted: BTreeSet<ChangeId> = s
        .entries
        .iter()
        .filter_map(|e| match e.id {
            EntryId::Revert(id) => Some(id),
            EntryId::Change(_) => None,
        })
        .collect();
    s.entries
        .iter()
        .filter(|e| e.action != Action::FlagOnly)
        .filter_map(|e| match e.id {
            EntryId::Change(id) if !reverted.contains(&id) => Some(id),
            _ => None,
        })
        .collect()
}

/// Every ID in the ledger, changes and flags, reverted or not.
fn all_ids(s: &MemorySession) -> Vec<ChangeId> {
    s.entries
        .iter()
        .filter_map(LedgerEntry::change_id)
        .collect()
}

/// Ways to spoil a plan (or the ledger it is checked against).
fn spoil(
    s: &MemorySession,
    plan: &mut RevertPlan,
    entries: &mut Vec<LedgerEntry>,
    how: u8,
    k: usize,
) {
    let ids = all_ids(s);
    match how {
        0 => {}
        1 => plan.reverts.reverse(),
        2 => {
            if let Some(first) = plan.reverts.first().cloned() {
                plan.reverts.push(first);
            }
        }
        3 => {
            if !plan.reverts.is_empty() {
                let i = k % plan.reverts.len();
                plan.reverts.remove(i);
            }
        }
        4 => {
            // Another change's (or a flag's, or an unknown) ID.
            if let Some(r) = plan.reverts.first_mut() {
                r.reverted = ids
                    .get(k % ids.len().max(1))
                    .copied()
                    .or_else(|| ChangeId::new(9999))
                    .unwrap_or(r.reverted);
            }
        }
        5 => {
            if let Some(r) = plan.reverts.first_mut() {
                r.reverted = ChangeId::new(5000 + k as u32).unwrap_or(r.reverted);
            }
        }
        6 => {
            // A later copy of a change entry: the first one counts.
            if let Some(e) = entries.get(k % entries.len().max(1)).cloned() {
                entries.push(e);
            }
        }
        7 => {
            // Its copy of the ledger entry differs.
            if let Some(r) = plan.reverts.first_mut() {
                r.original.rationale.push('!');
            }
        }
        _ => plan.final_text.push('x'),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn the_indexed_check_answers_like_the_scan(
        lines in proptest::collection::btree_map(1..=LINES, any::<bool>(), 1..10),
        first_reverts in proptest::collection::vec(0usize..16, 0..3),
        asked in proptest::collection::vec(0usize..16, 1..8),
        how in 0u8..9,
        k in 0usize..32,
    ) {
        let lines: Vec<(usize, bool)> = lines.into_iter().collect();
        let s = session(&lines, &first_reverts);
        let ids = revertible(&s);
        prop_assume!(!ids.is_empty());
        let wanted: Vec<ChangeId> = asked
            .iter()
            .map(|&i| ids[i % ids.len()])
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut plan = s.plan_revert(&wanted).expect("a plan of revertible changes");
        let mut entries = s.entries.clone();
        prop_assert_eq!(verify_revert_plan("doc.md", &s.text, &entries, &plan), Ok(()));
        spoil(&s, &mut plan, &mut entries, how, k);
        let new = verify_revert_plan("doc.md", &s.text, &entries, &plan);
        let old = reference("doc.md", &s.text, &entries, &plan);
        prop_assert_eq!(new, old);
    }
}

#[test]
fn a_spoiled_plan_is_still_refused() {
    let s = session(&[(2, false), (5, true), (9, false)], &[]);
    let ids = revertible(&s);
    let plan = s.plan_revert(&ids).expect("plan");
    assert_eq!(
        verify_revert_plan("doc.md", &s.text, &s.entries, &plan),
        Ok(())
    );
    let mut reversed = plan.clone();
    reversed.reverts.reverse();
    let e = verify_revert_plan("doc.md", &s.text, &s.entries, &reversed).expect_err("order");
    assert_eq!(
        Err(e),
        reference("doc.md", &s.text, &s.entries, &reversed),
        "the same refusal as the scan"
    );
    let mut flag = plan.clone();
    flag.reverts[0].reverted = ChangeId::new(2).expect("id");
    let e = verify_revert_plan("doc.md", &s.text, &s.entries, &flag).expect_err("flag");
    assert!(e.contains("differs") || e.contains("flag"), "{e}");
}
