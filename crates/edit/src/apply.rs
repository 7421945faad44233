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

use koas_review_schema::apply::{
    AppliedOp, ApplyOptions, BatchOutcome, KnownAs, KnownOp, OpOrigin, RejectedOp,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::edit_op::{build_op, SchemaProblem};
use crate::effect::{local_structure_changes, structure_changes, Blocks};
use crate::guards::{self, GuardContext};
use crate::known::{Known, KnownIndex};
use crate::normalize::normalize;
use crate::patch::{apply_change, make_patch_pair};
use crate::plan::PlannedChange;
use crate::structure::{changed_outside, EditedLines};
use crate::text::LineBuf;
use crate::validate::{check_range, op_label, validate, ProtectionPolicy, ValidOp};
use koas_kernel_api::hash::sha256_of_parts;
use koas_md::shape::ShapeChange;
use koas_review_schema::apply::Fix;
use koas_review_schema::apply::{LineChange, PatchPair};
use koas_review_schema::change_id::{ChangeId, IdAllocator};
use koas_review_schema::edit_op::{Action, EditOp};
use koas_review_schema::rejection::{RejectClass, Rejection};
use koas_review_schema::stage1::ProtectedSpans;

mod checks;
mod occupancy;
use occupancy::{Occupancy, Occupied, Shifts};

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
    /// Who proposed each op, by position in `ops`. An op past the end of
    /// this list is taken for a model's (the stricter rule): give
    /// [`OpOrigin::Person`] for ops a person wrote.
    pub origins: &'a [OpOrigin],
    /// What the ledger already holds, by effect: an op making a change
    /// already made, or reverted, or a flag already open or dismissed on
    /// the same text, is not recorded again ([`BatchOutcome::known`]).
    pub known: Known<'a>,
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
///
/// After the ops are applied, the protected regions of the result are
/// compared with those of the planned document on the lines no op edited
/// ([`crate::structure`]): an op that opens or closes a protected region
/// there is refused (`REJECT_PROTECTED`) and the batch is applied again
/// without it, until the structure outside the edited lines is unchanged.
pub fn apply_batch(input: BatchInput<'_>) -> BatchOutcome {
    let mut vetoed: BTreeMap<usize, Rejection> = BTreeMap::new();
    let mut before: Option<(ProtectedSpans, usize)> = None;
    let known = KnownIndex::new(input.known);
    loop {
        let (outcome, edited, planned_lines, final_lines) = run_batch(&input, &known, &vetoed);
        if edited.is_empty() {
            return outcome;
        }
        // Both documents are compared with a line of prose after their
        // end: an op that leaves a fence (or any block) open on the last
        // line turns that line into code, exactly as one in mid-document
        // turns the lines after it, and is refused the same way.
        let (before, before_lines) = before.get_or_insert_with(|| {
            (
                detect_regions(&with_end_probe(input.text)),
                planned_lines + END_PROBE_LINES,
            )
        });
        let after = detect_regions(&with_end_probe(&outcome.final_text));
        let Some(change) = changed_outside(
            before,
            *before_lines,
            &after,
            final_lines + END_PROBE_LINES,
            &edited,
        ) else {
            return outcome;
        };
        let where_ = if change.line > final_lines {
            format!(
                "the end of the document would be left inside an open {} (whatever follows it, a review note included, would become part of it)",
                change.now
            )
        } else {
            format!(
                "line {} of the result, which no op edits, would change from {} to {}",
                change.line, change.was, change.now
            )
        };
        if vetoed.contains_key(&change.op_index) {
            // Cannot happen (a refused op edits nothing); stop rather than
            // loop.
            return outcome;
        }
        vetoed.insert(
            change.op_index,
            Rejection::new(
                RejectClass::Protected,
                format!(
                    "{}: it opens or closes a protected region: {where_}; keep the op's text self-contained (close what it opens), or edit the region's own lines",
                    op_label(change.op_index),
                ),
            ),
        );
    }
}

/// The lines [`with_end_probe`] adds: a blank line and a line of prose.
const END_PROBE_LINES: usize = 2;

/// `text` with a blank line and a line of prose after it (a final newline
/// added first if it lacks one): the prose line stays prose unless the
/// text ends inside an open block (a fence, a math block, an HTML
/// comment…), which would swallow whatever comes after the document.
fn with_end_probe(text: &str) -> String {
    let mut probed = String::with_capacity(text.len() + 8);
    probed.push_str(text);
    if !probed.is_empty() && !probed.ends_with('\n') {
        probed.push('\n');
    }
    probed.push_str("\nx\n");
    probed
}

/// The protected regions of `text`, as Stage 1 detects them.
fn detect_regions(text: &str) -> ProtectedSpans {
    koas_md::stage1::protected_spans_for(text, ProtectedSpans::default()).0
}

/// One pass of [`apply_batch`], refusing the ops in `vetoed`. Also returns
/// where each applied change sits, and the line counts of the planned and
/// the resulting document.
fn run_batch(
    input: &BatchInput<'_>,
    known: &KnownIndex<'_>,
    vetoed: &BTreeMap<usize, Rejection>,
) -> (BatchOutcome, Vec<EditedLines>, usize, usize) {
    let mut run = BatchRun::new(input, known, vetoed);
    for (index, value) in input.ops.iter().enumerate() {
        run.take(index, value);
    }
    run.finish()
}

/// Why an op of the batch is not applied.
enum Skip {
    /// It is refused.
    Refused(Rejection),
    /// The ledger, or an earlier op of the batch, already has its effect:
    /// the op is reported as known, not recorded again.
    Known(ChangeId, KnownAs),
}

impl From<Rejection> for Skip {
    fn from(rejection: Rejection) -> Self {
        Skip::Refused(rejection)
    }
}

/// One op of the batch on its way through the checks: what a rejection
/// or a known op reports of it, and what an applied op keeps.
struct Candidate {
    index: usize,
    /// The ID it takes if it is applied or flagged.
    id: ChangeId,
    origin: OpOrigin,
    op: EditOp,
    fixes: Vec<Fix>,
    defaults: Vec<String>,
}

impl Candidate {
    fn rejected(self, rejection: Rejection) -> RejectedOp {
        RejectedOp {
            index: self.index,
            id: None,
            source_id: self.op.source_id,
            action: Some(self.op.action),
            lines: Some((self.op.target.line_start, self.op.target.line_end)),
            fixes: self.fixes,
            defaults: self.defaults,
            rejection,
        }
    }

    fn known(&self, matches: ChangeId, known_as: KnownAs) -> KnownOp {
        KnownOp {
            index: self.index,
            source_id: self.op.source_id.clone(),
            action: self.op.action,
            lines: (self.op.target.line_start, self.op.target.line_end),
            matches,
            known_as,
        }
    }
}

/// What an op that passed every check brings to its [`AppliedOp`].
struct Accepted {
    occupied: Occupied,
    change: Option<LineChange>,
    patches: Option<PatchPair>,
    hash_before: String,
    touches_protected: Vec<String>,
    summary: String,
    state_lines: (usize, usize),
    flagged_hash: Option<String>,
}

/// One pass over the ops of a batch: the planned document every op is
/// checked in, the current one the accepted ops are applied to, and what
/// became of each op so far.
struct BatchRun<'r, 'i, 'k> {
    input: &'r BatchInput<'i>,
    known: &'r KnownIndex<'k>,
    vetoed: &'r BTreeMap<usize, Rejection>,
    planned_doc: LineBuf,
    current: LineBuf,
    initial_hash: String,
    current_hash: String,
    allocator: IdAllocator,
    applied: Vec<AppliedOp>,
    rejected: Vec<RejectedOp>,
    known_ops: Vec<KnownOp>,
    /// Flags accepted in this batch, by lines hash and kind: the same flag
    /// twice is recorded once.
    batch_flags: HashMap<(String, String), ChangeId>,
    occupied: Occupancy,
    /// Line deltas of applied changes, by planned end (exclusive).
    shifts: Shifts,
    edited: Vec<EditedLines>,
    /// The document's language, found on the first op that needs it.
    guard_ctx: Option<GuardContext>,
    /// Its top-level blocks, found on the first change that needs them.
    blocks: Option<Blocks>,
}

impl<'r, 'i, 'k> BatchRun<'r, 'i, 'k> {
    fn new(
        input: &'r BatchInput<'i>,
        known: &'r KnownIndex<'k>,
        vetoed: &'r BTreeMap<usize, Rejection>,
    ) -> Self {
        let planned_doc = LineBuf::parse(input.text);
        let current = planned_doc.clone();
        let initial_hash = current.hash();
        BatchRun {
            input,
            known,
            vetoed,
            current_hash: initial_hash.clone(),
            initial_hash,
            allocator: IdAllocator::starting_at(input.first_id),
            applied: Vec::new(),
            rejected: Vec::new(),
            known_ops: Vec::new(),
            batch_flags: HashMap::new(),
            occupied: Occupancy::default(),
            shifts: Shifts::new(planned_doc.len()),
            edited: Vec::new(),
            guard_ctx: None,
            blocks: None,
            current,
            planned_doc,
        }
    }

    /// Takes one op of the batch: applies it, reports it as known, or
    /// refuses it.
    fn take(&mut self, index: usize, value: &Value) {
        // The ID this op gets if it is applied or flagged: allocated only
        // then, so that rejected ops leave no hole in the sequence.
        let id = self.allocator.peek();
        if let Err(err) = self.allocator.clone().allocate() {
            self.rejected.push(RejectedOp {
                index,
                id: None,
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
            return;
        }
        let built = match build_op(value, id, &self.input.options.policy) {
            Ok(built) => built,
            Err(problem) => {
                self.rejected.push(unreadable(index, value, problem));
                return;
            }
        };
        let mut candidate = Candidate {
            index,
            id,
            origin: self
                .input
                .origins
                .get(index)
                .copied()
                .unwrap_or(OpOrigin::Model),
            op: built.op,
            fixes: Vec::new(),
            defaults: built.defaults,
        };
        match self.accept(&mut candidate, value) {
            Ok(accepted) => self.record(candidate, accepted),
            Err(Skip::Refused(rejection)) => self.rejected.push(candidate.rejected(rejection)),
            Err(Skip::Known(id, known_as)) => {
                self.known_ops.push(candidate.known(id, known_as));
            }
        }
    }

    /// Runs every check on an op read from JSON, in the planned document,
    /// then applies it to the current one.
    fn accept(&mut self, c: &mut Candidate, value: &Value) -> Result<Accepted, Skip> {
        if let Some(rejection) = self.vetoed.get(&c.index) {
            return Err(Skip::Refused(rejection.clone()));
        }
        check_range(&c.op, c.index, &self.planned_doc)?;
        c.fixes = normalize(
            &mut c.op,
            &self.planned_doc,
            &self.input.options.policy,
            &self.input.options.normalize,
        );
        let mut valid = self.validated(c)?;
        // A person may make a reverted change again on purpose: an op of
        // an ops file that says `"again": true`.
        let again = c.origin == OpOrigin::Person && value.get("again") == Some(&Value::Bool(true));
        self.check_not_made_before(&valid, again)?;
        if self.input.options.normalize.content_guards {
            self.guard(c, &mut valid)?;
        }
        let occupied = self.claim_lines(c, &valid)?;
        let flagged_hash = self.flag_once(c)?;
        let summary = self.summary(&c.op, &valid);
        let hash_before = self.current_hash.clone();
        let target_index = c.op.target.line_start.saturating_sub(1);
        let target_shift: isize = self.shifts.before(target_index);
        let state_lines = (
            (c.op.target.line_start as isize + target_shift).max(0) as usize,
            (c.op.target.line_end as isize + target_shift).max(0) as usize,
        );
        let ValidOp {
            planned,
            touches_protected,
        } = valid;
        let (change, patches) = match planned {
            None => (None, None),
            Some(planned) => {
                let (change, patches) = self.apply_planned(c.index, planned)?;
                (Some(change), Some(patches))
            }
        };
        Ok(Accepted {
            occupied,
            change,
            patches,
            hash_before,
            touches_protected,
            summary,
            state_lines,
            flagged_hash,
        })
    }

    /// The op's ledger summary; a delete that also takes the blank line
    /// after its text says so.
    fn summary(&self, op: &EditOp, valid: &ValidOp) -> String {
        let before_target = self
            .planned_doc
            .target_text(op.target.line_start, op.target.line_end)
            .unwrap_or_default();
        let mut summary = derive_summary(op, &before_target);
        if op.action == Action::Delete && op.summary.is_none() {
            if let Some(p) = &valid.planned {
                let target_len = op.target.line_end + 1 - op.target.line_start.max(1);
                let extra = p.change.old.len().saturating_sub(target_len);
                if p.change.new.is_empty() && extra > 0 {
                    summary.push_str(" (and the blank line after it)");
                }
            }
        }
        summary
    }

    /// Applies a change planned in the planned document to the current
    /// one, its start shifted by the changes applied before it, and
    /// returns it as applied with its patches.
    fn apply_planned(
        &mut self,
        index: usize,
        planned: PlannedChange,
    ) -> Result<(LineChange, PatchPair), Skip> {
        let planned_start = planned.change.start;
        let planned_end = planned_start + planned.change.old.len();
        let shift: isize = self.shifts.before(planned_start);
        let change = LineChange {
            start: (planned_start as isize + shift) as usize,
            ..planned.change
        };
        let patches = make_patch_pair(self.input.doc_name, &self.current, &change);
        if let Err(err) = apply_change(&change, &mut self.current) {
            return Err(Skip::Refused(Rejection::new(
                RejectClass::Other,
                format!("{}: internal error, the change did not apply where it was mapped ({err}); please report this", op_label(index)),
            )));
        }
        self.shifts.add(planned_end, change.delta());
        self.edited.push(EditedLines {
            op_index: index,
            planned_start,
            old_len: planned_end - planned_start,
            new_len: change.new.len(),
        });
        self.current_hash = self.current.hash();
        Ok((change, patches))
    }

    /// Records an accepted op: it holds its lines and takes its ID.
    fn record(&mut self, c: Candidate, accepted: Accepted) {
        if c.op.action != Action::FlagOnly {
            self.occupied.insert(&accepted.occupied);
        }
        // Checked free above; the op is accepted, so it takes its ID.
        let _ = self.allocator.allocate();
        self.applied.push(AppliedOp {
            index: c.index,
            op: c.op,
            fixes: c.fixes,
            defaults: c.defaults,
            change: accepted.change,
            patches: accepted.patches,
            doc_hash_before: accepted.hash_before,
            doc_hash_after: self.current_hash.clone(),
            touches_protected: accepted.touches_protected,
            summary: accepted.summary,
            state_lines: accepted.state_lines,
            origin: c.origin,
            flagged_hash: accepted.flagged_hash,
        });
    }

    /// A flag is known later by the lines it flags as the batch leaves
    /// them (an op of the batch may have changed them): the next run reads
    /// that text.
    fn rehash_flags(&mut self) {
        let (shifts, current) = (&self.shifts, &self.current);
        for applied in self
            .applied
            .iter_mut()
            .filter(|a| a.op.action == Action::FlagOnly)
        {
            let (s, e) = (
                applied.op.target.line_start.max(1),
                applied.op.target.line_end,
            );
            let at = |line: usize| {
                let index = line - 1;
                ((index as isize + shifts.before(index)).max(0) as usize).min(current.len())
            };
            let (from, to) = (at(s), at(e.max(s)) + 1);
            let lines = current
                .lines()
                .get(from..to.min(current.len()))
                .unwrap_or_default();
            applied.flagged_hash = Some(sha256_of_parts(lines));
        }
    }

    fn finish(mut self) -> (BatchOutcome, Vec<EditedLines>, usize, usize) {
        self.rehash_flags();
        let lines = (self.planned_doc.len(), self.current.len());
        (
            BatchOutcome {
                applied: self.applied,
                rejected: self.rejected,
                known: self.known_ops,
                final_text: self.current.to_text(),
                initial_hash: self.initial_hash,
                next_id: self.allocator.peek(),
            },
            self.edited,
            lines.0,
            lines.1,
        )
    }
}

/// An op that cannot be read as an op, refused naming the `id` it gave.
fn unreadable(index: usize, value: &Value, problem: SchemaProblem) -> RejectedOp {
    let source_id = value.get("id").filter(|v| !v.is_null()).map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    RejectedOp {
        index,
        id: None,
        source_id,
        action: None,
        lines: None,
        fixes: Vec::new(),
        defaults: Vec::new(),
        rejection: Rejection::new(
            problem.class,
            format!("{}: {}", op_label(index), problem.reason),
        ),
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
