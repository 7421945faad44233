//! The language of a document, from its most frequent function words: a
//! summary and an edit must be written in the document's language, and a
//! model left to itself answers a French document in English.

/// French function words that are not also English words.
const FRENCH: &[&str] = &[
    "le", "la", "les", "des", "du", "une", "et", "est", "sont", "dans", "pour", "avec", "sur",
    "qui", "que", "pas", "ce", "cette", "ces", "aux", "par", "au", "ou", "être", "été", "sera",
    "leur", "leurs", "nous", "vous", "il", "elle", "ils", "elles", "mais", "donc", "afin",
];

/// English function words that are not also French words.
const ENGLISH: &[&str] = &[
    "the", "and", "is", "are", "of", "to", "in", "for", "with", "on", "that", "this", "these",
    "by", "be", "was", "were", "it", "its", "an", "or", "not", "which", "from", "has", "have",
    "will", "should", "must", "can", "their", "they", "we", "you",
];

/// A document language koas writes summaries and edits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    /// French.
    French,
    /// English.
    English,
}

impl Language {
    /// The ISO 639-1 code (`fr`, `en`).
    pub fn code(self) -> &'static str {
        match self {
            Language::French => "fr",
            Language::English => "en",
        }
    }

    /// The language's name in itself, for prompts ("français").
    pub fn name(self) -> &'static str {
        match self {
            Language::French => "français",
            Language::English => "English",
        }
    }

    /// The language of an ISO code or a name (`fr`, `French`, `français`),
    /// as a config file gives it.
    pub fn parse(text: &str) -> Option<Language> {
        match text.trim().to_lowercase().as_str() {
            "fr" | "fra" | "fre" | "french" | "français" | "francais" => Some(Language::French),
            "en" | "eng" | "english" | "anglais" => Some(Language::English),
            _ => None,
        }
    }
}

/// Counts of French and English function words in `text`.
pub fn word_counts(text: &str) -> (usize, usize) {
    let mut fr = 0;
    let mut en = 0;
    for word in text
        .split(|c: char| !(c.is_alphabetic() || c == '\''))
        .filter(|w| !w.is_empty())
    {
        let w = word.to_lowercase();
        let w = w.trim_matches('\'');
        // Elided articles and pronouns ("l'audit", "d'un") are French.
        if w.starts_with("l'") || w.starts_with("d'") || w.starts_with("qu'") {
            fr += 1;
            continue;
        }
        if FRENCH.contains(&w) {
            fr += 1;
        } else if ENGLISH.contains(&w) {
            en += 1;
        }
    }
    (fr, en)
}

/// The language of `text`: French when French function words clearly
/// outnumber English ones, else English (the default for technical text,
/// code and tables).
pub fn detect(text: &str) -> Language {
    let (fr, en) = word_counts(text);
    if fr > en && fr >= 3 {
        Language::French
    } else {
        Language::English
    }
}

/// The language of a proposed text, `None` when it holds too few words to
/// tell (a number, a term, a short phrase).
pub fn detect_confident(text: &str) -> Option<Language> {
    let (fr, en) = word_counts(text);
    if fr + en < 4 {
        return None;
    }
    if fr >= 2 * en.max(1) {
        Some(Language::French)
    } else if en >= 2 * fr.max(1) {
        Some(Language::English)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_french_from_english() {
        assert_eq!(
            detect("Le rapport d'audit décrit les contrôles mis en place pour la plateforme de paiement et les écarts constatés."),
            Language::French
        );
        assert_eq!(
            detect("The audit report describes the controls in place for the payment platform and the gaps found."),
            Language::English
        );
        assert_eq!(detect("| a | b |\n|---|---|\n| 1 | 2 |"), Language::English);
    }

    #[test]
    fn short_texts_are_not_judged() {
        assert_eq!(detect_confident("42 ms"), None);
        assert_eq!(
            detect_confident("les contrôles sont en place pour la plateforme"),
            Some(Language::French)
        );
        assert_eq!(
            detect_confident("the controls are in place for the platform"),
            Some(Language::English)
        );
    }

    #[test]
    fn config_names_parse() {
        assert_eq!(Language::parse("FR"), Some(Language::French));
        assert_eq!(Language::parse("english"), Some(Language::English));
        assert_eq!(Language::parse("de"), None);
    }
}
