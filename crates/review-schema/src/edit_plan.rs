//! The `edit_plan` artifact of `md_edit_plan`: the edit ops a model
//! proposed for the document, after the kernel placed them by their
//! `before_text`, filtered them and gave them IDs; and one status record
//! per chunk (the lines of `stage2/ops/status.jsonl`), from which a later
//! run reuses every chunk whose input did not change.

use serde::{Deserialize, Serialize};

use crate::edit_op::EditOp;

/// The `edit_plan` artifact (`stage2/edit_plan.json`).
///
/// `md_apply_ops` reads its `ops` like an ops file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EditPlan {
    /// `sha256:` of the document planned on.
    #[serde(default)]
    pub doc_hash: String,
    /// `skipped` (no model, `--no-llm`), `complete`, or `partial` (the run
    /// stopped asking, e.g. the token budget was spent).
    #[serde(default)]
    pub status: EditPlanStatus,
    /// Why the plan is skipped or partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The document's language code (`fr`, `en`), which every prompt named.
    #[serde(default)]
    pub language: String,
    /// The model identity the worker requests went to.
    #[serde(default)]
    pub model: String,
    /// The ops, in document order of their chunks, IDs increasing.
    #[serde(default)]
    pub ops: Vec<EditOp>,
    /// One record per (sub-)chunk, in chunk order.
    #[serde(default)]
    pub chunks: Vec<ChunkStatus>,
    /// Proposals the kernel did not turn into ops, and why.
    #[serde(default)]
    pub dropped: Vec<DroppedProposal>,
    /// Totals.
    #[serde(default)]
    pub stats: EditPlanStats,
}

/// Whether the planner ran, and to the end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditPlanStatus {
    /// Every chunk was reviewed (or reused).
    #[default]
    Complete,
    /// The planner stopped asking before the end; the chunks not reviewed
    /// have a `skipped` verdict.
    Partial,
    /// Nothing was asked: no model configured, or turned off.
    Skipped,
}

/// What happened to one chunk's proposals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkVerdict {
    /// No tutor: the worker's ops as extracted.
    #[default]
    SingleModel,
    /// The tutor accepted the worker's ops.
    Accepted,
    /// The tutor replaced them with its corrected ops.
    Corrected,
    /// The tutor rejected them and the conservative regeneration failed
    /// too: no ops.
    Rejected,
    /// The tutor rejected them; the ops are the conservative
    /// regeneration's.
    Regenerated,
    /// The tutor could not be asked or gave no verdict: no ops (fail-safe).
    TutorFailed,
    /// The model proposed nothing (or said no change is needed), or was
    /// not asked: the chunk holds nothing but protected blocks.
    Empty,
    /// Every proposal was filtered (protected lines, not found, ...).
    Filtered,
    /// The model gave nothing usable even after every adaptive policy.
    Degenerate,
    /// Not asked: the run stopped asking (budget spent, server gone).
    Skipped,
}

impl EditPlan {
    /// One line on the plan for the user: chunks and requests, reuse,
    /// calls, ops proposed, kept, flagged and dropped, how answers were
    /// read; why it stopped, if it did; or why it was skipped.
    pub fn summary_line(&self) -> String {
        if self.status == EditPlanStatus::Skipped {
            return format!("skipped: {}", self.reason.as_deref().unwrap_or("skipped"));
        }
        let s = &self.stats;
        let methods: Vec<String> = s.methods.iter().map(|(m, n)| format!("{m} {n}")).collect();
        let mut line = format!(
            "{} chunks{} ({} reused): {} worker and {} tutor calls, {} ops proposed, {} in the plan ({} flagged for want of a place), {} dropped; methods: {}",
            s.chunks,
            if s.requests < s.chunks {
                let plural = if s.requests == 1 { "" } else { "s" };
                format!(" in {} request{plural}", s.requests)
            } else {
                String::new()
            },
            s.reused,
            s.worker_calls,
            s.tutor_calls,
            s.ops_proposed,
            s.ops,
            s.downgraded,
            s.dropped,
            methods.join(", ")
        );
        if let Some(reason) = &self.reason {
            line.push_str(&format!("; stopped: {reason}"));
        }
        line
    }
}

impl ChunkVerdict {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ChunkVerdict::SingleModel => "single_model",
            ChunkVerdict::Accepted => "accepted",
            ChunkVerdict::Corrected => "corrected",
            ChunkVerdict::Rejected => "rejected",
            ChunkVerdict::Regenerated => "regenerated",
            ChunkVerdict::TutorFailed => "tutor_failed",
            ChunkVerdict::Empty => "empty",
            ChunkVerdict::Filtered => "filtered",
            ChunkVerdict::Degenerate => "degenerate",
            ChunkVerdict::Skipped => "skipped",
        }
    }
}

/// One firing of an adaptive policy or content recipe for a chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdaptiveEscalation {
    /// `A` (degenerate → skeleton tier), `B` (no ops but findings → more
    /// context), `C` (content recipe), `D` (markdown strip), `retry`
    /// (empty answer → warmer temperature) or `breaker` (plain prompt).
    pub policy: String,
    /// The state before, e.g. `tier=1`.
    pub from: String,
    /// The state after, e.g. `tier=0`.
    pub to: String,
    /// Why it fired.
    pub reason: String,
}

/// The status record of one chunk: a line of `stage2/ops/status.jsonl`
/// and an entry of [`EditPlan::chunks`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkStatus {
    /// The (sub-)chunk ID (`{chunk}_a`, `{chunk}_b` for sub-chunks).
    pub chunk_id: String,
    /// The chunk of the chunk plan it belongs to.
    #[serde(default)]
    pub parent_chunk_id: String,
    /// The chunks of the chunk plan a request over several covered, in
    /// order (its ID is then `{first}+{n}`); empty for one chunk or piece.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    /// First line (1-based) of the document it covers.
    #[serde(default)]
    pub line_start: u32,
    /// Last line (inclusive).
    #[serde(default)]
    pub line_end: u32,
    /// The ladder level that read the last worker answer (`json_strict`,
    /// …, `empty_response`, `failed`), or `none` when nothing was asked.
    pub method: String,
    /// `true` when the ladder found structure (possibly no ops).
    #[serde(default)]
    pub parse_success: bool,
    /// Ops the chunk contributes to the plan.
    pub ops: u32,
    /// Proposals extracted before filtering and targeting (the ops the
    /// ladder refused for a wrong type included).
    #[serde(default)]
    pub ops_proposed: u32,
    /// Proposals dropped (see [`EditPlan::dropped`]).
    #[serde(default)]
    pub ops_dropped: u32,
    /// Wall time from the chunk's first request to its last answer, ms.
    pub latency_ms: u64,
    /// Time spent waiting for model answers, ms.
    pub t_request_ms: u64,
    /// Requests asked again (empty answers, policies, regeneration).
    pub retries: u32,
    /// Context tier of the last worker prompt (0–3).
    pub tier: u8,
    /// Content recipe transforms applied (`table_mask`, …, `markdown_strip`).
    #[serde(default)]
    pub recipe: Vec<String>,
    /// What happened to the proposals.
    pub verdict: ChunkVerdict,
    /// The tutor's reason, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_reason: Option<String>,
    /// Requests to the worker model.
    #[serde(default)]
    pub worker_calls: u32,
    /// Requests to the tutor model.
    #[serde(default)]
    pub tutor_calls: u32,
    /// `review` or `review_plain` (after the circuit breaker tripped).
    #[serde(default)]
    pub prompt: String,
    /// Every adaptive policy that fired, in order.
    #[serde(default)]
    pub adaptive_escalation: Vec<AdaptiveEscalation>,
    /// `true` when the chunk stayed degenerate after every policy.
    #[serde(default)]
    pub degenerate: bool,
    /// `true` when generation stopped at `END_EDIT_OPS`.
    #[serde(default)]
    pub stopped_at_marker: bool,
    /// Tokens of the answers (as reported by the service).
    #[serde(default)]
    pub completion_tokens: u64,
    /// `sha256:` of what the chunk's result depends on (its text, its
    /// context, the model, the prompts): an unchanged key is reused.
    #[serde(default)]
    pub incremental_key: String,
    /// `true` when the result was taken from the previous plan, no call.
    #[serde(default)]
    pub reused: bool,
    /// The service error that ended the chunk, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A proposal that did not become an op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedProposal {
    /// The (sub-)chunk it was proposed for.
    pub chunk_id: String,
    /// Its action as the model wrote it.
    pub action: String,
    /// Its `before_text` (unmasked), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_text: Option<String>,
    /// Why: `protected`, `not_found`, `ambiguous`, `other_chunk`,
    /// `duplicate`, `no_anchor`, `masked_content_lost`, `no_change`,
    /// `echo`, `repetitive`, `tutor_rejected`, `tutor_failed`, or
    /// `wrong_type` (the extraction ladder refused the op: a field held a
    /// value of the wrong type, e.g. a number as `after_text`; `detail`
    /// is the ladder's reason and the item's place in the answer's list).
    pub reason: String,
    /// Detail for people.
    #[serde(default)]
    pub detail: String,
}

/// Totals of a plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EditPlanStats {
    /// Chunks (sub-chunks counted one by one; the chunks of a request
    /// over several each count).
    pub chunks: u32,
    /// Requests the chunks were asked in (one per entry of
    /// [`EditPlan::chunks`]): fewer than the chunks when small ones
    /// share a request.
    #[serde(default)]
    pub requests: u32,
    /// Chunks whose result was reused without a call.
    pub reused: u32,
    /// Requests to the worker model.
    pub worker_calls: u32,
    /// Requests to the tutor model.
    pub tutor_calls: u32,
    /// Proposals extracted.
    pub ops_proposed: u32,
    /// Ops in the plan.
    pub ops: u32,
    /// Ops downgraded to `flag_only` because they could not be placed.
    pub downgraded: u32,
    /// Proposals dropped.
    pub dropped: u32,
    /// Chunks whose answer the ladder read.
    pub parse_success: u32,
    /// Chunks degenerate after every policy.
    pub degenerate: u32,
    /// Chunks a content recipe was applied to.
    pub recipe_applied: u32,
    /// Of those, chunks no longer degenerate afterwards.
    pub recipe_recovered: u32,
    /// Ladder level → chunks.
    pub methods: std::collections::BTreeMap<String, u32>,
    /// Verdict → chunks.
    pub verdicts: std::collections::BTreeMap<String, u32>,
    /// Policy → firings.
    pub escalations: std::collections::BTreeMap<String, u32>,
    /// `true` once the circuit breaker switched to the plain prompt.
    pub circuit_breaker_tripped: bool,
    /// Tokens of the answers.
    pub completion_tokens: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_round_trips_and_old_records_read() {
        let mut plan = EditPlan {
            doc_hash: "sha256:00".into(),
            language: "fr".into(),
            ..EditPlan::default()
        };
        plan.chunks.push(ChunkStatus {
            chunk_id: "intro_0badf00d".into(),
            method: "json_strict".into(),
            verdict: ChunkVerdict::Regenerated,
            adaptive_escalation: vec![AdaptiveEscalation {
                policy: "A".into(),
                from: "tier=1".into(),
                to: "tier=0".into(),
                reason: "decoded_empty_saturated".into(),
            }],
            ..ChunkStatus::default()
        });
        let json = serde_json::to_value(&plan).expect("serializes");
        assert_eq!(json["chunks"][0]["verdict"], "regenerated");
        assert_eq!(json["status"], "complete");
        let back: EditPlan = serde_json::from_value(json).expect("reads");
        assert_eq!(back, plan);
        // A status line with only the seed's fields still reads.
        let line: ChunkStatus = serde_json::from_str(
            r#"{"chunk_id":"c","method":"yaml","ops":1,"latency_ms":5,"t_request_ms":4,"retries":0,"tier":1,"verdict":"single_model"}"#,
        )
        .expect("reads");
        assert_eq!(line.verdict.as_str(), "single_model");
    }
}
