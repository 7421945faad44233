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

/// The language of `text`, when its function words tell it: at least
/// two of one language's and at least twice as many as the other's.
pub fn guess(text: &str) -> Option<Lang> {
    let (mut en, mut fr) = (0u32, 0u32);
    for word in text
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty() && w.len() <= 8)
    {
        let lower = word.to_lowercase();
        if ENGLISH.contains(&lower.as_str()) {
            en += 1;
        } else if FRENCH.contains(&lower.as_str()) {
            fr += 1;
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
        assert_eq!(guess("Retry policy"), None);
    }
}
