//! The whole of Stage 1 in-process: what the four kernels compute, without
//! the plugin boundary. Used by tests and benchmarks, and by tools that
//! want the Stage 1 artifacts without running the host.

use crate::chunk::{self, BlockLines, SectionStart};
use crate::error::MdError;
use crate::inventory;
use crate::line_index::LineIndex;
use crate::model::{ChunkConfig, ChunkPlan, FileStats, ProtectedSpans};
use crate::protected;
use crate::scan::{scan, ScanOptions};
use crate::structure::{self, Structure};
use koas_kernel_api::hash::sha256;

/// Every Stage 1 artifact of one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage1 {
    /// `doc_hash`.
    pub doc_hash: String,
    /// `file_stats`.
    pub stats: FileStats,
    /// `heading_tree`, `section_index`, `anchor_map`.
    pub structure: Structure,
    /// `protected_spans`.
    pub spans: ProtectedSpans,
    /// `chunks`.
    pub chunks: ChunkPlan,
}

/// Runs the four Stage 1 computations on `text` as the kernels do (each
/// parses the document on its own, as separate plugins must).
pub fn run(path: &str, text: &str, config: ChunkConfig) -> Result<Stage1, MdError> {
    inventory::check_text(path, text)?;
    let doc_hash = sha256(text.as_bytes());
    let index = LineIndex::new(text);

    let inv_scan = scan(&index, ScanOptions::default());
    let stats = inventory::file_stats(path, &index, &inv_scan, Some(&doc_hash));
    drop(inv_scan);

    let structure_scan = scan(&index, ScanOptions::default());
    let structure = structure::build(&index, &structure_scan, &doc_hash);
    drop(structure_scan);

    let spans_scan = scan(&index, ScanOptions { inlines: true });
    let spans = protected::detect(&index, &spans_scan, &doc_hash);
    drop(spans_scan);

    let sections: Vec<SectionStart> = structure
        .sections
        .sections
        .iter()
        .map(SectionStart::from)
        .collect();
    let blocks: Vec<BlockLines> = spans.blocks.iter().map(BlockLines::from).collect();
    let chunks = chunk::plan(&index, &sections, &blocks, config, &doc_hash);
    Ok(Stage1 {
        doc_hash,
        stats,
        structure,
        spans,
        chunks,
    })
}
