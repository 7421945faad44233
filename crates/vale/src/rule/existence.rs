//! `existence`: any match of the rule's tokens is an alert.

use super::keys::Keys;
use super::pattern::{compile, compile_alternation, matches, non_capturing, Exceptions};
use super::regex::Regex;
use super::{Hit, RuleError};

/// An `existence` rule's parameters, as written.
#[derive(Debug, Default)]
pub(crate) struct ExistenceSpec {
    pub(crate) tokens: Vec<String>,
    /// One pattern written in pieces, taken as written.
    pub(crate) raw: Vec<String>,
    pub(crate) ignorecase: bool,
    pub(crate) nonword: bool,
    /// `raw` after the tokens rather than before.
    pub(crate) append: bool,
    pub(crate) exceptions: Vec<String>,
    /// The vocabularies' accepted entries are exceptions too.
    pub(crate) vocab: bool,
}

/// A compiled `existence` rule.
#[derive(Debug)]
pub(crate) struct Existence {
    pattern: Regex,
    exceptions: Exceptions,
}

impl ExistenceSpec {
    /// Reads the keys of an `existence` rule.
    pub(crate) fn read(keys: &mut Keys) -> Result<ExistenceSpec, RuleError> {
        Ok(ExistenceSpec {
            tokens: keys.list("tokens")?,
            raw: keys.list("raw")?,
            ignorecase: keys.flag("ignorecase", false)?,
            nonword: keys.flag("nonword", false)?,
            append: keys.flag("append", false)?,
            exceptions: keys.list("exceptions")?,
            vocab: keys.flag("vocab", true)?,
        })
    }
}

impl Existence {
    /// Compiles rule `rule`'s spec; `accepted` are the vocabularies'
    /// accepted entries.
    pub(crate) fn new(
        rule: &str,
        spec: &ExistenceSpec,
        accepted: &[String],
    ) -> Result<Existence, RuleError> {
        let tokens: Vec<&str> = spec
            .tokens
            .iter()
            .map(String::as_str)
            .filter(|t| !t.trim().is_empty())
            .collect();
        let raw = spec.raw.concat();
        if raw.is_empty() && tokens.is_empty() {
            return Err(RuleError::Key {
                rule: rule.to_owned(),
                key: "tokens".to_owned(),
                reason: "an existence rule needs tokens or raw".to_owned(),
            });
        }
        // As Vale builds it: the tokens as whole words (unless `nonword`,
        // or there are none), `raw` before them (after, with `append`),
        // the case flag first.
        let body = if spec.nonword || tokens.is_empty() {
            format!("(?m)(?:{})", tokens.join("|"))
        } else {
            format!(r"(?m)\b(?:{})\b", tokens.join("|"))
        };
        let joined = if spec.append {
            format!("{body}{raw}")
        } else {
            format!("{raw}{body}")
        };
        let pattern = format!("{}{joined}", if spec.ignorecase { "(?i)" } else { "" });
        let key = if tokens.is_empty() { "raw" } else { "tokens" };
        // Accepted words would excuse any match that merely holds one, so
        // a `nonword` rule takes only its own exceptions (Vale 3.x).
        let vocab: &[String] = if spec.vocab && !spec.nonword {
            accepted
        } else {
            &[]
        };
        // Tokens alone: an alternation, so that a few tokens needing
        // look-arounds do not slow the others down.
        let compiled = if raw.is_empty() {
            let alternatives: Vec<String> = tokens.iter().map(|t| non_capturing(t)).collect();
            compile_alternation(rule, key, &alternatives, spec.ignorecase, spec.nonword)?
        } else {
            compile(rule, key, &pattern)?
        };
        Ok(Existence {
            pattern: compiled,
            exceptions: Exceptions::new(rule, &spec.exceptions, vocab)?,
        })
    }

    /// The alerts on `text`.
    pub(crate) fn run(&self, message: &str, text: &str) -> Vec<Hit> {
        let excuser = self.exceptions.excuser(text);
        matches(&self.pattern, text)
            .into_iter()
            .filter(|span| !excuser.excuse(span))
            .map(|span| Hit::quoting(message, text, span))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::rule::testing::{messages, rule};

    #[test]
    fn a_word_rule_matches_whole_words_and_a_nonword_rule_anything() {
        let words = rule(
            "House.Latin",
            "extends: existence\nmessage: \"Avoid '%s'.\"\nignorecase: true\ntokens:\n  - via\n  - e\\.g\\.\n",
        );
        // As in Vale, a word rule's tokens are wrapped in word
        // boundaries: `e.g.` followed by a space ends on none, so only a
        // `nonword` rule finds it.
        assert_eq!(
            messages(&words, "Sent Via post, not trivial: e.g. this."),
            ["1:6:House.Latin:Avoid 'Via'."]
        );
        let bangs = rule(
            "House.Bang",
            "extends: existence\nmessage: \"No exclamation points.\"\nnonword: true\nlevel: error\ntokens:\n  - '\\w+!(?:\\s|$)'\n",
        );
        assert_eq!(
            messages(&bangs, "Done! Really"),
            ["1:1:House.Bang:No exclamation points."]
        );
    }

    #[test]
    fn exceptions_lookarounds_and_raw_pieces_hold() {
        let acronyms = rule(
            "House.Acronyms",
            "extends: existence\nmessage: \"Spell out '%s'.\"\nraw:\n  - '\\b[A-Z]{3,5}'\n  - '(?!s)\\b'\nnonword: true\nexceptions:\n  - API\n  - HTTP\n",
        );
        assert_eq!(
            messages(
                &acronyms,
                "The API speaks HTTP to the NSA and to many FAQs."
            ),
            ["1:28:House.Acronyms:Spell out 'NSA'."]
        );
        let passive = rule(
            "House.Passive",
            "extends: existence\nmessage: \"Active voice, not '%s'.\"\nignorecase: true\nraw:\n  - \\b(am|is|was)\\b\\s*\ntokens:\n  - '[\\w]+ed'\n  - broken\n",
        );
        assert_eq!(
            messages(&passive, "The build was broken twice."),
            ["1:11:House.Passive:Active voice, not 'was broken'."]
        );
    }

    #[test]
    fn a_line_end_ends_a_pattern_as_in_vales_multi_line_mode() {
        // Vale's patterns are multi-line: `$` also ends a line, so a
        // heading's text with its line break still ends there.
        let ends = rule(
            "House.End",
            "extends: existence\nmessage: x\nnonword: true\ntokens: ['[a-z][.?!]$']\n",
        );
        assert_eq!(ends.check("Another one.\n").len(), 1);
        assert_eq!(ends.check("One. Two\nthree!\n").len(), 1);
    }

    #[test]
    fn exceptions_are_found_in_a_match_and_keep_their_case() {
        let caps = rule(
            "House.Caps",
            "extends: existence\nmessage: x\nignorecase: true\nnonword: true\ntokens: ['[a-z]+ api']\nexceptions: [API]\n",
        );
        assert!(
            caps.check("the API").is_empty(),
            "the exception is in the match"
        );
        assert_eq!(caps.check("the api").len(), 1, "exceptions keep their case");
        let appended = rule(
            "House.After",
            "extends: existence\nmessage: \"'%s'\"\nappend: true\nraw: ['(?= now)']\ntokens: [go]\n",
        );
        assert_eq!(
            messages(&appended, "go on, go now"),
            ["1:8:House.After:'go'"]
        );
    }
}
