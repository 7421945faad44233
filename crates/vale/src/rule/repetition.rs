//! `repetition`: the same token twice in a row ("the the").

use super::keys::Keys;
use super::message::fill;
use super::pattern::{compile, matches, Exceptions};
use super::regex::Regex;
use super::{Hit, RuleError};
use crate::prose::sentences;

/// A compiled `repetition` rule.
#[derive(Debug)]
pub(crate) struct Repetition {
    /// The tokens as alternatives.
    pattern: Regex,
    ignorecase: bool,
    /// Only tokens made of letters count.
    alpha: bool,
    /// Repeats allowed before an alert.
    max: usize,
    exceptions: Exceptions,
}

impl Repetition {
    /// Reads and compiles a `repetition` rule; `accepted` are the
    /// vocabularies' accepted entries.
    pub(crate) fn read(keys: &mut Keys, accepted: &[String]) -> Result<Repetition, RuleError> {
        let tokens: Vec<String> = keys
            .list("tokens")?
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect();
        if tokens.is_empty() {
            return Err(keys.error("tokens", "a repetition rule needs tokens"));
        }
        let ignorecase = keys.flag("ignorecase", false)?;
        let alpha = keys.flag("alpha", false)?;
        let max = keys.count("max")?.unwrap_or(0);
        let own = keys.list("exceptions")?;
        let vocab: &[String] = if keys.flag("vocab", true)? {
            accepted
        } else {
            &[]
        };
        let case = if ignorecase { "(?i)" } else { "" };
        // Vale takes the tokens as they are: no word boundaries.
        Ok(Repetition {
            pattern: compile(
                keys.rule(),
                "tokens",
                &format!("{case}({})", tokens.join("|")),
            )?,
            ignorecase,
            alpha,
            max,
            exceptions: Exceptions::new(keys.rule(), &own, vocab)?,
        })
    }

    /// The alerts on `text`: each from a token's first time to its
    /// repeat, its `%s` the token. A repeat across a sentence's end ("I
    /// forgot that. That is…") is none; one across a line break is one
    /// (Vale 3.9.1 on; before, a line break ended a run).
    pub(crate) fn run(&self, message: &str, text: &str) -> Vec<Hit> {
        let mut hits = Vec::new();
        let excuser = self.exceptions.excuser(text);
        let mut previous: Option<(usize, &str)> = None;
        // As Vale counts: repeats add up until one is reported.
        let mut count = 0usize;
        for span in matches(&self.pattern, text) {
            let current = text[span.clone()].trim();
            let same = previous.is_some_and(|(_, p)| {
                !current.is_empty()
                    && if self.ignorecase {
                        p.to_lowercase() == current.to_lowercase()
                    } else {
                        p == current
                    }
            });
            let hit = same && (!self.alpha || current.chars().all(char::is_alphabetic));
            if hit {
                count += 1;
            }
            if let (true, Some((start, _))) = (hit && count > self.max, previous) {
                let whole = start..span.end;
                let stretch = &text[whole.clone()];
                if sentences(stretch).len() == 1 && !excuser.excuse(&whole) {
                    hits.push(Hit {
                        span: whole,
                        message: fill(message, &[current]),
                        replacements: Vec::new(),
                    });
                    count = 0;
                }
            }
            previous = Some((span.start, current));
        }
        hits
    }
}

#[cfg(test)]
mod tests {
    use crate::rule::testing::{messages, rule};

    const ILLUSIONS: &str = "extends: repetition\nmessage: \"'%s' is repeated!\"\nlevel: warning\nalpha: true\naction:\n  name: edit\n  params:\n    - truncate\n    - ' '\ntokens:\n  - '[^\\s]+'\n";

    #[test]
    fn a_token_twice_in_a_row_is_an_alert_from_the_first() {
        let rule = rule("write-good.Illusions", ILLUSIONS);
        assert_eq!(
            messages(&rule, "the the book store is over there."),
            ["1:1:write-good.Illusions:'the' is repeated!"]
        );
        let alerts = rule.check("Go to the the store");
        assert_eq!(alerts[0].span, 6..13);
        // Blanked code between them or a token that is not all letters
        // breaks the run.
        assert!(rule.check("the *** the").is_empty());
        assert_eq!(rule.check("that the\nthe brain").len(), 1, "lines go on");
        assert!(rule.check("// //").is_empty());
        assert!(rule.check("The the").is_empty(), "case counts");
    }

    #[test]
    fn case_blind_repeats_across_sentences_and_exceptions() {
        let rule = rule(
            "House.Rep",
            "extends: repetition\nmessage: \"'%s'\"\nignorecase: true\nalpha: true\nexceptions: ['(?i)bora bora']\ntokens: ['[^\\s.!?]+']\n",
        );
        assert_eq!(messages(&rule, "The the end."), ["1:1:House.Rep:'the'"]);
        assert!(rule.check("I forgot that. That matters.").is_empty());
        assert!(rule.check("Fly to Bora Bora.").is_empty());
        let twice = crate::rule::testing::rule(
            "House.Twice",
            "extends: repetition\nmessage: x\nmax: 1\ntokens: ['\\w+']\n",
        );
        assert!(twice.check("go go").is_empty());
        assert_eq!(twice.check("go go go").len(), 1);
    }
}
