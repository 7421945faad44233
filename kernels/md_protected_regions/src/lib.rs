//! # md_protected_regions — Stage 1 reviewer kernel
//!
//! Marks the spans that edits must never touch (conservative: when in
//! doubt, protect). Block spans, with 1-based inclusive lines, a kind and a
//! content hash: code fences, indented code, front matter, math blocks,
//! GFM tables, HTML blocks, link reference definitions. Inline spans, with
//! line and column: inline code, inline math, autolinks, bare URLs.
//!
//! | artifact | file |
//! |----------|------|
//! | `protected_spans` | `stage1/protected_spans.json` |
//! | `protected_summary` | `stage1/md_protected_regions.json` (counts only) |
//!
//! The logic lives in [`koas_md`]; this crate is the plugin glue.

use koas_kernel_api::prelude::*;
use koas_md::scan::{scan, ScanOptions};
use koas_md::{protected, summary, LineIndex};
use koas_review_schema::names;

#[derive(Debug, Default, Clone, Copy)]
pub struct MdProtectedRegions;

impl Kernel for MdProtectedRegions {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("md_protected_regions", "0.1.0")
            .stage("S1")
            .description("Protected block spans (code, front matter, math, tables, HTML, link definitions) and inline spans (code, math, autolinks, bare URLs)")
            .input(names::DOC_RAW)
            .optional_input(names::DOC_HASH)
            .output_file(names::PROTECTED_SPANS, "stage1/protected_spans.json")
            .output_file(names::PROTECTED_SUMMARY, "stage1/md_protected_regions.json")
    }

    fn run(&self, ctx: &Context, _config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let (text, doc_hash) = koas_md::plugin::document(inputs)?;
        let index = LineIndex::new(text);
        let parsed = scan(&index, ScanOptions { inlines: true });
        ctx.check_cancelled()?;
        let spans = protected::detect(&index, &parsed, &doc_hash);
        let counts = protected::summarize(&spans);
        let summary = summary::protected(&spans, &counts);
        Ok(KernelOutput::new()
            .artifact(names::PROTECTED_SPANS, &spans)
            .artifact(names::PROTECTED_SUMMARY, &counts)
            .summary(summary))
    }
}

koas_kernel_api::export_kernel!(MdProtectedRegions);
