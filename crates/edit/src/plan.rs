//! Turning a normalized op into the exact line change it makes, in the
//! coordinates of the document it was planned on.
//!
//! - `replace`: the target lines become `after_text`; when `before_text` is
//!   only a part of the target, just that part is replaced and the rest of
//!   the lines is kept.
//! - `delete`: the target lines (or the `before_text` part) are removed.
//! - `insert`: `after_text` goes after line `line_end` (`0` = at the top).
//! - `flag_only`: no change.
//!
//! New lines get the line ending of the line they replace (the document's
//! dominant ending for extra lines), a last line without a final newline
//! stays without one (deleting the last lines takes the newline off the
//! line before them; inserting after the last line gives it one), and a
//! byte-order mark stays at the start.

use crate::normalize::{normalize_op_text, TextMatch};
use crate::text::{is_blank, LineBuf, BOM};
use koas_review_schema::apply::LineChange;
use koas_review_schema::edit_op::{Action, EditOp};

/// The change an op makes, and where its bytes really change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedChange {
    /// The change, trimmed to the lines that differ.
    pub change: LineChange,
    /// Half-open byte range of the planned document that really changes
    /// (empty for a pure insertion: the insertion offset).
    pub bytes: (usize, usize),
}

/// Why an op cannot be turned into a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanProblem {
    /// `after_text` is empty for a replace or insert.
    EmptyAfterText,
    /// The change would not change a byte.
    NoOp,
}

fn with_terminators(contents: &[&str], old: &[String], eol: &str, last_term: &str) -> Vec<String> {
    let count = contents.len();
    contents
        .iter()
        .enumerate()
        .map(|(i, content)| {
            let term = if i + 1 == count {
                last_term
            } else if i + 1 < old.len() {
                crate::text::terminator_of(&old[i])
            } else {
                eol
            };
            format!("{content}{term}")
        })
        .collect()
}

fn replacement_text(target: &str, matched: &TextMatch, after: &str) -> String {
    match matched {
        TextMatch::Part { offset, len } => {
            format!("{}{}{}", &target[..*offset], after, &target[offset + len..])
        }
        _ => after.to_owned(),
    }
}

/// Builds the change of `op` on `doc` (the planned state). The op's target
/// range must be valid and `matched` must be usable.
pub fn plan_change(
    op: &EditOp,
    doc: &LineBuf,
    matched: &TextMatch,
) -> Result<Option<PlannedChange>, PlanProblem> {
    let after = normalize_op_text(&op.after_text);
    let end = op.target.line_end;
    let change = match op.action {
        Action::FlagOnly => return Ok(None),
        Action::Replace | Action::Delete => replace_or_delete(op, doc, matched, &after)?,
        Action::Insert => insert(doc, end, &after)?,
    };
    let mut change = change;
    // A line is never empty (it has content or a terminator); an empty
    // element would be a line that does not exist in the text.
    change.new.retain(|line| !line.is_empty());
    let change = change.trimmed();
    if change.is_noop() {
        return Err(PlanProblem::NoOp);
    }
    let bytes = changed_bytes(doc, &change);
    Ok(Some(PlannedChange { change, bytes }))
}

/// The change of a replacement or a deletion of lines `start..=end`.
fn replace_or_delete(
    op: &EditOp,
    doc: &LineBuf,
    matched: &TextMatch,
    after: &str,
) -> Result<LineChange, PlanProblem> {
    let eol = doc.eol();
    let (start, end) = (op.target.line_start, op.target.line_end);
    if op.action == Action::Replace && after.is_empty() {
        return Err(PlanProblem::EmptyAfterText);
    }
    let old: Vec<String> = doc.lines()[start - 1..end].to_vec();
    let target = doc.target_text(start, end).unwrap_or_default();
    let whole_delete = op.action == Action::Delete && !matches!(matched, TextMatch::Part { .. });
    let mut new = if whole_delete {
        Vec::new()
    } else {
        let inserted = if op.action == Action::Delete {
            ""
        } else {
            after
        };
        let text = replacement_text(&target, matched, inserted);
        let contents: Vec<&str> = text.split('\n').collect();
        let last_term = crate::text::terminator_of(&old[old.len() - 1]);
        with_terminators(&contents, &old, eol, last_term)
    };
    let mut change_old = old;
    if op.action == Action::Delete {
        // A deletion removes lines, it does not blank them: a
        // line the deleted text leaves empty goes too, and so
        // does the blank line after a removed block that a blank
        // line (or the top of the document) precedes, so no
        // double blank line is left behind. The inverse patch
        // holds exactly what was removed.
        if new.iter().all(|l| is_blank(l)) {
            new.clear();
        }
        let blank_before = start == 1 || doc.raw_line(start - 2).is_some_and(is_blank);
        let bom_first = start == 1 && doc.has_bom();
        if new.is_empty() && blank_before && !bom_first && end < doc.len() {
            if let Some(next) = doc.raw_line(end).filter(|l| is_blank(l)) {
                change_old.push(next.to_owned());
            }
        }
    }
    if start == 1 && doc.has_bom() {
        match new.first_mut() {
            Some(first) => first.insert_str(0, BOM),
            None => match doc.raw_line(end) {
                Some(next) => {
                    change_old.push(next.to_owned());
                    new.push(format!("{BOM}{next}"));
                }
                None => new.push(BOM.to_owned()),
            },
        }
    }
    let mut change_start = start - 1;
    if op.action == Action::Delete
        && new.is_empty()
        && end == doc.len()
        && doc.lacks_final_newline()
        && start > 1
    {
        // Deleting the last lines of a document without a final
        // newline: the line before them becomes the last one and
        // loses its newline, so the document still ends without one.
        let previous = doc.raw_line(start - 2).unwrap_or_default().to_owned();
        new = vec![crate::text::strip_terminator(&previous).to_owned()];
        change_old.insert(0, previous);
        change_start -= 1;
    }
    Ok(LineChange {
        start: change_start,
        old: change_old,
        new,
    })
}

/// The change of an insertion of `after` after line `end`.
fn insert(doc: &LineBuf, end: usize, after: &str) -> Result<LineChange, PlanProblem> {
    let eol = doc.eol();
    if after.is_empty() {
        return Err(PlanProblem::EmptyAfterText);
    }
    let contents: Vec<&str> = after.split('\n').collect();
    let mut new = with_terminators(&contents, &[], eol, eol);
    Ok(if end == 0 && doc.has_bom() {
        let first = doc.raw_line(0).unwrap_or_default();
        new[0].insert_str(0, BOM);
        new.push(first.trim_start_matches(BOM).to_owned());
        LineChange {
            start: 0,
            old: vec![first.to_owned()],
            new,
        }
    } else if end > 0 && end == doc.len() && doc.lacks_final_newline() {
        let last = doc.raw_line(end - 1).unwrap_or_default().to_owned();
        if let Some(tail) = new.last_mut() {
            let trimmed = crate::text::strip_terminator(tail).to_owned();
            *tail = trimmed;
        }
        new.insert(0, format!("{last}{eol}"));
        LineChange {
            start: end - 1,
            old: vec![last],
            new,
        }
    } else {
        LineChange {
            start: end,
            old: Vec::new(),
            new,
        }
    })
}

/// Half-open byte range of `doc` that `change` really alters.
fn changed_bytes(doc: &LineBuf, change: &LineChange) -> (usize, usize) {
    let base = doc.byte_offset(change.start);
    let old = change.old.concat();
    let new = change.new.concat();
    let prefix = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let max_suffix = old.len().min(new.len()) - prefix;
    let suffix = old
        .bytes()
        .rev()
        .zip(new.bytes().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    (base + prefix, base + old.len() - suffix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::match_before_text;
    use koas_review_schema::change_id::ChangeId;
    use koas_review_schema::edit_op::Target;

    fn op(action: Action, start: usize, end: usize, before: Option<&str>, after: &str) -> EditOp {
        EditOp {
            id: ChangeId::first(),
            source_id: None,
            action,
            target: Target {
                line_start: start,
                line_end: end,
                ..Target::default()
            },
            before_hash: None,
            before_text: before.map(String::from),
            after_text: after.into(),
            needs_attention: false,
            kind: "typo".into(),
            severity: "minor".into(),
            silent: true,
            review_note: None,
            rationale: String::new(),
            summary: None,
        }
    }

    fn run(text: &str, op: EditOp) -> Result<String, PlanProblem> {
        let doc = LineBuf::parse(text);
        let target = doc
            .target_text(op.target.line_start, op.target.line_end)
            .unwrap_or_default();
        let m = match_before_text(&target, op.before_text.as_deref());
        let planned = plan_change(&op, &doc, &m)?;
        let mut out = doc.clone();
        if let Some(p) = planned {
            crate::patch::apply_change(&p.change, &mut out).unwrap();
        }
        Ok(out.to_text())
    }

    #[test]
    fn replace_keeps_crlf_and_missing_final_newline() {
        assert_eq!(
            run("a\r\nb\r\nc", op(Action::Replace, 2, 3, None, "B\nC")).unwrap(),
            "a\r\nB\r\nC"
        );
        assert_eq!(
            run("a\r\nb\r\n", op(Action::Replace, 2, 2, None, "x\ny\nz\n")).unwrap(),
            "a\r\nx\r\ny\r\nz\r\n"
        );
    }

    #[test]
    fn part_replace_touches_only_the_part() {
        let text = "Use `cfg` for the bandwith setting.\n";
        let doc = LineBuf::parse(text);
        let o = op(Action::Replace, 1, 1, Some("bandwith"), "bandwidth");
        let m = match_before_text(doc.content(0).unwrap(), o.before_text.as_deref());
        let planned = plan_change(&o, &doc, &m).unwrap().unwrap();
        assert_eq!(&text[planned.bytes.0..planned.bytes.1], "");
        assert_eq!(planned.bytes.0, text.find("with").unwrap() + 2);
        assert_eq!(
            run(text, o).unwrap(),
            "Use `cfg` for the bandwidth setting.\n"
        );
    }

    #[test]
    fn delete_whole_and_part() {
        assert_eq!(
            run("a\nb\nc\n", op(Action::Delete, 2, 2, None, "")).unwrap(),
            "a\nc\n"
        );
        assert_eq!(
            run(
                "keep this. drop this.\n",
                op(Action::Delete, 1, 1, Some(" drop this."), "")
            )
            .unwrap(),
            "keep this.\n"
        );
        assert_eq!(
            run("a\nb", op(Action::Delete, 2, 2, None, "")).unwrap(),
            "a"
        );
        assert_eq!(
            run("a\r\nb\r\nc", op(Action::Delete, 2, 3, None, "")).unwrap(),
            "a"
        );
    }

    #[test]
    fn insert_positions() {
        assert_eq!(
            run("a\nb\n", op(Action::Insert, 0, 0, None, "top")).unwrap(),
            "top\na\nb\n"
        );
        assert_eq!(
            run("a\nb\n", op(Action::Insert, 1, 1, None, "mid")).unwrap(),
            "a\nmid\nb\n"
        );
        assert_eq!(
            run("a\nb", op(Action::Insert, 2, 2, None, "end")).unwrap(),
            "a\nb\nend"
        );
        assert_eq!(
            run("a\r\nb\r\n", op(Action::Insert, 2, 2, None, "x")).unwrap(),
            "a\r\nb\r\nx\r\n"
        );
    }

    #[test]
    fn bom_stays_first() {
        let text = "\u{feff}Title\nBody\n";
        assert_eq!(
            run(text, op(Action::Replace, 1, 1, None, "New title")).unwrap(),
            "\u{feff}New title\nBody\n"
        );
        assert_eq!(
            run(text, op(Action::Delete, 1, 1, None, "")).unwrap(),
            "\u{feff}Body\n"
        );
        assert_eq!(
            run(text, op(Action::Insert, 0, 0, None, "Top")).unwrap(),
            "\u{feff}Top\nTitle\nBody\n"
        );
        assert_eq!(
            run("\u{feff}only", op(Action::Delete, 1, 1, None, "")).unwrap(),
            "\u{feff}"
        );
    }

    #[test]
    fn no_ops_and_empty_text_are_refused() {
        assert_eq!(
            run("a\n", op(Action::Replace, 1, 1, None, "a")),
            Err(PlanProblem::NoOp)
        );
        assert_eq!(
            run("a\n", op(Action::Replace, 1, 1, None, "")),
            Err(PlanProblem::EmptyAfterText)
        );
        assert_eq!(
            run("a\n", op(Action::Insert, 1, 1, None, "")),
            Err(PlanProblem::EmptyAfterText)
        );
        assert_eq!(
            run("a\n", op(Action::FlagOnly, 1, 1, None, "")).unwrap(),
            "a\n"
        );
    }
}
