//! # refine_fix — targeted refinement: patcher and section-expander
//!
//! Runs the routed tasks batch by batch (a batch's requests concurrently):
//! the patcher for surgical edits, the section-expander for section
//! rewrites, each shown the section with its protected blocks as
//! placeholders and the ends of its neighbours. The answers become edit
//! ops (`refine_ops`) that `md_apply_ops` applies as a model's. The logic
//! is `koas_refine::fix`.

use koas_kernel_api::prelude::*;
use koas_refine::fix::{fix_tasks, FixInput};
use koas_refine::host::{current_text, language_name, HostModel};
use koas_refine::sections::sections_of;
use koas_review_schema::names;
use koas_review_schema::refine::{RefineOps, RefineRouting};
use serde::Deserialize;

/// `[config.refine_fix]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FixKernelConfig {
    /// Tokens an answer may take.
    max_tokens: u32,
    /// `auto` or a language code.
    language: String,
    /// Ask nothing.
    skip: bool,
}

/// The `refine_fix` kernel.
#[derive(Debug, Default, Clone, Copy)]
pub struct RefineFix;

impl Kernel for RefineFix {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("refine_fix", "0.1.1")
            .stage("R4")
            .description("Patcher and section-expander: fixes of the routed tasks as edit ops")
            .input(names::DOC_RAW)
            // Optional so that the host can provide a routing a person
            // decided on, with no router in the pass.
            .optional_input(names::REFINE_ROUTING)
            .optional_input(names::REVIEW_DOC)
            .output_file(names::REFINE_OPS, "refine/ops.json")
            .prompt("refine_patch")
            .prompt("refine_expand")
            .uses_llm()
            .nondeterministic()
            .default_config(serde_json::json!({
                "max_tokens": 1500,
                "language": "auto",
                "skip": false,
            }))
    }

    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let config: FixKernelConfig = config.parse()?;
        let text = current_text(inputs)?;
        let routing: RefineRouting = inputs
            .parse_optional(names::REFINE_ROUTING)?
            .unwrap_or_default();
        if config.skip || routing.batches.is_empty() {
            let ops = RefineOps {
                doc_hash: koas_kernel_api::hash::sha256(&text),
                ..RefineOps::default()
            };
            return Ok(KernelOutput::new()
                .artifact(names::REFINE_OPS, ops)
                .summary("nothing to fix"));
        }
        let sections = sections_of(&text);
        let patch = inputs.prompt("refine_patch")?;
        let expand = inputs.prompt("refine_expand")?;
        let model = HostModel::new(ctx);
        let input = FixInput {
            text: &text,
            sections: &sections,
            routing: &routing,
            patch_template: (&patch.name, &patch.text),
            expand_template: (&expand.name, &expand.text),
            language: language_name(&config.language, &text),
            max_tokens: config.max_tokens,
        };
        let ops =
            fix_tasks(&model, &input).map_err(|e| KernelError::invalid_input(e.to_string()))?;
        let refused = ops.proposals.iter().filter(|p| p.refused.is_some()).count();
        let summary = format!(
            "{} tasks: {} ops, {refused} answers refused, {} tokens",
            ops.proposals.len(),
            ops.ops.len(),
            ops.tokens.total()
        );
        Ok(KernelOutput::new()
            .artifact(names::REFINE_OPS, ops)
            .summary(summary))
    }
}

koas_kernel_api::export_kernel!(RefineFix);
