//! The whole of Stage 1 in-process: what the four kernels compute, without
//! the plugin boundary. Used by tests and benchmarks, and by tools that
//! want the Stage 1 artifacts without running the host.

use crate::chunk;
use crate::error::MdError;
use crate::inventory;
use crate::line_index::LineIndex;
use crate::protected;
use crate::scan::{scan, ScanOptions};
use crate::structure::{self, Structure};
use koas_kernel_api::hash::sha256;
use koas_review_schema::stage1::{ChunkConfig, ChunkPlan, FileStats, ProtectedSpans, SectionIndex};

/// Every Stage 1 artifact of one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage1 {
    /// `doc_hash`: `sha256:` of the document's bytes.
    pub doc_hash: String,
    /// `file_stats`, the `md_inventory` artifact.
    pub stats: FileStats,
    /// `heading_tree`, `section_index` and `anchor_map`, the `md_structure`
    /// artifacts.
    pub structure: Structure,
    /// `protected_spans`, the `md_protected_regions` artifact.
    pub spans: ProtectedSpans,
    /// `chunks`, the `md_chunk` artifact, cut with the given config.
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

    let chunks = chunk::plan(
        &index,
        &structure.sections.sections,
        &spans.blocks,
        config,
        &doc_hash,
    );
    Ok(Stage1 {
        doc_hash,
        stats,
        structure,
        spans,
        chunks,
    })
}
/// The protected spans of `text`: `given` (Stage 1's artifact) when it
/// was computed on `text`, else computed again the way
/// `md_protected_regions` does. A review's current document may differ
/// from the original Stage 1 ran on, and ops must be checked against the
/// regions of the document they apply to. The flag says whether the spans
/// were recomputed.
pub fn protected_spans_for(text: &str, given: ProtectedSpans) -> (ProtectedSpans, bool) {
    let doc_hash = sha256(text);
    if koas_kernel_api::hash::same_hash(&given.doc_hash, &doc_hash) {
        return (given, false);
    }
    let index = LineIndex::new(text);
    let parsed = scan(&index, ScanOptions { inlines: true });
    (protected::detect(&index, &parsed, &doc_hash), true)
}

/// The section index of `text`: `given` when it was computed on `text`,
/// else computed again the way `md_structure` does (see
/// [`protected_spans_for`]).
pub fn section_index_for(text: &str, given: SectionIndex) -> SectionIndex {
    let doc_hash = sha256(text);
    if koas_kernel_api::hash::same_hash(&given.doc_hash, &doc_hash) {
        return given;
    }
    let index = LineIndex::new(text);
    let parsed = scan(&index, ScanOptions::default());
    structure::build(&index, &parsed, &doc_hash).sections
}
