//! Vale's regular expressions: the templates it wraps tokens in, its
//! exceptions, and compiling them with the rule and key named.

use super::regex::Regex;
use super::RuleError;
use std::ops::Range;

/// `pattern`, written in Go's dialect (Vale's), in this one's: Go's
/// octal escapes (`\\055`) as hexadecimal ones (`\\x{2d}`), and Go's
/// ASCII classes as ASCII classes — in Go `\\w` is `[0-9A-Za-z_]`, `\\d`
/// `[0-9]`, `\\s` `[\\t\\n\\f\\r ]`, where here they would be Unicode's (and
/// a search through Unicode's word class is many times slower). Go's
/// `\\b` is an ASCII word boundary too, which this dialect cannot say
/// without a look-around (the slow engine): it stays Unicode's. An
/// escaped backslash stays one.
pub(crate) fn from_go(pattern: &str) -> std::borrow::Cow<'_, str> {
    if !pattern.contains('\\') {
        return std::borrow::Cow::Borrowed(pattern);
    }
    let bytes = pattern.as_bytes();
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut in_class = false;
    // Where the current class's first member is: a `]` there is literal.
    let mut class_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                let digits = bytes.get(i + 1..i + 4);
                let octal = digits.is_some_and(|d| {
                    (b'0'..=b'3').contains(&d[0])
                        && d[1..].iter().all(|c| (b'0'..=b'7').contains(c))
                });
                if let (true, Some(d)) = (octal, digits) {
                    let value = d.iter().fold(0u32, |n, c| n * 8 + u32::from(c - b'0'));
                    out.push_str(&format!("\\x{{{value:02x}}}"));
                    i += 4;
                    continue;
                }
                let Some(c) = pattern[i + 1..].chars().next() else {
                    out.push('\\');
                    i += 1;
                    continue;
                };
                let ascii = match (c, in_class) {
                    ('w', false) => Some("[0-9A-Za-z_]"),
                    ('W', false) => Some("[^0-9A-Za-z_]"),
                    ('d', false) => Some("[0-9]"),
                    ('D', false) => Some("[^0-9]"),
                    ('s', false) => Some("[\\t\\n\\f\\r ]"),
                    ('S', false) => Some("[^\\t\\n\\f\\r ]"),
                    ('w', true) => Some("0-9A-Za-z_"),
                    ('d', true) => Some("0-9"),
                    ('s', true) => Some("\\t\\n\\f\\r "),
                    _ => None,
                };
                match ascii {
                    Some(class) => out.push_str(class),
                    None => {
                        out.push('\\');
                        out.push(c);
                    }
                }
                i += 1 + c.len_utf8();
                continue;
            }
            b'[' if !in_class => {
                in_class = true;
                out.push('[');
                i += 1;
                if bytes.get(i) == Some(&b'^') {
                    out.push('^');
                    i += 1;
                }
                class_start = i;
                continue;
            }
            // A POSIX class inside a class (`[[:alpha:]]`), copied whole.
            b'[' if bytes.get(i + 1) == Some(&b':') => {
                if let Some(end) = pattern[i..].find(":]") {
                    out.push_str(&pattern[i..i + end + 2]);
                    i += end + 2;
                    continue;
                }
            }
            b']' if in_class && i != class_start => in_class = false,
            _ => {}
        }
        let c = pattern[i..].chars().next().unwrap_or('\0');
        out.push(c);
        i += c.len_utf8().max(1);
    }
    std::borrow::Cow::Owned(out)
}

/// Compiles `pattern`, written in (or built from) the rule's `key`.
pub(crate) fn compile(rule: &str, key: &str, pattern: &str) -> Result<Regex, RuleError> {
    Regex::new(&from_go(pattern)).map_err(|e| RuleError::Pattern {
        rule: rule.to_owned(),
        key: key.to_owned(),
        pattern: pattern.to_owned(),
        reason: e.to_string(),
    })
}

/// Vale's template around a rule's alternatives: multi-line (so `$`
/// also ends a line), whole words unless `nonword`, any case if
/// `ignorecase`.
pub(crate) fn wrap(alternatives: &str, ignorecase: bool, nonword: bool) -> String {
    let case = if ignorecase { "(?i)" } else { "" };
    if nonword {
        format!("{case}(?m)(?:{alternatives})")
    } else {
        format!(r"{case}(?m)\b(?:{alternatives})\b")
    }
}

/// Compiles Vale's template around `alternatives`, one group each (see
/// [`wrap`]), written in the rule's `key`: a few alternatives that need
/// look-arounds do not slow the others down ([`Regex::alternation`]).
pub(crate) fn compile_alternation(
    rule: &str,
    key: &str,
    alternatives: &[String],
    ignorecase: bool,
    nonword: bool,
) -> Result<Regex, RuleError> {
    let case = if ignorecase { "(?i)" } else { "" };
    let (head, tail) = if nonword {
        (format!("{case}(?m)(?:"), ")".to_owned())
    } else {
        (format!(r"{case}(?m)\b(?:"), r")\b".to_owned())
    };
    let alternatives: Vec<String> = alternatives
        .iter()
        .map(|a| from_go(a).into_owned())
        .collect();
    Regex::alternation(&head, &alternatives, &tail).map_err(|e| RuleError::Pattern {
        rule: rule.to_owned(),
        key: key.to_owned(),
        pattern: format!(
            "{head}{}{tail}",
            alternatives
                .iter()
                .map(|a| format!("({a})"))
                .collect::<Vec<_>>()
                .join("|")
        ),
        reason: e.to_string(),
    })
}

/// The byte ranges of `pattern`'s matches in `text`, empty ones left
/// out. A pattern that gives up on a text (fancy-regex's backtracking
/// limit) ends the search there: what was found before is kept.
pub(crate) fn matches(pattern: &Regex, text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    for found in pattern.find_iter(text) {
        let Ok(found) = found else { break };
        if found.start() < found.end() {
            out.push(found.start()..found.end());
        }
    }
    out
}

/// Whether `pattern` matches somewhere in `text` (a pattern that gives
/// up counts as no match).
pub(crate) fn is_match(pattern: &Regex, text: &str) -> bool {
    pattern.is_match(text).unwrap_or(false)
}

/// `pattern` with its capturing groups made non-capturing, so that a
/// pattern built of several keys numbers one group per key. Escapes and
/// character classes are skipped over: their `(` is a character.
pub(crate) fn non_capturing(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        out.push(c);
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class && chars.peek() != Some(&'?') => out.push_str("?:"),
            _ => {}
        }
    }
    out
}

/// Whether `pattern` has a capturing group.
pub(crate) fn has_capture_group(pattern: &str) -> bool {
    non_capturing(pattern) != pattern
}

/// What a rule lets pass: its `exceptions` and, unless the rule says
/// `vocab: false`, the accepted entries of the project's vocabularies.
#[derive(Debug, Default)]
pub(crate) struct Exceptions {
    /// Any exception as a whole word inside a match excuses it (Vale
    /// looks for them in the match, not for the match among them). Case
    /// counts, unless an entry starts with `(?i)`.
    words: Option<Regex>,
    /// The entries of more than one word: a match inside one of them in
    /// the text is excused too (`mea` in an accepted `mea culpa`).
    phrases: Option<Regex>,
}

impl Exceptions {
    /// The exceptions of rule `rule`: its own `exceptions` and the
    /// `accepted` entries.
    pub(crate) fn new(
        rule: &str,
        own: &[String],
        accepted: &[String],
    ) -> Result<Exceptions, RuleError> {
        let mut terms: Vec<&str> = own
            .iter()
            .chain(accepted)
            .map(String::as_str)
            .filter(|t| !t.trim().is_empty())
            .collect();
        if terms.is_empty() {
            return Ok(Exceptions::default());
        }
        // The longest first, so that an alternation takes the longest.
        terms.sort_by_key(|t| std::cmp::Reverse(t.len()));
        let each = |t: &&str| {
            if t.starts_with("(?i)") {
                format!("(?:{t})")
            } else {
                format!("(?:(?-i){t})")
            }
        };
        let words = terms.iter().map(each).collect::<Vec<_>>().join("|");
        let words = compile(rule, "exceptions", &format!(r"(?m)\b(?:{words})\b"))?;
        let phrases: Vec<&str> = terms
            .iter()
            .copied()
            .filter(|t| t.contains([' ', '\t']) || t.contains(r"\s"))
            .collect();
        let phrases = if phrases.is_empty() {
            None
        } else {
            let joined = phrases
                .iter()
                .map(|p| format!("(?:{p})"))
                .collect::<Vec<_>>();
            Some(compile(
                rule,
                "exceptions",
                &format!(r"(?i)\b(?:{})\b", joined.join("|")),
            )?)
        };
        Ok(Exceptions {
            words: Some(words),
            phrases,
        })
    }

    /// What excuses a match in `text`: found once per text, as the
    /// accepted phrases in it are.
    pub(crate) fn excuser<'t>(&'t self, text: &'t str) -> Excuser<'t> {
        Excuser {
            exceptions: self,
            text,
            phrases: self
                .phrases
                .as_ref()
                .map(|p| matches(p, text))
                .unwrap_or_default(),
        }
    }

    /// Whether an exception is found in `observed`.
    pub(crate) fn excuse_text(&self, observed: &str) -> bool {
        self.words.as_ref().is_some_and(|w| is_match(w, observed))
    }
}

/// The exceptions of a rule, ready for one text.
pub(crate) struct Excuser<'t> {
    exceptions: &'t Exceptions,
    text: &'t str,
    /// Where the accepted phrases are in the text.
    phrases: Vec<Range<usize>>,
}

impl Excuser<'_> {
    /// Whether the match `span` of the text is excused: an exception is
    /// found in it, or it lies inside an accepted phrase.
    pub(crate) fn excuse(&self, span: &Range<usize>) -> bool {
        let observed = self.text.get(span.clone()).unwrap_or("").trim();
        self.exceptions.excuse_text(observed)
            || self
                .phrases
                .iter()
                .any(|m| m.start <= span.start && span.end <= m.end)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn go_octal_escapes_read_as_hexadecimal_ones() {
        assert_eq!(from_go(r"a\055b"), r"a\x{2d}b");
        assert_eq!(
            from_go(r"\\055"),
            r"\\055",
            "an escaped backslash, then digits"
        );
        assert_eq!(from_go(r"\.\1"), r"\.\1", "other escapes kept");
        assert!(compile("T.R", "tokens", r"x\055y")
            .expect("compiles")
            .is_match("x-y")
            .unwrap_or(false));
    }

    #[test]
    fn go_classes_are_ascii_as_in_go() {
        assert_eq!(from_go(r"\bx\w+\d"), r"\bx[0-9A-Za-z_]+[0-9]");
        assert_eq!(from_go(r"[\w.-]\s"), r"[0-9A-Za-z_.-][\t\n\f\r ]");
        assert_eq!(
            from_go(r"[]\w][[:alpha:]\d]"),
            r"[]0-9A-Za-z_][[:alpha:]0-9]"
        );
        let word = compile("T.R", "tokens", r"caf\w").expect("compiles");
        // Go's \w is ASCII: "é" is no word character there.
        assert!(!word.is_match("un café").unwrap_or(true));
        let tokens = compile("T.R", "tokens", r"(?i)\b(?:will)\b").expect("compiles");
        assert!(tokens.is_match("It Will be").unwrap_or(false));
        assert!(!tokens.is_match("goodwill").unwrap_or(true));
    }

    use super::*;

    #[test]
    fn capture_groups_are_made_non_capturing_but_not_classes_or_escapes() {
        assert_eq!(non_capturing(r"(a|b)\(c\)[(]"), r"(?:a|b)\(c\)[(]");
        assert_eq!(non_capturing(r"(?:a)(?=b)"), r"(?:a)(?=b)");
        assert!(has_capture_group(r"\b([A-Z]{3,5})\b"));
        assert!(!has_capture_group(r"(?:\b[A-Z][a-z]+ )+\([A-Z]+\)"));
    }

    #[test]
    fn exceptions_are_words_found_in_a_match_with_their_case() {
        let ex = Exceptions::new("House.X", &["API".to_owned()], &["(?i)json".to_owned()])
            .expect("compiles");
        assert!(ex.excuse_text("REST API"));
        assert!(!ex.excuse_text("api"));
        assert!(!ex.excuse_text("APIs"));
        assert!(ex.excuse_text("JSON"));
        let err = Exceptions::new("House.X", &["(".to_owned()], &[]).expect_err("bad");
        assert!(
            err.to_string()
                .starts_with("House.X: `exceptions`: the pattern"),
            "{err}"
        );
    }

    #[test]
    fn a_match_inside_an_accepted_phrase_is_excused() {
        let ex = Exceptions::new("House.X", &[], &["mea culpa".to_owned()]).expect("compiles");
        let text = "Say Mea culpa, not mea.";
        let first = text.find("Mea").expect("there");
        assert!(ex.excuser(text).excuse(&(first..first + 3)));
        let last = text.rfind("mea").expect("there");
        assert!(!ex.excuser(text).excuse(&(last..last + 3)));
    }

    #[test]
    fn a_pattern_that_gives_up_keeps_what_it_found() {
        let re = Regex::new(r"a|(x+x+)+y").expect("compiles");
        let found = matches(&re, "a a");
        assert_eq!(found, [0..1, 2..3]);
    }
}
