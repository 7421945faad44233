//! `md_language_check`: spelling, grammar and French typography on the
//! document's prose, through `koas-lang`.
//!
//! This module is the Markdown side: it cuts the prose into paragraphs
//! (a heading, a list item, a run of text lines), writes
//! [`koas_lang::tokens::BLANK`] over every byte that is not prose (Stage
//! 1's protected inline spans, link targets, HTML tags, URLs), finds the
//! terms a glossary section defines, and turns the library's issues into
//! findings on lines and columns, with a fix when one is certain.

use crate::config::LanguageSection;
use crate::document::Document;
use crate::words::mask_markup;
use crate::ScanError;
use koas_lang::{Issue, IssueKind, LangError, Paragraph, Vocabulary};
use koas_review_schema::findings::{Finding, FindingKind, Fix, FixEdit, Severity};
use koas_review_schema::stage1::LineNo;
use rayon::prelude::*;
use std::borrow::Cow;

/// The kernel name findings of the language checks carry.
pub const KERNEL: &str = koas_project::LANGUAGE_KERNEL;

/// What one check gives: the findings, and a line for each dictionary it
/// loaded with the time that took.
pub type Checked = (Vec<Finding>, Vec<String>);

/// The language checks with their configuration compiled.
pub struct LanguageCheck {
    checker: koas_lang::Checker,
    /// The project's Vale styles, compiled once.
    styles: Option<koas_vale::Styles>,
}

impl LanguageCheck {
    /// The checks `section` configures (its word files already read into
    /// `accept`).
    pub fn new(section: &LanguageSection) -> Result<Self, ScanError> {
        let styles =
            match &section.styles {
                Some(sources) => Some(koas_vale::Styles::compile(sources).map_err(|e| {
                    ScanError::InvalidConfig {
                        key: "vale".into(),
                        reason: e.to_string(),
                    }
                })?),
                None => None,
            };
        // The styles' vocabularies' accepted terms are no misspellings
        // either (Vale's spelling takes them too); one this speller cannot
        // read as a word or pattern is left to the styles' rules.
        let mut accept = section.accept.clone();
        for term in styles.iter().flat_map(|s| s.accepted()) {
            let readable = Vocabulary::new(std::slice::from_ref(term), &[], "vocabulary").is_ok();
            if readable && !accept.contains(term) {
                accept.push(term.clone());
            }
        }
        let words = Vocabulary::new(&accept, &section.reject, "[language]").map_err(|e| {
            ScanError::InvalidConfig {
                key: "language".into(),
                reason: e.to_string(),
            }
        })?;
        Ok(LanguageCheck {
            checker: koas_lang::Checker::new(section.options(), words),
            styles,
        })
    }

    /// What of the project's Vale styles is not acted on (an extension
    /// point, a key), one line each: to tell once, not per document.
    pub fn style_notes(&self) -> &[String] {
        self.styles.as_ref().map_or(&[], |s| s.notes.as_slice())
    }

    /// Loads the dictionary `text` will need (see
    /// [`koas_lang::Checker::prefetch`]): for a core that would otherwise
    /// wait while Stage 1 reads the document.
    pub fn prefetch(&self, text: &str) {
        self.checker.prefetch(text);
    }

    /// The findings of `doc` (unsorted, not yet located); `None` when
    /// `stop` asked to give up. The time each dictionary took to load, when
    /// this check loaded one, goes to `loaded`.
    pub fn run(
        &self,
        doc: &Document<'_>,
        path: Option<&str>,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<Option<Checked>, ScanError> {
        // Each line's prose once (the paragraphs and the code words read
        // it), on every core.
        let prose: Vec<Option<Cow<'_, str>>> = (1..=doc.line_count())
            .into_par_iter()
            .map(|line| prose_line(doc, line))
            .collect();
        // Two passes over every line, each on its own core.
        let (paragraphs, terms) = rayon::join(
            || paragraphs(doc, &prose),
            || {
                let mut terms = glossary_terms(doc);
                terms.extend(code_words(doc, &prose));
                terms
            },
        );
        let views: Vec<Paragraph<'_>> = paragraphs
            .iter()
            .map(|p| Paragraph {
                text: &p.text,
                heading: p.heading,
            })
            .collect();
        let report = match self.checker.check_until(&views, &terms, stop) {
            Ok(r) => r,
            Err(LangError::Stopped) => return Ok(None),
            Err(e) => {
                return Err(ScanError::InvalidConfig {
                    key: "language".into(),
                    reason: e.to_string(),
                })
            }
        };
        let loaded = report
            .loaded
            .iter()
            .map(|(lang, took)| {
                format!(
                    "{} dictionary loaded in {:.1} ms",
                    lang.name(),
                    took.as_secs_f64() * 1000.0
                )
            })
            .collect();
        let mut findings: Vec<Finding> = report
            .issues
            .par_iter()
            .filter_map(|issue| finding(doc, &paragraphs, issue))
            .collect();
        if let Some(styles) = &self.styles {
            let path = path.unwrap_or(crate::style::UNNAMED_DOCUMENT);
            findings.extend(crate::style::findings(styles, doc, path));
        }
        Ok(Some((findings, loaded)))
    }
}

/// One paragraph of prose and where its lines come from.
struct ProseParagraph {
    /// Its lines joined by `\n`, non-prose bytes written as BLANK.
    text: String,
    heading: bool,
    /// `(line, offset of the line in text)`, in order.
    lines: Vec<(LineNo, usize)>,
}

/// `true` when `line` opens a list item (`- `, `* `, `+ `, `1. `, `1) `).
fn opens_item(line: &str) -> bool {
    let t = line.trim_start_matches([' ', '>']);
    if let Some(rest) = t.strip_prefix(['-', '*', '+']) {
        return rest.starts_with(' ');
    }
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    digits > 0 && t[digits..].starts_with(['.', ')']) && t[digits + 1..].starts_with(' ')
}

/// The prose of `line`: the raw text with every byte Stage 1 or the
/// markup mask blanked written as BLANK (same length, valid UTF-8); the
/// line itself, not a copy, when nothing in it is blanked (most lines).
fn prose_line<'a>(doc: &Document<'a>, line: LineNo) -> Option<Cow<'a, str>> {
    let masked = doc.prose(line)?;
    let masked = mask_markup(masked);
    let raw = doc.line(line);
    if masked.len() != raw.len() {
        return None;
    }
    if masked == raw && !raw.contains('&') {
        return Some(Cow::Borrowed(raw));
    }
    let blank = koas_lang::tokens::BLANK as u8;
    let mut bytes: Vec<u8> = raw
        .bytes()
        .zip(masked.bytes())
        .map(|(r, m)| if m == b' ' && r != b' ' { blank } else { r })
        .collect();
    blank_entities(&mut bytes, blank);
    String::from_utf8(bytes).ok().map(Cow::Owned)
}

/// Writes `blank` over HTML character references (`&nbsp;`, `&#x20;`,
/// `&#8217;`): markup, not words, and their `;` no punctuation.
fn blank_entities(bytes: &mut [u8], blank: u8) {
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'&' {
            let body = bytes[i + 1..]
                .iter()
                .take(12)
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'#')
                .count();
            let end = i + 1 + body;
            if body > 0 && bytes.get(end) == Some(&b';') {
                for b in &mut bytes[i..=end] {
                    *b = blank;
                }
                i = end + 1;
                continue;
            }
        }
        i += 1;
    }
}

/// The document's prose, paragraph by paragraph.
fn paragraphs(doc: &Document<'_>, prose: &[Option<Cow<'_, str>>]) -> Vec<ProseParagraph> {
    let mut out: Vec<ProseParagraph> = Vec::new();
    let mut open = false;
    for (line, text) in (1..).zip(prose) {
        let Some(text) = text.as_deref() else {
            open = false;
            continue;
        };
        if text.trim().is_empty() {
            open = false;
            continue;
        }
        let heading = doc.is_heading(line);
        let continues =
            open && !heading && !opens_item(text) && out.last().is_some_and(|p| !p.heading);
        match out.last_mut() {
            Some(p) if continues => {
                p.text.push('\n');
                p.lines.push((line, p.text.len()));
                p.text.push_str(text);
            }
            _ => out.push(ProseParagraph {
                lines: vec![(line, 0)],
                text: text.to_owned(),
                heading,
            }),
        }
        open = true;
    }
    out
}

/// Titles of sections that define the document's terms.
fn is_glossary_title(title: &str) -> bool {
    let t = title.to_lowercase();
    [
        "glossary",
        "glossaire",
        "terminology",
        "terminologie",
        "definitions",
        "définitions",
        "lexique",
        "acronyms",
        "acronymes",
        "abbreviations",
        "abréviations",
        "vocabulary",
        "vocabulaire",
    ]
    .iter()
    .any(|w| t.contains(w))
}

/// The terms the document's glossary sections define: a table's first
/// cells, bold terms, a list item's words before its `:` or dash, a
/// definition list's terms.
fn glossary_terms(doc: &Document<'_>) -> Vec<String> {
    let mut terms = Vec::new();
    for s in &doc.stage1.sections.sections {
        if !is_glossary_title(&s.title) {
            continue;
        }
        for line in s.heading_line_end + 1..=s.line_end.min(doc.line_count()) {
            let raw = doc.line(line).trim();
            if let Some(row) = raw.strip_prefix('|') {
                if let Some(cell) = row.split('|').next() {
                    terms.push(cell.trim_matches(['*', '`', ' ', '_']).to_owned());
                }
            }
            let mut rest = raw;
            while let Some(i) = rest.find("**") {
                let after = &rest[i + 2..];
                let Some(j) = after.find("**") else { break };
                terms.push(after[..j].to_owned());
                rest = &after[j + 2..];
            }
            if opens_item(raw) {
                let item = raw.trim_start_matches(|c: char| !c.is_alphabetic());
                let head = item
                    .split([':', '—', '–'])
                    .next()
                    .unwrap_or("")
                    .split(" - ")
                    .next()
                    .unwrap_or("");
                if head.split_whitespace().count() <= 4 {
                    terms.push(head.trim_matches(['*', '`', ' ', '_']).to_owned());
                }
            }
            let next = doc.line(line + 1);
            if line < doc.line_count() && next.starts_with(": ") && !raw.is_empty() {
                terms.push(raw.to_owned());
            }
        }
    }
    terms.retain(|t| !t.is_empty());
    terms
}

/// The words of what is not prose: code blocks and spans, tables, URLs,
/// link targets, HTML. A word the document writes there ("malloc",
/// "etcd", "containerd") is a name of its subject when prose uses it too.
fn code_words<'a>(doc: &Document<'a>, prose: &[Option<Cow<'_, str>>]) -> Vec<String> {
    // Distinct words as written first: lowercasing each occurrence of a
    // code word costs more than the rest.
    let mut written: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
    let mut add = |text: &'a str| {
        for w in text.split(|c: char| !c.is_alphanumeric()) {
            if w.chars().nth(1).is_some() && w.chars().any(char::is_alphabetic) {
                written.insert(w);
            }
        }
    };
    let blank = koas_lang::tokens::BLANK;
    for (line, text) in (1..).zip(prose) {
        match text {
            None => add(doc.line(line)),
            // No blanked byte: nothing of this line is code or markup.
            Some(prose) if !prose.contains(blank) => {}
            Some(prose) => {
                let raw = doc.line(line);
                let mut start = None;
                for (i, c) in prose.char_indices() {
                    match (c == blank, start) {
                        (true, None) => start = Some(i),
                        (false, Some(s)) => {
                            add(raw.get(s..i).unwrap_or(""));
                            start = None;
                        }
                        _ => {}
                    }
                }
                if let Some(s) = start {
                    add(raw.get(s..).unwrap_or(""));
                }
            }
        }
    }
    let out: std::collections::BTreeSet<String> =
        written.into_iter().map(str::to_lowercase).collect();
    out.into_iter().collect()
}

fn kind_of(kind: IssueKind) -> FindingKind {
    match kind {
        IssueKind::Misspelling => FindingKind::Misspelling,
        IssueKind::RepeatedWord => FindingKind::RepeatedWord,
        IssueKind::Article => FindingKind::Article,
        IssueKind::Agreement => FindingKind::Agreement,
        IssueKind::Confusion => FindingKind::Confusion,
        IssueKind::Typography => FindingKind::Typography,
    }
}

/// The finding of `issue`, on the line and columns its range falls on.
fn finding(doc: &Document<'_>, paragraphs: &[ProseParagraph], issue: &Issue) -> Option<Finding> {
    let p = paragraphs.get(issue.paragraph)?;
    let k = p
        .lines
        .partition_point(|(_, offset)| *offset <= issue.start);
    let (line, offset) = *p.lines.get(k.checked_sub(1)?)?;
    let raw = doc.line(line);
    let (start, mut end) = (issue.start - offset, issue.end - offset);
    // A range running past its line (two doubled words across a line
    // break) is shown on the first line.
    let one_line = end <= raw.len();
    end = end.min(raw.len());
    if start > end || !raw.is_char_boundary(start) || !raw.is_char_boundary(end) {
        return None;
    }
    let kind = kind_of(issue.kind);
    let mut f = Finding::new(kind, KERNEL, line, line, issue.message.clone(), raw)
        .at_span(doc.column(line, start), doc.column(line, end))
        .with_suggestions(issue.suggestions.clone());
    if kind == FindingKind::Misspelling && !issue.likely {
        f.severity = Severity::Info;
    }
    // A heading's words make its anchor: fixing one would break the
    // links to it, here and in other documents (and a link fix of the
    // same run would follow the old spelling). Its suggestions stay.
    if issue.certain && one_line && !doc.is_heading(line) {
        if let Some(best) = issue.suggestions.first() {
            let before = &raw[start..end];
            let after = format!("{}{best}{}", &raw[..start], &raw[end..]);
            let description = if best.is_empty() {
                format!("remove “{}”", before.trim())
            } else {
                format!("“{}” → “{best}”", before.trim())
            };
            f = f.with_fix(Fix {
                description,
                edits: vec![FixEdit {
                    line,
                    before: raw.to_owned(),
                    after: Some(after),
                }],
            });
        }
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LanguageSection;
    use crate::stage1::Stage1Artifacts;

    fn check(text: &str) -> Vec<Finding> {
        let stage1 = Stage1Artifacts::compute(text);
        let doc = Document::new(stage1.view(text)).expect("consistent");
        let check = LanguageCheck::new(&LanguageSection::default()).expect("valid");
        check
            .run(&doc, None, &|| false)
            .expect("runs")
            .expect("not stopped")
            .0
    }

    #[test]
    fn prose_is_checked_and_code_links_and_html_are_not() {
        let text = "# Retry policy\n\nThe server explains the addresses it serves.\n\
            Teh client explians the `explianz` call, see [the adresses](https://x.io/explianz) and <span title=\"explianz\">here</span>.\n\n\
            ```\nlet x = 1;\n```\n";
        let found = check(text);
        let got: Vec<(u32, u32, Option<u32>, &str)> = found
            .iter()
            .map(|f| (f.line, f.column, f.column_end, f.suggestions[0].as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (4, 1, Some(4), "The"),
                (4, 12, Some(20), "explains"),
                (4, 51, Some(59), "addresses")
            ],
            "{found:#?}"
        );
        let fix = found[1].fix.as_ref().expect("certain");
        assert_eq!(
            fix.edits[0].after.as_deref(),
            Some("Teh client explains the `explianz` call, see [the adresses](https://x.io/explianz) and <span title=\"explianz\">here</span>.")
        );
    }

    #[test]
    fn words_of_code_and_links_are_vocabulary() {
        let text = "# Spec\n\nThe allocator calls malloc once, see [zlib](https://zlib.net) and `etcdctl`.\n\
            Then etcdctl and zlib run.\n\n```c\nvoid *p = malloc(8);\n```\n";
        assert!(check(text).is_empty(), "{:#?}", check(text));
    }

    /// The recall run's `## Eisting behavior`: fixed, it broke the
    /// contents link the same run pointed at its old anchor.
    #[test]
    fn a_heading_keeps_its_words_without_a_fix() {
        let text = "# Guide\n\nThe existing behavior is kept.\n\n## Eisting behavior\n\nThe existing behavior stays.\n";
        let found = check(text);
        let heading: Vec<&Finding> = found.iter().filter(|f| f.line == 5).collect();
        assert_eq!(heading.len(), 1, "{found:#?}");
        assert_eq!(
            heading[0].suggestions.first().map(String::as_str),
            Some("Existing")
        );
        assert!(heading[0].fix.is_none(), "{found:#?}");
    }

    #[test]
    fn html_character_references_are_not_prose() {
        let text =
            "# Titre\n\nLe serveur répond aux demandes des usagers&#x20;; il est rapide&nbsp;!\n";
        assert!(check(text).is_empty(), "{:#?}", check(text));
    }

    #[test]
    fn glossary_terms_are_vocabulary() {
        let text = "# Spec\n\nThe frobnicator sends a zorblet to the gateway.\n\n## Glossary\n\n\
            | Term | Meaning |\n|---|---|\n| frobnicator | the sender |\n\n- zorblet: a message\n";
        assert!(check(text).is_empty(), "{:#?}", check(text));
    }
}
