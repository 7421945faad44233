//! The edit planner: a model proposes edit ops chunk by chunk; the kernel
//! reads whatever format it answered in, places each proposal on the
//! document's real lines, filters and IDs them.
//!
//! Per chunk ([`plan`]):
//!
//! 1. math is masked ([`mask`]); a chunk above `max_edit_chunk_tokens`
//!    is reviewed in sub-chunks ([`split`]); small adjacent chunks of one
//!    part of the document share a request ([`group`]); the context tier follows the
//!    chunk's size and the budget ([`crate::context::compute_tier`]);
//! 2. the prompt (`review`, or `review_plain` once the circuit breaker
//!    tripped) asks for `BEGIN_EDIT_OPS` … `END_EDIT_OPS`, in the
//!    document's language;
//! 3. the answer goes through the extraction ladder ([`crate::ladder`]); an
//!    empty or degenerate answer is asked again warmer, then policies A
//!    (skeleton tier), C (content recipe) and D (markdown strip) fire in
//!    order; an answer with no op on a chunk with findings gets policy B
//!    (more context) once;
//! 4. each proposal is placed by its `before_text` ([`target`]), unmasked,
//!    kept off protected lines;
//! 5. with a tutor, its verdict keeps, corrects or rejects the ops; a
//!    rejection gets one conservative regeneration; a tutor that fails
//!    rejects them;
//! 6. after every chunk, IDs are allocated in chunk order.
//!
//! Requests stream: up to `in_flight` are at the model at once, and a
//! chunk's follow-up (retry, tutor, regeneration) goes out as soon as its
//! answer is read, while the other chunks are still being answered. The
//! result depends on the answers and `in_flight`, never on the order in
//! which the answers arrived. A chunk whose text, context, model and
//! prompts are unchanged since the previous plan is reused without a call.

pub mod breaker;
mod engine;
pub mod group;
pub mod mask;
pub mod split;
pub mod target;
pub mod verdict;

#[cfg(test)]
mod tests;

pub use engine::{plan, Planner, ECHOES, PROSE_ANSWER_CHARS};

use koas_review_schema::change_id::{ChangeId, IdError};
use koas_review_schema::edit_op::ReviewPolicy;
use koas_review_schema::edit_plan::{ChunkStatus, EditPlan};
use koas_review_schema::findings::Finding;
use koas_review_schema::fingerprint::ChunkFingerprints;
use koas_review_schema::pyramid::{GlossaryTerm, Pyramid};
use koas_review_schema::stage1::{ChunkPlan, ProtectedSpans};
use serde::Serialize;

use crate::context::Tier;
use crate::lang::Language;
use crate::prompt::RenderError;
use crate::pyramid::Template;
pub use mask::RecipeOptions;

/// The four prompt templates of the planner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanTemplates {
    /// The structured prompt (`BEGIN_EDIT_OPS` JSON).
    pub review: Template,
    /// The plain-text prompt (`[RVW] action=…`), after the breaker trips.
    pub review_plain: Template,
    /// The conservative prompt after a tutor rejection.
    pub regenerate: Template,
    /// The tutor's prompt.
    pub tutor_validate: Template,
}

/// The size up to which small adjacent chunks share a request: the prompt's
/// instructions and context are several hundred tokens, so a request about
/// a 40-token section pays mostly for them; a few hundred tokens of text
/// still leave a small model a chunk it can follow line by line.
pub const DEFAULT_TARGET_REQUEST_TOKENS: u32 = 400;

/// How to plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanOptions {
    /// The document's language, named in every prompt.
    pub language: Language,
    /// The worker model's identity (part of every incremental key).
    pub model: String,
    /// The tutor model's identity; `None`: single-model mode.
    pub tutor_model: Option<String>,
    /// The prompts.
    pub templates: PlanTemplates,
    /// Chunks above this (estimated tokens) are reviewed in sub-chunks.
    pub max_edit_chunk_tokens: u32,
    /// Small adjacent chunks are asked about in one request up to this
    /// many (estimated) tokens of text ([`group`]); 0 asks each alone.
    pub target_request_tokens: u32,
    /// The prompt's token budget (context window minus the answer).
    pub context_budget: u32,
    /// The tier when the chunk and budget do not decide.
    pub default_tier: Tier,
    /// Tokens an answer may take.
    pub max_tokens: u32,
    /// Empty answers asked again (warmer each time).
    pub empty_retries: u32,
    /// Requests kept at the model at once (the host's in-flight bound,
    /// summed over its endpoints, is a good value).
    pub in_flight: usize,
    /// Chunks the circuit breaker looks back on.
    pub breaker_window: usize,
    /// Failure share (0–1) that trips it.
    pub breaker_threshold: f64,
    /// Policy C.
    pub recipes: RecipeOptions,
    /// Policy D.
    pub md_strip: bool,
    /// Show protected blocks (code, tables, HTML, display math, front
    /// matter) in edit prompts as they are; by default each is one
    /// placeholder line, since no model may change them.
    pub show_protected: bool,
    /// Ignore the previous plan.
    pub rebuild: bool,
    /// Visibility of the ops.
    pub policy: ReviewPolicy,
}

impl PlanOptions {
    /// The defaults: 900-token sub-chunks, requests of small chunks joined
    /// up to 400 tokens, a 6,000-token budget, section
    /// tier, 1,024-token answers, two empty retries, 8 requests in flight, a
    /// breaker over 20 chunks at 60 %, recipes and the strip on.
    pub fn new(language: Language, model: &str, templates: PlanTemplates) -> PlanOptions {
        PlanOptions {
            language,
            model: model.to_owned(),
            tutor_model: None,
            templates,
            max_edit_chunk_tokens: 900,
            target_request_tokens: DEFAULT_TARGET_REQUEST_TOKENS,
            context_budget: 6_000,
            default_tier: Tier::Section,
            max_tokens: 1_024,
            empty_retries: 2,
            in_flight: 8,
            breaker_window: 20,
            breaker_threshold: 0.6,
            recipes: RecipeOptions::default(),
            md_strip: true,
            show_protected: false,
            rebuild: false,
            policy: ReviewPolicy::default(),
        }
    }
}

/// Which model a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelRole {
    /// The worker that proposes ops.
    Worker,
    /// The tutor that validates them.
    Tutor,
}

/// One request to a model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelRequest {
    /// The (sub-)chunk it is for.
    pub chunk_id: String,
    /// Worker or tutor.
    pub role: ModelRole,
    /// The rendered prompt.
    pub prompt: String,
    /// A sampling temperature, when the planner nudges it (retries).
    pub temperature: Option<f64>,
    /// Tokens the answer may take.
    pub max_tokens: u32,
    /// Where generation may stop (`END_EDIT_OPS`).
    pub stop_marker: Option<String>,
    /// The marker after which one whole JSON value is the complete answer
    /// (`BEGIN_EDIT_OPS`).
    pub complete_after: Option<String>,
    /// Headings of the prompt ([`ECHOES`]) where generation stops
    /// too: an answer that writes one is copying the prompt.
    pub echoes: Vec<String>,
    /// Characters after which an answer written as prose, not ops, ends
    /// at a sentence end ([`PROSE_ANSWER_CHARS`]; the host's prose rules
    /// stop once a JSON value begins).
    pub prose_until: Option<u32>,
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelAnswer {
    /// The text, verbatim.
    pub text: String,
    /// Tokens generated, as the service reported them.
    pub completion_tokens: u64,
    /// `true` when generation stopped at the stop marker.
    pub stopped_at_marker: bool,
    /// Time the request took, ms.
    pub elapsed_ms: u64,
}

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    /// The service's message.
    pub message: String,
    /// `true` when asking again is pointless (budget spent, server gone):
    /// the planner stops asking and keeps what it has.
    pub fatal: bool,
}

/// Asks a model, a request at a time, answers as they complete. The
/// kernel implements it with the host's LLM stream; tests with scripts.
pub trait EditModel {
    /// Sends `request` and returns its ticket; its answer comes from
    /// [`EditModel::next`].
    fn submit(&self, request: ModelRequest) -> u64;
    /// Waits for the next answer to complete: its ticket and the answer.
    /// Every submitted request is answered exactly once; `None` when none
    /// is outstanding.
    fn next(&self) -> Option<(u64, Result<ModelAnswer, ModelError>)>;
}

/// What the planner reads.
#[derive(Debug, Clone, Copy)]
pub struct PlanInput<'a> {
    /// The document.
    pub doc: &'a str,
    /// Its `sha256:` hash.
    pub doc_hash: &'a str,
    /// The chunk plan.
    pub chunks: &'a ChunkPlan,
    /// Protected regions (ops on them are dropped).
    pub spans: Option<&'a ProtectedSpans>,
    /// Findings of the deterministic checks (policy B, tier 2 context).
    pub findings: &'a [Finding],
    /// The pyramid, for context.
    pub pyramid: Option<&'a Pyramid>,
    /// Glossary terms, for full-tier context.
    pub glossary: &'a [GlossaryTerm],
    /// Chunk fingerprints (policy C triggers).
    pub fingerprints: Option<&'a ChunkFingerprints>,
    /// Change IDs already in use (the ledger): never allocated again.
    pub used_ids: &'a [ChangeId],
    /// The previous plan, whose unchanged chunks are reused.
    pub previous: Option<&'a EditPlan>,
}

/// A finished chunk, handed to the caller at once so that it can write
/// `stage2/ops/`, `masks/` and `exemplars/` while the run goes on.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkDone {
    /// Its status record (a `status.jsonl` line).
    pub status: ChunkStatus,
    /// Raw answers: (file name under `stage2/ops/`, text verbatim).
    pub raw: Vec<(String, String)>,
    /// Mask files: (file name under `stage2/masks/`, content).
    pub masks: Vec<(String, String)>,
    /// The exemplar of a chunk degenerate after every policy
    /// (`stage2/exemplars/{chunk_id}.json`).
    pub exemplar: Option<serde_json::Value>,
}

/// A finished plan and what to tell the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The plan.
    pub plan: EditPlan,
    /// Warnings for the run record.
    pub warnings: Vec<String>,
}

/// What stops planning altogether.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A template cannot be rendered.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// No change ID is left.
    #[error(transparent)]
    Ids(#[from] IdError),
}
