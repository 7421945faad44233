//! Checking an outcome computed outside this process (by a kernel plugin)
//! before it is written: the workspace never records a change it has not
//! replayed itself.
//!
//! A batch or revert plan is replayed on the current document. Every
//! recorded hash must match the replayed state, every change must remove
//! exactly the lines that are there, every patch must be the one the
//! engine would write for that change in that state, IDs must be fresh,
//! and the final text must be the replayed one. The review *policy* (which
//! op is acceptable) is the kernel's job; these checks protect the
//! workspace's integrity: ledger hashes that let a later run roll forward,
//! patches that `git apply` and revert, IDs that are never reused.

use std::collections::{BTreeSet, HashMap, HashSet};

use koas_edit::normalize::note_names_id;
use koas_edit::patch::make_patch_pair;
use koas_edit::text::LineBuf;
use koas_kernel_api::hash::{same_hash, sha256_of_parts};
use koas_review_schema::apply::BatchOutcome;
use koas_review_schema::apply::{LineChange, PatchPair};
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::edit_op::{Action, EditOp};
use koas_review_schema::ledger::LedgerEntry;
use koas_review_schema::revert::RevertPlan;

/// Replays one change on `buf`: checks the patch pair and the removed
/// lines, and returns the hash after.
fn replay_change(
    doc_name: &str,
    buf: &mut LineBuf,
    change: &LineChange,
    patches: &PatchPair,
    label: &str,
) -> Result<String, String> {
    if change.is_noop() {
        return Err(format!("{label}: its change changes no byte"));
    }
    let expected = make_patch_pair(doc_name, buf, change);
    if &expected != patches {
        return Err(format!(
            "{label}: its patches are not the ones its change makes at line {}",
            change.start + 1
        ));
    }
    koas_edit::patch::apply_change(change, buf)
        .map_err(|e| format!("{label}: its change does not apply to the document: {e}"))?;
    Ok(buf.hash())
}

fn check_note(op: &EditOp) -> Result<(), String> {
    let needs_note = op.needs_attention || op.action == Action::Delete;
    match &op.review_note {
        Some(note) => {
            let text = note.text.trim_start();
            if text.starts_with("REVIEWER:") && !note_names_id(text, op) {
                return Err(format!("{}: its review note names another change", op.id));
            }
            if needs_note && !text.starts_with("REVIEWER:") {
                return Err(format!(
                    "{}: its review note does not start with 'REVIEWER:'",
                    op.id
                ));
            }
            Ok(())
        }
        None if needs_note => Err(format!(
            "{}: it needs attention (or deletes) but has no review note",
            op.id
        )),
        None => Ok(()),
    }
}

/// What a plugin may not write whatever it claims: an invisible or
/// bidirectional character the replaced lines did not hold, and, in a
/// change recorded silent, a polarity word added or removed or lines
/// whose Markdown shape differs. The apply engine refuses or flags these;
/// a plugin that says otherwise is not trusted. (The shape is compared on
/// the changed lines alone: the engine's own check reads the blocks around
/// them.)
fn check_change_text(
    op: &EditOp,
    change: &LineChange,
    language: koas_edit::lang::Language,
    label: &str,
) -> Result<(), String> {
    let (old, new) = (change.old.concat(), change.new.concat());
    if let Some((_, c, name)) = koas_edit::effect::new_invisible_char(&new, &old) {
        return Err(format!(
            "{label}: it writes U+{:04X} {name}, an invisible character the engine refuses",
            u32::from(c)
        ));
    }
    if !op.silent {
        return Ok(());
    }
    let lexicons = koas_edit::effect::lexicons_for(language, &old);
    if !koas_edit::effect::polarity_changes(&old, &new, &lexicons).is_empty() {
        return Err(format!(
            "{label}: it is recorded silent but changes a negation, modal, quantifier, comparison or direction word"
        ));
    }
    if !koas_edit::effect::local_structure_changes(&old, &new).is_empty() {
        return Err(format!(
            "{label}: it is recorded silent but changes the Markdown structure of its lines"
        ));
    }
    Ok(())
}

/// Checks `batch` against the document `current`, the change IDs already
/// in the ledger and the first ID the batch had to allocate.
pub(crate) fn verify_batch(
    doc_name: &str,
    current: &str,
    ledger_ids: &BTreeSet<ChangeId>,
    next_id: ChangeId,
    batch: &BatchOutcome,
) -> Result<(), String> {
    let mut buf = LineBuf::parse(current);
    let mut hash = buf.hash();
    if !same_hash(&batch.initial_hash, &hash) {
        return Err(format!(
            "it was computed on a document with hash {}, but the workspace's current document is {hash}; re-run",
            batch.initial_hash
        ));
    }
    check_ids(ledger_ids, next_id, batch)?;
    // The document's language, for the polarity words of silent changes.
    let language = koas_edit::lang::detect(current);
    for applied in &batch.applied {
        let label = format!("{} (op {})", applied.op.id, applied.index + 1);
        if !same_hash(&applied.doc_hash_before, &hash) {
            return Err(format!(
                "{label}: it records the document hash {} before it, but the replayed state is {hash}",
                applied.doc_hash_before
            ));
        }
        check_note(&applied.op)?;
        match (&applied.change, &applied.patches) {
            (Some(change), Some(patches)) if applied.op.action != Action::FlagOnly => {
                check_change_text(&applied.op, change, language, &label)?;
                hash = replay_change(doc_name, &mut buf, change, patches, &label)?;
            }
            (None, None) if applied.op.action == Action::FlagOnly => {}
            _ => {
                return Err(format!(
                    "{label}: a {} must carry {} change and patches",
                    applied.op.action,
                    if applied.op.action == Action::FlagOnly {
                        "no"
                    } else {
                        "a"
                    }
                ))
            }
        }
        if !same_hash(&applied.doc_hash_after, &hash) {
            return Err(format!(
                "{label}: it records the document hash {} after it, but the replayed state is {hash}",
                applied.doc_hash_after
            ));
        }
    }
    if buf.to_text() != batch.final_text {
        return Err("its final text is not the replayed document".into());
    }
    Ok(())
}

/// Checks the batch's change IDs: fresh, below its next ID, each once,
/// none on a rejected op; and that each op known already names a change
/// of the ledger or the batch.
fn check_ids(
    ledger_ids: &BTreeSet<ChangeId>,
    next_id: ChangeId,
    batch: &BatchOutcome,
) -> Result<(), String> {
    let mut ids = BTreeSet::new();
    let mut indices = BTreeSet::new();
    let all = batch.applied.iter().map(|a| (a.op.id, a.index)).chain(
        batch
            .rejected
            .iter()
            .filter_map(|r| r.id.map(|id| (id, r.index))),
    );
    if let Some(r) = batch.rejected.iter().find(|r| r.id.is_some()) {
        return Err(format!(
            "rejected op {} carries a change ID; rejected ops get none",
            r.index + 1
        ));
    }
    for (id, index) in all {
        if id < next_id || ledger_ids.contains(&id) {
            return Err(format!(
                "{id} is not a fresh ID (the next free ID is {next_id})"
            ));
        }
        if id >= batch.next_id {
            return Err(format!(
                "{id} is not below the batch's next ID {}",
                batch.next_id
            ));
        }
        if !ids.insert(id) || !indices.insert(index) {
            return Err(format!("{id} (op {}) appears twice", index + 1));
        }
    }
    for known in &batch.known {
        if !indices.insert(known.index) {
            return Err(format!(
                "op {} is both known and applied or rejected",
                known.index + 1
            ));
        }
        if !ledger_ids.contains(&known.matches) && !ids.contains(&known.matches) {
            return Err(format!(
                "op {} is said to be known as {}, which is neither in the ledger nor in the batch",
                known.index + 1,
                known.matches
            ));
        }
    }
    Ok(())
}

/// Where each change sits in the ledger and which changes are reverted,
/// built in one pass.
struct LedgerIndex {
    /// The position of a change's first entry.
    changes: HashMap<ChangeId, usize>,
    reverted: HashSet<ChangeId>,
}

impl LedgerIndex {
    fn new(entries: &[LedgerEntry]) -> Self {
        let mut changes = HashMap::with_capacity(entries.len());
        let mut reverted = HashSet::new();
        for (i, entry) in entries.iter().enumerate() {
            match entry.id {
                EntryId::Change(id) => {
                    changes.entry(id).or_insert(i);
                }
                EntryId::Revert(id) => {
                    reverted.insert(id);
                }
            }
        }
        LedgerIndex { changes, reverted }
    }

    fn change(&self, id: ChangeId) -> Option<usize> {
        self.changes.get(&id).copied()
    }

    fn is_reverted(&self, id: ChangeId) -> bool {
        self.reverted.contains(&id)
    }
}

/// Checks `plan` against the document `current` and the ledger `entries`.
pub(crate) fn verify_revert_plan(
    doc_name: &str,
    current: &str,
    entries: &[LedgerEntry],
    plan: &RevertPlan,
) -> Result<(), String> {
    let mut buf = LineBuf::parse(current);
    let mut hash = buf.hash();
    let mut previous_index: Option<usize> = None;
    let mut seen = BTreeSet::new();
    // One pass over the ledger, then a lookup per revert: `revert --all`
    // on a long history stays linear in the ledger's length.
    let ledger = LedgerIndex::new(entries);
    for revert in &plan.reverts {
        let id = revert.reverted;
        let label = format!("the revert of {id}");
        let index = ledger
            .change(id)
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
        if !seen.insert(id) || ledger.is_reverted(id) {
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

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
