//! Duplicated paragraphs: a paragraph whose text, whitespace normalised,
//! repeats an earlier paragraph's. List items are not compared (changelogs
//! and checklists repeat items on purpose); very short paragraphs are not
//! either (`duplicate_min_chars`), nor paragraphs made mostly of code spans
//! (API references repeat `Returns: {...}` lines on purpose).

use super::KERNEL;
use crate::config::ScanConfig;
use crate::document::Document;
use crate::finding::{Finding, FindingKind};
use crate::markdown::MarkdownFacts;
use std::collections::HashMap;

/// Collapses every run of whitespace to one space and trims.
pub fn normalize_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reports every paragraph that repeats an earlier one.
pub fn detect(
    doc: &Document<'_>,
    facts: &MarkdownFacts,
    config: &ScanConfig,
    out: &mut Vec<Finding>,
) {
    let mut first_seen: HashMap<String, u32> = HashMap::new();
    for p in &facts.paragraphs {
        let mostly_code = p.code_chars * 2 > p.text.chars().count();
        if p.in_list
            || mostly_code
            || (p.line_start..=p.line_end).any(|l| doc.block_kind(l).is_some())
        {
            continue;
        }
        let key = normalize_whitespace(&p.text);
        if key.chars().count() < config.duplicate_min_chars {
            continue;
        }
        match first_seen.get(&key) {
            Some(&first) => out.push(Finding::new(
                FindingKind::DuplicateParagraph,
                KERNEL,
                p.line_start,
                p.line_end,
                format!(
                    "This paragraph repeats the paragraph at line {first} word for word; keep one of them"
                ),
                &key,
            )),
            None => {
                first_seen.insert(key, p.line_start);
            }
        }
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
