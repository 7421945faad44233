//! One pass of the CommonMark/GFM parser collecting what the text checks
//! need beyond Stage 1: paragraphs (with their plain text), in-document
//! links, and anchors that are not in the anchor map (HTML `id`/`name`
//! attributes, headings nested in block quotes or lists).

use crate::document::Document;
use koas_md::LineIndex;
use koas_review_schema::stage1::{BlockKind, LineNo};
use pulldown_cmark::{Event, LinkType, Parser, Tag, TagEnd};
use regex::Regex;
use std::collections::HashSet;
use std::sync::LazyLock;

/// A paragraph and its plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paragraph {
    /// First line (1-based).
    pub line_start: LineNo,
    /// Last line (inclusive).
    pub line_end: LineNo,
    /// The text without inline markup; soft and hard breaks become spaces.
    pub text: String,
    /// `true` inside a list item (list items are not compared as paragraphs).
    pub in_list: bool,
    /// Characters of `text` that come from code spans.
    pub code_chars: usize,
}

/// A link whose destination starts with `#`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FragmentLink {
    /// Line of the link's first character.
    pub line: LineNo,
    /// Last line of the link.
    pub line_end: LineNo,
    /// The fragment without `#`, as written.
    pub fragment: String,
    /// The link's source text, e.g. `[retry rules](#retry-policy)`.
    pub source: String,
    /// Byte offset of the link's first character in the document.
    pub offset: usize,
}

/// A link or image whose destination is not a fragment of this document
/// (`[guide](setup.md#install)`, `![plan](img/plan.png)`, a URL): which
/// of them are relative paths is for the link check to tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLink {
    /// Line of the link's first character.
    pub line: LineNo,
    /// Last line of the link.
    pub line_end: LineNo,
    /// The destination as the parser reads it (escapes resolved, `<>`
    /// taken off, a reference link's definition looked up).
    pub destination: String,
    /// The link's source text, e.g. `[guide](setup.md#install)`.
    pub source: String,
    /// Byte offset of the link's first character in the document.
    pub offset: usize,
    /// `true` for an image.
    pub image: bool,
}

/// A list and how many items it has (its own, not those of lists nested
/// in them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListFact {
    /// Line of the first item's marker.
    pub line_start: LineNo,
    /// Last line of the list.
    pub line_end: LineNo,
    /// Number of items.
    pub items: usize,
}

/// What the parser pass collects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MarkdownFacts {
    /// Paragraphs in document order.
    pub paragraphs: Vec<Paragraph>,
    /// Same-document links (`#fragment`), in document order.
    pub fragment_links: Vec<FragmentLink>,
    /// Links and images to anything else (other files, URLs), in document
    /// order of their end.
    pub file_links: Vec<FileLink>,
    /// Anchors defined outside the anchor map: HTML `id`/`name` attributes
    /// and slugs of headings nested in containers.
    pub extra_anchors: HashSet<String>,
    /// Lists in document order of their first line.
    pub lists: Vec<ListFact>,
}

/// An explicit heading ID (`## Title {#custom-id}`): kramdown, Pandoc,
/// mdBook and MkDocs give the heading that anchor.
static HEADING_ID: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\{[^{}]*#([^\s{}#]+)[^{}]*\}\s*#*\s*$").ok());

/// Compiles ahead the ID regexes `text` may need.
pub(crate) fn warm<'a>(text: &'a str, jobs: &mut Vec<crate::gate::Warm<'a>>) {
    if text.contains('{') {
        jobs.push(Box::new(|| {
            LazyLock::force(&HEADING_ID);
        }));
        jobs.push(Box::new(|| {
            LazyLock::force(&ATTR_ID);
        }));
    }
}

/// The explicit ID of a heading's text, if it has one.
pub fn heading_id(text: &str) -> Option<&str> {
    HEADING_ID
        .as_ref()?
        .captures(text)?
        .get(1)
        .map(|m| m.as_str())
}

/// An ID set by an attribute list anywhere in the text: `{#id}`,
/// `{: #id .class}` (kramdown's IAL, also on the line under a heading or
/// a paragraph), `{ id=id }` / `{ id="id" }` (MkDocs attr_list, Pandoc),
/// after a heading, a paragraph, an image or a bracketed span. Each names
/// an anchor the rendered page has, though no heading text makes it.
static ATTR_ID: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r#"\{:?[ \t]*(?:[^{}%]*?[ \t])?(?:#([A-Za-z][^ \t{}"'=#]*)|id[ \t]*=[ \t]*(?:"([^"{}\s]+)"|'([^'{}\s]+)'|([A-Za-z][^ \t{}"'=#]*)))[^{}]*\}"#,
    )
    .ok()
});

// No `\w` or `\s` above: their Unicode tables make the regex cost more to
// compile than `koas check` spends on a whole small document.

/// The IDs the attribute lists of `line` set.
pub fn attribute_ids(line: &str) -> Vec<&str> {
    if !line.contains('{') {
        return Vec::new();
    }
    let Some(re) = ATTR_ID.as_ref() else {
        return Vec::new();
    };
    re.captures_iter(line)
        .filter_map(|c| (1..=4).find_map(|i| c.get(i)))
        .map(|m| m.as_str())
        .collect()
}

/// A MyST target (`(install-guide)=` on a line of its own): the anchor of
/// the heading or block under it.
pub fn myst_label(line: &str) -> Option<&str> {
    let label = line.trim().strip_prefix('(')?.strip_suffix(")=")?;
    (!label.is_empty() && !label.contains(|c: char| c.is_whitespace() || c == '(' || c == ')'))
        .then_some(label)
}

static HTML_ID: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"(?i)\b(?:id|name)\s*=\s*["']([^"']+)["']"#).ok());

/// Where the Markdown body starts: after a front matter block on line 1,
/// else after the BOM.
fn body_start(doc: &Document<'_>) -> usize {
    doc.stage1
        .protected
        .blocks
        .iter()
        .find(|b| {
            b.line_start == 1
                && matches!(
                    b.kind,
                    BlockKind::YamlFrontMatter | BlockKind::TomlFrontMatter
                )
        })
        .map_or(doc.index.bom_len(), |b| {
            doc.index.line_end_with_ending(b.line_end)
        })
}

/// Collects paragraphs, fragment links and extra anchors.
pub fn collect(doc: &Document<'_>) -> MarkdownFacts {
    collect_with(doc, None)
}

/// What the parser alone tells of a text (its paragraphs, fragment links,
/// lists, and the anchors of its HTML and nested headings), with the
/// offset where its body was taken to start: read by a [`FactsReader`]
/// from Stage 1's parse.
pub struct ParsedFacts {
    base: usize,
    facts: MarkdownFacts,
}

/// Like [`collect`], with the parser's part read ahead: used when its
/// body starts where the document's does (else read again, so that the
/// facts are always those of the document).
pub fn collect_with(doc: &Document<'_>, parsed: Option<ParsedFacts>) -> MarkdownFacts {
    let base = body_start(doc);
    let mut facts = match parsed.filter(|p| p.base == base) {
        Some(p) => p.facts,
        None => event_facts(&doc.index, base),
    };
    for section in &doc.stage1.sections.sections {
        if let Some(id) = heading_id(doc.line(section.line_start)) {
            facts.extra_anchors.insert(id.to_string());
        }
    }
    // Attribute lists outside code, math and front matter: IDs of
    // headings, paragraphs, images and spans.
    for line in 1..=doc.line_count() {
        let hidden = matches!(
            doc.block_kind(line),
            Some(
                BlockKind::CodeFence
                    | BlockKind::IndentedCode
                    | BlockKind::MathBlock
                    | BlockKind::YamlFrontMatter
                    | BlockKind::TomlFrontMatter
            )
        );
        if !hidden {
            let text = doc.line(line);
            for id in attribute_ids(text) {
                facts.extra_anchors.insert(id.to_string());
            }
            if let Some(label) = myst_label(text) {
                facts.extra_anchors.insert(label.to_string());
            }
        }
    }
    // A MyST directive (a fence opened with ```{name}) names its block
    // with a `:name:` or `:label:` option.
    for block in &doc.stage1.protected.blocks {
        if block.kind != BlockKind::CodeFence {
            continue;
        }
        let opener = doc.line(block.line_start).trim_start();
        if !(opener.starts_with("```{") || opener.starts_with("~~~{") || opener.starts_with(":::{"))
        {
            continue;
        }
        for line in block.line_start + 1..=block.line_end {
            let text = doc.line(line).trim();
            let value = text
                .strip_prefix(":name:")
                .or_else(|| text.strip_prefix(":label:"))
                .map(str::trim);
            if let Some(id) = value.filter(|v| !v.is_empty() && !v.contains(char::is_whitespace)) {
                facts.extra_anchors.insert(id.to_string());
            }
            if !text.starts_with(':') && !text.is_empty() {
                // Options come first; the body starts at the first other line.
                break;
            }
        }
    }
    facts
}

/// The facts of the parser's events over the body starting at `base`.
fn event_facts(index: &LineIndex<'_>, base: usize) -> MarkdownFacts {
    let body = index.text().get(base..).unwrap_or("");
    let mut reader = FactsReader::default();
    for (event, range) in Parser::new_ext(body, koas_md::scan::parser_options()).into_offset_iter()
    {
        reader.read(index, &event, (base + range.start)..(base + range.end));
    }
    reader.into_facts()
}

/// Reads [`ParsedFacts`] from a parse's events, one at a time: fed by
/// [`crate::stage1::Stage1Artifacts::compute_observed`], the facts cost no
/// parse of their own.
#[derive(Debug, Default)]
pub struct FactsReader {
    /// Where the body the events come from starts (known at the first).
    base: Option<usize>,
    facts: MarkdownFacts,
    containers: usize,
    list_depth: usize,
    paragraph: Option<(usize, String, usize)>,
    nested_heading: Option<String>,
    link: Option<(usize, String)>,
    /// The open link to another file (`false`) and image (`true`), with
    /// where each starts and its destination: an image may sit inside a
    /// link.
    file_link: Vec<(usize, String, bool)>,
    lists: Vec<(usize, usize)>,
}

impl FactsReader {
    /// Reads one event of the body of `index`'s text, `range` being its
    /// place in the whole text.
    pub fn read(
        &mut self,
        index: &LineIndex<'_>,
        event: &Event<'_>,
        range: std::ops::Range<usize>,
    ) {
        self.base.get_or_insert_with(|| {
            use koas_md::front_matter::{body_start, detect};
            body_start(index, detect(index).as_ref())
        });
        match event {
            Event::Start(tag) => self.start(tag, range.start),
            Event::End(tag) => self.end(index, *tag, range.end),
            Event::Code(t) => {
                if let Some((_, p, code)) = self.paragraph.as_mut() {
                    p.push_str(t);
                    *code += t.chars().count();
                }
                if let Some(h) = self.nested_heading.as_mut() {
                    h.push_str(t);
                }
            }
            Event::Text(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                if let Some((_, p, _)) = self.paragraph.as_mut() {
                    p.push_str(t);
                }
                if let Some(h) = self.nested_heading.as_mut() {
                    h.push_str(t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, p, _)) = self.paragraph.as_mut() {
                    p.push(' ');
                }
                if let Some(h) = self.nested_heading.as_mut() {
                    h.push(' ');
                }
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                if let Some(re) = HTML_ID.as_ref() {
                    for c in re.captures_iter(t) {
                        if let Some(m) = c.get(1) {
                            self.facts.extra_anchors.insert(m.as_str().to_string());
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Reads the start of `tag`, at byte `start` of the whole text.
    fn start(&mut self, tag: &Tag<'_>, start: usize) {
        match tag {
            Tag::BlockQuote(_) | Tag::FootnoteDefinition(_) => self.containers += 1,
            Tag::List(_) => self.lists.push((start, 0)),
            Tag::Item => {
                self.list_depth += 1;
                if let Some((_, items)) = self.lists.last_mut() {
                    *items += 1;
                }
            }
            Tag::Paragraph => self.paragraph = Some((start, String::new(), 0)),
            Tag::Heading { .. } if self.containers + self.list_depth > 0 => {
                self.nested_heading = Some(String::new())
            }
            Tag::Link {
                dest_url,
                link_type,
                ..
            } => {
                if let Some(fragment) = dest_url.strip_prefix('#') {
                    self.link = Some((start, fragment.to_string()));
                } else if !dest_url.is_empty()
                    // `<https://…>` and `<name@host>` are URLs, not paths.
                    && !matches!(link_type, LinkType::Autolink | LinkType::Email)
                {
                    self.file_link.push((start, dest_url.to_string(), false));
                }
            }
            Tag::Image { dest_url, .. } if !dest_url.is_empty() => {
                self.file_link.push((start, dest_url.to_string(), true));
            }
            _ => {}
        }
    }

    /// Reads the end of `tag`, the element ending at byte `end` of the
    /// whole text.
    fn end(&mut self, index: &LineIndex<'_>, tag: TagEnd, end: usize) {
        let text = index.text();
        let facts = &mut self.facts;
        match tag {
            TagEnd::BlockQuote(_) | TagEnd::FootnoteDefinition => {
                self.containers = self.containers.saturating_sub(1)
            }
            TagEnd::List(_) => {
                if let Some((l_start, items)) = self.lists.pop() {
                    facts.lists.push(ListFact {
                        line_start: index.line_of(l_start),
                        line_end: index.last_line_of(l_start, end),
                        items,
                    });
                }
            }
            TagEnd::Item => self.list_depth = self.list_depth.saturating_sub(1),
            TagEnd::Paragraph => {
                if let Some((p_start, p_text, code_chars)) = self.paragraph.take() {
                    facts.paragraphs.push(Paragraph {
                        line_start: index.line_of(p_start),
                        line_end: index.last_line_of(p_start, end),
                        text: p_text,
                        in_list: self.list_depth > 0,
                        code_chars,
                    });
                }
            }
            TagEnd::Heading(_) => {
                if let Some(title) = self.nested_heading.take() {
                    if let Some(id) = heading_id(&title) {
                        facts.extra_anchors.insert(id.to_string());
                    }
                    facts
                        .extra_anchors
                        .insert(koas_md::slug::github_slug(title.trim()));
                }
            }
            TagEnd::Image | TagEnd::Link
                if (tag == TagEnd::Image || self.link.is_none())
                    && self
                        .file_link
                        .last()
                        .is_some_and(|(_, _, image)| *image == (tag == TagEnd::Image)) =>
            {
                if let Some((l_start, destination, image)) = self.file_link.pop() {
                    facts.file_links.push(FileLink {
                        line: index.line_of(l_start),
                        line_end: index.last_line_of(l_start, end),
                        destination,
                        source: text.get(l_start..end).unwrap_or("").to_string(),
                        offset: l_start,
                        image,
                    });
                }
            }
            TagEnd::Link => {
                if let Some((l_start, fragment)) = self.link.take() {
                    facts.fragment_links.push(FragmentLink {
                        line: index.line_of(l_start),
                        line_end: index.last_line_of(l_start, end),
                        fragment,
                        source: text.get(l_start..end).unwrap_or("").to_string(),
                        offset: l_start,
                    });
                }
            }
            _ => {}
        }
    }

    /// The facts read, with the body's start (`None` when no event was
    /// read: the caller reads the text itself then).
    pub fn finish(self) -> Option<ParsedFacts> {
        let base = self.base?;
        Some(ParsedFacts {
            base,
            facts: self.into_facts(),
        })
    }

    fn into_facts(self) -> MarkdownFacts {
        let mut facts = self.facts;
        facts.lists.sort_by_key(|l| l.line_start);
        facts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;

    #[test]
    fn myst_targets_are_anchors() {
        assert_eq!(myst_label("(code:myst-yml)="), Some("code:myst-yml"));
        assert_eq!(myst_label("  (install)=  "), Some("install"));
        for line in ["(a b)=", "()=", "(x)", "see (x)= here", "((x))="] {
            assert_eq!(myst_label(line), None, "{line}");
        }
    }

    #[test]
    fn attribute_lists_set_ids() {
        for (line, ids) in [
            ("### Title { id=custom-id }", vec!["custom-id"]),
            ("### Title { id=\"quoted-id\" .wide }", vec!["quoted-id"]),
            // A quoted ID may start with a digit (a version's heading).
            (
                "### 9.7.0 <small>November 11, 2025</small> { id=\"9.7.0\" }",
                vec!["9.7.0"],
            ),
            ("## Title {#kram}", vec!["kram"]),
            ("{: #next-line-ial .note}", vec!["next-line-ial"]),
            ("{: .note #after-class}", vec!["after-class"]),
            ("![Plan](plan.png){ #fig-plan width=50% }", vec!["fig-plan"]),
            (
                "A [span]{#span-id} and [other]{ #two }.",
                vec!["span-id", "two"],
            ),
        ] {
            assert_eq!(attribute_ids(line), ids, "{line}");
        }
        for line in [
            "{% include note.html id=\"x\" %}",
            "{{ page.title }}",
            "a set {#1, #2}",
            "C# is {x#y}",
            "no braces #here",
        ] {
            assert!(attribute_ids(line).is_empty(), "{line}");
        }
    }

    #[test]
    fn collects_paragraphs_links_and_extra_anchors() {
        let text = "---\ntitle: x\n---\n\n# Top\n\nFirst *para*\nline two.\n\n- item para\n\n- second item\n\n\
                    See [r](#retry) and [t](#top).\n\n<a id=\"custom\"></a>\n\n> ## Quoted Head\n";
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let facts = collect(&doc);
        let first = &facts.paragraphs[0];
        assert_eq!((first.line_start, first.line_end), (7, 8));
        assert_eq!(first.text, "First para line two.");
        assert!(facts
            .paragraphs
            .iter()
            .any(|p| p.in_list && p.text == "item para"));
        let frags: Vec<_> = facts
            .fragment_links
            .iter()
            .map(|l| l.fragment.as_str())
            .collect();
        assert_eq!(frags, ["retry", "top"]);
        assert_eq!(facts.fragment_links[0].line, 14);
        assert_eq!(facts.fragment_links[0].source, "[r](#retry)");
        assert!(facts.extra_anchors.contains("custom"));
        assert!(facts.extra_anchors.contains("quoted-head"));
        assert!(facts.paragraphs.iter().all(|p| !p.text.contains("title")));
        let lists: Vec<(u32, usize)> = facts
            .lists
            .iter()
            .map(|l| (l.line_start, l.items))
            .collect();
        assert_eq!(lists, [(10, 2)]);
    }

    /// Facts read from Stage 1's parse, as `koas check` reads them, are
    /// those of a parse of their own.
    fn facts_of_both_parses(text: &str) -> (Option<ParsedFacts>, ParsedFacts) {
        let mut reader = FactsReader::default();
        crate::stage1::Stage1Artifacts::compute_observed(
            text,
            koas_review_schema::stage1::ChunkConfig::default(),
            |index, event, range| reader.read(index, event, range),
        );
        let index = LineIndex::new(text);
        let base = koas_md::front_matter::body_start(
            &index,
            koas_md::front_matter::detect(&index).as_ref(),
        );
        let own = ParsedFacts {
            base,
            facts: event_facts(&index, base),
        };
        (reader.finish(), own)
    }

    #[test]
    fn facts_read_from_stage_1_are_those_of_a_parse_of_their_own() {
        let text = "\u{feff}---\ntitle: x\n---\n# Top\n\n> ## Quoted {#q}\n\n- item [a](#top)\n- `code` two\n\n<div id=\"h\">\n\n1. one\n   1. nested\n";
        let (read, own) = facts_of_both_parses(text);
        let read = read.expect("events were read");
        assert_eq!(read.base, own.base);
        assert_eq!(read.facts, own.facts);
        assert_eq!(read.facts.fragment_links.len(), 1);
        assert_eq!(read.facts.lists.len(), 3);
        assert!(read.facts.extra_anchors.contains("h"));
        assert!(read.facts.extra_anchors.contains("q"));
        // No body, no event: the caller parses (nothing) itself.
        assert!(facts_of_both_parses("").0.is_none());
    }

    proptest::proptest! {
        #[test]
        fn facts_from_stage_1_equal_a_parse_of_their_own(
            lines in proptest::collection::vec(
                proptest::sample::select(vec![
                    "---", "title: x", "# T", "> ## Q {#q}", "- item [a](#t)", "  - sub",
                    "1. one", "`c` text", "<a id=\"i\">", "$x$", "    code", "```",
                    "| a | b |", "|---|---|", "[^1]: note", "para *em*", "", "\u{feff}x",
                ]),
                0..14,
            ),
        ) {
            let text = lines.join("\n");
            let (read, own) = facts_of_both_parses(&text);
            if let Some(read) = read {
                proptest::prop_assert_eq!(read.base, own.base);
                proptest::prop_assert_eq!(read.facts, own.facts);
            } else {
                proptest::prop_assert_eq!(own.facts, MarkdownFacts::default());
            }
        }
    }
}
