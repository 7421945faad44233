//! What an op may not touch: the protected regions Stage 1 found
//! ([`ProtectedSpans`]), as the engine reads them.
//!
//! Blocks (code fences, tables, math, front matter, HTML, link
//! definitions) are whole-line ranges. Inline spans (inline code, inline
//! math, autolinks...) are byte ranges inside lines.
//!
//! *Touching* is decided as follows (see `docs/decisions.md`):
//! - a replace or delete touches a block when its target lines overlap the
//!   block; an insert touches a block when it inserts strictly inside it,
//!   or when it has to add a newline to a block's last line;
//! - any op touches an inline span when the bytes it really changes (after
//!   trimming what the old and new text share at both ends) overlap the
//!   span, or when it inserts strictly inside it.

use koas_review_schema::stage1::{InlineSpan, LineNo, ProtectedSpan, ProtectedSpans};

use crate::linemap::{map_through_all, LineEdit, MapMode, Region};
use crate::text::LineBuf;

/// A 1-based line number as the artifacts write it (documents never reach
/// 4 billion lines; a larger value saturates).
fn line_no(line: usize) -> LineNo {
    LineNo::try_from(line).unwrap_or(LineNo::MAX)
}

/// `line` as an index type.
fn line_index(line: LineNo) -> usize {
    usize::try_from(line).unwrap_or(usize::MAX)
}

/// True when the half-open byte range `[from, to)` changes a byte of
/// `span`, or (when empty) inserts strictly inside it.
pub fn inline_touched_by_bytes(span: &InlineSpan, from: usize, to: usize) -> bool {
    let (from, to) = (from as u64, to as u64);
    if from == to {
        span.byte_start < from && from < span.byte_end
    } else {
        from < span.byte_end && span.byte_start < to
    }
}

/// Column → byte lookups within the lines of one document, remembering
/// the character offsets of the last line asked for: a line can hold tens
/// of thousands of inline spans, and walking it from its start for each
/// one would cost the square of its length.
struct Columns<'a> {
    doc: &'a LineBuf,
    line: Option<usize>,
    /// Byte offset of each character of `line`.
    chars: Vec<usize>,
    len: usize,
}

impl<'a> Columns<'a> {
    fn new(doc: &'a LineBuf) -> Self {
        Columns {
            doc,
            line: None,
            chars: Vec::new(),
            len: 0,
        }
    }

    /// Byte offset, within 0-based line `index`, of 1-based character
    /// column `column` (the line's length when past its end).
    fn byte_of(&mut self, index: usize, column: usize) -> Option<usize> {
        if self.line != Some(index) {
            let line = self.doc.raw_line(index)?;
            self.chars.clear();
            self.chars.extend(line.char_indices().map(|(b, _)| b));
            self.len = line.len();
            self.line = Some(index);
        }
        Some(
            self.chars
                .get(column.saturating_sub(1))
                .copied()
                .unwrap_or(self.len),
        )
    }
}

/// A protected region an op touches, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Touched<'a> {
    /// A block of whole lines (code fence, table, math…).
    Block(&'a ProtectedSpan),
    /// A span inside a line (inline code, inline math, autolink…).
    Inline(&'a InlineSpan),
}

impl Touched<'_> {
    /// "the code_fence at lines 38–55"; inline spans give the column just
    /// past their last character, as the reports always have.
    pub fn describe(&self) -> String {
        match self {
            Touched::Block(b) => format!(
                "the {} at lines {}–{}",
                b.kind.as_str(),
                b.line_start,
                b.line_end
            ),
            Touched::Inline(s) if s.line == s.end_line => format!(
                "the {} at line {}, columns {}–{}",
                s.kind.as_str(),
                s.line,
                s.column,
                s.end_column + 1
            ),
            Touched::Inline(s) => format!(
                "the {} from line {} col {} to line {} col {}",
                s.kind.as_str(),
                s.line,
                s.column,
                s.end_line,
                s.end_column + 1
            ),
        }
    }
}

/// True when there is nothing to protect.
pub fn is_empty(spans: &ProtectedSpans) -> bool {
    spans.blocks.is_empty() && spans.inlines.is_empty()
}

/// The block containing 1-based `line`, if any.
pub fn block_containing(spans: &ProtectedSpans, line: usize) -> Option<&ProtectedSpan> {
    spans.block_at_line(line_no(line))
}

/// Regions touched by an op whose target lines are `lines` (`None` for an
/// insertion point), which inserts strictly after line `insert_after` if
/// it is an insert, and whose real byte change is the half-open range
/// `bytes`.
pub fn touched_by(
    spans: &ProtectedSpans,
    lines: Option<(usize, usize)>,
    insert_after: Option<usize>,
    bytes: (usize, usize),
) -> Vec<Touched<'_>> {
    let mut out = Vec::new();
    for block in &spans.blocks {
        let by_lines = lines.is_some_and(|(s, e)| block.overlaps(line_no(s), line_no(e)));
        let inside = insert_after.is_some_and(|after| {
            let after = line_no(after);
            block.line_start <= after && after < block.line_end
        });
        if by_lines || inside {
            out.push(Touched::Block(block));
        }
    }
    for span in &spans.inlines {
        if inline_touched_by_bytes(span, bytes.0, bytes.1) {
            out.push(Touched::Inline(span));
        }
    }
    out
}

/// The same regions located in a later document state, after `edits` (in
/// application order); `after` is that later document. Regions that an
/// edit touched are widened to cover it; an inline span whose lines an
/// edit touched becomes the whole of those lines (its bytes may have moved
/// within them): when in doubt, protect. Byte offsets are those of
/// `after`; content hashes stay those of the regions as detected.
pub fn mapped_through(
    spans: &ProtectedSpans,
    edits: &[LineEdit],
    after: &LineBuf,
) -> ProtectedSpans {
    let offsets = after.line_offsets();
    let end_of = |last: usize| -> u64 {
        // Just past the content of 1-based line `last` (its terminator
        // excluded), as Stage 1 measures blocks.
        let start = offsets.get(last - 1).copied().unwrap_or(0);
        let line = after.raw_line(last - 1).unwrap_or("");
        (start + crate::text::strip_terminator(line).len()) as u64
    };
    let blocks = spans
        .blocks
        .iter()
        .filter_map(|b| {
            let region = Region {
                start: line_index(b.line_start).checked_sub(1)?,
                len: line_index(b.line_end) + 1 - line_index(b.line_start),
            };
            let mapped = map_through_all(region, edits.iter().copied(), MapMode::Clamp).ok()?;
            (mapped.len > 0).then(|| ProtectedSpan {
                line_start: line_no(mapped.start + 1),
                line_end: line_no(mapped.end()),
                byte_start: offsets.get(mapped.start).copied().unwrap_or(0) as u64,
                byte_end: end_of(mapped.end()),
                ..b.clone()
            })
        })
        .collect();
    let mut columns = Columns::new(after);
    let inlines = spans
        .inlines
        .iter()
        .filter_map(|s| {
            let region = Region {
                start: line_index(s.line).checked_sub(1)?,
                len: line_index(s.end_line) + 1 - line_index(s.line),
            };
            match map_through_all(region, edits.iter().copied(), MapMode::Strict) {
                Ok(mapped) => {
                    let line = mapped.start + 1;
                    let end_line = mapped.end();
                    let byte_start =
                        offsets.get(line - 1)? + columns.byte_of(line - 1, s.column as usize)?;
                    let byte_end = offsets.get(end_line - 1)?
                        + columns.byte_of(end_line - 1, s.end_column as usize + 1)?;
                    Some(InlineSpan {
                        line: line_no(line),
                        end_line: line_no(end_line),
                        byte_start: byte_start as u64,
                        byte_end: byte_end as u64,
                        ..s.clone()
                    })
                }
                Err(_) => {
                    // An edit changed the span's lines: its bytes may have
                    // moved inside them, so protect those whole lines.
                    let mapped =
                        map_through_all(region, edits.iter().copied(), MapMode::Clamp).ok()?;
                    if mapped.len == 0 {
                        return None;
                    }
                    let byte_start = *offsets.get(mapped.start)?;
                    let byte_end = *offsets.get(mapped.end())?;
                    let last = after.raw_line(mapped.end() - 1).unwrap_or("");
                    Some(InlineSpan {
                        kind: s.kind,
                        line: line_no(mapped.start + 1),
                        column: 1,
                        end_line: line_no(mapped.end()),
                        end_column: u32::try_from(last.chars().count()).unwrap_or(u32::MAX),
                        byte_start: byte_start as u64,
                        byte_end: byte_end as u64,
                    })
                }
            }
        })
        .collect();
    ProtectedSpans {
        doc_hash: after.hash(),
        line_count: line_no(after.len()),
        blocks,
        inlines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::stage1::{BlockKind, InlineKind};

    fn block(s: usize, e: usize) -> ProtectedSpan {
        ProtectedSpan::from_lines(BlockKind::CodeFence, (s) as u32, (e) as u32)
    }

    #[test]
    fn block_touching_rules() {
        let regions = ProtectedSpans {
            blocks: vec![block(10, 14)],
            inlines: vec![],
            ..Default::default()
        };
        assert_eq!(touched_by(&regions, Some((8, 10)), None, (0, 1)).len(), 1);
        assert!(touched_by(&regions, Some((15, 16)), None, (0, 1)).is_empty());
        // inserting after the closing line is fine, inside is not
        assert!(touched_by(&regions, None, Some(14), (0, 0)).is_empty());
        assert!(touched_by(&regions, None, Some(9), (0, 0)).is_empty());
        assert_eq!(touched_by(&regions, None, Some(12), (0, 0)).len(), 1);
    }

    #[test]
    fn inline_touching_is_byte_precise() {
        let span = InlineSpan {
            kind: InlineKind::InlineCode,
            line: 1,
            column: 5,
            end_line: 1,
            end_column: 9,
            byte_start: 4,
            byte_end: 9,
        };
        assert!(inline_touched_by_bytes(&span, 8, 12));
        assert!(!inline_touched_by_bytes(&span, 9, 12));
        assert!(!inline_touched_by_bytes(&span, 0, 4));
        assert!(inline_touched_by_bytes(&span, 6, 6));
        assert!(!inline_touched_by_bytes(&span, 4, 4));
    }

    #[test]
    fn mapping_follows_edits() {
        let text = "new line\nintró `code` here\n";
        let regions = ProtectedSpans {
            blocks: vec![block(3, 4)],
            inlines: vec![InlineSpan {
                kind: InlineKind::InlineCode,
                line: 1,
                column: 7,
                end_line: 1,
                end_column: 12,
                byte_start: 7,
                byte_end: 13,
            }],
            ..Default::default()
        };
        let edits = [LineEdit {
            start: 0,
            old_len: 0,
            new_len: 1,
        }];
        let mapped = mapped_through(&regions, &edits, &LineBuf::parse(text));
        assert_eq!(mapped.blocks[0].line_start, 4);
        assert_eq!(mapped.blocks[0].line_end, 5);
        let span = &mapped.inlines[0];
        assert_eq!(span.line, 2);
        assert_eq!(
            &text[span.byte_start as usize..span.byte_end as usize],
            "`code`"
        );
    }
}
