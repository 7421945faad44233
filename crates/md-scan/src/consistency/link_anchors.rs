//! Broken link fragments: `[x](#anchor)` where no heading of the document
//! has that anchor (nor an explicit heading ID `{#id}`, an HTML
//! `id`/`name`, a heading nested in a quote or list, or an anchor the
//! project declares with `extra_anchors`). The comparison ignores case and
//! percent-encoding, as browsers and GitHub resolve them. Links in table
//! cells are checked too.
//!
//! When exactly one anchor of the document is close to the broken one (the
//! same words under another number, or one ending with the other), the
//! finding carries the fix that points the link there: a renamed section.

use super::close_anchors::CloseAnchors;
use super::KERNEL;
use crate::budget::Budget;
use crate::document::Document;
use crate::markdown::{FragmentLink, MarkdownFacts};
use crate::ScanError;
use koas_review_schema::findings::{Finding, FindingKind, Fix, FixEdit};
use koas_review_schema::stage1::BlockKind;
use regex::Regex;
use std::sync::LazyLock;

/// Decodes `%XX` escapes (invalid ones are kept as written).
pub(crate) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(v) = u8::from_str_radix(s.get(i + 1..i + 3).unwrap_or(""), 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

/// The anchors a project declares to exist on the rendered page although
/// no heading of the file has them (`*` matches any run of characters).
pub struct ExtraAnchors(Option<Regex>);

impl ExtraAnchors {
    /// Compiles `extra_anchors` patterns into one case-insensitive regex.
    pub fn new(patterns: &[String]) -> Result<Self, ScanError> {
        if patterns.is_empty() {
            return Ok(ExtraAnchors(None));
        }
        let alternatives: Vec<String> = patterns
            .iter()
            .map(|p| {
                let p = p.trim().trim_start_matches('#');
                regex::escape(p).replace("\\*", ".*")
            })
            .collect();
        let pattern = format!("(?i)^(?:{})$", alternatives.join("|"));
        Regex::new(&pattern)
            .map(|re| ExtraAnchors(Some(re)))
            .map_err(|e| ScanError::InvalidPattern {
                key: "extra_anchors".into(),
                pattern,
                reason: e.to_string(),
            })
    }

    pub(crate) fn contains(&self, anchor: &str) -> bool {
        self.0.as_ref().is_some_and(|re| re.is_match(anchor))
    }
}

/// Links in these blocks are not links (code, math, HTML, front matter):
/// only tables hold checkable links.
/// A text directive (`:dfn[label]`, `:abbr[label]{title=…}`) of
/// generic-directive Markdown renders as its label.
static TEXT_DIRECTIVE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r":[A-Za-z][A-Za-z0-9_-]*\[([^\]]*)\](?:\{[^}]*\})?").ok());

/// A content tab of MkDocs' pymdownx.tabbed: `=== "Label"`.
static CONTENT_TAB: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"^[ \t]*===[+!]?[ \t]+"([^"]*)""#).ok());

/// The slug most site generators other than GitHub write: lower case,
/// every run of other characters than letters and digits one hyphen,
/// none at either end ("Bitswap 1.2.0" → `bitswap-1-2-0`, "HEAD
/// /ipfs/{cid}" → `head-ipfs-cid`).
fn hyphen_slug(text: &str) -> String {
    let mut slug = String::with_capacity(text.len());
    let mut gap = false;
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            if gap && !slug.is_empty() {
                slug.push('-');
            }
            gap = false;
            slug.push(c);
        } else {
            gap = true;
        }
    }
    slug
}

/// Anchors a site generator makes that GitHub does not, each with what
/// makes it: headings slugged with punctuation as hyphens or with their
/// text directives rendered (`(anchor, heading title)`), and content
/// tabs (`section-anchor--tab-label`, which MkDocs writes silently).
struct GeneratorAnchors {
    slugged: std::collections::HashMap<String, String>,
    tabs: std::collections::HashSet<String>,
    /// HTML comment lines: a macro there (`<!-- md:option type:abstract
    /// -->`) may make the anchor its argument names.
    comments: Vec<(u32, String)>,
    /// mkdocstrings' `::: package.module` lines (in lower case): the
    /// anchors of the object and of everything in it.
    objects: std::collections::HashMap<String, u32>,
    /// `fn:label` and `fnref:label` of each footnote definition
    /// (Python-Markdown's anchors; GitHub's are `fn-label`).
    footnotes: std::collections::HashMap<String, u32>,
    /// The first line that pulls other text in (an include) or has a
    /// plugin write content at build time: the page then has anchors no
    /// reading of its own text can list.
    pulled: Option<(u32, String)>,
}

/// Each anchor a generator makes of a heading's title (GitHub's,
/// hyphenated, rendered text directives, without accents), with that
/// title.
fn slugged_titles(doc: &Document<'_>) -> std::collections::HashMap<String, String> {
    let mut slugged = std::collections::HashMap::new();
    for s in &doc.stage1.sections.sections {
        let rendered = match TEXT_DIRECTIVE.as_ref() {
            Some(re) if s.title.contains(':') && s.title.contains('[') => {
                re.replace_all(&s.title, "$1").into_owned()
            }
            _ => s.title.clone(),
        };
        for anchor in [
            hyphen_slug(&s.title),
            hyphen_slug(&rendered),
            koas_md::slug::github_slug(&rendered),
            // Sphinx (docutils) writes accented letters without
            // their accents: "Données" → `donnees`.
            hyphen_slug(&without_accents(&rendered)),
        ] {
            if !anchor.is_empty() {
                slugged.entry(anchor).or_insert_with(|| s.title.clone());
            }
        }
    }
    slugged
}

impl GeneratorAnchors {
    fn collect(doc: &Document<'_>) -> Self {
        let slugged = slugged_titles(doc);
        let mut tabs = std::collections::HashSet::new();
        let mut comments = Vec::new();
        let mut objects = std::collections::HashMap::new();
        let mut pulled = None;
        let mut footnotes = std::collections::HashMap::new();
        for line in 1..=doc.line_count() {
            let text = doc.line(line);
            // A macro comment may stand alone or make a heading's text
            // (`#### <!-- md:setting config.blog_dir -->`).
            if text.contains("<!--") {
                comments.push((line, text.to_lowercase()));
                if text.trim_start().starts_with("<!--") {
                    continue;
                }
            }
            let trimmed = text.trim_start();
            // MyST's include directive is a fence.
            if trimmed.starts_with("```{include}") || trimmed.starts_with(":::{include}") {
                pulled.get_or_insert((line, trimmed.to_string()));
            }
            if doc.block_kind(line).is_some() {
                continue;
            }
            if let Some(found) = MKDOCSTRINGS.as_ref().and_then(|re| re.captures(text)) {
                if let Some(object) = found.get(1) {
                    let object = object.as_str();
                    if object.contains('-') {
                        // A plugin's block (`::: mkdocs-click`): content
                        // made at build time.
                        pulled.get_or_insert((line, trimmed.to_string()));
                    } else {
                        objects.entry(object.to_lowercase()).or_insert(line);
                    }
                }
                continue;
            }
            // A template expression alone on its line (`{{ pydantic_settings }}`
            // of mkdocs-macros) writes content there at build time.
            let expression = trimmed.starts_with("{{") && trimmed.trim_end().ends_with("}}");
            if expression || INCLUDE.iter().any(|marker| trimmed.starts_with(marker)) {
                pulled.get_or_insert((line, trimmed.to_string()));
                continue;
            }
            if let Some(label) = footnote_label(text) {
                for anchor in [format!("fn:{label}"), format!("fnref:{label}")] {
                    footnotes.insert(anchor, line);
                }
                continue;
            }
            if !text.trim_start().starts_with("===") {
                continue;
            }
            let Some(label) = CONTENT_TAB
                .as_ref()
                .and_then(|re| re.captures(text))
                .and_then(|c| c.get(1))
            else {
                continue;
            };
            // An icon shortcode in the label (`:octicons-image-16: Image`)
            // renders as an icon, not as words of the anchor.
            let words = ICON_SHORTCODE.as_ref().map_or(label.as_str().into(), |re| {
                re.replace_all(label.as_str(), " ")
            });
            for tab in [hyphen_slug(label.as_str()), hyphen_slug(&words)] {
                if let Some(section) = doc.section_at(line) {
                    let section = section.anchor.to_lowercase();
                    // pymdownx.tabbed: `section--tab`, or `section-tab`
                    // with `combine_header_slug`.
                    tabs.insert(format!("{section}--{tab}"));
                    tabs.insert(format!("{section}-{tab}"));
                }
                tabs.insert(tab);
            }
        }
        GeneratorAnchors {
            slugged,
            tabs,
            comments,
            objects,
            footnotes,
            pulled,
        }
    }
}

impl GeneratorAnchors {
    /// The first comment line naming each of `cores` (those no comment
    /// names are left out), all comments read once through one automaton.
    fn first_comments_naming(
        &self,
        cores: &[&str],
        budget: &Budget<'_>,
    ) -> std::collections::HashMap<String, u32> {
        let mut first = std::collections::HashMap::new();
        if cores.is_empty() || self.comments.is_empty() {
            return first;
        }
        let Ok(automaton) = aho_corasick::AhoCorasick::new(cores) else {
            return first;
        };
        for (line, comment) in &self.comments {
            if budget.expired() {
                break;
            }
            for found in automaton.find_overlapping_iter(comment.as_str()) {
                if let Some(core) = cores.get(found.pattern().as_usize()) {
                    first.entry((*core).to_string()).or_insert(*line);
                }
            }
            if first.len() == cores.len() {
                break;
            }
        }
        first
    }
}

impl GeneratorAnchors {
    /// What makes `decoded` an anchor of the published site, when a
    /// heading slugged as generators other than GitHub do or a macro in a
    /// comment (`in_comment`, from [`Self::first_comments_naming`]) does.
    fn made_by(
        &self,
        decoded: &str,
        in_comment: &std::collections::HashMap<String, u32>,
    ) -> Option<String> {
        self.slugged
            .get(decoded)
            .map(|title| format!("from the heading “{title}”, slugged as site generators that write punctuation as hyphens do"))
            .or_else(|| {
                in_comment
                    .get(macro_core(decoded))
                    .map(|line| format!("by the site macro in the comment at line {line}"))
            })
            .or_else(|| {
                // The object itself or one of its members: each prefix
                // that ends before a `.` looked up once.
                let ends = decoded
                    .match_indices('.')
                    .map(|(at, _)| at)
                    .chain([decoded.len()]);
                ends.filter_map(|end| {
                    let object = decoded.get(..end)?;
                    self.objects.get(object).map(|line| (object, line))
                })
                .next()
                .map(|(object, line)| {
                    format!("by the mkdocstrings directive `::: {object}` at line {line}")
                })
            })
            .or_else(|| {
                self.footnotes
                    .get(decoded)
                    .map(|line| format!("by the footnote defined at line {line}, as Python-Markdown names it"))
            })
            .or_else(|| {
                self.pulled.as_ref().map(|(line, text)| {
                    let shown: String = text.chars().take(60).collect();
                    format!("by what `{shown}` at line {line} brings in, which is not read here")
                })
            })
    }
}

/// The anchors of a Markdown file a relative link points to, kept apart
/// from its text: what another document's `[x](file.md#anchor)` is
/// checked against ([`crate::links::LinkTargets::anchors`]).
pub struct TargetAnchors {
    /// Its headings' anchors, as its anchor map spells them (for "did you
    /// mean").
    headings: Vec<String>,
    /// Every anchor it has, in lower case: headings, explicit and HTML
    /// IDs, headings nested in containers.
    known: std::collections::HashSet<String>,
    generated: GeneratorAnchors,
}

/// What a fragment is in a [`TargetAnchors`].
pub(crate) enum Resolution {
    /// An anchor of the file (or of the project's `extra_anchors`).
    Found,
    /// An anchor a site generator makes, not GitHub; with what makes it.
    Made(String),
    /// No such anchor (its close ones come from
    /// [`TargetAnchors::close_index`]).
    Missing,
}

impl TargetAnchors {
    /// The anchors of `doc`, whose parser facts are `facts`.
    pub(crate) fn of(doc: &Document<'_>, facts: &MarkdownFacts) -> Self {
        let headings: Vec<String> = doc.stage1.anchors.anchors.keys().cloned().collect();
        let known = headings
            .iter()
            .chain(facts.extra_anchors.iter())
            .map(|a| a.to_lowercase())
            .collect();
        TargetAnchors {
            headings,
            known,
            generated: GeneratorAnchors::collect(doc),
        }
    }

    /// Whether each of `fragments` (as written: percent-encoded or not,
    /// any case) names an anchor of the file.
    pub(crate) fn resolve_all(
        &self,
        fragments: &[&str],
        extra: &ExtraAnchors,
        budget: &Budget<'_>,
    ) -> Vec<Resolution> {
        let decoded: Vec<String> = fragments
            .iter()
            .map(|f| percent_decode(f).to_lowercase())
            .collect();
        let found = |d: &str| {
            self.known.contains(d) || extra.contains(d) || self.generated.tabs.contains(d)
        };
        // Which comment names each fragment: every comment read once for
        // all the links to this file (not once per link).
        let mut cores: Vec<&str> = decoded
            .iter()
            .filter(|d| !found(d) && !self.generated.slugged.contains_key(d.as_str()))
            .map(|d| macro_core(d))
            .filter(|core| core.chars().count() >= 4)
            .collect();
        cores.sort_unstable();
        cores.dedup();
        let in_comment = self.generated.first_comments_naming(&cores, budget);
        decoded
            .iter()
            .map(|d| {
                if found(d) {
                    Resolution::Found
                } else if let Some(made_by) = self.generated.made_by(d, &in_comment) {
                    Resolution::Made(made_by)
                } else {
                    Resolution::Missing
                }
            })
            .collect()
    }

    /// An index of its headings' anchors for "did you mean" (built once
    /// per file, for the links that need it).
    pub(crate) fn close_index(&self) -> CloseAnchors<'_> {
        CloseAnchors::new(self.headings.iter().map(String::as_str))
    }
}

/// mkdocstrings' directive: `::: package.module.Object` on a line of its
/// own renders the object's documentation, each member under its own
/// anchor (`package.module.Object.method`).
static MKDOCSTRINGS: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^:::[ \t]+([A-Za-z_][\w.-]*)[ \t]*$").ok());

/// Lines that pull another file's text into the page: pymdownx.snippets
/// (`--8<-- "CONTRIBUTING.md"`), markdown-include (`{!README.md!}`),
/// mdBook, Jekyll and Hugo includes.
const INCLUDE: [&str; 7] = [
    "--8<--",
    ";--8<--",
    "{!",
    "{{#include",
    "{% include",
    "{{< include",
    "{{% include",
];

/// An icon or emoji shortcode of MkDocs Material (`:octicons-image-16:`,
/// `:material-check:`).
static ICON_SHORTCODE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r":[a-z0-9]+(?:[-_][a-z0-9]+)*:").ok());

/// The label of a footnote definition line (`[^7]: text` → `7`).
fn footnote_label(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("[^")?;
    let (label, _) = rest.split_once("]:")?;
    (!label.is_empty() && !label.contains([' ', ']'])).then_some(label)
}

/// `text` with the accents of its Latin letters taken off (é → e, ç → c,
/// œ → oe), as docutils writes identifiers.
fn without_accents(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            'à' | 'á' | 'â' | 'ä' | 'ã' | 'å' => out.push('a'),
            'À' | 'Á' | 'Â' | 'Ä' | 'Ã' | 'Å' => out.push('A'),
            'è' | 'é' | 'ê' | 'ë' => out.push('e'),
            'È' | 'É' | 'Ê' | 'Ë' => out.push('E'),
            'ì' | 'í' | 'î' | 'ï' => out.push('i'),
            'Ì' | 'Í' | 'Î' | 'Ï' => out.push('I'),
            'ò' | 'ó' | 'ô' | 'ö' | 'õ' => out.push('o'),
            'Ò' | 'Ó' | 'Ô' | 'Ö' | 'Õ' => out.push('O'),
            'ù' | 'ú' | 'û' | 'ü' => out.push('u'),
            'Ù' | 'Ú' | 'Û' | 'Ü' => out.push('U'),
            'ç' => out.push('c'),
            'Ç' => out.push('C'),
            'ñ' => out.push('n'),
            'ÿ' => out.push('y'),
            'œ' => out.push_str("oe"),
            'Œ' => out.push_str("OE"),
            'æ' => out.push_str("ae"),
            'Æ' => out.push_str("AE"),
            other => out.push(other),
        }
    }
    out
}

/// The part of a fragment a site macro would name (`+type:abstract` →
/// `type:abstract`).
fn macro_core(decoded: &str) -> &str {
    decoded.trim_start_matches(['+', '-', '_'])
}

pub(crate) fn hides_links(kind: Option<BlockKind>) -> bool {
    kind.is_some_and(|k| k != BlockKind::Table)
}

/// Reports same-document links whose fragment names no anchor.
pub fn detect(
    doc: &Document<'_>,
    facts: &MarkdownFacts,
    extra: &ExtraAnchors,
    budget: &Budget<'_>,
    out: &mut Vec<Finding>,
) {
    let anchors = &doc.stage1.anchors.anchors;
    let mut pending = unresolved(doc, facts, extra);
    if pending.is_empty() || budget.expired() {
        return;
    }
    // This reads every line: only for a document with a broken link.
    let generated = GeneratorAnchors::collect(doc);
    pending.retain(|(_, decoded)| !generated.tabs.contains(decoded));
    // Which comment first names each link's anchor: every comment read
    // once for all the links (not once per link).
    let cores = macro_cores(&pending, &generated);
    let in_comment = generated.first_comments_naming(&cores, budget);
    // The index of anchors for "did you mean", built at the first link
    // that needs it.
    let mut suggest: Option<CloseAnchors<'_>> = None;
    // Columns counted on from the previous link (links come in document
    // order): counting each from its line's start made a line of many
    // links quadratic.
    let mut cursor = koas_md::line_index::ColumnCursor::new();
    for (link, decoded) in &pending {
        if budget.expired() {
            return;
        }
        let text = doc.line(link.line);
        // Where the link starts on its line; a link over several lines
        // keeps column 1, as when the column was found by searching the
        // first line for the link's whole text.
        let (at, column) = if link.line == link.line_end {
            let at = link.offset.saturating_sub(doc.index.line_start(link.line));
            (at, cursor.locate(&doc.index, link.offset).1)
        } else {
            (0, 1)
        };
        // The link alone is what an editor underlines (a link over several
        // lines: from its start to the end of its last line).
        let span = |f: Finding| {
            if link.line == link.line_end {
                let width = u32::try_from(link.source.chars().count()).unwrap_or(0);
                f.at_span(column, column.saturating_add(width))
            } else {
                f.at_column(column)
            }
        };
        // Anchors that exist on a site its generator builds, not on
        // GitHub: said as info, with what makes them.
        let made_by = generated.made_by(decoded, &in_comment);
        if let Some(made_by) = made_by {
            let finding = Finding::new(
                FindingKind::BrokenLinkAnchor,
                KERNEL,
                link.line,
                link.line_end,
                format!(
                    "The link points to #{}, which no heading has on GitHub; it may exist on the published site (made {made_by})",
                    link.fragment
                ),
                &link.source,
            )
            ;
            let mut finding = span(finding);
            finding.severity = koas_review_schema::findings::Severity::Info;
            out.push(finding);
            continue;
        }
        let close = suggest
            .get_or_insert_with(|| CloseAnchors::new(anchors.keys().map(String::as_str)))
            .close_to(decoded);
        let hint = close
            .first()
            .map(|a| format!("; did you mean #{a}?"))
            .unwrap_or_default();
        let finding = Finding::new(
            FindingKind::BrokenLinkAnchor,
            KERNEL,
            link.line,
            link.line_end,
            format!(
                "The link points to #{}, but no heading of this document has that anchor{hint}",
                link.fragment
            ),
            &link.source,
        );
        let mut finding = span(finding);
        if let ([only], true) = (close.as_slice(), link.line == link.line_end) {
            finding = with_anchor_fix(finding, link, text, at, only);
        }
        out.push(finding);
    }
}

/// The parts of the pending links' fragments a site macro would name, for
/// the fragments no heading's slug makes: sorted, each once.
fn macro_cores<'p>(
    pending: &'p [(&FragmentLink, String)],
    generated: &GeneratorAnchors,
) -> Vec<&'p str> {
    let mut cores: Vec<&str> = pending
        .iter()
        .filter(|(_, decoded)| !generated.slugged.contains_key(decoded))
        .map(|(_, decoded)| macro_core(decoded))
        .filter(|core| core.chars().count() >= 4)
        .collect();
    cores.sort_unstable();
    cores.dedup();
    cores
}

/// `facts`' checked fragment links that no heading or known anchor
/// resolves, each with its decoded, lowercased fragment.
fn unresolved<'f>(
    doc: &Document<'_>,
    facts: &'f MarkdownFacts,
    extra: &ExtraAnchors,
) -> Vec<(&'f FragmentLink, String)> {
    let anchors = &doc.stage1.anchors.anchors;
    let known_lower: std::collections::HashSet<String> = anchors
        .keys()
        .chain(facts.extra_anchors.iter())
        .map(|a| a.to_lowercase())
        .collect();
    let mut pending: Vec<(&'f FragmentLink, String)> = Vec::new();
    for link in &facts.fragment_links {
        if link.fragment.is_empty()
            || (link.line..=link.line_end).any(|l| hides_links(doc.block_kind(l)))
        {
            continue;
        }
        let decoded = percent_decode(&link.fragment).to_lowercase();
        if known_lower.contains(&decoded) || extra.contains(&decoded) {
            continue;
        }
        pending.push((link, decoded));
    }
    pending
}

/// `finding` with the fix that points `link` (on one line, at byte `at`
/// of its line `text`) to anchor `only`, when the link's text is found
/// there.
fn with_anchor_fix(
    mut finding: Finding,
    link: &FragmentLink,
    text: &str,
    at: usize,
    only: &str,
) -> Finding {
    let old = format!("(#{})", link.fragment);
    if let Some(pos) = link.source.rfind(&old) {
        let mut fixed_source = link.source.clone();
        fixed_source.replace_range(pos..pos + old.len(), &format!("(#{only})"));
        let start =
            (text.get(at..at + link.source.len()) == Some(link.source.as_str())).then_some(at);
        if let Some(start) = start {
            let mut after = text.to_string();
            after.replace_range(start..start + link.source.len(), &fixed_source);
            finding = finding.with_fix(Fix {
                description: format!("link to #{only}"),
                edits: vec![FixEdit {
                    line: link.line,
                    before: text.to_string(),
                    after: Some(after),
                }],
            });
        }
    }
    finding
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;
    use crate::markdown;

    fn scan_with(text: &str, extra: &[&str]) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let facts = markdown::collect(&doc);
        let mut out = Vec::new();
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let extra = ExtraAnchors::new(&extra).expect("valid");
        detect(&doc, &facts, &extra, &Budget::unlimited(), &mut out);
        out
    }

    fn scan(text: &str) -> Vec<Finding> {
        scan_with(text, &[])
    }

    #[test]
    fn a_single_close_anchor_gives_a_fix() {
        let found = scan("# T\n\n## 4. Retry policy\n\nSee [retries](#3-retry-policy).\n");
        let fix = found[0].fix.as_ref().expect("one close anchor: a fix");
        assert_eq!(
            fix.edits[0].after.as_deref(),
            Some("See [retries](#4-retry-policy).")
        );
        assert_eq!(found[0].column, 5);
        let two =
            scan("# T\n\n## 4. Retry policy\n\n## 5. Retry policy\n\nSee [r](#3-retry-policy).\n");
        assert!(two[0].fix.is_none(), "two close anchors: no certain fix");
    }

    /// Regression: links in table cells were never checked, and explicit
    /// heading IDs (`{#id}`) were not anchors.
    #[test]
    fn table_cells_are_checked_and_heading_ids_are_anchors() {
        let text = "# T\n\n## Rc cycles {#cyclic-rc}\n\n| See | Where |\n|---|---|\n| [cycles](#cyclic-rc) | [gone](#nowhere) |\n";
        let found = scan(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].line, 7);
        assert!(found[0].message.contains("#nowhere"));
    }

    /// Regression (issue 31, false pattern 2): anchors set by attribute
    /// lists (MkDocs attr_list `{ id=x }`, kramdown's IAL on the line under
    /// a heading or a paragraph, Pandoc spans) exist, though no heading
    /// text makes them; an ID inside code does not.
    #[test]
    fn attribute_list_ids_are_anchors_but_not_inside_code() {
        let text = "# Guide\n\n### Retention { id=keep-records }\n\n## Scope\n{: #perimetre}\n\nA rule.\n{: #rule-7 .note}\n\nSee [a](#keep-records), [b](#perimetre), [c](#rule-7), [d](#fig-1), [e](#in-code).\n\n![Plan](plan.png){ #fig-1 }\n\n```\n## Code {#in-code}\n```\n";
        let found = scan(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].message.contains("#in-code"),
            "{}",
            found[0].message
        );
        // In French too: the same forms, accented titles.
        let text = "# Guide\n\n## Périmètre { #perimetre }\n\nVoir [le périmètre](#perimetre) et [l'absent](#absent).\n";
        let found = scan(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("#absent"));
    }

    #[test]
    fn declared_anchors_exist_elsewhere() {
        let text = "# T\n\nSee [x](#api-intro), [y](#Top) and [z](#other).\n";
        let found = scan_with(text, &["api-*", "#top"]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("#other"));
    }

    #[test]
    fn missing_anchors_are_reported_with_a_hint() {
        let found = scan("# T\n\n## 3. Capacity\n\nSee [cap](#3-capacity), [retry](#retry-policy) and [x](#7-capacity).\n");
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].line, 5);
        assert!(found[0].evidence.contains("(#retry-policy)"));
        assert!(
            found[1].message.contains("did you mean #3-capacity"),
            "{}",
            found[1].message
        );
    }

    #[test]
    fn case_percent_encoding_html_ids_and_empty_fragments_resolve() {
        let text = "# Été Résumé\n\n<a id=\"custom\"></a>\n\n[a](#%C3%A9t%C3%A9-r%C3%A9sum%C3%A9) [b](#Ete-X) [c](#custom) [d](#) `[e](#nope)`\n";
        let found = scan(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("#Ete-X"));
    }

    /// Regression (issue 31, false pattern 2, on held-out documents):
    /// anchors a site generator makes were errors: headings slugged with
    /// punctuation as hyphens or with a text directive rendered, MkDocs
    /// content tabs, an anchor made by a macro in a comment.
    #[test]
    fn anchors_a_site_generator_makes_are_info_or_resolve() {
        use koas_review_schema::findings::Severity;
        let text = "# Spec\n\n## Bitswap 1.2.0\n\n## HEAD /ipfs/{cid}[/{path}]\n\n### :dfn[`format`] (request query parameter)\n\nSee [v](#bitswap-1-2-0), [h](#head-ipfs-cid-path) and [f](#format-request-query-parameter).\n";
        let found = scan(text);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            found.iter().all(|f| f.severity == Severity::Info),
            "{found:?}"
        );
        assert!(
            found[0].message.contains("“Bitswap 1.2.0”"),
            "{}",
            found[0].message
        );
        let tabs = "# T\n\n## Anchor links\n\n=== \"First\"\n\n=== \"... or even me\"\n\nJump to [it](#anchor-links--or-even-me).\n";
        assert!(scan(tabs).is_empty(), "{:?}", scan(tabs));
        let macro_ = "# T\n\nRender an [`abstract`](#+type:abstract) admonition.\n\n<!-- md:option type:abstract -->\n";
        let found = scan(macro_);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].severity, Severity::Info);
        // A hand-written anchor that no generator makes stays an error.
        let kep = "# KEP\n\n## Upgrade / Downgrade Strategy\n\nSee [it](#upgrade-/-downgrade-strategy).\n";
        let found = scan(kep);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].severity, Severity::Error);
    }

    #[test]
    fn more_anchors_sites_make_resolve_or_are_info() {
        use koas_review_schema::findings::Severity;
        // A content tab whose label holds an icon, combined with its
        // section's slug by one hyphen; a MyST target; a quoted ID.
        let made = "# T\n\n### Logo\n\n=== \":octicons-image-16: Image\"\n\n(install-guide)=\n## Install\n\n\
                    ### 9.7.0 { id=\"9.7.0\" }\n\nSee [l](#logo-image), [m](#install-guide), [v](#9.7.0).\n";
        assert!(scan(made).is_empty(), "{:?}", scan(made));
        let info = [
            // A macro comment that makes a heading's text.
            (
                "#### <!-- md:setting config.blog_dir -->\n\nSee [d](#config.blog_dir).\n",
                "site macro",
            ),
            // mkdocstrings: the object and its members.
            (
                "::: pydantic.config\n\nSee [c](#pydantic.config.ConfigDict).\n",
                "mkdocstrings directive `::: pydantic.config`",
            ),
            // A footnote, as Python-Markdown names it.
            (
                "See [n](#fn:7).\n\n[^7]: A note.\n",
                "footnote defined at line",
            ),
            // Sphinx drops accents.
            (
                "## Copier la base de données\n\nSee [c](#copier-la-base-de-donnees).\n",
                "Copier la base de données",
            ),
            // Text pulled in from another file.
            (
                "--8<-- \"CONTRIBUTING.md\"\n\nSee [c](#submitting-changes).\n",
                "--8<--",
            ),
            (
                "{{ pydantic_settings }}\n\nSee [c](#customise-settings-sources).\n",
                "pydantic_settings",
            ),
        ];
        for (body, why) in info {
            let found = scan(&format!("# T\n\n{body}"));
            assert_eq!(found.len(), 1, "{body}: {found:?}");
            assert_eq!(found[0].severity, Severity::Info, "{body}");
            assert!(
                found[0].message.contains(why),
                "{body}: {}",
                found[0].message
            );
        }
        // A member of another object is no member of this one.
        let other = scan("# T\n\n::: pydantic.config\n\nSee [c](#pydantic.configuration).\n");
        assert_eq!(other.len(), 1);
        assert_eq!(other[0].severity, Severity::Error);
    }

    #[test]
    fn percent_decoding_keeps_invalid_escapes() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
