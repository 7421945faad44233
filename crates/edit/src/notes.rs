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
//! block, and one that would follow a block left open at the end of the
//! document (an unclosed code fence) goes before that block, since after
//! it the note would be part of it. The alert type comes from the severity map (the note's own alert
//! when the severity is unknown). Blank lines separate the block from its
//! neighbours; the document's line endings and its missing final newline
//! are kept. The note's text is escaped ([`escape_markdown`]): whatever
//! an op or a model wrote in it is shown, never rendered as HTML, a link,
//! an image or a heading.

use koas_review_schema::notes::PlacedNote;

use crate::linemap::{LaterEdits, Region};
use crate::protected::block_containing;
use crate::text::{escape_markdown, is_blank, LineBuf};
use koas_review_schema::change_id::EntryId;
use koas_review_schema::edit_op::{Action, Alert, ReviewPolicy};
use koas_review_schema::ledger::LedgerEntry;
use koas_review_schema::stage1::{BlockKind, ProtectedSpan, ProtectedSpans};

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
    current_regions(entries, |i| i == index)
        .into_iter()
        .find_map(|(i, region)| (i == index).then_some(region))
}

/// The lines entry `entry` wrote (for a flag: the lines it flagged), in
/// the state just after it.
fn own_region(entry: &LedgerEntry) -> Option<Region> {
    let change = entry.change?;
    let len = if entry.action == Action::FlagOnly {
        change.removed
    } else {
        change.added
    };
    Some(Region {
        start: change.at.saturating_sub(1),
        len,
    })
}

/// [`current_region`] of every entry `wanted` accepts, in one backward
/// pass over the ledger: each entry's region is followed only through the
/// net edits after it, so the cost grows with the live edits, not with
/// the length of the ledger's history. Results are latest entry first.
pub fn current_regions(
    entries: &[LedgerEntry],
    wanted: impl Fn(usize) -> bool,
) -> Vec<(usize, Region)> {
    let mut later = LaterEdits::default();
    let mut out = Vec::new();
    for (index, entry) in entries.iter().enumerate().rev() {
        if wanted(index) {
            if let Some(region) = own_region(entry) {
                out.push((index, later.map_clamped(region)));
            }
        }
        if let Some(edit) = crate::linemap::edit_of(entry) {
            later.push_front(entry.id, edit);
        }
    }
    out
}

/// Which protected block holds each line, and the inline spans that run
/// over several lines: built once so that placing many notes does not
/// scan every region for each of them.
struct Placement<'a> {
    /// 1-based line → index in `spans.blocks` of the first block holding it.
    block_of_line: Vec<Option<usize>>,
    spans: &'a ProtectedSpans,
    /// Inline spans that end on a later line than they start, by start.
    multiline: Vec<(usize, usize)>,
}

impl<'a> Placement<'a> {
    fn new(spans: &'a ProtectedSpans, lines: usize) -> Self {
        let mut block_of_line = vec![None; lines + 2];
        for (i, block) in spans.blocks.iter().enumerate() {
            let start = (block.line_start as usize).min(lines + 1);
            let end = (block.line_end as usize).min(lines + 1);
            for slot in block_of_line.iter_mut().take(end + 1).skip(start) {
                if slot.is_none() {
                    *slot = Some(i);
                }
            }
        }
        let mut multiline: Vec<(usize, usize)> = spans
            .inlines
            .iter()
            .filter(|s| s.line < s.end_line)
            .map(|s| (s.line as usize, s.end_line as usize))
            .collect();
        multiline.sort_unstable();
        Placement {
            block_of_line,
            spans,
            multiline,
        }
    }

    /// The block holding 1-based `line`.
    fn block(&self, line: usize) -> Option<&'a ProtectedSpan> {
        match self.block_of_line.get(line) {
            Some(Some(i)) => self.spans.blocks.get(*i),
            Some(None) => None,
            // Past the lines the document had when indexed.
            None => block_containing(self.spans, line),
        }
    }

    /// The end line of the first multi-line inline span that starts at or
    /// before `line` and ends after it.
    fn inline_end(&self, line: usize) -> Option<usize> {
        let upto = self.multiline.partition_point(|&(start, _)| start <= line);
        self.multiline[..upto]
            .iter()
            .find(|&&(_, end)| line < end)
            .map(|&(_, end)| end)
    }
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

/// For each 1-based line, the last line of the run of plain lines (not
/// blank, not a heading, in no protected block) that follows it: where a
/// note placed in a paragraph moves to. Built once, backwards, so that
/// placing a note in a long paragraph does not walk it for every note.
fn paragraph_ends(doc: &LineBuf, place: &Placement<'_>) -> Vec<usize> {
    let content = |l: usize| doc.content(l - 1).unwrap_or("");
    let plain =
        |l: usize| !is_blank(content(l)) && !is_atx_heading(content(l)) && place.block(l).is_none();
    let mut ends = vec![0; doc.len() + 1];
    for line in (1..=doc.len()).rev() {
        ends[line] = if line < doc.len() && plain(line + 1) {
            ends[line + 1]
        } else {
            line
        };
    }
    ends
}

/// Moves an insertion point (after 1-based `line`; 0 = top) to the end of
/// the block it is in, and out of protected blocks. `ends` is
/// [`paragraph_ends`] of `doc`.
fn settle(doc: &LineBuf, place: &Placement<'_>, ends: &[usize], mut line: usize) -> usize {
    let content = |l: usize| doc.content(l - 1).unwrap_or("");
    for _ in 0..=doc.len() {
        let before = line;
        if let Some(block) = place.block(line) {
            // The end of a protected block is a block boundary.
            line = block.line_end as usize;
        } else if line > 0 && !is_blank(content(line)) && !is_atx_heading(content(line)) {
            line = ends.get(line).copied().unwrap_or(line);
        }
        if let Some(end) = place.inline_end(line) {
            line = end;
        }
        if line == before {
            break;
        }
    }
    line.min(doc.len())
}

/// The first line (1-based) of the block the document ends inside, when
/// that block is left open: an unclosed fence (or math block, HTML
/// comment…) runs to the end of the document, so a note placed after its
/// last line would be part of it. Only the block holding the last line
/// is parsed again, with a blank line and a line of prose after it, as a
/// note follows it.
fn open_at_end(doc: &LineBuf, place: &Placement<'_>) -> Option<usize> {
    let last = doc.len();
    if last == 0 {
        return None;
    }
    let start = (place.block(last)?.line_start as usize).clamp(1, last);
    let mut tail: String = doc.lines()[start - 1..].concat();
    if !tail.ends_with('\n') {
        tail.push('\n');
    }
    tail.push_str("\nx\n");
    let probe = (last - start + 1 + 2) as u32;
    let (regions, _) = koas_md::stage1::protected_spans_for(&tail, ProtectedSpans::default());
    regions
        .blocks
        .iter()
        .any(|b| b.line_start <= probe && probe <= b.line_end)
        .then_some(start)
}

/// Moves a note out of the inside of a top-level block that holds a code
/// block after it: a note there ends the block's container (a list item,
/// a quote), and a fence the container held would then run on past its
/// container's end, over the note and what follows. `tops` are the
/// top-level blocks' line ranges (0-based, end excluded).
fn out_of_containers(
    tops: &[std::ops::Range<usize>],
    protected: &ProtectedSpans,
    after_line: usize,
) -> usize {
    // The block holding line `after_line` (1-based) and its next line.
    let at = tops.partition_point(|r| r.end < after_line + 1);
    let Some(top) = tops
        .get(at)
        .filter(|r| r.start < after_line && after_line < r.end)
    else {
        return after_line;
    };
    let holds_code_after = protected.blocks.iter().any(|b| {
        matches!(b.kind, BlockKind::CodeFence | BlockKind::IndentedCode)
            && (b.line_start as usize) > after_line
            && (b.line_start as usize) <= top.end
    });
    if holds_code_after {
        top.end
    } else {
        after_line
    }
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

/// The alert block's lines. The note's text (an op's, a person's or a
/// model's) is escaped here, where it becomes Markdown: the ledger keeps
/// it as written.
fn block_lines(alert: Alert, text: &str) -> Vec<String> {
    let mut lines = vec![format!("> [!{}]", alert.as_str())];
    for line in text.lines() {
        if line.trim().is_empty() {
            lines.push(">".to_owned());
        } else {
            lines.push(format!("> {}", escape_markdown(line)));
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
    let notes = placed_notes(&doc, edited, entries, protected, policy);
    let text = with_notes(&doc, &notes);
    Annotated { text, notes }
}

/// The notes of the entries that need attention, each after the line it
/// settles on, in line order.
fn placed_notes(
    doc: &LineBuf,
    edited: &str,
    entries: &[LedgerEntry],
    protected: &ProtectedSpans,
    policy: &ReviewPolicy,
) -> Vec<PlacedNote> {
    let place = Placement::new(protected, doc.len());
    let ends = paragraph_ends(doc, &place);
    let reverted = crate::query::undone_ids(entries);
    let wanted = |index: usize| {
        let entry = &entries[index];
        matches!(entry.id, EntryId::Change(id) if !reverted.contains(&id))
            && entry.needs_attention
            && entry.review_note.is_some()
    };
    let mut regions = current_regions(entries, wanted);
    // Ledger order, as notes at one line are shown in that order.
    regions.reverse();
    // A note is never placed inside a block left open at the end: it goes
    // before the block instead; nor inside a top-level block that holds a
    // code block after it (parsed only when there is code).
    let open_from = open_at_end(doc, &place);
    let has_code = protected
        .blocks
        .iter()
        .any(|b| matches!(b.kind, BlockKind::CodeFence | BlockKind::IndentedCode));
    let tops = if has_code && !entries.is_empty() {
        koas_md::shape::top_level_blocks(edited)
    } else {
        Vec::new()
    };
    let mut notes: Vec<PlacedNote> = Vec::new();
    for (index, region) in regions {
        let entry = &entries[index];
        let (EntryId::Change(id), Some(note)) = (entry.id, &entry.review_note) else {
            continue;
        };
        let anchor = region.end().max(region.start);
        let mut after_line = settle(doc, &place, &ends, anchor.min(doc.len()));
        after_line = out_of_containers(&tops, protected, after_line);
        if let Some(start) = open_from.filter(|&start| after_line >= start) {
            after_line = start - 1;
        }
        notes.push(PlacedNote {
            id,
            alert: policy.alert_for(&entry.severity).unwrap_or(note.alert),
            after_line,
            text: note.text.clone(),
        });
    }
    notes.sort_by_key(|n| n.after_line);
    notes
}

/// `doc`'s text with `notes` inserted.
fn with_notes(doc: &LineBuf, notes: &[PlacedNote]) -> String {
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
    out.concat()
}

#[cfg(test)]
mod tests;
