//! The Markdown shape of a text: what a reader sees as its structure
//! (headings and their levels, paragraphs, list items, tables and their
//! rows, quotes, code blocks, HTML, rules, footnotes) and its inline
//! formatting (emphasis, links, images, code spans, math, line breaks),
//! parsed with the same parser and options as Stage 1.
//!
//! Two shapes of the same lines, before and after an edit, are compared
//! with [`compare`]: an edit that only fixes words leaves the shape
//! unchanged, and one that removes a heading's `##`, a list item's marker,
//! adds a table delimiter row under a sentence or leaves an HTML element
//! open is told, in words a person understands ("heading turned into a
//! paragraph").
//!
//! [`top_level_blocks`] gives the line ranges of a document's top-level
//! blocks: a text cut at a top-level block start parses the same way on
//! its own as inside the document, so an edit's shape can be judged on a
//! few blocks around it instead of the whole document.

use crate::front_matter;
use crate::line_index::LineIndex;
use crate::scan::parser_options;
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
use std::collections::BTreeMap;
use std::ops::Range;

mod compare;
pub use compare::{compare, Area, ShapeChange};

/// A block a reader sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShapeKind {
    /// A paragraph (tight list items hold their text without one).
    Paragraph,
    /// A heading of this level (1–6), ATX or setext alike.
    Heading(u8),
    /// A block quote (a GitHub alert too).
    Quote,
    /// A list, ordered or not.
    List {
        /// `true` for a numbered list.
        ordered: bool,
    },
    /// A list item; `Some(checked)` for a task list item.
    Item(Option<bool>),
    /// A GFM table with this many columns.
    Table(usize),
    /// A table row (the header row too).
    TableRow,
    /// A code block, fenced or indented.
    Code {
        /// `true` for a fenced block.
        fenced: bool,
    },
    /// An HTML block.
    Html,
    /// A thematic break (`---`, `***`).
    Rule,
    /// A footnote definition.
    Footnote,
}

impl ShapeKind {
    /// What the block is called in a message.
    pub fn name(self) -> String {
        match self {
            ShapeKind::Paragraph => "paragraph".into(),
            ShapeKind::Heading(level) => format!("heading (level {level})"),
            ShapeKind::Quote => "block quote".into(),
            ShapeKind::List { ordered: true } => "numbered list".into(),
            ShapeKind::List { ordered: false } => "bulleted list".into(),
            ShapeKind::Item(None) => "list item".into(),
            ShapeKind::Item(Some(_)) => "task list item".into(),
            ShapeKind::Table(_) => "table".into(),
            ShapeKind::TableRow => "table row".into(),
            ShapeKind::Code { .. } => "code block".into(),
            ShapeKind::Html => "HTML block".into(),
            ShapeKind::Rule => "horizontal rule".into(),
            ShapeKind::Footnote => "footnote definition".into(),
        }
    }

    /// The area of the document's structure the block belongs to.
    pub fn area(self) -> Area {
        match self {
            ShapeKind::Paragraph => Area::Paragraph,
            ShapeKind::Heading(_) => Area::Heading,
            ShapeKind::Quote => Area::Quote,
            ShapeKind::List { .. } | ShapeKind::Item(_) => Area::List,
            ShapeKind::Table(_) | ShapeKind::TableRow => Area::Table,
            ShapeKind::Code { .. } => Area::Code,
            ShapeKind::Html => Area::Html,
            ShapeKind::Rule => Area::Rule,
            ShapeKind::Footnote => Area::Footnote,
        }
    }
}

/// One block of a shape: its kind, how deep it is nested in quotes, list
/// items and footnotes, and its text (whitespace collapsed), which tells a
/// block that changed kind from one that was replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// What it is.
    pub kind: ShapeKind,
    /// Containers around it (0 at the top level).
    pub depth: u16,
    /// Its text content, whitespace collapsed (for a list item or a table
    /// row, the text of its first line of content).
    pub text: String,
}

/// Inline constructs, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InlineCounts {
    /// `*emphasis*`.
    pub emphasis: u32,
    /// `**strong**`.
    pub strong: u32,
    /// `~~strikethrough~~`.
    pub strikethrough: u32,
    /// Links and autolinks.
    pub links: u32,
    /// Images.
    pub images: u32,
    /// Code spans.
    pub code: u32,
    /// Inline and display math.
    pub math: u32,
    /// Footnote references.
    pub footnote_refs: u32,
    /// Hard line breaks (two trailing spaces, a backslash).
    pub hard_breaks: u32,
}

/// The shape of a text (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shape {
    /// Blocks in document order, containers before what they hold.
    pub blocks: Vec<Block>,
    /// Inline constructs.
    pub inline: InlineCounts,
    /// Per HTML element name (lower case; `!--` for comments): opening
    /// tags minus closing tags. Void elements and self-closing tags do not
    /// count.
    pub html_balance: BTreeMap<String, i64>,
    /// Per HTML element name: every tag, opening or closing.
    pub html_tags: BTreeMap<String, u64>,
    /// A fenced code block runs to the end of the text without its closing
    /// fence.
    pub unclosed_fence: bool,
    /// Lines of paragraphs that look like a table's delimiter row
    /// (`|---|`): this parser keeps them as text when the line above has
    /// no pipe, other renderers make a table of it.
    pub delimiter_rows: u32,
}

/// HTML elements that never have a closing tag.
const VOID_ELEMENTS: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

/// Counts the tags of an HTML fragment into `shape`.
fn count_html(fragment: &str, shape: &mut Shape) {
    let mut rest = fragment;
    while let Some(at) = rest.find(['<', '-']) {
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("<!--") {
            *shape.html_balance.entry("!--".into()).or_default() += 1;
            *shape.html_tags.entry("!--".into()).or_default() += 1;
            rest = after;
            continue;
        }
        if let Some(after) = tail.strip_prefix("-->") {
            *shape.html_balance.entry("!--".into()).or_default() -= 1;
            *shape.html_tags.entry("!--".into()).or_default() += 1;
            rest = after;
            continue;
        }
        let Some(after) = tail.strip_prefix('<') else {
            rest = &tail[1..];
            continue;
        };
        let (closing, name_part) = match after.strip_prefix('/') {
            Some(n) => (true, n),
            None => (false, after),
        };
        let name: String = name_part
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            rest = after;
            continue;
        }
        let end = after.find('>').unwrap_or(after.len());
        let self_closing = after[..end].ends_with('/');
        *shape.html_tags.entry(name.clone()).or_default() += 1;
        if !self_closing && !VOID_ELEMENTS.contains(&name.as_str()) {
            *shape.html_balance.entry(name).or_default() += if closing { -1 } else { 1 };
        }
        rest = &after[end.min(after.len())..];
    }
}

/// True when the fenced block `source` (its whole text, fences included)
/// ends with a closing fence.
fn fence_closed(source: &str) -> bool {
    let mut lines = source.lines();
    let Some(first) = lines.next() else {
        return false;
    };
    let opening = first.trim_start();
    let Some(ch) = opening.chars().next().filter(|c| *c == '`' || *c == '~') else {
        return true;
    };
    let len = opening.chars().take_while(|c| *c == ch).count();
    lines.last().is_some_and(|last| {
        let t = last.trim();
        t.chars().count() >= len && t.chars().all(|c| c == ch)
    })
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Adds `text` to the blocks collecting it.
fn push_text(shape: &mut Shape, collecting: &[usize], text: &str) {
    for &i in collecting {
        let block = &mut shape.blocks[i];
        // A list item keeps the beginning of its content only: enough to
        // recognise it, bounded for long items.
        if matches!(block.kind, ShapeKind::Item(_)) && block.text.len() > 200 {
            continue;
        }
        block.text.push_str(text);
        block.text.push(' ');
    }
}

/// The shape of `text`: a whole document (`start_of_document`: its front
/// matter and BOM are skipped, as Stage 1 does) or a piece of one that
/// starts at a top-level block (see [`top_level_blocks`]), where a `---`
/// line is Markdown, not front matter.
pub fn shape_of(text: &str, start_of_document: bool) -> Shape {
    let base = if start_of_document {
        let index = LineIndex::new(text);
        front_matter::body_start(&index, front_matter::detect(&index).as_ref())
    } else {
        0
    };
    let body = text.get(base..).unwrap_or("");
    let mut reader = ShapeReader {
        body,
        shape: Shape::default(),
        depth: 0,
        collecting: Vec::new(),
        in_html_block: false,
    };
    for (event, range) in Parser::new_ext(body, parser_options()).into_offset_iter() {
        reader.read(event, range);
    }
    let mut shape = reader.shape;
    for block in &mut shape.blocks {
        block.text = collapse(&block.text);
    }
    shape
}

/// The shape of a text as it is read from the parser's events.
struct ShapeReader<'b> {
    /// The text parsed (the body, after any front matter).
    body: &'b str,
    shape: Shape,
    depth: u16,
    /// Blocks whose text is still being collected (leaf blocks, and the
    /// first content of a list item or a row).
    collecting: Vec<usize>,
    in_html_block: bool,
}

impl ShapeReader<'_> {
    /// Adds a block of `kind` at the current depth; its index.
    fn open(&mut self, kind: ShapeKind) -> usize {
        self.shape.blocks.push(Block {
            kind,
            depth: self.depth,
            text: String::new(),
        });
        self.shape.blocks.len() - 1
    }

    /// Reads one event, `range` being its place in the body.
    fn read(&mut self, event: Event<'_>, range: Range<usize>) {
        let shape = &mut self.shape;
        match event {
            Event::Start(tag) => self.start(tag, range),
            Event::End(end) => self.end(end),
            Event::Text(t) => push_text(shape, &self.collecting, &t),
            Event::Code(t) => {
                shape.inline.code += 1;
                push_text(shape, &self.collecting, &t);
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                shape.inline.math += 1;
                push_text(shape, &self.collecting, &t);
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                count_html(&t, shape);
                if self.in_html_block {
                    if let Some(&i) = self.collecting.last() {
                        shape.blocks[i].text.push_str(&t);
                    }
                }
            }
            Event::TaskListMarker(checked) => {
                if let Some(item) = shape
                    .blocks
                    .iter_mut()
                    .rev()
                    .find(|b| matches!(b.kind, ShapeKind::Item(_)))
                {
                    item.kind = ShapeKind::Item(Some(checked));
                }
            }
            Event::FootnoteReference(_) => shape.inline.footnote_refs += 1,
            Event::HardBreak => shape.inline.hard_breaks += 1,
            Event::Rule => {
                self.open(ShapeKind::Rule);
            }
            Event::SoftBreak => {}
        }
    }

    /// Reads the start of `tag`, spanning `range` of the body.
    fn start(&mut self, tag: Tag<'_>, range: Range<usize>) {
        match tag {
            Tag::Paragraph => {
                let i = self.open(ShapeKind::Paragraph);
                self.collecting.push(i);
                let source = self.body.get(range.clone()).unwrap_or("");
                self.shape.delimiter_rows += source
                    .lines()
                    .filter(|l| crate::protected::table_like::is_delimiter_row(l))
                    .count() as u32;
            }
            Tag::Heading { level, .. } => {
                let i = self.open(ShapeKind::Heading(level as u8));
                self.collecting.push(i);
            }
            Tag::BlockQuote(_) => {
                self.open(ShapeKind::Quote);
                self.depth += 1;
            }
            Tag::List(start) => {
                self.open(ShapeKind::List {
                    ordered: start.is_some(),
                });
            }
            Tag::Item => {
                let i = self.open(ShapeKind::Item(None));
                self.collecting.push(i);
                self.depth += 1;
            }
            Tag::FootnoteDefinition(_) => {
                self.open(ShapeKind::Footnote);
                self.depth += 1;
            }
            Tag::Table(columns) => {
                self.open(ShapeKind::Table(columns.len()));
            }
            Tag::TableHead | Tag::TableRow => {
                let i = self.open(ShapeKind::TableRow);
                self.collecting.push(i);
            }
            Tag::CodeBlock(kind) => {
                let fenced = matches!(kind, CodeBlockKind::Fenced(_));
                let i = self.open(ShapeKind::Code { fenced });
                self.collecting.push(i);
                if fenced && !fence_closed(self.body.get(range.clone()).unwrap_or("")) {
                    self.shape.unclosed_fence = true;
                }
            }
            Tag::HtmlBlock => {
                let i = self.open(ShapeKind::Html);
                self.collecting.push(i);
                self.in_html_block = true;
            }
            Tag::Emphasis => self.shape.inline.emphasis += 1,
            Tag::Strong => self.shape.inline.strong += 1,
            Tag::Strikethrough => self.shape.inline.strikethrough += 1,
            Tag::Link { .. } => self.shape.inline.links += 1,
            Tag::Image { .. } => self.shape.inline.images += 1,
            _ => {}
        }
    }

    /// Reads the end of a tag.
    fn end(&mut self, end: TagEnd) {
        match end {
            TagEnd::Paragraph
            | TagEnd::Heading(_)
            | TagEnd::TableHead
            | TagEnd::TableRow
            | TagEnd::CodeBlock => {
                self.collecting.pop();
            }
            TagEnd::HtmlBlock => {
                self.collecting.pop();
                self.in_html_block = false;
            }
            TagEnd::Item => {
                // The item's own entry, below any leaf it held.
                self.collecting.pop();
                self.depth = self.depth.saturating_sub(1);
            }
            TagEnd::BlockQuote(_) | TagEnd::FootnoteDefinition => {
                self.depth = self.depth.saturating_sub(1)
            }
            _ => {}
        }
    }
}

/// Line ranges (0-based, end excluded) of the top-level blocks of a whole
/// document, in order, front matter included as one block. Lines between
/// them are blank or hold link reference definitions.
pub fn top_level_blocks(text: &str) -> Vec<Range<usize>> {
    let index = LineIndex::new(text);
    let front = front_matter::detect(&index);
    let base = front_matter::body_start(&index, front.as_ref());
    let body = text.get(base..).unwrap_or("");
    let mut out: Vec<Range<usize>> = Vec::new();
    if let Some(f) = front {
        out.push(0..f.line_end as usize);
    }
    let mut push = |start: usize, end: usize| {
        let first = index.line_of(base + start) as usize;
        let last = index.last_line_of(base + start, base + end) as usize;
        let range = first.saturating_sub(1)..last;
        // A block never starts before the previous one ended.
        if out.last().map_or(true, |prev| prev.end <= range.start) {
            out.push(range);
        }
    };
    let mut depth = 0usize;
    let mut start = 0usize;
    for (event, range) in Parser::new_ext(body, parser_options()).into_offset_iter() {
        match event {
            Event::Start(_) => {
                if depth == 0 {
                    start = range.start;
                }
                depth += 1;
            }
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    push(start, range.end);
                }
            }
            Event::Rule if depth == 0 => push(range.start, range.end),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;
