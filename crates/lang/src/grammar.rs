//! Rules shared by both languages: the same word twice in a row.

use crate::tokens::{fold, Token};
use crate::{IssueKind, Lang};

/// One rule's finding in a paragraph, before it becomes an [`crate::Issue`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// Byte range in the paragraph.
    pub start: usize,
    /// End of the range (exclusive).
    pub end: usize,
    /// What it is.
    pub kind: IssueKind,
    /// For people.
    pub message: String,
    /// Replacements for the range, best first.
    pub suggestions: Vec<String>,
    /// Whether the first suggestion is certain.
    pub certain: bool,
}

/// Words a sentence may hold twice in a row: "had had", "that that",
/// "nous nous sommes", "vous vous êtes".
fn may_repeat(word: &str, lang: Lang) -> bool {
    match lang {
        Lang::En => matches!(
            word,
            "had" | "that" | "is" | "do" | "bye" | "very" | "so" | "no"
        ),
        // "faire faire" (to have done), "en en faisant" (by doing so).
        Lang::Fr => matches!(
            word,
            "nous" | "vous" | "très" | "si" | "non" | "bien" | "faire" | "en" | "fait"
        ),
    }
}

/// The characters of `fold(word)`, without the copy.
fn folded_chars(word: &str) -> impl Iterator<Item = char> + '_ {
    word.chars()
        .map(|c| if c == '’' { '\'' } else { c })
        .flat_map(char::to_lowercase)
}

/// The same word twice in a row, separated by spaces only (a line break
/// counts: the second word then opens the next line).
pub fn repeated_words(text: &str, tokens: &[Token<'_>], lang: Lang) -> Vec<Hit> {
    let mut out = Vec::new();
    for pair in tokens.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        // Most neighbours differ at their first letter: told apart on
        // their first bytes when those are ASCII letters.
        if let (Some(x), Some(y)) = (a.text.bytes().next(), b.text.bytes().next()) {
            if x.is_ascii() && y.is_ascii() && !x.eq_ignore_ascii_case(&y) {
                continue;
            }
        }
        let gap = &text[a.end..b.start];
        if gap.is_empty() || !gap.chars().all(|c| c == ' ' || c == '\n') {
            continue;
        }
        // Compared folded, as `fold` would, without a copy: most
        // neighbours differ at their first letter.
        if !folded_chars(a.text).eq(folded_chars(b.text)) {
            continue;
        }
        let word = fold(a.text);
        if may_repeat(&word, lang) {
            continue;
        }
        // The fix removes the second word and the spaces before it; when
        // a line break separates them, the second word and the spaces
        // after it (a fix edits one line).
        let (start, end) = if gap.contains('\n') {
            let after = text[b.end..].len() - text[b.end..].trim_start_matches(' ').len();
            (b.start, b.end + after)
        } else {
            (a.end, b.end)
        };
        out.push(Hit {
            start,
            end,
            kind: IssueKind::RepeatedWord,
            message: format!("“{}” is written twice in a row", b.text),
            suggestions: vec![String::new()],
            certain: true,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::words;

    #[test]
    fn doubled_words_are_found_and_removable() {
        let t = "See the the list. It had had no effect.\nThe server server\nserver runs.";
        let hits = repeated_words(t, &words(t), Lang::En);
        let spans: Vec<&str> = hits.iter().map(|h| &t[h.start..h.end]).collect();
        assert_eq!(spans, [" the", " server", "server "]);
        let f = "Le le serveur ; nous nous sommes trompés.";
        assert_eq!(repeated_words(f, &words(f), Lang::Fr).len(), 1);
    }
}
