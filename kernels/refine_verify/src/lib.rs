//! # refine_verify — targeted refinement: the verifier
//!
//! Checks each committed change the host hands it (`refine_changes`):
//! the free checks (length, language, structure, readability), then the
//! delta judge, one YES/NO question per issue. The host reverts, through
//! the ledger, every change that fails. The logic is
//! `koas_refine::verify`.

use koas_kernel_api::prelude::*;
use koas_refine::host::{language_name, HostModel};
use koas_refine::verify::{verify_changes, VerifyInput};
use koas_review_schema::names;
use koas_review_schema::refine::RefineChange;
use serde::Deserialize;

/// `[config.refine_verify]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct VerifyKernelConfig {
    /// Tokens an answer may take.
    max_tokens: u32,
    /// `auto` or a language code.
    language: String,
}

/// The `refine_verify` kernel.
#[derive(Debug, Default, Clone, Copy)]
pub struct RefineVerify;

impl Kernel for RefineVerify {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("refine_verify", "0.1.0")
            .stage("R5")
            .description(
                "Verifies each change: free checks, then the delta judge (YES/NO per issue)",
            )
            .optional_input(names::REFINE_CHANGES)
            .output_file(names::REFINE_VERIFICATION, "refine/verification.json")
            .prompt("refine_delta")
            .uses_llm()
            .nondeterministic()
            .default_config(serde_json::json!({
                "max_tokens": 200,
                "language": "auto",
            }))
    }

    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let config: VerifyKernelConfig = config.parse()?;
        let changes: Vec<RefineChange> = inputs
            .parse_optional(names::REFINE_CHANGES)?
            .unwrap_or_default();
        let sample: String = changes.iter().map(|c| c.after_text.as_str()).collect();
        let template = inputs.prompt("refine_delta")?;
        let model = HostModel::new(ctx);
        let input = VerifyInput {
            changes: &changes,
            template: (&template.name, &template.text),
            language: language_name(&config.language, &sample),
            max_tokens: config.max_tokens,
        };
        let out = verify_changes(&model, &input)
            .map_err(|e| KernelError::invalid_input(e.to_string()))?;
        let passed = out.changes.iter().filter(|c| c.passed).count();
        let summary = format!(
            "{} changes: {passed} passed, {} failed, {} tokens",
            out.changes.len(),
            out.changes.len() - passed,
            out.tokens.total()
        );
        Ok(KernelOutput::new()
            .artifact(names::REFINE_VERIFICATION, out)
            .summary(summary))
    }
}

koas_kernel_api::export_kernel!(RefineVerify);
