//! Whole-word matching without `\b` in the regex.
//!
//! A Unicode `\b` makes the regex engine leave its fast DFA on any
//! non-ASCII line (French text), which made the term-pair and safety-word
//! scans the slowest part of Stage 2. Their regexes are therefore built
//! without `\b` (plain literal alternations, which the engine prefilters)
//! and each match is checked here for word boundaries instead.

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
