//! Stage 1 in-process: the artifacts `md_structure`, `md_protected_regions`
//! and `md_chunk` would produce, computed with the same `koas-md` calls
//! those kernels make. `koas check` uses this so that it needs no plugin,
//! no pipeline and no workspace.

use crate::document::Stage1View;
use koas_kernel_api::hash::sha256;
use koas_md::chunk;
use koas_md::scan::{scan_observed, ScanOptions};
use koas_md::{protected, structure, LineIndex};
use koas_review_schema::stage1::{AnchorMap, ChunkConfig, ChunkPlan, ProtectedSpans, SectionIndex};
use pulldown_cmark::Event;
use std::ops::Range;

/// The Stage 1 artifacts of one document.
#[derive(Debug, Clone)]
pub struct Stage1Artifacts {
    /// `doc_hash`: `sha256:` of the exact bytes.
    pub doc_hash: String,
    /// `section_index`, from the `md_structure` computation.
    pub sections: SectionIndex,
    /// `anchor_map`, from the `md_structure` computation.
    pub anchors: AnchorMap,
    /// `protected_spans`, from the `md_protected_regions` computation.
    pub protected: ProtectedSpans,
    /// `chunks`, with the default chunk config.
    pub chunks: ChunkPlan,
}

impl Stage1Artifacts {
    /// Runs Stage 1 on `text` with the default configs.
    pub fn compute(text: &str) -> Self {
        Self::compute_with(text, ChunkConfig::default())
    }

    /// Runs Stage 1 on `text` with a chunk config.
    pub fn compute_with(text: &str, chunk_config: ChunkConfig) -> Self {
        Self::compute_observed(text, chunk_config, |_, _, _| {})
    }

    /// [`Self::compute_with`], giving `observe` every parser event of the
    /// body (with the text's line index and the event's range in the
    /// text), so that a caller reads what else it needs from Stage 1's
    /// own parse.
    pub fn compute_observed<F>(text: &str, chunk_config: ChunkConfig, mut observe: F) -> Self
    where
        F: FnMut(&LineIndex<'_>, &Event<'_>, Range<usize>) + Send,
    {
        let index = LineIndex::new(text);
        // The hash and the parse, then the structure and the protected
        // regions, are independent: each pair on both cores.
        let (doc_hash, parsed) = rayon::join(
            || sha256(text.as_bytes()),
            || {
                scan_observed(&index, ScanOptions { inlines: true }, |event, range| {
                    observe(&index, event, range)
                })
            },
        );
        let (built, spans) = rayon::join(
            || structure::build(&index, &parsed, &doc_hash),
            || protected::detect(&index, &parsed, &doc_hash),
        );
        let chunks = chunk::plan(
            &index,
            &built.sections.sections,
            &spans.blocks,
            chunk_config,
            &doc_hash,
        );
        Stage1Artifacts {
            doc_hash,
            sections: built.sections,
            anchors: built.anchors,
            protected: spans,
            chunks,
        }
    }

    /// A view of these artifacts over `text` (the document they were
    /// computed from).
    pub fn view<'a>(&'a self, text: &'a str) -> Stage1View<'a> {
        Stage1View {
            text,
            sections: &self.sections,
            anchors: &self.anchors,
            protected: &self.protected,
            chunks: Some(&self.chunks),
        }
    }
}
