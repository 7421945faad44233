//! # koas-lang — English and French language checks
//!
//! Spelling with ranked suggestions, the certain fixes among them, a few
//! grammar rules that hold on technical prose, and French typography, for
//! the two languages koas's users write in. The library knows nothing of
//! Markdown: a host hands it the document's prose as paragraphs (code,
//! math, URLs, link targets and markup already blanked, byte for byte)
//! and gets back issues by paragraph and byte range.
//!
//! * **English** is Harper's (`harper-core`): its curated dictionary for
//!   spelling and suggestions, and a chosen few of its rules (articles,
//!   agreement, common confusions). Only [`english`] names Harper.
//! * **French** is the Grammalecte Hunspell dictionary read by
//!   `spellbook`, plus this crate's own rules: doubled words, elision
//!   ("le arbre"), typography (no-break spaces). Only `french::dict`
//!   names spellbook.
//! * **Per paragraph**: each paragraph is checked in its own language
//!   ([`detect`]); a paragraph is never judged by the other language's
//!   dictionary.
//! * **Vocabulary**: a word the document uses again and again, a term its
//!   glossary defines, a capitalised name, an acronym, an identifier, and
//!   the project's own words are not misspellings ([`Vocabulary`]).
//! * **Certain fixes**: a misspelling's fix is certain only when one
//!   candidate is clearly right (see [`Issue::certain`]).
//!
//! Nothing is loaded for a text that needs nothing: each dictionary is
//! read the first time a paragraph of its language is checked, or before,
//! when a host with an idle core asks ([`Checker::prefetch`]).

#![deny(missing_docs)]

mod certain;
pub mod detect;
pub mod english;
mod french;
mod grammar;
mod spell;
pub mod tokens;
mod vocab;

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;
use std::time::Duration;

pub use vocab::{parse_words_file, Vocabulary};

/// A language the checks know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// English.
    En,
    /// French.
    Fr,
}

impl Lang {
    /// The ISO 639-1 code (`en`, `fr`).
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Fr => "fr",
        }
    }

    /// The language's name in English, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Lang::En => "English",
            Lang::Fr => "French",
        }
    }
}

/// The English dialect Harper's rules follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// American English (the default).
    #[default]
    American,
    /// British English.
    British,
    /// Canadian English.
    Canadian,
    /// Australian English.
    Australian,
}

/// What to check and with which words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LanguageConfig {
    /// The languages a paragraph may be checked in (`["en", "fr"]` by
    /// default); a paragraph of another language, or undecided in a
    /// document of none of these, is not checked.
    pub languages: Vec<Lang>,
    /// The English dialect.
    pub dialect: Dialect,
    /// Spelling (`misspelling`).
    pub spelling: bool,
    /// The grammar rules (`repeated_word`, `article`, `agreement`,
    /// `confusion`).
    pub grammar: bool,
    /// French typography (`typography`): a missing space before `;` `:`
    /// `!` `?` or inside « ».
    pub typography: bool,
    /// French typography, strict: also a plain (breaking) space where a
    /// no-break one belongs.
    pub typography_strict: bool,
    /// How many times a word unknown to the dictionary must appear in the
    /// document to count as the document's own vocabulary (0: never).
    pub document_words: u32,
    /// Harper's grammar rules for English (agreement, confusions): off by
    /// default, as they cost about a second to load.
    pub harper_rules: bool,
}

impl Default for LanguageConfig {
    fn default() -> Self {
        LanguageConfig {
            languages: vec![Lang::En, Lang::Fr],
            dialect: Dialect::American,
            spelling: true,
            grammar: true,
            typography: true,
            typography_strict: false,
            document_words: 2,
            harper_rules: false,
        }
    }
}

/// One paragraph of prose, as the host extracted it.
#[derive(Debug, Clone, Copy)]
pub struct Paragraph<'a> {
    /// Its text: lines joined by `\n`, non-prose blanked with spaces.
    pub text: &'a str,
    /// `true` for a heading (title case says nothing about names there).
    pub heading: bool,
}

/// What an issue is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueKind {
    /// A word no dictionary or vocabulary knows.
    Misspelling,
    /// The same word twice in a row.
    RepeatedWord,
    /// An article that does not fit the next word, or a missing elision.
    Article,
    /// Words that do not agree.
    Agreement,
    /// A commonly confused word.
    Confusion,
    /// French typography.
    Typography,
}

/// One problem in one paragraph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// Index of the paragraph in the slice given to [`Checker::check`].
    pub paragraph: usize,
    /// Byte range of the problem in the paragraph's text.
    pub start: usize,
    /// End of that range (exclusive).
    pub end: usize,
    /// What it is.
    pub kind: IssueKind,
    /// The paragraph's language.
    pub lang: Lang,
    /// What is wrong, for people.
    pub message: String,
    /// Replacements for `start..end`, best first.
    pub suggestions: Vec<String>,
    /// `true` when the first suggestion is certainly right: for a
    /// misspelling, it is the one dictionary word at one edit (a letter
    /// added, dropped, changed, or two swapped) that the document also
    /// uses, and the misspelled form appears nowhere else in it; for the
    /// grammar rules, the rule's correction leaves no choice.
    pub certain: bool,
    /// `true` when the issue is likely real (reported as a warning); a
    /// word the dictionary lacks with no close dictionary word is more
    /// often a name or a term than a slip, and is only a hint.
    pub likely: bool,
}

/// What a check found, and what it cost.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The issues, by paragraph and offset.
    pub issues: Vec<Issue>,
    /// Each paragraph's language (`None`: not checked).
    pub languages: Vec<Option<Lang>>,
    /// Dictionaries loaded by this check, with the time each took.
    pub loaded: Vec<(Lang, Duration)>,
}

/// Something that stops the checks before they start.
#[derive(Debug, thiserror::Error)]
pub enum LangError {
    /// The bundled English word list did not open.
    #[error("the English word list did not open: {0}")]
    EnglishWords(String),
    /// The bundled French dictionary did not load.
    #[error("the French dictionary did not load: {0}")]
    FrenchDictionary(String),
    /// The caller's `stop` asked to give up.
    #[error("stopped before the end")]
    Stopped,
    /// A project word list is malformed.
    #[error("{0}")]
    Words(String),
}

/// The language checks with their configuration and the project's words;
/// dictionaries load on first use and are shared by every thread.
pub struct Checker {
    config: LanguageConfig,
    words: Vocabulary,
    english: OnceLock<Result<english::English, String>>,
    french: OnceLock<Result<french::French, String>>,
}

impl Checker {
    /// The checks of `config`, with the project's `words`.
    pub fn new(config: LanguageConfig, words: Vocabulary) -> Self {
        Checker {
            config,
            words,
            english: OnceLock::new(),
            french: OnceLock::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LanguageConfig {
        &self.config
    }

    /// The English checks, loaded on first use; the time it took when
    /// this call loaded them (one call does, however many threads ask).
    fn english(&self) -> (Result<&english::English, LangError>, Option<Duration>) {
        let (e, took) = load_once(&self.english, || {
            english::English::load(self.config.dialect, self.config.harper_rules)
        });
        (e.map_err(|e| LangError::EnglishWords(e.clone())), took)
    }

    /// The French checks, loaded on first use (see [`Checker::english`]).
    fn french(&self) -> (Result<&french::French, LangError>, Option<Duration>) {
        let (f, took) = load_once(&self.french, french::French::load);
        (f.map_err(|e| LangError::FrenchDictionary(e.clone())), took)
    }

    /// Loads now, on the calling thread, the dictionary that `text` (a
    /// document about to be checked, as it is) will need, when its first
    /// part is French by its function words and French is checked: a
    /// host with an idle core calls it while it prepares the paragraphs,
    /// and the check finds the dictionary loaded. What the check finds
    /// does not change, only when the load happens (and the check then
    /// does not report a load it did not do). English needs nothing: its
    /// word list opens in no time.
    pub fn prefetch(&self, text: &str) {
        spell::prefetch(self, text);
    }

    /// Checks `paragraphs`, one document's prose in order. `terms` are
    /// words the document defines (its glossary): never misspellings.
    pub fn check(
        &self,
        paragraphs: &[Paragraph<'_>],
        terms: &[String],
    ) -> Result<Report, LangError> {
        spell::check_document(self, paragraphs, terms, &|| false)
    }

    /// [`Checker::check`], asking `stop` between steps whether to give up
    /// ([`LangError::Stopped`]): an editor's newer text, a time budget.
    /// The check runs on every thread of rayon's pool, which may ask
    /// `stop` at once.
    pub fn check_until(
        &self,
        paragraphs: &[Paragraph<'_>],
        terms: &[String],
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<Report, LangError> {
        spell::check_document(self, paragraphs, terms, stop)
    }
}

/// What `cell` holds, made by `load` on first use, with the time that
/// took when this call made it.
fn load_once<T>(
    cell: &OnceLock<Result<T, String>>,
    load: impl FnOnce() -> Result<T, String>,
) -> (Result<&T, &String>, Option<Duration>) {
    // Asked for every word: no clock read once it is there.
    if let Some(value) = cell.get() {
        return (value.as_ref(), None);
    }
    let t = std::time::Instant::now();
    let mut made = false;
    let value = cell.get_or_init(|| {
        made = true;
        load()
    });
    (value.as_ref(), made.then(|| t.elapsed()))
}

#[cfg(test)]
mod tests;
