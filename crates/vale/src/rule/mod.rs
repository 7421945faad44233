//! One Vale rule: its YAML read, its check compiled, run on a document's
//! blocks. Each extension point has its module; this one reads the keys
//! every rule has and runs a rule on the pieces its scope takes.

mod capitalization;
mod conditional;
mod consistency;
mod existence;
mod formula;
mod keys;
mod message;
mod metric;
mod occurrence;
pub(crate) mod pattern;
mod readability;
mod regex;
mod repetition;
mod scope;
mod spelling;
mod substitution;

pub use scope::{Block, ScopeKind};
pub use spelling::{SpellingOptions, SPELLING_DEFAULT_FILTERS};

use crate::prose::{sentences, TextCounts};
use capitalization::Capitalization;
use conditional::Conditional;
use consistency::Consistency;
use existence::{Existence, ExistenceSpec};
use keys::Keys;
use metric::Metric;
use occurrence::Occurrence;
use readability::Readability;
use repetition::Repetition;
use scope::{in_summary, pieces_of, RuleScope};
use std::collections::HashSet;
use std::ops::Range;
use substitution::{Substitution, SubstitutionSpec};
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
    #[error("{rule}: `{key}`: the pattern {pattern:?} does not compile: {reason}")]
    Pattern {
        /// `Style.Rule`.
        rule: String,
        /// The key the pattern is written in (`tokens`, `swap`…).
        key: String,
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
    /// Where it applies (`heading`, `paragraph`, `text`…), as written;
    /// `text` when the rule says nothing, `summary` for `metric` and
    /// `readability`, which Vale runs on the whole document.
    pub scope: Vec<String>,
    /// What Vale's `action` would do (`replace`, `remove`, `edit`…).
    pub action: Option<String>,
    /// The action's `params`.
    pub action_params: Vec<String>,
    /// Its `description`, a longer explanation.
    pub description: Option<String>,
    /// `limit`: at most this many alerts in a document (0: no limit).
    pub limit: usize,
    selectors: RuleScope,
    check: Check,
}

/// A rule and what of it is not run.
#[derive(Debug)]
pub struct Loaded {
    /// The rule.
    pub rule: Rule,
    /// Each part of the rule this crate does not act on (an extension
    /// point, a key, a scope), in words: said once, when the rule is
    /// read.
    pub unsupported: Vec<String>,
}

/// One alert of a rule on a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleAlert {
    /// `Style.Rule`.
    pub rule: String,
    /// The byte range of the text it is about (empty, at the document's
    /// start, for a rule on the whole document: `metric`,
    /// `readability`).
    pub span: Range<usize>,
    /// The rule's message, its `%s` filled in.
    pub message: String,
    /// The rule's level.
    pub level: Level,
    /// The rule's link.
    pub link: Option<String>,
    /// What the text could say instead (a `substitution`'s options).
    pub replacements: Vec<String>,
}

/// What a document holds besides its prose blocks, for the `metric`
/// formulas that count it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DocumentCounts {
    /// Code blocks (Vale's `pre`).
    pub pre: usize,
}

/// What a rule looks for.
#[derive(Debug)]
enum Check {
    Existence(Existence),
    Substitution(Substitution),
    Capitalization(Capitalization),
    Occurrence(Occurrence),
    Repetition(Repetition),
    Consistency(Consistency),
    Conditional(Conditional),
    Metric(Metric),
    Readability(Readability),
    /// Read for the host's speller, not run here.
    Spelling(SpellingOptions),
    /// An extension point (or a part of one) not run here.
    NotRun,
}

/// One alert of a check, before the rule's name and level are put on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    /// Bytes of the text checked.
    pub(crate) span: Range<usize>,
    /// The message, filled in.
    pub(crate) message: String,
    pub(crate) replacements: Vec<String>,
}

impl Hit {
    /// An alert on `span` of `text` whose message quotes what it matched
    /// (`%s`), with nothing to replace it by.
    pub(crate) fn quoting(template: &str, text: &str, span: Range<usize>) -> Hit {
        Hit {
            message: message::fill(template, &[text.get(span.clone()).unwrap_or("")]),
            span,
            replacements: Vec::new(),
        }
    }
}

/// What a rule has seen so far in a document: the forms a `consistency`
/// rule met, the terms a `conditional` rule saw defined.
#[derive(Debug, Default)]
pub(crate) struct DocState {
    pub(crate) seen: HashSet<String>,
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

/// Vale's extension points.
const EXTENSION_POINTS: [&str; 12] = [
    "existence",
    "substitution",
    "capitalization",
    "occurrence",
    "repetition",
    "consistency",
    "conditional",
    "metric",
    "readability",
    "spelling",
    "sequence",
    "script",
];

/// Reads the rule `name` (`Style.Rule`) from its YAML text.
pub fn load_rule(name: &str, yaml: &str) -> Result<Loaded, RuleError> {
    load_rule_with(name, yaml, &[])
}

/// Reads the rule `name` (`Style.Rule`) from its YAML text, the
/// `accepted` entries of the project's vocabularies
/// ([`crate::Vocabulary::accepted`]) exceptions to it as Vale makes them
/// (to `existence` rules but `nonword` ones, `substitution`,
/// `repetition`, `conditional` and `capitalization`, unless the rule says
/// `vocab: false`).
pub fn load_rule_with(name: &str, yaml: &str, accepted: &[String]) -> Result<Loaded, RuleError> {
    let docs = YamlLoader::load_from_str(yaml).map_err(|e| RuleError::Yaml {
        rule: name.to_owned(),
        reason: e.to_string(),
    })?;
    let doc = docs.into_iter().next().unwrap_or(Yaml::Null);
    if doc.as_hash().is_none() {
        return Err(RuleError::Yaml {
            rule: name.to_owned(),
            reason: "the file holds no mapping".to_owned(),
        });
    }
    let mut keys = Keys::new(name, &doc);
    let extends = keys
        .text("extends")?
        .ok_or_else(|| keys.error("extends", "is missing"))?;
    if !EXTENSION_POINTS.contains(&extends.as_str()) {
        return Err(keys.error(
            "extends",
            format!("`{extends}` is none of {}", EXTENSION_POINTS.join(", ")),
        ));
    }
    let message = keys.text("message")?.unwrap_or_default();
    let level = match keys.text("level")? {
        None => Level::Suggestion,
        Some(l) => Level::parse(&l)
            .ok_or_else(|| keys.error("level", "must be suggestion, warning or error"))?,
    };
    let link = keys.text("link")?;
    let description = keys.text("description")?;
    let limit = keys.count("limit")?.unwrap_or(0);
    let mut scope = keys.list("scope")?;
    if scope.is_empty() {
        scope = vec!["text".to_owned()];
    }
    let (action, action_params) = if keys.has("action") {
        let mut action = Keys::new(name, &doc["action"]);
        if doc["action"].as_hash().is_none() && !doc["action"].is_null() {
            return Err(keys.error("action", "must be a mapping with a name"));
        }
        let found = (action.text("name")?, action.list("params")?);
        keys.mark("action");
        found
    } else {
        (None, Vec::new())
    };
    let mut unsupported = Vec::new();
    let mut not_run = |what: &str| {
        unsupported.push(format!("{name}: {what}"));
        Check::NotRun
    };
    let check = match extends.as_str() {
        "existence" => Check::Existence(Existence::new(
            name,
            &ExistenceSpec::read(&mut keys)?,
            accepted,
        )?),
        "substitution" => {
            let replace = action.as_deref() == Some("replace") && action_params.is_empty();
            let spec = SubstitutionSpec::read(&mut keys, replace)?;
            Check::Substitution(Substitution::new(name, &spec, accepted)?)
        }
        "capitalization" => {
            let (capitalization, note) = Capitalization::read(&mut keys, accepted)?;
            if let Some(note) = note {
                unsupported.push(format!("{name}: {note}"));
            }
            Check::Capitalization(capitalization)
        }
        "occurrence" => Check::Occurrence(Occurrence::read(&mut keys)?),
        "repetition" => Check::Repetition(Repetition::read(&mut keys, accepted)?),
        "consistency" => Check::Consistency(Consistency::read(&mut keys)?),
        "conditional" => Check::Conditional(Conditional::read(&mut keys, accepted)?),
        "metric" => Check::Metric(Metric::read(&mut keys)?),
        "readability" => Check::Readability(Readability::read(&mut keys)?),
        "spelling" => Check::Spelling(SpellingOptions::read(&mut keys)?),
        "sequence" => not_run(
            "the extension point `sequence` is not run: it needs part-of-speech tagging, which this crate does not do",
        ),
        _ => not_run(
            "the extension point `script` is not run: it is a Tengo script, which this crate does not run",
        ),
    };
    if matches!(check, Check::Metric(_) | Check::Readability(_)) {
        // Vale runs these on the whole document, whatever the rule says.
        scope = vec!["summary".to_owned()];
    }
    let (selectors, unknown) = RuleScope::parse(&scope);
    for entry in unknown {
        unsupported.push(format!("{name}: the scope `{entry}` is not known here"));
    }
    // A point not run at all is named once; a run one names each key it
    // leaves aside.
    if !matches!(check, Check::NotRun) {
        for key in keys.unused() {
            if !COMMON.contains(&key.as_str()) {
                unsupported.push(format!("{name}: `{key}` is not acted on"));
            }
        }
    }
    Ok(Loaded {
        rule: Rule {
            name: name.to_owned(),
            extends,
            message,
            level,
            link,
            scope,
            action,
            action_params,
            description,
            limit,
            selectors,
            check,
        },
        unsupported,
    })
}

impl Rule {
    /// Whether the rule's scope takes a block of `kind`, or some piece of
    /// it (a paragraph's sentences), or reads it for the whole document's
    /// summary (`metric`, `readability`, `summary`). `raw` takes none: it
    /// is the whole document's.
    pub fn applies_to(&self, kind: ScopeKind) -> bool {
        pieces_of(kind)
            .iter()
            .any(|names| self.selectors.takes(names))
            || (in_summary(kind) && self.selectors.takes(&["summary"]))
    }

    /// Whether the rule runs on the whole document as written.
    pub fn is_raw(&self) -> bool {
        self.selectors.takes_raw()
    }

    /// The options of a `spelling` rule, for the host's speller (a
    /// `spelling` rule gives no alert here).
    pub fn spelling(&self) -> Option<&SpellingOptions> {
        match &self.check {
            Check::Spelling(options) => Some(options),
            _ => None,
        }
    }

    /// The rule's alerts on the `blocks` of `text` its scope takes, in
    /// text order: see [`Rule::check_document`].
    pub fn check_blocks(&self, text: &str, blocks: &[Block]) -> Vec<RuleAlert> {
        self.check_document(text, blocks, &DocumentCounts::default())
    }

    /// The rule's alerts on the document `text` of which `blocks` are the
    /// prose, `counts` what else it holds, in text order. As Vale does,
    /// the rule runs on each block its scope takes, in order (a
    /// paragraph whole, then sentence by sentence, then as `text`), with
    /// what it saw in the blocks before (a `consistency` rule's forms, a
    /// `conditional` rule's definitions); then on the summary (the
    /// paragraphs, list items and blockquotes); then on the whole `text`
    /// if its scope is `raw` (Vale reads the file as written there: give
    /// a `raw` rule the text with its code, and the others the text with
    /// code blanked out). Two alerts at one place are one; `limit` keeps
    /// the first.
    pub fn check_document(
        &self,
        text: &str,
        blocks: &[Block],
        counts: &DocumentCounts,
    ) -> Vec<RuleAlert> {
        let mut state = DocState::default();
        let mut hits: Vec<Hit> = Vec::new();
        let shift = |found: Vec<Hit>, offset: usize, hits: &mut Vec<Hit>| {
            hits.extend(found.into_iter().map(|mut h| {
                h.span = h.span.start + offset..h.span.end + offset;
                h
            }));
        };
        for block in blocks {
            let Some(piece) = text.get(block.span.clone()) else {
                continue;
            };
            for names in pieces_of(block.kind) {
                if !self.selectors.takes(&names) {
                    continue;
                }
                if names == ["sentence"] {
                    for sentence in sentences(piece) {
                        let found = self.run(&piece[sentence.clone()], &mut state);
                        shift(found, block.span.start + sentence.start, &mut hits);
                    }
                } else {
                    let found = self.run(piece, &mut state);
                    shift(found, block.span.start, &mut hits);
                }
            }
        }
        if self.selectors.takes(&["summary"]) {
            hits.extend(self.run_summary(text, blocks, counts, &mut state));
        }
        if self.selectors.takes_raw() {
            let found = self.run(text, &mut state);
            shift(found, 0, &mut hits);
        }
        self.alerts(hits)
    }

    /// The rule's alerts on `text` taken as one piece, whatever its
    /// scope, in text order.
    pub fn check(&self, text: &str) -> Vec<RuleAlert> {
        let hits = match &self.check {
            Check::Metric(_) | Check::Readability(_) => {
                let block = Block {
                    kind: ScopeKind::Paragraph,
                    span: 0..text.len(),
                };
                self.run_summary(
                    text,
                    &[block],
                    &DocumentCounts::default(),
                    &mut DocState::default(),
                )
            }
            _ => self.run(text, &mut DocState::default()),
        };
        self.alerts(hits)
    }

    /// The check's alerts on one piece of text.
    fn run(&self, text: &str, state: &mut DocState) -> Vec<Hit> {
        let message = self.message.as_str();
        match &self.check {
            Check::Existence(c) => c.run(message, text),
            Check::Substitution(c) => c.run(message, text),
            Check::Capitalization(c) => c.run(message, text),
            Check::Occurrence(c) => c.run(message, text),
            Check::Repetition(c) => c.run(message, text),
            Check::Consistency(c) => c.run(message, text, state),
            Check::Conditional(c) => c.run(message, text, state),
            Check::Metric(c) => c.run(message, &metric::variables(&TextCounts::of(text), &[])),
            Check::Readability(c) => c.run(message, &TextCounts::of(text)),
            Check::Spelling(_) | Check::NotRun => Vec::new(),
        }
    }

    /// The check's alerts on the summary of the document: its
    /// paragraphs, list items and blockquotes, a blank line after each.
    /// A `metric` counts the document's blocks by kind too.
    fn run_summary(
        &self,
        text: &str,
        blocks: &[Block],
        counts: &DocumentCounts,
        state: &mut DocState,
    ) -> Vec<Hit> {
        // Each block's place in the summary and in the document.
        let mut summary = String::new();
        let mut places: Vec<(usize, usize, usize)> = Vec::new();
        for block in blocks.iter().filter(|b| in_summary(b.kind)) {
            if let Some(piece) = text.get(block.span.clone()) {
                places.push((summary.len(), block.span.start, piece.len()));
                summary.push_str(piece);
                summary.push_str("\n\n");
            }
        }
        match &self.check {
            Check::Metric(c) => {
                let mut tally: Vec<(&str, f64)> = vec![("pre", counts.pre as f64)];
                for (name, kind) in [
                    ("list", ScopeKind::ListItem),
                    ("blockquote", ScopeKind::Blockquote),
                ] {
                    tally.push((
                        name,
                        blocks.iter().filter(|b| b.kind == kind).count() as f64,
                    ));
                }
                const HEADINGS: [&str; 6] = [
                    "heading_h1",
                    "heading_h2",
                    "heading_h3",
                    "heading_h4",
                    "heading_h5",
                    "heading_h6",
                ];
                for (level, name) in (1u8..).zip(HEADINGS) {
                    let n = blocks
                        .iter()
                        .filter(|b| b.kind == ScopeKind::Heading(level))
                        .count();
                    tally.push((name, n as f64));
                }
                c.run(
                    &self.message,
                    &metric::variables(&TextCounts::of(&summary), &tally),
                )
            }
            Check::Readability(c) => c.run(&self.message, &TextCounts::of(&summary)),
            _ => self
                .run(&summary, state)
                .into_iter()
                .filter_map(|mut hit| {
                    // Back to the document: within the block it starts in.
                    let &(at, start, len) = places
                        .iter()
                        .rev()
                        .find(|(at, _, _)| *at <= hit.span.start)?;
                    // A hit in the blank line after a block ends with it.
                    let from = (hit.span.start - at).min(len);
                    let to = (hit.span.end - at).min(len).max(from);
                    hit.span = start + from..start + to;
                    Some(hit)
                })
                .collect(),
        }
    }

    /// The rule's alerts of `hits` (in the order found): one per place,
    /// at most `limit`, in text order.
    fn alerts(&self, hits: Vec<Hit>) -> Vec<RuleAlert> {
        let mut places = HashSet::new();
        let mut alerts: Vec<RuleAlert> = hits
            .into_iter()
            .filter(|h| places.insert(h.span.start))
            .map(|h| RuleAlert {
                rule: self.name.clone(),
                span: h.span,
                message: h.message,
                level: self.level,
                link: self.link.clone(),
                replacements: h.replacements,
            })
            .collect();
        if self.limit > 0 {
            alerts.truncate(self.limit);
        }
        alerts.sort_by_key(|a| a.span.start);
        alerts
    }
}

impl Rule {
    /// Vale's `Vale.Terms`, from the vocabularies' `accepted` entries: an
    /// accepted term written with another case is an error naming it.
    pub(crate) fn vale_terms(accepted: &[String]) -> Result<Rule, RuleError> {
        let name = "Vale.Terms";
        // Vale keys the swap by the term in lower case, so of two entries
        // differing in case the later one wins; matched in any case, the
        // term itself is the key, which keeps a pattern's escapes (`\S`).
        let mut swap: Vec<(String, String)> = Vec::new();
        for term in accepted {
            let lower = term.to_lowercase();
            match swap.iter_mut().find(|(k, _)| k.to_lowercase() == lower) {
                Some(entry) => *entry = (term.clone(), term.clone()),
                None => swap.push((term.clone(), term.clone())),
            }
        }
        let spec = SubstitutionSpec {
            swap,
            ignorecase: true,
            vocab: false,
            ..SubstitutionSpec::default()
        };
        let check = Check::Substitution(Substitution::new(name, &spec, &[])?);
        Ok(Rule::built(
            name,
            "substitution",
            "Use '%s' instead of '%s'.",
            check,
        ))
    }

    /// Vale's `Vale.Avoid`, from the vocabularies' `rejected` entries
    /// (the `accepted` ones its exceptions): a rejected term is an error.
    pub(crate) fn vale_avoid(rejected: &[String], accepted: &[String]) -> Result<Rule, RuleError> {
        let name = "Vale.Avoid";
        let spec = ExistenceSpec {
            tokens: rejected.to_vec(),
            vocab: true,
            ..ExistenceSpec::default()
        };
        let check = Check::Existence(Existence::new(name, &spec, accepted)?);
        Ok(Rule::built(name, "existence", "Avoid using '%s'.", check))
    }

    /// A rule of Vale's own, at level `error`, on `text`.
    fn built(name: &str, extends: &str, message: &str, check: Check) -> Rule {
        let scope = vec!["text".to_owned()];
        Rule {
            name: name.to_owned(),
            extends: extends.to_owned(),
            message: message.to_owned(),
            level: Level::Error,
            link: None,
            selectors: RuleScope::parse(&scope).0,
            scope,
            action: None,
            action_params: Vec::new(),
            description: None,
            limit: 0,
            check,
        }
    }
}

/// What tests of the extension points share.
#[cfg(test)]
pub(crate) mod testing {
    use super::{load_rule, Rule};

    /// The rule read from `yaml`, checked to be read whole.
    pub(crate) fn rule(name: &str, yaml: &str) -> Rule {
        let loaded = load_rule(name, yaml).unwrap_or_else(|e| panic!("{e}"));
        assert!(loaded.unsupported.is_empty(), "{:?}", loaded.unsupported);
        loaded.rule
    }

    /// The rule's alerts on `text` as `line:column:Rule:message`.
    pub(crate) fn messages(rule: &Rule, text: &str) -> Vec<String> {
        rule.check(text)
            .into_iter()
            .map(|a| {
                let (line, column) = crate::line_column(text, a.span.start);
                format!("{line}:{column}:{}:{}", a.rule, a.message)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::rule;
    use super::*;

    #[test]
    fn what_is_not_run_is_named_when_the_rule_is_read() {
        let loaded = load_rule(
            "House.Seq",
            "extends: sequence\nmessage: x\ntokens:\n  - tag: MD\n",
        )
        .expect("loads");
        assert_eq!(
            loaded.unsupported.len(),
            1,
            "named once: {:?}",
            loaded.unsupported
        );
        assert!(loaded.unsupported[0].starts_with(
            "House.Seq: the extension point `sequence` is not run: it needs part-of-speech tagging"
        ));
        let script = load_rule(
            "House.Script",
            "extends: script\nmessage: x\nscript: x := 1\n",
        )
        .expect("loads");
        assert!(
            script.unsupported[0].contains("Tengo"),
            "{:?}",
            script.unsupported
        );
        let extra = load_rule(
            "House.Extra",
            "extends: existence\nmessage: x\ntokens: [foo]\npos: NN\nstyle: x\n",
        )
        .expect("loads");
        assert_eq!(
            extra.unsupported,
            [
                "House.Extra: `pos` is not acted on",
                "House.Extra: `style` is not acted on"
            ]
        );
    }

    #[test]
    fn a_rules_scope_picks_its_blocks_and_alerts_keep_document_places() {
        let headings = rule(
            "House.H2",
            "extends: existence\nmessage: \"No '%s' in a heading.\"\nscope: heading.h2\ntokens: [Stuff]\n",
        );
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
        assert!(headings.applies_to(ScopeKind::Heading(2)));
        assert!(!headings.applies_to(ScopeKind::Paragraph));
        let prose = rule(
            "House.Any",
            "extends: existence\nmessage: x\ntokens: [Stuff]\n",
        );
        assert_eq!(prose.check_blocks(text, &blocks).len(), 3);
        let raw = rule(
            "House.Raw",
            "extends: existence\nmessage: x\nscope: raw\nraw: ['#+ ']\n",
        );
        assert!(raw.is_raw());
        assert_eq!(raw.check_blocks(text, &blocks).len(), 2);
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
    fn a_sentence_rule_runs_on_each_sentence_of_a_paragraph_only() {
        let long = rule(
            "House.Long",
            "extends: occurrence\nmessage: \"%s words.\"\nscope: sentence\nmax: 3\ntoken: \\b\\w+\\b\n",
        );
        let text = "One two three. One two three four five.\n\n- one two three four five\n";
        let blocks = [
            Block {
                kind: ScopeKind::Paragraph,
                span: 0..39,
            },
            Block {
                kind: ScopeKind::ListItem,
                span: 43..67,
            },
        ];
        let alerts = long.check_blocks(text, &blocks);
        assert_eq!(alerts.len(), 1, "{alerts:?}");
        assert_eq!(alerts[0].span.start, 15);
        assert_eq!(alerts[0].message, "5 words.");
    }

    #[test]
    fn two_alerts_at_one_place_are_one_and_limit_keeps_the_first() {
        // `~heading` takes a paragraph whole, by sentence and as text:
        // Vale reports a place once.
        let rule_text = "extends: existence\nmessage: x\nscope: ~heading\ntokens: [very]\n";
        let once = rule("House.Very", rule_text);
        let text = "A very big, very old tree.";
        let blocks = [Block {
            kind: ScopeKind::Paragraph,
            span: 0..text.len(),
        }];
        assert_eq!(once.check_blocks(text, &blocks).len(), 2);
        let limited = rule("House.Very", &format!("{rule_text}limit: 1\n"));
        let alerts = limited.check_blocks(text, &blocks);
        assert_eq!(alerts.len(), 1);
        assert_eq!(alerts[0].span.start, 2);
    }

    #[test]
    fn a_summary_rule_reads_the_prose_blocks_and_points_back_into_them() {
        let summary = rule(
            "House.Sum",
            "extends: existence\nmessage: \"'%s'\"\nscope: summary\ntokens: [word]\n",
        );
        let text = "# word\n\nA word.\n\n> Last word\n";
        let blocks = [
            Block {
                kind: ScopeKind::Heading(1),
                span: 2..6,
            },
            Block {
                kind: ScopeKind::Paragraph,
                span: 8..15,
            },
            Block {
                kind: ScopeKind::Blockquote,
                span: 19..28,
            },
        ];
        let alerts = summary.check_blocks(text, &blocks);
        let places: Vec<&str> = alerts.iter().map(|a| &text[a.span.clone()]).collect();
        assert_eq!(places, ["word", "word"]);
        assert_eq!(alerts[0].span.start, 10);
        assert_eq!(alerts[1].span.start, 24);
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
            err.to_string()
                .starts_with("House.Bad: `tokens`: the pattern"),
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
        let err = load_rule("House.Bad", "extends: nonsense\n").expect_err("bad point");
        assert!(err.to_string().starts_with("House.Bad: `extends`"), "{err}");
        let err = load_rule("House.Bad", "extends: existence\ntokens: [a]\nlimit: -1\n")
            .expect_err("bad limit");
        assert!(err.to_string().contains("`limit`"), "{err}");
        let err = load_rule(
            "House.Bad",
            "extends: existence\ntokens: [a]\naction: remove\n",
        )
        .expect_err("bad action");
        assert!(err.to_string().contains("`action`"), "{err}");
        let deep = format!(
            "extends: existence\ntokens: ['{}a{}']\n",
            "(".repeat(50_000),
            ")".repeat(50_000)
        );
        let err = load_rule("House.Deep", &deep).expect_err("too deep");
        assert!(err.to_string().starts_with("House.Deep: `tokens`"), "{err}");
        let nested = format!(
            "extends: existence\ntokens: {}a{}\n",
            "[".repeat(50_000),
            "]".repeat(50_000)
        );
        assert!(load_rule("House.Nested", &nested).is_err());
        let err = load_rule("House.Bad", "extends: [existence]\n").expect_err("bad extends");
        assert!(err.to_string().contains("`extends`: must be text"), "{err}");
    }

    #[test]
    fn the_common_keys_are_exposed() {
        let rule = rule(
            "House.All",
            "extends: existence\nmessage: x\ndescription: Why.\nlimit: 2\ntokens: [a]\naction:\n  name: edit\n  params: [trim_right, '.?!']\n",
        );
        assert_eq!(rule.description.as_deref(), Some("Why."));
        assert_eq!(rule.limit, 2);
        assert_eq!(rule.action.as_deref(), Some("edit"));
        assert_eq!(rule.action_params, ["trim_right", ".?!"]);
        assert_eq!(rule.scope, ["text"]);
        assert!(rule.spelling().is_none());
    }
}
