//! `chunks` — the chunk plan `md_chunk` produces.

use super::LineNo;
use serde::{Deserialize, Serialize};

/// The section ID given to the lines before the first heading.
pub const PREAMBLE_SECTION_ID: &str = "S0";

/// How token estimates are computed: Unicode scalar values divided by 4
/// (rounded down), a cheap estimate that needs no tokenizer.
pub const TOKEN_ESTIMATOR: &str = "chars/4";

/// Chunking parameters (`[config.md_chunk]`); the defaults size a chunk
/// for one LLM review call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChunkConfig {
    /// Budget of a chunk, in estimated tokens. Sections larger than this are
    /// sub-split at paragraph boundaries; a protected block larger than this
    /// stays whole (the chunk is then `oversized`).
    pub max_chunk_tokens: u32,
    /// Context repeated from the end of the previous chunk of the same
    /// section, at most this many estimated tokens.
    pub overlap_tokens: u32,
    /// A sub-split piece smaller than this is merged into its neighbour.
    pub min_chunk_tokens: u32,
}

impl Default for ChunkConfig {
    fn default() -> Self {
        ChunkConfig {
            max_chunk_tokens: 1800,
            overlap_tokens: 100,
            min_chunk_tokens: 50,
        }
    }
}

/// The `chunks` artifact (`stage1/chunks.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkPlan {
    /// `sha256:` hash of the document.
    pub doc_hash: String,
    /// Number of lines of the document.
    pub line_count: LineNo,
    /// The parameters used.
    pub config: ChunkConfig,
    /// How `token_estimate` is computed ([`TOKEN_ESTIMATOR`]).
    pub token_estimator: String,
    /// The chunks, in document order. Their `line_start..=line_end` ranges
    /// partition the document's lines.
    pub chunks: Vec<ReviewChunk>,
}

/// One chunk of the document, sent to a reviewer as a unit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewChunk {
    /// `{safe_anchor}_{first 8 hex digits of content_hash}`, safe as a file
    /// name; a later chunk with the same ID gets `_2`, `_3`, ….
    pub chunk_id: String,
    /// Position in the plan, from 0.
    pub index: u32,
    /// The section the chunk belongs to; [`PREAMBLE_SECTION_ID`] before the
    /// first heading.
    pub section_id: String,
    /// The section's anchor (empty for the preamble).
    pub anchor: String,
    /// First line the chunk owns.
    pub line_start: LineNo,
    /// Last line the chunk owns (inclusive).
    pub line_end: LineNo,
    /// When set, lines `overlap_line_start..line_start` are context
    /// repeated from the previous chunk (owned by it, not by this one).
    pub overlap_line_start: Option<LineNo>,
    /// Byte offset of the start of `line_start`.
    pub byte_start: u64,
    /// Byte offset of the end of `line_end`, line ending included.
    pub byte_end: u64,
    /// Estimated tokens of the owned lines.
    pub token_estimate: u32,
    /// Estimated tokens of the overlap lines (0 without overlap).
    pub overlap_token_estimate: u32,
    /// Line hash of `line_start..=line_end`.
    pub content_hash: String,
    /// `true` when the chunk exceeds `max_chunk_tokens` because a protected
    /// block or a paragraph without a break point could not be split.
    pub oversized: bool,
}
