//! GitHub-compatible heading anchors (the github-slugger algorithm).
//!
//! A slug is the heading text lowercased, with every char removed except
//! letters (`L*`), marks (`M*`), decimal and letter numbers (`Nd`, `Nl`),
//! connector punctuation (`Pc`, e.g. `_`), `-` and the space; then each
//! space becomes `-`. [`Slugger`] de-duplicates like GitHub: the second
//! `x` becomes `x-1`, the third `x-2`, and a generated slug never takes one
//! already used.

use std::collections::HashMap;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// `true` for the chars github-slugger keeps.
fn keeps(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || matches!(c, ' ' | '-' | '_');
    }
    matches!(
        c.general_category(),
        GeneralCategory::UppercaseLetter
            | GeneralCategory::LowercaseLetter
            | GeneralCategory::TitlecaseLetter
            | GeneralCategory::ModifierLetter
            | GeneralCategory::OtherLetter
            | GeneralCategory::NonspacingMark
            | GeneralCategory::SpacingMark
            | GeneralCategory::EnclosingMark
            | GeneralCategory::DecimalNumber
            | GeneralCategory::LetterNumber
            | GeneralCategory::ConnectorPunctuation
    )
}

/// The slug of one heading text, before de-duplication.
pub fn github_slug(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .filter(|&c| keeps(c))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Gives unique slugs to the headings of one document, in order.
#[derive(Debug, Default, Clone)]
pub struct Slugger {
    occurrences: HashMap<String, u32>,
}

impl Slugger {
    /// A slugger with no slug taken.
    pub fn new() -> Self {
        Self::default()
    }

    /// The unique slug for `text` and the slug it was derived from.
    pub fn slug(&mut self, text: &str) -> (String, String) {
        let base = github_slug(text);
        let mut result = base.clone();
        while self.occurrences.contains_key(&result) {
            let n = self.occurrences.entry(base.clone()).or_insert(0);
            *n += 1;
            result = format!("{base}-{n}");
        }
        self.occurrences.insert(result.clone(), 0);
        (result, base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn github_examples() {
        assert_eq!(
            github_slug("7. Worker + Tutor Pattern"),
            "7-worker--tutor-pattern"
        );
        assert_eq!(
            github_slug("v7.3.1 Policy D — Markdown Stripping"),
            "v731-policy-d--markdown-stripping"
        );
        assert_eq!(
            github_slug("Blank-Line Targeting Guard (v2.4.0)"),
            "blank-line-targeting-guard-v240"
        );
        assert_eq!(github_slug("snake_case `code`"), "snake_case-code");
        assert_eq!(github_slug("Hello, World!"), "hello-world");
    }

    #[test]
    fn keeps_unicode_letters_and_drops_emoji_and_symbols() {
        assert_eq!(
            github_slug("Présentation générale"),
            "présentation-générale"
        );
        assert_eq!(github_slug("Обзор системы"), "обзор-системы");
        assert_eq!(github_slug("🚀 Déploiement"), "-déploiement");
        assert_eq!(github_slug("x² ½ €"), "x--");
        assert_eq!(github_slug("日本語のテスト"), "日本語のテスト");
        // A combining acute accent (NFD) is a mark: kept.
        assert_eq!(github_slug("e\u{301}te\u{301}"), "e\u{301}te\u{301}");
    }

    #[test]
    fn duplicates_get_numbered_suffixes() {
        let mut s = Slugger::new();
        assert_eq!(s.slug("Examples").0, "examples");
        assert_eq!(s.slug("Examples").0, "examples-1");
        assert_eq!(s.slug("Examples").0, "examples-2");
        // A literal heading equal to a generated slug is itself de-duplicated.
        assert_eq!(s.slug("Examples 1").0, "examples-1-1");
        let (anchor, base) = s.slug("examples");
        assert_eq!((anchor.as_str(), base.as_str()), ("examples-3", "examples"));
    }

    #[test]
    fn generated_before_literal() {
        let mut s = Slugger::new();
        assert_eq!(s.slug("a-1").0, "a-1");
        assert_eq!(s.slug("a").0, "a");
        assert_eq!(s.slug("a").0, "a-2");
    }

    proptest! {
        #[test]
        fn slugs_are_unique_and_clean(titles in proptest::collection::vec("[a-zA-Zé0-9 .!-]{0,12}", 0..40)) {
            let mut s = Slugger::new();
            let mut seen = std::collections::HashSet::new();
            for t in &titles {
                let (slug, _) = s.slug(t);
                prop_assert!(seen.insert(slug.clone()), "duplicate {}", slug);
                prop_assert!(!slug.contains(' ') && !slug.contains('.') && !slug.contains('!'));
            }
        }
    }
}
