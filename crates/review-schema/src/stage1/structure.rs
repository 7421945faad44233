//! `heading_tree`, `section_index` and `anchor_map` — what `md_structure`
//! reports.

use super::LineNo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An inclusive range of 1-based lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRange {
    /// First line of the range.
    pub line_start: LineNo,
    /// Last line of the range (inclusive).
    pub line_end: LineNo,
}

/// The `heading_tree` artifact (`stage1/md_structure.json`).
///
/// Section IDs are given by position in the tree: the top-level headings
/// (whatever their level) are `S1`, `S2`, …; the children of `S2` are
/// `S2.1`, `S2.2`, …. A heading's parent is the nearest previous heading of
/// a lower level, so a document that starts at H2 has its H2s at the top,
/// and an H4 directly under an H2 is that H2's child.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadingTree {
    /// `sha256:` hash of the document the tree was built from.
    pub doc_hash: String,
    /// Number of lines of the document.
    pub line_count: LineNo,
    /// Number of headings in the tree.
    pub heading_count: u32,
    /// Deepest nesting in the tree (1 when every heading is top-level, 0
    /// when there is no heading).
    pub max_depth: u32,
    /// Highest heading level used (1–6), 0 when there is no heading.
    pub max_level: u8,
    /// Lines before the first heading, when there are any.
    pub preamble: Option<LineRange>,
    /// The top-level headings, in document order.
    pub roots: Vec<HeadingNode>,
}

/// One heading and the section it opens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadingNode {
    /// Stable section ID by position in the tree, e.g. `S2.3.1`.
    pub id: String,
    /// Heading level, 1–6.
    pub level: u8,
    /// The heading's plain text (inline markup removed, explicit numbering
    /// kept), e.g. `2.3 Methods`.
    pub title: String,
    /// GitHub-compatible anchor slug, unique in the document.
    pub anchor: String,
    /// ATX (`## Title`) or setext (underlined).
    pub style: HeadingStyle,
    /// First line of the heading (and of the section).
    pub line_start: LineNo,
    /// Last line of the heading itself (the underline for setext headings).
    pub heading_line_end: LineNo,
    /// Last line of the section's own content, before its first child
    /// heading (equal to `line_end` when it has no child).
    pub body_line_end: LineNo,
    /// Last line of the section, children included: the line before the
    /// next heading of the same or a lower level, or the last line.
    pub line_end: LineNo,
    /// Explicit numbering found at the start of the title, if any.
    pub numbering: Option<Numbering>,
    /// The sub-sections, in document order.
    pub children: Vec<HeadingNode>,
}

/// How a heading is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadingStyle {
    /// `#` to `######` prefix.
    Atx,
    /// Text underlined with `===` (level 1) or `---` (level 2).
    Setext,
}

/// Explicit numbering at the start of a heading, e.g. `2.3`, `2.3.`, `II.`,
/// `A.1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Numbering {
    /// The number without its trailing delimiter, e.g. `2.3`, `II`, `A.1`.
    pub label: String,
    /// The number as written, e.g. `2.3.`.
    pub raw: String,
    /// The scheme of the first part.
    pub kind: NumberingKind,
    /// The value of each part: `2.3` → `[2, 3]`, `II` → `[2]`, `A.1` →
    /// `[1, 1]` (letters count from A = 1).
    pub parts: Vec<u32>,
    /// The title without the number and its separator, e.g. `Methods`.
    pub rest: String,
}

/// The scheme of a heading number's first part (later parts are Arabic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NumberingKind {
    /// `1`, `2.3`.
    Arabic,
    /// `II`, `iv` (Roman numerals).
    Roman,
    /// `A`, `b` (a single letter).
    Letter,
}

/// The `section_index` artifact (`stage1/outline.json`): every section in
/// document order, flat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionIndex {
    /// `sha256:` hash of the document.
    pub doc_hash: String,
    /// Number of lines of the document.
    pub line_count: LineNo,
    /// Sections in document order.
    pub sections: Vec<SectionEntry>,
}

/// One section of the flat index. Same fields as [`HeadingNode`], with the
/// tree replaced by parent/children IDs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionEntry {
    /// Section ID, e.g. `S2.3`.
    pub id: String,
    /// Heading level, 1–6.
    pub level: u8,
    /// Depth in the tree: 1 for top-level sections.
    pub depth: u32,
    /// The parent section's ID; `None` for top-level sections.
    pub parent: Option<String>,
    /// The IDs of the sub-sections.
    pub children: Vec<String>,
    /// Plain heading text.
    pub title: String,
    /// GitHub-compatible anchor slug, unique in the document (empty for a
    /// section made by [`SectionEntry::from_lines`]).
    pub anchor: String,
    /// ATX or setext.
    pub style: HeadingStyle,
    /// First line (the heading).
    pub line_start: LineNo,
    /// Last line of the heading itself.
    pub heading_line_end: LineNo,
    /// Last line of the section's own content.
    pub body_line_end: LineNo,
    /// Last line of the section, children included.
    pub line_end: LineNo,
    /// Explicit numbering, if any.
    pub numbering: Option<Numbering>,
}

impl SectionEntry {
    /// A section known only by its ID, title and lines (a hand-written
    /// outline, a test): a one-line ATX heading at `line_start`, its level
    /// and depth from the ID (`S2.3` is at depth 2), no anchor, no
    /// children recorded.
    pub fn from_lines(id: &str, title: &str, line_start: LineNo, line_end: LineNo) -> Self {
        let depth = u32::try_from(id.matches('.').count() + 1).unwrap_or(u32::MAX);
        SectionEntry {
            id: id.to_owned(),
            level: u8::try_from(depth.min(6)).unwrap_or(6),
            depth,
            parent: id.rsplit_once('.').map(|(parent, _)| parent.to_owned()),
            children: Vec::new(),
            title: title.to_owned(),
            anchor: String::new(),
            style: HeadingStyle::Atx,
            line_start,
            heading_line_end: line_start,
            body_line_end: line_end,
            line_end,
            numbering: None,
        }
    }
}

/// The `anchor_map` artifact (`stage1/anchors.json`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AnchorMap {
    /// Anchor slug → section ID.
    pub anchors: BTreeMap<String, String>,
    /// Slugs that occurred more than once, with the anchors given to each
    /// occurrence in order (`x`, `x-1`, `x-2`, …).
    pub duplicates: Vec<DuplicateAnchor>,
}

/// A heading slug shared by several headings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DuplicateAnchor {
    /// The slug before de-duplication.
    pub base: String,
    /// The anchors given, in document order (the first is `base`).
    pub anchors: Vec<String>,
}
