//! `file_stats` — what `md_inventory` reports about the input file.

use super::LineNo;
use serde::{Deserialize, Serialize};

/// The `file_stats` artifact (`stage1/md_inventory.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStats {
    /// The input file's path as the pipeline named it.
    pub path: String,
    /// `sha256:<hex>` of the exact bytes (BOM and line endings included).
    /// The same value as the `doc_hash` artifact.
    pub sha256: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Number of Unicode scalar values (the BOM excluded).
    pub chars: u64,
    /// Number of lines (see the module conventions; 0 for an empty file).
    pub lines: LineNo,
    /// `true` when the file starts with a UTF-8 byte-order mark.
    pub has_bom: bool,
    /// How many lines end in LF and in CRLF, and the overall style.
    pub line_endings: LineEndings,
    /// `true` when the last line ends with a line ending.
    pub final_newline: bool,
    /// The longest line, in bytes, line ending excluded.
    pub max_line_bytes: u64,
    /// The front matter block, when the document starts with one.
    pub front_matter: Option<FrontMatter>,
    /// Number of fenced code blocks (backtick or tilde fences).
    pub code_fences: u32,
    /// Number of indented code blocks.
    #[serde(default)]
    pub indented_code_blocks: u32,
    /// Number of GFM tables.
    pub tables: u32,
    /// Number of structural headings (ATX and setext, outside containers).
    #[serde(default)]
    pub headings: u32,
}

/// How the lines of a document end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineEndings {
    /// Lines ending in `\n` alone.
    pub lf: u64,
    /// Lines ending in `\r\n`.
    pub crlf: u64,
    /// The overall style.
    pub style: LineEndingStyle,
}

/// The overall line-ending style of a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineEndingStyle {
    /// Every line ending is `\n`.
    Lf,
    /// Every line ending is `\r\n`.
    Crlf,
    /// Some lines end in `\n`, others in `\r\n`.
    Mixed,
    /// No line ending at all (empty or single-line document).
    None,
}

/// A front matter block at the very start of the document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrontMatter {
    /// `yaml` (`---` … `---` or `...`) or `toml` (`+++` … `+++`).
    pub format: FrontMatterFormat,
    /// First line (always 1), the opening delimiter.
    pub line_start: LineNo,
    /// Last line, the closing delimiter.
    pub line_end: LineNo,
    /// Hash of the block's lines (see `docs/artifacts.md`, "line hash").
    pub content_hash: String,
}

/// The syntax of a front matter block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrontMatterFormat {
    /// Delimited by `---`; closed by `---` or `...`.
    Yaml,
    /// Delimited by `+++`.
    Toml,
}
