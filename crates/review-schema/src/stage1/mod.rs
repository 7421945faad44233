//! The serde types of every Stage 1 artifact.
//!
//! These types are the contract between the Stage 1 kernels and the kernels
//! that read their outputs. They only ever grow: new fields are added with
//! `#[serde(default)]` so that older JSON still deserializes.
//!
//! Conventions shared by every artifact (see `docs/artifacts.md`):
//!
//! * Line numbers are 1-based and ranges are inclusive (`line_start..=line_end`).
//! * A line ends at `\n` (LF) or `\r\n` (CRLF); a lone `\r` is ordinary text.
//!   A final line without a line ending still counts; an empty document has
//!   0 lines.
//! * Byte offsets are absolute offsets into the exact document text (a UTF-8
//!   byte-order mark, when present, occupies bytes `0..3`), end-exclusive.
//! * Hashes are `sha256:` followed by 64 lowercase hex digits.

mod chunks;
mod inventory;
mod protected;
mod structure;

pub use chunks::{ChunkConfig, ChunkPlan, ReviewChunk, PREAMBLE_SECTION_ID, TOKEN_ESTIMATOR};
pub use inventory::{FileStats, FrontMatter, FrontMatterFormat, LineEndingStyle, LineEndings};
pub use protected::{
    BlockKind, InlineKind, InlineSpan, KindCount, ProtectedSpan, ProtectedSpans, ProtectedSummary,
};
pub use structure::{
    AnchorMap, DuplicateAnchor, HeadingNode, HeadingStyle, HeadingTree, LineRange, Numbering,
    NumberingKind, SectionEntry, SectionIndex,
};

/// A 1-based line number.
pub type LineNo = u32;
