//! A review that follows its document: where a document's workspace is,
//! what happens when the document was edited outside koas, and which
//! changes can no longer be reverted on their own.
//!
//! **Name.** A document's workspace is `<doc dir>/.review/<stem>_<hash12>`
//! where the hash is that of the document's *file name* (its path relative
//! to its folder, which holds `.review/`): editing the document keeps its
//! workspace, moving the folder keeps it too. koas before this named the
//! workspace after the document's *content*; such a workspace is found by
//! its `workspace.json` (same file name) and renamed to the new name, so
//! an upgrade loses no review.
//!
//! **Edits outside koas.** A document whose text is no state the review
//! knows (the original, or the document after any ledger entry) was
//! edited by hand. [`external_batch`] turns the difference between the
//! workspace's current document and that text into changes of kind
//! [`EXTERNAL_KIND`], one per differing run of lines, with patches like
//! any change: the ledger keeps its chain of hashes, the hand edit is
//! traceable (and revertible), and a review change whose lines were edited
//! by hand can no longer be reverted on its own ([`not_revertible`]).

use std::fs;
use std::path::{Path, PathBuf};

use koas_edit::apply::derive_summary;
use koas_edit::linemap::{cancel_reverted_pairs, map_through, MapMode, Region};
use koas_edit::patch::{apply_change, make_patch_pair};
use koas_edit::text::LineBuf;
use koas_kernel_api::hash::{same_hash, sha256};
use koas_orchestrator::lock::{lock_state, LockState};
use koas_review_schema::apply::{AppliedOp, BatchOutcome, LineChange};
use koas_review_schema::change_id::{ChangeId, EntryId, IdAllocator, IdError};
use koas_review_schema::edit_op::{Action, EditOp, Target};
use koas_review_schema::ledger::LedgerEntry;
use serde::Serialize;

use crate::{paths, WorkspaceMeta};

/// The kind of the changes that record an edit made outside koas.
pub const EXTERNAL_KIND: &str = "external";

fn hash12(text: &str) -> String {
    koas_kernel_api::hash::hex_part(&sha256(text))
        .chars()
        .take(12)
        .collect()
}

fn stem_of(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "doc".to_owned())
}

fn file_name_of(path: &Path) -> String {
    path.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "doc.md".to_owned())
}

fn review_dir(doc_path: &Path) -> PathBuf {
    doc_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join(".review")
}

/// The workspace of a document: `<doc dir>/.review/<stem>_<hash12>`, the
/// hash being that of the document's file name (stable across edits).
pub fn auto_workspace_dir(doc_path: &Path) -> PathBuf {
    review_dir(doc_path).join(format!(
        "{}_{}",
        stem_of(doc_path),
        hash12(&file_name_of(doc_path))
    ))
}

/// Where a document's workspace is, and what locating it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The workspace folder (it may not exist yet).
    pub root: PathBuf,
    /// A workspace named after an earlier koas's content hash that was
    /// renamed to `root`.
    pub migrated_from: Option<PathBuf>,
    /// Other workspaces of the same document under old names (left where
    /// they are; `-w` opens them).
    pub others: Vec<PathBuf>,
}

/// `<stem>_<12 hex digits>`.
fn has_workspace_shape(name: &str, stem: &str) -> bool {
    name.strip_prefix(stem)
        .and_then(|rest| rest.strip_prefix('_'))
        .is_some_and(|hash| hash.len() == 12 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn meta_of(dir: &Path) -> Option<WorkspaceMeta> {
    let bytes = fs::read(dir.join(paths::META)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// When a workspace was last written (its ledger, else its state file).
fn last_used(dir: &Path) -> std::time::SystemTime {
    [paths::LEDGER, paths::EDITED_DOC, paths::META]
        .iter()
        .filter_map(|f| fs::metadata(dir.join(f)).and_then(|m| m.modified()).ok())
        .max()
        .unwrap_or(std::time::UNIX_EPOCH)
}

/// True when `text` is the workspace's original or its current document.
fn holds(dir: &Path, meta: &WorkspaceMeta, text_hash: &str) -> bool {
    same_hash(&meta.original_hash, text_hash)
        || fs::read(dir.join(paths::EDITED_DOC)).is_ok_and(|b| same_hash(&sha256(&b), text_hash))
}

/// Workspaces of `doc_path` under the names earlier koas versions gave
/// (`<stem>_<content hash12>`), best first: one that holds `text` (as its
/// original or current document), then the most recently used.
pub fn legacy_workspaces(doc_path: &Path, text: &str) -> Vec<PathBuf> {
    let auto = auto_workspace_dir(doc_path);
    let stem = stem_of(doc_path);
    let name = file_name_of(doc_path);
    // A `.review` (or an old workspace) that is a link is not searched
    // nor renamed: opening the workspace refuses it by name.
    let dir = review_dir(doc_path);
    if fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Vec::new();
    }
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let hash = sha256(text);
    let mut found: Vec<(bool, std::time::SystemTime, PathBuf)> = read
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| *p != auto)
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| has_workspace_shape(n, &stem))
        })
        .filter_map(|p| {
            let meta = meta_of(&p)?;
            (meta.doc_name == name).then(|| (holds(&p, &meta, &hash), last_used(&p), p))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    found.into_iter().map(|(_, _, p)| p).collect()
}

/// Finds the workspace of a document. Its workspace is
/// [`auto_workspace_dir`]; when that does not exist and a workspace of
/// the document under an old content-hash name does, the best of those
/// ([`legacy_workspaces`]) is renamed to it — unless a run holds its lock,
/// in which case it is used where it is. Nothing is ever deleted: other
/// old workspaces are listed in [`Located::others`].
pub fn locate_workspace(doc_path: &Path, text: &str) -> Located {
    let auto = auto_workspace_dir(doc_path);
    let mut legacy = legacy_workspaces(doc_path, text);
    if auto.is_dir() || legacy.is_empty() {
        return Located {
            root: auto,
            migrated_from: None,
            others: legacy,
        };
    }
    let best = legacy.remove(0);
    if matches!(lock_state(&best), LockState::Held(_)) {
        return Located {
            root: best,
            migrated_from: None,
            others: legacy,
        };
    }
    match fs::rename(&best, &auto) {
        Ok(()) => Located {
            root: auto,
            migrated_from: Some(best),
            others: legacy,
        },
        // Another koas may have moved it first; otherwise use it in place.
        Err(_) if auto.is_dir() => Located {
            root: auto,
            migrated_from: None,
            others: legacy,
        },
        Err(_) => Located {
            root: best,
            migrated_from: None,
            others: legacy,
        },
    }
}

/// A hand edit that could not be carried over: it touches lines the
/// review changed (or reverted) since the file was last written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// First line of the edit in the file (1-based; for lines removed,
    /// the line after them).
    pub first: usize,
    /// Last line of the edit in the file (`first` for lines removed).
    pub last: usize,
}

/// The hand edits of `file` since `base` (the file as koas last saw it),
/// carried onto `current` (the review's document, which may have changed
/// since: changes made or reverted without writing the file). Fails with
/// the overlaps when an edit touches lines the review changed since
/// (unless both made the very same edit).
pub fn carry_edits(base: &str, current: &str, file: &str) -> Result<String, Vec<Overlap>> {
    let lines = |text: &str| LineBuf::parse(text).lines().to_vec();
    let (base, current, file) = (lines(base), lines(current), lines(file));
    let ours = hunks_between(&base, &current);
    let theirs = hunks_between(&base, &file);
    let same = |a: &Hunk, b: &Hunk| a.old == b.old && current[a.new.clone()] == file[b.new.clone()];
    let touches = |a: &Hunk, b: &Hunk| {
        (a.old.start < b.old.end && b.old.start < a.old.end)
            || a.old.start == b.old.start
            || (a.old.is_empty() && b.old.contains(&a.old.start))
            || (b.old.is_empty() && a.old.contains(&b.old.start))
    };
    let overlaps: Vec<Overlap> = theirs
        .iter()
        .filter(|t| ours.iter().any(|o| touches(o, t) && !same(o, t)))
        .map(|t| Overlap {
            first: t.new.start + 1,
            last: t.new.end.max(t.new.start + 1),
        })
        .collect();
    if !overlaps.is_empty() {
        return Err(overlaps);
    }
    // Every hunk of either side, by where it starts in the base; an edit
    // both sides made alike is taken once. No two overlap (checked above).
    let mut all: Vec<(&Hunk, &[String])> = ours.iter().map(|h| (h, current.as_slice())).collect();
    all.extend(
        theirs
            .iter()
            .filter(|t| !ours.iter().any(|o| same(o, t)))
            .map(|h| (h, file.as_slice())),
    );
    all.sort_by_key(|(h, _)| (h.old.start, h.old.end));
    let mut out = String::with_capacity(current.iter().map(String::len).sum());
    let mut at = 0;
    for (hunk, side) in all {
        base[at..hunk.old.start]
            .iter()
            .for_each(|l| out.push_str(l));
        side[hunk.new.clone()].iter().for_each(|l| out.push_str(l));
        at = hunk.old.end;
    }
    base[at..].iter().for_each(|l| out.push_str(l));
    Ok(out)
}

/// One differing run of lines: `old` in the base, `new` in the other text.
#[derive(Debug)]
struct Hunk {
    old: std::ops::Range<usize>,
    new: std::ops::Range<usize>,
}

/// The differing runs of lines from `base` to `other`, in order.
fn hunks_between(base: &[String], other: &[String]) -> Vec<Hunk> {
    let base: Vec<&str> = base.iter().map(String::as_str).collect();
    let other: Vec<&str> = other.iter().map(String::as_str).collect();
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(std::time::Duration::from_secs(10))
        .diff_slices(&base, &other);
    // The runs between two equal runs are the hunks: positions are taken
    // from the equal runs alone (the insert and delete operations may
    // name their position in the other text differently).
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut at = (0, 0);
    let close = |at: (usize, usize), end: (usize, usize), hunks: &mut Vec<Hunk>| {
        if end.0 > at.0 || end.1 > at.1 {
            hunks.push(Hunk {
                old: at.0..end.0,
                new: at.1..end.1,
            });
        }
    };
    for op in diff.ops() {
        if let similar::DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = *op
        {
            close(at, (old_index, new_index), &mut hunks);
            at = (old_index + len, new_index + len);
        }
    }
    close(at, (base.len(), other.len()), &mut hunks);
    hunks
}

/// The changes that record the edit turning `current` into `edited`: one
/// per run of differing lines (a line diff), in application order, IDs
/// from `first_id`, kind [`EXTERNAL_KIND`]. Not validated against
/// protected regions: they record what a person already did.
pub fn external_batch(
    doc_name: &str,
    current: &str,
    edited: &str,
    first_id: ChangeId,
) -> Result<BatchOutcome, IdError> {
    let mut buf = LineBuf::parse(current);
    let target = LineBuf::parse(edited);
    // Runs of differing lines, as (old start, old len, new start, new len)
    // in the coordinates of `current` and `edited`.
    let hunks: Vec<(usize, usize, usize, usize)> = hunks_between(buf.lines(), target.lines())
        .into_iter()
        .map(|h| (h.old.start, h.old.len(), h.new.start, h.new.len()))
        .collect();
    let initial_hash = buf.hash();
    let mut allocator = IdAllocator::starting_at(first_id);
    let mut applied = Vec::new();
    let mut shift: isize = 0;
    for (index, (old_start, old_len, new_start, new_len)) in hunks.into_iter().enumerate() {
        let start = (old_start as isize + shift).max(0) as usize;
        let change = LineChange {
            start,
            old: buf.lines()[start..start + old_len].to_vec(),
            new: target.lines()[new_start..new_start + new_len].to_vec(),
        };
        let id = allocator.allocate()?;
        let hash_before = buf.hash();
        let patches = make_patch_pair(doc_name, &buf, &change);
        if apply_change(&change, &mut buf).is_err() {
            // Cannot happen: the change was cut from this very text.
            continue;
        }
        shift += new_len as isize - old_len as isize;
        let (action, line_start, line_end) = if old_len == 0 {
            (Action::Insert, start, start)
        } else {
            (Action::Replace, start + 1, start + old_len)
        };
        let mut op = EditOp {
            id,
            source_id: None,
            action,
            target: Target {
                line_start,
                line_end,
                ..Target::default()
            },
            before_hash: None,
            before_text: Some(change.old.concat()),
            after_text: change.new.concat(),
            needs_attention: false,
            kind: EXTERNAL_KIND.to_owned(),
            severity: "minor".to_owned(),
            silent: false,
            review_note: None,
            rationale: "edited outside koas; recorded when the review continued on the new text"
                .to_owned(),
            summary: None,
        };
        let before_target = change.old.concat();
        op.summary = Some(format!(
            "edited outside koas: {}",
            derive_summary(&op, &before_target)
                .trim_start_matches(EXTERNAL_KIND)
                .trim_start_matches(':')
                .trim()
        ));
        let summary = derive_summary(&op, &before_target);
        applied.push(AppliedOp {
            index,
            op,
            fixes: Vec::new(),
            defaults: Vec::new(),
            change: Some(change),
            patches: Some(patches),
            doc_hash_before: hash_before,
            doc_hash_after: buf.hash(),
            touches_protected: Vec::new(),
            summary,
            state_lines: (line_start, line_end),
            origin: Default::default(),
            flagged_hash: None,
        });
    }
    Ok(BatchOutcome {
        applied,
        rejected: Vec::new(),
        known: Vec::new(),
        final_text: buf.to_text(),
        initial_hash,
        next_id: allocator.peek(),
    })
}

/// A change that cannot be reverted on its own: an edit made outside koas
/// (recorded as `by`) changed its lines afterwards, so its inverse patch
/// no longer applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotRevertible {
    /// The change.
    pub id: ChangeId,
    /// The external change that touched its lines.
    pub by: EntryId,
}

/// The active changes whose lines an edit made outside koas touched
/// later. Each is followed through the net edits after it (a change and
/// its revert cancel out); the first edit that touches it decides: when
/// that edit records a hand edit, the change is not revertible. Costs
/// nothing on a ledger without external changes.
pub fn not_revertible(entries: &[LedgerEntry]) -> Vec<NotRevertible> {
    let Some(last_external) = entries
        .iter()
        .rposition(|e| e.kind == EXTERNAL_KIND && !e.is_revert)
    else {
        return Vec::new();
    };
    let reverted: std::collections::BTreeSet<String> = entries
        .iter()
        .filter(|e| e.is_revert)
        .map(|e| e.reverted_id.clone())
        .collect();
    let chain: Vec<(EntryId, koas_edit::linemap::LineEdit)> = entries
        .iter()
        .filter_map(|e| koas_edit::linemap::edit_of(e).map(|edit| (e.id, edit)))
        .collect();
    let net = cancel_reverted_pairs(&chain);
    let external: std::collections::BTreeSet<EntryId> = entries
        .iter()
        .filter(|e| e.kind == EXTERNAL_KIND && !e.is_revert)
        .map(|e| e.id)
        .collect();
    let mut out = Vec::new();
    for entry in &entries[..last_external] {
        let Some(id) = entry.change_id() else {
            continue;
        };
        if entry.kind == EXTERNAL_KIND || reverted.contains(&id.to_string()) {
            continue;
        }
        let (Some(change), Some(position)) = (
            entry.change.filter(|_| entry.action != Action::FlagOnly),
            net.iter().position(|(e, _)| *e == entry.id),
        ) else {
            continue;
        };
        let mut region = Region {
            start: change.at.saturating_sub(1),
            len: change.added,
        };
        for (by, edit) in &net[position + 1..] {
            match map_through(region, *edit, MapMode::Strict) {
                Ok(next) => region = next,
                Err(()) => {
                    if external.contains(by) {
                        out.push(NotRevertible { id, by: *by });
                    }
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_follows_the_path_not_the_text() {
        let a = auto_workspace_dir(Path::new("docs/spec.md"));
        assert!(a.starts_with("docs/.review"), "{}", a.display());
        let name = a.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(has_workspace_shape(&name, "spec"), "{name}");
        assert_eq!(a, auto_workspace_dir(Path::new("docs/spec.md")));
        assert_ne!(a, auto_workspace_dir(Path::new("docs/spec.markdown")));
    }

    #[test]
    fn an_external_edit_becomes_one_change_per_run_of_lines() {
        let current = "a\nb\nc\nd\ne\nf\n";
        let edited = "a\nB\nc\nd\nf\ng\n";
        let batch = external_batch("doc.md", current, edited, ChangeId::first()).unwrap();
        assert_eq!(batch.final_text, edited);
        assert_eq!(batch.applied.len(), 3, "{:#?}", batch.applied);
        assert!(batch.applied.iter().all(|a| a.op.kind == EXTERNAL_KIND));
        assert_eq!(batch.next_id.seq(), 4);
        // Each patch pair takes its state to the next.
        let mut text = current.to_owned();
        for a in &batch.applied {
            let patches = a.patches.as_ref().unwrap();
            text = koas_edit::patch::apply_patch_text(&text, &patches.forward).unwrap();
            assert!(same_hash(&sha256(&text), &a.doc_hash_after));
        }
        assert_eq!(text, edited);
    }

    #[test]
    fn identical_texts_give_no_change() {
        let batch = external_batch("doc.md", "a\n", "a\n", ChangeId::first()).unwrap();
        assert!(batch.applied.is_empty());
    }

    #[test]
    fn a_hand_edit_is_carried_onto_a_change_the_file_never_had() {
        // The file was last written with the typo fixed; the review then
        // reverted the fix without writing the file; the writer edits
        // another line of the file.
        let base = "# T\n\nThe bandwidth is low.\n\nSome text.\n";
        let current = "# T\n\nThe bandwith is low.\n\nSome text.\n";
        let file = "# T\n\nThe bandwidth is low.\n\nSome text I wrote.\n";
        assert_eq!(
            carry_edits(base, current, file).unwrap(),
            "# T\n\nThe bandwith is low.\n\nSome text I wrote.\n"
        );
    }

    #[test]
    fn an_edit_of_a_line_the_review_changed_since_is_an_overlap() {
        let base = "a\nb\nc\n";
        let current = "a\nB\nc\n";
        let file = "a\nbb\nc\nd\n";
        assert_eq!(
            carry_edits(base, current, file),
            Err(vec![Overlap { first: 2, last: 2 }])
        );
        // The same edit on both sides is no overlap.
        assert_eq!(
            carry_edits(base, current, "a\nB\nc\nd\n").unwrap(),
            "a\nB\nc\nd\n"
        );
    }

    fn text() -> impl proptest::strategy::Strategy<Value = String> {
        proptest::collection::vec(
            proptest::sample::select(vec!["a\n", "b\n", "c\n", "\n"]),
            0..12,
        )
        .prop_map(|lines| lines.concat())
    }

    use proptest::prelude::*;

    proptest! {
        /// The changes that record a hand edit turn the text into the
        /// edited one, whatever the two texts.
        #[test]
        fn an_external_batch_ends_on_the_edited_text(current in text(), edited in text()) {
            let batch = external_batch("doc.md", &current, &edited, ChangeId::first()).unwrap();
            prop_assert_eq!(batch.final_text, edited);
        }

        /// Whatever the texts: with no change since the file was seen the
        /// file is taken as it is; with no hand edit the review's text is
        /// kept; and edits apart from each other both survive.
        #[test]
        fn carrying_edits_keeps_each_side_alone(base in text(), other in text(), tail in text()) {
            prop_assert_eq!(carry_edits(&base, &base, &other).unwrap(), other.clone());
            prop_assert_eq!(carry_edits(&base, &other, &base).unwrap(), other.clone());
            // The review changed the head, the writer appended a tail
            // after a line neither touched.
            let base2 = format!("{base}SEP\n");
            let ours = format!("{other}SEP\n");
            let theirs = format!("{base}SEP\n{tail}");
            prop_assert_eq!(
                carry_edits(&base2, &ours, &theirs).unwrap(),
                format!("{other}SEP\n{tail}")
            );
        }
    }
}
