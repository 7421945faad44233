//! What a document's review workspace tells the editor: the recorded
//! changes on each line (hover, code lenses), and the `koas.revert` and
//! `koas.review` commands through the reviewer's library calls.

use koas_report::markdown::{current_lines, original_lines};
use koas_review::ReviewTarget;
use koas_review_schema::change_id::EntryId;
use koas_review_schema::edit_op::Action;
use koas_review_schema::ledger::LedgerEntry;
use std::path::Path;

/// One change recorded for a document, placed on the buffer's lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedChange {
    /// `RVW-NNNN`.
    pub id: String,
    /// Its kind (`typo`, `clarity`…).
    pub kind: String,
    /// Applied or only flagged.
    pub flag: bool,
    /// Why it was made.
    pub rationale: String,
    /// Its one-line summary.
    pub summary: String,
    /// First line (0-based) it covers in the buffer.
    pub first: usize,
    /// Last line (0-based, inclusive).
    pub last: usize,
}

/// Which text the ledger's lines were placed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The buffer is the reviewed document: the changes are in it.
    Current,
    /// The buffer is the document before the review: the changes are
    /// proposed (in the workspace, not yet in this file).
    Proposed,
    /// Neither: edited since; lines may have moved.
    Moved,
}

/// The active changes of `doc`'s review, placed on `buffer`'s lines;
/// `None` when the document has no review workspace.
pub fn changes(doc: &Path, buffer: &str) -> anyhow::Result<Option<(Placement, Vec<PlacedChange>)>> {
    let target = ReviewTarget::of_doc(doc)?;
    if target.require_workspace().is_err() {
        return Ok(None);
    }
    let ledger = target.workspace.ledger()?;
    let entries = ledger.entries();
    // Through the same guard as every document read (regular files only,
    // bounded): hovers and lenses run on the main loop.
    let current_path = target.current_doc_path();
    let limit = koas_review::input::max_doc_bytes(None)?;
    let current = koas_review::input::read_document_bytes(
        &current_path,
        &current_path.display().to_string(),
        limit,
        false,
    )
    .ok()
    .and_then(|bytes| String::from_utf8(bytes).ok())
    .unwrap_or_default();
    let placement = if buffer == current {
        Placement::Current
    } else if buffer == target.text && target.current_doc_path() != target.doc_path {
        Placement::Proposed
    } else {
        Placement::Moved
    };
    let lines = match placement {
        Placement::Proposed => original_lines(entries),
        Placement::Current | Placement::Moved => current_lines(entries),
    };
    Ok(Some((placement, place(entries, &lines))))
}

/// The active (not reverted, not dismissed) changes with their lines.
fn place(entries: &[LedgerEntry], lines: &[Option<usize>]) -> Vec<PlacedChange> {
    let undone = koas_edit::query::undone_ids(entries);
    entries
        .iter()
        .zip(lines)
        .filter_map(|(entry, line)| {
            let EntryId::Change(id) = entry.id else {
                return None;
            };
            if undone.contains(&id) || entry.is_revert {
                return None;
            }
            let change = entry.change?;
            let first = line.unwrap_or(change.at).max(1) - 1;
            let span = if entry.action == Action::FlagOnly {
                change.removed
            } else {
                change.added
            };
            Some(PlacedChange {
                id: entry.id.to_string(),
                kind: entry.kind.clone(),
                flag: entry.action == Action::FlagOnly,
                rationale: entry.rationale.clone(),
                summary: entry.summary.clone(),
                first,
                last: first + span.max(1) - 1,
            })
        })
        .collect()
}

/// The hover text for the changes on one line.
pub fn hover_markdown(doc: &Path, placement: Placement, on_line: &[&PlacedChange]) -> String {
    let mut out = String::new();
    let note = match placement {
        Placement::Current => "",
        Placement::Proposed => " (proposed: in the review workspace, not yet in this file)",
        Placement::Moved => " (the document changed since the review: lines may have moved)",
    };
    for c in on_line {
        let what = if c.flag { "flag" } else { "change" };
        out.push_str(&format!(
            "**{}** · {what} · `{}`{note}\n\n{}\n\n",
            c.id, c.kind, c.summary
        ));
        if !c.rationale.is_empty() {
            out.push_str(&format!("Why: {}\n\n", c.rationale));
        }
        let verb = if c.flag { "dismiss" } else { "revert" };
        out.push_str(&format!(
            "Undo: `koas {verb} {} {}`\n\n",
            shell_word(&doc.display().to_string()),
            c.id
        ));
    }
    out.trim_end().to_string()
}

/// `word` quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("docs/spec.md"), "docs/spec.md");
        assert_eq!(shell_word("my spec.md"), "'my spec.md'");
        assert_eq!(shell_word("it's.md"), "'it'\\''s.md'");
    }
}
