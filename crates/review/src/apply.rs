//! Applying a batch of ops planned against one document state.
//!
//! Ops are processed in the order given and receive sequential IDs from
//! the engine. Each op is built from JSON (missing fields defaulted),
//! range-checked, normalized (fixes + blank-line guard), validated and
//! checked for overlap with the ops already accepted in the batch, all in
//! the coordinates of the planned document. Accepted ops are then applied
//! one after the other; each op's line numbers are shifted by what the
//! earlier ops inserted or removed before it, so every op lands where it
//! was planned. Each applied op yields its forward and inverse patch
//! against the exact state it was applied to.
//!
//! Nothing here touches the disk: the `koas-review-workspace` crate does
//! that.

use koas_review_schema::apply::{AppliedOp, ApplyOptions, BatchOutcome, RejectedOp};
use std::collections::BTreeSet;

use serde_json::Value;

use crate::edit_op::build_op;
use crate::guards::{self, GuardContext};
use crate::normalize::normalize;
use crate::patch::{apply_change, make_patch_pair};
use crate::text::LineBuf;
use crate::validate::{check_range, op_label, validate, ProtectionPolicy};
use koas_review_schema::apply::Fix;
use koas_review_schema::apply::LineChange;
use koas_review_schema::change_id::{ChangeId, IdAllocator};
use koas_review_schema::edit_op::{Action, EditOp};
use koas_review_schema::rejection::{RejectClass, Rejection};
use koas_review_schema::stage1::ProtectedSpans;

/// Everything a batch needs.
#[derive(Debug, Clone, Copy)]
pub struct BatchInput<'a> {
    /// File name used in patch headers (`--- a/<doc_name>`).
    pub doc_name: &'a str,
    /// The document the ops were planned on.
    pub text: &'a str,
    /// The ops, as untrusted JSON.
    pub ops: &'a [Value],
    /// Protected regions of `text`.
    pub protected: &'a ProtectedSpans,
    /// IDs already in the ledger.
    pub ledger_ids: &'a BTreeSet<ChangeId>,
    /// The first ID to allocate.
    pub first_id: ChangeId,
    /// Strict mode, which normalization steps run, and the review policy.
    pub options: &'a ApplyOptions,
}

/// Replays a batch from the planned text: yields, per op that changed the
/// document, the text before and after it. Texts are built on demand, so a
/// big batch does not hold every version in memory.
pub fn batch_states<'a>(
    outcome: &'a BatchOutcome,
    initial_text: &str,
) -> impl Iterator<Item = (String, String)> + 'a {
    let mut buf = LineBuf::parse(initial_text);
    outcome
        .applied
        .iter()
        .filter_map(|a| a.change.as_ref())
        .map(move |change| {
            let before = buf.to_text();
            // The change was produced against exactly this state.
            if apply_change(change, &mut buf).is_err() {
                return (before.clone(), before);
            }
            (before, buf.to_text())
        })
}

/// 1-based inclusive line ranges an accepted op holds in the planned doc.
#[derive(Debug, Clone)]
struct Occupied {
    index: usize,
    id: ChangeId,
    lines: Option<(usize, usize)>,
    insert_point: Option<usize>,
}

fn overlap_with(previous: &[Occupied], candidate: &Occupied) -> Option<(usize, ChangeId, String)> {
    previous.iter().find_map(|p| {
        if let (Some((a, b)), Some((c, d))) = (p.lines, candidate.lines) {
            if a <= d && c <= b {
                let (s, e) = (a.max(c), b.min(d));
                let at = if s == e {
                    format!("line {s}")
                } else {
                    format!("lines {s}–{e}")
                };
                return Some((p.index, p.id, at));
            }
        }
        match (p.insert_point, candidate.insert_point) {
            (Some(x), Some(y)) if x == y => {
                Some((p.index, p.id, format!("the insertion point after line {x}")))
            }
            _ => None,
        }
    })
}

fn excerpt(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        format!("{}…", flat.chars().take(max - 1).collect::<String>())
    } else {
        flat
    }
}

/// The parts of `before` and `after` that differ, word by word, each with
/// up to three words of shared context and `…` where words were left out:
/// a long sentence with one word changed reads `…uses the bandwith of…` →
/// `…uses the bandwidth of…` rather than two identical beginnings.
fn changed_parts(before: &str, after: &str) -> (String, String) {
    const CONTEXT: usize = 3;
    let b: Vec<&str> = before.split_whitespace().collect();
    let a: Vec<&str> = after.split_whitespace().collect();
    let prefix = b.iter().zip(&a).take_while(|(x, y)| x == y).count();
    let max_suffix = b.len().min(a.len()) - prefix;
    let suffix = b
        .iter()
        .rev()
        .zip(a.iter().rev())
        .take(max_suffix)
        .take_while(|(x, y)| x == y)
        .count();
    let view = |words: &[&str]| {
        let start = prefix.saturating_sub(CONTEXT);
        let end = (words.len() - suffix + CONTEXT.min(suffix)).min(words.len());
        let mut out = String::new();
        if start > 0 {
            out.push('…');
        }
        out.push_str(&words[start..end].join(" "));
        if end < words.len() {
            out.push('…');
        }
        out
    };
    (view(&b), view(&a))
}

/// The ledger summary of an op: its own `summary`, else a description.
pub fn derive_summary(op: &EditOp, before_target: &str) -> String {
    if let Some(summary) = &op.summary {
        return excerpt(summary, 200);
    }
    let (s, e) = (op.target.line_start, op.target.line_end);
    let lines = if s == e {
        format!("line {s}")
    } else {
        format!("lines {s}–{e}")
    };
    let before = op.before_text.as_deref().unwrap_or(before_target);
    match op.action {
        Action::Replace => {
            let (b, a) = changed_parts(before, &op.after_text);
            format!("{}: '{}' → '{}'", op.kind, excerpt(&b, 60), excerpt(&a, 60))
        }
        Action::Insert => format!(
            "{}: insert after line {e}: '{}'",
            op.kind,
            excerpt(&op.after_text, 80)
        ),
        Action::Delete => format!("{}: delete {lines}: '{}'", op.kind, excerpt(before, 80)),
        Action::FlagOnly => {
            let what = if op.rationale.trim().is_empty() {
                &op.kind
            } else {
                &op.rationale
            };
            format!("flag {lines}: {}", excerpt(what, 100))
        }
    }
}

/// Runs a batch. Never fails as a whole: every problem is a rejection of
/// the op concerned.
pub fn apply_batch(input: BatchInput<'_>) -> BatchOutcome {
    let planned_doc = LineBuf::parse(input.text);
    let mut current = planned_doc.clone();
    let initial_hash = current.hash();
    let mut current_hash = initial_hash.clone();
    let mut allocator = IdAllocator::starting_at(input.first_id);
    let mut applied = Vec::new();
    let mut rejected = Vec::new();
    let mut occupied: Vec<Occupied> = Vec::new();
    // (planned start, planned end (exclusive), line delta) of applied changes.
    let mut shifts: Vec<(usize, usize, isize)> = Vec::new();
    // The document's language, found on the first op that needs it.
    let mut guard_ctx: Option<GuardContext> = None;
    let protection = ProtectionPolicy {
        regions: input.protected,
        strict: input.options.strict,
    };

    for (index, value) in input.ops.iter().enumerate() {
        let id = match allocator.allocate() {
            Ok(id) => id,
            Err(err) => {
                rejected.push(RejectedOp {
                    index,
                    id: allocator.peek(),
                    source_id: None,
                    action: None,
                    lines: None,
                    fixes: Vec::new(),
                    defaults: Vec::new(),
                    rejection: Rejection::new(
                        RejectClass::SchemaId,
                        format!("op {}: {err}", index + 1),
                    ),
                });
                continue;
            }
        };
        let reject = |op: Option<&EditOp>,
                      fixes: Vec<Fix>,
                      defaults: Vec<String>,
                      rejection: Rejection| RejectedOp {
            index,
            id,
            source_id: op.and_then(|o| o.source_id.clone()),
            action: op.map(|o| o.action),
            lines: op.map(|o| (o.target.line_start, o.target.line_end)),
            fixes,
            defaults,
            rejection,
        };
        let built = match build_op(value, id, &input.options.policy) {
            Ok(built) => built,
            Err(problem) => {
                let source_id = value.get("id").filter(|v| !v.is_null()).map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
                let mut r = reject(
                    None,
                    Vec::new(),
                    Vec::new(),
                    Rejection::new(
                        problem.class,
                        format!("{}: {}", op_label(index, id), problem.reason),
                    ),
                );
                r.source_id = source_id;
                rejected.push(r);
                continue;
            }
        };
        let (mut op, defaults) = (built.op, built.defaults);
        if let Err(rejection) = check_range(&op, index, &planned_doc) {
            rejected.push(reject(Some(&op), Vec::new(), defaults, rejection));
            continue;
        }
        let mut fixes = normalize(
            &mut op,
            &planned_doc,
            &input.options.policy,
            &input.options.normalize,
        );
        let mut valid = match validate(&op, index, &planned_doc, input.ledger_ids, protection) {
            Ok(valid) => valid,
            Err(rejection) => {
                rejected.push(reject(Some(&op), fixes, defaults, rejection));
                continue;
            }
        };
        // After validation: a guard's attention may not let through an op
        // that validation refused (an unflagged edit of a protected region).
        if input.options.normalize.content_guards {
            let before = match op.action {
                Action::Insert => String::new(),
                _ => op.before_text.clone().unwrap_or_else(|| {
                    planned_doc
                        .target_text(op.target.line_start, op.target.line_end)
                        .unwrap_or_default()
                }),
            };
            let guard_ctx = guard_ctx.get_or_insert_with(|| GuardContext::of(input.text));
            let guarded = guards::run(&mut op, &before, guard_ctx);
            if let Some(refused) = guarded
                .iter()
                .find(|f| input.options.strict && guards::refused_when_strict(f))
            {
                let why = match refused {
                    Fix::ContentGuard { reason, .. } => reason.clone(),
                    other => other.name().to_owned(),
                };
                fixes.extend(guarded.iter().cloned());
                rejected.push(reject(
                    Some(&op),
                    fixes,
                    defaults,
                    Rejection::new(
                        RejectClass::Guard,
                        format!(
                            "{}: {why}; --strict refuses such a change (without it, it is applied with a warning)",
                            op_label(index, id)
                        ),
                    ),
                ));
                continue;
            }
            let downgraded = op.action == Action::FlagOnly && valid.planned.is_some();
            fixes.extend(guarded);
            if downgraded {
                valid = match validate(&op, index, &planned_doc, input.ledger_ids, protection) {
                    Ok(valid) => valid,
                    Err(rejection) => {
                        rejected.push(reject(Some(&op), fixes, defaults, rejection));
                        continue;
                    }
                };
            }
        }
        let target_lines = match op.action {
            Action::FlagOnly => None,
            Action::Insert if op.target.line_end == 0 => None,
            _ => Some((op.target.line_start.max(1), op.target.line_end)),
        };
        let change_lines = valid
            .planned
            .as_ref()
            .filter(|p| !p.change.old.is_empty())
            .map(|p| (p.change.start + 1, p.change.start + p.change.old.len()));
        let lines = match (target_lines, change_lines) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (x, y) => x.or(y),
        };
        let candidate = Occupied {
            index,
            id,
            lines,
            insert_point: (op.action == Action::Insert).then_some(op.target.line_end),
        };
        if op.action != Action::FlagOnly {
            if let Some((other_index, other_id, at)) = overlap_with(&occupied, &candidate) {
                let (s, e) = (op.target.line_start, op.target.line_end);
                rejected.push(reject(
                    Some(&op),
                    fixes,
                    defaults,
                    Rejection::new(
                        RejectClass::Range,
                        format!(
                            "{}: {} {} {} at {at}; ops of one batch may not overlap — merge them into one op or drop one",
                            op_label(index, id),
                            if s == e { format!("line {s}") } else { format!("lines {s}–{e}") },
                            if s == e { "overlaps" } else { "overlap" },
                            op_label(other_index, other_id)
                        ),
                    ),
                ));
                continue;
            }
        }
        let before_target = planned_doc
            .target_text(op.target.line_start, op.target.line_end)
            .unwrap_or_default();
        let summary = derive_summary(&op, &before_target);
        let hash_before = current_hash.clone();
        let target_index = op.target.line_start.saturating_sub(1);
        let target_shift: isize = shifts
            .iter()
            .filter(|(_, end, _)| *end <= target_index)
            .map(|(_, _, delta)| *delta)
            .sum();
        let state_lines = (
            (op.target.line_start as isize + target_shift).max(0) as usize,
            (op.target.line_end as isize + target_shift).max(0) as usize,
        );
        let (change, patches) = match valid.planned {
            None => (None, None),
            Some(planned) => {
                let planned_start = planned.change.start;
                let planned_end = planned_start + planned.change.old.len();
                let shift: isize = shifts
                    .iter()
                    .filter(|(_, end, _)| *end <= planned_start)
                    .map(|(_, _, delta)| *delta)
                    .sum();
                let change = LineChange {
                    start: (planned_start as isize + shift) as usize,
                    ..planned.change
                };
                let patches = make_patch_pair(input.doc_name, &current, &change);
                if let Err(err) = apply_change(&change, &mut current) {
                    rejected.push(reject(
                        Some(&op),
                        fixes,
                        defaults,
                        Rejection::new(
                            RejectClass::Other,
                            format!("{}: internal error, the change did not apply where it was mapped ({err}); please report this", op_label(index, id)),
                        ),
                    ));
                    continue;
                }
                shifts.push((planned_start, planned_end, change.delta()));
                current_hash = current.hash();
                (Some(change), Some(patches))
            }
        };
        if op.action != Action::FlagOnly {
            occupied.push(candidate);
        }
        applied.push(AppliedOp {
            index,
            op,
            fixes,
            defaults,
            change,
            patches,
            doc_hash_before: hash_before,
            doc_hash_after: current_hash.clone(),
            touches_protected: valid.touches_protected,
            summary,
            state_lines,
        });
    }

    BatchOutcome {
        applied,
        rejected,
        final_text: current.to_text(),
        initial_hash,
        next_id: allocator.peek(),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod summary_tests {
    use super::changed_parts;

    #[test]
    fn summaries_show_what_changed_with_a_little_context() {
        let (b, a) = changed_parts(
            "The policy covers application logs, access logs and the audit trail of every service we run.",
            "The policy covers application logs, access logs and the audit trail of every service we operate.",
        );
        assert_eq!(b, "…every service we run.");
        assert_eq!(a, "…every service we operate.");
        let (b, a) = changed_parts(
            "one two three four five six seven",
            "one two three FOUR five six seven",
        );
        assert_eq!(b, "one two three four five six seven");
        assert_eq!(a, "one two three FOUR five six seven");
        let (b, a) = changed_parts("a b c d e f g h i j", "a b c d e X g h i j");
        assert_eq!(
            (b.as_str(), a.as_str()),
            ("…c d e f g h i…", "…c d e X g h i…")
        );
        assert_eq!(changed_parts("teh", "the"), ("teh".into(), "the".into()));
        assert_eq!(
            changed_parts("same text", "same text"),
            ("same text".into(), "same text".into())
        );
        let (b, a) = changed_parts("x y z", "x y z plus more");
        assert_eq!((b.as_str(), a.as_str()), ("x y z", "x y z plus more"));
        assert_eq!(changed_parts("", "new"), (String::new(), "new".into()));
    }
}
