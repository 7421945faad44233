//! The words whose change changes what a sentence says (negations,
//! modals, quantifiers, comparisons, directions), and the function words a
//! grammar fix may touch, per document language.
//!
//! The lists are data, one file per language in `crates/edit/lexicon/`
//! (see its README): adding a language is adding a file. They are built
//! into the crate so that a plugin needs no file at run time.

use crate::lang::Language;
use serde::Deserialize;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

/// The lexicon files, by language code.
const LEXICONS: &[(&str, &str)] = &[
    ("en", include_str!("../lexicon/en.toml")),
    ("fr", include_str!("../lexicon/fr.toml")),
];

/// What a polarity word does to a sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Polarity {
    /// Negates: "not", "never", "ne … pas", "sans".
    Negation,
    /// Obligation, permission, possibility: "must", "may", "doit".
    Modal,
    /// How many, how often, which: "all", "only", "at least", "chaque".
    Quantifier,
    /// More or less: "more", "fewer", "above", "supérieur".
    Comparison,
    /// Which way or side, on or off: "increase", "enable", "before".
    Direction,
}

impl Polarity {
    /// The class's name in notes (`negation`, `modal`…).
    pub fn name(self) -> &'static str {
        match self {
            Polarity::Negation => "negation",
            Polarity::Modal => "modal",
            Polarity::Quantifier => "quantifier",
            Polarity::Comparison => "comparison",
            Polarity::Direction => "direction",
        }
    }
}

/// One language's lexicon file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LexiconFile {
    language: String,
    negation: Vec<String>,
    modal: Vec<String>,
    quantifier: Vec<String>,
    comparison: Vec<String>,
    direction: Vec<String>,
    function: Vec<String>,
    negating_prefixes: Vec<String>,
}

/// One language's polarity words, function words and negating prefixes.
#[derive(Debug, Default)]
pub struct Lexicon {
    /// Phrase (as words) → its class; single words are phrases of one.
    phrases: HashMap<Vec<String>, Polarity>,
    /// The longest phrase, in words.
    longest: usize,
    function: HashSet<String>,
    prefixes: Vec<String>,
}

impl Lexicon {
    fn from_file(file: LexiconFile) -> Lexicon {
        let mut lexicon = Lexicon::default();
        for (class, entries) in [
            (Polarity::Negation, &file.negation),
            (Polarity::Modal, &file.modal),
            (Polarity::Quantifier, &file.quantifier),
            (Polarity::Comparison, &file.comparison),
            (Polarity::Direction, &file.direction),
        ] {
            for entry in entries {
                let words = words_of(entry);
                if words.is_empty() {
                    continue;
                }
                lexicon.longest = lexicon.longest.max(words.len());
                // The first class that lists a word keeps it.
                lexicon.phrases.entry(words).or_insert(class);
            }
        }
        lexicon.function = file.function.iter().flat_map(|w| words_of(w)).collect();
        lexicon.prefixes = file.negating_prefixes;
        lexicon
    }

    /// The class of a single word (lower case), if it is a polarity word.
    pub fn polarity_of(&self, word: &str) -> Option<Polarity> {
        self.phrases
            .get(std::slice::from_ref(&word.to_owned()))
            .copied()
    }

    /// True for a function word (article, preposition, pronoun,
    /// auxiliary).
    pub fn is_function_word(&self, word: &str) -> bool {
        self.function.contains(word)
    }

    /// The polarity words and phrases of `words` (lower case, as
    /// [`words_of`] gives them), longest phrase first, each with its class.
    pub fn polarity_words(&self, words: &[String]) -> Vec<(Polarity, String)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let mut matched = 0;
            for len in (1..=self.longest.min(words.len() - i)).rev() {
                if let Some(class) = self.phrases.get(&words[i..i + len]) {
                    out.push((*class, words[i..i + len].join(" ")));
                    matched = len;
                    break;
                }
            }
            i += matched.max(1);
        }
        out
    }

    /// The negating prefix that turns `base` into `word` ("un" for "safe"
    /// → "unsafe"), if one does; the base keeps at least four letters so
    /// that short words are not read as prefixed.
    pub fn negating_prefix(&self, base: &str, word: &str) -> Option<&str> {
        self.prefixes
            .iter()
            .map(String::as_str)
            .find(|p| word.strip_prefix(*p) == Some(base) && base.chars().count() >= 4)
    }
}

fn load(code: &str) -> Lexicon {
    let Some((_, text)) = LEXICONS.iter().find(|(c, _)| *c == code) else {
        return Lexicon::default();
    };
    // The files are part of the crate and a test parses each one: a
    // broken file is caught before release, never by a user.
    match toml::from_str::<LexiconFile>(text) {
        Ok(file) if file.language == code => Lexicon::from_file(file),
        _ => Lexicon::default(),
    }
}

/// The lexicon of `language`.
pub fn lexicon(language: Language) -> &'static Lexicon {
    static EN: OnceLock<Lexicon> = OnceLock::new();
    static FR: OnceLock<Lexicon> = OnceLock::new();
    match language {
        Language::English => EN.get_or_init(|| load("en")),
        Language::French => FR.get_or_init(|| load("fr")),
    }
}

/// The polarity words and phrases of a whole text in its own language
/// (see [`crate::lang::detect`]), sorted: two texts with the same list say
/// "not", "must", "all"… as often as each other.
pub fn polarity_words_of(text: &str) -> Vec<String> {
    let mut found: Vec<String> = lexicon(crate::lang::detect(text))
        .polarity_words(&words_of(text))
        .into_iter()
        .map(|(_, w)| w)
        .collect();
    found.sort();
    found
}

/// French elided words: the part before the apostrophe is a word of its
/// own ("l'audit" is "l'" + "audit", "n'est" is "ne" + "est").
const ELISIONS: &[&str] = &[
    "l'", "d'", "n'", "qu'", "c'", "s'", "j'", "m'", "t'", "jusqu'", "lorsqu'", "puisqu'",
];

/// The words of `text`, lower case: runs of letters and digits, with the
/// apostrophes and hyphens inside them; `’` is read as `'`. English
/// contractions are split (`doesn't` → `does` `n't`), French elisions too
/// (`n'est` → `ne` `est`, `l'audit` → `l'` `audit`).
pub fn words_of(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lower = text.to_lowercase().replace('’', "'");
    let chars: Vec<char> = lower.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len()
            && (chars[i].is_alphanumeric()
                || ((chars[i] == '\'' || chars[i] == '-')
                    && chars.get(i + 1).is_some_and(|c| c.is_alphanumeric())))
        {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        push_word(&mut out, word);
    }
    out
}

fn push_word(out: &mut Vec<String>, word: String) {
    if let Some(base) = word.strip_suffix("n't").filter(|b| !b.is_empty()) {
        out.push(base.to_owned());
        out.push("n't".to_owned());
        return;
    }
    if word == "n't" {
        out.push(word);
        return;
    }
    for elided in ELISIONS {
        if let Some(rest) = word.strip_prefix(elided).filter(|r| !r.is_empty()) {
            out.push(if *elided == "n'" {
                "ne".to_owned()
            } else {
                (*elided).to_owned()
            });
            push_word(out, rest.to_owned());
            return;
        }
    }
    out.push(word);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lexicon_file_parses_and_names_its_language() {
        for (code, text) in LEXICONS {
            let file: LexiconFile = toml::from_str(text)
                .unwrap_or_else(|e| panic!("lexicon/{code}.toml does not parse: {e}"));
            assert_eq!(&file.language, code);
            let lexicon = Lexicon::from_file(file);
            assert!(
                lexicon.phrases.len() > 100,
                "{code}: {}",
                lexicon.phrases.len()
            );
            assert!(lexicon.function.len() > 50, "{code}");
        }
    }

    #[test]
    fn words_split_contractions_and_elisions() {
        assert_eq!(
            words_of("It doesn't own the payment routing."),
            ["it", "does", "n't", "own", "the", "payment", "routing"]
        );
        assert_eq!(
            words_of("L’audit n’est pas terminé jusqu'à lundi."),
            ["l'", "audit", "ne", "est", "pas", "terminé", "jusqu'", "à", "lundi"]
        );
        assert_eq!(
            words_of("non-compliant, e-mail"),
            ["non-compliant", "e-mail"]
        );
        assert_eq!(words_of("  "), Vec::<String>::new());
    }

    #[test]
    fn polarity_words_are_found_by_class_phrases_first() {
        let en = lexicon(Language::English);
        let found = en.polarity_words(&words_of(
            "Logs must be kept at least ten days and are not shared.",
        ));
        assert_eq!(
            found,
            [
                (Polarity::Modal, "must".to_owned()),
                (Polarity::Quantifier, "at least".to_owned()),
                (Polarity::Quantifier, "ten".to_owned()),
                (Polarity::Negation, "not".to_owned()),
            ]
        );
        let fr = lexicon(Language::French);
        let found = fr.polarity_words(&words_of("Le contrôle ne doit pas être désactivé."));
        assert_eq!(
            found,
            [
                (Polarity::Negation, "ne".to_owned()),
                (Polarity::Modal, "doit".to_owned()),
                (Polarity::Negation, "pas".to_owned()),
                (Polarity::Direction, "désactivé".to_owned()),
            ]
        );
        assert!(en.is_function_word("the") && fr.is_function_word("les"));
        assert_eq!(en.negating_prefix("safe", "unsafe"), Some("un"));
        assert_eq!(fr.negating_prefix("activer", "désactiver"), Some("dés"));
        assert_eq!(
            en.negating_prefix("do", "undo"),
            None,
            "bases of 4 letters or more"
        );
    }
}
