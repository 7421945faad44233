//! # md_numbering_control — Stage 2 reviewer kernel
//!
//! Deterministic numbering checks: heading level skips (H2 then H4), gaps
//! and duplicates in figure, table and equation numbering (captions in
//! English and French: `Figure 3:`, `Table 2 –`, `Tableau 1 :`,
//! `Équation 2`), and references to a figure, table or equation that does
//! not exist. Also proposes caption renumbering.
//!
//! Inputs: `doc_raw`, `section_index`, `protected_spans`, optionally
//! `chunks`. Outputs: `numbering_findings`
//! (`stage2/numbering_findings.json`) and `renumber_ops`
//! (`stage2/renumber_ops.json`). Config: the keys of
//! [`koas_md_scan::config::NumberingConfig`].

use koas_kernel_api::prelude::*;
use koas_md_scan::config::{FindingsPolicy, NumberingConfig};
use koas_md_scan::plugin::{self, Stage1Inputs};
use koas_md_scan::{numbering_control, NUMBERING_KERNEL};
use koas_review_schema::names;

#[derive(Debug, Default, Clone, Copy)]
pub struct MdNumberingControl;

impl Kernel for MdNumberingControl {
    fn spec(&self) -> KernelSpec {
        let spec = KernelSpec::new(NUMBERING_KERNEL, "0.1.0")
            .stage("S2")
            .description("Numbering control: heading level skips, figure/table/equation gaps and duplicates, missing targets")
            .input(names::DOC_RAW)
            .input(names::SECTION_INDEX)
            .input(names::PROTECTED_SPANS)
            .optional_input(names::CHUNKS)
            .findings_output_file(names::NUMBERING_FINDINGS, "stage2/numbering_findings.json")
            .output_file(names::RENUMBER_OPS, "stage2/renumber_ops.json")
            .default_config(FindingsPolicy::default_kernel_config(
                serde_json::to_value(NumberingConfig::default()).unwrap_or_default(),
            ));
        koas_md_scan::kinds::declare_builtin(spec, NUMBERING_KERNEL)
    }

    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        // `disable` and `severity`: the project's koas.toml [check], applied
        // here so that every later kernel sees the same findings.
        let (config, policy): (NumberingConfig, _) = plugin::settings(config)?;
        // Anchors play no part in numbering.
        let stage1 = Stage1Inputs::read(inputs, false)?;
        ctx.check_cancelled()?;
        let result = numbering_control(stage1.view(), &config)?;
        let (artifact, warnings) = stage1.findings(NUMBERING_KERNEL, result.output, &policy);
        let summary = format!(
            "{}; {} renumbering proposal(s)",
            artifact.summary(),
            result.renumber_ops.len()
        );
        let mut out = KernelOutput::new().summary(summary);
        for w in warnings {
            out = out.warning(w);
        }
        Ok(out
            .artifact(names::NUMBERING_FINDINGS, &artifact)
            .artifact(names::RENUMBER_OPS, &result.renumber_ops))
    }
}

koas_kernel_api::export_kernel!(MdNumberingControl);
