//! # md_chunk — Stage 1 reviewer kernel
//!
//! Plans the chunks reviewers will see (`chunks`, `stage1/chunks.json`):
//! every heading starts a chunk, no chunk splits a protected block, large
//! sections are sub-split at paragraph boundaries, chunk IDs are
//! `{anchor}_{sha256[:8]}` made safe as file names.
//!
//! Config (`[config.md_chunk]`, defaults): `max_chunk_tokens = 1800`,
//! `overlap_tokens = 100`, `min_chunk_tokens = 50`; tokens are estimated
//! as chars / 4.
//!
//! The logic lives in [`koas_md`]; this crate is the plugin glue.

use koas_kernel_api::prelude::*;
use koas_md::chunk;
use koas_md::{summary, LineIndex};
use koas_review_schema::names;
use koas_review_schema::stage1::{ChunkConfig, ProtectedSpans, SectionIndex};

#[derive(Debug, Default, Clone, Copy)]
pub struct MdChunk;

impl Kernel for MdChunk {
    fn spec(&self) -> KernelSpec {
        let d = ChunkConfig::default();
        KernelSpec::new("md_chunk", "0.1.0")
            .stage("S1")
            .description("Structure-aligned chunk plan: chunks never cross a heading nor split a protected span")
            .input(names::DOC_RAW)
            .input(names::SECTION_INDEX)
            .input(names::PROTECTED_SPANS)
            .optional_input(names::DOC_HASH)
            .output_file(names::CHUNKS, "stage1/chunks.json")
            .default_config(serde_json::json!({
                "max_chunk_tokens": d.max_chunk_tokens,
                "overlap_tokens": d.overlap_tokens,
                "min_chunk_tokens": d.min_chunk_tokens,
            }))
    }

    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let config: ChunkConfig = config.parse()?;
        if config.max_chunk_tokens == 0 {
            return Err(KernelError::invalid_config(
                "max_chunk_tokens must be at least 1",
            ));
        }
        let (text, doc_hash) = koas_md::plugin::document(inputs)?;
        let sections: SectionIndex = inputs.parse(names::SECTION_INDEX)?;
        let blocks: ProtectedSpans = inputs.parse(names::PROTECTED_SPANS)?;
        for (name, hash) in [
            (names::SECTION_INDEX, &sections.doc_hash),
            (names::PROTECTED_SPANS, &blocks.doc_hash),
        ] {
            if *hash != doc_hash {
                return Err(KernelError::invalid_input(format!(
                    "`{name}` was computed for document {hash}, but doc_raw is {doc_hash}; re-run Stage 1 on one document"
                )));
            }
        }
        let index = LineIndex::new(text);
        if sections.line_count != index.line_count() {
            return Err(KernelError::invalid_input(format!(
                "`section_index` counts {} lines, doc_raw has {}",
                sections.line_count,
                index.line_count()
            )));
        }
        ctx.check_cancelled()?;
        let plan = chunk::plan(
            &index,
            &sections.sections,
            &blocks.blocks,
            config,
            &doc_hash,
        );
        let summary = summary::chunks(&plan);
        let mut out = KernelOutput::new();
        let oversized = plan.chunks.iter().filter(|c| c.oversized).count();
        if oversized > 0 {
            out = out.warning(format!(
                "{oversized} chunk(s) exceed max_chunk_tokens = {} because a protected block or an unbreakable paragraph is larger",
                config.max_chunk_tokens
            ));
        }
        Ok(out.artifact(names::CHUNKS, &plan).summary(summary))
    }
}

koas_kernel_api::export_kernel!(MdChunk);
