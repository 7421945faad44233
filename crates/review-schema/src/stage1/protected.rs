//! `protected_spans` — the spans `md_protected_regions` marks as immutable.

use super::LineNo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `protected_spans` artifact (`stage1/protected_spans.json`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProtectedSpans {
    /// `sha256:` hash of the document.
    pub doc_hash: String,
    /// Number of lines of the document.
    pub line_count: LineNo,
    /// Block spans (whole lines), sorted by `line_start`.
    pub blocks: Vec<ProtectedSpan>,
    /// Inline spans outside block spans, sorted by `byte_start`.
    pub inlines: Vec<InlineSpan>,
}

impl ProtectedSpans {
    /// The first block span that contains `line`, if any.
    pub fn block_at_line(&self, line: LineNo) -> Option<&ProtectedSpan> {
        self.blocks.iter().find(|b| b.contains_line(line))
    }

    /// `true` when any block span overlaps `line_start..=line_end`.
    pub fn overlaps_lines(&self, line_start: LineNo, line_end: LineNo) -> bool {
        self.blocks.iter().any(|b| b.overlaps(line_start, line_end))
    }

    /// The blocks `label` names, each with its first and last line and
    /// its label, in order and disjoint: a block inside one already taken
    /// (an HTML block holding a table), or inverted or out of order (a
    /// hand-made span), is left out, so that a range of lines can find
    /// its blocks by bisection.
    pub fn labelled_blocks<T>(
        &self,
        label: impl Fn(&ProtectedSpan) -> Option<T>,
    ) -> Vec<(LineNo, LineNo, T)> {
        let mut out: Vec<(LineNo, LineNo, T)> = Vec::new();
        for b in &self.blocks {
            let Some(name) = label(b) else {
                continue;
            };
            if b.line_end < b.line_start || out.last().is_some_and(|l| b.line_start <= l.1) {
                continue;
            }
            out.push((b.line_start, b.line_end, name));
        }
        out
    }

    /// `true` when any inline span overlaps the byte range `start..end`.
    pub fn overlaps_inline_bytes(&self, start: u64, end: u64) -> bool {
        self.inlines
            .iter()
            .any(|s| s.byte_start < end && start < s.byte_end)
    }
}

/// A block of whole lines that edits must not touch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedSpan {
    /// What the block is.
    pub kind: BlockKind,
    /// First line (1-based, inclusive).
    pub line_start: LineNo,
    /// Last line (1-based, inclusive).
    pub line_end: LineNo,
    /// Byte offset where the construct starts (may be inside `line_start`,
    /// e.g. after a `> ` prefix).
    pub byte_start: u64,
    /// Byte offset just after the construct (end-exclusive).
    pub byte_end: u64,
    /// Line hash of `line_start..=line_end` (see `docs/artifacts.md`).
    pub content_hash: String,
    /// The info string of a code fence (e.g. `rust ignore`), the label of a
    /// link reference definition, the delimiter of a math block (`$$` or
    /// `\[`); `None` otherwise.
    pub info: Option<String>,
}

impl ProtectedSpan {
    /// A block known only by its lines (a block a person names by hand, a
    /// test): byte offsets 0 and no content hash.
    pub fn from_lines(kind: BlockKind, line_start: LineNo, line_end: LineNo) -> Self {
        ProtectedSpan {
            kind,
            line_start,
            line_end,
            byte_start: 0,
            byte_end: 0,
            content_hash: String::new(),
            info: None,
        }
    }

    /// `true` when `line` is inside the span.
    pub fn contains_line(&self, line: LineNo) -> bool {
        self.line_start <= line && line <= self.line_end
    }

    /// `true` when the span shares a line with `start..=end`.
    pub fn overlaps(&self, start: LineNo, end: LineNo) -> bool {
        self.line_start <= end && start <= self.line_end
    }
}

/// The kinds of protected block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// A fenced code block (backticks or tildes, any length). An unclosed
    /// fence runs to the end of its container (the document at top level).
    CodeFence,
    /// An indented code block.
    IndentedCode,
    /// YAML front matter (`---` at line 1).
    YamlFrontMatter,
    /// TOML front matter (`+++` at line 1).
    TomlFrontMatter,
    /// Display math: `$$ … $$` or `\[ … \]` occupying whole lines.
    MathBlock,
    /// A GFM table.
    Table,
    /// A CommonMark HTML block (including HTML comments).
    HtmlBlock,
    /// A link reference definition `[label]: url "title"`.
    LinkRefDef,
}

impl BlockKind {
    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            BlockKind::CodeFence => "code_fence",
            BlockKind::IndentedCode => "indented_code",
            BlockKind::YamlFrontMatter => "yaml_front_matter",
            BlockKind::TomlFrontMatter => "toml_front_matter",
            BlockKind::MathBlock => "math_block",
            BlockKind::Table => "table",
            BlockKind::HtmlBlock => "html_block",
            BlockKind::LinkRefDef => "link_ref_def",
        }
    }
}

/// A protected span inside a line of prose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InlineSpan {
    /// What the span is.
    pub kind: InlineKind,
    /// Line of the first character (1-based).
    pub line: LineNo,
    /// Column of the first character: 1-based, counted in Unicode scalar
    /// values (chars) from the start of the line; the BOM is not counted.
    pub column: u32,
    /// Line of the last character.
    pub end_line: LineNo,
    /// Column of the last character (1-based, inclusive, in chars).
    pub end_column: u32,
    /// Absolute byte offset of the first byte.
    pub byte_start: u64,
    /// Absolute byte offset just after the last byte (end-exclusive).
    pub byte_end: u64,
}

/// The kinds of protected inline span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InlineKind {
    /// `` `code` `` (the backticks included).
    InlineCode,
    /// `$x$`, or `$$x$$` sharing its line with other text (delimiters
    /// included).
    InlineMath,
    /// `<https://…>` or `<user@host>` (angle brackets included).
    Autolink,
    /// A URL written without markup (`https://…`, `www.…`).
    BareUrl,
}

impl InlineKind {
    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            InlineKind::InlineCode => "inline_code",
            InlineKind::InlineMath => "inline_math",
            InlineKind::Autolink => "autolink",
            InlineKind::BareUrl => "bare_url",
        }
    }
}

/// The `protected_summary` artifact (`stage1/md_protected_regions.json`):
/// counts only, for people and reports.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProtectedSummary {
    /// `sha256:` hash of the document.
    pub doc_hash: String,
    /// Number of block spans.
    pub block_count: u32,
    /// Number of inline spans.
    pub inline_count: u32,
    /// Number of distinct lines inside block spans.
    pub protected_lines: LineNo,
    /// Per kind (block and inline kinds, by their JSON name): count and
    /// lines covered.
    pub by_kind: BTreeMap<String, KindCount>,
}

/// How many spans of one kind, and how many lines they cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KindCount {
    /// Number of spans.
    pub count: u32,
    /// Lines covered (a line shared by two spans of the kind counts once
    /// per span).
    pub lines: LineNo,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labelled_blocks_are_in_order_disjoint_and_named() {
        let spans = ProtectedSpans {
            doc_hash: String::new(),
            line_count: 40,
            blocks: vec![
                ProtectedSpan::from_lines(BlockKind::LinkRefDef, 1, 1),
                ProtectedSpan::from_lines(BlockKind::HtmlBlock, 3, 9),
                // Inside the HTML block.
                ProtectedSpan::from_lines(BlockKind::Table, 4, 6),
                // Inverted, then out of order.
                ProtectedSpan::from_lines(BlockKind::CodeFence, 20, 12),
                ProtectedSpan::from_lines(BlockKind::CodeFence, 11, 14),
                ProtectedSpan::from_lines(BlockKind::CodeFence, 8, 10),
            ],
            inlines: Vec::new(),
        };
        let named = spans.labelled_blocks(|b| (b.kind != BlockKind::LinkRefDef).then_some(b.kind));
        assert_eq!(
            named,
            [(3, 9, BlockKind::HtmlBlock), (11, 14, BlockKind::CodeFence)]
        );
    }
}
