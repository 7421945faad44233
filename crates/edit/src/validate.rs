//! The invariants an op must hold before it is applied, checked on a
//! normalized op, each failure mapped to a rejection class with a reason a
//! person can act on.
//!
//! | # | invariant | class |
//! |---|-----------|-------|
//! | 0 | target lines exist (checked before normalization) | `REJECT_RANGE` |
//! | 1 | ID format: the op's ID and the ID its note names | `REJECT_SCHEMA_ID` |
//! | 2 | ID uniqueness against the ledger | `REJECT_LEDGER` |
//! | 3 | content hash and `before_text` match the target | `REJECT_HASH` |
//! | – | no control character in the text written (tab, line ends aside) | `REJECT_OTHER` |
//! | 4 | protected regions (a model's op: never; a person's: needs attention + note, never under strict) | `REJECT_PROTECTED` |
//! | 5 | deletion policy: attention, note, `CAUTION` | `REJECT_SCHEMA_NOTE` |
//! | 6 | attention policy: note starting `REVIEWER:` | `REJECT_SCHEMA_NOTE` |
//! | – | the op changes something, after_text not empty | `REJECT_OTHER` |
//!
//! Overlap with another op of the batch is checked when applying
//! (`REJECT_RANGE`), and so is the protected structure outside the edited
//! lines (`REJECT_PROTECTED`, see [`crate::structure`]).

use std::collections::BTreeSet;

use crate::normalize::{match_before_text, note_names_id, TextMatch};
use crate::plan::{plan_change, PlanProblem, PlannedChange};
use crate::protected::touched_by;
use crate::text::LineBuf;
use koas_kernel_api::hash::{same_hash, sha256};
use koas_review_schema::apply::OpOrigin;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_op::{Action, Alert, EditOp};
use koas_review_schema::rejection::{RejectClass, Rejection};
use koas_review_schema::stage1::ProtectedSpans;

/// How an op is named in a message about its rejection: `op 3`, its
/// 1-based position in the ops input. A rejected op gets no change ID (IDs
/// stay dense over the applied and flagged ops), so none is named.
pub fn op_label(index: usize) -> String {
    format!("op {}", index + 1)
}

fn lines_label(start: usize, end: usize) -> String {
    if start == end {
        format!("line {start}")
    } else {
        format!("lines {start}–{end}")
    }
}

fn excerpt(text: &str) -> String {
    let flat = text.replace('\n', "⏎");
    if flat.chars().count() > 60 {
        format!("{}…", flat.chars().take(59).collect::<String>())
    } else {
        flat
    }
}

/// Invariant 0: the target range exists in `doc`.
pub fn check_range(op: &EditOp, index: usize, doc: &LineBuf) -> Result<(), Rejection> {
    let (start, end) = (op.target.line_start, op.target.line_end);
    let label = op_label(index);
    let n = doc.len();
    let insert_at_top = op.action == Action::Insert && start == 0 && end == 0;
    if insert_at_top {
        return Ok(());
    }
    if start == 0 {
        return Err(Rejection::new(
            RejectClass::Range,
            format!("{label}: line_start is 0; lines are numbered from 1 (only an insert may use 0/0 to insert at the top)"),
        ));
    }
    if end < start {
        return Err(Rejection::new(
            RejectClass::Range,
            format!(
                "{label}: line_end {end} is before line_start {start}; give an increasing range"
            ),
        ));
    }
    if end > n {
        return Err(Rejection::new(
            RejectClass::Range,
            format!("{label}: {} is past the end of the document ({n} lines); re-target the op against the current document", lines_label(start, end)),
        ));
    }
    Ok(())
}

/// Everything invariant 4 needs to know.
#[derive(Debug, Clone, Copy)]
pub struct ProtectionPolicy<'a> {
    /// Protected regions of the planned document.
    pub regions: &'a ProtectedSpans,
    /// `--strict`: refuse any op touching a protected region.
    pub strict: bool,
    /// Who proposed the op: a model's op never touches a protected region.
    pub origin: OpOrigin,
}

/// The first control character of `text` other than tab, newline and a
/// carriage return ending a line, with its byte offset.
fn control_char(text: &str) -> Option<(usize, char)> {
    let bytes = text.as_bytes();
    text.char_indices().find(|&(at, c)| {
        c.is_control()
            && c != '\t'
            && c != '\n'
            && !(c == '\r' && bytes.get(at + 1) == Some(&b'\n'))
    })
}

/// Refuses control characters (other than tab and line ends) in the text
/// an op writes into the document, its note, and what the report shows: a
/// NUL written into a Markdown file makes it binary. Refuses too the
/// invisible and bidirectional-control characters
/// ([`crate::effect::invisible_char`]) that `replaced`, the text the op
/// replaces, does not already hold: a direction override or a zero-width
/// space changes what a reader sees, or finds, without being seen.
pub fn check_text_fields(op: &EditOp, index: usize, replaced: &str) -> Result<(), Rejection> {
    let label = op_label(index);
    let fields = [
        ("after_text", Some(op.after_text.as_str())),
        (
            "review_note.text",
            op.review_note.as_ref().map(|n| n.text.as_str()),
        ),
        ("summary", op.summary.as_deref()),
        ("rationale", Some(op.rationale.as_str())),
    ];
    for (name, text) in fields {
        if let Some((at, c)) = text.and_then(control_char) {
            return Err(Rejection::new(
                RejectClass::Other,
                format!(
                    "{label}: {name} holds the control character U+{:04X} at byte {at}; only tab and line ends are allowed in text written to the document — remove it",
                    u32::from(c)
                ),
            ));
        }
        if let Some((at, c, char_name)) =
            text.and_then(|t| crate::effect::new_invisible_char(t, replaced))
        {
            return Err(Rejection::new(
                RejectClass::Other,
                format!(
                    "{label}: {name} holds the invisible character U+{:04X} {char_name} at byte {at}, which the text it replaces does not hold; invisible and direction-changing characters are refused — remove it",
                    u32::from(c)
                ),
            ));
        }
    }
    Ok(())
}

/// An op that passed every invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidOp {
    /// The change it makes (`None` for flag_only).
    pub planned: Option<PlannedChange>,
    /// Protected regions it touches (allowed: it needs attention and has a
    /// note, and the run is not strict), described for the log.
    pub touches_protected: Vec<String>,
}

/// Where `text` is in the document, for a rejection that says where the
/// op should have pointed: "it is on line 32; re-target the op", "it is on
/// lines 12, 40; …", or "it is nowhere in the document".
fn where_is(doc: &LineBuf, text: &str) -> String {
    if text.is_empty() {
        return "re-target the op".to_owned();
    }
    let mut found: Vec<usize> = Vec::new();
    let lines = doc.lines();
    // Line starts in the whole text, so a text over several lines is found
    // too (and named by its first line).
    let whole: String = lines.concat();
    let mut starts = Vec::with_capacity(lines.len());
    let mut at = 0;
    for line in lines {
        starts.push(at);
        at += line.len();
    }
    for (offset, _) in whole.match_indices(text).take(4) {
        let line = starts.partition_point(|&s| s <= offset);
        if found.last() != Some(&line) {
            found.push(line);
        }
    }
    match found.as_slice() {
        [] => "it is nowhere in the document; re-plan the op on the current text".to_owned(),
        [one] => format!("it is on line {one}; re-target the op"),
        many => {
            let shown: Vec<String> = many.iter().take(3).map(usize::to_string).collect();
            let more = if many.len() > 3 { ", …" } else { "" };
            format!(
                "it is on lines {}{more}; re-target the op",
                shown.join(", ")
            )
        }
    }
}

/// Checks invariants 1–6 on a normalized op whose range is valid.
pub fn validate(
    op: &EditOp,
    index: usize,
    doc: &LineBuf,
    ledger_ids: &BTreeSet<ChangeId>,
    protection: ProtectionPolicy<'_>,
) -> Result<ValidOp, Rejection> {
    let label = op_label(index);
    let (start, end) = (op.target.line_start, op.target.line_end);
    let lines = lines_label(start, end);
    let target = doc.target_text(start, end).unwrap_or_default();
    // An insertion replaces nothing: the line it follows vouches for none
    // of its characters.
    let replaced = if op.action == Action::Insert {
        ""
    } else {
        target.as_str()
    };
    check_text_fields(op, index, replaced)?;
    check_note_id(op, &label)?;
    check_id_unused(op, &label, ledger_ids)?;
    let matched = match_before_text(&target, op.before_text.as_deref());
    if op.action != Action::FlagOnly {
        check_content_hash(op, &label, &lines, doc, &target, &matched)?;
    }
    // The change itself (needed for protection and the no-op check).
    let planned = plan_change(op, doc, &matched).map_err(|problem| match problem {
        PlanProblem::EmptyAfterText => Rejection::new(
            RejectClass::Other,
            format!("{label}: after_text is empty; to remove text use action 'delete' (which requires a review note)"),
        ),
        PlanProblem::NoOp => Rejection::new(
            RejectClass::Other,
            format!("{label}: after_text is identical to the text at {lines}, so the op changes nothing; drop it or make it flag_only"),
        ),
    })?;
    let touches_protected = match &planned {
        Some(planned) => check_protection(op, &label, &lines, planned, protection)?,
        None => Vec::new(),
    };
    check_deletion_policy(op, &label)?;
    check_attention_policy(op, &label)?;
    Ok(ValidOp {
        planned,
        touches_protected,
    })
}

/// Invariant 1, ID format: the op's own ID is engine-allocated; its note
/// must name it.
fn check_note_id(op: &EditOp, label: &str) -> Result<(), Rejection> {
    if let Some(note) = &op.review_note {
        let text = note.text.trim_start();
        if text.starts_with("REVIEWER:") && !note_names_id(text, op) {
            return Err(Rejection::new(
                RejectClass::SchemaId,
                format!("{label}: the review note must name this change as 'REVIEWER: {} — …' but reads '{}'; fix the note (NOTE_ID_FIX does this when enabled)", op.id, excerpt(text)),
            ));
        }
    }
    Ok(())
}

/// Invariant 2, ID uniqueness: the op's ID is not in the ledger yet.
fn check_id_unused(
    op: &EditOp,
    label: &str,
    ledger_ids: &BTreeSet<ChangeId>,
) -> Result<(), Rejection> {
    if ledger_ids.contains(&op.id) {
        return Err(Rejection::new(
            RejectClass::Ledger,
            format!("{label}: {} is already in the ledger; the ledger or the ID allocator is out of step — run `koas status` and check the workspace", op.id),
        ));
    }
    Ok(())
}

/// Invariant 3, content hash: the op's `before_text` is in its target
/// exactly once, and its `before_hash` is the target's.
fn check_content_hash(
    op: &EditOp,
    label: &str,
    lines: &str,
    doc: &LineBuf,
    target: &str,
    matched: &TextMatch,
) -> Result<(), Rejection> {
    match matched {
        TextMatch::Missing => {
            return Err(Rejection::new(
                RejectClass::Hash,
                format!("{label}: before_text '{}' is not at {lines}, which read '{}'; {}", excerpt(op.before_text.as_deref().unwrap_or("")), excerpt(target), where_is(doc, op.before_text.as_deref().unwrap_or(""))),
            ))
        }
        TextMatch::Ambiguous(count) => {
            return Err(Rejection::new(
                RejectClass::Hash,
                format!("{label}: before_text '{}' occurs {count} times in {lines}; give a longer before_text or narrow the lines", excerpt(op.before_text.as_deref().unwrap_or(""))),
            ))
        }
        _ => {}
    }
    let actual = sha256(target);
    match op.before_hash.as_deref() {
        None => Err(Rejection::new(
            RejectClass::Hash,
            format!("{label}: the op has no before_hash for {lines}; add it (sha256 of the target text) or enable HASH_RECOMPUTE"),
        )),
        Some(h) if !same_hash(h, &actual) => Err(Rejection::new(
            RejectClass::Hash,
            format!("{label}: before_hash {h} does not match {lines} ({actual}), which read '{}'; the op was planned on another version of the document — re-plan it, or give before_text so the hash can be recomputed", excerpt(target)),
        )),
        Some(_) => Ok(()),
    }
}

/// Invariant 4, protected regions: the regions the planned change
/// touches, described for the log. A model's op may touch none, nor may
/// any op under `--strict`; a person's op that does needs attention and a
/// note.
fn check_protection(
    op: &EditOp,
    label: &str,
    lines: &str,
    planned: &PlannedChange,
    protection: ProtectionPolicy<'_>,
) -> Result<Vec<String>, Rejection> {
    let (start, end) = (op.target.line_start, op.target.line_end);
    let target_lines = match op.action {
        Action::Insert => None,
        _ => Some((start, end)),
    };
    let insert_after = (op.action == Action::Insert).then_some(end);
    let changed_lines = (!planned.change.old.is_empty()).then(|| {
        (
            planned.change.start + 1,
            planned.change.start + planned.change.old.len(),
        )
    });
    let mut touched = touched_by(
        protection.regions,
        target_lines,
        insert_after,
        planned.bytes,
    );
    if let Some((s, e)) = changed_lines {
        for extra in touched_by(protection.regions, Some((s, e)), None, (0, 0)) {
            if !touched.contains(&extra) {
                touched.push(extra);
            }
        }
    }
    let Some(first) = touched.first() else {
        return Ok(Vec::new());
    };
    let verb = if start == end { "touches" } else { "touch" };
    let what = format!("{label}: {lines} {verb} {} (protected)", first.describe());
    if protection.origin == OpOrigin::Model {
        return Err(Rejection::new(
            RejectClass::Protected,
            format!("{what}; an op proposed by a model never changes a protected region (code, tables, math, HTML, front matter, inline code…) — only a person's ops file may, flagged needs_attention with a review note"),
        ));
    }
    if protection.strict {
        return Err(Rejection::new(
            RejectClass::Protected,
            format!("{what}; --strict refuses any edit of a protected region — re-target the op outside it, or run without --strict and mark it needs_attention with a review note"),
        ));
    }
    let has_note = op.review_note.is_some();
    if !op.needs_attention || !has_note {
        return Err(Rejection::new(
            RejectClass::Protected,
            format!("{what}; re-target the op, or mark it needs_attention with a review note"),
        ));
    }
    Ok(touched.iter().map(|t| t.describe()).collect())
}

/// Invariant 5, deletion policy: a delete needs attention and a CAUTION
/// note.
fn check_deletion_policy(op: &EditOp, label: &str) -> Result<(), Rejection> {
    if op.action != Action::Delete {
        return Ok(());
    }
    match &op.review_note {
        None => Err(Rejection::new(
            RejectClass::SchemaNote,
            format!("{label}: a delete must carry a review note (alert CAUTION, text 'REVIEWER: {} — why'); add one or enable NOTE_INJECT", op.id),
        )),
        Some(note) if note.alert != Alert::Caution => Err(Rejection::new(
            RejectClass::SchemaNote,
            format!("{label}: a delete's review note must use alert CAUTION, not {}; change the alert", note.alert),
        )),
        Some(_) if !op.needs_attention => Err(Rejection::new(
            RejectClass::SchemaNote,
            format!("{label}: a delete always needs attention; set needs_attention to true"),
        )),
        Some(_) => Ok(()),
    }
}

/// Invariant 6, attention policy: an op needing attention has a note, and
/// every note starts `REVIEWER:`.
fn check_attention_policy(op: &EditOp, label: &str) -> Result<(), Rejection> {
    if op.needs_attention && op.review_note.is_none() {
        return Err(Rejection::new(
            RejectClass::SchemaNote,
            format!("{label}: needs_attention is true but there is no review note; add one starting 'REVIEWER: {} — ' or enable NOTE_INJECT", op.id),
        ));
    }
    if let Some(note) = &op.review_note {
        if !note.text.trim_start().starts_with("REVIEWER:") {
            return Err(Rejection::new(
                RejectClass::SchemaNote,
                format!("{label}: the review note must start with 'REVIEWER: {} — ' but reads '{}'; fix the note (NOTE_ID_FIX does this when enabled)", op.id, excerpt(&note.text)),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod where_tests {
    use super::where_is;
    use crate::text::LineBuf;

    #[test]
    fn a_misplaced_before_text_is_found_where_it_is() {
        let doc = LineBuf::parse("a\nthe bandwith\nb\nthe bandwith\nc\nd e\n");
        assert_eq!(
            where_is(&doc, "bandwith"),
            "it is on lines 2, 4; re-target the op"
        );
        assert_eq!(where_is(&doc, "c\nd"), "it is on line 5; re-target the op");
        assert_eq!(
            where_is(&doc, "zzz"),
            "it is nowhere in the document; re-plan the op on the current text"
        );
    }
}
