//! What the ledger already holds, by effect, so that a review run again
//! records nothing twice: a change already made, a change that was
//! reverted, a flag already open or dismissed on the same text.
//!
//! Identity is what an op does, never its ID or its line numbers: a
//! model's IDs are reallocated each run and lines move when text above
//! them changes. A change is its removed and inserted lines (context
//! trimmed); a flag is the hash of the lines it flags and its kind.

use std::collections::HashMap;

use crate::normalize::normalize_op_text;
use crate::patch::parse_patch;
use crate::text::LineBuf;
use koas_review_schema::apply::{KnownAs, KnownOp};
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::edit_op::{Action, EditOp};
use koas_review_schema::ledger::LedgerEntry;
use koas_review_schema::review::{KnownChange, KnownFlag};

/// What the ledger holds, as a batch reads it (see
/// [`koas_review_schema::review::ReviewState`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Known<'a> {
    /// Changes in effect.
    pub applied: &'a [KnownChange],
    /// Changes that were reverted.
    pub reverted: &'a [KnownChange],
    /// Flags, open or dismissed.
    pub flags: &'a [KnownFlag],
}

/// The effects of a ledger, owned (what `review_state` carries).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerEffects {
    /// Changes that were reverted.
    pub reverted: Vec<KnownChange>,
    /// Changes in effect.
    pub applied: Vec<KnownChange>,
    /// Flags, open or dismissed.
    pub flags: Vec<KnownFlag>,
}

impl LedgerEffects {
    /// The borrowed view a batch reads.
    pub fn known(&self) -> Known<'_> {
        Known {
            applied: &self.applied,
            reverted: &self.reverted,
            flags: &self.flags,
        }
    }
}

/// The effects of `entries` (a ledger, in order). A change's lines come
/// from its forward patch: the entry's own text, or what `read_patch`
/// reads at its workspace-relative path (ledgers written before entries
/// held their text). A change whose patch cannot be read or is not one
/// plain hunk is left out: it cannot be compared line for line. A flag
/// recorded before flags kept the hash of their lines is left out too:
/// the next run records it once more, with its hash.
pub fn ledger_effects(
    entries: &[LedgerEntry],
    read_patch: impl Fn(&str) -> Option<String>,
) -> LedgerEffects {
    // A change is reverted, a flag dismissed, by a REVERT- entry of its ID.
    let undone = crate::query::undone_ids(entries);
    let mut out = LedgerEffects::default();
    for entry in entries {
        let EntryId::Change(id) = entry.id else {
            continue;
        };
        if entry.action == Action::FlagOnly {
            if let Some(hash) = &entry.region_hash_before {
                out.flags.push(KnownFlag {
                    id,
                    lines_hash: hash.clone(),
                    kind: entry.kind.to_lowercase(),
                    dismissed: undone.contains(&id),
                });
            }
            continue;
        }
        let text = match &entry.patch_text {
            Some(text) => text.forward.clone(),
            None => match read_patch(&entry.patch_forward) {
                Some(text) => text,
                None => continue,
            },
        };
        let Ok(patch) = parse_patch(&text) else {
            continue;
        };
        let [hunk] = patch.hunks.as_slice() else {
            continue;
        };
        let Some(change) = hunk.as_single_change() else {
            continue;
        };
        let change = change.trimmed();
        let known = KnownChange {
            id,
            old: change.old,
            new: change.new,
        };
        if undone.contains(&id) {
            out.reverted.push(known);
        } else {
            out.applied.push(known);
        }
    }
    out
}

/// [`Known`], indexed for a batch.
#[derive(Debug)]
pub(crate) struct KnownIndex<'a> {
    known: Known<'a>,
    flags: HashMap<(&'a str, &'a str), (ChangeId, bool)>,
    reverted: HashMap<(&'a [String], &'a [String]), ChangeId>,
    /// Each change in effect's removed and inserted text, joined once.
    applied_text: Vec<(String, String)>,
}

impl<'a> KnownIndex<'a> {
    pub(crate) fn new(known: Known<'a>) -> Self {
        KnownIndex {
            known,
            flags: known
                .flags
                .iter()
                .map(|f| {
                    (
                        (f.lines_hash.as_str(), f.kind.as_str()),
                        (f.id, f.dismissed),
                    )
                })
                .collect(),
            reverted: known
                .reverted
                .iter()
                .map(|c| ((c.old.as_slice(), c.new.as_slice()), c.id))
                .collect(),
            applied_text: known
                .applied
                .iter()
                .map(|c| (c.old.concat(), c.new.concat()))
                .collect(),
        }
    }

    /// The flag of the ledger on the same lines (by hash) with the same
    /// kind.
    pub(crate) fn flag(&self, lines_hash: &str, kind: &str) -> Option<(ChangeId, KnownAs)> {
        let kind = kind.to_lowercase();
        self.flags
            .get(&(lines_hash, kind.as_str()))
            .map(|&(id, dismissed)| {
                (
                    id,
                    if dismissed {
                        KnownAs::Dismissed
                    } else {
                        KnownAs::Flagged
                    },
                )
            })
    }

    /// The reverted change that removed `old` and inserted `new`.
    pub(crate) fn reverted(&self, old: &[String], new: &[String]) -> Option<ChangeId> {
        self.reverted.get(&(old, new)).copied()
    }

    /// The change in effect that inserted exactly `new` at `at` (0-based
    /// line of `doc`): an insertion made again where it already is.
    pub(crate) fn inserted_at(&self, new: &[String], doc: &LineBuf, at: usize) -> Option<ChangeId> {
        let here = doc.lines().get(at..at + new.len())?;
        if here != new {
            return None;
        }
        self.known
            .applied
            .iter()
            .find(|c| c.old.is_empty() && c.new == new)
            .map(|c| c.id)
    }

    /// The change in effect that already made `op` (which no longer finds
    /// its text): a change that removed text holding the op's
    /// `before_text` and inserted text holding its `after_text`, whose
    /// inserted lines are still in `doc` (a deletion: whose removed text
    /// held it).
    pub(crate) fn already_made(&self, op: &EditOp, doc: &LineBuf) -> Option<ChangeId> {
        let before = normalize_op_text(op.before_text.as_deref()?);
        if before.trim().is_empty() {
            return None;
        }
        let after = normalize_op_text(&op.after_text);
        self.known
            .applied
            .iter()
            .zip(&self.applied_text)
            .filter(|(_, (old, _))| old.contains(before.as_str()))
            .find(|(c, (_, new))| match op.action {
                Action::Delete => c.new.is_empty(),
                Action::Replace => {
                    !c.new.is_empty()
                        && new.contains(after.as_str())
                        && contains_run(doc.lines(), &c.new)
                }
                _ => false,
            })
            .map(|(c, _)| c.id)
    }
}

/// How many known ops the ledger holds each way, e.g. `2 flagged, 1
/// dismissed` (in the order applied, reverted, flagged, dismissed).
pub fn describe(known: &[KnownOp]) -> String {
    let mut counts: Vec<(KnownAs, usize)> = Vec::new();
    for how in [
        KnownAs::Applied,
        KnownAs::Reverted,
        KnownAs::Flagged,
        KnownAs::Dismissed,
    ] {
        let n = known.iter().filter(|k| k.known_as == how).count();
        if n > 0 {
            counts.push((how, n));
        }
    }
    counts
        .iter()
        .map(|(how, n)| format!("{n} {}", how.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// True when `run` occurs in `lines` as consecutive lines.
fn contains_run(lines: &[String], run: &[String]) -> bool {
    !run.is_empty() && lines.windows(run.len()).any(|w| w == run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(id: u32, old: &[&str], new: &[&str]) -> KnownChange {
        KnownChange {
            id: ChangeId::new(id).expect("id"),
            old: old.iter().map(|s| s.to_string()).collect(),
            new: new.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_change_already_made_is_found_by_its_text_and_lines() {
        let applied = [change(
            3,
            &["The policy aplies.\n"],
            &["The policy applies.\n"],
        )];
        let index = KnownIndex::new(Known {
            applied: &applied,
            ..Known::default()
        });
        let doc = LineBuf::parse("# T\n\nThe policy applies.\n");
        let op = |before: &str, after: &str| EditOp {
            id: ChangeId::first(),
            source_id: None,
            action: Action::Replace,
            target: Default::default(),
            before_hash: None,
            before_text: Some(before.into()),
            after_text: after.into(),
            needs_attention: false,
            kind: "typo".into(),
            severity: "minor".into(),
            silent: true,
            review_note: None,
            rationale: String::new(),
            summary: None,
        };
        assert_eq!(
            index.already_made(&op("aplies", "applies"), &doc),
            ChangeId::new(3)
        );
        // Another fix of the same words is not the same change.
        assert_eq!(index.already_made(&op("aplies", "apply"), &doc), None);
        // The change's lines were changed again since: not in effect here.
        let later = LineBuf::parse("# T\n\nThe rule applies.\n");
        assert_eq!(index.already_made(&op("aplies", "applies"), &later), None);
    }
}
