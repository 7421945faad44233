//! Headings that lost their `#` marks and joined the paragraph above:
//! a short title-like line (a few words, no closing punctuation) right
//! after a finished sentence, inside a paragraph. Such a line is common in
//! prose too (a line break before a name), so one of three facts must show
//! it was a heading:
//!
//! * it starts with a section number that fits the document's numbered
//!   headings (its parent or a sibling is a heading) but no heading
//!   carries it;
//! * a `#fragment` link of the document points to its slug, which no
//!   heading has;
//! * the text after it repeats, word for word, the first paragraph of a
//!   section (per-component sections restating the same rule): the repeat
//!   is then reported here, not as a duplicate paragraph.

use super::duplicates::normalize_whitespace;
use super::KERNEL;
use crate::document::Document;
use crate::markdown::MarkdownFacts;
use koas_review_schema::findings::{Finding, FindingKind};
use std::collections::HashSet;

/// `true` for a line that reads as a title: one to eight words, at most
/// 70 characters, starting with a capital or a digit, not ending with
/// punctuation.
fn title_like(text: &str) -> bool {
    let words = text.split_whitespace().count();
    let first = text.chars().next();
    let last = text.chars().next_back();
    (1..=8).contains(&words)
        && text.chars().count() <= 70
        && first.is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
        && last.is_some_and(|c| !matches!(c, '.' | ',' | ';' | ':' | '!' | '?' | '|' | ')'))
        && !text.contains('|')
}

/// `true` when `text` ends a sentence.
fn ends_sentence(text: &str) -> bool {
    text.trim_end_matches(['*', '_', ' ', '"', '”', '»'])
        .ends_with(['.', '!', '?'])
}

/// The leading section number of a title (`2.2 Environment` → `2.2`).
fn leading_number(text: &str) -> Option<&str> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let number = text[..end].trim_end_matches('.');
    let rest = &text[end..];
    (!number.is_empty()
        && number.chars().next().is_some_and(|c| c.is_ascii_digit())
        && rest.starts_with(' '))
    .then_some(number)
}

/// `true` when section number `n` is missing from the numbered headings
/// at a place it fits: its predecessor (`2.1` for `2.2`) is a heading, or
/// it is a first sub-number (`2.1`) of a heading (`2`).
fn fits(n: &str, numbers: &HashSet<String>) -> bool {
    if numbers.contains(n) {
        return false;
    }
    let (parent, last) = match n.rsplit_once('.') {
        Some((p, l)) => (Some(p), l),
        None => (None, n),
    };
    let Ok(last) = last.parse::<u32>() else {
        return false;
    };
    let previous = match (parent, last) {
        (_, 0) => return false,
        (Some(p), 1) => return numbers.contains(p),
        (None, 1) => return false,
        (Some(p), l) => format!("{p}.{}", l - 1),
        (None, l) => (l - 1).to_string(),
    };
    numbers.contains(&previous)
}

/// What [`detect`] found: the findings, and the first lines of the
/// paragraphs that follow a glued heading (their duplicate findings are
/// the same defect seen from the other side).
#[derive(Debug, Default)]
pub struct Glued {
    /// One finding per glued heading.
    pub findings: Vec<Finding>,
    /// First line of the text after each glued heading.
    pub followers: HashSet<u32>,
}

/// Finds lines that were headings.
pub fn detect(doc: &Document<'_>, facts: &MarkdownFacts) -> Glued {
    let mut glued = Glued::default();
    let sections = &doc.stage1.sections.sections;
    let mut numbers: HashSet<String> = HashSet::new();
    for s in sections {
        if let Some(n) = &s.numbering {
            let parts: Vec<String> = n.parts.iter().map(u32::to_string).collect();
            numbers.insert(parts.join("."));
        }
    }
    let anchors = &doc.stage1.anchors.anchors;
    let dangling: HashSet<String> = facts
        .fragment_links
        .iter()
        .map(|l| l.fragment.to_lowercase())
        .filter(|f| !anchors.contains_key(f) && !facts.extra_anchors.contains(f))
        .collect();
    // The first paragraph under each heading, found by bisection (the
    // paragraphs are in document order): a scan from the top for each
    // section was quadratic on a large document.
    let paragraphs = &facts.paragraphs;
    let openers: HashSet<String> = sections
        .iter()
        .filter_map(|s| {
            let first = paragraphs.partition_point(|p| p.line_start <= s.heading_line_end);
            paragraphs
                .get(first)
                .filter(|p| p.line_start <= s.body_line_end && !p.in_list)
                .map(|p| normalize_whitespace(&p.text))
        })
        .filter(|t| t.chars().count() >= 20)
        .collect();
    for (i, p) in facts.paragraphs.iter().enumerate() {
        if p.in_list || p.line_end == p.line_start {
            continue;
        }
        for line in p.line_start + 1..=p.line_end {
            let (Some(text), Some(before)) = (doc.prose(line), doc.prose(line - 1)) else {
                continue;
            };
            let text = text.trim();
            if !title_like(text) || !ends_sentence(before) {
                continue;
            }
            let after: String = if line < p.line_end {
                (line + 1..=p.line_end)
                    .map(|l| doc.line(l).trim())
                    .collect::<Vec<_>>()
                    .join(" ")
            } else {
                // The next paragraph only follows the lost heading when no
                // heading stands between them; after a heading it opens
                // that heading's section, which it trivially "repeats".
                facts
                    .paragraphs
                    .get(i + 1)
                    .filter(|n| {
                        doc.section_at(n.line_start).map(|s| s.line_start)
                            == doc.section_at(line).map(|s| s.line_start)
                    })
                    .map(|n| n.text.clone())
                    .unwrap_or_default()
            };
            let follower = if line < p.line_end {
                line + 1
            } else {
                facts.paragraphs.get(i + 1).map_or(0, |n| n.line_start)
            };
            let numbered = leading_number(text).is_some_and(|n| fits(n, &numbers));
            let linked = dangling.contains(&koas_md::slug::github_slug(text));
            let restates = openers.contains(&normalize_whitespace(&after));
            let why = if numbered {
                "its section number fits the numbered headings, and no heading carries it"
            } else if linked {
                "a link of the document points to its anchor, which no heading has"
            } else if restates {
                "the text after it repeats the opening paragraph of another section"
            } else {
                continue;
            };
            glued.findings.push(Finding::new(
                FindingKind::GluedHeading,
                KERNEL,
                line,
                line,
                format!(
                    "“{text}” reads as a heading that lost its # marks and joined the paragraph above ({why}); restore the heading with a blank line before it"
                ),
                text,
            ).at_column(doc.column(line, doc.line(line).find(text).unwrap_or(0))));
            glued.followers.insert(follower);
        }
    }
    glued
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;
    use crate::markdown;

    fn scan(text: &str) -> Glued {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let facts = markdown::collect(&doc);
        detect(&doc, &facts)
    }

    #[test]
    fn a_lost_numbered_heading_is_found() {
        let text = "# 2. Configuration\n\n## 2.1 Files\n\nThe SDK reads the file first.\n2.2 Environment variables\n\nThe SDK then reads the environment.\n\n## 2.3 Defaults\n\nNone.\n";
        let g = scan(text);
        assert_eq!(g.findings.len(), 1, "{:?}", g.findings);
        assert_eq!(g.findings[0].line, 6);
        assert!(g.findings[0].message.contains("section number"));
    }

    #[test]
    fn a_lost_heading_restating_a_section_is_found_and_explains_the_repeat() {
        let rule = "The exporter MUST flush every pending batch before shutting down.";
        let text = format!(
            "# SDKs\n\n## Go SDK\n\n{rule}\n\nThe Go SDK uses a channel for it.\nJava SDK\n\n{rule}\n"
        );
        let g = scan(&text);
        assert_eq!(g.findings.len(), 1, "{:?}", g.findings);
        assert_eq!(g.findings[0].line, 8);
        assert!(g.followers.contains(&10));
    }

    #[test]
    fn a_lost_heading_a_link_points_to_is_found() {
        let text = "# T\n\nSee [limits](#rate-limits).\n\nRequests carry a token.\nRate limits\n\nAt most ten per second.\n";
        let g = scan(text);
        assert_eq!(g.findings.len(), 1, "{:?}", g.findings);
        assert_eq!(g.findings[0].line, 6);
    }

    /// Regression (issue 31, held-out documents): an answer ("No") ending
    /// a paragraph before the next heading was taken for a lost heading,
    /// because the paragraph after that heading opens its own section.
    #[test]
    fn the_opener_after_a_real_heading_is_not_a_repeat() {
        let text = "# KEP\n\n## Rollout\n\nIs the rollout accompanied by any deprecations?\nNo\n\n### Monitoring\n\nMetrics are provided by the state metrics exporter unless noted.\n";
        let found = scan(text);
        assert!(found.findings.is_empty(), "{:?}", found.findings);
    }

    #[test]
    fn ordinary_line_breaks_are_not_headings() {
        for text in [
            "# T\n\nThe service was written by the platform team.\nAlice Martin\n\nNext.\n",
            "# 1. A\n\n## 1.1 B\n\nThe totals are below.\n2024 figures\n\nText.\n",
            "# T\n\nThe value is set.\nSee the table\nbelow for more.\n",
        ] {
            let g = scan(text);
            assert!(g.findings.is_empty(), "{text}: {:?}", g.findings);
        }
    }
}
