//! # md_fingerprint_chunk — Stage 2 reviewer kernel
//!
//! The structural fingerprint of every chunk: table rows and count, math,
//! emoji code points, digit density, bullets, blockquote lines, safety
//! keyword hits, code fences and content tokens; and `triggers_recipe`
//! when a threshold is reached, so that `md_edit_plan` knows which chunks
//! to mask before an LLM call.
//!
//! Inputs: `doc_raw`, `chunks`, `section_index`, `protected_spans`.
//! Output: `chunk_fingerprints` (`stage2/md_fingerprint_chunk.json`).
//! Config: the keys of [`koas_md_scan::config::FingerprintConfig`].

use koas_kernel_api::prelude::*;
use koas_md_scan::config::FingerprintConfig;
use koas_md_scan::{chunk_fingerprints, Stage1View, FINGERPRINT_KERNEL};
use koas_review_schema::names;
use koas_review_schema::stage1::{AnchorMap, ChunkPlan, ProtectedSpans, SectionIndex};

#[derive(Debug, Default, Clone, Copy)]
pub struct MdFingerprintChunk;

impl Kernel for MdFingerprintChunk {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new(FINGERPRINT_KERNEL, "0.1.0")
            .stage("S2")
            .description("Structural fingerprint per chunk (tables, math, emoji, digits, bullets, quotes, safety words, fences) and v7.3 recipe triggers")
            .input(names::DOC_RAW)
            .input(names::CHUNKS)
            .input(names::SECTION_INDEX)
            .input(names::PROTECTED_SPANS)
            .output_file(names::CHUNK_FINGERPRINTS, "stage2/md_fingerprint_chunk.json")
            .default_config(serde_json::to_value(FingerprintConfig::default()).unwrap_or_default())
    }

    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let config: FingerprintConfig = config.parse()?;
        let text = inputs.source_text(names::DOC_RAW)?;
        let chunks: ChunkPlan = inputs.parse(names::CHUNKS)?;
        let sections: SectionIndex = inputs.parse(names::SECTION_INDEX)?;
        let protected: ProtectedSpans = inputs.parse(names::PROTECTED_SPANS)?;
        ctx.check_cancelled()?;
        let anchors = AnchorMap::default();
        let view = Stage1View {
            text,
            sections: &sections,
            anchors: &anchors,
            protected: &protected,
            chunks: Some(&chunks),
        };
        let prints = chunk_fingerprints(view, &config)?;
        let summary = format!(
            "{} chunks fingerprinted, {} trigger a content recipe",
            prints.chunk_count, prints.triggered_count
        );
        Ok(KernelOutput::new()
            .summary(summary)
            .artifact(names::CHUNK_FINGERPRINTS, &prints))
    }
}

koas_kernel_api::export_kernel!(MdFingerprintChunk);
