//! # refine_judge — targeted refinement: the judges
//!
//! One to three judges (model roles) score every section of the document
//! on six criteria (0–1) and report targeted issues; they are shown the
//! findings of the deterministic checks in the section. The logic is
//! `koas_refine::judge`; this crate is the glue. Without a model the
//! verdicts are empty and marked skipped.

use std::collections::BTreeMap;

use koas_kernel_api::prelude::*;
use koas_refine::host::{current_text, language_name, HostModel};
use koas_refine::judge::{judge_document, JudgeInput};
use koas_refine::sections::sections_of;
use koas_review_schema::findings::FindingsArtifact;
use koas_review_schema::names;
use koas_review_schema::refine::RefineVerdicts;
use serde::Deserialize;

/// `[config.refine_judge]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct JudgeKernelConfig {
    /// The judges: model roles (each may have its own model in `[llm]
    /// models`), 1–3.
    judges: Vec<String>,
    /// Tokens an answer may take.
    max_tokens: u32,
    /// `auto` or a language code.
    language: String,
    /// Ask nothing.
    skip: bool,
}

/// The `refine_judge` kernel.
#[derive(Debug, Default, Clone, Copy)]
pub struct RefineJudge;

impl Kernel for RefineJudge {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("refine_judge", "0.1.0")
            .stage("R1")
            .description("Judges score every section on six criteria and report targeted issues")
            .input(names::DOC_RAW)
            .optional_input(names::REVIEW_DOC)
            .optional_input(names::ISSUES)
            .optional_input(names::NUMBERING_FINDINGS)
            .output_file(names::REFINE_VERDICTS, "refine/verdicts.json")
            .prompt("refine_judge")
            .uses_llm()
            .nondeterministic()
            .default_config(serde_json::json!({
                "judges": ["judge"],
                "max_tokens": 700,
                "language": "auto",
                "skip": false,
            }))
    }

    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let config: JudgeKernelConfig = config.parse()?;
        let text = current_text(inputs)?;
        let skipped = |reason: &str| {
            let v = RefineVerdicts {
                doc_hash: koas_kernel_api::hash::sha256(&text),
                skipped: Some(reason.to_owned()),
                ..RefineVerdicts::default()
            };
            KernelOutput::new()
                .artifact(names::REFINE_VERDICTS, v)
                .summary(format!("judges skipped: {reason}"))
        };
        if config.skip {
            return Ok(skipped("skip = true"));
        }
        if config.judges.is_empty() || config.judges.len() > 3 {
            return Err(KernelError::invalid_input(format!(
                "[config.refine_judge] judges: give 1 to 3 judges, not {}",
                config.judges.len()
            )));
        }
        let sections = sections_of(&text);
        // Stage 2 ran on doc_raw: its line numbers fit only that text.
        let mut findings: BTreeMap<String, Vec<String>> = BTreeMap::new();
        if inputs.source_text(names::DOC_RAW).ok() == Some(text.as_str()) {
            for name in [names::ISSUES, names::NUMBERING_FINDINGS] {
                let Some(a) = inputs.parse_optional::<FindingsArtifact>(name)? else {
                    continue;
                };
                for f in a.findings {
                    let line = f.line as usize;
                    if let Some(s) = sections
                        .iter()
                        .find(|s| s.body_start <= line && line <= s.body_end)
                    {
                        findings.entry(s.id.clone()).or_default().push(format!(
                            "line {}: {} ({})",
                            f.line,
                            f.message,
                            f.kind.as_str()
                        ));
                    }
                }
            }
        }
        let template = inputs.prompt("refine_judge")?;
        let model = HostModel::new(ctx);
        let input = JudgeInput {
            text: &text,
            sections: &sections,
            judges: &config.judges,
            findings: &findings,
            template: (&template.name, &template.text),
            language: language_name(&config.language, &text),
            max_tokens: config.max_tokens,
        };
        let verdicts = judge_document(&model, &input)
            .map_err(|e| KernelError::invalid_input(e.to_string()))?;
        if model.no_backend() {
            return Ok(skipped("no model configured"));
        }
        let read: usize = verdicts.verdicts.iter().map(|v| v.sections.len()).sum();
        let unreadable: usize = verdicts.verdicts.iter().map(|v| v.unreadable.len()).sum();
        let issues: usize = verdicts.verdicts.iter().map(|v| v.issues.len()).sum();
        let summary = format!(
            "{} judges × {} sections: {read} verdicts read, {unreadable} unreadable, {issues} issues, {} tokens",
            config.judges.len(),
            sections.len(),
            verdicts.tokens.total()
        );
        Ok(KernelOutput::new()
            .artifact(names::REFINE_VERDICTS, verdicts)
            .summary(summary))
    }
}

koas_kernel_api::export_kernel!(RefineJudge);
