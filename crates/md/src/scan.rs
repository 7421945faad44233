//! One pass of the CommonMark/GFM parser (pulldown-cmark) over a document,
//! collecting the constructs the Stage 1 kernels need, with absolute byte
//! offsets.
//!
//! Front matter is detected by hand ([`crate::front_matter`]) and the parser
//! only sees the Markdown body after it, so nothing inside the front matter
//! can become a heading. A BOM is skipped the same way.

use crate::front_matter::{self, FrontMatterBlock};
use crate::line_index::LineIndex;
use pulldown_cmark::{CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};
use std::ops::Range;

/// The parser options used everywhere: GFM tables, footnotes,
/// strikethrough, task lists, alerts and math; no heading attributes, no
/// smart punctuation, no metadata blocks (front matter is detected by hand).
pub fn parser_options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_MATH
        | Options::ENABLE_GFM
}

/// What to collect besides headings and blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScanOptions {
    /// Collect inline code, math, autolinks, text runs and paragraphs
    /// (needed by protected-region detection only).
    pub inlines: bool,
}

/// A heading as the parser reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawHeading {
    /// Level 1–6: the number of `#`, or 1 for `===` and 2 for `---` setext
    /// underlines.
    pub level: u8,
    /// Byte range of the whole heading (both lines of a setext heading).
    pub range: Range<usize>,
    /// Plain text: text, code and math content; images dropped; breaks as
    /// one space; trimmed.
    pub title: String,
    /// `true` when the heading is inside a block quote, list item or
    /// footnote definition.
    pub nested: bool,
    /// `true` for a setext (underlined) heading.
    pub setext: bool,
}

/// The block constructs the parser reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawBlockKind {
    /// Fenced code with its info string (trimmed).
    FencedCode(String),
    /// Code indented by four spaces or a tab (no info string).
    IndentedCode,
    /// GFM pipe table.
    Table,
    /// HTML block (CommonMark's block-level HTML, not inline tags).
    HtmlBlock,
    /// Link reference definition with its label.
    LinkRefDef(String),
}

/// A block construct and its byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawBlock {
    /// Which construct it is.
    pub kind: RawBlockKind,
    /// Its byte range, as offsets into the whole text (counted from its
    /// first byte, before any BOM or front matter).
    pub range: Range<usize>,
}

/// The inline constructs the parser reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawInlineKind {
    /// Code span (backticks).
    Code,
    /// Inline math, `$…$`.
    InlineMath,
    /// Display math, `$$…$$`.
    DisplayMath,
    /// Autolink, `<url>` or `<email>` (bare URLs are not autolinks).
    Autolink,
}

/// An inline construct and its byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawInline {
    /// Which construct it is.
    pub kind: RawInlineKind,
    /// Its byte range (delimiters included).
    pub range: Range<usize>,
}

/// Everything one parse collected; all ranges are byte ranges in the
/// whole text.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// The front matter block, if any.
    pub front_matter: Option<FrontMatterBlock>,
    /// Every heading (nested ones flagged), in document order.
    pub headings: Vec<RawHeading>,
    /// Code blocks, tables, HTML blocks and link reference definitions, in
    /// document order (reference definitions last).
    pub blocks: Vec<RawBlock>,
    /// Inline constructs (with [`ScanOptions::inlines`]).
    pub inlines: Vec<RawInline>,
    /// Ranges of contiguous plain text outside code, autolinks and images
    /// (with [`ScanOptions::inlines`]).
    pub text_runs: Vec<Range<usize>>,
    /// Ranges of paragraphs (with [`ScanOptions::inlines`]).
    pub paragraphs: Vec<Range<usize>>,
}

impl Scan {
    /// Number of fenced code blocks.
    pub fn fenced_code_count(&self) -> usize {
        self.blocks
            .iter()
            .filter(|b| matches!(b.kind, RawBlockKind::FencedCode(_)))
            .count()
    }

    /// Number of indented code blocks.
    pub fn indented_code_count(&self) -> usize {
        self.blocks
            .iter()
            .filter(|b| b.kind == RawBlockKind::IndentedCode)
            .count()
    }

    /// Number of GFM tables.
    pub fn table_count(&self) -> usize {
        self.blocks
            .iter()
            .filter(|b| b.kind == RawBlockKind::Table)
            .count()
    }

    /// The structural (not nested) headings.
    pub fn structural_headings(&self) -> impl Iterator<Item = &RawHeading> {
        self.headings.iter().filter(|h| !h.nested)
    }
}

/// `true` when `line` opens an ATX heading (`#`…`######` then a space, a
/// tab or the end of the line, after at most 3 spaces).
fn is_atx(source: &str) -> bool {
    let s = source.trim_start_matches(' ');
    if source.len() - s.len() > 3 {
        return false;
    }
    let hashes = s.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes)
        && matches!(
            s.as_bytes().get(hashes),
            None | Some(b' ' | b'\t' | b'\r' | b'\n')
        )
}

struct HeadingBuilder {
    level: u8,
    range: Range<usize>,
    title: String,
    nested: bool,
}

/// Records a code span or math: its text goes into the current heading's
/// title, its range into the inlines.
fn on_inline(
    out: &mut Scan,
    heading: &mut Option<HeadingBuilder>,
    image_depth: usize,
    options: ScanOptions,
    kind: RawInlineKind,
    content: &str,
    range: Range<usize>,
) {
    if let Some(h) = heading.as_mut() {
        if image_depth == 0 {
            h.title.push_str(content);
        }
    }
    if options.inlines {
        out.inlines.push(RawInline { kind, range });
    }
}

/// Parses an indexed document once, the front matter and BOM skipped;
/// `options` says whether inline constructs are collected too.
pub fn scan(index: &LineIndex<'_>, options: ScanOptions) -> Scan {
    scan_observed(index, options, |_, _| {})
}

/// [`scan`], giving `observe` every parser event of the body with its
/// range in the whole text, before the scan reads it: a caller that needs
/// more of the parse than [`Scan`] keeps reads it here instead of parsing
/// the text a second time.
pub fn scan_observed<F>(index: &LineIndex<'_>, options: ScanOptions, mut observe: F) -> Scan
where
    F: FnMut(&Event<'_>, Range<usize>),
{
    let text = index.text();
    let front_matter = front_matter::detect(index);
    let base = front_matter::body_start(index, front_matter.as_ref());
    let body = text.get(base..).unwrap_or("");
    let mut scanner = Scanner {
        text,
        options,
        out: Scan {
            front_matter,
            ..Scan::default()
        },
        containers: 0,
        heading: None,
        image_depth: 0,
        link_stack: Vec::new(),
        in_code: false,
    };
    let mut iter = Parser::new_ext(body, parser_options()).into_offset_iter();
    for (event, range) in iter.by_ref() {
        let range = (range.start + base)..(range.end + base);
        observe(&event, range.clone());
        scanner.read(event, range);
    }
    let mut out = scanner.out;
    let mut defs: Vec<RawBlock> = iter
        .reference_definitions()
        .iter()
        .map(|(label, def)| RawBlock {
            kind: RawBlockKind::LinkRefDef(label.to_string()),
            range: (def.span.start + base)..(def.span.end + base),
        })
        .collect();
    defs.sort_by_key(|d| (d.range.start, d.range.end));
    out.blocks.extend(defs);
    out
}

/// One scan's state as it reads the parser's events.
struct Scanner<'t> {
    text: &'t str,
    options: ScanOptions,
    out: Scan,
    /// The block quotes, list items and footnotes open.
    containers: usize,
    heading: Option<HeadingBuilder>,
    image_depth: usize,
    /// The links open, `true` for an autolink.
    link_stack: Vec<bool>,
    in_code: bool,
}

impl Scanner<'_> {
    /// Reads one event, `range` being its place in the whole text.
    fn read(&mut self, event: Event<'_>, range: Range<usize>) {
        match event {
            Event::Start(tag) => self.start(tag, range),
            Event::End(end) => self.end(end),
            Event::Text(t) => {
                if let Some(h) = self.heading.as_mut() {
                    if self.image_depth == 0 {
                        h.title.push_str(&t);
                    }
                }
                if self.options.inlines
                    && !self.in_code
                    && self.image_depth == 0
                    && !self.link_stack.contains(&true)
                {
                    match self.out.text_runs.last_mut() {
                        Some(last) if last.end == range.start => last.end = range.end,
                        _ => self.out.text_runs.push(range),
                    }
                }
            }
            Event::Code(t) => self.inline(RawInlineKind::Code, &t, range),
            Event::InlineMath(t) => self.inline(RawInlineKind::InlineMath, &t, range),
            Event::DisplayMath(t) => self.inline(RawInlineKind::DisplayMath, &t, range),
            Event::SoftBreak | Event::HardBreak => {
                if let Some(h) = self.heading.as_mut() {
                    h.title.push(' ');
                }
            }
            _ => {}
        }
    }

    /// Records a code span or math (see [`on_inline`]).
    fn inline(&mut self, kind: RawInlineKind, content: &str, range: Range<usize>) {
        on_inline(
            &mut self.out,
            &mut self.heading,
            self.image_depth,
            self.options,
            kind,
            content,
            range,
        );
    }

    /// Reads the start of `tag`, spanning `range`.
    fn start(&mut self, tag: Tag<'_>, range: Range<usize>) {
        let out = &mut self.out;
        match tag {
            Tag::BlockQuote(_) | Tag::Item | Tag::FootnoteDefinition(_) => self.containers += 1,
            Tag::Heading { level, .. } => {
                self.heading = Some(HeadingBuilder {
                    level: level as u8,
                    range,
                    title: String::new(),
                    nested: self.containers > 0,
                });
            }
            Tag::CodeBlock(kind) => {
                self.in_code = true;
                let kind = match kind {
                    CodeBlockKind::Fenced(info) => {
                        RawBlockKind::FencedCode(info.trim().to_string())
                    }
                    CodeBlockKind::Indented => RawBlockKind::IndentedCode,
                };
                out.blocks.push(RawBlock { kind, range });
            }
            Tag::Table(_) => out.blocks.push(RawBlock {
                kind: RawBlockKind::Table,
                range,
            }),
            Tag::HtmlBlock => out.blocks.push(RawBlock {
                kind: RawBlockKind::HtmlBlock,
                range,
            }),
            Tag::Image { .. } => self.image_depth += 1,
            Tag::Link { link_type, .. } => {
                let autolink = matches!(link_type, LinkType::Autolink | LinkType::Email);
                self.link_stack.push(autolink);
                if autolink && self.options.inlines {
                    out.inlines.push(RawInline {
                        kind: RawInlineKind::Autolink,
                        range,
                    });
                }
            }
            Tag::Paragraph if self.options.inlines => out.paragraphs.push(range),
            _ => {}
        }
    }

    /// Reads the end of a tag.
    fn end(&mut self, end: TagEnd) {
        match end {
            TagEnd::BlockQuote(_) | TagEnd::Item | TagEnd::FootnoteDefinition => {
                self.containers = self.containers.saturating_sub(1)
            }
            TagEnd::Heading(_) => {
                if let Some(h) = self.heading.take() {
                    let source = self.text.get(h.range.clone()).unwrap_or("");
                    self.out.headings.push(RawHeading {
                        level: h.level,
                        setext: !is_atx(source),
                        range: h.range,
                        title: h.title.trim().to_string(),
                        nested: h.nested,
                    });
                }
            }
            TagEnd::CodeBlock => self.in_code = false,
            TagEnd::Image => self.image_depth = self.image_depth.saturating_sub(1),
            TagEnd::Link => {
                self.link_stack.pop();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Scan {
        scan(&LineIndex::new(text), ScanOptions { inlines: true })
    }

    fn lines(text: &str, r: &Range<usize>) -> (u32, u32) {
        let idx = LineIndex::new(text);
        (idx.line_of(r.start), idx.last_line_of(r.start, r.end))
    }

    #[test]
    fn atx_and_setext_headings_with_plain_titles() {
        let text = "# One `code` *em*\n\nTwo ![img](x.png) [link](y)\n====\n\n#5 not atx\n---\n";
        let s = run(text);
        let titles: Vec<(&str, u8, bool)> = s
            .headings
            .iter()
            .map(|h| (h.title.as_str(), h.level, h.setext))
            .collect();
        assert_eq!(
            titles,
            vec![
                ("One code em", 1, false),
                ("Two  link", 1, true),
                ("#5 not atx", 2, true)
            ]
        );
        assert_eq!(lines(text, &s.headings[1].range), (3, 4));
    }

    #[test]
    fn headings_inside_code_html_and_front_matter_are_not_headings() {
        let text = "---\ntitle: x\n---\n```\n# code\n```\n<div>\n# html\n</div>\n\n    # indented\n\n# Real\n";
        let s = run(text);
        let titles: Vec<&str> = s.headings.iter().map(|h| h.title.as_str()).collect();
        assert_eq!(titles, vec!["Real"]);
        assert_eq!(s.front_matter.map(|f| f.line_end), Some(3));
    }

    #[test]
    fn nested_headings_are_flagged() {
        let s = run("> # Quoted\n\n- # In list\n\n# Top\n");
        let flags: Vec<(&str, bool)> = s
            .headings
            .iter()
            .map(|h| (h.title.as_str(), h.nested))
            .collect();
        assert_eq!(
            flags,
            vec![("Quoted", true), ("In list", true), ("Top", false)]
        );
        assert_eq!(s.structural_headings().count(), 1);
    }

    #[test]
    fn blocks_have_line_ranges() {
        let text = "intro\n\n~~~~ rust  ignore\nfn x() {}\n~~~~\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<!--\ncomment\n-->\n\n[ref]: https://example.org \"T\"\n";
        let s = run(text);
        let got: Vec<(RawBlockKind, (u32, u32))> = s
            .blocks
            .iter()
            .map(|b| (b.kind.clone(), lines(text, &b.range)))
            .collect();
        assert_eq!(
            got,
            vec![
                (RawBlockKind::FencedCode("rust  ignore".into()), (3, 5)),
                (RawBlockKind::Table, (7, 9)),
                (RawBlockKind::HtmlBlock, (11, 13)),
                (RawBlockKind::LinkRefDef("ref".into()), (15, 15)),
            ]
        );
        assert_eq!(s.fenced_code_count(), 1);
        assert_eq!(s.table_count(), 1);
    }

    #[test]
    fn unclosed_fence_runs_to_the_end() {
        let text = "# H\n\n```python\nx = 1\n\n# not a heading\n";
        let s = run(text);
        assert_eq!(s.headings.len(), 1);
        assert_eq!(lines(text, &s.blocks[0].range), (3, 6));
    }

    #[test]
    fn inlines_and_text_runs() {
        let text = "Use `x` and $y$ or <https://a.org> see https://b.org/p_q.\n";
        let s = run(text);
        let kinds: Vec<(RawInlineKind, &str)> = s
            .inlines
            .iter()
            .map(|i| (i.kind, &text[i.range.clone()]))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (RawInlineKind::Code, "`x`"),
                (RawInlineKind::InlineMath, "$y$"),
                (RawInlineKind::Autolink, "<https://a.org>"),
            ]
        );
        let runs: Vec<&str> = s.text_runs.iter().map(|r| &text[r.clone()]).collect();
        assert!(
            runs.iter().any(|r| r.contains("https://b.org/p_q.")),
            "{runs:?}"
        );
        assert!(!runs.iter().any(|r| r.contains("a.org")), "{runs:?}");
    }

    #[test]
    fn offsets_are_absolute_after_bom_and_front_matter() {
        let text = "\u{feff}---\na: 1\n---\n# Title\n";
        let s = run(text);
        assert_eq!(&text[s.headings[0].range.clone()].trim_end(), &"# Title");
    }
}
