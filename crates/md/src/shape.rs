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
    let mut shape = Shape::default();
    let mut depth: u16 = 0;
    // Blocks whose text is still being collected (leaf blocks, and the
    // first content of a list item or a row).
    let mut collecting: Vec<usize> = Vec::new();
    let mut in_html_block = false;
    for (event, range) in Parser::new_ext(body, parser_options()).into_offset_iter() {
        let open = |shape: &mut Shape, kind: ShapeKind, depth: u16| {
            shape.blocks.push(Block {
                kind,
                depth,
                text: String::new(),
            });
            shape.blocks.len() - 1
        };
        match event {
            Event::Start(tag) => match tag {
                Tag::Paragraph => {
                    collecting.push(open(&mut shape, ShapeKind::Paragraph, depth));
                    let source = body.get(range.clone()).unwrap_or("");
                    shape.delimiter_rows += source
                        .lines()
                        .filter(|l| crate::protected::table_like::is_delimiter_row(l))
                        .count() as u32;
                }
                Tag::Heading { level, .. } => {
                    collecting.push(open(&mut shape, ShapeKind::Heading(level as u8), depth))
                }
                Tag::BlockQuote(_) => {
                    open(&mut shape, ShapeKind::Quote, depth);
                    depth += 1;
                }
                Tag::List(start) => {
                    open(
                        &mut shape,
                        ShapeKind::List {
                            ordered: start.is_some(),
                        },
                        depth,
                    );
                }
                Tag::Item => {
                    collecting.push(open(&mut shape, ShapeKind::Item(None), depth));
                    depth += 1;
                }
                Tag::FootnoteDefinition(_) => {
                    open(&mut shape, ShapeKind::Footnote, depth);
                    depth += 1;
                }
                Tag::Table(columns) => {
                    open(&mut shape, ShapeKind::Table(columns.len()), depth);
                }
                Tag::TableHead | Tag::TableRow => {
                    collecting.push(open(&mut shape, ShapeKind::TableRow, depth))
                }
                Tag::CodeBlock(kind) => {
                    let fenced = matches!(kind, CodeBlockKind::Fenced(_));
                    collecting.push(open(&mut shape, ShapeKind::Code { fenced }, depth));
                    if fenced && !fence_closed(body.get(range.clone()).unwrap_or("")) {
                        shape.unclosed_fence = true;
                    }
                }
                Tag::HtmlBlock => {
                    collecting.push(open(&mut shape, ShapeKind::Html, depth));
                    in_html_block = true;
                }
                Tag::Emphasis => shape.inline.emphasis += 1,
                Tag::Strong => shape.inline.strong += 1,
                Tag::Strikethrough => shape.inline.strikethrough += 1,
                Tag::Link { .. } => shape.inline.links += 1,
                Tag::Image { .. } => shape.inline.images += 1,
                _ => {}
            },
            Event::End(end) => match end {
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::TableHead
                | TagEnd::TableRow
                | TagEnd::CodeBlock => {
                    collecting.pop();
                }
                TagEnd::HtmlBlock => {
                    collecting.pop();
                    in_html_block = false;
                }
                TagEnd::Item => {
                    // The item's own entry, below any leaf it held.
                    collecting.pop();
                    depth = depth.saturating_sub(1);
                }
                TagEnd::BlockQuote(_) | TagEnd::FootnoteDefinition => {
                    depth = depth.saturating_sub(1)
                }
                _ => {}
            },
            Event::Text(t) => push_text(&mut shape, &collecting, &t),
            Event::Code(t) => {
                shape.inline.code += 1;
                push_text(&mut shape, &collecting, &t);
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                shape.inline.math += 1;
                push_text(&mut shape, &collecting, &t);
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                count_html(&t, &mut shape);
                if in_html_block {
                    if let Some(&i) = collecting.last() {
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
                open(&mut shape, ShapeKind::Rule, depth);
            }
            Event::SoftBreak => {}
        }
    }
    for block in &mut shape.blocks {
        block.text = collapse(&block.text);
    }
    shape
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

/// The part of the structure a change concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Area {
    /// Headings and their levels.
    Heading,
    /// List items, their markers, task boxes.
    List,
    /// Tables and their rows.
    Table,
    /// Block quotes.
    Quote,
    /// Code blocks and fences.
    Code,
    /// HTML blocks, tags and comments.
    Html,
    /// Thematic breaks.
    Rule,
    /// Footnote definitions.
    Footnote,
    /// A block moved into or out of a container.
    Nesting,
    /// Images.
    Image,
    /// Paragraphs split or merged.
    Paragraph,
    /// Emphasis, strong, strikethrough.
    Emphasis,
    /// Links.
    Link,
    /// Code spans and math.
    Span,
    /// Hard line breaks, footnote references.
    Break,
}

impl Area {
    /// True for the document's block structure (headings, lists, tables,
    /// quotes, code, HTML, rules, footnotes, nesting, images); false for
    /// paragraphs split or merged and inline formatting.
    pub fn is_block(self) -> bool {
        !matches!(
            self,
            Area::Paragraph | Area::Emphasis | Area::Link | Area::Span | Area::Break
        )
    }

    /// The area's name in messages and declared purposes (`heading`,
    /// `list`…).
    pub fn name(self) -> &'static str {
        match self {
            Area::Heading => "heading",
            Area::List => "list",
            Area::Table => "table",
            Area::Quote => "quote",
            Area::Code => "code",
            Area::Html => "html",
            Area::Rule => "rule",
            Area::Footnote => "footnote",
            Area::Nesting => "nesting",
            Area::Image => "image",
            Area::Paragraph => "paragraph",
            Area::Emphasis => "emphasis",
            Area::Link => "link",
            Area::Span => "span",
            Area::Break => "break",
        }
    }
}

/// One difference between two shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeChange {
    /// What part of the structure changed.
    pub area: Area,
    /// What changed, for a person: "heading (level 2) turned into a
    /// paragraph: 'Payment routing'".
    pub what: String,
    /// The change leaves something open past its own lines (an HTML
    /// element or comment, a code fence) or closes something opened
    /// elsewhere: what follows renders differently. No fix does that.
    pub leaves_open: bool,
}

fn quote(text: &str) -> String {
    let t: String = text.chars().take(60).collect();
    if t.len() < text.len() {
        format!("'{t}…'")
    } else {
        format!("'{t}'")
    }
}

/// Letters and digits only, lower case: the text a reader recognises
/// whatever markers surround it.
fn key(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (key(a), key(b));
    !a.is_empty() && a == b
}

/// Blocks of `a` and `b` matched in order by kind and depth (longest
/// common subsequence, after the common head and tail): the indexes of
/// the blocks of each side left unmatched.
fn unmatched(a: &[Block], b: &[Block]) -> Matching {
    let sig = |x: &Block| (x.kind, x.depth);
    // The same block on both sides: same kind, depth and text (the text a
    // reader recognises; for code and HTML, every character of it).
    let same = |x: &Block, y: &Block| {
        sig(x) == sig(y)
            && if verbatim(x.kind) {
                x.text == y.text
            } else {
                key(&x.text) == key(&y.text)
            }
    };
    let head = a.iter().zip(b).take_while(|(x, y)| same(x, y)).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| same(x, y))
        .count();
    let (ma, mb) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    // Weighted LCS over the middles (small for a local edit): a pair of
    // the same kind and depth scores 2 when its text is the same too, so
    // that the block left unmatched is the one that really changed.
    let weight = |x: &Block, y: &Block| -> u32 {
        if same(x, y) {
            2
        } else if sig(x) == sig(y) {
            1
        } else {
            0
        }
    };
    let mut table = vec![vec![0u32; mb.len() + 1]; ma.len() + 1];
    for i in (0..ma.len()).rev() {
        for j in (0..mb.len()).rev() {
            let w = weight(&ma[i], &mb[j]);
            let pair = if w > 0 { table[i + 1][j + 1] + w } else { 0 };
            table[i][j] = pair.max(table[i + 1][j]).max(table[i][j + 1]);
        }
    }
    let (mut i, mut j) = (0, 0);
    let (mut only_a, mut only_b, mut retexted) = (Vec::new(), Vec::new(), Vec::new());
    while i < ma.len() || j < mb.len() {
        if i < ma.len() && j < mb.len() {
            let w = weight(&ma[i], &mb[j]);
            if w > 0 && table[i][j] == table[i + 1][j + 1] + w {
                if w == 1 {
                    retexted.push((head + i, head + j));
                }
                i += 1;
                j += 1;
                continue;
            }
        }
        if j == mb.len() || (i < ma.len() && table[i][j] == table[i + 1][j]) {
            only_a.push(head + i);
            i += 1;
        } else {
            only_b.push(head + j);
            j += 1;
        }
    }
    Matching {
        only_before: only_a,
        only_after: only_b,
        retexted,
    }
}

/// How the blocks of two shapes line up (indexes into each side).
struct Matching {
    /// Blocks of the first shape with no counterpart.
    only_before: Vec<usize>,
    /// Blocks of the second shape with no counterpart.
    only_after: Vec<usize>,
    /// Counterparts of the same kind and depth whose text differs.
    retexted: Vec<(usize, usize)>,
}

/// Blocks whose every character is content an op may not change from
/// outside them: code and HTML.
fn verbatim(kind: ShapeKind) -> bool {
    matches!(kind, ShapeKind::Code { .. } | ShapeKind::Html)
}

/// What changed from `before` to `after` (both shapes of the same lines,
/// before and after an edit), most structural first. Empty when the
/// structure is the same.
pub fn compare(before: &Shape, after: &Shape) -> Vec<ShapeChange> {
    let matching = unmatched(&before.blocks, &after.blocks);
    let (blocks, paragraphs_moved) = block_changes(before, after, &matching);
    let mut out = said_once(blocks);
    let count = |s: &Shape| {
        s.blocks
            .iter()
            .filter(|b| b.kind == ShapeKind::Paragraph)
            .count()
    };
    let (was, now) = (count(before), count(after));
    if paragraphs_moved && was != now && out.is_empty() {
        out.push(ShapeChange {
            area: Area::Paragraph,
            what: format!("paragraphs {was} → {now} (a paragraph split, or two merged)"),
            leaves_open: false,
        });
    }
    if after.delimiter_rows > before.delimiter_rows && !out.iter().any(|c| c.area == Area::Table) {
        out.push(ShapeChange {
            area: Area::Table,
            what: "table delimiter row added under text: renderers may make the line above it a table header".into(),
            leaves_open: false,
        });
    }
    html_changes(before, after, &mut out);
    if after.unclosed_fence && !before.unclosed_fence {
        out.push(ShapeChange {
            area: Area::Code,
            what: "code fence left open: everything after it becomes code".into(),
            leaves_open: true,
        });
    }
    inline_changes(&before.inline, &after.inline, &mut out);
    out.sort_by_key(|c| (!c.leaves_open, !c.area.is_block(), c.area));
    out
}

/// A change of one block, which leaves nothing open.
fn block_change(area: Area, what: String) -> ShapeChange {
    ShapeChange {
        area,
        what,
        leaves_open: false,
    }
}

/// Each block change with the kind it is about (to say a table or a list
/// once rather than once per row or item), and whether a paragraph was
/// added or removed: paragraphs are told by their count, a split or a
/// merge.
fn block_changes(
    before: &Shape,
    after: &Shape,
    matching: &Matching,
) -> (Vec<(ShapeKind, ShapeChange)>, bool) {
    let mut blocks: Vec<(ShapeKind, ShapeChange)> = Vec::new();
    let (gone, new) = (&matching.only_before, &matching.only_after);
    // Code and HTML whose content changed: an edit beside a fence can move
    // it (a new fence line turns "```json" into content).
    for &(i, j) in &matching.retexted {
        let (b, a) = (&before.blocks[i], &after.blocks[j]);
        if verbatim(b.kind) {
            let what = format!("{} content changed: {}", b.kind.name(), quote(&a.text));
            blocks.push((b.kind, block_change(b.kind.area(), what)));
        }
    }
    let mut used = vec![false; new.len()];
    let mut paragraphs_moved = false;
    for &i in gone {
        let b = &before.blocks[i];
        let partner = new
            .iter()
            .enumerate()
            .find(|(k, &j)| !used[*k] && same_text(&b.text, &after.blocks[j].text));
        if let Some((k, &j)) = partner {
            used[k] = true;
            blocks.push((b.kind, reshaped(b, &after.blocks[j])));
            continue;
        }
        if b.kind == ShapeKind::Paragraph {
            paragraphs_moved = true;
            continue;
        }
        blocks.push((b.kind, removed(b, after)));
    }
    for (k, &j) in new.iter().enumerate() {
        let a = &after.blocks[j];
        if used[k] {
            continue;
        }
        if a.kind == ShapeKind::Paragraph {
            paragraphs_moved = true;
            continue;
        }
        let what = format!("{} added{}", a.kind.name(), quoted_suffix(&a.text));
        blocks.push((a.kind, block_change(a.kind.area(), what)));
    }
    (blocks, paragraphs_moved)
}

/// A block whose text is still there in block `a`, with another kind or
/// depth: a heading's level changed, a block moved into or out of a list
/// or quote, or it turned into another kind of block.
fn reshaped(b: &Block, a: &Block) -> ShapeChange {
    let (area, what) = match (b.kind, a.kind) {
        (ShapeKind::Heading(x), ShapeKind::Heading(y)) => (
            Area::Heading,
            format!("heading level {x} → {y}: {}", quote(&b.text)),
        ),
        (x, y) if x == y => (
            Area::Nesting,
            format!(
                "{} moved {} a list or quote: {}",
                x.name(),
                if a.depth > b.depth { "into" } else { "out of" },
                quote(&b.text)
            ),
        ),
        (x, y) => {
            let area = if x == ShapeKind::Paragraph {
                y.area()
            } else {
                x.area()
            };
            let what = format!(
                "{} turned into a {}: {}",
                x.name(),
                y.name(),
                quote(&b.text)
            );
            (area, what)
        }
    };
    block_change(area, what)
}

/// A block of `before` (not a paragraph) with no counterpart in `after`.
/// Its text may live on in a neighbour: a list item whose marker was
/// removed joins the item before it.
fn removed(b: &Block, after: &Shape) -> ShapeChange {
    let own = key(&b.text);
    let joined = !own.is_empty()
        && after
            .blocks
            .iter()
            .any(|a| a.text.len() > b.text.len() && key(&a.text).contains(&own));
    let what = if joined {
        format!(
            "{} removed, its text joined the text around it: {}",
            b.kind.name(),
            quote(&b.text)
        )
    } else {
        format!("{} removed{}", b.kind.name(), quoted_suffix(&b.text))
    };
    block_change(b.kind.area(), what)
}

/// The block changes, each thing said once: a table added or removed
/// brings its rows along, and a list its items; the table is said once,
/// and for a list the items say more.
fn said_once(blocks: Vec<(ShapeKind, ShapeChange)>) -> Vec<ShapeChange> {
    let table_whole = blocks.iter().any(|(k, _)| matches!(k, ShapeKind::Table(_)));
    let item_told = blocks.iter().any(|(k, _)| matches!(k, ShapeKind::Item(_)));
    blocks
        .into_iter()
        .filter(|(k, _)| {
            !(table_whole && *k == ShapeKind::TableRow
                || item_told && matches!(k, ShapeKind::List { .. }))
        })
        .map(|(_, c)| c)
        .collect()
}

/// `: 'text'` for a block with text, nothing for one without.
fn quoted_suffix(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(": {}", quote(text))
    }
}

fn html_changes(before: &Shape, after: &Shape, out: &mut Vec<ShapeChange>) {
    let names: std::collections::BTreeSet<&String> = before
        .html_tags
        .keys()
        .chain(after.html_tags.keys())
        .collect();
    for name in names {
        let balance = |s: &Shape| s.html_balance.get(name).copied().unwrap_or(0);
        let tags = |s: &Shape| s.html_tags.get(name).copied().unwrap_or(0);
        let (was, now) = (balance(before), balance(after));
        let comment = name == "!--";
        if now > was {
            out.push(ShapeChange {
                area: Area::Html,
                what: if comment {
                    "HTML comment left open ('<!--' without '-->'): what follows is hidden".into()
                } else {
                    format!("HTML element <{name}> left open: what follows falls inside it")
                },
                leaves_open: true,
            });
        } else if now < was {
            out.push(ShapeChange {
                area: Area::Html,
                what: if comment {
                    "HTML comment end '-->' added or its start removed".into()
                } else {
                    format!(
                        "HTML closing tag </{name}> added, or <{name}> removed, without its pair"
                    )
                },
                leaves_open: true,
            });
        } else if tags(before) != tags(after) {
            out.push(ShapeChange {
                area: Area::Html,
                what: if comment {
                    "HTML comment added or removed".into()
                } else {
                    format!(
                        "HTML <{name}> {}",
                        if tags(after) > tags(before) {
                            "added"
                        } else {
                            "removed"
                        }
                    )
                },
                leaves_open: false,
            });
        }
    }
}

fn inline_changes(before: &InlineCounts, after: &InlineCounts, out: &mut Vec<ShapeChange>) {
    let pairs = [
        (Area::Emphasis, "emphasis", before.emphasis, after.emphasis),
        (Area::Emphasis, "bold", before.strong, after.strong),
        (
            Area::Emphasis,
            "strikethrough",
            before.strikethrough,
            after.strikethrough,
        ),
        (Area::Link, "link", before.links, after.links),
        (Area::Image, "image", before.images, after.images),
        (Area::Span, "code span", before.code, after.code),
        (Area::Span, "math", before.math, after.math),
        (
            Area::Break,
            "footnote reference",
            before.footnote_refs,
            after.footnote_refs,
        ),
        (
            Area::Break,
            "hard line break",
            before.hard_breaks,
            after.hard_breaks,
        ),
    ];
    for (area, name, was, now) in pairs {
        if was != now {
            out.push(ShapeChange {
                area,
                what: format!(
                    "{name} {} ({was} → {now})",
                    if now > was { "added" } else { "removed" }
                ),
                leaves_open: false,
            });
        }
    }
}

#[cfg(test)]
mod tests;
