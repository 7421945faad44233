//! # refine_router — targeted refinement: the router
//!
//! Decides each task's fix (surgical edit or section rewrite, or the
//! verdict that the whole document needs a rewrite) and the batches they
//! run in. Deterministic; the logic is `koas_refine::router`.

use koas_kernel_api::prelude::*;
use koas_refine::router::route;
use koas_review_schema::names;
use koas_review_schema::refine::RefinePlan;

/// The `refine_router` kernel.
#[derive(Debug, Default, Clone, Copy)]
pub struct RefineRouter;

impl Kernel for RefineRouter {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("refine_router", "0.1.0")
            .stage("R3")
            .description("Routes each task to the patcher or the section-expander and batches non-adjacent sections")
            .input(names::REFINE_PLAN)
            .output_file(names::REFINE_ROUTING, "refine/routing.json")
    }

    fn run(&self, _ctx: &Context, _config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let plan: RefinePlan = inputs.parse(names::REFINE_PLAN)?;
        let routing = route(&plan);
        let summary = match &routing.full_regenerate {
            Some(why) => format!("full rewrite needed: {why}"),
            None => format!(
                "{} tasks in {} batches",
                routing.tasks.len(),
                routing.batches.len()
            ),
        };
        Ok(KernelOutput::new()
            .artifact(names::REFINE_ROUTING, routing)
            .summary(summary))
    }
}

koas_kernel_api::export_kernel!(RefineRouter);
