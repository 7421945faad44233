//! A project's Vale configuration as data ([`ValeSources`]: what a host
//! read from disk) and compiled once ([`Styles`]: the rules each document
//! gets, by its path).

use crate::builtin::builtin_rule;
use crate::ini::{IniError, Switch, ValeIni};
use crate::rule::{load_rule_with, Level, Rule, RuleError};
use crate::vocab::{VocabError, Vocabulary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A project's Vale configuration as text: the `.vale.ini`, every rule of
/// the styles under its `StylesPath`, and its vocabularies. The host reads
/// the files; a plugin gets this as data (it reads no project file), and
/// its content is what a cache keys the compiled rules on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValeSources {
    /// The `.vale.ini`'s path, as messages show it.
    pub ini_path: String,
    /// The `.vale.ini`'s text.
    pub ini: String,
    /// `StylesPath` as messages show it (relative to the `.vale.ini`).
    #[serde(default)]
    pub styles_path: String,
    /// Each rule's YAML, by its name `Style.Rule`.
    #[serde(default)]
    pub rules: BTreeMap<String, String>,
    /// Each vocabulary of `Vocab`, by name.
    #[serde(default)]
    pub vocab: BTreeMap<String, VocabText>,
}

/// One vocabulary's two lists, as text (one entry a line).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VocabText {
    /// `accept.txt`: terms that are right as written.
    #[serde(default)]
    pub accept: String,
    /// `reject.txt`: terms always reported.
    #[serde(default)]
    pub reject: String,
}

/// Why a project's styles could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum StyleError {
    /// The `.vale.ini` does not read.
    #[error("{path}: {source}")]
    Ini {
        /// The `.vale.ini`.
        path: String,
        /// What is wrong, with its line.
        source: IniError,
    },
    /// A vocabulary's entry does not compile.
    #[error("vocabulary {name} ({styles_path}): {source}")]
    Vocab {
        /// The vocabulary's name (`Vocab = Name`).
        name: String,
        /// Where the styles are.
        styles_path: String,
        /// The entry and why.
        source: VocabError,
    },
    /// A rule does not read.
    #[error("{file}: {source}")]
    Rule {
        /// The rule's file (`styles/Google/Passive.yml`).
        file: String,
        /// What is wrong.
        source: RuleError,
    },
}

/// A project's styles, compiled.
#[derive(Debug)]
pub struct Styles {
    ini: ValeIni,
    /// Every rule of the sources, and Vale's own, by name.
    rules: BTreeMap<String, Rule>,
    /// `Vale.Terms` and `Vale.Avoid` when a vocabulary makes them: on
    /// for every document unless a switch turns them off.
    vocab_names: Vec<String>,
    /// The vocabularies' accepted entries.
    accepted: Vec<String>,
    /// Each section's `TokenIgnores` and `BlockIgnores`, compiled, in
    /// section order.
    ignores: Vec<Vec<(bool, fancy_regex::Regex)>>,
    /// What is not acted on, one line each, said once: the `.vale.ini`'s
    /// keys, each rule's extension point or keys, styles named but absent.
    pub notes: Vec<String>,
}

/// A rule a document gets, at the level its section sets.
#[derive(Debug, Clone, Copy)]
pub struct Selected<'a> {
    /// The rule.
    pub rule: &'a Rule,
    /// Its level for this document (a switch `Style.Rule = error` raises
    /// it).
    pub level: Level,
}

impl Styles {
    /// Reads the `.vale.ini` and every rule of `sources`.
    pub fn compile(sources: &ValeSources) -> Result<Styles, StyleError> {
        let ini = ValeIni::parse(&sources.ini).map_err(|source| StyleError::Ini {
            path: sources.ini_path.clone(),
            source,
        })?;
        let mut notes: Vec<String> = ini
            .unsupported
            .iter()
            .map(|u| format!("{}: {u}", sources.ini_path))
            .collect();
        let mut vocab = Vocabulary::default();
        for name in &ini.vocab {
            let text = sources.vocab.get(name).cloned().unwrap_or_default();
            let parsed = Vocabulary::parse(&text.accept, &text.reject).map_err(|source| {
                StyleError::Vocab {
                    name: name.clone(),
                    styles_path: sources.styles_path.clone(),
                    source,
                }
            })?;
            vocab.extend(parsed);
        }
        let accepted = vocab.accepted().to_vec();
        let mut rules = BTreeMap::new();
        for (name, yaml) in &sources.rules {
            let file = rule_file(&sources.styles_path, name);
            let loaded =
                load_rule_with(name, yaml, &accepted).map_err(|source| StyleError::Rule {
                    file: file.clone(),
                    source,
                })?;
            notes.extend(loaded.unsupported.iter().map(|u| format!("{file}: {u}")));
            if loaded.rule.spelling().is_some() {
                notes.push(format!(
                    "{file}: a `spelling` rule does not run: koas's own spelling check does (kind `misspelling`; its words are [language] accept and words)"
                ));
                continue;
            }
            rules.insert(name.clone(), loaded.rule);
        }
        // Vale's own style: the vocabularies' two rules (on wherever a
        // vocabulary is set, as in Vale) and `Vale.Repetition`.
        // `Vale.Spelling` is koas's own spelling check.
        let vocab_rules = vocab.rules().map_err(|source| StyleError::Rule {
            file: format!("{} (Vocab)", sources.ini_path),
            source,
        })?;
        let vocab_names: Vec<String> = vocab_rules.iter().map(|r| r.name.clone()).collect();
        for rule in vocab_rules {
            rules.insert(rule.name.clone(), rule);
        }
        if let Some(loaded) = builtin_rule("Vale.Repetition", &accepted) {
            rules.insert(loaded.rule.name.clone(), loaded.rule);
        }
        let builds_on_vale = ini
            .sections
            .iter()
            .any(|s| s.based_on.iter().any(|b| b == "Vale"));
        if builds_on_vale {
            notes.push(format!(
                "{}: Vale.Spelling does not run: koas's own spelling check does (kind `misspelling`)",
                sources.ini_path
            ));
        }
        // A style a section builds on that has no rule here is a typo or a
        // missing folder: told, since nothing of it will run.
        let mut named: Vec<&str> = ini
            .sections
            .iter()
            .flat_map(|s| s.based_on.iter().map(String::as_str))
            .filter(|style| *style != "Vale")
            .collect();
        named.sort_unstable();
        named.dedup();
        for style in named {
            let prefix = format!("{style}.");
            if !rules.keys().any(|r| r.starts_with(&prefix)) {
                notes.push(format!(
                    "{}: BasedOnStyles names `{style}`, which has no rule under StylesPath `{}`",
                    sources.ini_path, sources.styles_path
                ));
            }
        }
        let mut ignores = Vec::new();
        for section in &ini.sections {
            let mut compiled = Vec::new();
            let tagged = section
                .token_ignores
                .iter()
                .map(|p| (false, p))
                .chain(section.block_ignores.iter().map(|p| (true, p)));
            for (block, pattern) in tagged {
                match fancy_regex::Regex::new(&crate::rule::pattern::from_go(pattern)) {
                    Ok(re) => compiled.push((block, re)),
                    Err(e) => notes.push(format!(
                        "{}: [{}] ignores `{pattern}`: not a pattern ({e}); not applied",
                        sources.ini_path, section.glob
                    )),
                }
            }
            ignores.push(compiled);
        }
        Ok(Styles {
            ini,
            rules,
            vocab_names,
            accepted,
            ignores,
            notes,
        })
    }

    /// The `TokenIgnores` (`false`) and `BlockIgnores` (`true`) patterns
    /// of the sections that take a document at `path`: what they match,
    /// no rule reads (a block ignore also ends the block it is in).
    pub fn ignores_for(&self, path: &str) -> Vec<(bool, &fancy_regex::Regex)> {
        self.ini
            .sections
            .iter()
            .zip(&self.ignores)
            .filter(|(s, _)| glob_matches(&s.glob, path))
            .flat_map(|(_, res)| res.iter().map(|(block, re)| (*block, re)))
            .collect()
    }

    /// The vocabularies' accepted entries (words or patterns): a host's
    /// speller takes them as Vale's spelling does.
    pub fn accepted(&self) -> &[String] {
        &self.accepted
    }

    /// The names of every rule the styles hold (`Style.Rule`), sorted.
    pub fn rule_names(&self) -> impl Iterator<Item = &str> {
        self.rules.keys().map(String::as_str)
    }

    /// The rule named `name`, when the styles hold it.
    pub fn rule(&self, name: &str) -> Option<&Rule> {
        self.rules.get(name)
    }

    /// The rules a document at `path` gets (its path relative to the
    /// `.vale.ini`'s folder, `/`-separated; or its file name), in name
    /// order: every section whose glob matches it applies, in file order,
    /// a later switch over an earlier one. Rules below `MinAlertLevel` are
    /// left out.
    pub fn rules_for(&self, path: &str) -> Vec<Selected<'_>> {
        let mut on: BTreeMap<&str, Option<Level>> = BTreeMap::new();
        let sections: Vec<_> = self
            .ini
            .sections
            .iter()
            .filter(|s| glob_matches(&s.glob, path))
            .collect();
        if !sections.is_empty() {
            for name in &self.vocab_names {
                on.insert(name.as_str(), None);
            }
        }
        for section in sections {
            for style in &section.based_on {
                let prefix = format!("{style}.");
                for name in self.rules.keys().filter(|n| n.starts_with(&prefix)) {
                    on.entry(name.as_str()).or_insert(None);
                }
            }
            for (name, switch) in &section.switches {
                // A switch may name a style (`Google = NO`) or one rule.
                let names: Vec<&str> = match self.rules.get_key_value(name.as_str()) {
                    Some((n, _)) => vec![n.as_str()],
                    None => {
                        let prefix = format!("{name}.");
                        self.rules
                            .keys()
                            .filter(|n| n.starts_with(&prefix))
                            .map(String::as_str)
                            .collect()
                    }
                };
                for n in names {
                    match switch {
                        Switch::Off => {
                            on.remove(n);
                        }
                        Switch::On => {
                            on.entry(n).or_insert(None);
                        }
                        Switch::At(level) => {
                            on.insert(n, Some(*level));
                        }
                    }
                }
            }
        }
        let min = self.ini.min_level.unwrap_or(Level::Suggestion);
        on.into_iter()
            .filter_map(|(name, level)| {
                let rule = self.rules.get(name)?;
                let level = level.unwrap_or(rule.level);
                (level >= min).then_some(Selected { rule, level })
            })
            .collect()
    }
}

/// The file a rule comes from, as messages show it.
fn rule_file(styles_path: &str, name: &str) -> String {
    let (style, rule) = name.split_once('.').unwrap_or(("", name));
    let dir = styles_path.trim_end_matches('/');
    if dir.is_empty() {
        format!("{style}/{rule}.yml")
    } else {
        format!("{dir}/{style}/{rule}.yml")
    }
}

/// Whether a `.vale.ini` section's glob takes the file at `path`: its
/// file name, or its whole relative path when the glob has a `/`. `*`
/// matches within a name, `**` across folders, `?` one character,
/// `{a,b}` either, `[abc]` one of.
pub fn glob_matches(glob: &str, path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let target = if glob.contains('/') { path } else { name };
    let glob: Vec<char> = glob.chars().collect();
    let target: Vec<char> = target.chars().collect();
    expand_braces(&glob)
        .iter()
        .any(|g| matches_from(g, &target))
}

/// `{a,b}` alternatives expanded (nested ones too), at most 64 variants:
/// a section's glob is short.
fn expand_braces(glob: &[char]) -> Vec<Vec<char>> {
    let Some(open) = glob.iter().position(|c| *c == '{') else {
        return vec![glob.to_vec()];
    };
    let mut depth = 0;
    let mut close = None;
    let mut commas = Vec::new();
    for (i, c) in glob.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(i),
            _ => {}
        }
    }
    let Some(close) = close else {
        return vec![glob.to_vec()];
    };
    let mut bounds = vec![open];
    bounds.extend(commas);
    bounds.push(close);
    let mut out = Vec::new();
    for pair in bounds.windows(2) {
        let mut variant = glob[..open].to_vec();
        variant.extend_from_slice(&glob[pair[0] + 1..pair[1]]);
        variant.extend_from_slice(&glob[close + 1..]);
        for expanded in expand_braces(&variant) {
            if out.len() < 64 {
                out.push(expanded);
            }
        }
    }
    out
}

fn matches_from(glob: &[char], target: &[char]) -> bool {
    match glob.first() {
        None => target.is_empty(),
        Some('*') => {
            let across = glob.get(1) == Some(&'*');
            let rest = if across { &glob[2..] } else { &glob[1..] };
            // A `**/` also matches no folder at all.
            if across && rest.first() == Some(&'/') && matches_from(&rest[1..], target) {
                return true;
            }
            (0..=target.len())
                .take_while(|&i| across || i == 0 || target[i - 1] != '/')
                .any(|i| matches_from(rest, &target[i..]))
        }
        Some('?') => {
            target.first().is_some_and(|c| *c != '/') && matches_from(&glob[1..], &target[1..])
        }
        Some('[') => {
            let Some(end) = glob.iter().position(|c| *c == ']') else {
                return target.first() == Some(&'[') && matches_from(&glob[1..], &target[1..]);
            };
            let set = &glob[1..end];
            let (negated, set) = match set.first() {
                Some('!' | '^') => (true, &set[1..]),
                _ => (false, set),
            };
            let Some(c) = target.first() else {
                return false;
            };
            let mut inside = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == '-' {
                    inside |= (set[i]..=set[i + 2]).contains(c);
                    i += 3;
                } else {
                    inside |= set[i] == *c;
                    i += 1;
                }
            }
            inside != negated && matches_from(&glob[end + 1..], &target[1..])
        }
        Some(c) => target.first() == Some(c) && matches_from(&glob[1..], &target[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(ini: &str, rules: &[(&str, &str)]) -> ValeSources {
        ValeSources {
            ini_path: ".vale.ini".into(),
            ini: ini.into(),
            styles_path: "styles".into(),
            rules: rules
                .iter()
                .map(|(n, y)| (n.to_string(), y.to_string()))
                .collect(),
            vocab: BTreeMap::new(),
        }
    }

    const WILL: &str =
        "extends: existence\nmessage: \"Avoid '%s'.\"\nlevel: suggestion\ntokens:\n  - will\n";
    const LATIN: &str = "extends: substitution\nmessage: \"Use '%s' instead of '%s'.\"\nlevel: error\nswap:\n  e.g.: for example\n";

    #[test]
    fn globs_take_names_paths_alternatives_and_classes() {
        assert!(glob_matches("*.md", "guide.md"));
        assert!(glob_matches("*.md", "docs/guide.md"), "a name glob");
        assert!(!glob_matches("*.md", "guide.txt"));
        assert!(glob_matches("*.{md,txt}", "notes.txt"));
        assert!(glob_matches("*", "anything.rst"));
        assert!(glob_matches("docs/**/*.md", "docs/a/b/c.md"));
        assert!(glob_matches("docs/**/*.md", "docs/c.md"));
        assert!(!glob_matches("docs/*.md", "docs/a/c.md"));
        assert!(glob_matches("[a-c]?.md", "b1.md"));
        assert!(!glob_matches("[!a-c]?.md", "b1.md"));
    }

    #[test]
    fn sections_switches_and_the_minimum_level_choose_the_rules() {
        let s = sources(
            "StylesPath = styles\nMinAlertLevel = warning\n[*]\nBasedOnStyles = Team\n[*.md]\nTeam.Latin = NO\nTeam.Will = error\n",
            &[("Team.Will", WILL), ("Team.Latin", LATIN)],
        );
        let styles = Styles::compile(&s).expect("compiles");
        let names = |path| {
            styles
                .rules_for(path)
                .iter()
                .map(|s| (s.rule.name.clone(), s.level))
                .collect::<Vec<_>>()
        };
        // Markdown: Latin off; Will raised from suggestion to error.
        assert_eq!(names("a.md"), [("Team.Will".to_owned(), Level::Error)]);
        // Elsewhere: Will is a suggestion, under MinAlertLevel.
        assert_eq!(names("a.txt"), [("Team.Latin".to_owned(), Level::Error)]);
    }

    #[test]
    fn a_switch_may_turn_a_whole_style_off_or_one_rule_on() {
        let s = sources(
            "[*.md]\nBasedOnStyles = Team\nTeam = NO\nTeam.Latin = YES\n",
            &[("Team.Will", WILL), ("Team.Latin", LATIN)],
        );
        let styles = Styles::compile(&s).expect("compiles");
        let on: Vec<_> = styles
            .rules_for("x.md")
            .iter()
            .map(|s| s.rule.name.clone())
            .collect();
        assert_eq!(on, ["Team.Latin"]);
    }

    #[test]
    fn a_vocabulary_brings_vale_terms_and_avoid_and_its_terms_are_exceptions() {
        let mut s = sources(
            "Vocab = Docs\n[*.md]\nBasedOnStyles = Team\n",
            &[(
                "Team.Will",
                "extends: existence\nmessage: \"Avoid '%s'.\"\ntokens:\n  - will\n  - Willow\n",
            )],
        );
        s.vocab.insert(
            "Docs".into(),
            VocabText {
                accept: "Willow\nJavaScript\n".into(),
                reject: "whitelist\n".into(),
            },
        );
        let styles = Styles::compile(&s).expect("compiles");
        let on: Vec<String> = styles
            .rules_for("a.md")
            .iter()
            .map(|s| s.rule.name.clone())
            .collect();
        assert_eq!(on, ["Team.Will", "Vale.Avoid", "Vale.Terms"]);
        let text = "Willow will use Javascript, not a whitelist.";
        let alerts: Vec<String> = styles
            .rules_for("a.md")
            .iter()
            .flat_map(|s| s.rule.check(text))
            .map(|a| format!("{} {}", a.rule, a.message))
            .collect();
        assert_eq!(
            alerts,
            [
                "Team.Will Avoid 'will'.",
                "Vale.Avoid Avoid using 'whitelist'.",
                "Vale.Terms Use 'JavaScript' instead of 'Javascript'."
            ]
        );
        s.vocab.insert(
            "Docs".into(),
            VocabText {
                accept: "[unclosed\n".into(),
                reject: String::new(),
            },
        );
        let err = Styles::compile(&s).expect_err("a bad entry");
        assert!(
            err.to_string()
                .starts_with("vocabulary Docs (styles): accept.txt line 1"),
            "{err}"
        );
    }

    #[test]
    fn a_broken_rule_names_its_file_and_a_missing_style_is_told() {
        let s = sources("[*]\nBasedOnStyles = Team\n", &[("Team.Bad", "extends: [")]);
        let err = Styles::compile(&s).expect_err("bad yaml");
        assert!(
            err.to_string().starts_with("styles/Team/Bad.yml: "),
            "{err}"
        );
        let s = sources("[*]\nBasedOnStyles = Vale, Gogle\n", &[("Team.Will", WILL)]);
        let styles = Styles::compile(&s).expect("compiles");
        assert_eq!(
            styles.notes,
            [
                ".vale.ini: Vale.Spelling does not run: koas's own spelling check does (kind `misspelling`)",
                ".vale.ini: BasedOnStyles names `Gogle`, which has no rule under StylesPath `styles`"
            ]
        );
        let err = Styles::compile(&sources("[*.md\n", &[])).expect_err("bad ini");
        assert!(err.to_string().starts_with(".vale.ini: line 1: "), "{err}");
    }
}
