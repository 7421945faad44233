//! The project's Vale styles on a document: its prose cut into Vale's
//! scopes (headings by level, paragraphs, list items, blockquotes, table
//! cells), as Vale reads it — the text of the rendered Markdown, without
//! code, link targets, images, HTML, math or front matter — and each
//! rule's alerts turned into findings of the kind `style` on the lines
//! and columns of the source. A `substitution` that offers exactly one
//! replacement for a span of one line gives a certain fix.
//!
//! The blocks come from the same parser, with the same options, as Stage
//! 1's (`koas_md::scan::parser_options`); Stage 1's protected regions
//! (code, math, front matter, HTML) are left out as in every other check.

use crate::document::Document;
use koas_review_schema::findings::{Finding, FindingKind, Fix, FixEdit, Severity};
use koas_review_schema::stage1::BlockKind;
use koas_vale::{Block, CommentSwitches, DocumentCounts, Level, RuleAlert, ScopeKind, Styles};
use pulldown_cmark::{Event, Parser, Tag, TagEnd};

/// The path a document of unknown name is matched as against the
/// `.vale.ini`'s sections: a Markdown file.
pub const UNNAMED_DOCUMENT: &str = "document.md";

/// The document's prose as Vale reads it: the text of each block, one
/// after the other (blocks apart by a blank line, so no pattern runs from
/// one into the next), with where each byte comes from.
#[derive(Debug, Default)]
pub(crate) struct ValeText {
    /// The blocks' text.
    pub text: String,
    /// The source offset of each byte of `text`.
    pub source: Vec<usize>,
    /// The blocks, as spans of `text`.
    pub blocks: Vec<Block>,
    /// Code blocks of the document (Vale's `pre`, for `metric` rules).
    pub code_blocks: usize,
    /// Source ranges no rule reads, sorted and disjoint.
    ignored: Vec<Ignored>,
    /// The start of the block-ignored range that last ended a block.
    split: Option<usize>,
}

/// A source range an ignore pattern matched, and whether a block ignore
/// did (it then ends the block it is in).
type Ignored = (std::ops::Range<usize>, bool);

/// The source ranges the patterns match (`true`: a `BlockIgnores`
/// pattern), sorted by start, merged where they overlap. A pattern that
/// gives up on the text (fancy-regex's backtracking limit) stops there.
fn ignored_ranges(text: &str, ignores: &[(bool, &fancy_regex::Regex)]) -> Vec<Ignored> {
    let mut out: Vec<Ignored> = Vec::new();
    for (block, re) in ignores {
        for m in re.find_iter(text) {
            match m {
                Ok(m) if !m.range().is_empty() => out.push((m.range(), *block)),
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    out.sort_by_key(|(r, _)| r.start);
    // Disjoint: a byte is ignored when the last range starting at or
    // before it holds it.
    let mut merged: Vec<Ignored> = Vec::with_capacity(out.len());
    for (r, block) in out {
        match merged.last_mut() {
            Some((last, b)) if r.start <= last.end => {
                last.end = last.end.max(r.end);
                *b |= block;
            }
            _ => merged.push((r, block)),
        }
    }
    merged
}

impl ValeText {
    /// Reads `doc`'s blocks, leaving out what an `ignores` pattern
    /// matches in the source (`TokenIgnores`, `BlockIgnores`).
    pub fn of(doc: &Document<'_>, ignores: &[(bool, &fancy_regex::Regex)]) -> ValeText {
        let text = doc.stage1.text;
        let mut out = ValeText {
            ignored: ignored_ranges(text, ignores),
            ..ValeText::default()
        };
        let mut open: Option<(ScopeKind, usize)> = None;
        // Containers around the next paragraph: lists and blockquotes.
        let mut containers: Vec<ScopeKind> = Vec::new();
        let mut in_head = false;
        let mut skip = 0u32;
        let mut link: Option<(String, usize)> = None;
        for (event, range) in
            Parser::new_ext(text, koas_md::scan::parser_options()).into_offset_iter()
        {
            match event {
                Event::Start(Tag::Heading { level, .. }) => {
                    out.open(&mut open, ScopeKind::Heading(level as u8));
                }
                Event::Start(Tag::Paragraph) => {
                    let kind = containers.last().copied().unwrap_or(ScopeKind::Paragraph);
                    out.open(&mut open, kind);
                }
                Event::Start(Tag::Item) => {
                    containers.push(ScopeKind::ListItem);
                    // A tight list's item holds its text without a
                    // paragraph.
                    out.open(&mut open, ScopeKind::ListItem);
                }
                Event::Start(Tag::BlockQuote(_)) => containers.push(ScopeKind::Blockquote),
                Event::Start(Tag::TableHead) => in_head = true,
                Event::End(TagEnd::TableHead) => in_head = false,
                Event::Start(Tag::TableCell) => {
                    out.open(&mut open, ScopeKind::TableCell { header: in_head });
                }
                Event::Start(Tag::CodeBlock(_)) => {
                    out.code_blocks += 1;
                    skip += 1;
                }
                Event::Start(
                    Tag::Image { .. }
                    | Tag::HtmlBlock
                    | Tag::MetadataBlock(_)
                    | Tag::FootnoteDefinition(_),
                ) => skip += 1,
                Event::End(
                    TagEnd::CodeBlock
                    | TagEnd::Image
                    | TagEnd::HtmlBlock
                    | TagEnd::MetadataBlock(_)
                    | TagEnd::FootnoteDefinition,
                ) => skip = skip.saturating_sub(1),
                Event::End(TagEnd::Item | TagEnd::BlockQuote(_)) => {
                    containers.pop();
                    out.close(&mut open);
                }
                Event::End(TagEnd::Heading(_) | TagEnd::Paragraph | TagEnd::TableCell) => {
                    out.close(&mut open)
                }
                Event::Text(t) if skip == 0 && open.is_some() => {
                    out.push_text(doc, &t, range, &mut open);
                }
                // A link whose text is its own address: Vale blanks it.
                Event::Start(Tag::Link { dest_url, .. }) if skip == 0 && open.is_some() => {
                    link = Some((dest_url.to_string(), out.text.len()));
                }
                Event::End(TagEnd::Link) => {
                    if let Some((dest, start)) = link.take() {
                        out.blank_if(start, &dest);
                    }
                }
                // Vale reads an emphasis with a space before it
                // (`Klaw **core**` as `Klaw  core`).
                Event::Start(Tag::Emphasis | Tag::Strong | Tag::Strikethrough)
                    if skip == 0 && open.is_some() =>
                {
                    out.text.push(' ');
                    out.source.push(range.start);
                }
                // Vale reads a code span as its backticks blanked and its
                // content as `*`, byte for byte: a rule sees something
                // there, never the code's words.
                Event::Code(_) if skip == 0 && open.is_some() => {
                    out.push_code(doc, range);
                }
                Event::SoftBreak | Event::HardBreak if skip == 0 && open.is_some() => {
                    let at = text[range.clone()]
                        .find('\n')
                        .map_or(range.start, |i| range.start + i);
                    out.text.push('\n');
                    out.source.push(at);
                }
                _ => {}
            }
        }
        out.close(&mut open);
        out
    }

    /// Starts a block of `kind` (closing the one open: a list item's
    /// paragraph is the item's text, not a second block).
    fn open(&mut self, open: &mut Option<(ScopeKind, usize)>, kind: ScopeKind) {
        self.close(open);
        *open = Some((kind, self.text.len()));
    }

    fn close(&mut self, open: &mut Option<(ScopeKind, usize)>) {
        let Some((kind, start)) = open.take() else {
            return;
        };
        if self.text.len() > start && !self.text[start..].trim().is_empty() {
            self.blocks.push(Block {
                kind,
                span: start..self.text.len(),
            });
        }
        // Apart from the next block: no pattern runs across.
        let end = self.source.last().map_or(0, |s| s + 1);
        self.text.push_str("\n\n");
        self.source.extend([end, end]);
    }

    /// Adds a text run: its bytes where the source has them as written
    /// (an escape or an entity maps each byte to the run's start), the
    /// bytes of a protected region (math, a URL, a protected block) left
    /// out.
    fn push_text(
        &mut self,
        doc: &Document<'_>,
        run: &str,
        range: std::ops::Range<usize>,
        open: &mut Option<(ScopeKind, usize)>,
    ) {
        let source = &doc.stage1.text[range.clone()];
        let verbatim = source == run;
        let line = doc.index.line_of(range.start);
        if matches!(doc.block_kind(line), Some(kind) if kind != BlockKind::Table) {
            return;
        }
        let prose = doc.prose(line).unwrap_or(doc.line(line));
        let line_start = doc.index.line_start(line);
        for (i, c) in run.char_indices() {
            let at = if verbatim {
                range.start + i
            } else {
                range.start
            };
            // Inside a range an ignore pattern matched: a token ignore
            // reads as a code span (`*`, so the words around it do not
            // meet); a block ignore ends the block, the text after it
            // is another.
            let after = self.ignored.partition_point(|(r, _)| r.start <= at);
            if let Some((r, block)) = after.checked_sub(1).and_then(|i| self.ignored.get(i)) {
                if r.contains(&at) {
                    if *block {
                        if self.split != Some(r.start) {
                            self.split = Some(r.start);
                            if let Some((kind, _)) = *open {
                                self.open(open, kind);
                            }
                        }
                    } else {
                        self.text.push('*');
                        self.source.push(at);
                    }
                    continue;
                }
            }
            // Blanked in the prose view: an inline protected span.
            let blanked = verbatim
                && at >= line_start
                && prose.as_bytes().get(at - line_start) == Some(&b' ')
                && c != ' ';
            if blanked {
                continue;
            }
            self.text.push(c);
            self.source.extend(std::iter::repeat(at).take(c.len_utf8()));
        }
    }

    /// Blanks the text from `start` on when it is `dest`, a link's own
    /// address (byte for byte, so places stay).
    fn blank_if(&mut self, start: usize, dest: &str) {
        let text = self.text.get(start..).unwrap_or("");
        if text.is_empty() || text.trim() != dest.trim() {
            return;
        }
        let blank = " ".repeat(text.len());
        self.text.replace_range(start.., &blank);
    }

    /// Adds a code span as Vale reads it: a space for each backtick, a
    /// `*` for each other character.
    fn push_code(&mut self, doc: &Document<'_>, range: std::ops::Range<usize>) {
        let line = doc.index.line_of(range.start);
        if matches!(doc.block_kind(line), Some(kind) if kind != BlockKind::Table) {
            return;
        }
        for (i, c) in doc.stage1.text[range.clone()].char_indices() {
            self.text.push(if c == '`' { ' ' } else { '*' });
            self.source.push(range.start + i);
        }
    }

    /// The source span of `span` of the text, and whether it is the
    /// source's bytes one for one (nothing left out inside it).
    fn source_span(&self, span: &std::ops::Range<usize>) -> Option<(std::ops::Range<usize>, bool)> {
        // A whole-document alert (a metric's) is about no span.
        if span.is_empty() {
            let at = self.source.get(span.start).copied().unwrap_or(0);
            return Some((at..at, false));
        }
        let start = *self.source.get(span.start)?;
        let last = *self.source.get(span.end.checked_sub(1)?)?;
        let end = last + self.text[..span.end].chars().next_back()?.len_utf8();
        let contiguous = end - start == span.len()
            && (span.start..span.end).all(|i| self.source[i] == start + (i - span.start));
        Some((start..end, contiguous))
    }
}

/// The findings of the styles' rules that apply to a document at `path`.
pub(crate) fn findings(styles: &Styles, doc: &Document<'_>, path: &str) -> Vec<Finding> {
    let rules = styles.rules_for(path);
    if rules.is_empty() {
        return Vec::new();
    }
    let vale = ValeText::of(doc, &styles.ignores_for(path));
    let source = doc.stage1.text;
    let switches = CommentSwitches::parse(source);
    let counts = DocumentCounts {
        pre: vale.code_blocks,
    };
    let mut out = Vec::new();
    for selected in rules {
        let rule = selected.rule;
        let alerts: Vec<RuleAlert> = if rule.is_raw() {
            // A raw rule reads the source as written.
            rule.check_document(source, &[], &counts)
        } else {
            rule.check_document(&vale.text, &vale.blocks, &counts)
                .into_iter()
                .filter_map(|mut a| {
                    let (span, contiguous) = vale.source_span(&a.span)?;
                    a.span = span;
                    // A span that is not the source's own bytes cannot be
                    // replaced in place.
                    if !contiguous {
                        a.replacements.truncate(0);
                    }
                    Some(a)
                })
                .collect()
        };
        // Vale turns every rule back on for `raw` and `summary` rules.
        let switchable = !rule.is_raw() && !rule.scope.iter().any(|s| s == "summary");
        for alert in alerts {
            if switchable && switches.silences(&alert, source) {
                continue;
            }
            if let Some(f) = finding(doc, &alert, selected.level, rule.extends == "substitution") {
                out.push(f);
            }
        }
    }
    out
}

fn severity(level: Level) -> Severity {
    match level {
        Level::Suggestion => Severity::Info,
        Level::Warning => Severity::Warning,
        Level::Error => Severity::Error,
    }
}

/// One alert as a finding on the source's lines; a substitution with one
/// replacement on one line gets its fix.
fn finding(
    doc: &Document<'_>,
    alert: &RuleAlert,
    level: Level,
    substitution: bool,
) -> Option<Finding> {
    let index = &doc.index;
    let text = doc.stage1.text;
    if alert.span.end > text.len() || !text.is_char_boundary(alert.span.start) {
        return None;
    }
    let line = index.line_of(alert.span.start);
    let line_end = index.last_line_of(alert.span.start, alert.span.end.max(alert.span.start + 1));
    let line_start = index.line_start(line);
    let raw = doc.line(line);
    let column = doc.column(line, alert.span.start - line_start);
    let mut f = Finding::new(
        FindingKind::Style,
        koas_project::LANGUAGE_KERNEL,
        line,
        line_end,
        alert.message.clone(),
        raw,
    )
    .of_rule(alert.rule.clone(), alert.link.clone());
    f.severity = severity(level);
    if line_end == line {
        let column_end = doc.column(line, alert.span.end - line_start);
        f = f
            .at_span(column, column_end)
            .with_suggestions(alert.replacements.clone());
        if substitution && alert.replacements.len() == 1 {
            let (s, e) = (alert.span.start - line_start, alert.span.end - line_start);
            let replacement = &alert.replacements[0];
            if !doc.is_heading(line) && certain(raw, s, e, replacement) {
                let after = format!("{}{replacement}{}", &raw[..s], &raw[e..]);
                f = f.with_fix(Fix {
                    description: format!("{}: '{}' → '{replacement}'", alert.rule, &raw[s..e]),
                    edits: vec![FixEdit {
                        line,
                        before: raw.to_owned(),
                        after: Some(after),
                    }],
                });
            }
        }
    } else {
        f = f.at_column(column);
    }
    Some(f)
}

/// Whether replacing `raw[s..e]` by `replacement` is certainly right:
/// one word (a phrase's swap depends on the sentence: "we have to" is no
/// "we've to"), between letters or digits (a match that takes a space or
/// a stop would drop it), not inside a file, host or path name, nor in
/// emphasis (a UI label is quoted as written), not a choice ("a or b"),
/// not lowering a capital that may start a sentence, and not a lower-case
/// word made all capitals (a vocabulary's `COPY` is no fix of the verb). (Never in a heading either: its words make its anchor.)
fn certain(raw: &str, s: usize, e: usize, replacement: &str) -> bool {
    let (Some(matched), Some(before), Some(after)) = (raw.get(s..e), raw.get(..s), raw.get(e..))
    else {
        return false;
    };
    let bounded = |t: &str| {
        t.chars().next().is_some_and(char::is_alphanumeric)
            && t.chars().next_back().is_some_and(char::is_alphanumeric)
    };
    let lowered = matched.chars().next().is_some_and(char::is_uppercase)
        && replacement.chars().next().is_some_and(char::is_lowercase);
    // A lower-case word made all capitals: a keyword's spelling (`COPY`),
    // no fix of the word; a name's capital (`amplitude` → `Amplitude`) is.
    let case_only = matched.to_lowercase() == replacement.to_lowercase()
        && !matched.chars().any(char::is_uppercase)
        && replacement.chars().filter(|c| c.is_alphabetic()).count() > 1
        && !replacement.chars().any(char::is_lowercase);
    let emphasised = before.ends_with(['*', '_'])
        || after.starts_with(['*', '_'])
        || before.matches("**").count() % 2 == 1
        || before.matches("__").count() % 2 == 1;
    bounded(matched)
        && !matched.chars().any(char::is_whitespace)
        && !replacement.is_empty()
        && !replacement.contains(['\n', '\r'])
        && !replacement.contains(" or ")
        && !lowered
        && !case_only
        && !emphasised
        && !crate::words::in_identifier(raw, s, e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;
    use koas_vale::ValeSources;

    fn styles(rules: &[(&str, &str)]) -> Styles {
        let sources = ValeSources {
            ini_path: ".vale.ini".into(),
            ini: "StylesPath = styles\n[*.md]\nBasedOnStyles = Team\n".into(),
            styles_path: "styles".into(),
            rules: rules
                .iter()
                .map(|(n, y)| (n.to_string(), y.to_string()))
                .collect(),
            vocab: Default::default(),
        };
        Styles::compile(&sources).expect("compiles")
    }

    fn run(styles: &Styles, text: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        findings(styles, &doc, "x.md")
    }

    const UTILIZE: &str = "extends: substitution\nmessage: \"Use '%s' instead of '%s'.\"\nlevel: warning\nlink: https://example.com/use\naction:\n  name: replace\nswap:\n  utilize: use\n  leverage: use|apply\n";

    #[test]
    fn blocks_are_the_rendered_text_without_code_links_or_markup() {
        let text = "---\ntitle: utilize\n---\n\n# Heading *one*\n\nSee [the guide](https://x.org/utilize) and `utilize` now.\n\n- item **two**\n- item three\n\n> quoted\n\n| a | b |\n|---|---|\n| c | d |\n\n```\nutilize\n```\n";
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let vale = ValeText::of(&doc, &[]);
        let blocks: Vec<(ScopeKind, &str)> = vale
            .blocks
            .iter()
            .map(|b| (b.kind, &vale.text[b.span.clone()]))
            .collect();
        assert_eq!(
            blocks,
            [
                (ScopeKind::Heading(1), "Heading  one"),
                (ScopeKind::Paragraph, "See the guide and  *******  now."),
                (ScopeKind::ListItem, "item  two"),
                (ScopeKind::ListItem, "item three"),
                (ScopeKind::Blockquote, "quoted"),
                (ScopeKind::TableCell { header: true }, "a"),
                (ScopeKind::TableCell { header: true }, "b"),
                (ScopeKind::TableCell { header: false }, "c"),
                (ScopeKind::TableCell { header: false }, "d"),
            ]
        );
    }

    #[test]
    fn a_fix_is_certain_only_for_one_plain_word_in_running_prose() {
        let ok = |raw: &str, word: &str, by: &str| {
            let s = raw.find(word).expect("in the line");
            certain(raw, s, s + word.len(), by)
        };
        assert!(ok("We utilize it.", "utilize", "use"));
        assert!(ok("Javascript is fine.", "Javascript", "JavaScript"));
        assert!(!ok("We have to go.", "We have", "We've"), "a phrase");
        assert!(
            !ok("E.g. the sum", "E.g. ", "For example"),
            "takes a space and a stop"
        );
        assert!(
            !ok("Set application.properties now.", "application", "app"),
            "a file name"
        );
        assert!(
            !ok("Select **Kafka** there.", "Kafka", "Apache Kafka"),
            "a bold label"
        );
        assert!(
            !ok("Select **the Kafka tab** there.", "Kafka", "Apache Kafka"),
            "inside bold"
        );
        assert!(
            !ok("Run the copy step.", "copy", "COPY"),
            "a word made a keyword"
        );
        assert!(
            ok("Ask amplitude.", "amplitude", "Amplitude"),
            "a name's capital"
        );
        assert!(!ok("Email us.", "Email", "email"), "a capital lowered");
        assert!(
            !ok(
                "A salesperson.",
                "salesperson",
                "salesperson or sales people"
            ),
            "a choice"
        );
    }

    #[test]
    fn token_ignores_leave_their_matches_unread() {
        let text = "# T\n\nWe utilize {{< utilize >}} here.\n";
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let re = fancy_regex::Regex::new(r"\{\{<[^>]*>\}\}").expect("pattern");
        let vale = ValeText::of(&doc, &[(false, &re)]);
        let para = &vale.blocks[1];
        assert_eq!(
            &vale.text[para.span.clone()],
            "We utilize *************** here."
        );
    }

    #[test]
    fn a_single_swap_is_a_certain_fix_on_the_source_line_and_options_are_hints() {
        let styles = styles(&[("Team.Use", UTILIZE)]);
        let found = run(
            &styles,
            "# T\n\nWe utilize it, and leverage `utilize` here.\n\nWe *utilize* it.\n",
        );
        assert_eq!(found.len(), 3, "{found:#?}");
        let first = &found[0];
        assert_eq!(first.kind, FindingKind::Style);
        assert_eq!(first.kind_name(), "Team.Use");
        assert_eq!(first.severity, Severity::Warning);
        assert_eq!(
            (first.line, first.column, first.column_end),
            (3, 4, Some(11))
        );
        assert_eq!(first.link.as_deref(), Some("https://example.com/use"));
        let fix = first.fix.as_ref().expect("one replacement: certain");
        assert_eq!(
            fix.edits[0].after.as_deref(),
            Some("We use it, and leverage `utilize` here.")
        );
        let second = &found[1];
        assert!(second.fix.is_none(), "two options: a hint");
        assert_eq!(second.suggestions, ["use", "apply"]);
        // In emphasis (often a label quoted as written): a hint.
        let third = &found[2];
        assert_eq!((third.line, third.column), (5, 5));
        assert!(third.fix.is_none(), "{third:#?}");
    }
}
