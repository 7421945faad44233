//! `capitalization`: a block whose text is not in the rule's case is an
//! alert, the whole text its `%s` (the text as it should be the second).
//!
//! `$sentence` and `$title` are judged as Vale judges them: the text is
//! converted to the case (the rule's exceptions kept as written, a word
//! after an indicator as a first word), and enough of its words must
//! already read as converted, or be an exception, or (for titles) be
//! all capitals.

use super::keys::Keys;
use super::message::fill;
use super::pattern::compile;
use super::regex::Regex;
use super::{Hit, RuleError};

/// What Vale takes as a word when it compares a text with its case.
const WORD: &str = r"[\p{N}\p{L}*]+[^\s]*";

/// The words a title keeps in lower case, but first and last.
const SMALL_WORDS: [&str; 23] = [
    "a", "an", "and", "as", "at", "but", "by", "en", "for", "if", "in", "nor", "of", "on", "or",
    "per", "the", "to", "vs", "vs.", "via", "v", "v.",
];

/// The prepositions Chicago style keeps in lower case too.
const PREPOSITIONS: [&str; 31] = [
    "with",
    "from",
    "into",
    "during",
    "including",
    "until",
    "against",
    "among",
    "throughout",
    "despite",
    "towards",
    "upon",
    "concerning",
    "about",
    "over",
    "through",
    "before",
    "between",
    "after",
    "since",
    "without",
    "under",
    "within",
    "along",
    "following",
    "across",
    "beyond",
    "around",
    "down",
    "near",
    "above",
];

/// The case a `capitalization` rule asks for.
#[derive(Debug)]
enum Case {
    /// `$sentence`.
    Sentence,
    /// `$title`, AP style (or Chicago: prepositions in lower case too).
    Title { chicago: bool },
    /// `$lower`.
    Lower,
    /// `$upper`.
    Upper,
    /// A pattern the text must match somewhere (Vale's test is not
    /// anchored), and the pattern as written (the message's `%s`).
    Pattern(Regex, String),
}

/// A compiled `capitalization` rule.
#[derive(Debug)]
pub(crate) struct Capitalization {
    case: Case,
    /// A word ending with one starts anew (`:`), as does a first `1.`.
    indicators: Vec<String>,
    /// Words written as they must be (`macOS`, `Axon Server`), longest
    /// first; each may be a pattern, found in a word with its case.
    exceptions: Vec<(String, Option<Regex>)>,
    /// Any exception as a whole word, case kept: such a word is right.
    excepted: Option<Regex>,
    /// A text's words: an exception (several words may be one), or a
    /// run of letters and what follows up to a space.
    words: Regex,
    /// The share of words that must be right.
    threshold: f64,
    /// `prefix`: a start of the text converted as it is (a list item's
    /// `a. `).
    prefix: Option<Regex>,
}

impl Capitalization {
    /// Reads and compiles a `capitalization` rule. `accepted` are the
    /// vocabularies' accepted entries, exceptions too unless the rule
    /// says `vocab: false`. Also gives what is not quite as Vale does.
    pub(crate) fn read(
        keys: &mut Keys,
        accepted: &[String],
    ) -> Result<(Capitalization, Option<String>), RuleError> {
        let matched = keys
            .text("match")?
            .ok_or_else(|| keys.error("match", "is missing"))?;
        let indicators = keys.list("indicators")?;
        let mut exceptions: Vec<String> = keys
            .list("exceptions")?
            .into_iter()
            .filter(|e| !e.is_empty())
            .collect();
        if keys.flag("vocab", true)? {
            exceptions.extend(accepted.iter().cloned());
        }
        // The longest first, so that an alternation takes the longest.
        exceptions.sort_by_key(|e| std::cmp::Reverse(e.len()));
        // Vale reads 0 as its default: a threshold of 0 would never alert.
        let threshold = keys
            .number("threshold")?
            .filter(|t| *t != 0.0)
            .unwrap_or(0.8);
        let prefix = match keys.text("prefix")?.filter(|p| !p.is_empty()) {
            Some(p) => Some(compile(keys.rule(), "prefix", &format!("^(?:{p})"))?),
            None => None,
        };
        let style = keys.text("style")?;
        let mut note = None;
        let case = match matched.as_str() {
            "$sentence" => Case::Sentence,
            "$title" => {
                let chicago = style.as_deref() == Some("Chicago");
                if !chicago {
                    note = Some(
                        "`match: $title` in AP style: 'to' is kept in lower case even before a verb (Vale tags parts of speech to tell)"
                            .to_owned(),
                    );
                }
                Case::Title { chicago }
            }
            "$lower" => Case::Lower,
            "$upper" => Case::Upper,
            pattern => Case::Pattern(compile(keys.rule(), "match", pattern)?, pattern.to_owned()),
        };
        let rule = keys.rule();
        let each = |e: &String| {
            // An entry that is no pattern is compared as written only.
            (e.clone(), Regex::new(&format!("(?-i){e}")).ok())
        };
        let (excepted, words) = if exceptions.is_empty() {
            (None, compile(rule, "exceptions", WORD)?)
        } else {
            let cased: Vec<String> = exceptions.iter().map(|e| format!("(?:(?-i){e})")).collect();
            let excepted = format!(r"(?m)\b(?:{})\b", cased.join("|"));
            (
                Some(compile(rule, "exceptions", &excepted)?),
                compile(rule, "exceptions", &format!("{excepted}|{WORD}"))?,
            )
        };
        Ok((
            Capitalization {
                case,
                indicators,
                exceptions: exceptions.iter().map(each).collect(),
                excepted,
                words,
                threshold,
                prefix,
            },
            note,
        ))
    }

    /// The alert on `text`, if it is not in the rule's case.
    pub(crate) fn run(&self, message: &str, text: &str) -> Vec<Hit> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Vec::new();
        }
        let (expected, right) = self.judge(trimmed);
        if right {
            return Vec::new();
        }
        let start = text.len() - text.trim_start().len();
        vec![Hit {
            span: start..start + trimmed.len(),
            message: fill(message, &[trimmed, &expected]),
            replacements: match self.case {
                Case::Sentence | Case::Title { .. } => vec![expected],
                _ => Vec::new(),
            },
        }]
    }

    /// `text` in the rule's case, and whether it already is.
    fn judge(&self, text: &str) -> (String, bool) {
        let excused = self
            .excepted
            .as_ref()
            .is_some_and(|e| e.is_match(text).unwrap_or(false));
        match &self.case {
            Case::Lower => {
                let expected = text.to_lowercase();
                let right = expected == text || excused;
                (expected, right)
            }
            Case::Upper => {
                let expected = text.to_uppercase();
                let right = expected == text || excused;
                (expected, right)
            }
            Case::Pattern(pattern, written) => (
                written.clone(),
                pattern.is_match(text).unwrap_or(true) || excused,
            ),
            Case::Sentence => {
                let expected = self.sentence(text);
                let right = self.compare(text, &expected, false);
                (expected, right)
            }
            Case::Title { chicago } => {
                let expected = self.title(text, *chicago);
                let right = self.compare(text, &expected, true);
                (expected, right)
            }
        }
    }

    /// Whether enough words of `text` read as in `expected`: the same
    /// word, or an exception, or (titles) all capitals. A first word that
    /// is wrong and not capitalized alone fails a sentence outright.
    fn compare(&self, text: &str, expected: &str, title: bool) -> bool {
        let expected_words = words_of(&self.words, expected);
        let (mut right, mut words) = (0usize, 0usize);
        for (i, word) in words_of(&self.words, text).into_iter().enumerate() {
            let excepted = self
                .excepted
                .as_ref()
                .is_some_and(|e| e.is_match(word).unwrap_or(false));
            match expected_words.get(i) {
                // Vale counts the words beyond the converted ones right.
                None => right += 1,
                Some(e) if *e == word || excepted => right += 1,
                Some(_) if title && word == word.to_uppercase() => right += 1,
                Some(_) if !title && i == 0 && word != go_title(&word.to_lowercase()) => {
                    return false
                }
                Some(_) => {}
            }
            words += 1;
        }
        words == 0 || right as f64 / words as f64 >= self.threshold
    }

    /// Whether `token` is an exception, kept as written: an entry, as a
    /// pattern with its case, is found in it. (Vale's converter means to
    /// match entries in any case, but it receives them already marked
    /// case-sensitive, so an entry such as `I` keeps `It` as written.)
    fn in_vocab(&self, token: &str) -> bool {
        self.exceptions
            .iter()
            .any(|(entry, pattern)| match pattern {
                Some(p) => p.is_match(token).unwrap_or(false),
                None => entry == token,
            })
    }

    /// `text` without the rule's `prefix`, and the prefix.
    fn split_prefix<'t>(&self, text: &'t str) -> (&'t str, &'t str) {
        match self
            .prefix
            .as_ref()
            .and_then(|p| p.find(text).ok().flatten())
        {
            Some(found) => (&text[..found.end()], &text[found.end()..]),
            None => ("", text),
        }
    }

    /// Whether `word`, the word before the one at `index`, makes that one
    /// start anew.
    fn indicates(&self, word: &str, index: usize) -> bool {
        self.indicators.iter().any(|i| word.ends_with(i.as_str()))
            || (index == 0 && is_numbered(word))
    }

    /// `text` in sentence case: exceptions as written, the first word and
    /// one after an indicator with a capital, the others in lower case.
    fn sentence(&self, text: &str) -> String {
        let (prefix, rest) = self.split_prefix(text);
        let tokens = words_of(&self.words, rest);
        let made: Vec<String> = tokens
            .iter()
            .enumerate()
            .map(|(i, token)| {
                if self.in_vocab(token) {
                    (*token).to_owned()
                } else if i == 0 || self.indicates(tokens[i - 1], i - 1) {
                    capital_first(token, true)
                } else {
                    token.to_lowercase()
                }
            })
            .collect();
        format!("{prefix}{}", made.join(" "))
    }

    /// `text` in title case: each word with a capital, but small words
    /// (and, for Chicago, prepositions) inside the title after a space,
    /// `-` or `/`, and not after a colon.
    fn title(&self, text: &str, chicago: bool) -> String {
        let (prefix, rest) = self.split_prefix(text);
        let plain = sanitized(rest);
        let bytes = plain.as_bytes();
        let at = |i: isize| -> u8 {
            usize::try_from(i)
                .ok()
                .and_then(|i| bytes.get(i).copied())
                .or_else(|| bytes.first().copied())
                .unwrap_or(b' ')
        };
        let mut out = String::with_capacity(rest.len());
        let mut last = 0;
        for (start, end) in title_words(&plain) {
            out.push_str(&plain[last..start]);
            let word = &plain[start..end];
            let lower = word.to_lowercase();
            let bounding = start == 0 || end == plain.len();
            let small = SMALL_WORDS.contains(&lower.as_str())
                || (chicago && PREPOSITIONS.contains(&lower.as_str()));
            let (s, e) = (start as isize, end as isize);
            let inside = matches!(at(s - 1), b' ' | b'-' | b'/')
                && !matches!(at(s - 2), b':' | b'-')
                && (at(e) != b'-' || at(s - 1) == b'-');
            let made = if self.in_vocab(word) {
                word.to_owned()
            } else if small && !bounding && inside {
                lower
            } else {
                capital_first(word, false)
            };
            out.push_str(&made);
            last = end;
        }
        out.push_str(&plain[last..]);
        format!("{prefix}{out}")
    }
}

/// The matches of `words` in `text`.
fn words_of<'t>(words: &Regex, text: &'t str) -> Vec<&'t str> {
    words
        .find_iter(text)
        .map_while(Result::ok)
        .map(|m| m.as_str())
        .collect()
}

/// Whether `word` holds a list number (`1.`).
fn is_numbered(word: &str) -> bool {
    let bytes = word.as_bytes();
    bytes
        .windows(2)
        .any(|w| w[0].is_ascii_digit() && w[1] == b'.')
}

/// `word` with its first letter a capital, and (`strict`) the rest in
/// lower case.
fn capital_first(word: &str, strict: bool) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => {
            let rest: String = chars.collect();
            let rest = if strict { rest.to_lowercase() } else { rest };
            first.to_uppercase().chain(rest.chars()).collect()
        }
        None => String::new(),
    }
}

/// `word` as Go's `strings.Title` writes it: each letter after a
/// character that is not a letter, digit or `_` a capital.
fn go_title(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut after_separator = true;
    for c in word.chars() {
        if after_separator {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        after_separator = !(c.is_alphanumeric() || c == '_');
    }
    out
}

/// `text` with curly quotes, dashes and the ellipsis made ASCII, as
/// Vale reads a title's punctuation.
fn sanitized(text: &str) -> String {
    text.replace(['\u{201c}', '\u{201d}'], "\"")
        .replace(['\u{2018}', '\u{2019}'], "'")
        .replace(['\u{2013}', '\u{2014}'], "-")
        .replace('\u{2026}', "...")
}

/// A title's words: a run of letters and digits and what follows up to
/// a space, `-` or `/`.
fn title_words(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if !c.is_alphanumeric() {
            continue;
        }
        let mut end = start + c.len_utf8();
        while let Some(&(i, n)) = chars.peek() {
            if n.is_alphanumeric() {
                end = i + n.len_utf8();
                chars.next();
            } else {
                break;
            }
        }
        while let Some(&(i, n)) = chars.peek() {
            if n.is_whitespace() || n == '-' || n == '/' {
                break;
            }
            end = i + n.len_utf8();
            chars.next();
        }
        out.push((start, end));
    }
    out
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
        assert_eq!(
            rule.check("This is a Heading")[0].replacements,
            ["This is a heading"]
        );
    }

    #[test]
    fn sentence_case_keeps_exceptions_of_several_words_and_a_prefix() {
        let rule = rule(
            "House.Sentence",
            "extends: capitalization\nmessage: \"'%s' should be '%s'\"\nmatch: $sentence\nprefix: '[a-z]\\.\\s'\nexceptions: [Axon, Axon Server, NASA, Moon, '\\bale\\b']\n",
        );
        assert!(rule.check("Axon Server connection").is_empty());
        assert!(rule.check("b. Next title text").is_empty());
        assert!(rule.check("Vale ale").is_empty());
        assert_eq!(rule.check("Axon server Connection").len(), 1, "case counts");
        let alerts =
            rule.check("Six NASA Instruments Will Fly to Moon on Intuitive Machines Lander");
        assert_eq!(
            alerts[0].message,
            "'Six NASA Instruments Will Fly to Moon on Intuitive Machines Lander' should be \
             'Six NASA instruments will fly to Moon on intuitive machines lander'"
        );
        // A first word in lower case fails at once.
        assert_eq!(
            rule.check("this is a long heading with many right words")
                .len(),
            1
        );
    }

    #[test]
    fn title_case_keeps_small_words_low_inside() {
        let ap = crate::load_rule(
            "House.Titles",
            "extends: capitalization\nmessage: \"'%s' should be '%s'\"\nmatch: $title\n",
        )
        .expect("loads");
        assert_eq!(ap.unsupported.len(), 1, "the 'to' approximation is named");
        let ap = ap.rule;
        assert!(ap.check("The Art of War and Peace").is_empty());
        assert!(ap.check("A Guide to the API: Of Mice and Men").is_empty());
        let alerts = ap.check("the art of war in a nutshell");
        assert_eq!(
            alerts[0].message,
            "'the art of war in a nutshell' should be 'The Art of War in a Nutshell'"
        );
        let chicago = rule(
            "House.Chicago",
            "extends: capitalization\nmessage: x\nmatch: $title\nstyle: Chicago\n",
        );
        assert!(chicago.check("Walking through the Forest").is_empty());
        assert_eq!(chicago.check("Walking Through The Forest Today").len(), 1);
    }

    #[test]
    fn lower_upper_a_pattern_and_accepted_words() {
        let lower = rule(
            "House.Lower",
            "extends: capitalization\nmessage: x\nmatch: $lower\nexceptions: [JSON]\n",
        );
        assert!(lower.check("all quiet").is_empty());
        assert!(lower.check("all JSON").is_empty(), "an exception excuses");
        assert_eq!(lower.check("Not quiet").len(), 1);
        let pattern = rule(
            "House.Cap",
            "extends: capitalization\nmessage: x\nmatch: '^[A-Z]'\n",
        );
        assert!(pattern.check("Fine").is_empty());
        assert_eq!(pattern.check("not fine").len(), 1);
        let loose = rule(
            "House.Loose",
            "extends: capitalization\nmessage: x\nmatch: $sentence\nthreshold: 0.5\n",
        );
        assert!(loose.check("This is A Heading").is_empty(), "2 of 4 >= 0.5");
        assert_eq!(loose.check("This Is A Heading").len(), 1, "1 of 4");
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
