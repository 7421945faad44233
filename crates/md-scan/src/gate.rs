//! Regexes behind a literal gate, compiled on first use.
//!
//! A case-insensitive regex with Unicode word boundaries costs 0.1–1.5 ms
//! to compile and is slow to run on every line, while `koas check` on a
//! whole small document should cost a few milliseconds. Most of these
//! regexes can only match a line that holds one of a few words: a gate
//! lists them (every match of the regex contains at least one), a line
//! without any is skipped without running the regex, and a document with
//! no such line never compiles it. The findings are the same: the gate
//! only rules out lines the regex could not match.
//!
//! Needles are compared ASCII-case-insensitively; their other characters
//! must match exactly, so a needle holds no non-ASCII letter that has a
//! case. A case-insensitive regex also matches `ſ` for `s` and the Kelvin
//! sign for `k`: a line holding either always passes the gate.

use regex::Regex;
use std::sync::OnceLock;

/// `true` when `hay` contains `needle`, ASCII letters compared without
/// case, every other byte exactly.
pub fn contains_ignore_ascii_case(hay: &str, needle: &str) -> bool {
    let (hay, needle) = (hay.as_bytes(), needle.as_bytes());
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    if hay.len() < needle.len() {
        return false;
    }
    let last_start = hay.len() - needle.len();
    let (lower, upper) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    let mut from = 0;
    while from <= last_start {
        let Some(i) = memchr::memchr2(lower, upper, &hay[from..=last_start]) else {
            return false;
        };
        let at = from + i;
        if hay[at + 1..at + needle.len()].eq_ignore_ascii_case(rest) {
            return true;
        }
        from = at + 1;
    }
    false
}

/// `true` when `hay` holds a character a case-insensitive regex matches
/// for an ASCII letter (`ſ` for `s`, the Kelvin sign for `k`).
fn has_ascii_fold(hay: &str) -> bool {
    !hay.is_ascii() && hay.contains(['\u{17F}', '\u{212A}'])
}

/// The gate itself: which needles, and whether a text may match.
#[derive(Debug, Clone, Default)]
pub struct Needles(Vec<String>);

impl Needles {
    /// Needles from a list (none: every text passes).
    pub fn new<S: AsRef<str>>(needles: &[S]) -> Needles {
        Needles(
            needles
                .iter()
                .map(|n| n.as_ref().to_owned())
                .filter(|n| !n.is_empty())
                .collect(),
        )
    }

    /// `false` only when no match of the gated regex can be in `hay`.
    pub fn may_match(&self, hay: &str) -> bool {
        self.0.is_empty()
            || self.0.iter().any(|n| contains_ignore_ascii_case(hay, n))
            || has_ascii_fold(hay)
    }

    /// The longest run of ASCII letters and digits of each term: every
    /// match of a pattern built from the terms' words (kept literally,
    /// matched case-insensitively) contains one. A term with no such run
    /// gives no gate at all.
    pub fn from_words<'a>(terms: impl IntoIterator<Item = &'a str>) -> Needles {
        let mut out = Vec::new();
        for term in terms {
            let run = term
                .split(|c: char| !c.is_ascii_alphanumeric())
                .max_by_key(|r| r.len())
                .unwrap_or("");
            if run.is_empty() {
                return Needles::default();
            }
            out.push(run.to_ascii_lowercase());
        }
        out.sort();
        out.dedup();
        Needles(out)
    }
}

/// A regex compiled on first use behind its [`Needles`].
#[derive(Debug)]
pub struct Gated {
    pattern: String,
    needles: Needles,
    regex: OnceLock<Option<Regex>>,
}

impl Gated {
    /// `pattern` (valid: checked by the tests of each user, or by
    /// [`Gated::checked`]) behind `needles`.
    pub fn new(pattern: impl Into<String>, needles: Needles) -> Gated {
        Gated {
            pattern: pattern.into(),
            needles,
            regex: OnceLock::new(),
        }
    }

    /// Like [`Gated::new`], the pattern's syntax checked now without
    /// compiling it (a configured pattern's error must name it at once);
    /// the error is the parser's message.
    pub fn checked(pattern: impl Into<String>, needles: Needles) -> Result<Gated, String> {
        let pattern = pattern.into();
        regex_syntax::Parser::new()
            .parse(&pattern)
            .map_err(|e| e.to_string())?;
        Ok(Gated::new(pattern, needles))
    }

    /// The compiled regex, when `hay` may match.
    pub fn for_text(&self, hay: &str) -> Option<&Regex> {
        if !self.needles.may_match(hay) {
            return None;
        }
        self.regex
            .get_or_init(|| Regex::new(&self.pattern).ok())
            .as_ref()
    }

    /// Whether the regex has been compiled (for tests).
    #[cfg(test)]
    pub fn compiled(&self) -> bool {
        self.regex.get().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn needles_are_found_without_ascii_case() {
        assert!(contains_ignore_ascii_case("I Hope this HELPS", "helps"));
        assert!(contains_ignore_ascii_case("j’espère", "j’esp"));
        assert!(!contains_ignore_ascii_case("help", "helps"));
        assert!(!contains_ignore_ascii_case("", "a"));
        assert!(contains_ignore_ascii_case("abc", ""));
        assert!(contains_ignore_ascii_case("xxab", "AB"));
    }

    #[test]
    fn a_gate_never_compiles_for_a_text_without_its_words() {
        let g = Gated::new(r"(?i)\bsorry\b", Needles::new(&["sorry"]));
        assert!(g.for_text("nothing here").is_none());
        assert!(!g.compiled());
        assert!(g
            .for_text("I am SORRY")
            .is_some_and(|r| r.is_match("I am SORRY")));
        // The characters a case-insensitive regex folds onto ASCII letters.
        let g = Gated::new(r"(?i)\bsorry\b", Needles::new(&["sorry"]));
        assert!(g.for_text("ſorry").is_some_and(|r| r.is_match("ſorry")));
    }

    #[test]
    fn words_give_their_longest_ascii_runs() {
        let n = Needles::from_words(["Équation", "Fig.", "journal d'audit"]);
        assert_eq!(n.0, vec!["fig", "journal", "quation"]);
        // A term of no ASCII letter: no gate.
        assert!(Needles::from_words(["Équation", "é"]).0.is_empty());
    }

    proptest! {
        #[test]
        fn agrees_with_lowercased_search(hay in "[a-dA-D ’é]{0,12}", needle in "[a-dA-D]{1,3}") {
            let expected = hay.to_ascii_lowercase().contains(&needle.to_ascii_lowercase());
            prop_assert_eq!(contains_ignore_ascii_case(&hay, &needle), expected);
        }
    }
}
