//! # md_structure — Stage 1 reviewer kernel
//!
//! Builds the heading tree of the document (ATX and setext headings, stable
//! section IDs `S2.3.1`, GitHub-compatible anchors, explicit numbering),
//! the flat section index and the anchor map:
//!
//! | artifact | file |
//! |----------|------|
//! | `heading_tree` | `stage1/md_structure.json` |
//! | `section_index` | `stage1/outline.json` |
//! | `anchor_map` | `stage1/anchors.json` |
//!
//! Headings inside code, HTML blocks or front matter are not headings. The
//! logic lives in [`koas_md`]; this crate is the plugin glue.

use koas_kernel_api::prelude::*;
use koas_md::scan::{scan, ScanOptions};
use koas_md::{structure, summary, LineIndex};
use koas_review_schema::names;

#[derive(Debug, Default, Clone, Copy)]
pub struct MdStructure;

impl Kernel for MdStructure {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("md_structure", "0.1.0")
            .stage("S1")
            .description("Heading tree with section IDs, GitHub anchors and explicit numbering; flat outline; anchor map")
            .input(names::DOC_RAW)
            .optional_input(names::DOC_HASH)
            .output_file(names::HEADING_TREE, "stage1/md_structure.json")
            .output_file(names::SECTION_INDEX, "stage1/outline.json")
            .output_file(names::ANCHOR_MAP, "stage1/anchors.json")
    }

    fn run(&self, ctx: &Context, _config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let (text, doc_hash) = koas_md::plugin::document(inputs)?;
        let index = LineIndex::new(text);
        let parsed = scan(&index, ScanOptions::default());
        ctx.check_cancelled()?;
        let built = structure::build(&index, &parsed, &doc_hash);
        let summary = summary::structure(&built);
        Ok(KernelOutput::new()
            .artifact(names::HEADING_TREE, &built.tree)
            .artifact(names::SECTION_INDEX, &built.sections)
            .artifact(names::ANCHOR_MAP, &built.anchors)
            .summary(summary))
    }
}

koas_kernel_api::export_kernel!(MdStructure);
