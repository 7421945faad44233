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
use koas_md_scan::{consistency_scan, Stage1View, CONSISTENCY_KERNEL};
use koas_review_schema::findings::FindingsArtifact;
use koas_review_schema::names;
use koas_review_schema::stage1::{AnchorMap, ChunkPlan, ProtectedSpans, SectionIndex};

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
        let (settings, policy) = FindingsPolicy::split_kernel_config(config.value())?;
        let config: ScanConfig = KernelConfig(settings).parse()?;
        let text = inputs.source_text(names::DOC_RAW)?;
        let sections: SectionIndex = inputs.parse(names::SECTION_INDEX)?;
        let anchors: AnchorMap = inputs.parse(names::ANCHOR_MAP)?;
        let protected: ProtectedSpans = inputs.parse(names::PROTECTED_SPANS)?;
        let chunks: Option<ChunkPlan> = inputs.parse_optional(names::CHUNKS)?;
        ctx.check_cancelled()?;
        let view = Stage1View {
            text,
            sections: &sections,
            anchors: &anchors,
            protected: &protected,
            chunks: chunks.as_ref(),
        };
        let mut output = consistency_scan(view, &config)?;
        policy.apply(&mut output.findings);
        output.forget_kinds(&policy.other_kinds);
        let artifact =
            FindingsArtifact::new(&protected.doc_hash, CONSISTENCY_KERNEL, output.findings);
        let mut out = KernelOutput::new().summary(artifact.summary());
        for w in output.warnings {
            out = out.warning(w);
        }
        Ok(out.artifact(names::ISSUES, &artifact))
    }
}

koas_kernel_api::export_kernel!(MdConsistencyScan);
