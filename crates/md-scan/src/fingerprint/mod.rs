//! `md_fingerprint_chunk`: the structural features of each chunk (spec §7,
//! "v7.2 Content Recipes") and whether the chunk `triggers_recipe` under
//! the v7.3 thresholds.

mod features;
mod triggers;

pub use features::{ChunkFeatures, FeatureCounter};
pub use triggers::triggers;

use crate::config::FingerprintConfig;
use crate::document::Document;
use crate::tables::Table;
use crate::ScanError;
use serde::{Deserialize, Serialize};

/// The kernel name.
pub const KERNEL: &str = "md_fingerprint_chunk";

/// The fingerprint of one chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkFingerprint {
    /// The chunk's ID.
    pub chunk_id: String,
    /// Its section.
    pub section_id: String,
    /// First line it owns.
    pub line_start: u32,
    /// Last line it owns.
    pub line_end: u32,
    /// The features.
    #[serde(flatten)]
    pub features: ChunkFeatures,
    /// `true` when any trigger fired.
    pub triggers_recipe: bool,
    /// The triggers that fired, by name.
    pub triggers: Vec<String>,
}

/// The `chunk_fingerprints` artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkFingerprints {
    /// `sha256:` of the document.
    pub doc_hash: String,
    /// Number of chunks.
    pub chunk_count: usize,
    /// Number of chunks that trigger a recipe.
    pub triggered_count: usize,
    /// The thresholds used.
    pub config: FingerprintConfig,
    /// One fingerprint per chunk, in chunk order.
    pub fingerprints: Vec<ChunkFingerprint>,
}

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
