//! What applying a batch of edit ops produced: the `apply_outcome`
//! artifact of `md_apply_ops`, and the apply log records of a run.

use serde::{Deserialize, Serialize};

use crate::change_id::ChangeId;
use crate::edit_op::{Action, Alert, EditOp, ReviewPolicy};
use crate::rejection::{RejectClass, Rejection};
use crate::stage1::ProtectedSpans;
use koas_kernel_api::hash::sha256_of_parts;

/// Options of an apply run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyOptions {
    /// Refuse any op that touches a protected region.
    pub strict: bool,
    /// Which normalization fixes run.
    pub normalize: NormalizeOptions,
    /// Silent tier and severity → alert map.
    pub policy: ReviewPolicy,
}

/// Which normalization steps run. All on by default; turning one off lets
/// the matching invariant reject the op instead (useful to measure raw
/// acceptance).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NormalizeOptions {
    /// HASH_RECOMPUTE: fill a missing `before_hash`, or replace a wrong one
    /// that the op's `before_text` vouches for.
    pub hash_recompute: bool,
    /// NOTE_INJECT: give an op that needs attention (or deletes) a review
    /// note when it has none.
    pub note_inject: bool,
    /// NOTE_ID_FIX: make every review note start `REVIEWER: <own ID> — `.
    pub note_id_fix: bool,
    /// Run the blank-line targeting guard.
    pub blank_line_guard: bool,
    /// Run the content guards (changed numbers, URLs, code, identifiers,
    /// quotations; another language; the Markdown structure; polarity
    /// words; a kind that claims less than the op does).
    #[serde(default = "yes")]
    pub content_guards: bool,
}

fn yes() -> bool {
    true
}

impl Default for NormalizeOptions {
    fn default() -> Self {
        NormalizeOptions {
            hash_recompute: true,
            note_inject: true,
            note_id_fix: true,
            blank_line_guard: true,
            content_guards: true,
        }
    }
}

/// What the blank-line guard did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum GuardOutcome {
    /// Moved the target by `relocated_delta` lines.
    Relocated {
        /// Lines moved, between -3 and 3; positive is further down.
        relocated_delta: i64,
    },
    /// No match within ±3 lines: the op became `flag_only`.
    Downgraded,
}

/// A normalization fix that ran on an op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fix", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Fix {
    /// `before_hash` was (re)computed from the document.
    HashRecompute {
        /// The hash the op carried, if any.
        from: Option<String>,
        /// The hash of the document text at the target.
        to: String,
    },
    /// A review note was injected.
    NoteInject {
        /// From the severity map (`CAUTION` for a delete).
        alert: Alert,
    },
    /// The note text was made to start with `REVIEWER: <id> — `.
    NoteIdFix {
        /// The text before the fix.
        from: String,
    },
    /// The blank-line targeting guard fired.
    BlankLineGuard {
        /// Relocated or downgraded.
        #[serde(flatten)]
        outcome: GuardOutcome,
        /// Target lines before the guard (1-based, inclusive).
        from_lines: (usize, usize),
        /// Target lines after the guard (unchanged when downgraded).
        to_lines: (usize, usize),
    },
    /// A content guard fired: the op was made to need attention, became a
    /// flag, or changed kind (see the guard's reason).
    ContentGuard {
        /// `TOKEN_GUARD`, `LANGUAGE_GUARD`, `STRUCTURE_GUARD`,
        /// `MEANING_GUARD`, `REWRITE_GUARD` or `KIND_GUARD`.
        guard: String,
        /// What the guard saw, e.g. `changes number '10' → '12'`.
        reason: String,
    },
}

impl Fix {
    /// The fix's name as the apply log shows it.
    pub fn name(&self) -> &'static str {
        match self {
            Fix::HashRecompute { .. } => "HASH_RECOMPUTE",
            Fix::NoteInject { .. } => "NOTE_INJECT",
            Fix::NoteIdFix { .. } => "NOTE_ID_FIX",
            Fix::BlankLineGuard { .. } => "BLANK_LINE_GUARD",
            Fix::ContentGuard { guard, .. } => match guard.as_str() {
                "TOKEN_GUARD" => "TOKEN_GUARD",
                "LANGUAGE_GUARD" => "LANGUAGE_GUARD",
                "REWRITE_GUARD" => "REWRITE_GUARD",
                "STRUCTURE_GUARD" => "STRUCTURE_GUARD",
                "MEANING_GUARD" => "MEANING_GUARD",
                "KIND_GUARD" => "KIND_GUARD",
                _ => "CONTENT_GUARD",
            },
        }
    }
}

/// A contiguous change of whole lines: at 0-based line `start`, the lines
/// `old` are replaced by the lines `new`. Lines carry their terminators.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineChange {
    /// 0-based index of the first replaced line (or of the insertion point).
    pub start: usize,
    /// The lines removed, with terminators.
    pub old: Vec<String>,
    /// The lines inserted, with terminators.
    pub new: Vec<String>,
}

impl LineChange {
    /// Drops leading and trailing lines that `old` and `new` share, so the
    /// change covers only the lines that really differ.
    pub fn trimmed(mut self) -> Self {
        let common_tail = self
            .old
            .iter()
            .rev()
            .zip(self.new.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        self.old.truncate(self.old.len() - common_tail);
        self.new.truncate(self.new.len() - common_tail);
        let common_head = self
            .old
            .iter()
            .zip(self.new.iter())
            .take_while(|(a, b)| a == b)
            .count();
        self.old.drain(..common_head);
        self.new.drain(..common_head);
        self.start += common_head;
        self
    }

    /// True when the change changes no byte.
    pub fn is_noop(&self) -> bool {
        self.old == self.new
    }

    /// The change that undoes this one, in the coordinates of the state
    /// this change produces.
    pub fn inverse(&self) -> LineChange {
        LineChange {
            start: self.start,
            old: self.new.clone(),
            new: self.old.clone(),
        }
    }

    /// Line count difference the change introduces.
    pub fn delta(&self) -> isize {
        self.new.len() as isize - self.old.len() as isize
    }
}

/// A forward patch and its inverse for one change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchPair {
    /// Turns the state before the change into the state after it.
    pub forward: String,
    /// Turns the state after the change back into the state before it.
    pub inverse: String,
}

/// An op that was applied (or recorded, for flag_only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedOp {
    /// 0-based position of the op in the input.
    pub index: usize,
    /// The normalized op.
    pub op: EditOp,
    /// Normalization fixes that ran.
    pub fixes: Vec<Fix>,
    /// Fields the engine filled in: missing ones (e.g. `kind`,
    /// `target.line_end`), and `silent` when the op's value contradicted
    /// the tier.
    pub defaults: Vec<String>,
    /// The change, in the coordinates of the state it was applied to
    /// (`None` for flag_only).
    pub change: Option<LineChange>,
    /// Forward and inverse patch (`None` for flag_only).
    pub patches: Option<PatchPair>,
    /// `sha256:` of the document before the op.
    pub doc_hash_before: String,
    /// `sha256:` of the document after the op.
    pub doc_hash_after: String,
    /// Protected regions the op touches (allowed because it needs attention).
    pub touches_protected: Vec<String>,
    /// One-line summary for the ledger.
    pub summary: String,
    /// The op's target lines (1-based, inclusive) in the coordinates of
    /// the state it was applied to.
    pub state_lines: (usize, usize),
    /// Who proposed the op (absent in outcomes written before it was
    /// recorded: those ops all came from ops files).
    #[serde(default, skip_serializing_if = "OpOrigin::is_person")]
    pub origin: OpOrigin,
    /// For a flag: `sha256:` of the flagged lines (with terminators) as
    /// the batch leaves them, so that a later run knows the same flag on
    /// the same text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flagged_hash: Option<String>,
}

/// Who proposed an op: it decides what the op may touch. A person's op
/// (an ops file) may change a protected region when it is flagged for
/// attention with a review note, and never under `--strict`; a model's op
/// (an LLM edit plan) never changes a protected region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpOrigin {
    /// Written by a person: an ops file (`--ops`).
    #[default]
    Person,
    /// Proposed by a model: an LLM planner's `edit_plan`.
    Model,
}

impl OpOrigin {
    /// True for [`OpOrigin::Person`].
    pub fn is_person(&self) -> bool {
        *self == OpOrigin::Person
    }

    /// `person` or `model`.
    pub fn as_str(self) -> &'static str {
        match self {
            OpOrigin::Person => "person",
            OpOrigin::Model => "model",
        }
    }
}

impl AppliedOp {
    /// `sha256:` of the lines the change removed.
    pub fn region_hash_before(&self) -> Option<String> {
        self.change.as_ref().map(|c| sha256_of_parts(&c.old))
    }

    /// `sha256:` of the lines the change inserted.
    pub fn region_hash_after(&self) -> Option<String> {
        self.change.as_ref().map(|c| sha256_of_parts(&c.new))
    }
}

/// An op that was not applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectedOp {
    /// 0-based position of the op in the input.
    pub index: usize,
    /// `None`: a rejected op gets no change ID, so the IDs of applied and
    /// flagged ops stay dense; messages and the apply log name it by its
    /// position (`op 3`). Outcomes written before this rule held an ID
    /// here, which read as `Some`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ChangeId>,
    /// The `id` the op arrived with.
    pub source_id: Option<String>,
    /// Its action, when it could be read.
    pub action: Option<Action>,
    /// Its target lines, when they could be read.
    pub lines: Option<(usize, usize)>,
    /// Fixes that ran before it was rejected.
    pub fixes: Vec<Fix>,
    /// Defaults filled before it was rejected.
    pub defaults: Vec<String>,
    /// Its class and a reason naming the op, its lines and what to do.
    pub rejection: Rejection,
}

/// How the ledger already holds an op's effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KnownAs {
    /// The change is made and in effect.
    Applied,
    /// The change was made, then reverted: it stays reverted.
    Reverted,
    /// The same flag on the same text is open.
    Flagged,
    /// The same flag on the same text was dismissed: it stays dismissed.
    Dismissed,
}

impl KnownAs {
    /// `applied`, `reverted`, `flagged` or `dismissed`.
    pub fn as_str(self) -> &'static str {
        match self {
            KnownAs::Applied => "applied",
            KnownAs::Reverted => "reverted",
            KnownAs::Flagged => "flagged",
            KnownAs::Dismissed => "dismissed",
        }
    }
}

/// An op whose effect the ledger (or an earlier op of the batch) already
/// holds: it is not recorded again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownOp {
    /// 0-based position of the op in the input.
    pub index: usize,
    /// The `id` the op arrived with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// Its action.
    pub action: Action,
    /// Its target lines.
    pub lines: (usize, usize),
    /// The change or flag that already holds its effect.
    pub matches: ChangeId,
    /// How.
    pub known_as: KnownAs,
}

/// The result of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchOutcome {
    /// Applied ops, in application order.
    pub applied: Vec<AppliedOp>,
    /// Rejected ops, in input order.
    pub rejected: Vec<RejectedOp>,
    /// Ops whose effect is already in the ledger (applied, reverted,
    /// flagged or dismissed), in input order: not recorded again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub known: Vec<KnownOp>,
    /// The document after every applied op.
    pub final_text: String,
    /// `sha256:` of the planned document.
    pub initial_hash: String,
    /// The next free ID after this batch.
    pub next_id: ChangeId,
}

/// Status of one op in the apply log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpStatus {
    /// Applied to the document.
    Applied,
    /// flag_only: recorded, nothing changed.
    Flagged,
    /// Not applied; the record gives the class and the reason.
    Rejected,
    /// Not recorded: the ledger already holds its effect (the record
    /// names the entry and how).
    Known,
}

/// One line of `stage3/apply_log.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyLogRecord {
    /// Run that produced the record.
    pub run_id: String,
    /// 1-based position of the op in the ops input.
    pub op_index: usize,
    /// The change ID of an applied or flagged op; absent for a rejected
    /// op, which gets none (it is named `op N` by `op_index`). Logs
    /// written before this rule give rejected ops an ID too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ChangeId>,
    /// The `id` the op arrived with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// Applied, flagged or rejected.
    pub status: OpStatus,
    /// Action (after the blank-line guard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// Target lines in the planned document (after the guard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<(usize, usize)>,
    /// Fixes that ran.
    #[serde(default)]
    pub fixes: Vec<Fix>,
    /// Fields the engine filled in: missing ones, and `silent` when the
    /// op's value contradicted the tier.
    #[serde(default)]
    pub defaults_filled: Vec<String>,
    /// Rejection class, for rejected ops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject: Option<RejectClass>,
    /// Rejection reason, for rejected ops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Protected regions an applied op touches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub touches_protected: Vec<String>,
    /// For a known op: the entry that already holds its effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<ChangeId>,
    /// For a known op: how the entry holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_as: Option<KnownAs>,
}

impl BatchOutcome {
    /// The apply log, one record per input op, in input order.
    pub fn log_records(&self, run_id: &str) -> Vec<ApplyLogRecord> {
        let mut records: Vec<ApplyLogRecord> = self
            .applied
            .iter()
            .map(|a| ApplyLogRecord {
                run_id: run_id.to_owned(),
                op_index: a.index + 1,
                id: Some(a.op.id),
                source_id: a.op.source_id.clone(),
                status: if a.change.is_some() {
                    OpStatus::Applied
                } else {
                    OpStatus::Flagged
                },
                action: Some(a.op.action),
                lines: Some((a.op.target.line_start, a.op.target.line_end)),
                fixes: a.fixes.clone(),
                defaults_filled: a.defaults.clone(),
                reject: None,
                reason: None,
                touches_protected: a.touches_protected.clone(),
                matches: None,
                known_as: None,
            })
            .chain(self.rejected.iter().map(|r| ApplyLogRecord {
                run_id: run_id.to_owned(),
                op_index: r.index + 1,
                id: r.id,
                source_id: r.source_id.clone(),
                status: OpStatus::Rejected,
                action: r.action,
                lines: r.lines,
                fixes: r.fixes.clone(),
                defaults_filled: r.defaults.clone(),
                reject: Some(r.rejection.class),
                reason: Some(r.rejection.reason.clone()),
                touches_protected: Vec::new(),
                matches: None,
                known_as: None,
            }))
            .chain(self.known.iter().map(|k| ApplyLogRecord {
                run_id: run_id.to_owned(),
                op_index: k.index + 1,
                id: None,
                source_id: k.source_id.clone(),
                status: OpStatus::Known,
                action: Some(k.action),
                lines: Some(k.lines),
                fixes: Vec::new(),
                defaults_filled: Vec::new(),
                reject: None,
                reason: None,
                touches_protected: Vec::new(),
                matches: Some(k.matches),
                known_as: Some(k.known_as),
            }))
            .collect();
        records.sort_by_key(|r| r.op_index);
        records
    }
}

/// `apply_outcome`: what `md_apply_ops` computed. The host commits it
/// (after replaying it) with the review workspace's `PreparedRun::commit_review`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyOutcome {
    /// Document file name used in patch headers.
    pub doc_name: String,
    /// The options the batch ran with.
    pub options: ApplyOptions,
    /// The protected regions of the document the ops were applied to.
    pub protected: ProtectedSpans,
    /// The batch: applied ops with patches, rejections, final text.
    pub batch: BatchOutcome,
}
