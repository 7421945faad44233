//! The project's own words: accepted (never misspellings) and rejected
//! (always reported), from `koas.toml` and from words files.
//!
//! A words file holds one entry a line, `#` starting a comment, as Vale's
//! `accept.txt` and cspell's word lists do. An entry of letters (with
//! inner apostrophes, hyphens and dots) is a word: all lower-case, it
//! matches any capitalisation; with a capital, that capitalisation (and
//! the same word opening a sentence). Any other entry is a regular
//! expression that must match the whole word, case-sensitive, as Vale
//! reads `accept.txt` (`[Kk]ubectl`, `(?i)etcd`).

use crate::tokens::fold;
use crate::LangError;
use regex::Regex;
use std::collections::HashSet;

/// Accepted and rejected words.
#[derive(Debug, Clone, Default)]
pub struct Vocabulary {
    any_case: HashSet<String>,
    exact: HashSet<String>,
    patterns: Vec<Regex>,
    reject: HashSet<String>,
    reject_patterns: Vec<Regex>,
}

/// `true` when `entry` is a plain word rather than a pattern.
fn is_plain(entry: &str) -> bool {
    entry
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '\'' | '’' | '-' | '.'))
}

fn compile(entry: &str, origin: &str) -> Result<Regex, LangError> {
    Regex::new(&format!("^(?:{entry})$"))
        .map_err(|e| LangError::Words(format!("{origin}: {entry:?} is not a valid pattern: {e}")))
}

impl Vocabulary {
    /// The vocabulary of `accept` and `reject` entries; `origin` names
    /// where they come from in errors (`koas.toml [language] accept`).
    pub fn new(accept: &[String], reject: &[String], origin: &str) -> Result<Self, LangError> {
        let mut v = Vocabulary::default();
        v.accept_all(accept, origin)?;
        for entry in reject.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            if is_plain(entry) {
                v.reject.insert(fold(entry));
            } else {
                v.reject_patterns.push(compile(entry, origin)?);
            }
        }
        Ok(v)
    }

    /// Adds accepted entries.
    pub fn accept_all(&mut self, entries: &[String], origin: &str) -> Result<(), LangError> {
        for entry in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            if !is_plain(entry) {
                self.patterns.push(compile(entry, origin)?);
            } else if entry.chars().any(char::is_uppercase) {
                self.exact.insert(entry.replace('’', "'"));
            } else {
                self.any_case.insert(fold(entry));
            }
        }
        Ok(())
    }

    /// `true` when no entry was given.
    pub fn is_empty(&self) -> bool {
        self.any_case.is_empty()
            && self.exact.is_empty()
            && self.patterns.is_empty()
            && self.reject.is_empty()
            && self.reject_patterns.is_empty()
    }

    /// `true` when the project accepts `word`; `sentence_start` lets a
    /// capitalised entry match its capitalised-for-the-sentence form too.
    pub fn accepts(&self, word: &str) -> bool {
        // Asked for every distinct word of every document: nothing to
        // copy or hash when the project lists no words (most runs).
        if self.any_case.is_empty() && self.exact.is_empty() && self.patterns.is_empty() {
            return false;
        }
        let straight = word.replace('’', "'");
        if self.any_case.contains(&fold(word)) || self.exact.contains(&straight) {
            return true;
        }
        if self.patterns.iter().any(|p| p.is_match(word)) {
            return true;
        }
        // "Kubectl" opening a sentence is the accepted "kubectl"; an
        // accepted "GitHub" written "github" is not accepted.
        let mut chars = straight.chars();
        match chars.next() {
            Some(first) if first.is_uppercase() => {
                let lowered: String = first.to_lowercase().chain(chars).collect();
                self.exact.contains(&lowered)
            }
            _ => false,
        }
    }

    /// `true` when the project rejects `word` (reported even when a
    /// dictionary knows it).
    pub fn rejects(&self, word: &str) -> bool {
        if self.reject.is_empty() && self.reject_patterns.is_empty() {
            return false;
        }
        self.reject.contains(&fold(word)) || self.reject_patterns.iter().any(|p| p.is_match(word))
    }
}

/// The entries of a words file: one a line, `#` comments and blank lines
/// skipped.
pub fn parse_words_file(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split_once('#').map_or(l, |(before, _)| before).trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn plain_entries_match_by_case_and_patterns_whole() {
        let v = Vocabulary::new(
            &words(&["kubelet", "GitHub", "[Kk]ubectl", "(?i)etcd"]),
            &words(&["e-mail"]),
            "test",
        )
        .expect("valid");
        assert!(v.accepts("kubelet") && v.accepts("Kubelet"));
        assert!(v.accepts("GitHub") && !v.accepts("github"));
        assert!(v.accepts("Kubectl") && v.accepts("kubectl") && !v.accepts("kubectls"));
        assert!(v.accepts("ETCD"));
        assert!(v.rejects("E-mail") && !v.rejects("email"));
    }

    #[test]
    fn a_bad_pattern_is_named() {
        let e = Vocabulary::new(&words(&["[oops"]), &[], "koas.toml [language] accept")
            .expect_err("bad");
        assert!(
            e.to_string()
                .contains("koas.toml [language] accept: \"[oops\""),
            "{e}"
        );
    }

    #[test]
    fn words_files_skip_comments_and_blanks() {
        assert_eq!(
            parse_words_file("# team words\nkubelet\n\n  etcd  # the store\n"),
            ["kubelet", "etcd"]
        );
    }
}
