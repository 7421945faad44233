//! Two shapes compared: what a change did to the document's blocks, HTML and
//! inline marks.

use super::*;

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

pub(super) fn quote(text: &str) -> String {
    let t: String = text.chars().take(60).collect();
    if t.len() < text.len() {
        format!("'{t}…'")
    } else {
        format!("'{t}'")
    }
}

/// Letters and digits only, lower case: the text a reader recognises
/// whatever markers surround it.
pub(super) fn key(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

pub(super) fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (key(a), key(b));
    !a.is_empty() && a == b
}

/// Blocks of `a` and `b` matched in order by kind and depth (longest
/// common subsequence, after the common head and tail): the indexes of
/// the blocks of each side left unmatched.
pub(super) fn unmatched(a: &[Block], b: &[Block]) -> Matching {
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
pub(super) struct Matching {
    /// Blocks of the first shape with no counterpart.
    pub(super) only_before: Vec<usize>,
    /// Blocks of the second shape with no counterpart.
    pub(super) only_after: Vec<usize>,
    /// Counterparts of the same kind and depth whose text differs.
    pub(super) retexted: Vec<(usize, usize)>,
}

/// Blocks whose every character is content an op may not change from
/// outside them: code and HTML.
pub(super) fn verbatim(kind: ShapeKind) -> bool {
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
pub(super) fn block_change(area: Area, what: String) -> ShapeChange {
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
pub(super) fn block_changes(
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
pub(super) fn reshaped(b: &Block, a: &Block) -> ShapeChange {
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
pub(super) fn removed(b: &Block, after: &Shape) -> ShapeChange {
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
pub(super) fn said_once(blocks: Vec<(ShapeKind, ShapeChange)>) -> Vec<ShapeChange> {
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
pub(super) fn quoted_suffix(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(": {}", quote(text))
    }
}

pub(super) fn html_changes(before: &Shape, after: &Shape, out: &mut Vec<ShapeChange>) {
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

pub(super) fn inline_changes(
    before: &InlineCounts,
    after: &InlineCounts,
    out: &mut Vec<ShapeChange>,
) {
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
