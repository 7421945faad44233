//! Protected regions as the engine receives them.
//!
//! Stage 1 detects them; the engine only needs their positions. Blocks
//! (code fences, tables, math, front matter, HTML, link definitions) are
//! whole-line ranges. Inline spans (inline code, inline math, autolinks...)
//! are byte ranges inside lines.
//!
//! *Touching* is decided as follows (see `docs/decisions.md`):
//! - a replace or delete touches a block when its target lines overlap the
//!   block; an insert touches a block when it inserts strictly inside it,
//!   or when it has to add a newline to a block's last line;
//! - any op touches an inline span when the bytes it really changes (after
//!   trimming what the old and new text share at both ends) overlap the
//!   span, or when it inserts strictly inside it.

use serde::{Deserialize, Serialize};

use crate::linemap::{map_through_all, LineEdit, MapMode, Region};
use crate::text::LineBuf;

/// A protected block: whole lines `line_start..=line_end` (1-based).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedRange {
    /// Kind, e.g. `code_fence`, `table`, `math_block`.
    pub kind: String,
    /// First line, 1-based.
    pub line_start: usize,
    /// Last line, 1-based inclusive.
    pub line_end: usize,
}

impl ProtectedRange {
    /// True when the 1-based inclusive line range overlaps the block.
    pub fn overlaps_lines(&self, start: usize, end: usize) -> bool {
        start <= self.line_end && self.line_start <= end
    }

    /// True when `line` (1-based) is inside the block.
    pub fn contains_line(&self, line: usize) -> bool {
        self.line_start <= line && line <= self.line_end
    }
}

/// A protected inline span, located by lines/columns and by bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InlineSpan {
    /// Kind, e.g. `inline_code`, `inline_math`.
    pub kind: String,
    /// Line of the first byte, 1-based.
    pub line_start: usize,
    /// Column of the first character, 1-based, counted in characters
    /// (as Stage 1 reports them).
    pub col_start: usize,
    /// Line of the last byte, 1-based.
    pub line_end: usize,
    /// Column just past the last character, 1-based, in characters.
    pub col_end: usize,
    /// Offset of the first byte in the document.
    pub start_byte: usize,
    /// Offset just past the last byte in the document.
    pub end_byte: usize,
}

impl InlineSpan {
    /// True when the half-open byte range `[from, to)` changes a byte of the
    /// span, or (when empty) inserts strictly inside it.
    pub fn touched_by_bytes(&self, from: usize, to: usize) -> bool {
        if from == to {
            self.start_byte < from && from < self.end_byte
        } else {
            from < self.end_byte && self.start_byte < to
        }
    }
}

/// Byte offset, within `line`, of 1-based character column `column`
/// (the line's length when the column is past its end).
fn byte_of_column(line: &str, column: usize) -> usize {
    line.char_indices()
        .nth(column.saturating_sub(1))
        .map_or(line.len(), |(byte, _)| byte)
}

/// Every protected region of one document state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedRegions {
    /// Whole-line blocks.
    #[serde(default)]
    pub blocks: Vec<ProtectedRange>,
    /// Inline spans.
    #[serde(default)]
    pub inline: Vec<InlineSpan>,
}

/// A protected region an op touches, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Touched<'a> {
    /// A block.
    Block(&'a ProtectedRange),
    /// An inline span.
    Inline(&'a InlineSpan),
}

impl Touched<'_> {
    /// "the code_fence at lines 38–55".
    pub fn describe(&self) -> String {
        match self {
            Touched::Block(b) => format!("the {} at lines {}–{}", b.kind, b.line_start, b.line_end),
            Touched::Inline(s) if s.line_start == s.line_end => format!(
                "the {} at line {}, columns {}–{}",
                s.kind, s.line_start, s.col_start, s.col_end
            ),
            Touched::Inline(s) => format!(
                "the {} from line {} col {} to line {} col {}",
                s.kind, s.line_start, s.col_start, s.line_end, s.col_end
            ),
        }
    }
}

impl ProtectedRegions {
    /// True when there is nothing to protect.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty() && self.inline.is_empty()
    }

    /// The block containing 1-based `line`, if any.
    pub fn block_containing(&self, line: usize) -> Option<&ProtectedRange> {
        self.blocks.iter().find(|b| b.contains_line(line))
    }

    /// Regions touched by an op whose target lines are `lines`
    /// (`None` for an insertion point), which inserts strictly after line
    /// `insert_after` if it is an insert, and whose real byte change is the
    /// half-open range `bytes`.
    pub fn touched_by(
        &self,
        lines: Option<(usize, usize)>,
        insert_after: Option<usize>,
        bytes: (usize, usize),
    ) -> Vec<Touched<'_>> {
        let mut out = Vec::new();
        for block in &self.blocks {
            let by_lines = lines.is_some_and(|(s, e)| block.overlaps_lines(s, e));
            let inside = insert_after
                .is_some_and(|after| block.line_start <= after && after < block.line_end);
            if by_lines || inside {
                out.push(Touched::Block(block));
            }
        }
        for span in &self.inline {
            if span.touched_by_bytes(bytes.0, bytes.1) {
                out.push(Touched::Inline(span));
            }
        }
        out
    }

    /// The same regions located in a later document state, after `edits`
    /// (in application order); `after` is that later document. Regions
    /// that an edit touched are widened to cover it; an inline span whose
    /// lines an edit touched becomes the whole of those lines (its bytes may
    /// have moved within them): when in doubt, protect.
    pub fn mapped_through(&self, edits: &[LineEdit], after: &LineBuf) -> ProtectedRegions {
        let blocks = self
            .blocks
            .iter()
            .filter_map(|b| {
                let region = Region {
                    start: b.line_start.checked_sub(1)?,
                    len: b.line_end + 1 - b.line_start,
                };
                let mapped = map_through_all(region, edits.iter().copied(), MapMode::Clamp).ok()?;
                (mapped.len > 0).then(|| ProtectedRange {
                    kind: b.kind.clone(),
                    line_start: mapped.start + 1,
                    line_end: mapped.end(),
                })
            })
            .collect();
        let offsets = after.line_offsets();
        let inline = self
            .inline
            .iter()
            .filter_map(|s| {
                let region = Region {
                    start: s.line_start.checked_sub(1)?,
                    len: s.line_end + 1 - s.line_start,
                };
                match map_through_all(region, edits.iter().copied(), MapMode::Strict) {
                    Ok(mapped) => {
                        let line_start = mapped.start + 1;
                        let line_end = mapped.end();
                        let start_byte = offsets.get(line_start - 1)?
                            + byte_of_column(after.raw_line(line_start - 1)?, s.col_start);
                        let end_byte = offsets.get(line_end - 1)?
                            + byte_of_column(after.raw_line(line_end - 1)?, s.col_end);
                        Some(InlineSpan {
                            line_start,
                            line_end,
                            start_byte,
                            end_byte,
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
                        let start_byte = *offsets.get(mapped.start)?;
                        let end_byte = *offsets.get(mapped.end())?;
                        let last = after.raw_line(mapped.end() - 1).unwrap_or("");
                        Some(InlineSpan {
                            kind: s.kind.clone(),
                            line_start: mapped.start + 1,
                            col_start: 1,
                            line_end: mapped.end(),
                            col_end: last.chars().count() + 1,
                            start_byte,
                            end_byte,
                        })
                    }
                }
            })
            .collect();
        ProtectedRegions { blocks, inline }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(s: usize, e: usize) -> ProtectedRange {
        ProtectedRange {
            kind: "code_fence".into(),
            line_start: s,
            line_end: e,
        }
    }

    #[test]
    fn block_touching_rules() {
        let regions = ProtectedRegions {
            blocks: vec![block(10, 14)],
            inline: vec![],
        };
        assert_eq!(regions.touched_by(Some((8, 10)), None, (0, 1)).len(), 1);
        assert!(regions.touched_by(Some((15, 16)), None, (0, 1)).is_empty());
        // inserting after the closing line is fine, inside is not
        assert!(regions.touched_by(None, Some(14), (0, 0)).is_empty());
        assert!(regions.touched_by(None, Some(9), (0, 0)).is_empty());
        assert_eq!(regions.touched_by(None, Some(12), (0, 0)).len(), 1);
    }

    #[test]
    fn inline_touching_is_byte_precise() {
        let span = InlineSpan {
            kind: "inline_code".into(),
            line_start: 1,
            col_start: 5,
            line_end: 1,
            col_end: 10,
            start_byte: 4,
            end_byte: 9,
        };
        assert!(span.touched_by_bytes(8, 12));
        assert!(!span.touched_by_bytes(9, 12));
        assert!(!span.touched_by_bytes(0, 4));
        assert!(span.touched_by_bytes(6, 6));
        assert!(!span.touched_by_bytes(4, 4));
    }

    #[test]
    fn mapping_follows_edits() {
        let text = "new line\nintró `code` here\n";
        let regions = ProtectedRegions {
            blocks: vec![block(3, 4)],
            inline: vec![InlineSpan {
                kind: "inline_code".into(),
                line_start: 1,
                col_start: 7,
                line_end: 1,
                col_end: 13,
                start_byte: 7,
                end_byte: 13,
            }],
        };
        let edits = [LineEdit {
            start: 0,
            old_len: 0,
            new_len: 1,
        }];
        let mapped = regions.mapped_through(&edits, &LineBuf::parse(text));
        assert_eq!(mapped.blocks[0].line_start, 4);
        assert_eq!(mapped.blocks[0].line_end, 5);
        let span = &mapped.inline[0];
        assert_eq!(span.line_start, 2);
        assert_eq!(&text[span.start_byte..span.end_byte], "`code`");
    }
}
