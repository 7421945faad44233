//! File-name-safe chunk ID prefixes.
//!
//! The anchor is decomposed (NFD) and its combining marks dropped, so
//! `présentation-générale` becomes `presentation-generale`; then only
//! ASCII `a-z`, `0-9`, `-` and `_` are kept, runs of `-` are collapsed, the
//! ends trimmed and the result cut to [`MAX_PREFIX_BYTES`]. When nothing is
//! left (a heading in Cyrillic, CJK or emoji only), the section ID is used
//! (`S2.3.1` → `s2-3-1`).

use koas_review_schema::stage1::PREAMBLE_SECTION_ID;
use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

/// Longest prefix kept, in bytes (all ASCII).
pub const MAX_PREFIX_BYTES: usize = 48;

/// The file-name-safe prefix of a chunk ID for a section.
pub fn safe_prefix(anchor: &str, section_id: &str) -> String {
    if section_id == PREAMBLE_SECTION_ID {
        return "preamble".to_string();
    }
    let cleaned = clean(anchor);
    if cleaned.is_empty() {
        clean(&section_id.replace('.', "-"))
    } else {
        cleaned
    }
}

fn clean(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_PREFIX_BYTES + 4));
    let ascii = s.is_ascii();
    let chars: Box<dyn Iterator<Item = char> + '_> = if ascii {
        Box::new(s.chars())
    } else {
        Box::new(s.nfd())
    };
    for c in chars {
        if !ascii && c.general_category_group() == GeneralCategoryGroup::Mark {
            continue;
        }
        let c = c.to_ascii_lowercase();
        let keep = c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if !keep || (c == '-' && out.ends_with('-')) {
            continue;
        }
        out.push(c);
        if out.len() >= MAX_PREFIX_BYTES {
            break;
        }
    }
    out.trim_matches(['-', '_']).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strips_accents_and_unsafe_chars() {
        assert_eq!(
            safe_prefix("présentation-générale", "S1"),
            "presentation-generale"
        );
        assert_eq!(
            safe_prefix("7-worker--tutor-pattern", "S7"),
            "7-worker-tutor-pattern"
        );
        assert_eq!(safe_prefix("a/b\\c:d*e?f\"g<h>i|j", "S1"), "abcdefghij");
        assert_eq!(safe_prefix("snake_case", "S1"), "snake_case");
    }

    #[test]
    fn falls_back_to_the_section_id() {
        assert_eq!(safe_prefix("обзор-системы", "S2.3.1"), "s2-3-1");
        assert_eq!(safe_prefix("", "S4"), "s4");
        assert_eq!(safe_prefix("-", "S4.1"), "s4-1");
        assert_eq!(safe_prefix("anything", PREAMBLE_SECTION_ID), "preamble");
    }

    #[test]
    fn is_bounded() {
        let long = "a".repeat(500);
        assert_eq!(safe_prefix(&long, "S1").len(), MAX_PREFIX_BYTES);
    }

    proptest! {
        #[test]
        fn always_a_safe_non_empty_name(anchor in "\\PC{0,80}", n in 1u32..50) {
            let p = safe_prefix(&anchor, &format!("S{n}.2"));
            prop_assert!(!p.is_empty());
            prop_assert!(p.len() <= MAX_PREFIX_BYTES);
            prop_assert!(p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_'));
        }
    }
}
