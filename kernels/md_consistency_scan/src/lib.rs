//! # md_consistency_scan — Stage 2 reviewer kernel
//!
//! Deterministic consistency checks over the whole document: AI leftovers,
//! duplicated paragraphs, broken section references (English and French),
//! counts contradicted by the next table, table structure, percentage
//! columns, terminology drift, links to missing anchors.
//!
//! Inputs: `doc_raw`, `section_index`, `anchor_map`, `protected_spans`,
//! and optionally `chunks` (findings then name their chunk). Output:
//! `issues` (`stage2/coherence_issues.json`). Config: the keys of
//! [`koas_md_scan::config::ScanConfig`]. The logic lives in
//! [`koas_md_scan`]; `koas check` runs the same code in-process.

use koas_kernel_api::prelude::*;
use koas_md_scan::config::{FindingsPolicy, ScanConfig};
use koas_md_scan::plugin::{self, Stage1Inputs};
use koas_md_scan::{consistency_scan, CONSISTENCY_KERNEL};
use koas_review_schema::names;

#[derive(Debug, Default, Clone, Copy)]
pub struct MdConsistencyScan;

// Maps a scan error to the kernel error kind that says whose fault it is.
impl Kernel for MdConsistencyScan {
    fn spec(&self) -> KernelSpec {
        let spec = KernelSpec::new(CONSISTENCY_KERNEL, "0.1.0")
            .stage("S2")
            .description("Consistency scan: AI leftovers, duplicates, broken refs (EN/FR), numeric contradictions, tables, percentages, terminology, link anchors")
            .input(names::DOC_RAW)
            .input(names::SECTION_INDEX)
            .input(names::ANCHOR_MAP)
            .input(names::PROTECTED_SPANS)
            .optional_input(names::CHUNKS)
            .findings_output_file(names::ISSUES, "stage2/coherence_issues.json")
            .default_config(FindingsPolicy::default_kernel_config(
                serde_json::to_value(ScanConfig::default()).unwrap_or_default(),
            ));
        koas_md_scan::kinds::declare_builtin(spec, CONSISTENCY_KERNEL)
    }

    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        // `disable` and `severity`: the project's koas.toml [check], applied
        // here so that every later kernel sees the same findings.
        let (config, policy): (ScanConfig, _) = plugin::settings(config)?;
        let stage1 = Stage1Inputs::read(inputs, true)?;
        ctx.check_cancelled()?;
        let output = consistency_scan(stage1.view(), &config)?;
        let (artifact, warnings) = stage1.findings(CONSISTENCY_KERNEL, output, &policy);
        let mut out = KernelOutput::new().summary(artifact.summary());
        for w in warnings {
            out = out.warning(w);
        }
        Ok(out.artifact(names::ISSUES, &artifact))
    }
}

koas_kernel_api::export_kernel!(MdConsistencyScan);
