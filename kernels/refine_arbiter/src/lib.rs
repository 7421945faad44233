//! # refine_arbiter — targeted refinement: the arbiter
//!
//! Consolidates the judges' verdicts: Krippendorff's alpha over the score
//! matrix, agreement filtering, clustering, conflict resolution, one task
//! per section (locked sections left out). Deterministic; the logic is
//! `koas_refine::arbiter`.

use koas_kernel_api::prelude::*;
use koas_refine::arbiter::consolidate;
use koas_refine::host::current_text;
use koas_refine::sections::sections_of;
use koas_review_schema::names;
use koas_review_schema::refine::{RefineState, RefineVerdicts};

/// The `refine_arbiter` kernel.
#[derive(Debug, Default, Clone, Copy)]
pub struct RefineArbiter;

impl Kernel for RefineArbiter {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("refine_arbiter", "0.1.0")
            .stage("R2")
            .description("Consolidates the judges' verdicts: agreement (Krippendorff's alpha), filtering, conflicts, one task per section")
            .input(names::DOC_RAW)
            .input(names::REFINE_VERDICTS)
            .optional_input(names::REVIEW_DOC)
            .optional_input(names::REFINE_STATE)
            .output_file(names::REFINE_PLAN, "refine/plan.json")
    }

    fn run(&self, _ctx: &Context, _config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let text = current_text(inputs)?;
        let verdicts: RefineVerdicts = inputs.parse(names::REFINE_VERDICTS)?;
        let state: RefineState = inputs
            .parse_optional(names::REFINE_STATE)?
            .unwrap_or_default();
        let plan = consolidate(&verdicts, &sections_of(&text), &state);
        let summary = match &plan.no_assessment {
            Some(why) => format!("no plan: {why}"),
            None => format!(
                "score {:.3}, α {}, {} issues kept, {} filtered, {} tasks",
                plan.score,
                plan.alpha.map_or("n/a".to_owned(), |a| format!("{a:.3}")),
                plan.kept.len(),
                plan.filtered.len(),
                plan.tasks.len()
            ),
        };
        Ok(KernelOutput::new()
            .artifact(names::REFINE_PLAN, plan)
            .summary(summary))
    }
}

koas_kernel_api::export_kernel!(RefineArbiter);
