//! Selective revert, pure: plan single or bulk reverts against the
//! current document and the ledger.
//!
//! - Bulk reverts run in reverse chronological order (latest ledger entry
//!   first), whatever order the IDs were given in.
//! - A change can be reverted once; a revert cannot be reverted; a flag
//!   has nothing to revert.
//! - The change is located in the current document by following it
//!   through every later ledger entry (see [`crate::linemap`]). If a later
//!   change touched the same lines, or the lines there are not exactly the
//!   ones the change produced (content check against the inverse patch and
//!   the hash the ledger recorded), the revert is refused.
//! - All or nothing: if any revert of a bulk is refused, the plan fails and
//!   nothing is written by the caller.
//!
//! Each revert gets a fresh patch pair computed against the document state
//! it is applied to (so it applies with `git apply` there), and becomes a
//! ledger entry `REVERT-RVW-NNNN` with `is_revert: true`.

use koas_review_schema::revert::{PlannedRevert, RevertPlan};
use thiserror::Error;

use crate::linemap::{
    cancel_reverted_pairs, map_back_clamped, map_through, LineEdit, MapMode, Region,
};
use crate::patch::{apply_change, make_patch_pair, parse_patch};
use crate::text::LineBuf;
use koas_kernel_api::hash::sha256_of_parts;
use koas_review_schema::apply::LineChange;
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::edit_op::Action;
use koas_review_schema::ledger::LedgerEntry;

/// Why a revert is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RevertError {
    /// Not a change ID.
    #[error("'{0}' is not a change ID (expected RVW-NNNN)")]
    Malformed(String),
    /// No such change in the ledger.
    #[error("{0} is not in the ledger; `koas grep` lists the changes")]
    NotFound(ChangeId),
    /// Reverting a revert entry.
    #[error("{0} is a revert; a revert cannot itself be reverted — make a new change instead")]
    RevertOfRevert(EntryId),
    /// Already reverted.
    #[error("{id} was already reverted by {by} at {at}; a change can only be reverted once")]
    AlreadyReverted {
        /// The change asked for.
        id: ChangeId,
        /// The `REVERT-RVW-NNNN` entry that reverted it.
        by: EntryId,
        /// That entry's timestamp.
        at: String,
    },
    /// Named twice in one request.
    #[error("{0} is named twice in the request")]
    Duplicate(ChangeId),
    /// A flag changed nothing.
    #[error("{0} is a flag_only entry: it changed nothing, so there is nothing to revert")]
    NothingToRevert(ChangeId),
    /// The patch file cannot be read.
    #[error("cannot read the inverse patch of {id} ({path}): {reason}")]
    PatchUnreadable {
        /// The change whose inverse patch was needed.
        id: ChangeId,
        /// Workspace-relative path of the inverse patch.
        path: String,
        /// The read error, as text.
        reason: String,
    },
    /// The patch file does not describe the recorded change.
    #[error("the inverse patch of {id} ({path}) does not match the ledger: {reason}; the workspace was altered — restore the patch file")]
    PatchInvalid {
        /// The change whose inverse patch was needed.
        id: ChangeId,
        /// Workspace-relative path of the inverse patch.
        path: String,
        /// What does not match: a parse error, or the lines that differ.
        reason: String,
    },
    /// A later change touched the same lines.
    #[error(
        "{id} cannot be reverted: {later} changed the same lines afterwards; revert {later} first"
    )]
    Conflict {
        /// The change asked for.
        id: ChangeId,
        /// The later entry that changed those lines; revert it first.
        later: EntryId,
    },
    /// The lines would come back after a last line that has no newline.
    #[error("{id} cannot be reverted yet: its lines would follow the document's last line, which a later change left without a newline; revert that later change first")]
    AfterUnterminatedEnd {
        /// The change asked for.
        id: ChangeId,
    },
    /// The document no longer holds what the change produced.
    #[error("{id} cannot be reverted: line {line} of the current document does not hold what {id} wrote there (the document was modified outside koas); nothing was changed")]
    ContentMismatch {
        /// The change asked for.
        id: ChangeId,
        /// 1-based line in the current document.
        line: usize,
    },
}

/// Everything revert planning needs.
pub struct RevertRequest<'a> {
    /// Document file name (patch headers).
    pub doc_name: &'a str,
    /// The current document (the state after every ledger entry).
    pub current_text: &'a str,
    /// The ledger entries, in order.
    pub entries: &'a [LedgerEntry],
    /// Changes to revert, any order.
    pub ids: &'a [ChangeId],
    /// Reads a workspace-relative patch file (used for entries whose
    /// ledger line carries no copy of its patches).
    pub read_patch: &'a dyn Fn(&str) -> Result<String, String>,
}

fn load_change(
    entry: &LedgerEntry,
    id: ChangeId,
    read_patch: &dyn Fn(&str) -> Result<String, String>,
) -> Result<LineChange, RevertError> {
    let path = entry.patch_inverse.clone();
    // The ledger's own copy is authoritative; the file is read only for
    // entries written without one.
    let text = match &entry.patch_text {
        Some(copy) => copy.inverse.clone(),
        None => read_patch(&path).map_err(|reason| RevertError::PatchUnreadable {
            id,
            path: path.clone(),
            reason,
        })?,
    };
    let invalid = |reason: String| RevertError::PatchInvalid {
        id,
        path: path.clone(),
        reason,
    };
    let patch = parse_patch(&text).map_err(|e| invalid(e.to_string()))?;
    let [hunk] = patch.hunks.as_slice() else {
        return Err(invalid(format!(
            "expected one hunk, found {}",
            patch.hunks.len()
        )));
    };
    let inverse = hunk
        .as_single_change()
        .ok_or_else(|| invalid("the hunk is not a single contiguous change".into()))?;
    let recorded = entry
        .change
        .ok_or_else(|| invalid("the ledger entry has no change position".into()))?;
    let at = hunk.old_index() + inverse.start;
    if at + 1 != recorded.at
        || inverse.old.len() != recorded.added
        || inverse.new.len() != recorded.removed
    {
        return Err(invalid(format!(
            "the patch changes {} line(s) at line {} but the ledger records {} at line {}",
            inverse.old.len(),
            at + 1,
            recorded.added,
            recorded.at
        )));
    }
    if let Some(expected) = &entry.region_hash_after {
        if &sha256_of_parts(&inverse.old) != expected {
            return Err(invalid(
                "the text it removes does not hash to region_hash_after".into(),
            ));
        }
    }
    if let Some(expected) = &entry.region_hash_before {
        if &sha256_of_parts(&inverse.new) != expected {
            return Err(invalid(
                "the text it restores does not hash to region_hash_before".into(),
            ));
        }
    }
    Ok(LineChange {
        start: at,
        ..inverse
    })
}

/// Reads the IDs a person asked to revert. `REVERT-RVW-NNNN` is refused
/// (revert-of-revert), anything else that is not `RVW-NNNN` is malformed.
pub fn parse_revert_targets<S: AsRef<str>>(ids: &[S]) -> Result<Vec<ChangeId>, RevertError> {
    ids.iter()
        .map(|raw| {
            let raw = raw.as_ref().trim();
            match EntryId::parse(raw) {
                Ok(EntryId::Change(id)) => Ok(id),
                Ok(revert @ EntryId::Revert(_)) => Err(RevertError::RevertOfRevert(revert)),
                Err(_) => Err(RevertError::Malformed(raw.to_owned())),
            }
        })
        .collect()
}

/// Ties between a deletion being reverted (its lines come back at a
/// point) and a later insertion at that same point. When the insertion is
/// the revert of an *earlier* deletion, the two deleted runs are put back
/// in their original order: `entries[x]`'s removed lines are followed back
/// to the state before the earlier change and compared with its removed
/// lines; lines that an insertion made after the earlier deletion, at its
/// point, follow the earlier run (as any insertion follows the lines
/// restored at its point). Any other insertion at that point keeps the
/// restored lines before it (unless they end without a newline: then they
/// go last).
fn restored_lines_come_first(entries: &[LedgerEntry], x: usize, insertion: EntryId) -> bool {
    let EntryId::Revert(earlier) = insertion else {
        return false;
    };
    let Some(y) = entries[..x]
        .iter()
        .rposition(|e| e.id == EntryId::Change(earlier))
    else {
        return false;
    };
    let (Some(x_change), Some(y_change)) = (entries[x].change, entries[y].change) else {
        return false;
    };
    if y >= x {
        return false;
    }
    let x_region = Region {
        start: x_change.at.saturating_sub(1),
        len: x_change.removed,
    };
    let between: Vec<LineEdit> = entries[y..x]
        .iter()
        .filter_map(crate::linemap::edit_of)
        .collect();
    let x_in_y_before = map_back_clamped(x_region, &between);
    let y_region = Region {
        start: y_change.at.saturating_sub(1),
        len: y_change.removed,
    };
    // x's lines after y's lines in that state: y's come first. x's lines
    // that did not exist yet (inserted after y, at y's deletion point)
    // clamp onto y's region: they belong to an insertion made where y's
    // lines were, and restored lines go before an insertion, so y's come
    // first too.
    x_in_y_before.start >= y_region.end()
        || (x_in_y_before.start >= y_region.start && x_in_y_before.start < y_region.end())
}

/// The changes that can still be reverted: change entries that changed
/// the document and have no revert entry, in ledger order (`revert
/// --all`).
pub fn revertible_ids(entries: &[LedgerEntry]) -> Vec<ChangeId> {
    let reverted = crate::query::undone_ids(entries);
    entries
        .iter()
        .filter(|e| e.action != Action::FlagOnly && crate::linemap::edit_of(e).is_some())
        .filter_map(LedgerEntry::change_id)
        .filter(|id| !reverted.contains(id))
        .collect()
}

/// Plans the reverts of `request.ids`. Fails on the first refusal, naming
/// it; nothing is applied then.
pub fn plan_reverts(request: RevertRequest<'_>) -> Result<RevertPlan, RevertError> {
    let entries = request.entries;
    let mut targets = targets_of(entries, request.ids)?;
    // Reverse chronological: latest entry first.
    targets.sort_by_key(|t| std::cmp::Reverse(t.0));

    let mut doc = LineBuf::parse(request.current_text);
    let mut hash = doc.hash();
    // The edits after the previous (later) target, already cancelled, and
    // that target's own edit and revert: each target's chain is built from
    // them instead of from scratch, so a bulk revert stays near-linear.
    let mut tail: Vec<(EntryId, LineEdit)> = Vec::new();
    let mut previous: Option<(usize, ChangeId, LineEdit, LineEdit)> = None;
    let mut reverts = Vec::new();
    for (position, id) in targets {
        let entry = &entries[position];
        let forward_inverse = load_change(entry, id, request.read_patch)?;
        let region = Region {
            start: forward_inverse.start,
            len: forward_inverse.old.len(),
        };
        let upto = previous.map_or(entries.len(), |(p, ..)| p);
        let mut chain: Vec<(EntryId, LineEdit)> = entries[position + 1..upto]
            .iter()
            .filter_map(|e| crate::linemap::edit_of(e).map(|edit| (e.id, edit)))
            .collect();
        if let Some((_, previous_id, previous_edit, previous_revert)) = previous {
            chain.push((EntryId::Change(previous_id), previous_edit));
            chain.append(&mut tail);
            chain.push((EntryId::Revert(previous_id), previous_revert));
        }
        let later = cancel_reverted_pairs(&chain);
        // Lines restored without a final newline must stay the last ones.
        let restores_unterminated_end = forward_inverse
            .new
            .last()
            .is_some_and(|l| !l.ends_with('\n'));
        let mut mapped = region;
        for (later_id, edit) in &later {
            let same_point = mapped.len == 0 && edit.old_len == 0 && edit.start == mapped.start;
            if same_point {
                if restores_unterminated_end
                    || restored_lines_come_first(entries, position, *later_id)
                {
                    mapped.start += edit.new_len;
                }
                continue;
            }
            mapped = map_through(mapped, *edit, MapMode::Strict).map_err(|()| {
                RevertError::Conflict {
                    id,
                    later: *later_id,
                }
            })?;
        }
        check_target(
            &doc,
            &forward_inverse,
            mapped,
            restores_unterminated_end,
            id,
        )?;
        let change = LineChange {
            start: mapped.start,
            ..forward_inverse
        };
        let patches = make_patch_pair(request.doc_name, &doc, &change);
        apply_change(&change, &mut doc).map_err(|_| RevertError::ContentMismatch {
            id,
            line: mapped.start + 1,
        })?;
        let new_hash = doc.hash();
        let Some(own_edit) = crate::linemap::edit_of(entry) else {
            return Err(RevertError::NothingToRevert(id));
        };
        previous = Some((
            position,
            id,
            own_edit,
            LineEdit {
                start: change.start,
                old_len: change.old.len(),
                new_len: change.new.len(),
            },
        ));
        tail = later;
        reverts.push(PlannedRevert {
            reverted: id,
            original: entry.clone(),
            change,
            patches,
            doc_hash_before: std::mem::replace(&mut hash, new_hash.clone()),
            doc_hash_after: new_hash,
        });
    }
    Ok(RevertPlan {
        reverts,
        final_text: doc.to_text(),
    })
}

/// The entry positions of `ids`, checked: each named once, found, not
/// reverted yet, with something to revert.
fn targets_of(
    entries: &[LedgerEntry],
    ids: &[ChangeId],
) -> Result<Vec<(usize, ChangeId)>, RevertError> {
    let positions: std::collections::HashMap<EntryId, usize> =
        entries.iter().enumerate().map(|(i, e)| (e.id, i)).collect();
    let mut targets: Vec<(usize, ChangeId)> = Vec::new();
    let mut named = std::collections::HashSet::new();
    for &id in ids {
        if !named.insert(id) {
            return Err(RevertError::Duplicate(id));
        }
        let position = *positions
            .get(&EntryId::Change(id))
            .ok_or(RevertError::NotFound(id))?;
        if let Some(by) = positions.get(&EntryId::Revert(id)).map(|&i| &entries[i]) {
            return Err(RevertError::AlreadyReverted {
                id,
                by: by.id,
                at: by.timestamp.clone(),
            });
        }
        if entries[position].action == Action::FlagOnly
            || crate::linemap::edit_of(&entries[position]).is_none()
        {
            return Err(RevertError::NothingToRevert(id));
        }
        targets.push((position, id));
    }
    Ok(targets)
}

/// Checks that the lines `change` removes are at `mapped` in `doc`, and
/// that restoring them there keeps the document's end as it must be.
fn check_target(
    doc: &LineBuf,
    forward_inverse: &LineChange,
    mapped: Region,
    restores_unterminated_end: bool,
    id: ChangeId,
) -> Result<(), RevertError> {
    for (offset, expected) in forward_inverse.old.iter().enumerate() {
        if doc.raw_line(mapped.start + offset) != Some(expected.as_str()) {
            return Err(RevertError::ContentMismatch {
                id,
                line: mapped.start + offset + 1,
            });
        }
    }
    if mapped.start > doc.len() || (restores_unterminated_end && mapped.end() != doc.len()) {
        return Err(RevertError::ContentMismatch {
            id,
            line: mapped.start + 1,
        });
    }
    let appends_after_unterminated = mapped.start > 0
        && mapped.start == doc.len()
        && doc.lacks_final_newline()
        && !forward_inverse.new.is_empty();
    if appends_after_unterminated {
        return Err(RevertError::AfterUnterminatedEnd { id });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
