//! # md_pyramid — Stage 2 reviewer kernel (LLM edge)
//!
//! Summarizes the document at up to four levels (abstract, top sections,
//! subsections, sub-subsections) bottom up, so that the model reviewing
//! one chunk later knows what the rest of the document says; and lists
//! the terms the document defines (`glossary`, no model needed).
//!
//! The kernel is incremental: the host hands it its last pyramid, and a
//! summary whose input (text or children's summaries, prompt, model) is
//! unchanged is taken from it without a call. A summary is asked for as
//! soon as what it is made from is summarized (a parent when its own
//! children are), `in_flight` requests at a time.
//!
//! Without a model (`skip = true`, or no LLM configured) the pyramid is
//! written empty and marked `skipped` with the reason: the run goes on.
//! The logic is `koas_review_llm::pyramid`; this crate is the glue.

use std::cell::RefCell;

use koas_kernel_api::prelude::*;
use koas_kernel_api::{LlmStream, NO_BACKEND};
use koas_review_llm::lang::{self, Language};
use koas_review_llm::pyramid::{
    self, host, BuildOptions, PlanOptions, Summarizer, SummaryError, SummaryRequest, Template,
    Templates,
};
use koas_review_schema::names;
use koas_review_schema::pyramid::{Glossary, Pyramid, PyramidStatus};
use koas_review_schema::stage1::{ChunkPlan, FileStats, ProtectedSpans, SectionIndex};
use serde::Deserialize;

/// `[config.md_pyramid]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct PyramidConfig {
    /// Build nothing (`--no-llm`, `--skip-pyramid`).
    skip: bool,
    /// Why, for the skipped pyramid.
    skip_reason: String,
    /// Levels to build, 1 (abstract only) to 4.
    levels: u8,
    /// The longest summary, in estimated tokens.
    summary_max_tokens: u32,
    /// `auto` (detect French or English) or a language code.
    language: String,
    /// A section longer than this (estimated tokens) is summarized chunk by
    /// chunk first; keep it under the model's context window minus the
    /// prompt and the answer.
    max_input_tokens: u32,
    /// Ask for every summary again, ignoring the previous pyramid.
    rebuild: bool,
    /// Requests kept at the model at once; set it to the host's slots.
    in_flight: usize,
    /// Show code blocks and front matter to the model as they are, instead
    /// of one line naming each.
    show_protected: bool,
    /// The document's name, the root's heading when the document has no
    /// single top-level title; empty: the file name of the text read. The
    /// review sets it: after a first review it reads the workspace's copy
    /// of the document, whose file name is not the user's.
    title: String,
}

impl Default for PyramidConfig {
    fn default() -> Self {
        PyramidConfig {
            skip: false,
            skip_reason: String::new(),
            levels: 4,
            summary_max_tokens: 200,
            language: "auto".to_owned(),
            max_input_tokens: 3_000,
            rebuild: false,
            in_flight: 8,
            show_protected: false,
            title: String::new(),
        }
    }
}

/// The `md_pyramid` kernel.
#[derive(Debug, Default, Clone, Copy)]
pub struct MdPyramid;

/// Service errors after which asking again is pointless.
const FATAL: &[&str] = &[
    "SESSION_BUDGET_EXHAUSTED",
    "TRANSPORT_FAILURE",
    "SOVEREIGNTY",
    "cancelled",
    "no LLM backend configured",
];

/// The host's LLM service, as a stream: summaries are asked as soon as
/// they can be, answers read as they complete.
struct HostSummarizer<'a> {
    stream: RefCell<LlmStream<'a>>,
}

impl Summarizer for HostSummarizer<'_> {
    fn submit(&self, r: SummaryRequest) -> u64 {
        let request = host::request(&r);
        self.stream.borrow_mut().submit(&request).0
    }

    fn next(&self) -> Option<(u64, Result<String, SummaryError>)> {
        let (ticket, answer) = self.stream.borrow_mut().next()?;
        let answer = answer.map(|r| r.text).map_err(|e| SummaryError {
            fatal: FATAL.iter().any(|f| e.message.contains(f)),
            message: e.message,
        });
        Some((ticket.0, answer))
    }
}

fn skipped(doc_hash: &str, reason: &str, language: Language) -> Pyramid {
    Pyramid {
        doc_hash: doc_hash.to_owned(),
        status: PyramidStatus::Skipped,
        skipped_reason: Some(reason.to_owned()),
        language: language.code().to_owned(),
        ..Pyramid::default()
    }
}

/// The skipped pyramid of a run without a model.
fn no_model(doc_hash: &str, glossary: &Glossary, language: Language) -> KernelOutput {
    let p = skipped(doc_hash, "no LLM configured", language);
    output(
        &p,
        glossary,
        "pyramid skipped: no LLM configured".to_owned(),
    )
}

fn template(inputs: &Inputs, name: &str) -> Result<Template, KernelError> {
    Ok(inputs.prompt(name)?.into())
}

fn output(pyramid: &Pyramid, glossary: &Glossary, summary: String) -> KernelOutput {
    KernelOutput::new()
        .artifact(names::PYRAMID, pyramid)
        .artifact(names::PYRAMID_MD, pyramid::render_markdown(pyramid))
        .artifact(names::GLOSSARY, glossary)
        .summary(summary)
}

impl Kernel for MdPyramid {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("md_pyramid", "0.1.0")
            .stage("S2")
            .description("Summarizes the document at up to four levels, bottom up, asking the model only where the document changed; lists the terms it defines")
            .input(names::DOC_RAW)
            .input(names::SECTION_INDEX)
            .input(names::CHUNKS)
            .optional_input(names::FILE_STATS)
            .optional_input(names::PROTECTED_SPANS)
            .output_file(names::PYRAMID, "stage2/pyramid.json")
            .output_file(names::PYRAMID_MD, "stage2/pyramid.md")
            .output_file(names::GLOSSARY, "stage2/glossary.json")
            .uses_llm()
            .nondeterministic()
            .incremental()
            .prompt("pyramid_leaf")
            .prompt("pyramid_parent")
            .prompt("pyramid_abstract")
            .default_config(serde_json::json!({
                "skip": false,
                "skip_reason": "",
                "levels": 4,
                "summary_max_tokens": 200,
                "language": "auto",
                "max_input_tokens": 3000,
                "rebuild": false,
                "in_flight": 8,
                "show_protected": false,
                "title": "",
            }))
    }

    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let config: PyramidConfig = config.parse()?;
        let text = inputs.source_text(names::DOC_RAW)?;
        let sections: SectionIndex = inputs.parse(names::SECTION_INDEX)?;
        let chunks: ChunkPlan = inputs.parse(names::CHUNKS)?;
        let doc_hash = sections.doc_hash.clone();
        let language = language_of(&config.language, text)?;
        let glossary = koas_review_llm::glossary::extract(text, &sections, &doc_hash);
        if config.skip {
            let reason = if config.skip_reason.is_empty() {
                "skipped by configuration"
            } else {
                &config.skip_reason
            };
            let p = skipped(&doc_hash, reason, language);
            return Ok(output(&p, &glossary, format!("pyramid skipped: {reason}")));
        }
        // A host hands the model identity exactly when a model is
        // configured: without one, planning and rendering every prompt
        // (seconds on a large document) would only meet "no backend".
        if inputs.get(koas_kernel_api::LLM_INPUT).is_none() {
            return Ok(no_model(&doc_hash, &glossary, language));
        }
        let read_name = read_name(inputs)?;
        let title = host::title(&config.title, read_name, &sections);
        let spans: Option<ProtectedSpans> = if config.show_protected {
            None
        } else {
            inputs.parse_optional(names::PROTECTED_SPANS)?
        };
        let plan = pyramid::plan(
            text,
            &sections,
            &chunks,
            &title,
            spans.as_ref(),
            PlanOptions {
                levels: config.levels,
                max_input_tokens: config.max_input_tokens,
            },
        )
        .map_err(|e| KernelError::invalid_config(e.to_string()))?;
        let templates = Templates {
            leaf: template(inputs, "pyramid_leaf")?,
            parent: template(inputs, "pyramid_parent")?,
            abstract_: template(inputs, "pyramid_abstract")?,
        };
        // The model the host will ask, so that a summary made by another
        // model is not reused.
        let model = host::model(inputs.get(koas_kernel_api::LLM_INPUT));
        let previous: Option<Pyramid> = inputs
            .previous::<Pyramid>(names::PYRAMID)
            .filter(|p| p.status == PyramidStatus::Built);
        let options = BuildOptions {
            levels: config.levels,
            summary_max_tokens: config.summary_max_tokens,
            language,
            model,
            templates,
            rebuild: config.rebuild,
            in_flight: config.in_flight.max(1),
        };
        let summarizer = HostSummarizer {
            stream: RefCell::new(ctx.llm_stream()),
        };
        let mut progress = |done: u32, total: u32| ctx.progress(u64::from(done), u64::from(total));
        let built = pyramid::build(
            &plan,
            &doc_hash,
            previous.as_ref(),
            &options,
            &summarizer,
            &mut progress,
        )
        .map_err(|e| KernelError::invalid_config(e.to_string()))?;
        let stats = built.pyramid.stats;
        // No model behind the host: a skipped pyramid, not a failed run.
        if stats.requested > 0 && built.warnings.iter().any(|w| w.contains(NO_BACKEND)) {
            return Ok(no_model(&doc_hash, &glossary, language));
        }
        let summary = built.pyramid.summary_line(glossary.terms.len());
        let unanswered = built.pyramid.unanswered();
        let mut out = output(&built.pyramid, &glossary, summary);
        for w in built.warnings {
            out = out.warning(w);
        }
        if unanswered > 0 {
            out = out.incomplete(format!(
                "{unanswered} summaries could not be asked of the model; the next run asks them again"
            ));
        }
        Ok(out)
    }
}

/// The language the summaries are written in: the configured one, or the
/// document's when `auto`.
fn language_of(configured: &str, text: &str) -> Result<Language, KernelError> {
    Ok(match configured {
        "auto" | "" => lang::detect(text),
        code => Language::parse(code).ok_or_else(|| {
            KernelError::invalid_config(format!(
                "language {code:?} is not one koas writes: use auto, fr or en"
            ))
        })?,
    })
}

/// The document's file name, when the host gave its stats.
fn read_name(inputs: &Inputs) -> Result<Option<String>, KernelError> {
    Ok(inputs
        .parse_optional::<FileStats>(names::FILE_STATS)?
        .and_then(|s| {
            std::path::Path::new(&s.path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        }))
}

koas_kernel_api::export_kernel!(MdPyramid);
