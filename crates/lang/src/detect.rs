//! Which language a paragraph is written in, from its function words.
//!
//! French technical prose quotes English terms and whole English
//! paragraphs, and English documents quote French ones: each paragraph is
//! judged on its own, by the words every sentence of a language needs
//! (articles, prepositions, pronouns, auxiliaries) and nouns never are.
//! A paragraph too short to tell (a heading, a list item of two words)
//! is left undecided; the caller gives it its neighbours' language.

use crate::Lang;

/// English function words that are not also French words.
const ENGLISH: &[&str] = &[
    "the", "and", "of", "to", "is", "are", "was", "were", "be", "been", "this", "that", "these",
    "those", "with", "for", "from", "it", "its", "by", "an", "or", "not", "which", "when", "what",
    "who", "will", "would", "should", "can", "could", "has", "have", "had", "but", "if", "then",
    "than", "there", "their", "they", "we", "you", "our", "your", "at", "as", "all", "each", "any",
    "may", "must", "do", "does", "into", "only", "also", "how", "where", "one", "such", "other",
    "more", "after", "before", "about", "between", "without", "should", "same", "both",
];

/// French function words that are not also English words.
const FRENCH: &[&str] = &[
    "le", "la", "les", "des", "du", "de", "et", "est", "un", "une", "pour", "dans", "que", "qui",
    "sur", "au", "aux", "ce", "cette", "ces", "sont", "avec", "pas", "par", "ne", "se", "il",
    "elle", "ils", "elles", "nous", "vous", "leur", "leurs", "son", "sa", "ses", "mais", "ou",
    "où", "donc", "être", "avoir", "été", "fait", "peut", "doit", "sans", "entre", "après",
    "avant", "comme", "tout", "tous", "toutes", "aussi", "plus", "cela", "ça", "lors", "dont",
    "lorsque", "afin", "chaque", "même", "si", "très", "notre", "votre", "nos", "vos", "l", "d",
    "qu", "c", "n", "s", "j", "y", "en",
];

/// French words that are only ever written elided, before an apostrophe.
const ELIDED: &[&str] = &["l", "d", "qu", "c", "n", "s", "j"];

/// The language whose function word `lower` is, if any: the two lists in
/// one table built once, looked up by hash (every word of every
/// paragraph is looked up).
fn function_word(lower: &str) -> Option<Lang> {
    static TABLE: std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, Lang>> =
        std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = rustc_hash::FxHashMap::default();
        // English first: a word on both lists counts as English, as the
        // lists were read before.
        for w in FRENCH {
            t.insert(*w, Lang::Fr);
        }
        for w in ENGLISH {
            t.insert(*w, Lang::En);
        }
        t
    });
    table.get(lower).copied()
}

/// The language of `text`, when its function words tell it: at least
/// two of one language's and at least twice as many as the other's.
pub fn guess(text: &str) -> Option<Lang> {
    let (mut en, mut fr) = (0u32, 0u32);
    let mut start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        if c.is_alphabetic() {
            start.get_or_insert(i);
            continue;
        }
        let Some(s) = start.take() else { continue };
        let word = &text[s..i];
        if word.len() > 8 {
            continue;
        }
        // Most words are written in lower case: no copy for them.
        let lower;
        let word = if word.chars().any(char::is_uppercase) {
            lower = word.to_lowercase();
            lower.as_str()
        } else {
            word
        };
        match function_word(word) {
            // An elided article or pronoun is one before an apostrophe
            // ("l'arbre"): the "s" of an English "model's" comes after one.
            Some(Lang::Fr) if ELIDED.contains(&word) && !matches!(c, '\'' | '’') => {}
            Some(Lang::En) => en += 1,
            Some(Lang::Fr) => fr += 1,
            None => {}
        }
    }
    if en >= 2 && en >= fr.saturating_mul(2) && en > fr {
        Some(Lang::En)
    } else if fr >= 2 && fr >= en.saturating_mul(2) && fr > en {
        Some(Lang::Fr)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_words_tell_the_language() {
        assert_eq!(
            guess("The server explains the addresses of a user."),
            Some(Lang::En)
        );
        assert_eq!(
            guess("Le serveur explique les adresses d’un utilisateur."),
            Some(Lang::Fr)
        );
        // English terms inside a French sentence do not make it English.
        assert_eq!(
            guess("Le cache est invalidé par un webhook lors du build."),
            Some(Lang::Fr)
        );
        assert_eq!(guess("Installation"), None);
        // The letters after an English apostrophe are no French elision.
        assert_eq!(
            guess("| The model's answer | The chunk's text | It's done |"),
            Some(Lang::En)
        );
        assert_eq!(guess("Model's chunk's server's reply's"), None);
        assert_eq!(guess("L'arbre d'Anne qu'il voit"), Some(Lang::Fr));
        assert_eq!(guess("Retry policy"), None);
    }
}
