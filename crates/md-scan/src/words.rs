//! Whole-word matching without `\b` in the regex.
//!
//! A Unicode `\b` makes the regex engine leave its fast DFA on any
//! non-ASCII line (French text), which made the term-pair and safety-word
//! scans the slowest part of Stage 2. Their regexes are therefore built
//! without `\b` (plain literal alternations, which the engine prefilters)
//! and each match is checked here for word boundaries instead.

use regex::Regex;
use std::borrow::Cow;
use std::sync::LazyLock;

/// A Unicode class as ranges read from the regex engine's own tables
/// (parsed, not compiled into a regex: a class like `\p{L}` costs most of
/// a millisecond to compile, a few microseconds to parse), so that code
/// can test a character exactly as a pattern holding the class would.
pub(crate) struct CharClass(Vec<(char, char)>);

impl CharClass {
    /// The class `pattern` (like `[\p{L}\p{N}_]`); `None` if it is not a
    /// Unicode class.
    pub(crate) fn parse(pattern: &str) -> Option<CharClass> {
        use regex_syntax::hir::{Class, HirKind};
        match regex_syntax::Parser::new().parse(pattern).ok()?.into_kind() {
            HirKind::Class(Class::Unicode(class)) => Some(CharClass(
                class
                    .ranges()
                    .iter()
                    .map(|r| (r.start(), r.end()))
                    .collect(),
            )),
            _ => None,
        }
    }

    /// Whether `c` is in the class.
    pub(crate) fn contains(&self, c: char) -> bool {
        self.0
            .binary_search_by(|&(lo, hi)| {
                if hi < c {
                    std::cmp::Ordering::Less
                } else if lo > c {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
    }
}

/// Markup that is not prose although Stage 1 leaves it in the line: link
/// and image targets (`](/fr/admin/dataset/new/)`), HTML tags with their
/// attributes, Liquid tags and bare URLs.
static NOT_PROSE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"\]\([^)]*\)|\]\[[^\]]*\]|<[A-Za-z/!][^>]*>|\{%.*?%\}|\{\{.*?\}\}|\bhttps?://\S+"#)
        .ok()
});

/// Compiles ahead the markup regex when `text` may need it.
pub(crate) fn warm<'a>(text: &'a str, jobs: &mut Vec<crate::gate::Warm<'a>>) {
    if text.contains(['(', '<', '{', '[', ':']) {
        jobs.push(Box::new(|| {
            LazyLock::force(&NOT_PROSE);
        }));
    }
}

/// `line` with the markup that is not prose blanked byte for byte
/// (offsets and UTF-8 stay valid).
pub fn mask_markup(line: &str) -> Cow<'_, str> {
    let Some(re) = NOT_PROSE.as_ref() else {
        return Cow::Borrowed(line);
    };
    if !line.contains(['(', '<', '{', '[', ':']) || !re.is_match(line) {
        return Cow::Borrowed(line);
    }
    let mut out = line.to_string();
    for m in re.find_iter(line) {
        // A link target keeps its `]` (it closes the link text).
        let start = if line[m.start()..].starts_with(']') {
            m.start() + 1
        } else {
            m.start()
        };
        out.replace_range(start..m.end(), &" ".repeat(m.end() - start));
    }
    Cow::Owned(out)
}

/// `true` when the match `start..end` is part of a path, a file name or an
/// identifier rather than a word of the sentence: `admin-harvest-dataset`,
/// `datasets/new`, `dataset.png`, `?dataset=`.
pub fn in_identifier(text: &str, start: usize, end: usize) -> bool {
    let before = text.get(..start).and_then(|s| s.chars().next_back());
    let mut rest = text.get(end..).unwrap_or("").chars();
    let after = rest.next();
    let after2 = rest.next();
    before.is_some_and(|c| {
        matches!(
            c,
            '/' | '\\' | '-' | '_' | '.' | '#' | '=' | '@' | '~' | '?' | '&'
        )
    }) || after.is_some_and(|c| matches!(c, '/' | '\\' | '-' | '_' | '#' | '=' | '@' | '~'))
        || (after == Some('.') && after2.is_some_and(|c| c.is_alphanumeric()))
}

/// `true` when `c` is part of a word (Unicode letters and digits, `_`).
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `true` when `start..end` of `text` starts and ends at word boundaries
/// (or does not start/end with a word character, as with `\b` semantics
/// of a match whose edges are words).
pub fn at_word_boundaries(text: &str, start: usize, end: usize) -> bool {
    let before = text.get(..start).and_then(|s| s.chars().next_back());
    let after = text.get(end..).and_then(|s| s.chars().next());
    !before.is_some_and(is_word_char) && !after.is_some_and(is_word_char)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_identifiers_are_not_prose() {
        let line = "Voir [la page](/fr/admin/dataset/new/) et <img src=\"dataset.png\"> {% link a/dataset.md %} https://x.fr/datasets";
        let masked = mask_markup(line);
        assert_eq!(masked.len(), line.len());
        assert!(!masked.contains("dataset"), "{masked}");
        assert!(masked.contains("la page"));
        let t = "le dataset admin-dataset-modal.png dataset.png dataset/r";
        let all: Vec<usize> = t.match_indices("dataset").map(|(i, _)| i).collect();
        let free: Vec<bool> = all.iter().map(|&i| !in_identifier(t, i, i + 7)).collect();
        assert_eq!(free, [true, false, false, false]);
        assert!(!in_identifier("the dataset.", 4, 11));
    }

    #[test]
    fn boundaries_follow_unicode_words() {
        let t = "le code mort, xcode morte, dead_code été";
        let at = |s: &str| {
            let i = t.find(s).unwrap_or(0);
            at_word_boundaries(t, i, i + s.len())
        };
        assert!(at("code mort,") || at("code mort"));
        assert!(!at("code morte"));
        assert!(!at("code mort") || t.find("code mort") == Some(3));
        assert!(!at("ead_code"));
        assert!(at("été"));
        assert!(!at("té"));
    }
}
