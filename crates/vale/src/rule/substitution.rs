//! `substitution`: a match of a `swap` key is an alert naming what the
//! text should say instead.

use super::keys::Keys;
use super::message::{capitalized, fill, to_sentence};
use super::pattern::{compile, compile_alternation, non_capturing, Exceptions};
use super::regex::Regex;
use super::{Hit, RuleError};

/// A `substitution` rule's parameters, as written.
#[derive(Debug, Default)]
pub(crate) struct SubstitutionSpec {
    /// `swap`: pattern → what to say instead (options parted by `|`).
    pub(crate) swap: Vec<(String, String)>,
    pub(crate) ignorecase: bool,
    pub(crate) nonword: bool,
    pub(crate) exceptions: Vec<String>,
    pub(crate) vocab: bool,
    /// `capitalize`: a text that starts with a capital gets options
    /// that do.
    pub(crate) capitalize: bool,
    /// Whether the rule's `action` is `replace` with no parameters: then
    /// a swap's value is a list of literal options.
    pub(crate) replace: bool,
    /// The case-blind Vale 3 (as the Microsoft style's tests were run
    /// with) gave a text's capital to its options even without
    /// `capitalize`; Vale's own vocabulary rule never does.
    pub(crate) match_case: bool,
}

impl SubstitutionSpec {
    /// Reads the keys of a `substitution` rule; `replace` tells whether
    /// its action is a `replace` without parameters.
    pub(crate) fn read(keys: &mut Keys, replace: bool) -> Result<SubstitutionSpec, RuleError> {
        let swap = keys
            .pairs("swap")?
            .ok_or_else(|| keys.error("swap", "a substitution rule needs a swap mapping"))?;
        if swap.is_empty() {
            return Err(keys.error("swap", "is empty"));
        }
        Ok(SubstitutionSpec {
            swap,
            ignorecase: keys.flag("ignorecase", false)?,
            nonword: keys.flag("nonword", false)?,
            exceptions: keys.list("exceptions")?,
            vocab: keys.flag("vocab", true)?,
            capitalize: keys.flag("capitalize", false)?,
            replace,
            match_case: true,
        })
    }
}

/// One `swap` entry, compiled.
#[derive(Debug)]
struct Swap {
    /// What to say instead, as written.
    expected: String,
    /// The key alone, when the value refers to its groups (`$1`).
    key_alone: Option<Regex>,
    /// The value as a pattern a right text matches whole (for a rule
    /// whose action is not `replace`); `None` for a literal value.
    right: Option<Regex>,
}

/// A compiled `substitution` rule.
#[derive(Debug)]
pub(crate) struct Substitution {
    /// The keys as alternatives, one group each.
    pattern: Regex,
    swaps: Vec<Swap>,
    exceptions: Exceptions,
    capitalize: bool,
    replace: bool,
}

/// Whether `text` is plain words (letters, digits, spaces, hyphens): such
/// a value is compared as written, not as a pattern.
fn is_phrase(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_alphanumeric() || c == ' ' || c == '-')
}

/// The options of a `replace` value: parted by `|`, an escaped `\|`
/// kept, empty ones left out.
fn options(value: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                if let Some(last) = out.last_mut() {
                    last.push('|');
                }
            }
            '|' => out.push(String::new()),
            _ => {
                if let Some(last) = out.last_mut() {
                    last.push(c);
                }
            }
        }
    }
    out.retain(|o| !o.is_empty());
    out
}

/// `$1ize` as the `regex` crates read it: `${1}ize` (Vale's .NET dialect
/// ends a group number at the first non-digit).
fn braced_groups(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 4);
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push_str("${");
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                out.push(d);
                chars.next();
            }
            out.push('}');
        } else {
            out.push(c);
        }
    }
    out
}

impl Substitution {
    /// Compiles rule `rule`'s spec; `accepted` are the vocabularies'
    /// accepted entries.
    pub(crate) fn new(
        rule: &str,
        spec: &SubstitutionSpec,
        accepted: &[String],
    ) -> Result<Substitution, RuleError> {
        // The longest key first, as Vale orders them, so that of two keys
        // matching at one place the longer wins.
        let mut entries: Vec<&(String, String)> = spec.swap.iter().collect();
        entries.sort_by_key(|(key, _)| std::cmp::Reverse(key.len()));
        let mut groups = Vec::new();
        let mut swaps = Vec::new();
        for (key, value) in entries {
            groups.push(non_capturing(key));
            let key_alone = if value.contains('$') {
                let case = if spec.ignorecase { "(?i)" } else { "" };
                Some(compile(rule, "swap", &format!("{case}{key}"))?)
            } else {
                None
            };
            let right = if spec.replace || is_phrase(value) {
                None
            } else {
                // A value that does not compile is compared as written.
                Regex::new(&format!("^(?:{value})$")).ok()
            };
            swaps.push(Swap {
                expected: value.clone(),
                key_alone,
                right,
            });
        }
        let vocab: &[String] = if spec.vocab { accepted } else { &[] };
        Ok(Substitution {
            pattern: compile_alternation(rule, "swap", &groups, spec.ignorecase, spec.nonword)?,
            swaps,
            exceptions: Exceptions::new(rule, &spec.exceptions, vocab)?,
            capitalize: spec.capitalize || (spec.ignorecase && spec.match_case),
            replace: spec.replace,
        })
    }

    /// The alerts on `text`.
    pub(crate) fn run(&self, message: &str, text: &str) -> Vec<Hit> {
        let mut hits = Vec::new();
        let excuser = self.exceptions.excuser(text);
        for found in self.pattern.captures_iter(text) {
            let Ok(found) = found else { break };
            // The group that took part tells which key matched.
            let Some((index, group)) =
                (1..found.len()).find_map(|i| found.get(i).map(|g| (i - 1, g)))
            else {
                continue;
            };
            let Some(swap) = self.swaps.get(index) else {
                continue;
            };
            let span = group.start()..group.end();
            let observed = group.as_str().trim();
            if observed.is_empty() || excuser.excuse(&span) {
                continue;
            }
            let expected = match &swap.key_alone {
                Some(key) => key
                    .try_replacen(observed, 0, braced_groups(&swap.expected).as_str())
                    .map(|c| c.into_owned())
                    .unwrap_or_else(|_| swap.expected.clone()),
                None => swap.expected.clone(),
            };
            // A text starting with a capital gets options that do (and is
            // right if it then says one: a sentence's first word).
            let capital =
                self.capitalize && observed.chars().next().is_some_and(char::is_uppercase);
            let recase = |option: String| {
                if capital {
                    capitalized(&option)
                } else {
                    option
                }
            };
            let (message, replacements) = if self.replace {
                let options: Vec<String> = options(&expected).into_iter().map(recase).collect();
                // Text that already says one of the options is right.
                if options.iter().any(|o| o == observed) {
                    continue;
                }
                // The options come quoted: a message that quotes both of
                // its `%s` loses the first pair of quotes.
                let template = unquote_first(message);
                (
                    fill(&template, &[&to_sentence(&options), observed]),
                    options,
                )
            } else {
                let expected = recase(expected);
                let right = match &swap.right {
                    Some(pattern) => pattern.is_match(observed).unwrap_or(false),
                    None => expected == observed,
                };
                if right {
                    continue;
                }
                let replacements = if is_phrase(&expected) {
                    vec![expected.clone()]
                } else {
                    Vec::new()
                };
                (fill(message, &[&expected, observed]), replacements)
            };
            hits.push(Hit {
                span,
                message,
                replacements,
            });
        }
        hits
    }
}

/// A message quoting both of its `%s` (`'%s'` or `"%s"` twice), its first
/// quotes taken off.
fn unquote_first(message: &str) -> String {
    for quoted in ["'%s'", "\"%s\""] {
        if message.matches(quoted).count() == 2 {
            return message.replacen(quoted, "%s", 1);
        }
    }
    message.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_part_on_unescaped_bars_and_groups_are_braced() {
        assert_eq!(options(r"a|b\|c"), ["a", "b|c"]);
        assert!(options("").is_empty());
        assert_eq!(braced_groups("$1ize and $12"), "${1}ize and ${12}");
        assert!(is_phrase("mobile phone"));
        assert!(!is_phrase("[pP]ython"));
        assert_eq!(unquote_first("Use '%s' not '%s'."), "Use %s not '%s'.");
        assert_eq!(unquote_first("Use %s."), "Use %s.");
    }
}

#[cfg(test)]
mod rule_tests {
    use crate::rule::testing::{messages, rule};

    const WORDS: &str = r#"
extends: substitution
message: "Use '%s' instead of '%s'."
link: "https://example.invalid/word-list"
level: warning
ignorecase: false
action:
  name: replace
swap:
  "(?:cell ?phone|smart ?phone)": phone|mobile phone
  "(?:e-mail|Email|E-mail)": email
  above: preceding
  admin: administrator
  log on: sign in|log in|sign on
"#;

    #[test]
    fn a_substitution_names_its_options_and_what_it_found() {
        let rule = rule("House.Words", WORDS);
        assert_eq!(rule.level, crate::Level::Warning);
        assert_eq!(rule.action.as_deref(), Some("replace"));
        let text = "See the table above.\nCall from your cell phone, or send an E-mail to the admin team.\nAn administrator knows. Then log on.";
        assert_eq!(
            messages(&rule, text),
            [
                "1:15:House.Words:Use 'preceding' instead of 'above'.",
                "2:16:House.Words:Use 'phone' or 'mobile phone' instead of 'cell phone'.",
                "2:39:House.Words:Use 'email' instead of 'E-mail'.",
                "2:53:House.Words:Use 'administrator' instead of 'admin'.",
                "3:30:House.Words:Use 'sign in', 'log in', or 'sign on' instead of 'log on'.",
            ]
        );
        let alerts = rule.check(text);
        assert_eq!(alerts[1].replacements, ["phone", "mobile phone"]);
        assert_eq!(&text[alerts[1].span.clone()], "cell phone");
    }

    #[test]
    fn swap_keys_see_their_context_and_the_longest_key_wins() {
        let latin = rule(
            "House.Latin",
            "extends: substitution\nmessage: \"Use '%s' instead of '%s'.\"\nignorecase: true\nnonword: true\naction:\n  name: replace\nswap:\n  '\\b(?:ie|i\\.e\\.)(?=[\\s,;])': that is\n",
        );
        assert_eq!(
            messages(&latin, "By train, i.e., not by bike."),
            ["1:11:House.Latin:Use 'that is' instead of 'i.e.'."]
        );
        let longest = rule(
            "House.Long",
            "extends: substitution\nmessage: \"Use '%s' instead of '%s'.\"\naction:\n  name: replace\nswap:\n  in order: so\n  in order to: to\n",
        );
        assert_eq!(
            messages(&longest, "Do it in order to win."),
            ["1:7:House.Long:Use 'to' instead of 'in order to'."]
        );
    }

    #[test]
    fn a_case_blind_substitution_keeps_the_texts_capital() {
        let rule = rule(
            "House.Contractions",
            "extends: substitution\nmessage: \"Use '%s' instead of '%s'.\"\nignorecase: true\naction:\n  name: replace\nswap:\n  could not: couldn't\n",
        );
        assert_eq!(
            messages(&rule, "Could not we? We could not."),
            [
                "1:1:House.Contractions:Use 'Couldn't' instead of 'Could not'.",
                "1:18:House.Contractions:Use 'couldn't' instead of 'could not'."
            ]
        );
        let terms = crate::rule::testing::rule(
            "House.TermCase",
            "extends: substitution\nmessage: \"Use %s rather than %s.\"\nignorecase: false\naction:\n  name: replace\nswap:\n  '[Ii]OS': iOS\n  obvious: ''\n",
        );
        assert_eq!(
            messages(&terms, "IOS is not obvious. iOS is."),
            [
                "1:1:House.TermCase:Use 'iOS' rather than IOS.",
                "1:12:House.TermCase:Use rather than obvious.",
            ]
        );
    }

    #[test]
    fn a_value_without_replace_is_a_pattern_the_right_text_matches() {
        let rule = rule(
            "House.Terms",
            "extends: substitution\nmessage: \"Use '%s' instead of '%s'.\"\nignorecase: true\nswap:\n  'java ?script': '[Jj]ava[Ss]cript'\n  '(\\w+)ise': '$1ize'\n",
        );
        assert!(rule.check("javascript and JavaScript").is_empty());
        assert_eq!(
            messages(&rule, "java script; organise"),
            [
                "1:1:House.Terms:Use '[Jj]ava[Ss]cript' instead of 'java script'.",
                "1:14:House.Terms:Use 'organize' instead of 'organise'.",
            ]
        );
        assert_eq!(rule.check("organise")[0].replacements, ["organize"]);
    }
}
