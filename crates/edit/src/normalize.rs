//! Pre-validation normalization and the blank-line targeting guard: the
//! fixes that let an op a model got slightly wrong (a hash of masked text,
//! a missing or misnamed note, a target one line off onto a blank line)
//! still apply, instead of being rejected for a detail.
//!
//! Each fix that runs is returned as a [`Fix`] so the apply log can say
//! exactly what the engine changed in an op before validating it:
//!
//! - `HASH_RECOMPUTE`: `before_hash` is recomputed from the document lines
//!   at the target when it is missing, or when it is wrong but the op's
//!   `before_text` proves the op targets the right text (the LLM hashed
//!   masked text). A wrong hash with no `before_text` to vouch for the
//!   target is left alone, and validation rejects it (`REJECT_HASH`).
//! - `NOTE_INJECT`: an op that needs attention (or deletes) but has no
//!   review note gets one: alert from the severity map (`CAUTION` for a
//!   delete), text `REVIEWER: RVW-NNNN — <rationale or "flagged for
//!   attention">`.
//! - `NOTE_ID_FIX`: a note that does not start `REVIEWER: <its own ID>` is
//!   rewritten to do so (a foreign `RVW-` ID at its head is replaced).
//! - `BLANK_LINE_GUARD`: a replace whose target lines are all blank while
//!   its `before_text` holds real content (> 10 chars) is relocated to the
//!   line within ±3 whose first 40 characters match `before_text`
//!   (case-insensitive, whitespace collapsed), else downgraded to
//!   `flag_only`.

use koas_review_schema::apply::{Fix, GuardOutcome, NormalizeOptions};

use crate::text::{is_blank, normalize_newlines, LineBuf};
use koas_kernel_api::hash::{same_hash, sha256};
use koas_review_schema::edit_op::{Action, Alert, EditOp, ReviewNote, ReviewPolicy};

/// How an op's `before_text` relates to the text at its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextMatch {
    /// The op has no `before_text`: it means the whole target.
    Absent,
    /// `before_text` is the whole target text.
    Whole,
    /// `before_text` occurs exactly once inside the target text, at this
    /// byte offset of the target text, with this length.
    Part {
        /// Byte offset in the target text.
        offset: usize,
        /// Byte length of `before_text` (after newline normalization).
        len: usize,
    },
    /// `before_text` occurs several times: ambiguous.
    Ambiguous(usize),
    /// `before_text` is not in the target text.
    Missing,
}

impl TextMatch {
    /// True for `Absent`, `Whole` and `Part`.
    pub fn is_usable(&self) -> bool {
        matches!(
            self,
            TextMatch::Absent | TextMatch::Whole | TextMatch::Part { .. }
        )
    }
}

/// Normalizes op text: CRLF → LF and one trailing newline dropped.
pub fn normalize_op_text(text: &str) -> String {
    let mut text = normalize_newlines(text);
    if text.ends_with('\n') {
        text.pop();
    }
    text
}

fn trim_line_ends(text: &str) -> String {
    text.split('\n')
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Compares `before_text` with the target text (see [`TextMatch`]).
pub fn match_before_text(target: &str, before_text: Option<&str>) -> TextMatch {
    let Some(before) = before_text else {
        return TextMatch::Absent;
    };
    let before = normalize_op_text(before);
    if before == target || (!before.is_empty() && trim_line_ends(&before) == trim_line_ends(target))
    {
        return TextMatch::Whole;
    }
    if before.is_empty() {
        return TextMatch::Missing;
    }
    let mut hits = target.match_indices(before.as_str());
    match (hits.next(), hits.next()) {
        (Some((offset, _)), None) => TextMatch::Part {
            offset,
            len: before.len(),
        },
        (Some(_), Some(_)) => TextMatch::Ambiguous(2 + hits.count()),
        (None, _) => TextMatch::Missing,
    }
}

/// The target text of an op's current target, or `None` when the range is
/// outside the document (range validation reports that).
pub fn target_text_of(op: &EditOp, doc: &LineBuf) -> Option<String> {
    doc.target_text(op.target.line_start, op.target.line_end)
}

/// Runs HASH_RECOMPUTE: fills a missing `before_hash`, or replaces a wrong
/// one when `before_text` matches the target. `None` when nothing changed.
pub fn hash_recompute(op: &mut EditOp, doc: &LineBuf) -> Option<Fix> {
    let target = target_text_of(op, doc)?;
    let actual = sha256(&target);
    if op
        .before_hash
        .as_deref()
        .is_some_and(|h| same_hash(h, &actual))
    {
        return None;
    }
    let text_vouches = match match_before_text(&target, op.before_text.as_deref()) {
        TextMatch::Absent => op.before_hash.is_none(),
        m => m.is_usable(),
    };
    if !text_vouches {
        return None;
    }
    let from = op.before_hash.replace(actual.clone());
    Some(Fix::HashRecompute { from, to: actual })
}

fn note_summary(op: &EditOp) -> String {
    let first = op.rationale.lines().map(str::trim).find(|l| !l.is_empty());
    match first {
        Some(line) if line.chars().count() > 160 => {
            let cut: String = line.chars().take(159).collect();
            format!("{cut}…")
        }
        Some(line) => line.to_owned(),
        None => "flagged for attention".to_owned(),
    }
}

/// Runs NOTE_INJECT: gives an op that needs attention, or deletes, a
/// review note when it has none. `None` when nothing changed.
pub fn note_inject(op: &mut EditOp, policy: &ReviewPolicy) -> Option<Fix> {
    let wants_note = op.needs_attention || op.action == Action::Delete;
    if !wants_note || op.review_note.is_some() {
        return None;
    }
    let alert = if op.action == Action::Delete {
        Alert::Caution
    } else {
        policy.alert_for(&op.severity).unwrap_or(Alert::Note)
    };
    op.review_note = Some(ReviewNote {
        alert,
        text: format!("REVIEWER: {} — {}", op.id, note_summary(op)),
    });
    Some(Fix::NoteInject { alert })
}

/// The prefix a note must start with: `REVIEWER: RVW-NNNN`.
pub fn note_prefix(op: &EditOp) -> String {
    format!("REVIEWER: {}", op.id)
}

/// True when the note starts with `REVIEWER: <id>` followed by a
/// non-digit (so `RVW-0001` does not pass for `RVW-00012`).
pub fn note_names_id(text: &str, op: &EditOp) -> bool {
    text.trim_start()
        .strip_prefix(&note_prefix(op))
        .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_digit()))
}

/// Runs NOTE_ID_FIX: makes the op's review note start `REVIEWER: <its
/// own ID> — `. `None` when there is no note or it already does.
pub fn note_id_fix(op: &mut EditOp) -> Option<Fix> {
    let prefix = note_prefix(op);
    let note = op.review_note.as_mut()?;
    let original = note.text.clone();
    let text = original.trim_start();
    if text
        .strip_prefix(&prefix)
        .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_digit()))
    {
        return None;
    }
    let body = match text.strip_prefix("REVIEWER:") {
        Some(rest) => {
            let rest = rest.trim_start();
            let rest = match rest.strip_prefix("RVW-") {
                Some(after) => after.trim_start_matches(|c: char| c.is_ascii_digit()),
                None => rest,
            };
            rest.trim_start_matches(|c: char| {
                c.is_whitespace() || matches!(c, '—' | '–' | '-' | ':')
            })
        }
        None => text,
    };
    note.text = format!("{prefix} — {}", body.trim());
    Some(Fix::NoteIdFix { from: original })
}

/// Fuzzy key: first 40 characters, lowercase, whitespace collapsed,
/// trailing ellipsis removed.
fn fuzzy_key(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let trimmed = collapsed
        .trim_end_matches("...")
        .trim_end_matches('…')
        .trim_end();
    trimmed.to_lowercase().chars().take(40).collect()
}

fn fuzzy_matches(line: &str, wanted: &str) -> bool {
    let (a, b) = (fuzzy_key(line), fuzzy_key(wanted));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    a == b
        || (a.chars().count().min(b.chars().count()) > 10
            && (a.starts_with(&b) || b.starts_with(&a)))
}

/// Runs the blank-line targeting guard: relocates a replace aimed at
/// blank lines to the nearby lines its `before_text` describes, or
/// downgrades it to `flag_only`. `None` when the guard does not apply.
pub fn blank_line_guard(op: &mut EditOp, doc: &LineBuf) -> Option<Fix> {
    if op.action != Action::Replace {
        return None;
    }
    let target = target_text_of(op, doc)?;
    let before = normalize_op_text(op.before_text.as_deref()?);
    if !is_blank(&target) || before.trim().chars().count() <= 10 {
        return None;
    }
    let first_line = before.lines().find(|l| !is_blank(l))?;
    let lead_blank = before.lines().take_while(|l| is_blank(l)).count();
    let span = before.split('\n').count();
    let from_lines = (op.target.line_start, op.target.line_end);
    for delta in [1i64, -1, 2, -2, 3, -3] {
        let start = op.target.line_start as i64 + delta;
        let first_content = start + lead_blank as i64;
        if start < 1 || start as usize + span - 1 > doc.len() {
            continue;
        }
        let Some(line) = doc.content(first_content as usize - 1) else {
            continue;
        };
        if fuzzy_matches(line, first_line) {
            op.target.line_start = start as usize;
            op.target.line_end = start as usize + span - 1;
            if let Some(text) = target_text_of(op, doc) {
                op.before_hash = Some(sha256(&text));
            }
            return Some(Fix::BlankLineGuard {
                outcome: GuardOutcome::Relocated {
                    relocated_delta: delta,
                },
                from_lines,
                to_lines: (op.target.line_start, op.target.line_end),
            });
        }
    }
    op.action = Action::FlagOnly;
    Some(Fix::BlankLineGuard {
        outcome: GuardOutcome::Downgraded,
        from_lines,
        to_lines: from_lines,
    })
}

/// Runs every enabled step in order: HASH_RECOMPUTE, NOTE_INJECT,
/// NOTE_ID_FIX, then the blank-line guard. The op's target range must
/// already be valid for `doc`.
pub fn normalize(
    op: &mut EditOp,
    doc: &LineBuf,
    policy: &ReviewPolicy,
    options: &NormalizeOptions,
) -> Vec<Fix> {
    let mut fixes = Vec::new();
    if options.hash_recompute {
        fixes.extend(hash_recompute(op, doc));
    }
    if options.note_inject {
        fixes.extend(note_inject(op, policy));
    }
    if options.note_id_fix {
        fixes.extend(note_id_fix(op));
    }
    if options.blank_line_guard {
        fixes.extend(blank_line_guard(op, doc));
    }
    fixes
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::change_id::ChangeId;
    use koas_review_schema::edit_op::Target;

    fn op(action: Action, start: usize, end: usize) -> EditOp {
        EditOp {
            id: ChangeId::new(12).unwrap(),
            source_id: None,
            action,
            target: Target {
                line_start: start,
                line_end: end,
                ..Target::default()
            },
            before_hash: None,
            before_text: None,
            after_text: "new".into(),
            needs_attention: false,
            kind: "typo".into(),
            severity: "minor".into(),
            silent: true,
            review_note: None,
            rationale: String::new(),
            summary: None,
        }
    }

    const DOC: &str = "# Title\n\nThe bandwith of the system is high.\n\nSecond paragraph here.\n";

    #[test]
    fn hash_recompute_fixes_a_masked_hash_when_text_vouches() {
        let doc = LineBuf::parse(DOC);
        let mut o = op(Action::Replace, 3, 3);
        o.before_text = Some("The bandwith of the system is high.".into());
        o.before_hash = Some(sha256("The bandwith of the [MASK] is high."));
        let fix = hash_recompute(&mut o, &doc).expect("fix runs");
        assert_eq!(fix.name(), "HASH_RECOMPUTE");
        assert_eq!(
            o.before_hash,
            Some(sha256("The bandwith of the system is high."))
        );
        // Missing hash is filled too.
        let mut o = op(Action::Replace, 3, 3);
        assert!(hash_recompute(&mut o, &doc).is_some());
        assert!(o.before_hash.is_some());
    }

    #[test]
    fn hash_recompute_refuses_without_evidence() {
        let doc = LineBuf::parse(DOC);
        let mut o = op(Action::Replace, 3, 3);
        o.before_hash = Some(sha256("stale"));
        assert!(hash_recompute(&mut o, &doc).is_none());
        o.before_text = Some("something else entirely".into());
        assert!(hash_recompute(&mut o, &doc).is_none());
        assert_eq!(o.before_hash, Some(sha256("stale")));
    }

    #[test]
    fn note_inject_adds_a_note_for_attention_and_caution_for_delete() {
        let policy = ReviewPolicy::default();
        let mut o = op(Action::Replace, 3, 3);
        o.needs_attention = true;
        o.severity = "attention".into();
        o.rationale = "Consistency with Section 2.\nMore.".into();
        let fix = note_inject(&mut o, &policy).unwrap();
        assert_eq!(
            fix,
            Fix::NoteInject {
                alert: Alert::Warning
            }
        );
        let note = o.review_note.unwrap();
        assert_eq!(
            note.text,
            "REVIEWER: RVW-0012 — Consistency with Section 2."
        );
        let mut d = op(Action::Delete, 3, 3);
        assert_eq!(
            note_inject(&mut d, &policy),
            Some(Fix::NoteInject {
                alert: Alert::Caution
            })
        );
        assert_eq!(
            d.review_note.unwrap().text,
            "REVIEWER: RVW-0012 — flagged for attention"
        );
        let mut silent = op(Action::Replace, 3, 3);
        assert!(note_inject(&mut silent, &policy).is_none());
    }

    #[test]
    fn note_id_fix_prepends_or_replaces_the_id() {
        let cases = [
            (
                "Terminology aligned.",
                "REVIEWER: RVW-0012 — Terminology aligned.",
            ),
            (
                "REVIEWER: Terminology aligned.",
                "REVIEWER: RVW-0012 — Terminology aligned.",
            ),
            (
                "REVIEWER: RVW-0099 — Terminology aligned.",
                "REVIEWER: RVW-0012 — Terminology aligned.",
            ),
            ("REVIEWER: RVW-00123 — x", "REVIEWER: RVW-0012 — x"),
        ];
        for (before, after) in cases {
            let mut o = op(Action::Replace, 3, 3);
            o.review_note = Some(ReviewNote {
                alert: Alert::Note,
                text: before.into(),
            });
            let fix = note_id_fix(&mut o).expect(before);
            assert_eq!(
                fix,
                Fix::NoteIdFix {
                    from: before.into()
                }
            );
            assert_eq!(o.review_note.unwrap().text, after);
        }
        let mut ok = op(Action::Replace, 3, 3);
        ok.review_note = Some(ReviewNote {
            alert: Alert::Note,
            text: "REVIEWER: RVW-0012 — fine".into(),
        });
        assert!(note_id_fix(&mut ok).is_none());
    }

    #[test]
    fn blank_line_guard_relocates_to_the_matching_line() {
        let doc = LineBuf::parse(DOC);
        // Line 2 is blank; the real target is line 3.
        let mut o = op(Action::Replace, 2, 2);
        o.before_text = Some("the BANDWITH of the system is high.".into());
        let fix = blank_line_guard(&mut o, &doc).unwrap();
        assert_eq!(
            fix,
            Fix::BlankLineGuard {
                outcome: GuardOutcome::Relocated { relocated_delta: 1 },
                from_lines: (2, 2),
                to_lines: (3, 3)
            }
        );
        assert_eq!(o.action, Action::Replace);
        assert_eq!((o.target.line_start, o.target.line_end), (3, 3));
        assert_eq!(
            o.before_hash,
            Some(sha256("The bandwith of the system is high."))
        );
        // Looking backwards works too.
        let mut back = op(Action::Replace, 4, 4);
        back.before_text = Some("The bandwith of the system...".into());
        blank_line_guard(&mut back, &doc).unwrap();
        assert_eq!(back.target.line_start, 3);
    }

    #[test]
    fn blank_line_guard_downgrades_without_a_match() {
        let doc = LineBuf::parse(DOC);
        let mut o = op(Action::Replace, 4, 4);
        o.before_text = Some("A sentence that is nowhere in the document.".into());
        let fix = blank_line_guard(&mut o, &doc).unwrap();
        assert!(matches!(
            fix,
            Fix::BlankLineGuard {
                outcome: GuardOutcome::Downgraded,
                ..
            }
        ));
        assert_eq!(o.action, Action::FlagOnly);
    }

    #[test]
    fn blank_line_guard_ignores_real_targets_and_short_text() {
        let doc = LineBuf::parse(DOC);
        let mut real = op(Action::Replace, 3, 3);
        real.before_text = Some("The bandwith of the system is high.".into());
        assert!(blank_line_guard(&mut real, &doc).is_none());
        let mut short = op(Action::Replace, 2, 2);
        short.before_text = Some("tiny".into());
        assert!(blank_line_guard(&mut short, &doc).is_none());
    }

    #[test]
    fn text_matching() {
        let t = "alpha beta\ngamma beta";
        assert_eq!(match_before_text(t, None), TextMatch::Absent);
        assert_eq!(
            match_before_text(t, Some("alpha beta\ngamma beta\n")),
            TextMatch::Whole
        );
        assert_eq!(
            match_before_text(t, Some("alpha beta  \r\ngamma beta")),
            TextMatch::Whole
        );
        assert_eq!(
            match_before_text(t, Some("gamma")),
            TextMatch::Part { offset: 11, len: 5 }
        );
        assert_eq!(match_before_text(t, Some("beta")), TextMatch::Ambiguous(2));
        assert_eq!(match_before_text(t, Some("delta")), TextMatch::Missing);
    }

    #[test]
    fn fixes_serialize_with_names() {
        let v = serde_json::to_value(Fix::BlankLineGuard {
            outcome: GuardOutcome::Relocated {
                relocated_delta: -2,
            },
            from_lines: (5, 5),
            to_lines: (3, 3),
        })
        .unwrap();
        assert_eq!(v["fix"], "BLANK_LINE_GUARD");
        assert_eq!(v["outcome"], "relocated");
        assert_eq!(v["relocated_delta"], -2);
    }
}
