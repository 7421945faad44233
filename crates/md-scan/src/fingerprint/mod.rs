//! `md_fingerprint_chunk`: the structural features of each chunk (tables,
//! math, emoji, block quotes, code fences…) and whether the chunk
//! `triggers_recipe`: whether it is complex enough that a small model is
//! likely to answer it with nothing, so its content should be simplified
//! before the LLM sees it.

mod features;
mod triggers;

pub use features::FeatureCounter;
use koas_review_schema::fingerprint::{ChunkFeatures, ChunkFingerprint, ChunkFingerprints};
pub use triggers::triggers;

use crate::config::FingerprintConfig;
use crate::document::Document;
use crate::tables::Table;
use crate::ScanError;

/// The kernel name; the plugin declares itself under it.
pub const KERNEL: &str = koas_project::FINGERPRINT_KERNEL;

/// Fingerprints every chunk of the document's chunk plan (none when the
/// document view has no chunk plan).
pub fn fingerprint_chunks(
    doc: &Document<'_>,
    tables: &[Table],
    config: &FingerprintConfig,
) -> Result<ChunkFingerprints, ScanError> {
    let counter = FeatureCounter::new(config)?;
    let chunks = doc
        .stage1
        .chunks
        .map(|p| p.chunks.as_slice())
        .unwrap_or(&[]);
    let fingerprints: Vec<ChunkFingerprint> = chunks
        .iter()
        .map(|c| {
            let features = counter.count(doc, tables, c.line_start, c.line_end, c.token_estimate);
            let fired = triggers(&features, config);
            ChunkFingerprint {
                chunk_id: c.chunk_id.clone(),
                section_id: c.section_id.clone(),
                line_start: c.line_start,
                line_end: c.line_end,
                features,
                triggers_recipe: !fired.is_empty(),
                triggers: fired.into_iter().map(str::to_string).collect(),
            }
        })
        .collect();
    Ok(ChunkFingerprints {
        doc_hash: doc
            .stage1
            .chunks
            .map(|p| p.doc_hash.clone())
            .unwrap_or_else(|| doc.stage1.protected.doc_hash.clone()),
        chunk_count: fingerprints.len(),
        triggered_count: fingerprints.iter().filter(|f| f.triggers_recipe).count(),
        config: config.clone(),
        fingerprints,
    })
}
