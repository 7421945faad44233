//! French: the dictionary, with what Hunspell leaves to its caller
//! (elided articles and pronouns glued to the next word, pronouns joined
//! to a verb by hyphens), and the French rules (elision, typography).

mod dict;
pub mod rules;

use crate::tokens::is_apostrophe;

/// What may stand elided before an apostrophe ("l’", "qu’", "jusqu’").
const ELIDED: &[&str] = &[
    "l", "d", "j", "m", "n", "s", "t", "c", "qu", "jusqu", "lorsqu", "puisqu", "quoiqu", "presqu",
];

/// What may follow a verb after a hyphen ("a-t-il", "dis-moi", "celle-ci").
const HYPHEN_SUFFIXES: &[&str] = &[
    "t", "il", "ils", "elle", "elles", "on", "je", "tu", "nous", "vous", "le", "la", "les", "moi",
    "toi", "lui", "leur", "y", "en", "ci", "là",
];

/// Prefixes French joins to a word with a hyphen.
const PREFIXES: &[&str] = &[
    "intra", "inter", "extra", "pré", "pre", "post", "anti", "auto", "multi", "pluri", "co", "non",
    "sous", "sur", "semi", "demi", "mi", "micro", "macro", "méta", "meta", "pseudo", "néo", "ex",
    "vice", "quasi", "contre", "hyper", "super", "infra", "ultra", "bi", "tri",
];

/// The French dictionary and rules.
pub struct French {
    dict: dict::FrenchDict,
}

impl French {
    /// Loads the bundled dictionary.
    pub fn load() -> Result<Self, String> {
        Ok(French {
            dict: dict::FrenchDict::load()?,
        })
    }

    /// `true` when `word` is French: the dictionary knows it whole, or it
    /// is an elided word before a known one ("l’arbre"), or hyphenated
    /// known parts ("peut-on", "mot-clé").
    pub fn knows(&self, word: &str) -> bool {
        if self.dict.check(word) {
            return true;
        }
        if let Some((i, c)) = word.char_indices().find(|(_, c)| is_apostrophe(*c)) {
            let (head, rest) = (&word[..i], &word[i + c.len_utf8()..]);
            if ELIDED.contains(&head.to_lowercase().as_str()) && !rest.is_empty() {
                return self.knows(rest);
            }
        }
        if word.contains('-') {
            return word.split('-').enumerate().all(|(i, part)| {
                !part.is_empty()
                    && (self.dict.check(part)
                        || (i > 0 && HYPHEN_SUFFIXES.contains(&part.to_lowercase().as_str()))
                        || (i == 0 && self.knows_lowered(part)))
            });
        }
        self.knows_lowered(word)
    }

    /// `true` when `word` is French as written: [`French::knows`], or a
    /// spelling of the 1990 reform. Used for the word's own verdict, not
    /// for candidates (a suggestion is written the classic way).
    pub fn accepts(&self, word: &str) -> bool {
        self.knows(word) || self.reformed(word) || self.reformed(&word.to_lowercase())
    }

    /// `true` when `word` is a spelling of the 1990 reform of a word the
    /// dictionary knows in its classic spelling: no circumflex on i and u
    /// ("connaitre", "couteux"), è for é before a mute syllable
    /// ("évènement", "préfèrera"). Both spellings are correct French.
    fn reformed(&self, word: &str) -> bool {
        let chars: Vec<char> = word.chars().collect();
        chars.iter().enumerate().any(|(i, c)| {
            let classic = match c {
                'i' => 'î',
                'u' => 'û',
                'è' => 'é',
                _ => return false,
            };
            let mut v = chars.clone();
            v[i] = classic;
            self.dict.check(&v.iter().collect::<String>())
        })
    }

    /// `true` when `part` is a prefix French joins with a hyphen
    /// ("intra-annotateur", "pré-requis").
    pub fn is_prefix(part: &str) -> bool {
        PREFIXES.contains(&part.to_lowercase().as_str())
    }

    /// A capitalised word opening a sentence, checked in lower case.
    fn knows_lowered(&self, word: &str) -> bool {
        let mut chars = word.chars();
        match chars.next() {
            Some(first) if first.is_uppercase() => {
                let lowered: String = first.to_lowercase().chain(chars).collect();
                self.dict.check(&lowered)
            }
            _ => false,
        }
    }

    /// The word a misspelling's edits are generated from, and the elided
    /// head kept before it: "l’exemlpe" is checked as "exemlpe".
    pub fn split_elision<'a>(&self, word: &'a str) -> (&'a str, &'a str) {
        if let Some((i, c)) = word.char_indices().find(|(_, c)| is_apostrophe(*c)) {
            let head = &word[..i];
            if ELIDED.contains(&head.to_lowercase().as_str()) {
                return (&word[..i + c.len_utf8()], &word[i + c.len_utf8()..]);
            }
        }
        ("", word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::LazyLock;

    pub(crate) static FR: LazyLock<French> =
        LazyLock::new(|| French::load().expect("the bundled dictionary loads"));

    #[test]
    fn elisions_hyphens_and_capitals_are_french() {
        for w in [
            "maison",
            "développement",
            "l’arbre",
            "l'arbre",
            "qu’il",
            "aujourd’hui",
            "aujourd'hui",
            "peut-être",
            "a-t-il",
            "Configuration",
            "configurés",
            "jusqu’à",
        ] {
            assert!(FR.knows(w), "{w}");
        }
        for w in ["connaitre", "apparait", "évènement", "préfèrera", "couteux"] {
            assert!(FR.accepts(w), "reformed spelling {w}");
        }
        for w in [
            "maisson",
            "developpement",
            "l’arbbre",
            "adresss",
            "précisement",
        ] {
            assert!(!FR.knows(w), "{w}");
        }
        assert_eq!(FR.split_elision("l’exemlpe"), ("l’", "exemlpe"));
        assert_eq!(FR.split_elision("exemple"), ("", "exemple"));
    }
}
