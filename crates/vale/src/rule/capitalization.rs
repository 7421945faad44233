//! `capitalization`: a block whose text is not in the rule's case is an
//! alert, the whole text its `%s`.

use super::keys::Keys;
use super::message::fill;
use super::pattern::compile;
use super::{Hit, RuleError};
use fancy_regex::Regex;

/// The case a `capitalization` rule asks for.
#[derive(Debug)]
enum Case {
    /// `$sentence`: the first word (and one after an indicator) with a
    /// capital, the others in lower case.
    Sentence,
    /// `$lower`.
    Lower,
    /// `$upper`.
    Upper,
    /// A pattern the whole text must match.
    Pattern(Regex),
}

/// A compiled `capitalization` rule.
#[derive(Debug)]
pub(crate) struct Capitalization {
    case: Case,
    /// A word ending with one starts a new sentence (`:`).
    indicators: Vec<String>,
    /// Words written as they must be (`macOS`, `JSON`), as written.
    exceptions: Vec<String>,
    /// The same, as whole-word patterns (an entry may be one).
    exception_patterns: Vec<Regex>,
    /// `$sentence`: the share of words that must be right, exclusive.
    threshold: f64,
}

impl Capitalization {
    /// Reads and compiles a `capitalization` rule; `None` for `$title`,
    /// which is not run here. `accepted` are the vocabularies' accepted
    /// entries, exceptions too unless the rule says `vocab: false`.
    pub(crate) fn read(
        keys: &mut Keys,
        accepted: &[String],
    ) -> Result<Option<Capitalization>, RuleError> {
        let matched = keys
            .text("match")?
            .ok_or_else(|| keys.error("match", "is missing"))?;
        let indicators = keys.list("indicators")?;
        let mut exceptions = keys.list("exceptions")?;
        if keys.flag("vocab", true)? {
            exceptions.extend(accepted.iter().cloned());
        }
        let threshold = keys.number("threshold")?.unwrap_or(0.8);
        let case = match matched.as_str() {
            "$sentence" => Case::Sentence,
            "$lower" => Case::Lower,
            "$upper" => Case::Upper,
            // `$title` follows a style guide's list of small words.
            "$title" => return Ok(None),
            pattern => Case::Pattern(compile(keys.rule(), "match", &format!("^(?:{pattern})$"))?),
        };
        let exception_patterns = exceptions
            .iter()
            .map(|e| compile(keys.rule(), "exceptions", &format!("^(?:{e})$")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(Capitalization {
            case,
            indicators,
            exceptions,
            exception_patterns,
            threshold,
        }))
    }

    /// The alert on `text`, if it is not in the rule's case.
    pub(crate) fn run(&self, message: &str, text: &str) -> Vec<Hit> {
        let trimmed = text.trim();
        if trimmed.is_empty() || self.in_case(trimmed) {
            return Vec::new();
        }
        let start = text.len() - text.trim_start().len();
        vec![Hit {
            span: start..start + trimmed.len(),
            message: fill(message, &[trimmed]),
            replacements: Vec::new(),
        }]
    }

    /// Whether `word` is written as an exception says.
    fn excepted(&self, word: &str) -> bool {
        self.exceptions.iter().any(|e| e == word)
            || self
                .exception_patterns
                .iter()
                .any(|p| p.is_match(word).unwrap_or(false))
    }

    /// Whether `text` is in the rule's case. For `$sentence`, as Vale
    /// counts it: of the words with a letter, more than `threshold` (four
    /// in five) must be right (an exception as written; the first, and one after an
    /// indicator, with a capital; the others all lower case).
    fn in_case(&self, text: &str) -> bool {
        match &self.case {
            Case::Lower => text == text.to_lowercase(),
            Case::Upper => text == text.to_uppercase(),
            Case::Pattern(pattern) => pattern.is_match(text).unwrap_or(true),
            Case::Sentence => {
                let (mut right, mut words) = (0usize, 0usize);
                let mut starts = true;
                for word in text.split_whitespace() {
                    if !word.chars().any(char::is_alphabetic) {
                        continue;
                    }
                    words += 1;
                    let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
                    let ok = if self.excepted(word) || self.excepted(bare) {
                        true
                    } else if starts {
                        word.chars()
                            .find(|c| c.is_alphabetic())
                            .is_some_and(char::is_uppercase)
                    } else {
                        word == word.to_lowercase()
                    };
                    right += usize::from(ok);
                    starts = self.indicators.iter().any(|i| word.ends_with(i.as_str()));
                }
                words == 0 || right as f64 > words as f64 * self.threshold
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rule::testing::rule;

    #[test]
    fn sentence_case_counts_words_as_vale_does() {
        let rule = rule(
            "House.Headings",
            "extends: capitalization\nmessage: \"'%s' should use sentence-style capitalization.\"\nscope: heading\nmatch: $sentence\nindicators:\n  - ':'\nexceptions:\n  - macOS\n  - JSON\n",
        );
        for fine in [
            "This is a heading",
            "Find the thief: Introduction",
            "8. Do step eight",
            "Accepting a JSON response on macOS",
            "Top-level entities",
        ] {
            assert!(rule.check(fine).is_empty(), "{fine}");
        }
        for (wrong, alert) in [
            (
                "This is a Heading",
                "'This is a Heading' should use sentence-style capitalization.",
            ),
            (
                "Test: modern documentation management",
                "'Test: modern documentation management' should use sentence-style capitalization.",
            ),
        ] {
            let alerts = rule.check(wrong);
            assert_eq!(alerts.len(), 1, "{wrong}");
            assert_eq!(alerts[0].message, alert);
            assert_eq!(alerts[0].span, 0..wrong.len());
        }
    }

    #[test]
    fn lower_upper_a_pattern_and_accepted_words() {
        let lower = rule(
            "House.Lower",
            "extends: capitalization\nmessage: x\nmatch: $lower\n",
        );
        assert!(lower.check("all quiet").is_empty());
        assert_eq!(lower.check("Not quiet").len(), 1);
        let pattern = rule(
            "House.Cap",
            "extends: capitalization\nmessage: x\nmatch: '[A-Z].*'\n",
        );
        assert!(pattern.check("Fine").is_empty());
        assert_eq!(pattern.check("not fine").len(), 1);
        let loose = rule(
            "House.Loose",
            "extends: capitalization\nmessage: x\nmatch: $sentence\nthreshold: 0.5\n",
        );
        assert!(loose.check("This is a Heading").is_empty(), "3 of 4 > 0.5");
        assert_eq!(loose.check("This is A Heading").len(), 1, "2 of 4");
        let vocab = ["GitHub".to_owned(), "[Kk]oas".to_owned()];
        let with = crate::load_rule_with(
            "House.Vocab",
            "extends: capitalization\nmessage: x\nmatch: $sentence\n",
            &vocab,
        )
        .expect("loads")
        .rule;
        assert!(with.check("Use GitHub with Koas").is_empty());
    }
}
