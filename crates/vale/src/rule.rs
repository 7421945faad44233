//! One Vale rule: its YAML read, its check compiled, run on text.

use fancy_regex::Regex;
use yaml_rust2::{Yaml, YamlLoader};

/// How serious an alert is, in Vale's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// `suggestion` (Vale's default).
    Suggestion,
    /// `warning`.
    Warning,
    /// `error`.
    Error,
}

impl Level {
    /// `suggestion`, `warning` or `error`.
    pub fn parse(text: &str) -> Option<Level> {
        match text {
            "suggestion" => Some(Level::Suggestion),
            "warning" => Some(Level::Warning),
            "error" => Some(Level::Error),
            _ => None,
        }
    }
}

/// Why a rule could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// The file is not YAML, or not a mapping.
    #[error("{rule}: not a YAML mapping: {reason}")]
    Yaml {
        /// `Style.Rule`.
        rule: String,
        /// What the YAML reader said.
        reason: String,
    },
    /// A key holds what Vale does not accept there.
    #[error("{rule}: `{key}`: {reason}")]
    Key {
        /// `Style.Rule`.
        rule: String,
        /// The key.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A pattern does not compile.
    #[error("{rule}: the pattern {pattern:?} does not compile: {reason}")]
    Pattern {
        /// `Style.Rule`.
        rule: String,
        /// The pattern as built from the rule.
        pattern: String,
        /// What the regex compiler said.
        reason: String,
    },
}

/// A rule read from its YAML.
#[derive(Debug)]
pub struct Rule {
    /// `Style.Rule`, as Vale names it.
    pub name: String,
    /// Its extension point (`existence`, `substitution`…).
    pub extends: String,
    /// Its message, `%s` and all.
    pub message: String,
    /// Its level.
    pub level: Level,
    /// The page that explains it.
    pub link: Option<String>,
    /// Where it applies (`heading`, `paragraph`, `text`…): the host's to
    /// honour; `text` when the rule says nothing.
    pub scope: Vec<String>,
    /// What Vale's `action` would do (`replace`, `remove`, `edit`…).
    pub action: Option<String>,
    check: Check,
}

/// A rule and what of it is not run.
#[derive(Debug)]
pub struct Loaded {
    /// The rule.
    pub rule: Rule,
    /// Each part of the rule this crate does not act on (an extension
    /// point, a key), in words: said once, when the rule is read.
    pub unsupported: Vec<String>,
}

/// What a rule looks for.
#[derive(Debug)]
enum Check {
    /// `existence`: any match is an alert.
    Existence {
        pattern: Regex,
        exceptions: Option<Regex>,
    },
    /// `substitution`: a match of a `swap` key is an alert naming its
    /// replacement.
    Substitution {
        pattern: Regex,
        swaps: Vec<(Regex, String)>,
        exceptions: Option<Regex>,
        /// Matched without regard to case: a replacement takes the
        /// capital of a text that starts with one.
        ignorecase: bool,
    },
    /// `capitalization`: a block whose text is not in the rule's case
    /// is an alert, the whole text its `%s`.
    Capitalization {
        case: Case,
        /// A word ending with one starts a new sentence (`:`).
        indicators: Vec<String>,
        /// Words written as they must be (`macOS`, `JSON`).
        exceptions: Vec<String>,
    },
    /// An extension point not run here.
    NotRun,
}

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

/// One alert of a rule on a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleAlert {
    /// `Style.Rule`.
    pub rule: String,
    /// The byte range of the text it is about.
    pub span: std::ops::Range<usize>,
    /// The rule's message, its `%s` filled in.
    pub message: String,
    /// The rule's level.
    pub level: Level,
    /// The rule's link.
    pub link: Option<String>,
    /// What the text could say instead (a `substitution`'s options).
    pub replacements: Vec<String>,
}

/// The keys every rule may have.
const COMMON: [&str; 8] = [
    "extends",
    "message",
    "level",
    "link",
    "scope",
    "action",
    "description",
    "limit",
];

/// Reads the rule `name` (`Style.Rule`) from its YAML text.
pub fn load_rule(name: &str, yaml: &str) -> Result<Loaded, RuleError> {
    let docs = YamlLoader::load_from_str(yaml).map_err(|e| RuleError::Yaml {
        rule: name.to_owned(),
        reason: e.to_string(),
    })?;
    let doc = docs.into_iter().next().unwrap_or(Yaml::Null);
    let Some(map) = doc.as_hash() else {
        return Err(RuleError::Yaml {
            rule: name.to_owned(),
            reason: "the file holds no mapping".to_owned(),
        });
    };
    let key_error = |key: &str, reason: &str| RuleError::Key {
        rule: name.to_owned(),
        key: key.to_owned(),
        reason: reason.to_owned(),
    };
    let text = |key: &str| -> Result<Option<String>, RuleError> {
        match &doc[key] {
            Yaml::BadValue | Yaml::Null => Ok(None),
            value => scalar(value)
                .map(Some)
                .ok_or_else(|| key_error(key, "must be text")),
        }
    };
    let extends = text("extends")?.ok_or_else(|| key_error("extends", "is missing"))?;
    let level = match text("level")? {
        None => Level::Suggestion,
        Some(l) => Level::parse(&l)
            .ok_or_else(|| key_error("level", "must be suggestion, warning or error"))?,
    };
    let scope = match &doc["scope"] {
        Yaml::Array(items) => items.iter().filter_map(scalar).collect(),
        Yaml::BadValue | Yaml::Null => vec!["text".to_owned()],
        value => scalar(value)
            .map(|s| vec![s])
            .ok_or_else(|| key_error("scope", "must be text or a list"))?,
    };
    let action = match &doc["action"] {
        Yaml::Hash(_) => doc["action"]["name"].as_str().map(str::to_owned),
        _ => None,
    };
    let ignorecase = doc["ignorecase"].as_bool().unwrap_or(false);
    let nonword = doc["nonword"].as_bool().unwrap_or(false);
    let compile = |pattern: &str| {
        Regex::new(pattern).map_err(|e| RuleError::Pattern {
            rule: name.to_owned(),
            pattern: pattern.to_owned(),
            reason: e.to_string(),
        })
    };
    let exceptions = match list(&doc["exceptions"]) {
        Some(items) if !items.is_empty() => Some(compile(&format!(
            "{}^(?:{})$",
            if ignorecase { "(?i)" } else { "" },
            items.join("|")
        ))?),
        _ => None,
    };
    let wrap = |alternatives: &str| {
        let body = if nonword {
            format!("(?:{alternatives})")
        } else {
            format!(r"\b(?:{alternatives})\b")
        };
        format!("{}{body}", if ignorecase { "(?i)" } else { "" })
    };
    let mut known: Vec<&str> = COMMON.to_vec();
    let check = match extends.as_str() {
        "existence" => {
            known.extend(["tokens", "raw", "ignorecase", "nonword", "exceptions"]);
            // `raw` is one pattern written in pieces, taken as written;
            // the tokens are alternatives, after it.
            let raw = list(&doc["raw"]).unwrap_or_default().concat();
            let tokens = list(&doc["tokens"]).unwrap_or_default();
            if raw.is_empty() && tokens.is_empty() {
                return Err(key_error("tokens", "an existence rule needs tokens or raw"));
            }
            let pattern = if tokens.is_empty() {
                format!("{}{raw}", if ignorecase { "(?i)" } else { "" })
            } else {
                let wrapped = wrap(&tokens.join("|"));
                match wrapped.strip_prefix("(?i)") {
                    Some(rest) => format!("(?i){raw}{rest}"),
                    None => format!("{raw}{wrapped}"),
                }
            };
            Check::Existence {
                pattern: compile(&pattern)?,
                exceptions,
            }
        }
        "substitution" => {
            known.extend(["swap", "ignorecase", "nonword", "exceptions"]);
            let Some(swap) = doc["swap"].as_hash() else {
                return Err(key_error(
                    "swap",
                    "a substitution rule needs a swap mapping",
                ));
            };
            let mut swaps = Vec::new();
            let mut keys = Vec::new();
            for (key, value) in swap {
                let (Some(key), Some(value)) = (scalar(key), scalar(value)) else {
                    return Err(key_error("swap", "its keys and values must be text"));
                };
                // Found again at the match's place in its text, so that a
                // key's lookaround sees what is around the match.
                let alone = format!("{}(?:{key})", if ignorecase { "(?i)" } else { "" });
                swaps.push((compile(&alone)?, value));
                keys.push(format!("(?:{key})"));
            }
            if keys.is_empty() {
                return Err(key_error("swap", "is empty"));
            }
            Check::Substitution {
                pattern: compile(&wrap(&keys.join("|")))?,
                swaps,
                exceptions,
                ignorecase,
            }
        }
        "capitalization" => {
            known.extend(["match", "indicators", "exceptions", "style"]);
            let matched = text("match")?.ok_or_else(|| key_error("match", "is missing"))?;
            let case = match matched.as_str() {
                "$sentence" => Some(Case::Sentence),
                "$lower" => Some(Case::Lower),
                "$upper" => Some(Case::Upper),
                // `$title` follows a style guide's list of small words.
                "$title" => None,
                pattern => Some(Case::Pattern(compile(&format!("^(?:{pattern})$"))?)),
            };
            match case {
                Some(case) => Check::Capitalization {
                    case,
                    indicators: list(&doc["indicators"]).unwrap_or_default(),
                    exceptions: list(&doc["exceptions"]).unwrap_or_default(),
                },
                None => Check::NotRun,
            }
        }
        _ => Check::NotRun,
    };
    let mut unsupported = Vec::new();
    for scope in &scope {
        let base = scope.split('.').next().unwrap_or(scope);
        if !SCOPES.contains(&base) {
            unsupported.push(format!("{name}: the scope `{scope}` is not known here"));
        }
    }
    if matches!(check, Check::NotRun) {
        let what = if extends == "capitalization" {
            "`match: $title`".to_owned()
        } else {
            format!("the extension point `{extends}`")
        };
        unsupported.push(format!("{name}: {what} is not run yet"));
    } else {
        for key in map.keys().filter_map(Yaml::as_str) {
            if !known.contains(&key) {
                unsupported.push(format!("{name}: `{key}` is not acted on"));
            }
        }
    }
    Ok(Loaded {
        rule: Rule {
            name: name.to_owned(),
            extends,
            message: text("message")?.unwrap_or_default(),
            level,
            link: text("link")?,
            scope,
            action,
            check,
        },
        unsupported,
    })
}

/// A scalar's text (Vale's YAML writes some words and numbers bare).
fn scalar(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Real(r) => Some(r.clone()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A list of scalars (a single scalar is a list of one).
fn list(value: &Yaml) -> Option<Vec<String>> {
    match value {
        Yaml::Array(items) => Some(items.iter().filter_map(scalar).collect()),
        other => scalar(other).map(|s| vec![s]),
    }
}

/// Whether `text` is in `case`. For `$sentence`, as Vale counts it: of
/// the words with a letter, more than four in five must be right (an
/// exception as written; the first, and one after an indicator, with a
/// capital; the others all lower case).
fn in_case(text: &str, case: &Case, indicators: &[String], exceptions: &[String]) -> bool {
    match case {
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
                let ok = if exceptions.iter().any(|e| e == word || e == bare) {
                    true
                } else if starts {
                    word.chars()
                        .find(|c| c.is_alphabetic())
                        .is_some_and(char::is_uppercase)
                } else {
                    word == word.to_lowercase()
                };
                right += usize::from(ok);
                starts = indicators.iter().any(|i| word.ends_with(i.as_str()));
            }
            words == 0 || right * 5 > words * 4
        }
    }
}

/// `text` with its first letter a capital.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `message` with its `%s` filled by `args`, one each, in order (a `%s`
/// with no argument left stays as written).
fn fill(message: &str, args: &[&str]) -> String {
    let mut out = String::new();
    let mut rest = message;
    let mut args = args.iter();
    while let Some(at) = rest.find("%s") {
        out.push_str(&rest[..at]);
        match args.next() {
            Some(arg) => out.push_str(arg),
            None => out.push_str("%s"),
        }
        rest = &rest[at + 2..];
    }
    out.push_str(rest);
    out
}

/// What a piece of a document is, as Vale's scopes name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeKind {
    /// A heading of level 1 to 6 (`heading`, `heading.h2`…).
    Heading(u8),
    /// A paragraph (`paragraph`).
    Paragraph,
    /// A list item's text (`list`).
    ListItem,
    /// A blockquote's text (`blockquote`).
    Blockquote,
    /// A table cell (`table.cell`; `table.header` for the first row).
    TableCell {
        /// The cell is in the header row.
        header: bool,
    },
}

/// A piece of a document's prose, for the rules whose scope takes it:
/// the host finds them (code, front matter and the like are none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// What it is.
    pub kind: ScopeKind,
    /// Its bytes in the document.
    pub span: std::ops::Range<usize>,
}

/// The scopes this crate knows (a rule naming another is told so).
const SCOPES: [&str; 8] = [
    "text",
    "heading",
    "paragraph",
    "list",
    "blockquote",
    "table",
    "raw",
    "sentence",
];

impl Rule {
    /// Whether the rule's scope takes a block of `kind` (`text` takes
    /// every prose block; `raw` none: it is the whole document's). A
    /// `sentence` rule runs on its whole block: blocks are not yet cut
    /// into sentences.
    pub fn applies_to(&self, kind: ScopeKind) -> bool {
        self.scope.iter().any(|scope| {
            let (base, sub) = scope.split_once('.').unwrap_or((scope.as_str(), ""));
            match (base, kind) {
                ("text" | "sentence", _) => true,
                ("heading", ScopeKind::Heading(level)) => {
                    sub.is_empty() || sub == format!("h{level}")
                }
                ("paragraph", ScopeKind::Paragraph) => true,
                ("list", ScopeKind::ListItem) => true,
                ("blockquote", ScopeKind::Blockquote) => true,
                ("table", ScopeKind::TableCell { header }) => match sub {
                    "" | "cell" => true,
                    "header" => header,
                    _ => false,
                },
                _ => false,
            }
        })
    }

    /// Whether the rule runs on the whole document as written.
    pub fn is_raw(&self) -> bool {
        self.scope.iter().any(|s| s == "raw")
    }

    /// The rule's alerts on the `blocks` of `text` its scope takes (on
    /// the whole of `text` for a `raw` rule), in text order.
    pub fn check_blocks(&self, text: &str, blocks: &[Block]) -> Vec<RuleAlert> {
        if self.is_raw() {
            return self.check(text);
        }
        let mut alerts = Vec::new();
        for block in blocks.iter().filter(|b| self.applies_to(b.kind)) {
            let Some(piece) = text.get(block.span.clone()) else {
                continue;
            };
            alerts.extend(self.check(piece).into_iter().map(|mut a| {
                a.span = a.span.start + block.span.start..a.span.end + block.span.start;
                a
            }));
        }
        alerts.sort_by_key(|a| a.span.start);
        alerts
    }

    /// The rule's alerts on `text`, in text order. A pattern that gives
    /// up on a text (fancy-regex's backtracking limit) ends the search
    /// there: the alerts found before are kept.
    pub fn check(&self, text: &str) -> Vec<RuleAlert> {
        if let Check::Capitalization {
            case,
            indicators,
            exceptions,
        } = &self.check
        {
            let trimmed = text.trim();
            if trimmed.is_empty() || in_case(trimmed, case, indicators, exceptions) {
                return Vec::new();
            }
            let start = text.len() - text.trim_start().len();
            return vec![RuleAlert {
                rule: self.name.clone(),
                span: start..start + trimmed.len(),
                message: fill(&self.message, &[trimmed]),
                level: self.level,
                link: self.link.clone(),
                replacements: Vec::new(),
            }];
        }
        let (pattern, exceptions) = match &self.check {
            Check::Existence {
                pattern,
                exceptions,
            }
            | Check::Substitution {
                pattern,
                exceptions,
                ..
            } => (pattern, exceptions),
            Check::Capitalization { .. } | Check::NotRun => return Vec::new(),
        };
        let mut alerts = Vec::new();
        for found in pattern.find_iter(text) {
            let Ok(found) = found else { break };
            let observed = found.as_str();
            if observed.is_empty()
                || exceptions
                    .as_ref()
                    .is_some_and(|e| e.is_match(observed).unwrap_or(false))
            {
                continue;
            }
            let (message, replacements) = match &self.check {
                Check::Substitution {
                    swaps, ignorecase, ..
                } => {
                    let here = |key: &Regex| {
                        key.find_from_pos(text, found.start())
                            .ok()
                            .flatten()
                            .is_some_and(|m| m.start() == found.start() && m.end() == found.end())
                    };
                    let Some((_, expected)) = swaps.iter().find(|(key, _)| here(key)) else {
                        continue;
                    };
                    let capital =
                        *ignorecase && observed.chars().next().is_some_and(char::is_uppercase);
                    let options: Vec<String> = expected
                        .split('|')
                        .map(|o| {
                            if capital {
                                capitalized(o)
                            } else {
                                o.to_owned()
                            }
                        })
                        .collect();
                    // Text that already says one of the options is right.
                    if options.iter().any(|o| o == observed) {
                        continue;
                    }
                    let expected = options.join("' or '");
                    let message = if self.message.matches("%s").count() == 1 {
                        fill(&self.message, &[&expected])
                    } else {
                        fill(&self.message, &[&expected, observed])
                    };
                    (message, options)
                }
                _ => (fill(&self.message, &[observed]), Vec::new()),
            };
            alerts.push(RuleAlert {
                rule: self.name.clone(),
                span: found.start()..found.end(),
                message,
                level: self.level,
                link: self.link.clone(),
                replacements,
            });
        }
        alerts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
"#;

    fn messages(rule: &Rule, text: &str) -> Vec<String> {
        rule.check(text)
            .into_iter()
            .map(|a| {
                let (line, column) = crate::line_column(text, a.span.start);
                format!("{line}:{column}:{}:{}", a.rule, a.message)
            })
            .collect()
    }

    #[test]
    fn a_substitution_names_its_options_and_what_it_found() {
        let loaded = load_rule("House.Words", WORDS).expect("loads");
        assert!(loaded.unsupported.is_empty(), "{:?}", loaded.unsupported);
        let rule = loaded.rule;
        assert_eq!(rule.level, Level::Warning);
        assert_eq!(rule.action.as_deref(), Some("replace"));
        let text = "See the table above.\nCall from your cell phone, or send an E-mail to the admin team.\nAn administrator knows.";
        assert_eq!(
            messages(&rule, text),
            [
                "1:15:House.Words:Use 'preceding' instead of 'above'.",
                "2:16:House.Words:Use 'phone' or 'mobile phone' instead of 'cell phone'.",
                "2:39:House.Words:Use 'email' instead of 'E-mail'.",
                "2:53:House.Words:Use 'administrator' instead of 'admin'.",
            ]
        );
        let alerts = rule.check(text);
        assert_eq!(alerts[1].replacements, ["phone", "mobile phone"]);
        assert_eq!(&text[alerts[1].span.clone()], "cell phone");
    }

    #[test]
    fn a_word_rule_matches_whole_words_and_a_nonword_rule_anything() {
        let words = load_rule(
            "House.Latin",
            "extends: existence\nmessage: \"Avoid '%s'.\"\nignorecase: true\ntokens:\n  - via\n  - e\\.g\\.\n",
        )
        .expect("loads")
        .rule;
        // As in Vale, a word rule's tokens are wrapped in word
        // boundaries: `e.g.` followed by a space ends on none, so only a
        // `nonword` rule finds it.
        assert_eq!(
            messages(&words, "Sent Via post, not trivial: e.g. this."),
            ["1:6:House.Latin:Avoid 'Via'."]
        );
        let bangs = load_rule(
            "House.Bang",
            "extends: existence\nmessage: \"No exclamation points.\"\nnonword: true\nlevel: error\ntokens:\n  - '\\w+!(?:\\s|$)'\n",
        )
        .expect("loads")
        .rule;
        assert_eq!(
            messages(&bangs, "Done! Really"),
            ["1:1:House.Bang:No exclamation points."]
        );
        assert_eq!(bangs.level, Level::Error);
    }

    #[test]
    fn exceptions_lookarounds_and_raw_pieces_hold() {
        let rule = load_rule(
            "House.Acronyms",
            "extends: existence\nmessage: \"Spell out '%s'.\"\nraw:\n  - '\\b[A-Z]{3,5}'\n  - '(?!s)\\b'\nnonword: true\nexceptions:\n  - API\n  - HTTP\n",
        )
        .expect("loads")
        .rule;
        assert_eq!(
            messages(&rule, "The API speaks HTTP to the NSA and to many FAQs."),
            ["1:28:House.Acronyms:Spell out 'NSA'."]
        );
    }

    #[test]
    fn what_is_not_run_is_named_when_the_rule_is_read() {
        let loaded = load_rule(
            "House.Titles",
            "extends: capitalization\nmessage: \"'%s' should use title case.\"\nscope: heading\nmatch: $title\n",
        )
        .expect("loads");
        assert_eq!(
            loaded.unsupported,
            ["House.Titles: `match: $title` is not run yet"]
        );
        assert!(loaded.rule.check("a title here").is_empty());
        assert_eq!(loaded.rule.scope, ["heading"]);
        let loaded = load_rule("House.Spell", "extends: spelling\nmessage: x\n").expect("loads");
        assert_eq!(
            loaded.unsupported,
            ["House.Spell: the extension point `spelling` is not run yet"]
        );
        let extra = load_rule(
            "House.Vocab",
            "extends: existence\nmessage: x\ntokens: [foo]\nvocab: false\n",
        )
        .expect("loads");
        assert_eq!(extra.unsupported, ["House.Vocab: `vocab` is not acted on"]);
    }

    #[test]
    fn a_rules_scope_picks_its_blocks_and_alerts_keep_document_places() {
        let headings = load_rule(
            "House.H2",
            "extends: existence\nmessage: \"No '%s' in a heading.\"\nscope: heading.h2\ntokens: [Stuff]\n",
        )
        .expect("loads")
        .rule;
        let text = "# Stuff\n\n## More Stuff\n\nStuff in prose.\n";
        let blocks = [
            Block {
                kind: ScopeKind::Heading(1),
                span: 2..7,
            },
            Block {
                kind: ScopeKind::Heading(2),
                span: 12..22,
            },
            Block {
                kind: ScopeKind::Paragraph,
                span: 24..39,
            },
        ];
        let alerts = headings.check_blocks(text, &blocks);
        assert_eq!(alerts.len(), 1);
        assert_eq!(&text[alerts[0].span.clone()], "Stuff");
        assert_eq!(crate::line_column(text, alerts[0].span.start), (3, 9));
        let prose = load_rule(
            "House.Any",
            "extends: existence\nmessage: x\ntokens: [Stuff]\n",
        )
        .expect("loads")
        .rule;
        assert_eq!(prose.check_blocks(text, &blocks).len(), 3);
        let unknown = load_rule(
            "House.Alt",
            "extends: existence\nmessage: x\nscope: alt\ntokens: [a]\n",
        )
        .expect("loads");
        assert_eq!(
            unknown.unsupported,
            ["House.Alt: the scope `alt` is not known here"]
        );
    }

    #[test]
    fn raw_pieces_come_before_the_tokens_and_swap_keys_see_their_context() {
        let passive = load_rule(
            "House.Passive",
            "extends: existence\nmessage: \"Active voice, not '%s'.\"\nignorecase: true\nraw:\n  - \\b(am|is|was)\\b\\s*\ntokens:\n  - '[\\w]+ed'\n  - broken\n",
        )
        .expect("loads")
        .rule;
        assert_eq!(
            messages(&passive, "The build was broken twice."),
            ["1:11:House.Passive:Active voice, not 'was broken'."]
        );
        let latin = load_rule(
            "House.Latin",
            "extends: substitution\nmessage: \"Use '%s' instead of '%s'.\"\nignorecase: true\nnonword: true\nswap:\n  '\\b(?:ie|i\\.e\\.)(?=[\\s,;])': that is\n",
        )
        .expect("loads")
        .rule;
        assert_eq!(
            messages(&latin, "By train, i.e., not by bike."),
            ["1:11:House.Latin:Use 'that is' instead of 'i.e.'."]
        );
    }

    #[test]
    fn a_case_blind_substitution_keeps_the_texts_capital() {
        let rule = load_rule(
            "House.Contractions",
            "extends: substitution\nmessage: \"Use '%s' instead of '%s'.\"\nignorecase: true\nswap:\n  could not: couldn't\n",
        )
        .expect("loads")
        .rule;
        assert_eq!(
            messages(&rule, "Could not we? We could not."),
            [
                "1:1:House.Contractions:Use 'Couldn't' instead of 'Could not'.",
                "1:18:House.Contractions:Use 'couldn't' instead of 'could not'."
            ]
        );
    }

    #[test]
    fn sentence_case_counts_words_as_vale_does() {
        let rule = load_rule(
            "House.Headings",
            "extends: capitalization\nmessage: \"'%s' should use sentence-style capitalization.\"\nscope: heading\nmatch: $sentence\nindicators:\n  - ':'\nexceptions:\n  - macOS\n  - JSON\n",
        )
        .expect("loads");
        assert!(loaded_clean(&rule), "{:?}", rule.unsupported);
        let rule = rule.rule;
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
        let lower = load_rule(
            "House.Lower",
            "extends: capitalization\nmessage: x\nmatch: $lower\n",
        )
        .expect("loads")
        .rule;
        assert!(lower.check("all quiet").is_empty());
        assert_eq!(lower.check("Not quiet").len(), 1);
    }

    fn loaded_clean(loaded: &Loaded) -> bool {
        loaded.unsupported.is_empty()
    }

    #[test]
    fn broken_rules_say_which_rule_and_what() {
        let err =
            load_rule("House.Bad", "extends: existence\nmessage: x\n").expect_err("no tokens");
        assert_eq!(
            err.to_string(),
            "House.Bad: `tokens`: an existence rule needs tokens or raw"
        );
        let err = load_rule("House.Bad", "extends: existence\ntokens: ['(unclosed']\n")
            .expect_err("bad pattern");
        assert!(
            err.to_string().starts_with("House.Bad: the pattern"),
            "{err}"
        );
        let err = load_rule("House.Bad", "- a list\n").expect_err("not a mapping");
        assert!(err.to_string().contains("not a YAML mapping"), "{err}");
        let err = load_rule(
            "House.Bad",
            "extends: existence\nlevel: loud\ntokens: [a]\n",
        )
        .expect_err("bad level");
        assert!(err.to_string().contains("`level`"), "{err}");
    }
}
