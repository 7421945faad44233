//! # md_edit_plan — Stage 2 reviewer kernel (LLM edge)
//!
//! A model proposes edit ops chunk by chunk; the kernel reads whatever
//! format it answered in, places each proposal on the document's real
//! lines by its `before_text`, keeps it off protected lines, and gives it
//! its `RVW-NNNN` ID once every chunk is done. The logic is
//! `koas_review_llm::edit_plan`; this crate is the glue:
//!
//! - requests go to the host's LLM service as a stream (`llm_stream`):
//!   `in_flight` of them are kept out for the whole run, and a chunk's
//!   follow-up goes out as soon as its answer is read;
//! - as each chunk finishes (in chunk order), its raw answers are written to
//!   `stage2/ops/{chunk_id}.raw.txt` and its status appended to
//!   `stage2/ops/status.jsonl`; masks go to `stage2/masks/`, chunks that
//!   stayed degenerate to `stage2/exemplars/`;
//! - the kernel is incremental: the host hands it its last plan, and an
//!   unchanged chunk is reused without a call;
//! - without a model (`skip = true`, or no LLM configured) the plan is
//!   written empty and marked `skipped`: the run goes on.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::Instant;

use koas_kernel_api::prelude::*;
use koas_kernel_api::{LlmRequest, LlmStream, NO_BACKEND};
use koas_review_llm::context::Tier;
use koas_review_llm::edit_plan::{
    self, ChunkDone, EditModel, ModelAnswer, ModelError, ModelRequest, ModelRole, PlanInput,
    PlanOptions, PlanTemplates, RecipeOptions,
};
use koas_review_llm::lang::{self, Language};
use koas_review_llm::pyramid::Template;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_plan::{ChunkVerdict, EditPlan, EditPlanStatus};
use koas_review_schema::findings::{Finding, FindingsArtifact};
use koas_review_schema::fingerprint::ChunkFingerprints;
use koas_review_schema::ledger::LedgerEntry;
use koas_review_schema::names;
use koas_review_schema::pyramid::{Glossary, Pyramid};
use koas_review_schema::stage1::{ChunkPlan, ProtectedSpans};
use serde::Deserialize;

/// `[config.md_edit_plan]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct EditPlanConfig {
    /// Ask nothing (`--no-llm`).
    skip: bool,
    /// Why, for the skipped plan.
    skip_reason: String,
    /// `auto` (detect French or English) or a language code.
    language: String,
    /// The tutor model; empty: single-model mode.
    tutor_model: String,
    /// Chunks above this (estimated tokens) are reviewed in sub-chunks.
    max_edit_chunk_tokens: u32,
    /// Small adjacent chunks share a request up to this many tokens; 0
    /// asks each alone.
    target_request_tokens: u32,
    /// The prompt's token budget (context window minus the answer).
    context_budget: u32,
    /// The tier (0–3) when chunk size and budget do not decide.
    default_tier: u8,
    /// Tokens an answer may take.
    max_tokens: u32,
    /// Empty answers asked again, warmer.
    empty_retries: u32,
    /// Requests kept at the model at once; set it to the host's slots.
    in_flight: usize,
    /// Chunks the circuit breaker looks back on.
    breaker_window: usize,
    /// Failure share that trips it.
    breaker_threshold: f64,
    /// Policy C.
    content_recipes: RecipeOptions,
    /// Policy D.
    md_strip: bool,
    /// Ask every chunk again, ignoring the previous plan.
    rebuild: bool,
}

/// The `md_edit_plan` kernel.
#[derive(Debug, Default, Clone, Copy)]
pub struct MdEditPlan;

/// Service errors after which asking again is pointless.
const FATAL: &[&str] = &[
    "SESSION_BUDGET_EXHAUSTED",
    "TRANSPORT_FAILURE",
    "SOVEREIGNTY",
    "cancelled",
    "no LLM backend configured",
];

/// The prompts the kernel declares.
const PROMPTS: [&str; 4] = ["review", "review_plain", "regenerate", "tutor_validate"];

/// The host's LLM service, as a stream: requests go out one by one and
/// answers come back as they complete.
struct HostModel<'a> {
    stream: RefCell<LlmStream<'a>>,
    /// When each request out was sent, by ticket.
    sent_at: RefCell<HashMap<u64, Instant>>,
    /// Set once an answer was "no backend".
    no_backend: Cell<bool>,
}

impl<'a> HostModel<'a> {
    fn new(ctx: &'a Context<'a>) -> Self {
        HostModel {
            stream: RefCell::new(ctx.llm_stream()),
            sent_at: RefCell::new(HashMap::new()),
            no_backend: Cell::new(false),
        }
    }
}

fn llm_request(r: &ModelRequest) -> LlmRequest {
    let role = match r.role {
        ModelRole::Worker => "edit",
        ModelRole::Tutor => "tutor",
    };
    let mut request = LlmRequest::new(role, r.prompt.clone()).max_tokens(r.max_tokens);
    if let Some(t) = r.temperature {
        request = request.temperature(t);
    }
    if let Some(marker) = &r.stop_marker {
        request = request.stop_marker(marker.clone());
    }
    if let Some(marker) = &r.complete_after {
        request = request.complete_json_after(marker.clone());
    }
    request
}

fn model_error(message: String) -> ModelError {
    ModelError {
        fatal: FATAL.iter().any(|f| message.contains(f)),
        message,
    }
}

impl EditModel for HostModel<'_> {
    fn submit(&self, request: ModelRequest) -> u64 {
        let ticket = self.stream.borrow_mut().submit(&llm_request(&request)).0;
        self.sent_at.borrow_mut().insert(ticket, Instant::now());
        ticket
    }

    fn next(&self) -> Option<(u64, Result<ModelAnswer, ModelError>)> {
        let (ticket, answer) = self.stream.borrow_mut().next()?;
        let ticket = ticket.0;
        let started = self.sent_at.borrow_mut().remove(&ticket);
        let elapsed_ms = started.map_or(0, |t| {
            u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)
        });
        let answer = answer
            .map(|r| ModelAnswer {
                completion_tokens: r.completion_tokens,
                stopped_at_marker: r.stopped_at_marker,
                text: r.text,
                elapsed_ms,
            })
            .map_err(|e| {
                if e.message.contains(NO_BACKEND) {
                    self.no_backend.set(true);
                }
                model_error(e.message)
            });
        Some((ticket, answer))
    }
}

fn template(inputs: &Inputs, name: &str) -> Result<Template, KernelError> {
    Ok(inputs.prompt(name)?.into())
}

fn skipped(doc_hash: &str, reason: &str, language: Language) -> KernelOutput {
    let plan = EditPlan {
        doc_hash: doc_hash.to_owned(),
        status: EditPlanStatus::Skipped,
        reason: Some(reason.to_owned()),
        language: language.code().to_owned(),
        ..EditPlan::default()
    };
    KernelOutput::new()
        .artifact(names::EDIT_PLAN, plan)
        .summary(format!("edit plan skipped: {reason}"))
}

/// The findings the model is told about, chunk by chunk. A language
/// finding with a certain fix is left out: the review applies those
/// before the model reads the text (`koas review`'s first pass), so
/// asking about them again would only invite a second edit of the line.
fn findings(inputs: &Inputs) -> Result<Vec<Finding>, KernelError> {
    let mut all = Vec::new();
    for name in [names::ISSUES, names::NUMBERING_FINDINGS] {
        if let Some(a) = inputs.parse_optional::<FindingsArtifact>(name)? {
            all.extend(a.findings);
        }
    }
    if let Some(a) = inputs.parse_optional::<FindingsArtifact>(names::LANGUAGE_FINDINGS)? {
        all.extend(a.findings.into_iter().filter(|f| f.fix.is_none()));
    }
    Ok(all)
}

/// Writes one finished chunk's files; the first failure is kept.
fn write_chunk(ctx: &Context, done: &ChunkDone) -> Result<(), KernelError> {
    for (name, text) in &done.raw {
        ctx.write_file(&format!("stage2/ops/{name}"), text.as_bytes())?;
    }
    for (name, text) in &done.masks {
        ctx.write_file(&format!("stage2/masks/{name}"), text.as_bytes())?;
    }
    if let Some(exemplar) = &done.exemplar {
        let text = serde_json::to_string_pretty(exemplar)?;
        ctx.write_file(
            &format!("stage2/exemplars/{}.json", done.status.chunk_id),
            text.as_bytes(),
        )?;
    }
    let mut line = serde_json::to_string(&done.status)?;
    line.push('\n');
    ctx.append_file("stage2/ops/status.jsonl", line.as_bytes())
}

impl Kernel for MdEditPlan {
    fn spec(&self) -> KernelSpec {
        let mut spec = KernelSpec::new("md_edit_plan", "0.1.0")
            .stage("S2")
            .description("A model proposes edit ops chunk by chunk; the kernel reads any answer format, places each proposal by its text, keeps protected lines untouched and gives the ops their IDs")
            .input(names::DOC_RAW)
            .input(names::CHUNKS)
            .optional_input(names::PROTECTED_SPANS)
            .optional_input(names::ISSUES)
            .optional_input(names::NUMBERING_FINDINGS)
            .optional_input(names::LANGUAGE_FINDINGS)
            .optional_input(names::PYRAMID)
            .optional_input(names::GLOSSARY)
            .optional_input(names::CHUNK_FINGERPRINTS)
            .optional_input(names::LEDGER)
            .output_file(names::EDIT_PLAN, "stage2/edit_plan.json")
            // Streamed per chunk while it runs: the raw answers, the masks
            // and the exemplars, and the status lines.
            .writes("stage2/ops/")
            .writes("stage2/masks/")
            .writes("stage2/exemplars/")
            .uses_llm()
            .nondeterministic()
            .incremental();
        for p in PROMPTS {
            spec = spec.prompt(p);
        }
        spec.default_config(serde_json::json!({
            "skip": false,
            "skip_reason": "",
            "language": "auto",
            "tutor_model": "",
            "max_edit_chunk_tokens": 900,
            "target_request_tokens": edit_plan::DEFAULT_TARGET_REQUEST_TOKENS,
            "context_budget": 6000,
            "default_tier": 1,
            "max_tokens": 1024,
            "empty_retries": 2,
            "in_flight": 8,
            "breaker_window": 20,
            "breaker_threshold": 0.6,
            "content_recipes": serde_json::to_value(RecipeOptions::default()).unwrap_or_default(),
            "md_strip": true,
            "rebuild": false,
        }))
    }

    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let config: EditPlanConfig = config.parse()?;
        let text = inputs.source_text(names::DOC_RAW)?;
        let chunks: ChunkPlan = inputs.parse(names::CHUNKS)?;
        let doc_hash = chunks.doc_hash.clone();
        let language = language_of(&config, text)?;
        if config.skip {
            let reason = if config.skip_reason.is_empty() {
                "skipped by configuration"
            } else {
                &config.skip_reason
            };
            return Ok(skipped(&doc_hash, reason, language));
        }
        if !(0.0..=1.0).contains(&config.breaker_threshold) {
            return Err(KernelError::invalid_config(format!(
                "breaker_threshold {} is not a share between 0 and 1",
                config.breaker_threshold
            )));
        }
        // A host hands the model identity exactly when a model is
        // configured: without one, placing findings and rendering a prompt
        // per chunk (seconds on a large document) would only meet "no
        // backend".
        if inputs.get(koas_kernel_api::LLM_INPUT).is_none() {
            return Ok(skipped(&doc_hash, "no LLM configured", language));
        }
        let read = ReadInputs::read(inputs)?;
        let templates = PlanTemplates {
            review: template(inputs, "review")?,
            review_plain: template(inputs, "review_plain")?,
            regenerate: template(inputs, "regenerate")?,
            tutor_validate: template(inputs, "tutor_validate")?,
        };
        // The model identity the host will use, so that a plan made by
        // another model is not reused.
        let model = inputs
            .get(koas_kernel_api::LLM_INPUT)
            .map(koas_kernel_api::hash::canonical_json)
            .unwrap_or_default();
        let options = plan_options(&config, language, &model, templates);
        let input = PlanInput {
            doc: text,
            doc_hash: &doc_hash,
            chunks: &chunks,
            spans: read.spans.as_ref(),
            findings: &read.findings,
            pyramid: read.pyramid.as_ref(),
            glossary: read.glossary.as_ref().map_or(&[], |g| g.terms.as_slice()),
            fingerprints: read.fingerprints.as_ref(),
            used_ids: &read.used,
            previous: read.previous.as_ref(),
        };
        let model = HostModel::new(ctx);
        let mut recorder = ChunkRecorder {
            ctx,
            model: &model,
            write_error: None,
            done_count: 0,
            last_parent: None,
            total: chunks.chunks.len() as u64,
        };
        let planned = edit_plan::plan(&input, &options, &model, &mut |done: &ChunkDone| {
            recorder.chunk_done(done)
        })
        .map_err(|e| KernelError::invalid_input(e.to_string()))?;
        if model.no_backend.get() {
            return Ok(skipped(&doc_hash, "no LLM configured", language));
        }
        ctx.check_cancelled()?;
        if let Some(e) = recorder.write_error {
            return Err(e);
        }
        Ok(plan_output(planned))
    }
}

/// The language the plan is written in: the configured one, or the
/// document's (`auto`).
fn language_of(config: &EditPlanConfig, text: &str) -> Result<Language, KernelError> {
    match config.language.as_str() {
        "auto" | "" => Ok(lang::detect(text)),
        code => Language::parse(code).ok_or_else(|| {
            KernelError::invalid_config(format!(
                "language {code:?} is not one koas writes: use auto, fr or en"
            ))
        }),
    }
}

/// The optional inputs a plan is made with.
struct ReadInputs {
    spans: Option<ProtectedSpans>,
    pyramid: Option<Pyramid>,
    glossary: Option<Glossary>,
    fingerprints: Option<ChunkFingerprints>,
    /// The change IDs the ledger already holds.
    used: Vec<ChangeId>,
    findings: Vec<Finding>,
    previous: Option<EditPlan>,
}

impl ReadInputs {
    fn read(inputs: &Inputs) -> Result<ReadInputs, KernelError> {
        let spans: Option<ProtectedSpans> = inputs.parse_optional(names::PROTECTED_SPANS)?;
        let pyramid: Option<Pyramid> = inputs.parse_optional(names::PYRAMID)?;
        let glossary: Option<Glossary> = inputs.parse_optional(names::GLOSSARY)?;
        let fingerprints: Option<ChunkFingerprints> =
            inputs.parse_optional(names::CHUNK_FINGERPRINTS)?;
        let ledger: Vec<LedgerEntry> = inputs.parse_optional(names::LEDGER)?.unwrap_or_default();
        let used: Vec<ChangeId> = ledger.iter().map(|e| e.id.change()).collect();
        let findings = findings(inputs)?;
        let previous: Option<EditPlan> = inputs.previous(names::EDIT_PLAN);
        Ok(ReadInputs {
            spans,
            pyramid,
            glossary,
            fingerprints,
            used,
            findings,
            previous,
        })
    }
}

/// The planning options from the kernel's config.
fn plan_options(
    config: &EditPlanConfig,
    language: Language,
    model: &str,
    templates: PlanTemplates,
) -> PlanOptions {
    let mut options = PlanOptions::new(language, model, templates);
    options.tutor_model = Some(config.tutor_model.clone()).filter(|t| !t.is_empty());
    options.max_edit_chunk_tokens = config.max_edit_chunk_tokens;
    options.target_request_tokens = config.target_request_tokens;
    options.context_budget = config.context_budget;
    options.default_tier = Tier::from_number(config.default_tier);
    options.max_tokens = config.max_tokens;
    options.empty_retries = config.empty_retries;
    options.in_flight = config.in_flight.max(1);
    options.breaker_window = config.breaker_window;
    options.breaker_threshold = config.breaker_threshold;
    options.recipes = config.content_recipes.clone();
    options.md_strip = config.md_strip;
    options.rebuild = config.rebuild;
    options
}

/// Records each chunk as the plan finishes it: its files, and the run's
/// progress.
struct ChunkRecorder<'a> {
    ctx: &'a Context<'a>,
    model: &'a HostModel<'a>,
    /// The first write that failed: planning goes on, the kernel fails
    /// once it is done.
    write_error: Option<KernelError>,
    done_count: u64,
    last_parent: Option<String>,
    total: u64,
}

impl ChunkRecorder<'_> {
    fn chunk_done(&mut self, done: &ChunkDone) {
        // No model behind the host: nothing to record.
        if self.model.no_backend.get() {
            return;
        }
        if self.write_error.is_none() {
            if let Err(e) = write_chunk(self.ctx, done) {
                self.write_error = Some(e);
            }
        }
        // Progress in chunks of the plan (sub-chunks come in order; a
        // request over several chunks counts them all).
        if self.last_parent.as_deref() != Some(done.status.parent_chunk_id.as_str()) {
            self.last_parent = Some(done.status.parent_chunk_id.clone());
            self.done_count += done.status.members.len().max(1) as u64;
            self.ctx
                .progress(self.done_count.min(self.total), self.total);
        }
    }
}

/// The kernel's output: the plan, a one-line summary of it, the planner's
/// warnings.
fn plan_output(planned: edit_plan::Planned) -> KernelOutput {
    let s = &planned.plan.stats;
    let methods: Vec<String> = s.methods.iter().map(|(m, n)| format!("{m} {n}")).collect();
    let mut summary = format!(
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
    if let Some(reason) = &planned.plan.reason {
        summary.push_str(&format!("; stopped: {reason}"));
    }
    let mut out = KernelOutput::new()
        .artifact(names::EDIT_PLAN, &planned.plan)
        .summary(summary);
    for w in planned.warnings {
        out = out.warning(w);
    }
    // Chunks the model could not be asked about (server gone, budget
    // spent, a failed request) are asked on the next run: the cache must
    // not answer it with this plan.
    let unasked = planned
        .plan
        .chunks
        .iter()
        .filter(|c| c.verdict == ChunkVerdict::Skipped || c.error.is_some())
        .count();
    if unasked > 0 {
        out = out.incomplete(format!(
            "{unasked} chunk(s) could not be asked of the model; the next run asks them again"
        ));
    }
    out
}

koas_kernel_api::export_kernel!(MdEditPlan);
