//! Prose as Vale measures it: sentences, words and syllables, and the
//! counts its `metric` and `readability` rules compute with.
//!
//! Vale splits sentences with a trained (Punkt) tokenizer and counts
//! syllables with a list of English spelling patterns; the heuristics
//! here are smaller and agree with them on ordinary prose, not on every
//! abbreviation or word.

use std::ops::Range;

/// Words that end with a period without ending a sentence.
const ABBREVIATIONS: [&str; 36] = [
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "eg", "ie", "inc", "ltd", "co",
    "corp", "no", "nos", "fig", "figs", "approx", "dept", "est", "vol", "p", "pp", "jan", "feb",
    "mar", "apr", "aug", "sep", "sept", "oct", "nov", "dec",
];

/// The byte ranges of the sentences of `text`, trimmed, in order.
pub(crate) fn sentences(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        if !matches!(c, '.' | '!' | '?' | '…') {
            i += 1;
            continue;
        }
        // The whole run of end marks, then any closing quotes or brackets.
        let mut j = i;
        while j < chars.len() && matches!(chars[j].1, '.' | '!' | '?' | '…') {
            j += 1;
        }
        let marks = &text[at..chars.get(j).map_or(text.len(), |&(b, _)| b)];
        while j < chars.len() && matches!(chars[j].1, '"' | '\'' | '”' | '’' | ')' | ']') {
            j += 1;
        }
        let end = chars.get(j).map_or(text.len(), |&(b, _)| b);
        let followed_by_space = chars.get(j).map_or(true, |&(_, n)| n.is_whitespace());
        if followed_by_space && ends_sentence(text, at, marks, end) {
            push_trimmed(text, start..end, &mut out);
            start = end;
        }
        i = j.max(i + 1);
    }
    push_trimmed(text, start..text.len(), &mut out);
    out
}

/// Whether the end marks `marks` at byte `at` (their run ending at
/// `end`) close a sentence: not after an abbreviation or an initial, and
/// not an ellipsis that the sentence goes on after.
fn ends_sentence(text: &str, at: usize, marks: &str, end: usize) -> bool {
    let next = text[end..].trim_start().chars().next();
    let next_is_lower = next.is_some_and(char::is_lowercase);
    if marks == "." {
        let word = text[..at]
            .rsplit(char::is_whitespace)
            .next()
            .unwrap_or("")
            .trim_start_matches(['(', '"', '\'', '“', '‘']);
        let bare: String = word
            .chars()
            .filter(|c| *c != '.')
            .flat_map(char::to_lowercase)
            .collect();
        let initial = word.chars().count() == 1 && word.chars().all(char::is_uppercase);
        // `e.g.`, `U.S.`: letters between periods.
        let dotted = word.contains('.') && word.chars().all(|c| c == '.' || c.is_alphabetic());
        if initial || dotted || ABBREVIATIONS.contains(&bare.as_str()) {
            return false;
        }
        return true;
    }
    !(marks.chars().all(|c| c == '.' || c == '…') && next_is_lower)
}

fn push_trimmed(text: &str, range: Range<usize>, out: &mut Vec<Range<usize>>) {
    let piece = &text[range.clone()];
    let trimmed = piece.trim();
    if !trimmed.is_empty() {
        let start = range.start + (piece.len() - piece.trim_start().len());
        out.push(start..start + trimmed.len());
    }
}

/// The words of `text` as Vale's readability counts them: runs of
/// letters, digits and apostrophes, or initials such as `U.S.`.
pub(crate) fn words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        // Two or more `X.` in a row: one word.
        let mut j = i;
        while j + 1 < bytes.len() && bytes[j].is_ascii_uppercase() && bytes[j + 1] == b'.' {
            j += 2;
        }
        if j - i >= 4 {
            out.push(&text[i..j]);
            i = j;
            continue;
        }
        let word_char = |c: char| c.is_alphanumeric() || c == '\'';
        let rest = &text[i..];
        let len: usize = rest
            .chars()
            .take_while(|&c| word_char(c))
            .map(char::len_utf8)
            .sum();
        if len > 0 {
            out.push(&rest[..len]);
            i += len;
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// English words whose spelling misleads the rules below.
const SYLLABLE_EXCEPTIONS: [(&str, usize); 24] = [
    ("abalone", 4),
    ("acreage", 3),
    ("adobe", 3),
    ("anemone", 4),
    ("apache", 3),
    ("apostrophe", 4),
    ("cafe", 2),
    ("catastrophe", 4),
    ("coyote", 3),
    ("epitome", 4),
    ("facsimile", 4),
    ("forever", 3),
    ("hyperbole", 4),
    ("karate", 3),
    ("maybe", 2),
    ("people", 2),
    ("recipe", 3),
    ("sesame", 3),
    ("shoreline", 2),
    ("simile", 3),
    ("business", 2),
    ("every", 2),
    ("different", 3),
    ("evening", 2),
];

/// An estimate of the syllables of `word`: its groups of vowels, less a
/// silent final `e` and the `-ed`/`-es` endings that add none, at least
/// one.
pub(crate) fn syllables(word: &str) -> usize {
    let lower = word.to_lowercase();
    let letters: Vec<char> = lower.chars().filter(|c| c.is_alphabetic()).collect();
    if letters.len() < 3 {
        return 1;
    }
    let text: String = letters.iter().collect();
    if let Some(&(_, n)) = SYLLABLE_EXCEPTIONS.iter().find(|(w, _)| *w == text) {
        return n;
    }
    let vowel = |c: char| matches!(c, 'a' | 'e' | 'i' | 'o' | 'u' | 'y');
    let mut count = 0usize;
    let mut previous = false;
    for (i, &c) in letters.iter().enumerate() {
        // A `y` after a vowel is a consonant sound's end (`day`), and one
        // at the start a consonant (`yes`).
        let v = vowel(c) && !(c == 'y' && (i == 0 || previous));
        if v && !previous {
            count += 1;
        }
        previous = v;
    }
    // Vowel pairs heard as two syllables (`create`, `idea`, `radio`,
    // `actual`), except where the first vowel only softens a consonant
    // (`special`, `nation`) or follows a `q` or `g` (`quality`).
    for pair in ["ea", "ia", "io", "eo", "ua", "uo"] {
        for (at, _) in text.match_indices(pair) {
            let before = text[..at].chars().last();
            let after = &text[at + 2..];
            let two = match pair {
                "ea" => after.is_empty() || after.starts_with("te") || after.starts_with("ti"),
                "ia" | "io" => !matches!(before, Some('c' | 't' | 's' | 'g' | 'x')),
                "ua" => !matches!(before, Some('q' | 'g')),
                _ => true,
            };
            count += usize::from(two);
        }
    }
    let n = letters.len();
    let last = letters[n - 1];
    let before = letters[n - 2];
    let third = letters[n - 3];
    if last == 'e' && !vowel(before) {
        // `-le` after a consonant is a syllable (`table`); another final
        // `e` after a consonant is silent (`make`).
        if before != 'l' || vowel(third) {
            count = count.saturating_sub(1);
        }
    } else if (text.ends_with("ed") || text.ends_with("es")) && n > 3 {
        // `-ed` is heard only after `t`/`d` (`wanted`), `-es` only after a
        // hissing sound (`boxes`, `wishes`).
        let heard = if last == 'd' {
            matches!(third, 't' | 'd')
        } else {
            matches!(third, 's' | 'x' | 'z' | 'c' | 'g')
                || text.ends_with("shes")
                || text.ends_with("ches")
        };
        if !heard && !vowel(third) {
            count = count.saturating_sub(1);
        }
    }
    count.max(1)
}

/// The counts of a text that Vale's `metric` formulas and `readability`
/// grades compute with.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct TextCounts {
    pub(crate) words: f64,
    pub(crate) sentences: f64,
    pub(crate) syllables: f64,
    /// Letters and digits of the words.
    pub(crate) characters: f64,
    /// Words of three syllables or more, an `-es`, `-ed` or `-ing`
    /// ending not counted.
    pub(crate) complex_words: f64,
    /// Words of more than six bytes.
    pub(crate) long_words: f64,
    /// Words of three syllables or more.
    pub(crate) polysyllabic_words: f64,
    /// Paragraphs (pieces between blank lines).
    pub(crate) paragraphs: f64,
}

impl TextCounts {
    /// The counts of `text`, its paragraphs parted by blank lines.
    pub(crate) fn of(text: &str) -> TextCounts {
        let mut counts = TextCounts::default();
        for paragraph in text.split("\n\n") {
            if paragraph.trim().is_empty() {
                continue;
            }
            counts.paragraphs += 1.0;
            for sentence in sentences(paragraph) {
                counts.sentences += 1.0;
                for word in words(&paragraph[sentence]) {
                    let syllables = syllables(word);
                    counts.words += 1.0;
                    counts.syllables += syllables as f64;
                    counts.characters +=
                        word.chars().filter(|c| c.is_alphanumeric()).count() as f64;
                    if word.len() > 6 {
                        counts.long_words += 1.0;
                    }
                    if syllables > 2 {
                        counts.polysyllabic_words += 1.0;
                    }
                    let suffixed = ["es", "ed", "ing"].iter().any(|s| word.ends_with(s));
                    if syllables - usize::from(suffixed) > 2 {
                        counts.complex_words += 1.0;
                    }
                }
            }
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<&str> {
        sentences(text).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn sentences_end_at_end_marks_but_not_after_abbreviations() {
        assert_eq!(
            split("this is a sentence. so is this one.  And \"this\"! Really?"),
            [
                "this is a sentence.",
                "so is this one.",
                "And \"this\"!",
                "Really?"
            ]
        );
        assert_eq!(
            split("Ask Dr. Smith, e.g. by mail, or J. Doe at the U.S. office. Done"),
            [
                "Ask Dr. Smith, e.g. by mail, or J. Doe at the U.S. office.",
                "Done"
            ]
        );
        assert_eq!(
            split("Wait... then go. Version 2.5 is out"),
            ["Wait... then go.", "Version 2.5 is out"]
        );
        assert!(split("  ").is_empty());
    }

    #[test]
    fn words_are_letters_digits_and_apostrophes_or_initials() {
        assert_eq!(
            words("It's 2024 in the U.S. — état-civil, ok?"),
            ["It's", "2024", "in", "the", "U.S.", "état", "civil", "ok"]
        );
    }

    #[test]
    fn syllables_are_estimated_as_english_spelling_sounds() {
        for (word, n) in [
            ("a", 1),
            ("the", 1),
            ("make", 1),
            ("table", 2),
            ("wanted", 2),
            ("jumped", 1),
            ("boxes", 2),
            ("makes", 1),
            ("readability", 5),
            ("documentation", 5),
            ("day", 1),
            ("yes", 1),
            ("people", 2),
            ("create", 2),
            ("radio", 3),
            ("nation", 2),
            ("beautiful", 3),
        ] {
            assert_eq!(syllables(word), n, "{word}");
        }
    }

    #[test]
    fn counts_are_those_of_the_readability_formulas() {
        let counts =
            TextCounts::of("The cat sat. The documentation is long.\n\nAnother paragraph here.");
        assert_eq!(counts.paragraphs, 2.0);
        assert_eq!(counts.sentences, 3.0);
        assert_eq!(counts.words, 10.0);
        assert_eq!(counts.long_words, 3.0, "documentation, Another, paragraph");
        assert_eq!(
            counts.polysyllabic_words, 3.0,
            "documentation, another, paragraph"
        );
        assert_eq!(counts.complex_words, 3.0);
        assert_eq!(counts.characters, 51.0);
    }
}
