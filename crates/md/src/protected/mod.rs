//! Protected regions: the block and inline spans that edits must not touch.
//!
//! The policy is conservative: when in doubt, protect. Blocks come from the
//! parser (code, tables, HTML blocks, link reference definitions, `$$` math
//! inside a paragraph), from the hand-written front matter detector, and
//! from two line scanners for what the parser does not report (`\[ … \]`
//! and unclosed `$$` math, repeated link reference definitions). Inline
//! spans come from the parser (code spans, math, autolinks) and from a
//! bare-URL finder over the plain text.

mod line_flags;
pub mod link_defs;
pub mod math;
pub mod table_like;
pub mod urls;

pub use line_flags::{strip_container_prefix, LineFlags};

use crate::line_index::{ColumnCursor, LineIndex};
use crate::scan::{RawBlockKind, RawInlineKind, Scan};
use koas_review_schema::stage1::{
    BlockKind, FrontMatterFormat, InlineKind, InlineSpan, LineNo, ProtectedSpan, ProtectedSpans,
    ProtectedSummary,
};
use std::ops::Range;

/// Finds the protected spans of an indexed document scanned with
/// [`crate::scan::ScanOptions::inlines`].
pub fn detect(index: &LineIndex<'_>, scan: &Scan, doc_hash: &str) -> ProtectedSpans {
    let n = index.line_count();
    let mut found = Found {
        index,
        blocks: Vec::new(),
        owned: LineFlags::new(n),
    };
    let inline_math_ranges = parsed_blocks(&mut found, scan);
    unparsed_blocks(&mut found, scan);
    let Found { blocks, owned, .. } = found;
    let blocks = drop_nested(blocks);
    let inlines = inline_spans(index, scan, &owned, inline_math_ranges);
    ProtectedSpans {
        doc_hash: doc_hash.to_string(),
        line_count: n,
        blocks,
        inlines,
    }
}

/// The protected blocks found so far, and the lines they own.
struct Found<'a, 'i> {
    index: &'a LineIndex<'i>,
    blocks: Vec<ProtectedSpan>,
    owned: LineFlags,
}

impl Found<'_, '_> {
    /// Adds a block of `kind` over `lines` (first, last) and `bytes`.
    fn push(
        &mut self,
        kind: BlockKind,
        lines: (LineNo, LineNo),
        bytes: Range<usize>,
        info: Option<String>,
    ) {
        self.owned.set_range(lines.0, lines.1);
        self.blocks.push(ProtectedSpan {
            kind,
            line_start: lines.0,
            line_end: lines.1,
            byte_start: bytes.start as u64,
            byte_end: bytes.end as u64,
            content_hash: self.index.line_hash(lines.0, lines.1),
            info,
        });
    }
}

/// The blocks the parser found: front matter, code, tables, HTML, link
/// definitions, display math on lines of its own. Returns the display
/// math that shares its lines with text (an inline span).
fn parsed_blocks(found: &mut Found<'_, '_>, scan: &Scan) -> Vec<Range<usize>> {
    let index = found.index;
    if let Some(fm) = scan.front_matter {
        let kind = match fm.format {
            FrontMatterFormat::Yaml => BlockKind::YamlFrontMatter,
            FrontMatterFormat::Toml => BlockKind::TomlFrontMatter,
        };
        let bytes = index.line_start(1)..index.line_content_end(fm.line_end);
        found.push(kind, (1, fm.line_end), bytes, None);
    }
    for b in &scan.blocks {
        let (kind, info) = match &b.kind {
            RawBlockKind::FencedCode(info) => (
                BlockKind::CodeFence,
                (!info.is_empty()).then(|| info.clone()),
            ),
            RawBlockKind::IndentedCode => (BlockKind::IndentedCode, None),
            RawBlockKind::Table => (BlockKind::Table, None),
            RawBlockKind::HtmlBlock => (BlockKind::HtmlBlock, None),
            RawBlockKind::LinkRefDef(label) => (BlockKind::LinkRefDef, Some(label.clone())),
        };
        let lines = line_range(index, &b.range);
        found.push(kind, lines, b.range.clone(), info);
    }
    let mut inline_math_ranges: Vec<Range<usize>> = Vec::new();
    for i in scan
        .inlines
        .iter()
        .filter(|i| i.kind == RawInlineKind::DisplayMath)
    {
        if occupies_whole_lines(index, &i.range) {
            let lines = line_range(index, &i.range);
            found.push(
                BlockKind::MathBlock,
                lines,
                i.range.clone(),
                Some("$$".into()),
            );
        } else {
            inline_math_ranges.push(i.range.clone());
        }
    }
    inline_math_ranges
}

/// The blocks the parser does not know, found on the lines no block owns
/// yet: math blocks, malformed tables, link definitions.
fn unparsed_blocks(found: &mut Found<'_, '_>, scan: &Scan) {
    let index = found.index;
    let mut headings = LineFlags::new(index.line_count());
    for h in &scan.headings {
        let (s, e) = line_range(index, &h.range);
        headings.set_range(s, e);
    }
    for m in math::find(index, &found.owned, &headings) {
        let bytes = index.line_start(m.line_start)..index.line_content_end(m.line_end);
        let lines = (m.line_start, m.line_end);
        found.push(BlockKind::MathBlock, lines, bytes, Some(m.delimiter.into()));
    }
    let paragraphs: Vec<(LineNo, LineNo)> = scan
        .paragraphs
        .iter()
        .map(|p| line_range(index, p))
        .collect();
    for (s, e) in table_like::find(index, &paragraphs, &found.owned) {
        let bytes = index.line_start(s)..index.line_content_end(e);
        let info = Some("malformed".to_string());
        found.push(BlockKind::Table, (s, e), bytes, info);
    }
    let mut def_owned = found.owned.clone();
    for &(s, e) in &paragraphs {
        def_owned.set_range(s, e);
    }
    for h in &scan.headings {
        let (s, e) = line_range(index, &h.range);
        def_owned.set_range(s, e);
    }
    for d in link_defs::find(index, &def_owned) {
        let bytes = index.line_start(d.line)..index.line_content_end(d.line);
        found.push(
            BlockKind::LinkRefDef,
            (d.line, d.line),
            bytes,
            Some(d.label),
        );
    }
}

/// First and last line of a byte range.
fn line_range(index: &LineIndex<'_>, range: &Range<usize>) -> (LineNo, LineNo) {
    (
        index.line_of(range.start),
        index.last_line_of(range.start, range.end),
    )
}

/// `true` when only block-quote markers and spaces precede the range on its
/// first line and only spaces follow it on its last line.
fn occupies_whole_lines(index: &LineIndex<'_>, range: &Range<usize>) -> bool {
    let text = index.text();
    let (first, last) = line_range(index, range);
    let before = text.get(index.line_start(first)..range.start).unwrap_or("");
    let content_end = index.line_content_end(last);
    let after = text
        .get(range.end.min(content_end)..content_end)
        .unwrap_or("");
    strip_container_prefix(before).is_empty() && after.trim().is_empty()
}

/// Sorts blocks by position and drops those inside another block.
fn drop_nested(mut blocks: Vec<ProtectedSpan>) -> Vec<ProtectedSpan> {
    blocks.sort_by(|a, b| {
        (
            a.line_start,
            std::cmp::Reverse(a.line_end),
            a.byte_start,
            a.kind,
        )
            .cmp(&(
                b.line_start,
                std::cmp::Reverse(b.line_end),
                b.byte_start,
                b.kind,
            ))
    });
    let mut out: Vec<ProtectedSpan> = Vec::with_capacity(blocks.len());
    let mut reach: LineNo = 0;
    for b in blocks {
        let inside = out.last().is_some_and(|_| b.line_end <= reach);
        if inside {
            continue;
        }
        reach = reach.max(b.line_end);
        out.push(b);
    }
    out
}

fn inline_spans(
    index: &LineIndex<'_>,
    scan: &Scan,
    owned: &LineFlags,
    inline_math: Vec<Range<usize>>,
) -> Vec<InlineSpan> {
    let mut raw: Vec<(InlineKind, Range<usize>)> = scan
        .inlines
        .iter()
        .filter_map(|i| {
            let kind = match i.kind {
                RawInlineKind::Code => InlineKind::InlineCode,
                RawInlineKind::InlineMath => InlineKind::InlineMath,
                RawInlineKind::Autolink => InlineKind::Autolink,
                RawInlineKind::DisplayMath => return None,
            };
            Some((kind, i.range.clone()))
        })
        .collect();
    raw.extend(inline_math.into_iter().map(|r| (InlineKind::InlineMath, r)));
    raw.extend(
        urls::find(index.text(), &scan.text_runs)
            .into_iter()
            .map(|r| (InlineKind::BareUrl, r)),
    );
    raw.retain(|(_, r)| r.end > r.start && !owned.get(index.line_of(r.start)));
    raw.sort_by_key(|(k, r)| (r.start, r.end, *k));
    let mut cursor = ColumnCursor::new();
    raw.into_iter()
        .map(|(kind, r)| {
            let (line, column) = cursor.locate(index, r.start);
            let (end_line, end_column) = cursor.locate(index, r.end - 1);
            InlineSpan {
                kind,
                line,
                column,
                end_line,
                end_column,
                byte_start: r.start as u64,
                byte_end: r.end as u64,
            }
        })
        .collect()
}

/// Counts spans per kind for the `protected_summary` artifact.
pub fn summarize(spans: &ProtectedSpans) -> ProtectedSummary {
    let mut summary = ProtectedSummary {
        doc_hash: spans.doc_hash.clone(),
        block_count: u32::try_from(spans.blocks.len()).unwrap_or(u32::MAX),
        inline_count: u32::try_from(spans.inlines.len()).unwrap_or(u32::MAX),
        ..ProtectedSummary::default()
    };
    for b in &spans.blocks {
        let e = summary
            .by_kind
            .entry(b.kind.as_str().to_string())
            .or_default();
        e.count += 1;
        e.lines += b.line_end - b.line_start + 1;
    }
    for i in &spans.inlines {
        let e = summary
            .by_kind
            .entry(i.kind.as_str().to_string())
            .or_default();
        e.count += 1;
        e.lines += i.end_line - i.line + 1;
    }
    let mut covered: LineNo = 0;
    let mut reach: LineNo = 0;
    for b in &spans.blocks {
        let start = b.line_start.max(reach + 1);
        if b.line_end >= start {
            covered += b.line_end - start + 1;
            reach = b.line_end;
        }
    }
    summary.protected_lines = covered;
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{scan, ScanOptions};
    use koas_kernel_api::hash::sha256;
    use koas_review_schema::stage1::KindCount;

    fn spans(text: &str) -> ProtectedSpans {
        let idx = LineIndex::new(text);
        let s = scan(&idx, ScanOptions { inlines: true });
        detect(&idx, &s, "sha256:x")
    }

    fn kinds(p: &ProtectedSpans) -> Vec<(BlockKind, LineNo, LineNo)> {
        p.blocks
            .iter()
            .map(|b| (b.kind, b.line_start, b.line_end))
            .collect()
    }

    #[test]
    fn every_block_kind() {
        let text = "\
---
title: T
---
# Title

```rust title=\"x\"
fn main() {}
```

~~~~
tilde
~~~~

    indented code

$$
E = mc^2
$$

\\[
a^2 + b^2
\\]

| a | b |
|---|---|
| 1 | 2 |

<div>
html
</div>

[ref]: https://example.org
";
        let p = spans(text);
        assert_eq!(
            kinds(&p),
            vec![
                (BlockKind::YamlFrontMatter, 1, 3),
                (BlockKind::CodeFence, 6, 8),
                (BlockKind::CodeFence, 10, 12),
                (BlockKind::IndentedCode, 14, 14),
                (BlockKind::MathBlock, 16, 18),
                (BlockKind::MathBlock, 20, 22),
                (BlockKind::Table, 24, 26),
                (BlockKind::HtmlBlock, 28, 30),
                (BlockKind::LinkRefDef, 32, 32),
            ]
        );
        assert_eq!(p.blocks[1].info.as_deref(), Some("rust title=\"x\""));
        assert_eq!(p.blocks[2].info, None);
        assert_eq!(p.blocks[8].info.as_deref(), Some("ref"));
        let idx = LineIndex::new(text);
        assert_eq!(p.blocks[1].content_hash, idx.line_hash(6, 8));
        assert_eq!(p.blocks[0].content_hash, sha256(b"---\ntitle: T\n---"));
    }

    #[test]
    fn toml_front_matter_and_long_fences() {
        let p = spans("+++\na = 1\n+++\n\n`````md\n````\ninner\n````\n`````\n");
        assert_eq!(
            kinds(&p),
            vec![
                (BlockKind::TomlFrontMatter, 1, 3),
                (BlockKind::CodeFence, 5, 9)
            ]
        );
        assert_eq!(p.blocks[1].info.as_deref(), Some("md"));
    }

    #[test]
    fn unclosed_fence_runs_to_the_end() {
        let p = spans("# H\n\ntext\n\n```\ncode\n\n# not heading\n\nmore\n");
        assert_eq!(kinds(&p), vec![(BlockKind::CodeFence, 5, 10)]);
    }

    #[test]
    fn malformed_tables_are_protected_as_tables() {
        let p = spans("Intro.\n\n| a | b | c |\n|---|---|\n| 1 | 2 | 3 |\n\nAfter.\n");
        assert_eq!(kinds(&p), vec![(BlockKind::Table, 3, 5)]);
        assert_eq!(p.blocks[0].info.as_deref(), Some("malformed"));
    }

    #[test]
    fn repeated_link_definitions_are_protected_too() {
        let p = spans("[a]: https://one.org\n[a]: https://two.org\n\ntext [a]\n");
        assert_eq!(
            kinds(&p),
            vec![(BlockKind::LinkRefDef, 1, 1), (BlockKind::LinkRefDef, 2, 2)]
        );
    }

    #[test]
    fn inline_spans_with_line_and_char_columns() {
        let text =
            "Été: `code` et $x^2$ via <https://a.org> ou https://b.org/x.\nSuite $$y$$ fin.\n";
        let p = spans(text);
        let got: Vec<(InlineKind, LineNo, u32, LineNo, u32, &str)> = p
            .inlines
            .iter()
            .map(|i| {
                (
                    i.kind,
                    i.line,
                    i.column,
                    i.end_line,
                    i.end_column,
                    &text[i.byte_start as usize..i.byte_end as usize],
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (InlineKind::InlineCode, 1, 6, 1, 11, "`code`"),
                (InlineKind::InlineMath, 1, 16, 1, 20, "$x^2$"),
                (InlineKind::Autolink, 1, 26, 1, 40, "<https://a.org>"),
                (InlineKind::BareUrl, 1, 45, 1, 59, "https://b.org/x"),
                (InlineKind::InlineMath, 2, 7, 2, 11, "$$y$$"),
            ]
        );
        assert!(p.blocks.is_empty());
    }

    #[test]
    fn inline_spans_inside_blocks_are_not_listed() {
        let p = spans("| `a` | https://x.org |\n|---|---|\n| 1 | 2 |\n");
        assert_eq!(kinds(&p), vec![(BlockKind::Table, 1, 3)]);
        assert!(p.inlines.is_empty());
    }

    #[test]
    fn summary_counts_kinds_and_lines() {
        let p = spans("```\na\n```\n\n```\nb\n```\n\nuse `x`\n");
        let s = summarize(&p);
        assert_eq!(s.block_count, 2);
        assert_eq!(s.inline_count, 1);
        assert_eq!(s.protected_lines, 6);
        assert_eq!(s.by_kind["code_fence"], KindCount { count: 2, lines: 6 });
        assert_eq!(s.by_kind["inline_code"], KindCount { count: 1, lines: 1 });
    }
}
