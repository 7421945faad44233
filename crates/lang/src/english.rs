//! English, through Harper (`harper-core`, pinned): the one module that
//! names it, because its API changes between major versions.
//!
//! * **Words**: Harper's curated dictionary, every form it accepts,
//!   compiled ahead into an fst set (`dict/en/words.fst`, lower-case).
//!   Harper builds that dictionary when a process first asks for it,
//!   which costs about a second; the set costs nothing to open. A test
//!   ([`tests::the_bundled_words_are_harpers`]) rebuilds the set from the
//!   pinned Harper and fails when they differ; `KOAS_UPDATE_WORDS=1`
//!   rewrites it.
//! * **Articles**: Harper's judgement of a word's first sound
//!   ([`harper_core::starts_with_vowel`]), a function of the word alone.
//! * **Harper's grammar rules** (agreement, confusions), off by default:
//!   they need Harper's dictionary and its part-of-speech tagger, about a
//!   second to load and a tenth of a megabyte of text a second.

use crate::certain::{one_edit, LETTERS};
use crate::grammar::Hit;
use crate::tokens::Token;
use crate::{Dialect, IssueKind};
use fst::{IntoStreamer, Streamer};
use harper_core::linting::{LintGroup, Suggestion};
use harper_core::parsers::PlainEnglish;
use harper_core::spell::FstDictionary;
use harper_core::InitialSound;
use levenshtein_automata::LevenshteinAutomatonBuilder;
use std::sync::{LazyLock, Mutex, OnceLock};

/// Harper's curated dictionary, every form, lower-case, as an fst set.
static WORDS: &[u8] = include_bytes!("../dict/en/words.fst");

/// Harper's rules koas runs when `[language] harper_rules` is on, with
/// the kind each reports and whether its correction is certain. Each
/// flags a form that is wrong in any register; none judges style.
pub const RULES: &[(&str, IssueKind, bool)] = &[
    ("PronounVerbAgreement", IssueKind::Agreement, false),
    ("ThesesThese", IssueKind::Agreement, false),
    ("IAmAgreement", IssueKind::Agreement, false),
    ("ThenThan", IssueKind::Confusion, false),
    ("LetsConfusion", IssueKind::Confusion, false),
    ("ItsContraction", IssueKind::Confusion, false),
    ("PossessiveYour", IssueKind::Confusion, false),
];

/// Suffixes English forms words with, longest first.
const SUFFIXES: &[&str] = &[
    "isations", "izations", "ability", "isation", "ization", "ations", "ements", "ments", "ities",
    "ation", "ement", "izing", "ising", "ness", "ment", "ings", "able", "ible", "less", "ized",
    "ised", "izes", "ises", "ally", "ers", "ing", "ize", "ise", "ity", "ful", "ish", "ies", "ied",
    "ier", "iers", "ed", "er", "es", "ly", "al", "rs", "s", "d", "r", "y",
];

/// Prefixes English forms words with.
const PREFIXES: &[&str] = &[
    "pre", "re", "un", "de", "sub", "non", "multi", "inter", "intra", "over", "under", "co",
    "post", "anti", "auto", "cross", "self", "mis", "dis", "out", "super", "micro", "meta",
    "hyper", "semi", "pseudo", "bi", "tri", "mid", "counter",
];

/// Words starting with a "yu" sound that Harper's rule of thumb takes
/// for a vowel.
const YU: &[&str] = &[
    "unary",
    "unicast",
    "unicode",
    "uniform",
    "union",
    "unique",
    "unit",
    "unitary",
    "universal",
    "unix",
    "usable",
    "usage",
    "use",
    "useful",
    "user",
    "usual",
    "utility",
    "utf",
    "uri",
    "url",
];

/// Latin and French expressions of English technical prose.
const LATIN: &[&str] = &[
    "facto",
    "priori",
    "posteriori",
    "hoc",
    "versa",
    "vis",
    "alia",
    "al",
    "etc",
    "bona",
    "fide",
    "mortem",
    "quo",
    "vitro",
    "vivo",
    "situ",
    "persona",
    "verbatim",
    "naïve",
    "naive",
    "raison",
    "d'être",
    "vu",
    "déjà",
    "via",
    "cf",
    "ibid",
    "sic",
    "gratis",
    "ergo",
];

/// Builders of Levenshtein automata (swaps cost one), built once.
static NEAR: LazyLock<[LevenshteinAutomatonBuilder; 2]> = LazyLock::new(|| {
    [
        LevenshteinAutomatonBuilder::new(1, true),
        LevenshteinAutomatonBuilder::new(2, true),
    ]
});

/// The English words and rules.
pub struct English {
    words: fst::Set<&'static [u8]>,
    dialect: harper_core::Dialect,
    harper_rules: bool,
    // Harper's linters take `&mut self` (they cache per chunk): one
    // group behind a lock, built on first use.
    rules: OnceLock<Mutex<LintGroup>>,
}

impl English {
    /// Opens the bundled word list; Harper's rules load on first use
    /// when `harper_rules` is on.
    pub fn load(dialect: Dialect, harper_rules: bool) -> Result<Self, String> {
        let words = fst::Set::new(WORDS).map_err(|e| format!("the English word list: {e}"))?;
        let dialect = match dialect {
            Dialect::American => harper_core::Dialect::American,
            Dialect::British => harper_core::Dialect::British,
            Dialect::Canadian => harper_core::Dialect::Canadian,
            Dialect::Australian => harper_core::Dialect::Australian,
        };
        Ok(English {
            words,
            dialect,
            harper_rules,
            rules: OnceLock::new(),
        })
    }

    fn has(&self, word: &str) -> bool {
        // Most words arrive in lower case: no copy for them.
        if word.chars().any(char::is_uppercase) {
            self.words.contains(word.to_lowercase())
        } else {
            self.words.contains(word)
        }
    }

    /// `true` when Harper's dictionary knows `word` in some
    /// capitalisation.
    pub fn knows(&self, word: &str) -> bool {
        if self.has(word) {
            return true;
        }
        let straight = if word.contains('’') {
            let straight = word.replace('’', "'");
            if self.has(&straight) {
                return true;
            }
            std::borrow::Cow::Owned(straight)
        } else {
            std::borrow::Cow::Borrowed(word)
        };
        // Possessives: "Kubernetes's", "user's".
        if let Some(stem) = straight
            .strip_suffix("'s")
            .or_else(|| straight.strip_suffix("'S"))
        {
            if !stem.is_empty() && self.has(stem) {
                return true;
            }
        }
        // A hyphenated compound of known words ("well-known",
        // "read-only"): the dictionary lists few of them whole.
        straight.contains('-')
            && straight
                .split('-')
                .all(|part| !part.is_empty() && self.has(part))
    }

    /// `true` when `word` is known, or is a regular derivation of a known
    /// word that the dictionary does not list ("approvers", "pathing",
    /// "precached", "findable", "benefitting"), or a Latin expression of
    /// technical prose ("de facto", "a priori"). Used for the word's own
    /// verdict, not for candidates: a slip that happens to form a regular
    /// derivation is rare, a term built so is common.
    pub fn accepts(&self, word: &str) -> bool {
        if self.knows(word) {
            return true;
        }
        let lower = word.to_lowercase().replace('’', "'");
        if LATIN.contains(&lower.as_str()) {
            return true;
        }
        if lower.contains('-') {
            return lower
                .split('-')
                .all(|part| !part.is_empty() && (self.has(part) || self.derived(part, 0)));
        }
        self.derived(&lower, 0)
    }

    /// `true` when `word` (lower-case) is two dictionary words of three
    /// letters or more written as one ("skillset", "codebase").
    pub fn is_compound(&self, word: &str) -> bool {
        let bounds: Vec<usize> = word.char_indices().map(|(i, _)| i).collect();
        bounds.iter().skip(3).any(|&i| {
            let (a, b) = word.split_at(i);
            b.chars().count() >= 3 && self.has(a) && self.has(b)
        })
    }

    /// `word` (lower-case) is a known word with a regular suffix or
    /// prefix; `depth` bounds the stacking of affixes.
    fn derived(&self, word: &str, depth: u8) -> bool {
        if depth > 1 || word.chars().count() < 5 {
            return false;
        }
        let known = |stem: &str| {
            stem.chars().count() >= 3 && (self.has(stem) || self.derived(stem, depth + 1))
        };
        for suffix in SUFFIXES {
            let Some(stem) = word.strip_suffix(suffix) else {
                continue;
            };
            if known(stem) {
                return true;
            }
            // "approve" + "r", "prototype" + "d", "use" + "able".
            if known(&format!("{stem}e")) {
                return true;
            }
            // "benefit" + "t" + "ing": a doubled last consonant.
            let mut chars = stem.chars();
            if let (Some(a), Some(b)) = (chars.next_back(), chars.next_back()) {
                if a == b && !"aeiou".contains(a) && known(&stem[..stem.len() - a.len_utf8()]) {
                    return true;
                }
            }
            // "evaluable", "calculable": "-ate" verbs drop it before "-able".
            if matches!(*suffix, "able" | "ability") && known(&format!("{stem}ate")) {
                return true;
            }
            // "dependencies", "copied": "-y" becomes "-i".
            if matches!(*suffix, "ies" | "ied" | "ier" | "iers") && known(&format!("{stem}y")) {
                return true;
            }
        }
        for prefix in PREFIXES {
            if let Some(rest) = word.strip_prefix(prefix) {
                let rest = rest.strip_prefix('-').unwrap_or(rest);
                if rest.chars().count() >= 4 && (self.has(rest) || self.derived(rest, depth + 1)) {
                    return true;
                }
            }
        }
        false
    }

    /// The words one edit from `word` (lower-case) that the dictionary
    /// knows, in the order of the alphabet: what [`one_edit`] gives and
    /// [`English::knows`] accepts, read from the word list in one pass of
    /// an automaton rather than looked up one by one (a ten-letter word
    /// has about a thousand strings one edit away).
    pub fn near(&self, word: &str) -> Vec<String> {
        // The automaton's edits may bring in any character of the list;
        // with a word of the edit letters only, a candidate made of them
        // is one whose edit used one. Other words (an apostrophe, a
        // hyphen) take the long way, where `knows` also reads
        // possessives and compounds.
        if !word.chars().all(|c| LETTERS.contains(c)) {
            return one_edit(word)
                .into_iter()
                .filter(|c| self.knows(c))
                .collect();
        }
        let dfa = NEAR[0].build_dfa(word);
        let mut stream = self.words.search(&dfa).into_stream();
        let mut out = Vec::new();
        while let Some(bytes) = stream.next() {
            if let Ok(w) = std::str::from_utf8(bytes) {
                if w != word && w.chars().all(|c| LETTERS.contains(c)) {
                    out.push(w.to_owned());
                }
            }
        }
        out
    }

    /// Dictionary words within `max_distance` (1 or 2) edits of `word`
    /// (lower-case), at most `limit`, in the order of the alphabet.
    pub fn candidates(&self, word: &str, max_distance: u8, limit: usize) -> Vec<String> {
        let builder = &NEAR[usize::from(max_distance.clamp(1, 2) - 1)];
        let dfa = builder.build_dfa(&word.to_lowercase());
        let mut stream = self.words.search(&dfa).into_stream();
        let mut out = Vec::new();
        while let Some(bytes) = stream.next() {
            if let Ok(w) = std::str::from_utf8(bytes) {
                if w != word {
                    out.push(w.to_owned());
                }
            }
            if out.len() >= limit {
                break;
            }
        }
        out
    }

    /// "a" before a vowel sound, "an" before a consonant sound.
    pub fn articles(&self, text: &str, tokens: &[Token<'_>]) -> Vec<Hit> {
        let mut out = Vec::new();
        for pair in tokens.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let article = match a.text {
                "a" | "an" => a.text,
                "A" | "An" if a.sentence_start => a.text,
                _ => continue,
            };
            let gap = &text[a.end..b.start];
            if gap.is_empty() || !gap.chars().all(|c| c == ' ' || c == '\n') {
                continue;
            }
            // "a or b", "type a and press": the letter, not the article.
            if matches!(
                b.text,
                "and"
                    | "or"
                    | "of"
                    | "is"
                    | "in"
                    | "to"
                    | "as"
                    | "if"
                    | "on"
                    | "at"
                    | "it"
                    | "are"
                    | "was"
                    | "were"
                    | "be"
                    | "by"
                    | "an"
                    | "a"
            ) {
                continue;
            }
            // Only before a dictionary word: an abbreviation or a name ("an
            // scm", "an rvalue") is said as its writer says it.
            if !self.has(b.text) || !b.text.contains(['a', 'e', 'i', 'o', 'u', 'y']) {
                continue;
            }
            let chars: Vec<char> = b.text.chars().collect();
            let lower = b.text.to_lowercase();
            let sound = if YU
                .iter()
                .any(|w| lower == *w || lower.strip_suffix('s') == Some(w))
            {
                Some(InitialSound::Consonant)
            } else {
                harper_core::starts_with_vowel(&chars, self.dialect)
            };
            let wanted = match sound {
                Some(InitialSound::Vowel) => "an",
                Some(InitialSound::Consonant) => "a",
                _ => continue,
            };
            if article.eq_ignore_ascii_case(wanted) {
                continue;
            }
            let fixed = if a.text.starts_with('A') {
                crate::certain::match_case(wanted, "A")
            } else {
                wanted.to_owned()
            };
            out.push(Hit {
                start: a.start,
                end: a.end,
                kind: IssueKind::Article,
                message: format!(
                    "“{}” before “{}”: write “{fixed}”, as the word starts with a {} sound",
                    a.text,
                    b.text,
                    if wanted == "an" { "vowel" } else { "consonant" }
                ),
                suggestions: vec![fixed],
                certain: true,
            });
        }
        out
    }

    /// Harper's chosen rules on one English paragraph (none unless
    /// `harper_rules` is on).
    pub fn harper_rules(&self, text: &str) -> Vec<Hit> {
        if !self.harper_rules {
            return Vec::new();
        }
        let rules = self.rules.get_or_init(|| {
            let dict = FstDictionary::curated();
            let mut group = LintGroup::new_curated(dict, self.dialect);
            let keys: Vec<String> = group.iter_keys().map(str::to_owned).collect();
            for key in keys {
                let on = RULES.iter().any(|(name, _, _)| *name == key);
                group.config.set_rule_enabled(key, on);
            }
            Mutex::new(group)
        });
        let document = harper_core::Document::new_curated(text, &PlainEnglish);
        let organized = {
            let mut group = match rules.lock() {
                Ok(g) => g,
                // A panic in another thread's lint leaves the rules as
                // they were: their state is only a cache.
                Err(poisoned) => poisoned.into_inner(),
            };
            group.organized_lints(&document)
        };
        // Harper's spans count characters: map them to bytes.
        let mut bytes: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        bytes.push(text.len());
        let at = |c: usize| bytes.get(c).copied().unwrap_or(text.len());
        let mut out = Vec::new();
        for (rule, lints) in organized {
            let Some((_, kind, certain)) = RULES.iter().find(|(name, _, _)| *name == rule) else {
                continue;
            };
            for lint in lints {
                let (start, end) = (at(lint.span.start), at(lint.span.end));
                if start >= end {
                    continue;
                }
                let suggestions: Vec<String> = lint
                    .suggestions
                    .iter()
                    .map(|s| match s {
                        Suggestion::ReplaceWith(chars) => chars.iter().collect(),
                        Suggestion::InsertAfter(chars) => {
                            format!("{}{}", &text[start..end], chars.iter().collect::<String>())
                        }
                        Suggestion::Remove => String::new(),
                    })
                    .collect();
                out.push(Hit {
                    start,
                    end,
                    kind: *kind,
                    message: lint.message.clone(),
                    certain: *certain && suggestions.len() == 1,
                    suggestions,
                });
            }
        }
        out
    }
}

/// Harper's curated dictionary as the bundled set holds it: every form,
/// lower-case, sorted, once each.
pub fn harper_words() -> Vec<String> {
    use harper_core::spell::Dictionary as _;
    let dict = FstDictionary::curated();
    let mut words: Vec<String> = dict
        .words_iter()
        .map(|w| w.iter().collect::<String>().to_lowercase())
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tokens::words;

    pub(crate) static EN: LazyLock<English> =
        LazyLock::new(|| English::load(Dialect::American, false).expect("bundled"));

    /// The bundled set is Harper's dictionary (rebuilt from the pinned
    /// crate); `KOAS_UPDATE_WORDS=1` rewrites it after a Harper update.
    #[test]
    fn the_bundled_words_are_harpers() {
        let words = harper_words();
        let mut built = fst::SetBuilder::memory();
        built.extend_iter(words.iter()).expect("sorted, unique");
        let built = built.into_inner().expect("in memory");
        if std::env::var_os("KOAS_UPDATE_WORDS").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/dict/en/words.fst");
            std::fs::write(path, &built).expect("write the word list");
            return;
        }
        assert!(
            built == WORDS,
            "dict/en/words.fst is not Harper's dictionary ({} words now): run KOAS_UPDATE_WORDS=1 cargo test -p koas-lang the_bundled_words_are_harpers",
            words.len()
        );
    }

    #[test]
    fn the_dictionary_knows_words_possessives_and_compounds() {
        for w in [
            "explains",
            "addresses",
            "The",
            "user’s",
            "Kubernetes's",
            "read-only",
        ] {
            assert!(EN.knows(w), "{w}");
        }
        for w in ["explians", "teh", "adresses", "recieve"] {
            assert!(!EN.knows(w), "{w}");
        }
    }

    #[test]
    fn suggestions_hold_the_intended_word() {
        assert!(EN
            .candidates("explians", 1, 20)
            .contains(&"explains".to_owned()));
        assert!(EN
            .candidates("adresses", 1, 20)
            .contains(&"addresses".to_owned()));
        assert!(EN
            .candidates("explnais", 2, 50)
            .contains(&"explains".to_owned()));
    }

    #[test]
    fn near_words_are_the_known_one_edit_strings() {
        // Every 499th word of the list, a slip of it (its last two
        // letters swapped), and words with an apostrophe or a hyphen.
        let mut words = vec![
            "cafe".to_owned(),
            "naive".to_owned(),
            "dont".to_owned(),
            "user's".to_owned(),
            "read-onyl".to_owned(),
            "teh".to_owned(),
            "a".to_owned(),
        ];
        let mut stream = EN.words.stream();
        let mut k = 0usize;
        while let Some(bytes) = stream.next() {
            k += 1;
            if k % 499 == 0 {
                let w = String::from_utf8_lossy(bytes).into_owned();
                let mut c: Vec<char> = w.chars().collect();
                let n = c.len();
                if n >= 2 {
                    c.swap(n - 2, n - 1);
                }
                words.push(c.into_iter().collect());
                words.push(w);
            }
        }
        assert!(words.len() > 100);
        for w in &words {
            let slow: Vec<String> = one_edit(w).into_iter().filter(|c| EN.knows(c)).collect();
            assert_eq!(EN.near(w), slow, "{w}");
        }
        assert!(EN.near("cafe").contains(&"café".to_owned()));
    }

    #[test]
    fn a_and_an_follow_the_sound() {
        let t = "This is an test of a apple, an user and an hour. A option a or b.";
        let hits = EN.articles(t, &words(t));
        let got: Vec<(&str, &str)> = hits
            .iter()
            .map(|h| (&t[h.start..h.end], h.suggestions[0].as_str()))
            .collect();
        assert_eq!(got, [("an", "a"), ("a", "an"), ("an", "a"), ("A", "An")]);
        let ok = "This is a test of an apple, a user, an hour, a URL, an SQL query, a unary op and an scm.";
        assert!(EN.articles(ok, &words(ok)).is_empty());
    }
}
