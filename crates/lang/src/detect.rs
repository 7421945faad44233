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

/// `word`'s bytes as one number, when it has at most eight: the key of
/// the function words' table (every word of every paragraph is looked
/// up, and a number hashes in one step).
fn packed(word: &[u8]) -> Option<u64> {
    let mut buf = [0u8; 8];
    buf.get_mut(..word.len())?.copy_from_slice(word);
    Some(u64::from_le_bytes(buf))
}

/// The two lists in one table, built once: each word's language, and
/// whether it is one only ever written elided.
fn table() -> &'static rustc_hash::FxHashMap<u64, (Lang, bool)> {
    static TABLE: std::sync::OnceLock<rustc_hash::FxHashMap<u64, (Lang, bool)>> =
        std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = rustc_hash::FxHashMap::default();
        // English last: a word on both lists counts as English, as the
        // lists were read before.
        for w in FRENCH {
            if let Some(k) = packed(w.as_bytes()) {
                t.insert(k, (Lang::Fr, ELIDED.contains(w)));
            }
        }
        for w in ENGLISH {
            if let Some(k) = packed(w.as_bytes()) {
                t.insert(k, (Lang::En, false));
            }
        }
        t
    })
}

/// The language whose function word `lower` is, if any.
#[cfg(test)]
fn function_word(lower: &str) -> Option<Lang> {
    table()
        .get(&packed(lower.as_bytes())?)
        .map(|&(lang, _)| lang)
}

/// The language of `text`, when its function words tell it: at least
/// two of one language's and at least twice as many as the other's.
pub fn guess(text: &str) -> Option<Lang> {
    let (mut en, mut fr) = (0u32, 0u32);
    let bytes = text.as_bytes();
    // Every paragraph of a document is read here, most of it ASCII: the
    // bytes are walked, and only a non-ASCII one is decoded as a
    // character.
    let letter_at = |i: usize| -> (bool, usize) {
        match bytes.get(i) {
            Some(b) if b.is_ascii() => (b.is_ascii_alphabetic(), 1),
            Some(_) => {
                let c = text[i..].chars().next().unwrap_or(' ');
                (c.is_alphabetic(), c.len_utf8())
            }
            None => (false, 0),
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let (letter, len) = letter_at(i);
        if !letter {
            i += len;
            continue;
        }
        let s = i;
        i += len;
        loop {
            match bytes.get(i) {
                Some(b) if b.is_ascii_alphabetic() => i += 1,
                Some(b) if !b.is_ascii() => {
                    let (letter, len) = letter_at(i);
                    if !letter {
                        break;
                    }
                    i += len;
                }
                _ => break,
            }
        }
        // No function word is longer than eight bytes.
        if i - s > 8 {
            continue;
        }
        match function_word_at(&text[s..i]) {
            // An elided article or pronoun is one before an apostrophe
            // ("l'arbre"): the "s" of an English "model's" comes after one.
            Some((Lang::Fr, true))
                if !(bytes.get(i) == Some(&b'\'') || text[i..].starts_with('’')) => {}
            Some((Lang::En, _)) => en += 1,
            Some((Lang::Fr, _)) => fr += 1,
            None => {}
        }
    }
    verdict(en, fr)
}

/// The language `en` English and `fr` French function words tell: at
/// least two of one and at least twice as many as the other's.
fn verdict(en: u32, fr: u32) -> Option<Lang> {
    if en >= 2 && en >= fr.saturating_mul(2) && en > fr {
        Some(Lang::En)
    } else if fr >= 2 && fr >= en.saturating_mul(2) && fr > en {
        Some(Lang::Fr)
    } else {
        None
    }
}

/// The language whose function word `word` (as written, at most eight
/// bytes) is, and whether it is one only ever written elided.
fn function_word_at(word: &str) -> Option<(Lang, bool)> {
    let key = if word.is_ascii() {
        // Lowered on the stack.
        let mut key = packed(word.as_bytes())?.to_le_bytes();
        key.make_ascii_lowercase();
        u64::from_le_bytes(key)
    } else if word.chars().any(char::is_uppercase) {
        packed(word.to_lowercase().as_bytes())?
    } else {
        packed(word.as_bytes())?
    };
    table().get(&key).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// [`guess`] as first written, character by character: the
    /// definition the byte walk must keep.
    fn guess_by_chars(text: &str) -> Option<Lang> {
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
            let lower;
            let word = if word.chars().any(char::is_uppercase) {
                lower = word.to_lowercase();
                lower.as_str()
            } else {
                word
            };
            match function_word(word) {
                Some(Lang::Fr) if ELIDED.contains(&word) && !matches!(c, '\'' | '’') => {}
                Some(Lang::En) => en += 1,
                Some(Lang::Fr) => fr += 1,
                None => {}
            }
        }
        verdict(en, fr)
    }

    proptest! {
        #[test]
        fn the_byte_walk_guesses_as_the_characters_do(
            words in proptest::collection::vec(
                prop_oneof![
                    proptest::sample::select(ENGLISH.to_vec()).prop_map(str::to_owned),
                    proptest::sample::select(FRENCH.to_vec()).prop_map(str::to_owned),
                    "[a-zA-Zéèàùç'’ÉÀ]{1,10}",
                    "\\PC{1,6}",
                ],
                0..24,
            ),
            seps in proptest::collection::vec(
                proptest::sample::select(vec![" ", "'", "’", ", ", "-", "\n", "« ", "1", "É"]),
                24,
            ),
            upper in proptest::collection::vec(any::<bool>(), 24),
        ) {
            let mut text = String::new();
            for (k, w) in words.iter().enumerate() {
                if upper[k] {
                    text.push_str(&w.to_uppercase());
                } else {
                    text.push_str(w);
                }
                text.push_str(seps[k]);
            }
            prop_assert_eq!(guess(&text), guess_by_chars(&text), "{:?}", text);
        }
    }

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
