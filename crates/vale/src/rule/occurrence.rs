//! `occurrence`: a piece of text (a sentence, a paragraph…) with more
//! matches of the rule's token than `max`, or fewer than `min`, is an
//! alert.

use super::keys::Keys;
use super::message::fill;
use super::pattern::{compile, matches};
use super::regex::Regex;
use super::{Hit, RuleError};

/// A compiled `occurrence` rule.
#[derive(Debug)]
pub(crate) struct Occurrence {
    token: Regex,
    /// 0: no most.
    max: usize,
    /// 0: no least.
    min: usize,
}

impl Occurrence {
    /// Reads and compiles an `occurrence` rule.
    pub(crate) fn read(keys: &mut Keys) -> Result<Occurrence, RuleError> {
        let token = keys
            .text("token")?
            .filter(|t| !t.is_empty())
            .ok_or_else(|| keys.error("token", "an occurrence rule needs a token"))?;
        let max = keys.count("max")?.unwrap_or(0);
        let min = keys.count("min")?.unwrap_or(0);
        let case = if keys.flag("ignorecase", false)? {
            "(?i)"
        } else {
            ""
        };
        Ok(Occurrence {
            token: compile(keys.rule(), "token", &format!("{case}(?:{token})"))?,
            max,
            min,
        })
    }

    /// The alert on `text`, if it holds too many or too few matches: on
    /// the first match that is not code blanked out (`***`), or on the
    /// whole text when there is none. Its `%s` (or `%d`) is the count.
    pub(crate) fn run(&self, message: &str, text: &str) -> Vec<Hit> {
        let found = matches(&self.token, text);
        let n = found.len();
        if !((self.max > 0 && n > self.max) || (self.min > 0 && n < self.min)) {
            return Vec::new();
        }
        let span = if n == 0 {
            let start = text.len() - text.trim_start().len();
            start..text.trim_end().len().max(start)
        } else {
            // A match of nothing but blanked code is no place to show.
            let Some(first) = found.into_iter().find(|m| {
                let s = text[m.clone()].trim();
                !s.is_empty() && !s.chars().all(|c| c == '*' || c == '@')
            }) else {
                return Vec::new();
            };
            first
        };
        vec![Hit {
            span,
            message: fill(message, &[&n.to_string()]),
            replacements: Vec::new(),
        }]
    }
}

#[cfg(test)]
mod tests {
    use crate::rule::testing::{messages, rule};

    #[test]
    fn too_many_or_too_few_matches_are_an_alert_with_the_count() {
        let most = rule(
            "House.Commas",
            "extends: occurrence\nmessage: \"More than 2 commas (%d).\"\nmax: 2\ntoken: ','\n",
        );
        assert!(most.check("a, b, c").is_empty());
        assert_eq!(
            messages(&most, "a, b, c, d"),
            ["1:2:House.Commas:More than 2 commas (3)."]
        );
        let least = rule(
            "House.Words",
            "extends: occurrence\nmessage: \"Only %s words.\"\nmin: 3\nignorecase: true\ntoken: '\\bWORD\\b'\n",
        );
        assert_eq!(
            messages(&least, "word, Word"),
            ["1:1:House.Words:Only 2 words."]
        );
        let none = least.check("  nothing here ");
        assert_eq!(none.len(), 1);
        assert_eq!(none[0].span, 2..14, "the text, without its spaces");
        assert!(least.check("word word WORD").is_empty());
    }

    #[test]
    fn a_match_in_blanked_code_is_no_place_to_show() {
        let most = rule(
            "House.Stars",
            "extends: occurrence\nmessage: x\nmax: 1\ntoken: '\\S+'\n",
        );
        let alerts = most.check("*** ok");
        assert_eq!(alerts.len(), 1);
        assert_eq!(alerts[0].span, 4..6);
        assert!(most.check("*** ***").is_empty());
        let err = crate::load_rule("House.Bad", "extends: occurrence\nmessage: x\nmax: 1\n")
            .expect_err("no token");
        assert_eq!(
            err.to_string(),
            "House.Bad: `token`: an occurrence rule needs a token"
        );
    }
}
