//! The words of a paragraph that a dictionary may judge.
//!
//! A paragraph arrives as prose: the host has already blanked code, math,
//! URLs, link targets and HTML byte for byte. What is left may still hold
//! things no dictionary knows and no writer misspelled: identifiers
//! (`camelCase`, `snake_case`, `ALLCAPS`, `x86_64`), paths, file and domain
//! names, e-mail addresses, numbers. Those are skipped here, whole: a
//! piece of text with any character other than letters, apostrophes and
//! inner hyphens is not a word of the sentence.

/// What a host writes in place of each byte that is not prose (code,
/// math, URLs, link targets, markup): it separates words like a space,
/// but no rule reads it as one (a space before `:` that is really the
/// end of a code span is no typography slip).
pub const BLANK: char = '\u{1f}';

/// One word of a paragraph, by byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    /// The word as written (letters, inner apostrophes and hyphens).
    pub text: &'a str,
    /// Byte offset of its first character in the paragraph.
    pub start: usize,
    /// Byte offset just past it.
    pub end: usize,
    /// `true` when it opens a sentence (first word, or after `.` `!` `?`
    /// or a list or heading marker): its capital says nothing.
    pub sentence_start: bool,
    /// `true` when it is written in emphasis (`*word*`, `_word_`): a
    /// term being introduced or cited, often coined.
    pub emphasised: bool,
}

impl Token<'_> {
    /// `true` when the word starts with an upper-case letter.
    pub fn capitalised(&self) -> bool {
        self.text.chars().next().is_some_and(char::is_uppercase)
    }
}

/// Characters stripped from the start of a piece of text before it is
/// judged: brackets, quotes, emphasis marks.
fn is_lead(c: char) -> bool {
    matches!(
        c,
        '(' | '[' | '{' | '"' | '\'' | '«' | '“' | '‘' | '„' | '*' | '_' | '~' | '¿' | '¡'
    )
}

/// Characters stripped from the end: sentence punctuation, closing
/// brackets and quotes, emphasis marks.
fn is_trail(c: char) -> bool {
    matches!(
        c,
        '.' | ','
            | ';'
            | ':'
            | '!'
            | '?'
            | ')'
            | ']'
            | '}'
            | '"'
            | '\''
            | '»'
            | '”'
            | '’'
            | '*'
            | '_'
            | '~'
            | '…'
    )
}

/// `true` for an apostrophe, straight or typographic.
pub fn is_apostrophe(c: char) -> bool {
    c == '\'' || c == '’'
}

/// `true` when `piece` ends a sentence (so the next word's capital says
/// nothing about it being a name).
fn ends_sentence(piece: &str) -> bool {
    let trimmed = piece.trim_end_matches(['"', '\'', '»', '”', '’', ')', ']', '*', '_']);
    // Not `:`: the word after a colon keeps a capital only when it is a
    // name ("Author: Jaana").
    trimmed.ends_with(['.', '!', '?', '…'])
}

/// `true` when `piece` is a list or heading marker or a quote mark, after
/// which a sentence starts.
fn is_marker(piece: &str) -> bool {
    matches!(piece, "-" | "*" | "+" | ">" | "—" | "–" | "•" | "|")
        || piece.chars().all(|c| c == '#')
        || (piece.ends_with(['.', ')'])
            && piece.len() > 1
            && piece[..piece.len() - 1].chars().all(|c| c.is_ascii_digit()))
}

/// `true` when the word is an identifier rather than a word: camelCase
/// (a lower-case letter followed by an upper-case one) or ALLCAPS (two or
/// more letters, none lower-case), also as a plural ("PIDs", "SLIs",
/// "GOGC's").
fn is_identifier_like(core: &str) -> bool {
    let stem = core
        .strip_suffix("'s")
        .or_else(|| core.strip_suffix("’s"))
        .or_else(|| core.strip_suffix('s'))
        .unwrap_or(core);
    if stem.chars().count() >= 2 && stem.chars().all(|c| c.is_uppercase()) {
        return true;
    }
    let mut prev_lower = false;
    let mut upper = 0usize;
    let mut lower = 0usize;
    for c in core.chars() {
        if c.is_uppercase() {
            if prev_lower {
                return true;
            }
            upper += 1;
        } else if c.is_lowercase() {
            lower += 1;
        }
        prev_lower = c.is_lowercase();
    }
    lower == 0 && upper >= 2
}

/// The words of `text` a dictionary may judge, in order.
pub fn words(text: &str) -> Vec<Token<'_>> {
    // Sized for prose (a word about every six bytes): growing the list
    // cost a fifth of the work on a large document.
    let mut out = Vec::with_capacity(text.len() / 6 + 1);
    let mut state = Reading {
        sentence_start: true,
        emphasis_open: false,
    };
    let bytes = text.as_bytes();
    let mut start = None;
    let mut i = 0;
    while i < bytes.len() {
        // Bytes, not chars: almost all of a paragraph is ASCII, and
        // decoding each char was most of the cost of reading it.
        let b = bytes[i];
        let (separates, width) = if b.is_ascii() {
            // The vertical tab (0x0b) is whitespace to `char`, not to `u8`.
            (b.is_ascii_whitespace() || b == 0x0b || b == BLANK as u8, 1)
        } else {
            match text[i..].chars().next() {
                Some(c) => (c.is_whitespace(), c.len_utf8()),
                None => break,
            }
        };
        if separates {
            if let Some(s) = start.take() {
                state.piece(text, s, i, &mut out);
            }
        } else if start.is_none() {
            start = Some(i);
        }
        i += width;
    }
    if let Some(s) = start {
        state.piece(text, s, text.len(), &mut out);
    }
    out
}

/// Where the reading of a paragraph stands between two pieces of text.
struct Reading {
    /// The next word opens a sentence.
    sentence_start: bool,
    /// Inside `*an emphasised phrase*` across pieces.
    emphasis_open: bool,
}

impl Reading {
    /// Reads the piece `text[s..e]` (no whitespace in it).
    fn piece<'a>(&mut self, text: &'a str, s: usize, e: usize, out: &mut Vec<Token<'a>>) {
        let piece = &text[s..e];
        // Most pieces are a plain word ("the", "Server"): a word, no
        // emphasis mark, no sentence end; nothing else to work out.
        let b = piece.as_bytes();
        if let [first, rest @ ..] = b {
            if first.is_ascii_alphabetic() && rest.iter().all(u8::is_ascii_lowercase) {
                out.push(Token {
                    text: piece,
                    start: s,
                    end: e,
                    sentence_start: self.sentence_start,
                    emphasised: self.emphasis_open,
                });
                self.sentence_start = false;
                return;
            }
        }
        // Next most: a plain word and one punctuation mark ("word,",
        // "end."), which only tells whether a sentence ends.
        if let [first, middle @ .., last] = b {
            if matches!(last, b'.' | b',' | b';' | b':' | b'!' | b'?')
                && first.is_ascii_alphabetic()
                && middle.iter().all(u8::is_ascii_lowercase)
            {
                out.push(Token {
                    text: &piece[..piece.len() - 1],
                    start: s,
                    end: e - 1,
                    sentence_start: self.sentence_start,
                    emphasised: self.emphasis_open,
                });
                self.sentence_start = matches!(last, b'.' | b'!' | b'?');
                return;
            }
        }
        let opens = piece
            .trim_start_matches(['(', '[', '"', '\'', '«', '“'])
            .starts_with(['*', '_']);
        if let Some((core_start, core)) = core_of(piece) {
            if is_word(core) {
                let lead = &piece[..core_start];
                out.push(Token {
                    text: core,
                    start: s + core_start,
                    end: s + core_start + core.len(),
                    sentence_start: self.sentence_start,
                    emphasised: lead.contains(['*', '_']) || self.emphasis_open,
                });
            }
        }
        let closes = piece
            .trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '"', '\'', '»', '”'])
            .ends_with(['*', '_']);
        if opens && !closes {
            self.emphasis_open = true;
        } else if closes {
            self.emphasis_open = false;
        }
        self.sentence_start = ends_sentence(piece) || is_marker(piece);
    }
}

/// The piece without its leading and trailing punctuation, with the
/// byte offset where it starts; `None` when nothing is left.
fn core_of(piece: &str) -> Option<(usize, &str)> {
    let trimmed_start = piece.trim_start_matches(is_lead);
    let offset = piece.len() - trimmed_start.len();
    let mut core = trimmed_start.trim_end_matches(is_trail);
    // A possessive or plural apostrophe at the end was stripped with the
    // quotes; hyphens at either end belong to no word.
    let lead_hyphens = core.len() - core.trim_start_matches('-').len();
    core = core.trim_matches('-');
    if core.is_empty() {
        None
    } else {
        Some((offset + lead_hyphens, core))
    }
}

/// `true` for a letter of the Latin script (with its accented forms): the
/// letters of English and French. A word in another script (Cyrillic,
/// Greek, CJK) is in a language these checks do not read.
fn is_latin_letter(c: char) -> bool {
    c.is_alphabetic()
        && (c.is_ascii_alphabetic()
            || ('\u{c0}'..='\u{24f}').contains(&c)
            || ('\u{1e00}'..='\u{1eff}').contains(&c))
}

/// `true` when `core` is a word: Latin letters with inner apostrophes and
/// hyphens only (no digit, no `_` `/` `.` `@`), not an identifier.
fn is_word(core: &str) -> bool {
    let mut prev_joiner = true;
    for c in core.chars() {
        if is_latin_letter(c) {
            prev_joiner = false;
        } else if c == '-' || is_apostrophe(c) {
            if prev_joiner {
                return false;
            }
            prev_joiner = true;
        } else {
            return false;
        }
    }
    !prev_joiner && !is_identifier_like(core)
}

/// The lower-case form a word is counted under.
pub fn fold(word: &str) -> String {
    if word.is_ascii() {
        return word.to_ascii_lowercase();
    }
    word.chars()
        .map(|c| if c == '’' { '\'' } else { c })
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<&str> {
        words(text).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn identifiers_paths_and_numbers_are_not_words() {
        assert_eq!(
            texts("Set maxRetries and MAX_SIZE in config/app.toml, see a.b@c.fr or x86_64 v2 HTTP"),
            ["Set", "and", "in", "see", "or"]
        );
        assert_eq!(texts("the `   ` function"), ["the", "function"]);
        assert_eq!(texts("the Текущая система and αβγ 日本"), ["the", "and"]);
    }

    #[test]
    fn punctuation_quotes_and_emphasis_are_stripped() {
        let t = words("(**Teh** \"quick\", l’arbre) well-known -- users' «mot»");
        let got: Vec<&str> = t.iter().map(|w| w.text).collect();
        assert_eq!(
            got,
            ["Teh", "quick", "l’arbre", "well-known", "users", "mot"]
        );
        let text = "(**Teh** x";
        let w = &words(text)[0];
        assert_eq!(&text[w.start..w.end], "Teh");
    }

    #[test]
    fn sentence_starts_are_known() {
        let t = words("Alpha beta. Gamma delta: Epsilon\n- Zeta and 2. Eta");
        assert!(words("the PIDs and SLIs of GOGC's").len() == 3);
        let starts: Vec<(&str, bool)> = t.iter().map(|w| (w.text, w.sentence_start)).collect();
        assert_eq!(
            starts,
            [
                ("Alpha", true),
                ("beta", false),
                ("Gamma", true),
                ("delta", false),
                ("Epsilon", false),
                ("Zeta", true),
                ("and", false),
                ("Eta", true)
            ]
        );
    }

    #[test]
    fn emphasis_is_known() {
        let t = words("an *annotathon* and _two coined_ words, then plain");
        let emph: Vec<(&str, bool)> = t.iter().map(|w| (w.text, w.emphasised)).collect();
        assert_eq!(
            emph,
            [
                ("an", false),
                ("annotathon", true),
                ("and", false),
                ("two", true),
                ("coined", true),
                ("words", false),
                ("then", false),
                ("plain", false)
            ]
        );
    }

    proptest::proptest! {
        // Whatever the text, each token is its own bytes, in order, never
        // overlapping, a word (letters with inner apostrophes and
        // hyphens), and written the same way whether a fast path or the
        // general reading took it.
        #[test]
        fn tokens_are_ordered_slices_of_words(text in "[aAzZé '’.,;:!?()*_«»#1\n-]{0,40}") {
            let mut last_end = 0;
            for t in words(&text) {
                proptest::prop_assert_eq!(&text[t.start..t.end], t.text);
                proptest::prop_assert!(t.start >= last_end);
                proptest::prop_assert!(is_word(t.text), "{:?}", t.text);
                last_end = t.end;
            }
        }
    }

    #[test]
    fn folding_lowers_and_straightens_apostrophes() {
        assert_eq!(fold("L’Arbre"), "l'arbre");
    }
}
