//! Duplicated paragraphs: a paragraph whose text, whitespace normalised,
//! repeats an earlier paragraph's. Reported at the repeat.
//!
//! Not compared: list items (changelogs and checklists repeat items on
//! purpose), paragraphs under `duplicate_min_chars`, and paragraphs made
//! mostly of code spans (API references repeat `Returns: {...}`).
//!
//! Not reported, because the repetition is deliberate: a text that occurs
//! `duplicate_boilerplate_repeats` times or more (release notes repeat
//! "Note: this release has been yanked." under every version), and a short
//! paragraph (under `duplicate_short_chars`) repeated under another heading.
//! A repeat inside one section, or of a longer paragraph anywhere, is a
//! copy-paste slip and is reported.

use super::KERNEL;
use crate::config::ScanConfig;
use crate::document::Document;
use crate::markdown::MarkdownFacts;
use koas_review_schema::findings::{Finding, FindingKind};
use std::collections::HashMap;

/// Collapses every run of whitespace to one space and trims.
pub fn normalize_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One compared paragraph.
struct Candidate {
    key: String,
    line_start: u32,
    line_end: u32,
}

/// Reports every paragraph that repeats an earlier one.
pub fn detect(
    doc: &Document<'_>,
    facts: &MarkdownFacts,
    config: &ScanConfig,
    out: &mut Vec<Finding>,
) {
    let candidates: Vec<Candidate> = facts
        .paragraphs
        .iter()
        .filter(|p| {
            let mostly_code = p.code_chars * 2 > p.text.chars().count();
            !p.in_list
                && !mostly_code
                && !(p.line_start..=p.line_end).any(|l| doc.block_kind(l).is_some())
        })
        .map(|p| Candidate {
            key: normalize_whitespace(&p.text),
            line_start: p.line_start,
            line_end: p.line_end,
        })
        .filter(|c| c.key.chars().count() >= config.duplicate_min_chars)
        .collect();
    let mut occurrences: HashMap<&str, usize> = HashMap::new();
    for c in &candidates {
        *occurrences.entry(c.key.as_str()).or_insert(0) += 1;
    }
    let section_of = |line: u32| doc.section_at(line).map(|s| s.id.as_str());
    let mut first_seen: HashMap<&str, u32> = HashMap::new();
    for c in &candidates {
        let Some(&first) = first_seen.get(c.key.as_str()) else {
            first_seen.insert(&c.key, c.line_start);
            continue;
        };
        let repeats = occurrences.get(c.key.as_str()).copied().unwrap_or(0);
        let boilerplate = config.duplicate_boilerplate_repeats > 0
            && repeats >= config.duplicate_boilerplate_repeats;
        let short_elsewhere = c.key.chars().count() < config.duplicate_short_chars
            && section_of(first) != section_of(c.line_start);
        if boilerplate || short_elsewhere {
            continue;
        }
        out.push(Finding::new(
            FindingKind::DuplicateParagraph,
            KERNEL,
            c.line_start,
            c.line_end,
            format!(
                "This paragraph repeats the paragraph at line {first} word for word; keep one of them"
            ),
            &c.key,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;
    use crate::markdown;
    use proptest::prelude::*;

    fn scan(text: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let facts = markdown::collect(&doc);
        let mut out = Vec::new();
        detect(&doc, &facts, &ScanConfig::default(), &mut out);
        out
    }

    #[test]
    fn reports_the_repeat_with_normalised_whitespace() {
        let text = "# T\n\nThe gateway buffers messages on local disk for one hour.\n\n\
                    The gateway  buffers messages\non local disk for one hour.\n\nShort one.\n\nShort one.\n";
        let found = scan(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].line, found[0].line_end), (5, 6));
        assert!(found[0].message.contains("line 3"));
    }

    #[test]
    fn boilerplate_and_short_repeats_under_other_headings_are_deliberate() {
        let note = "Note: This release has been yanked, see the advisory for details.";
        let text = format!("# 1.0\n\n{note}\n\n# 0.9\n\n{note}\n\n# 0.8\n\n{note}\n");
        assert!(scan(&text).is_empty(), "three or more occurrences");
        let short = "This is a patch release with some minor fixes.";
        let text = format!("# 1.0\n\n{short}\n\n# 0.9\n\n{short}\n");
        assert!(scan(&text).is_empty(), "short, under another heading");
        let text = format!("# 1.0\n\n{short}\n\n{short}\n");
        assert_eq!(scan(&text).len(), 1, "short, same section");
        let long = "The gateway buffers messages on local disk for up to one hour when the central store is unreachable, then replays them in order.";
        let text = format!("# A\n\n{long}\n\n# B\n\n{long}\n");
        assert_eq!(scan(&text).len(), 1, "long, anywhere");
    }

    #[test]
    fn list_items_and_code_are_not_compared() {
        let text = "# T\n\n- Updated the dependencies of the service to their latest versions\n\n\
                    - Updated the dependencies of the service to their latest versions\n\n\
                    **Returns:** `{\"status\": \"ok\", \"workspace\": \"<path>\"}`\n\n\
                    **Returns:** `{\"status\": \"ok\", \"workspace\": \"<path>\"}`\n\n\
                    ```\nA long line of code repeated in two places of the file.\nA long line of code repeated in two places of the file.\n```\n";
        assert!(scan(text).is_empty());
    }

    proptest! {
        #[test]
        fn normalising_is_idempotent_and_ignores_spacing(words in prop::collection::vec("[a-zé]{1,6}", 1..10), gaps in prop::collection::vec("[ \t\n]{1,3}", 10)) {
            let spaced: String = words.iter().zip(gaps.iter().cycle()).map(|(w, g)| format!("{w}{g}")).collect();
            let n = normalize_whitespace(&spaced);
            prop_assert_eq!(&n, &words.join(" "));
            prop_assert_eq!(normalize_whitespace(&n), n.clone());
        }
    }
}
