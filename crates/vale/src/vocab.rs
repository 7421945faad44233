//! Vocabularies: a project's `<StylesPath>/config/vocabularies/<Name>/`
//! `accept.txt` and `reject.txt`, and the two rules Vale makes of them.

use crate::rule::{Rule, RuleError};

/// The entries of one or more vocabularies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vocabulary {
    accepted: Vec<String>,
    rejected: Vec<String>,
}

/// Why a vocabulary could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file} line {line}: the entry {entry:?} does not compile: {reason}")]
pub struct VocabError {
    /// `accept.txt` or `reject.txt`.
    pub file: &'static str,
    /// The 1-based line.
    pub line: usize,
    /// The entry as written.
    pub entry: String,
    /// What the regex compiler said.
    pub reason: String,
}

/// The entries of a list: one a line, trimmed; blank lines and `# `
/// comments are none. Each is a pattern and must compile.
fn entries(file: &'static str, text: &str) -> Result<Vec<String>, VocabError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let entry = line.trim();
        // Vale skips `# ` only: `#hashtag` may be a term.
        if entry.is_empty() || entry == "#" || entry.starts_with("# ") {
            continue;
        }
        if let Err(e) = fancy_regex::Regex::new(&format!("(?:{entry})")) {
            return Err(VocabError {
                file,
                line: i + 1,
                entry: entry.to_owned(),
                reason: e.to_string(),
            });
        }
        out.push(entry.to_owned());
    }
    Ok(out)
}

impl Vocabulary {
    /// A vocabulary from the texts of its `accept.txt` and `reject.txt`
    /// (either may be empty).
    pub fn parse(accept: &str, reject: &str) -> Result<Vocabulary, VocabError> {
        Ok(Vocabulary {
            accepted: entries("accept.txt", accept)?,
            rejected: entries("reject.txt", reject)?,
        })
    }

    /// Adds another vocabulary's entries (`Vocab = A, B`).
    pub fn extend(&mut self, other: Vocabulary) {
        self.accepted.extend(other.accepted);
        self.rejected.extend(other.rejected);
    }

    /// The accepted entries (patterns, most plain words): the host's
    /// speller accepts them, and they are exceptions to the rules read
    /// with [`crate::load_rule_with`].
    pub fn accepted(&self) -> &[String] {
        &self.accepted
    }

    /// The rejected entries.
    pub fn rejected(&self) -> &[String] {
        &self.rejected
    }

    /// The rules Vale derives: `Vale.Terms` if there are accepted
    /// entries (an accepted term in another case, `Javascript` for
    /// `JavaScript`, is an error "Use 'JavaScript' instead of
    /// 'Javascript'." with that replacement), `Vale.Avoid` if there are
    /// rejected ones (a rejected term is an error "Avoid using 'X'.").
    /// Both at level `error`, scope `text`; a `.vale.ini` may switch them
    /// like any rule.
    pub fn rules(&self) -> Result<Vec<Rule>, RuleError> {
        let mut rules = Vec::new();
        if !self.accepted.is_empty() {
            rules.push(Rule::vale_terms(&self.accepted)?);
        }
        if !self.rejected.is_empty() {
            rules.push(Rule::vale_avoid(&self.rejected, &self.accepted)?);
        }
        Ok(rules)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{load_rule_with, Level};

    fn messages(rule: &Rule, text: &str) -> Vec<String> {
        rule.check(text)
            .into_iter()
            .map(|a| format!("{}@{}:{}", a.rule, a.span.start, a.message))
            .collect()
    }

    #[test]
    fn accepted_terms_in_another_case_and_rejected_terms_are_errors() {
        let vocab = Vocabulary::parse(
            "# Our words\nJavaScript\n\n[Oo]bservability\nmacOS\n",
            "# Banned\nwhitelist\n",
        )
        .expect("reads");
        assert_eq!(
            vocab.accepted(),
            ["JavaScript", "[Oo]bservability", "macOS"]
        );
        assert_eq!(vocab.rejected(), ["whitelist"]);
        let rules = vocab.rules().expect("builds");
        assert_eq!(rules.len(), 2);
        let (terms, avoid) = (&rules[0], &rules[1]);
        assert_eq!(terms.name, "Vale.Terms");
        assert_eq!(terms.level, Level::Error);
        let text = "Javascript and JavaScript on MacOS; observability, OBSERVABILITY.";
        let alerts = terms.check(text);
        assert_eq!(
            messages(terms, text),
            [
                "Vale.Terms@0:Use 'JavaScript' instead of 'Javascript'.",
                "Vale.Terms@29:Use 'macOS' instead of 'MacOS'.",
                "Vale.Terms@51:Use '[Oo]bservability' instead of 'OBSERVABILITY'.",
            ]
        );
        assert_eq!(alerts[0].replacements, ["JavaScript"]);
        assert_eq!(
            messages(avoid, "No whitelist, no Whitelist."),
            ["Vale.Avoid@3:Avoid using 'whitelist'."]
        );
    }

    #[test]
    fn accepted_terms_are_exceptions_to_rules_that_take_the_vocabulary() {
        let vocab = Vocabulary::parse("Dockerfile\nmea culpa\n", "").expect("reads");
        let rule = "extends: existence\nmessage: \"'%s'?\"\ntokens: ['[A-Z]\\w+file', mea]\n";
        let with = load_rule_with("House.Words", rule, vocab.accepted())
            .expect("loads")
            .rule;
        assert!(with.check("A Dockerfile, mea culpa.").is_empty());
        assert_eq!(with.check("A Makefile, mea.").len(), 2);
        let without = load_rule_with(
            "House.Words",
            &format!("{rule}vocab: false\n"),
            vocab.accepted(),
        )
        .expect("loads");
        assert!(without.unsupported.is_empty(), "{:?}", without.unsupported);
        assert_eq!(without.rule.check("A Dockerfile.").len(), 1);
    }

    #[test]
    fn of_two_entries_in_different_cases_the_later_wins() {
        let mut vocab = Vocabulary::parse("definately\n", "").expect("reads");
        vocab.extend(Vocabulary::parse("Definately\n", "").expect("reads"));
        let rules = vocab.rules().expect("builds");
        assert_eq!(
            messages(&rules[0], "I've definately done it. Definately."),
            ["Vale.Terms@5:Use 'Definately' instead of 'definately'."]
        );
    }

    #[test]
    fn a_bad_entry_names_its_file_and_line() {
        let err = Vocabulary::parse("fine\n(open\n", "").expect_err("bad");
        assert_eq!((err.file, err.line), ("accept.txt", 2));
        let mut vocab = Vocabulary::parse("a\n", "b\n").expect("reads");
        vocab.extend(Vocabulary::parse("c\n", "").expect("reads"));
        assert_eq!(vocab.accepted(), ["a", "c"]);
        assert!(Vocabulary::default().rules().expect("none").is_empty());
    }
}
