//! The protected structure outside the edited lines must not change.
//!
//! An op can be harmless on its own lines and still change the document
//! around them: `after_text` that opens a code fence turns every following
//! line into code, one that adds a table delimiter row turns the line
//! before it into a table header. After a batch is applied, the protected
//! regions are detected again on the result and compared, line by line,
//! with those of the planned document: every line that no op edited must
//! belong to the same kind of region as before (or to none), lines that
//! shared a region must still share one, and it must hold the same inline
//! spans. The op nearest to the first line that differs is the one
//! refused.

use std::collections::HashMap;

use koas_review_schema::stage1::{InlineKind, ProtectedSpans};

/// Where one applied change sits, in the planned document and after the
/// whole batch (0-based lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EditedLines {
    /// Index of the op in the batch input.
    pub op_index: usize,
    /// First line of the planned document the change replaces (or the
    /// insertion point).
    pub planned_start: usize,
    /// Number of planned lines it replaces.
    pub old_len: usize,
    /// Number of lines it writes.
    pub new_len: usize,
}

/// A line of the result whose protected structure changed, and the op
/// held responsible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructureChange {
    /// The op to refuse (index in the batch input).
    pub op_index: usize,
    /// 1-based line of the result that changed.
    pub line: usize,
    /// What the line was (`prose`, `code_fence`…).
    pub was: String,
    /// What it became.
    pub now: String,
}

/// Per line of a document: the block holding it (index in
/// `spans.blocks`) and its inline spans.
struct LineLabels<'a> {
    spans: &'a ProtectedSpans,
    block: Vec<Option<usize>>,
    inlines: Vec<Vec<(InlineKind, u32, u32)>>,
}

impl<'a> LineLabels<'a> {
    fn new(spans: &'a ProtectedSpans, lines: usize) -> Self {
        let mut block = vec![None; lines];
        for (i, b) in spans.blocks.iter().enumerate() {
            let start = (b.line_start as usize).saturating_sub(1);
            let end = (b.line_end as usize).min(lines);
            for slot in block.iter_mut().take(end).skip(start) {
                if slot.is_none() {
                    *slot = Some(i);
                }
            }
        }
        let mut inlines = vec![Vec::new(); lines];
        for s in &spans.inlines {
            let (first, last) = (s.line as usize, s.end_line as usize);
            for line in first..=last.min(lines) {
                let Some(slot) = inlines.get_mut(line.wrapping_sub(1)) else {
                    continue;
                };
                // Columns that continue on another line are not compared:
                // only that the span crosses the line.
                let from = if line == first { s.column } else { 0 };
                let to = if line == last { s.end_column } else { u32::MAX };
                slot.push((s.kind, from, to));
            }
        }
        LineLabels {
            spans,
            block,
            inlines,
        }
    }

    fn kind(&self, line: usize) -> String {
        match self.block.get(line).copied().flatten() {
            Some(i) => self.spans.blocks[i].kind.as_str().to_owned(),
            None => "prose".to_owned(),
        }
    }
}

/// Compares the protected structure of the planned document (`before`,
/// `before_lines` lines) with that of the batch's result (`after`,
/// `after_lines` lines) on the lines no op edited. `edits` are the applied
/// changes (any order). Returns the first line that differs, with the op
/// nearest to it, or `None` when nothing outside the edited lines changed.
pub fn changed_outside(
    before: &ProtectedSpans,
    before_lines: usize,
    after: &ProtectedSpans,
    after_lines: usize,
    edits: &[EditedLines],
) -> Option<StructureChange> {
    let mut edits: Vec<EditedLines> = edits.to_vec();
    edits.sort_by_key(|e| (e.planned_start, e.old_len));
    let old = LineLabels::new(before, before_lines);
    let new = LineLabels::new(after, after_lines);
    // Edited ranges of the result, half-open, with their op.
    let mut edited: Vec<(usize, usize, usize)> = Vec::with_capacity(edits.len());
    let mut blocks_old_to_new: HashMap<usize, Option<usize>> = HashMap::new();
    let mut blocks_new_to_old: HashMap<usize, Option<usize>> = HashMap::new();
    let mut first_change: Option<(usize, String, String)> = None;
    let (mut planned, mut result) = (0usize, 0usize);
    let mut next_edit = 0;
    while planned < before_lines || next_edit < edits.len() {
        if let Some(edit) = edits.get(next_edit).filter(|e| e.planned_start <= planned) {
            edited.push((result, result + edit.new_len, edit.op_index));
            result += edit.new_len;
            planned = planned.max(edit.planned_start) + edit.old_len;
            next_edit += 1;
            continue;
        }
        if planned >= before_lines || result >= after_lines {
            break;
        }
        // An unedited line: planned line `planned` is result line `result`.
        let (was_block, now_block) = (
            old.block.get(planned).copied().flatten(),
            new.block.get(result).copied().flatten(),
        );
        let same_kind = old.kind(planned) == new.kind(result);
        let consistent = match (was_block, now_block) {
            (Some(b), n) => *blocks_old_to_new.entry(b).or_insert(n) == n,
            (None, Some(_)) => false,
            (None, None) => true,
        } && match now_block {
            Some(n) => *blocks_new_to_old.entry(n).or_insert(was_block) == was_block,
            None => true,
        };
        let mut was_inline = old.inlines.get(planned).cloned().unwrap_or_default();
        let mut now_inline = new.inlines.get(result).cloned().unwrap_or_default();
        was_inline.sort_unstable();
        now_inline.sort_unstable();
        if !(same_kind && consistent && was_inline == now_inline) {
            let describe =
                |labels: &LineLabels<'_>, line: usize, inline: &[(InlineKind, u32, u32)]| {
                    let kind = labels.kind(line);
                    if kind == "prose" && !inline.is_empty() {
                        let kinds: Vec<&str> = inline.iter().map(|(k, ..)| k.as_str()).collect();
                        format!("prose with {}", kinds.join(", "))
                    } else {
                        kind
                    }
                };
            first_change = Some((
                result,
                describe(&old, planned, &was_inline),
                describe(&new, result, &now_inline),
            ));
            break;
        }
        planned += 1;
        result += 1;
    }
    let (line, was, now) = first_change?;
    // The edits after the line were not reached yet: place them too.
    while let Some(edit) = edits.get(next_edit) {
        let at = result + edit.planned_start.saturating_sub(planned);
        edited.push((at, at + edit.new_len, edit.op_index));
        result = at + edit.new_len;
        planned = edit.planned_start + edit.old_len;
        next_edit += 1;
    }
    let distance = |&(start, end, _): &(usize, usize, usize)| {
        if line < start {
            (start - line, 1)
        } else if line >= end {
            (line + 1 - end, 0)
        } else {
            (0, 0)
        }
    };
    let op_index = edited.iter().min_by_key(|e| distance(e))?.2;
    Some(StructureChange {
        op_index,
        line: line + 1,
        was,
        now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::stage1::{BlockKind, ProtectedSpan};

    fn spans(blocks: &[(usize, usize)]) -> ProtectedSpans {
        ProtectedSpans {
            blocks: blocks
                .iter()
                .map(|&(s, e)| ProtectedSpan::from_lines(BlockKind::CodeFence, s as u32, e as u32))
                .collect(),
            ..Default::default()
        }
    }

    fn edit(op_index: usize, planned_start: usize, old_len: usize, new_len: usize) -> EditedLines {
        EditedLines {
            op_index,
            planned_start,
            old_len,
            new_len,
        }
    }

    #[test]
    fn unchanged_structure_around_edits_passes() {
        // A fence at lines 5-7; op 0 rewrites line 2, op 1 inserts 2 lines
        // after line 9.
        let before = spans(&[(5, 7)]);
        let after = spans(&[(5, 7)]);
        let edits = [edit(0, 1, 1, 1), edit(1, 9, 0, 2)];
        assert_eq!(changed_outside(&before, 10, &after, 12, &edits), None);
        // The insertion shifts a later fence.
        let before = spans(&[(5, 7)]);
        let after = spans(&[(7, 9)]);
        assert_eq!(
            changed_outside(&before, 10, &after, 12, &[edit(0, 1, 0, 2)]),
            None
        );
    }

    #[test]
    fn an_opened_fence_is_found_and_blamed_on_the_nearest_op() {
        // Op 1 writes line 4 (planned line 3 replaced), which opens a fence
        // running to the end: lines 5.. became code.
        let before = spans(&[]);
        let after = spans(&[(4, 10)]);
        let edits = [edit(0, 0, 1, 1), edit(1, 3, 1, 1)];
        let change = changed_outside(&before, 10, &after, 10, &edits).unwrap();
        assert_eq!(change.op_index, 1);
        assert_eq!(change.line, 5);
        assert_eq!(
            (change.was.as_str(), change.now.as_str()),
            ("prose", "code_fence")
        );
    }

    #[test]
    fn a_new_region_inside_the_edited_lines_is_allowed() {
        let before = spans(&[]);
        let after = spans(&[(3, 5)]);
        // Op 0 replaces planned line 2 (0-based) by three lines: 3-5.
        assert_eq!(
            changed_outside(&before, 6, &after, 8, &[edit(0, 2, 1, 3)]),
            None
        );
    }

    #[test]
    fn two_regions_merging_is_a_change() {
        // Fences 1-3 and 5-7; an op deletes line 4 and they become one
        // region 1-6 in the result.
        let before = spans(&[(1, 3), (5, 7)]);
        let after = spans(&[(1, 6)]);
        let change = changed_outside(&before, 7, &after, 6, &[edit(0, 3, 1, 0)]).unwrap();
        assert_eq!(change.op_index, 0);
        assert_eq!(change.line, 4);
    }
}
