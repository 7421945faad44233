//! Inline review notes (`md_inline_notes_inject`): a GitHub alert block
//! after each change that needs attention.
//!
//! ```markdown
//! > [!WARNING]
//! > REVIEWER: RVW-0034 — Terminology change: "bandwidth" replaced with "throughput".
//! ```
//!
//! The annotated document is built from the edited document and the
//! ledger, so it can be rebuilt after any revert. For each change entry
//! that needs attention, has a review note and is not reverted, the block
//! goes after the changed lines, moved forward to the end of the Markdown
//! block they belong to (the next blank line), so it never splits a
//! paragraph, a list item or a protected region (code fence, table...): a
//! note whose position falls inside a protected block goes after the
//! block. The alert type comes from the severity map (the note's own alert
//! when the severity is unknown). Blank lines separate the block from its
//! neighbours; the document's line endings and its missing final newline
//! are kept.

use koas_review_schema::notes::PlacedNote;

use crate::linemap::{cancel_reverted_pairs, map_through_all, LineEdit, MapMode, Region};
use crate::protected::block_containing;
use crate::text::{is_blank, LineBuf};
use koas_review_schema::change_id::EntryId;
use koas_review_schema::edit_op::{Action, Alert, ReviewPolicy};
use koas_review_schema::ledger::LedgerEntry;
use koas_review_schema::stage1::ProtectedSpans;

/// The annotated document and where its notes went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotated {
    /// The document with alert blocks.
    pub text: String,
    /// The notes, in document order.
    pub notes: Vec<PlacedNote>,
}

/// The region of entry `index` in the state after every entry, following
/// it through the later entries (changes and their reverts cancel out).
pub fn current_region(entries: &[LedgerEntry], index: usize) -> Option<Region> {
    let entry = entries.get(index)?;
    let change = entry.change?;
    let len = if entry.action == Action::FlagOnly {
        change.removed
    } else {
        change.added
    };
    let region = Region {
        start: change.at.saturating_sub(1),
        len,
    };
    let chain: Vec<(EntryId, LineEdit)> = entries[index + 1..]
        .iter()
        .filter_map(|e| crate::linemap::edit_of(e).map(|edit| (e.id, edit)))
        .collect();
    let chain = cancel_reverted_pairs(&chain);
    map_through_all(region, chain.into_iter().map(|(_, e)| e), MapMode::Clamp).ok()
}

fn is_atx_heading(line: &str) -> bool {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return false;
    }
    let hashes = trimmed.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes)
        && trimmed[hashes..]
            .chars()
            .next()
            .map_or(true, |c| c == ' ' || c == '\t')
}

/// Moves an insertion point (after 1-based `line`; 0 = top) to the end of
/// the block it is in, and out of protected blocks.
fn settle(doc: &LineBuf, protected: &ProtectedSpans, mut line: usize) -> usize {
    let content = |l: usize| doc.content(l - 1).unwrap_or("");
    for _ in 0..=doc.len() {
        let before = line;
        if let Some(block) = block_containing(protected, line) {
            // The end of a protected block is a block boundary.
            line = block.line_end as usize;
        } else if line > 0 && !is_blank(content(line)) && !is_atx_heading(content(line)) {
            while line < doc.len()
                && !is_blank(content(line + 1))
                && !is_atx_heading(content(line + 1))
                && block_containing(protected, line + 1).is_none()
            {
                line += 1;
            }
        }
        if let Some(span) = protected
            .inlines
            .iter()
            .find(|s| s.line as usize <= line && line < s.end_line as usize)
        {
            line = span.end_line as usize;
        }
        if line == before {
            break;
        }
    }
    line.min(doc.len())
}

fn take_group<'a>(
    pending: &mut std::iter::Peekable<std::slice::Iter<'a, PlacedNote>>,
    at: usize,
) -> Vec<&'a PlacedNote> {
    let mut group = Vec::new();
    while let Some(note) = pending.next_if(|n| n.after_line == at) {
        group.push(note);
    }
    group
}

fn block_lines(alert: Alert, text: &str) -> Vec<String> {
    let mut lines = vec![format!("> [!{}]", alert.as_str())];
    for line in text.lines() {
        if line.trim().is_empty() {
            lines.push(">".to_owned());
        } else {
            lines.push(format!("> {line}"));
        }
    }
    lines
}

/// Builds the annotated document. `protected` are the protected regions
/// of `edited` (see [`crate::protected::mapped_through`]).
pub fn annotate(
    edited: &str,
    entries: &[LedgerEntry],
    protected: &ProtectedSpans,
    policy: &ReviewPolicy,
) -> Annotated {
    let doc = LineBuf::parse(edited);
    let mut notes: Vec<PlacedNote> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let EntryId::Change(id) = entry.id else {
            continue;
        };
        let Some(note) = &entry.review_note else {
            continue;
        };
        if !entry.needs_attention || entries.iter().any(|e| e.id == EntryId::Revert(id)) {
            continue;
        }
        let Some(region) = current_region(entries, index) else {
            continue;
        };
        let anchor = region.end().max(region.start);
        let after_line = settle(&doc, protected, anchor.min(doc.len()));
        notes.push(PlacedNote {
            id,
            alert: policy.alert_for(&entry.severity).unwrap_or(note.alert),
            after_line,
            text: note.text.clone(),
        });
    }
    notes.sort_by_key(|n| n.after_line);

    let eol = doc.eol();
    let mut out: Vec<String> = Vec::with_capacity(doc.len() + notes.len() * 4);
    let mut pending = notes.iter().peekable();
    let emit_notes = |out: &mut Vec<String>, at: usize, group: Vec<&PlacedNote>| {
        let previous_blank = at == 0 || out.last().map_or(true, |l| is_blank(l));
        if !previous_blank {
            out.push(eol.to_owned());
        }
        for (i, note) in group.iter().enumerate() {
            if i > 0 {
                out.push(eol.to_owned());
            }
            out.extend(
                block_lines(note.alert, &note.text)
                    .into_iter()
                    .map(|l| format!("{l}{eol}")),
            );
        }
        let next_blank = doc.content(at).map_or(true, is_blank);
        if !next_blank {
            out.push(eol.to_owned());
        }
    };
    let top = take_group(&mut pending, 0);
    if !top.is_empty() {
        emit_notes(&mut out, 0, top);
    }
    for (index, line) in doc.lines().iter().enumerate() {
        let number = index + 1;
        let group = take_group(&mut pending, number);
        if group.is_empty() {
            out.push(line.clone());
            continue;
        }
        let last_without_newline = !line.ends_with('\n');
        out.push(if last_without_newline {
            format!("{line}{eol}")
        } else {
            line.clone()
        });
        emit_notes(&mut out, number, group);
        if last_without_newline {
            if let Some(last) = out.last_mut() {
                let trimmed = crate::text::strip_terminator(last).to_owned();
                *last = trimmed;
            }
        }
    }
    Annotated {
        text: out.concat(),
        notes,
    }
}

#[cfg(test)]
mod tests;
