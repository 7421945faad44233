//! # md_edit_plan — Stage 2 reviewer kernel (LLM edge)
//!
//! Summarizes the document (the pyramid, and the glossary, which needs no
//! model) and has a model propose edit ops chunk by chunk, both over one
//! stream of requests: a chunk is asked as soon as the summaries its
//! prompt reads are made, not once the whole pyramid is
//! (`koas_review_llm::joint`). The kernel reads whatever
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
use koas_review_llm::joint::{self, PyramidInput};
use koas_review_llm::lang::{self, Language};
use koas_review_llm::pyramid::{
    self, BuildOptions, PlanOptions as PyramidPlanOptions, Summarizer, SummaryError,
    SummaryRequest, Template, Templates,
};
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_plan::{ChunkVerdict, EditPlan, EditPlanStatus};
use koas_review_schema::findings::{Finding, FindingsArtifact};
use koas_review_schema::fingerprint::ChunkFingerprints;
use koas_review_schema::ledger::LedgerEntry;
use koas_review_schema::names;
use koas_review_schema::pyramid::{Glossary, Pyramid, PyramidStatus};
use koas_review_schema::stage1::{ChunkPlan, FileStats, ProtectedSpans, SectionIndex};
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
    /// Show protected blocks to the model as they are: in edit prompts
    /// instead of one placeholder line each, in summary prompts instead of
    /// one line naming each code block and front matter.
    show_protected: bool,
    /// Ask every chunk and every summary again, ignoring the previous
    /// plan and pyramid.
    rebuild: bool,
    /// Build no pyramid (`--skip-pyramid`): chunks are asked without
    /// summaries.
    skip_pyramid: bool,
    /// Why, for the skipped pyramid.
    skip_pyramid_reason: String,
    /// Pyramid levels, 1 (abstract only) to 4.
    pyramid_levels: u8,
    /// The longest summary, in estimated tokens.
    summary_max_tokens: u32,
    /// A section longer than this (estimated tokens) is summarized chunk
    /// by chunk first.
    pyramid_max_input_tokens: u32,
    /// The document's name (the pyramid root's heading when it has no
    /// single top-level title); empty: the file name of the text read.
    title: String,
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
const PROMPTS: [&str; 7] = [
    "pyramid_leaf",
    "pyramid_parent",
    "pyramid_abstract",
    "review",
    "review_plain",
    "regenerate",
    "tutor_validate",
];

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
    for echo in &r.echoes {
        request = request.stop_marker(echo.clone());
    }
    if let Some(chars) = r.prose_until {
        request = request.prose_until(chars);
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

impl Summarizer for HostModel<'_> {
    fn submit(&self, r: SummaryRequest) -> u64 {
        let request = pyramid::host::request(&r);
        let ticket = self.stream.borrow_mut().submit(&request).0;
        self.sent_at.borrow_mut().insert(ticket, Instant::now());
        ticket
    }

    fn next(&self) -> Option<(u64, Result<String, SummaryError>)> {
        let (ticket, answer) = EditModel::next(self)?;
        Some((ticket, joint::summary_answer(answer)))
    }
}

fn template(inputs: &Inputs, name: &str) -> Result<Template, KernelError> {
    Ok(inputs.prompt(name)?.into())
}

/// A skip's reason as configured, or the default one.
fn skip_reason(configured: &str) -> &str {
    if configured.is_empty() {
        "skipped by configuration"
    } else {
        configured
    }
}

/// The edit plan's prompt templates.
fn plan_templates(inputs: &Inputs) -> Result<PlanTemplates, KernelError> {
    Ok(PlanTemplates {
        review: template(inputs, "review")?,
        review_plain: template(inputs, "review_plain")?,
        regenerate: template(inputs, "regenerate")?,
        tutor_validate: template(inputs, "tutor_validate")?,
    })
}

/// The pyramid's build options from the configuration.
fn build_options(
    config: &EditPlanConfig,
    language: Language,
    identity: Option<&serde_json::Value>,
    inputs: &Inputs,
) -> Result<BuildOptions, KernelError> {
    Ok(BuildOptions {
        levels: config.pyramid_levels,
        summary_max_tokens: config.summary_max_tokens,
        language,
        model: pyramid::host::model(identity),
        templates: Templates {
            leaf: template(inputs, "pyramid_leaf")?,
            parent: template(inputs, "pyramid_parent")?,
            abstract_: template(inputs, "pyramid_abstract")?,
        },
        rebuild: config.rebuild,
        in_flight: config.in_flight.max(1),
    })
}

/// A pyramid not built, and why.
fn skipped_pyramid(doc_hash: &str, reason: &str, language: Language) -> Pyramid {
    Pyramid {
        doc_hash: doc_hash.to_owned(),
        status: PyramidStatus::Skipped,
        skipped_reason: Some(reason.to_owned()),
        language: language.code().to_owned(),
        ..Pyramid::default()
    }
}

/// The outputs of a run that asks nothing: the plan and the pyramid
/// skipped, the glossary (no model needed).
fn skipped(doc_hash: &str, reason: &str, language: Language, glossary: &Glossary) -> KernelOutput {
    let plan = EditPlan {
        doc_hash: doc_hash.to_owned(),
        status: EditPlanStatus::Skipped,
        reason: Some(reason.to_owned()),
        language: language.code().to_owned(),
        ..EditPlan::default()
    };
    let pyramid = skipped_pyramid(doc_hash, reason, language);
    pyramid_artifacts(KernelOutput::new(), &pyramid, glossary)
        .artifact(names::EDIT_PLAN, plan)
        .summary(format!("edit plan skipped: {reason}"))
}

fn pyramid_artifacts(out: KernelOutput, pyramid: &Pyramid, glossary: &Glossary) -> KernelOutput {
    out.artifact(names::PYRAMID, pyramid)
        .artifact(
            names::PYRAMID_MD,
            koas_review_llm::pyramid::render_markdown(pyramid),
        )
        .artifact(names::GLOSSARY, glossary)
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
            .description("Summarizes the document bottom up and has a model propose edit ops chunk by chunk, each chunk asked as soon as the summaries it reads are made; reads any answer format, places each proposal by its text, keeps protected lines untouched and gives the ops their IDs")
            .input(names::DOC_RAW)
            .input(names::SECTION_INDEX)
            .input(names::CHUNKS)
            .optional_input(names::FILE_STATS)
            .optional_input(names::PROTECTED_SPANS)
            .optional_input(names::ISSUES)
            .optional_input(names::NUMBERING_FINDINGS)
            .optional_input(names::LANGUAGE_FINDINGS)
            .optional_input(names::CHUNK_FINGERPRINTS)
            .optional_input(names::LEDGER)
            .output_file(names::PYRAMID, "stage2/pyramid.json")
            .output_file(names::PYRAMID_MD, "stage2/pyramid.md")
            .output_file(names::GLOSSARY, "stage2/glossary.json")
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
            "show_protected": false,
            "rebuild": false,
            "skip_pyramid": false,
            "skip_pyramid_reason": "",
            "pyramid_levels": 4,
            "summary_max_tokens": 200,
            "pyramid_max_input_tokens": 3000,
            "title": "",
        }))
    }

    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let config: EditPlanConfig = config.parse()?;
        let text = inputs.source_text(names::DOC_RAW)?;
        let sections: SectionIndex = inputs.parse(names::SECTION_INDEX)?;
        let chunks: ChunkPlan = inputs.parse(names::CHUNKS)?;
        let doc_hash = chunks.doc_hash.clone();
        let language = language_of(&config, text)?;
        let glossary = koas_review_llm::glossary::extract(text, &sections, &doc_hash);
        if config.skip {
            let reason = skip_reason(&config.skip_reason);
            return Ok(skipped(&doc_hash, reason, language, &glossary));
        }
        if !(0.0..=1.0).contains(&config.breaker_threshold) {
            return Err(KernelError::invalid_config(format!(
                "breaker_threshold {} is not a share between 0 and 1",
                config.breaker_threshold
            )));
        }
        // A host hands the model identity exactly when a model is
        // configured: without one, planning and rendering every prompt
        // (seconds on a large document) would only meet "no backend".
        if inputs.get(koas_kernel_api::LLM_INPUT).is_none() {
            return Ok(skipped(&doc_hash, NO_LLM, language, &glossary));
        }
        let read = ReadInputs::read(inputs)?;
        let templates = plan_templates(inputs)?;
        // The model identity the host will use, so that a plan made by
        // another model is not reused.
        let identity = inputs.get(koas_kernel_api::LLM_INPUT);
        let model_id = identity
            .map(koas_kernel_api::hash::canonical_json)
            .unwrap_or_default();
        let options = plan_options(&config, language, &model_id, templates);
        let model = HostModel::new(ctx);
        let mut recorder = ChunkRecorder {
            ctx,
            model: &model,
            write_error: None,
        };
        let mut on_chunk = |done: &ChunkDone| recorder.chunk_done(done);
        let mut progress = |done: u64, total: u64| ctx.progress(done, total);
        let (pyramid, planned) = if config.skip_pyramid {
            let reason = skip_reason(&config.skip_pyramid_reason);
            let pyramid = skipped_pyramid(&doc_hash, reason, language);
            let input = read.plan_input(text, &doc_hash, &chunks, Some(&pyramid), &glossary);
            let total = chunks.chunks.len() as u64;
            let mut done = 0u64;
            let planned = edit_plan::plan(&input, &options, &model, &mut |c: &ChunkDone| {
                on_chunk(c);
                done += c.status.members.len().max(1) as u64;
                progress(done.min(total), total);
            })
            .map_err(|e| KernelError::invalid_input(e.to_string()))?;
            (pyramid, planned)
        } else {
            let node_plan = pyramid::plan(
                text,
                &sections,
                &chunks,
                &pyramid::host::title(&config.title, read.read_name.clone(), &sections),
                read.spans.as_ref().filter(|_| !config.show_protected),
                PyramidPlanOptions {
                    levels: config.pyramid_levels,
                    max_input_tokens: config.pyramid_max_input_tokens,
                },
            )
            .map_err(|e| KernelError::invalid_config(e.to_string()))?;
            let build_options = build_options(&config, language, identity, inputs)?;
            let previous: Option<Pyramid> = inputs
                .previous::<Pyramid>(names::PYRAMID)
                .filter(|p| p.status == PyramidStatus::Built);
            let input = read.plan_input(text, &doc_hash, &chunks, None, &glossary);
            let (built, planned) = joint::build_and_plan(
                PyramidInput {
                    plan: &node_plan,
                    doc_hash: &doc_hash,
                    previous: previous.as_ref(),
                    options: &build_options,
                },
                &input,
                &options,
                &model,
                &model,
                &mut on_chunk,
                &mut progress,
            )
            .map_err(|e| KernelError::invalid_input(e.to_string()))?;
            let mut planned = planned;
            planned.warnings.splice(0..0, built.warnings);
            (built.pyramid, planned)
        };
        if model.no_backend.get() {
            return Ok(skipped(&doc_hash, NO_LLM, language, &glossary));
        }
        ctx.check_cancelled()?;
        if let Some(e) = recorder.write_error {
            return Err(e);
        }
        Ok(plan_output(&pyramid, &glossary, planned))
    }
}

/// Why nothing is asked when no model is configured.
const NO_LLM: &str = "no LLM configured";

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
    fingerprints: Option<ChunkFingerprints>,
    /// The file name of the text read (the pyramid's title by default).
    read_name: Option<String>,
    /// The change IDs the ledger already holds.
    used: Vec<ChangeId>,
    findings: Vec<Finding>,
    previous: Option<EditPlan>,
}

impl ReadInputs {
    fn read(inputs: &Inputs) -> Result<ReadInputs, KernelError> {
        let spans: Option<ProtectedSpans> = inputs.parse_optional(names::PROTECTED_SPANS)?;
        let read_name = inputs
            .parse_optional::<FileStats>(names::FILE_STATS)?
            .and_then(|s| {
                std::path::Path::new(&s.path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            });
        let fingerprints: Option<ChunkFingerprints> =
            inputs.parse_optional(names::CHUNK_FINGERPRINTS)?;
        let ledger: Vec<LedgerEntry> = inputs.parse_optional(names::LEDGER)?.unwrap_or_default();
        let used: Vec<ChangeId> = ledger.iter().map(|e| e.id.change()).collect();
        let findings = findings(inputs)?;
        let previous: Option<EditPlan> = inputs.previous(names::EDIT_PLAN);
        Ok(ReadInputs {
            spans,
            fingerprints,
            read_name,
            used,
            findings,
            previous,
        })
    }
}

impl ReadInputs {
    /// What the planner reads; `pyramid` is `None` when it is being built
    /// alongside.
    fn plan_input<'a>(
        &'a self,
        doc: &'a str,
        doc_hash: &'a str,
        chunks: &'a ChunkPlan,
        pyramid: Option<&'a Pyramid>,
        glossary: &'a Glossary,
    ) -> PlanInput<'a> {
        PlanInput {
            doc,
            doc_hash,
            chunks,
            spans: self.spans.as_ref(),
            findings: &self.findings,
            pyramid,
            glossary: &glossary.terms,
            fingerprints: self.fingerprints.as_ref(),
            used_ids: &self.used,
            previous: self.previous.as_ref(),
        }
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
    options.show_protected = config.show_protected;
    options.rebuild = config.rebuild;
    options
}

/// Writes each chunk's files as the plan finishes it.
struct ChunkRecorder<'a> {
    ctx: &'a Context<'a>,
    model: &'a HostModel<'a>,
    /// The first write that failed: planning goes on, the kernel fails
    /// once it is done.
    write_error: Option<KernelError>,
}

impl ChunkRecorder<'_> {
    fn chunk_done(&mut self, done: &ChunkDone) {
        // No model behind the host: nothing to record.
        if self.model.no_backend.get() || self.write_error.is_some() {
            return;
        }
        if let Err(e) = write_chunk(self.ctx, done) {
            self.write_error = Some(e);
        }
    }
}

/// The kernel's output: the pyramid, the glossary and the plan, a line on
/// each, the warnings.
fn plan_output(
    pyramid: &Pyramid,
    glossary: &Glossary,
    planned: edit_plan::Planned,
) -> KernelOutput {
    let mut out = pyramid_artifacts(KernelOutput::new(), pyramid, glossary)
        .artifact(names::EDIT_PLAN, &planned.plan)
        .summary(format!(
            "pyramid: {}; edit plan: {}",
            pyramid.summary_line(glossary.terms.len()),
            planned.plan.summary_line()
        ));
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
    let unanswered = pyramid.unanswered();
    let mut incomplete = Vec::new();
    if unanswered > 0 {
        incomplete.push(format!("{unanswered} summaries"));
    }
    if unasked > 0 {
        incomplete.push(format!("{unasked} chunk(s)"));
    }
    if !incomplete.is_empty() {
        out = out.incomplete(format!(
            "{} could not be asked of the model; the next run asks them again",
            incomplete.join(" and ")
        ));
    }
    out
}

koas_kernel_api::export_kernel!(MdEditPlan);
