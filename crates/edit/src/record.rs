//! Turning applied ops and reverts into ledger entries and patch files.
//!
//! Patch files live in `review/patches/`: `RVW-NNNN.patch` and
//! `RVW-NNNN.inverse.patch` for a change, `REVERT-RVW-NNNN.patch` and
//! `REVERT-RVW-NNNN.inverse.patch` for its revert. Ledger entries store
//! these workspace-relative paths, and a copy of the patch text
//! (`patch_text`), so the ledger alone — the one file that is fsynced line
//! by line — can rebuild the patch files. A flag (flag_only) has no
//! patches and empty patch paths.

use crate::clock::Clock;
use koas_kernel_api::hash::sha256_of_parts;
use koas_review_schema::apply::AppliedOp;
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::edit_op::Action;
use koas_review_schema::ledger::{Actor, ChangeLines, LedgerEntry, PatchText, Scope};
use koas_review_schema::revert::PlannedRevert;

/// Directory of patch files, relative to the workspace.
pub const PATCH_DIR: &str = "review/patches";

/// Workspace-relative forward and inverse patch paths of an entry.
pub fn patch_paths(id: EntryId) -> (String, String) {
    (
        format!("{PATCH_DIR}/{id}.patch"),
        format!("{PATCH_DIR}/{id}.inverse.patch"),
    )
}

/// What every entry of one run shares.
#[derive(Clone, Copy)]
pub struct RunContext<'a> {
    /// Document file name, written as each entry's `doc`.
    pub doc_name: &'a str,
    /// The tool and the person recorded as each entry's `actor`.
    pub actor: &'a Actor,
    /// The run's ID, written as each entry's `run_id`.
    pub run_id: &'a str,
    /// Gives each entry its `timestamp` (a fixed clock in tests).
    pub clock: &'a dyn Clock,
}

/// The ledger entry of an applied op (or flag).
pub fn entry_for_applied(applied: &AppliedOp, run: RunContext<'_>) -> LedgerEntry {
    let op = &applied.op;
    let id = EntryId::Change(op.id);
    let (patch_forward, patch_inverse) = match applied.patches {
        Some(_) => patch_paths(id),
        None => (String::new(), String::new()),
    };
    let change = match &applied.change {
        Some(c) => ChangeLines {
            at: c.start + 1,
            removed: c.old.len(),
            added: c.new.len(),
        },
        None => {
            let (s, e) = applied.state_lines;
            let len = (e + 1).saturating_sub(s);
            ChangeLines {
                at: s.max(1),
                removed: len,
                added: len,
            }
        }
    };
    LedgerEntry {
        id,
        doc: run.doc_name.to_owned(),
        doc_hash_before: applied.doc_hash_before.clone(),
        doc_hash_after: applied.doc_hash_after.clone(),
        timestamp: run.clock.now(),
        actor: run.actor.clone(),
        scope: Scope {
            anchor: op.target.anchor.clone(),
            node_path: op.target.node_path.clone(),
            chunk_id: op.target.chunk_id.clone(),
        },
        kind: op.kind.clone(),
        severity: op.severity.clone(),
        silent: op.silent,
        summary: applied.summary.clone(),
        rationale: op.rationale.clone(),
        patch_forward,
        patch_inverse,
        review_note: op.review_note.clone(),
        is_revert: false,
        reverted_id: String::new(),
        action: op.action,
        needs_attention: op.needs_attention,
        change: Some(change),
        // A flag's region is the lines it flags, on both sides.
        region_hash_before: applied
            .region_hash_before()
            .or_else(|| applied.flagged_hash.clone()),
        region_hash_after: applied
            .region_hash_after()
            .or_else(|| applied.flagged_hash.clone()),
        source_id: op.source_id.clone(),
        fixes: applied.fixes.iter().map(|f| f.name().to_owned()).collect(),
        run_id: run.run_id.to_owned(),
        patch_text: applied.patches.as_ref().map(|p| PatchText {
            forward: p.forward.clone(),
            inverse: p.inverse.clone(),
        }),
    }
}

/// The ledger entry that dismisses `flag`, a `flag_only` entry: the
/// revert ID of the flag (`REVERT-RVW-NNNN`), the action `flag_only`, no
/// patch, the document unchanged (`doc_hash` before and after).
/// `rationale` says why (may be empty).
pub fn entry_for_dismissal(
    flag: &LedgerEntry,
    rationale: &str,
    doc_hash: &str,
    run: RunContext<'_>,
) -> LedgerEntry {
    LedgerEntry {
        id: EntryId::Revert(flag.change_id().unwrap_or_else(ChangeId::first)),
        doc: run.doc_name.to_owned(),
        doc_hash_before: doc_hash.to_owned(),
        doc_hash_after: doc_hash.to_owned(),
        timestamp: run.clock.now(),
        actor: run.actor.clone(),
        scope: flag.scope.clone(),
        kind: flag.kind.clone(),
        severity: flag.severity.clone(),
        silent: flag.silent,
        summary: format!("dismiss {}: {}", flag.id, flag.summary),
        rationale: rationale.to_owned(),
        patch_forward: String::new(),
        patch_inverse: String::new(),
        review_note: None,
        is_revert: true,
        reverted_id: flag.id.to_string(),
        action: Action::FlagOnly,
        needs_attention: false,
        change: None,
        region_hash_before: None,
        region_hash_after: None,
        source_id: None,
        fixes: Vec::new(),
        run_id: run.run_id.to_owned(),
        patch_text: None,
    }
}

/// The ledger entry of a planned revert. `rationale` says why (may be
/// empty).
pub fn entry_for_revert(
    revert: &PlannedRevert,
    rationale: &str,
    run: RunContext<'_>,
) -> LedgerEntry {
    let id = EntryId::Revert(revert.reverted);
    let (patch_forward, patch_inverse) = patch_paths(id);
    let original = &revert.original;
    LedgerEntry {
        id,
        doc: run.doc_name.to_owned(),
        doc_hash_before: revert.doc_hash_before.clone(),
        doc_hash_after: revert.doc_hash_after.clone(),
        timestamp: run.clock.now(),
        actor: run.actor.clone(),
        scope: original.scope.clone(),
        kind: original.kind.clone(),
        severity: original.severity.clone(),
        silent: original.silent,
        summary: format!("revert {}: {}", revert.reverted, original.summary),
        rationale: rationale.to_owned(),
        patch_forward,
        patch_inverse,
        review_note: None,
        is_revert: true,
        reverted_id: revert.reverted.to_string(),
        action: original.action,
        needs_attention: false,
        change: Some(ChangeLines {
            at: revert.change.start + 1,
            removed: revert.change.old.len(),
            added: revert.change.new.len(),
        }),
        region_hash_before: Some(sha256_of_parts(&revert.change.old)),
        region_hash_after: Some(sha256_of_parts(&revert.change.new)),
        source_id: None,
        fixes: Vec::new(),
        run_id: run.run_id.to_owned(),
        patch_text: Some(PatchText {
            forward: revert.patches.forward.clone(),
            inverse: revert.patches.inverse.clone(),
        }),
    }
}
