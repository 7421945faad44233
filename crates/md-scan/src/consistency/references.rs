//! Broken cross-references to numbered sections.
//!
//! English: "see Section 4.2", "Section 7", "section 3.1". French: `§X.Y`,
//! "voir X.Y", "cf. X.Y" (and "la section 3" through the English form).
//! A reference is valid when some heading carries that number, or a number
//! it starts (`4.1` exists when `4.1.2` does). Lines holding a deletion
//! marker (`SUPPRIMÉ`) are skipped, a target is reported once per line,
//! and "Section 5 of RFC 9110" / "§3 de la norme" name another document.

use super::KERNEL;
use crate::config::ScanConfig;
use crate::document::Document;
use crate::evidence::around;
use crate::gate::{Gated, Needles, Warm};
use crate::quotes::{is_quoted, quoted_ranges};
use koas_review_schema::findings::{Finding, FindingKind};
use regex::Regex;
use std::collections::HashSet;
use std::sync::LazyLock;

/// A reference to a section by number; every match holds one of the
/// gate's words.
static REFERENCE: LazyLock<Gated> = LazyLock::new(|| {
    Gated::new(
        r"(?i)(?:\b(?:sections?|sect\.)\s+(\d+(?:\.\d+)*)|§\s?(\d+(?:\.\d+)*)|\b(?:voir|cf\.?)\s+(?:(?:la\s+|le\s+)?(?:section|§)\s*|au\s+|le\s+)?(\d+\.\d+(?:\.\d+)*))",
        Needles::new(&["sect", "§", "voir", "cf"]),
    )
});

/// Compiles ahead what a document that may hold references needs.
pub(crate) fn warm<'a>(text: &'a str, jobs: &mut Vec<Warm<'a>>) {
    jobs.push(Box::new(move || {
        if REFERENCE.warm(text) {
            rayon::join(
                || LazyLock::force(&LINK),
                || LazyLock::force(&OTHER_DOCUMENT),
            );
        }
    }));
}

static OTHER_DOCUMENT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^\s*(?:of|de|du|des|d['’])(?:\s|$)").ok());

/// Every section number of the document and every number a section
/// number starts with.
fn known_numbers(doc: &Document<'_>) -> HashSet<String> {
    let mut known = HashSet::new();
    for s in &doc.stage1.sections.sections {
        if let Some(n) = &s.numbering {
            let parts: Vec<String> = n.parts.iter().map(u32::to_string).collect();
            for k in 1..=parts.len() {
                known.insert(parts[..k].join("."));
            }
            known.insert(n.label.clone());
        }
    }
    known
}

/// `true` when one of the three words before a reference names another
/// document ("RFC 9110 Section 5", "from specs §14", "ISO 27001 §4").
fn names_another_document(before: &str, config: &ScanConfig) -> bool {
    before
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .rev()
        .take(3)
        .any(|w| {
            let w = w.to_lowercase();
            // "RFC7230", "ISO27001": the word glued to its number.
            let bare = w.trim_end_matches(|c: char| c.is_ascii_digit());
            config.external_document_words.contains(&w)
                || (!bare.is_empty() && config.external_document_words.iter().any(|d| d == bare))
        })
}

/// A link: its text and what follows it (`(target)` or `[label]`).
static LINK: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\[([^\]]*)\](\([^)]*\)|\[[^\]]*\])").ok());

/// The byte ranges of the texts of the links of `prose` that point to
/// another page ("as described in [RFC7230, section 3.2.6][rfc7230]"): a
/// number there is that page's, not this document's. Sorted, disjoint.
fn links_elsewhere(prose: &str) -> Vec<(usize, usize)> {
    let Some(re) = LINK.as_ref() else {
        return Vec::new();
    };
    re.captures_iter(prose)
        .filter_map(|c| {
            let (text, target) = (c.get(1)?, c.get(2)?);
            let to_anchor = target.as_str()[1..].trim_start().starts_with('#');
            (!to_anchor).then_some((text.start(), text.end()))
        })
        .collect()
}

/// `true` when `start..end` lies in one of `links` (see
/// [`links_elsewhere`]); found by bisection, so a line of many references
/// is not scanned once per reference.
fn in_link_elsewhere(links: &[(usize, usize)], start: usize, end: usize) -> bool {
    let after = links.partition_point(|&(open, _)| open <= start);
    after
        .checked_sub(1)
        .and_then(|i| links.get(i))
        .is_some_and(|&(_, close)| end <= close)
}

/// Reports references to section numbers no heading carries.
pub fn detect(doc: &Document<'_>, config: &ScanConfig, out: &mut Vec<Finding>) {
    let known = known_numbers(doc);
    if known.is_empty() && config.references_need_numbered_headings {
        return;
    }
    for line in 1..=doc.line_count() {
        if doc.is_heading(line) {
            continue;
        }
        let Some(prose) = doc.prose(line) else {
            continue;
        };
        if config
            .deleted_markers
            .iter()
            .any(|m| !m.is_empty() && prose.contains(m.as_str()))
        {
            continue;
        }
        let Some(re) = REFERENCE.for_text(prose) else {
            continue;
        };
        let quoted = quoted_ranges(prose);
        let links = links_elsewhere(prose);
        // A target quoted once on a line is being discussed there, not used.
        let mut reported: HashSet<&str> = re
            .captures_iter(prose)
            .filter_map(|caps| {
                let whole = caps.get(0)?;
                let target = caps.get(1).or(caps.get(2)).or(caps.get(3))?;
                is_quoted(&quoted, whole.start(), whole.end()).then_some(target.as_str())
            })
            .collect();
        for caps in re.captures_iter(prose) {
            let Some(target) = caps.get(1).or(caps.get(2)).or(caps.get(3)) else {
                continue;
            };
            let whole = caps
                .get(0)
                .map_or(target.start()..target.end(), |m| m.range());
            let number = target.as_str();
            // Checked first: a target reported once on this line needs no
            // second look (a line may repeat it a hundred thousand times).
            if reported.contains(number) {
                continue;
            }
            if known.contains(number)
                || OTHER_DOCUMENT
                    .as_ref()
                    .is_some_and(|o| o.is_match(&prose[whole.end..]))
                || names_another_document(&prose[..whole.start], config)
                || in_link_elsewhere(&links, whole.start, whole.end)
            {
                continue;
            }
            if !reported.insert(number) {
                continue;
            }
            out.push(Finding::new(
                FindingKind::BrokenReference,
                KERNEL,
                line,
                line,
                format!(
                    "“{}” points to section {number}, but no heading of this document is numbered {number}",
                    prose[whole.clone()].trim()
                ),
                &around(doc.line(line), whole.start, whole.end),
            ).at_column(doc.column(line, whole.start)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;

    const DOC: &str =
        "# Doc\n\n## 1. Intro\n\n### 1.2 Scope\n\n## 2. Method\n\n#### 2.1.3 Deep\n\nBODY\n";

    fn scan_body(body: &str) -> Vec<Finding> {
        let text = DOC.replace("BODY", body);
        let s1 = stage1(&text);
        let doc = Document::new(s1.view(&text)).expect("doc");
        let mut out = Vec::new();
        detect(&doc, &ScanConfig::default(), &mut out);
        out
    }

    fn targets(body: &str) -> Vec<String> {
        scan_body(body)
            .iter()
            .map(|f| {
                f.message
                    .rsplit("numbered ")
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn english_references() {
        assert_eq!(
            targets("See Section 4.2 and section 1.2 and Section 7."),
            ["4.2", "7"]
        );
        assert!(targets("As described in Sections 2 and 1.").is_empty());
        assert_eq!(targets("Voir la section 3 pour le détail."), ["3"]);
    }

    #[test]
    fn french_references() {
        assert_eq!(targets("Résultats au §5.3, périmètre au §1.2."), ["5.3"]);
        assert_eq!(targets("La méthode, cf. 2.4 pour les exceptions."), ["2.4"]);
        assert_eq!(targets("Dépôts exclus (voir 1.2), voir 9.9."), ["9.9"]);
        assert_eq!(targets("Voir § 6 et cf. 6.1"), ["6", "6.1"]);
    }

    #[test]
    fn prefixes_of_existing_numbers_exist() {
        assert!(targets("See Section 2.1 for the deep part.").is_empty());
    }

    #[test]
    fn suppressions_dedup_and_other_documents() {
        assert!(targets("§7.2 SUPPRIMÉ dans cette version").is_empty());
        assert_eq!(targets("§8 et encore §8"), ["8"]);
        assert!(targets("Section 5 of RFC 9110 and §3 de la norme ISO 27001.").is_empty());
        assert!(targets("Code `see Section 9` is not prose.").is_empty());
        assert!(targets("Edit op schema (from specs §14), RFC 9110 Section 8.").is_empty());
        assert!(
            targets("Broken refs (\"see Section 4.2\" where Section 4.2 does not exist)")
                .is_empty()
        );
    }

    /// Regression: a section of another document named in a link's text,
    /// or after a standard's name glued to its number, was checked against
    /// this document's headings.
    #[test]
    fn sections_of_linked_or_glued_documents_are_not_checked() {
        assert!(
            targets("as described in [RFC7230, section 3.2.6][rfc7230-s326]. A single").is_empty()
        );
        assert!(targets("see [the HTTP spec, Section 9.9](https://example.org/http)").is_empty());
        assert!(targets("follows RFC7230 section 9.9 for quoting").is_empty());
        assert_eq!(targets("see [Section 9.9](#nine) here"), ["9.9"]);
    }

    #[test]
    fn documents_without_numbered_headings_are_not_checked() {
        let text = "# Doc\n\n## Intro\n\nSee Section 4.\n";
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let mut out = Vec::new();
        detect(&doc, &ScanConfig::default(), &mut out);
        assert!(out.is_empty());
        let strict = ScanConfig {
            references_need_numbered_headings: false,
            ..ScanConfig::default()
        };
        detect(&doc, &strict, &mut out);
        assert_eq!(out.len(), 1);
    }

    proptest::proptest! {
        // The bisection answers what a scan of every link would.
        #[test]
        fn link_lookup_agrees_with_a_scan(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just("voir 9.9 "),
                    proptest::strategy::Just("[see section 3.1](other.md) "),
                    proptest::strategy::Just("[section 4](#s4) "),
                    proptest::strategy::Just("[RFC, section 5][rfc] "),
                    proptest::strategy::Just("plain words "),
                ],
                0..12,
            ),
            start in 0usize..200,
            len in 0usize..20,
        ) {
            let prose = parts.concat();
            let links = links_elsewhere(&prose);
            let end = start + len;
            let scan = links.iter().any(|&(open, close)| open <= start && end <= close);
            proptest::prop_assert_eq!(in_link_elsewhere(&links, start, end), scan);
        }
    }
}
