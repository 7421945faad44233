//! What an edit does, judged from its text before and after, whatever it
//! says it is: which words it changes and how ([`EditClass`]), which
//! polarity words it adds or removes ([`PolarityChange`]), how it changes
//! the Markdown structure of the blocks around it
//! ([`koas_md::shape::ShapeChange`]), and which invisible or bidirectional
//! characters it writes ([`invisible_char`]).
//!
//! The guards ([`crate::guards`]) turn these facts into what happens to
//! the op: a kind corrected, attention and a note, a refusal.

use crate::lang::Language;
use crate::lexicon::{lexicon, words_of, Lexicon, Polarity};
use crate::text::LineBuf;
use koas_md::shape::{compare, shape_of, ShapeChange};
use similar::{capture_diff_slices, Algorithm, DiffOp};
use std::ops::Range;

/// How far an edit reaches into the words of a text, from the least to
/// the most: a kind that claims less than its effect is corrected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EditClass {
    /// Only whitespace changes.
    Spacing,
    /// Only the case of letters changes.
    Capitalization,
    /// Only punctuation changes (and maybe case or spacing).
    Punctuation,
    /// Small changes inside words, the same words around them: each
    /// changed word is one or two letters away from the old one, or two
    /// words are joined or split, or a doubled word is removed.
    Typo,
    /// Function words (articles, prepositions, pronouns, auxiliaries)
    /// added, removed or swapped, or a word's ending changed (agreement,
    /// conjugation), in a small part of the text.
    Grammar,
    /// Other words replaced, added or removed: the text says something
    /// else, or says it differently.
    Rewrite,
}

impl EditClass {
    /// The op kind that names this class (`style` for a rewrite).
    pub fn kind(self) -> &'static str {
        match self {
            EditClass::Spacing => "spacing",
            EditClass::Capitalization => "capitalization",
            EditClass::Punctuation => "punctuation",
            EditClass::Typo => "typo",
            EditClass::Grammar => "grammar",
            EditClass::Rewrite => "style",
        }
    }

    /// The class an op kind claims, for the kinds that claim a small
    /// change (`typo`, `grammar`…, English and French names); `None` for
    /// the others (`style`, `terminology`…), which claim no bound.
    pub fn claimed_by(kind: &str) -> Option<EditClass> {
        Some(match kind.trim().to_lowercase().as_str() {
            "spacing" | "whitespace" | "espacement" | "espaces" => EditClass::Spacing,
            "capitalization" | "capitalisation" | "case" | "casse" | "majuscules" => {
                EditClass::Capitalization
            }
            "punctuation" | "ponctuation" => EditClass::Punctuation,
            "typo" | "typos" | "spelling" | "orthographe" | "coquille" => EditClass::Typo,
            "grammar" | "grammaire" | "agreement" | "accord" | "conjugation" | "conjugaison" => {
                EditClass::Grammar
            }
            _ => return None,
        })
    }
}

/// A polarity word (or phrase) class whose words changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolarityChange {
    /// Negation, modal, quantifier, comparison or direction.
    pub class: Polarity,
    /// Words of that class the edit removed.
    pub removed: Vec<String>,
    /// Words of that class the edit added.
    pub added: Vec<String>,
}

impl PolarityChange {
    /// What a person reads in the note: "negation removed: 'not'",
    /// "modal changed: 'must' → 'may'".
    pub fn describe(&self) -> String {
        let list = |words: &[String]| {
            words
                .iter()
                .map(|w| format!("'{w}'"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let name = self.class.name();
        match (self.removed.is_empty(), self.added.is_empty()) {
            (false, false) => format!(
                "{name} changed: {} → {}",
                list(&self.removed),
                list(&self.added)
            ),
            (false, true) => format!("{name} removed: {}", list(&self.removed)),
            _ => format!("{name} added: {}", list(&self.added)),
        }
    }
}

/// The lexicons an edit is judged with: the document's language, and the
/// replaced text's when it is confidently another (a French quotation in
/// an English document).
pub fn lexicons_for(document: Language, replaced: &str) -> Vec<&'static Lexicon> {
    let mut out = vec![lexicon(document)];
    if let Some(other) = crate::lang::detect_confident(replaced).filter(|l| *l != document) {
        out.push(lexicon(other));
    }
    out
}

fn polarity_of(lexicons: &[&Lexicon], words: &[String]) -> Vec<(Polarity, String)> {
    let mut all: Vec<(Polarity, String)> = Vec::new();
    for lexicon in lexicons {
        for found in lexicon.polarity_words(words) {
            if !all.contains(&found) || lexicons.len() == 1 {
                all.push(found);
            }
        }
    }
    all
}

/// The polarity words `new` adds and removes compared with `old`, by
/// class, and the negating prefixes a word gained or lost ("safe" →
/// "unsafe"). A spelling fix that makes a polarity word appear ("nto" →
/// "not") counts too: "nto" may have meant "into".
pub fn polarity_changes(old: &str, new: &str, lexicons: &[&Lexicon]) -> Vec<PolarityChange> {
    let (ow, nw) = (words_of(old), words_of(new));
    let before = polarity_of(lexicons, &ow);
    let after = polarity_of(lexicons, &nw);
    let mut removed = before.clone();
    let mut added = Vec::new();
    for found in after {
        if let Some(at) = removed.iter().position(|f| *f == found) {
            removed.remove(at);
        } else {
            added.push(found);
        }
    }
    // A negating prefix gained or lost on a word the diff pairs.
    for op in capture_diff_slices(Algorithm::Myers, &ow, &nw) {
        if let DiffOp::Replace {
            old_index,
            old_len,
            new_index,
            new_len,
        } = op
        {
            for (a, b) in ow[old_index..old_index + old_len]
                .iter()
                .zip(&nw[new_index..new_index + new_len])
            {
                for lexicon in lexicons {
                    if lexicon.negating_prefix(a, b).is_some() {
                        added.push((Polarity::Negation, b.clone()));
                        break;
                    }
                    if lexicon.negating_prefix(b, a).is_some() {
                        removed.push((Polarity::Negation, a.clone()));
                        break;
                    }
                }
            }
        }
    }
    let mut out: Vec<PolarityChange> = Vec::new();
    for (class, word, is_added) in removed
        .into_iter()
        .map(|(c, w)| (c, w, false))
        .chain(added.into_iter().map(|(c, w)| (c, w, true)))
    {
        let entry = match out.iter_mut().position(|c| c.class == class) {
            Some(at) => &mut out[at],
            None => {
                out.push(PolarityChange {
                    class,
                    removed: Vec::new(),
                    added: Vec::new(),
                });
                let last = out.len() - 1;
                &mut out[last]
            }
        };
        let list = if is_added {
            &mut entry.added
        } else {
            &mut entry.removed
        };
        if !list.contains(&word) {
            list.push(word);
        }
    }
    out.sort_by_key(|c| c.class);
    out
}

/// Edit distance counting an adjacent transposition as one edit (optimal
/// string alignment), on characters.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// One or two letters apart, relative to the word's length: a misspelling
/// and its fix.
fn close(a: &str, b: &str) -> bool {
    let len = a.chars().count().max(b.chars().count());
    let limit = match len {
        0..=4 => 1,
        5..=9 => 2,
        _ => 3,
    };
    distance(a, b) <= limit
}

/// The same word with another ending (agreement, conjugation, plural):
/// a shared beginning of four letters or more (the whole shorter word
/// when it is shorter), and an ending of at most four letters changed.
fn inflection(a: &str, b: &str) -> bool {
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let shorter = a.chars().count().min(b.chars().count());
    let longer = a.chars().count().max(b.chars().count());
    shorter >= 2 && common >= shorter.min(4) && longer - common <= 4
}

/// The class of one changed stretch of words (`a` replaced by `b`, either
/// side possibly empty).
fn hunk_class(a: &[String], b: &[String], lexicons: &[&Lexicon], repeated: bool) -> EditClass {
    let function = |w: &String| lexicons.iter().any(|l| l.is_function_word(w));
    let joined = |ws: &[String]| ws.concat().replace('-', "");
    if !a.is_empty() && !b.is_empty() && joined(a) == joined(b) {
        // "a lot" / "alot", "set up" / "setup", "e-mail" / "email".
        return EditClass::Typo;
    }
    if a.len() == b.len() {
        let mut class = EditClass::Typo;
        for (x, y) in a.iter().zip(b) {
            let pair = if close(x, y) {
                EditClass::Typo
            } else if (function(x) && function(y)) || inflection(x, y) {
                EditClass::Grammar
            } else {
                EditClass::Rewrite
            };
            class = class.max(pair);
        }
        return class;
    }
    if b.is_empty() && repeated {
        // "the the" → "the".
        return EditClass::Typo;
    }
    // Unequal stretches: pair each word of the shorter side with a close or
    // inflected word of the longer; what is left must be function words.
    let (short, long) = if a.len() < b.len() { (a, b) } else { (b, a) };
    let mut left: Vec<&String> = long.iter().collect();
    for w in short {
        match left.iter().position(|x| close(w, x) || inflection(w, x)) {
            Some(at) => {
                left.remove(at);
            }
            None if function(w) => {}
            None => return EditClass::Rewrite,
        }
    }
    if left.into_iter().all(function) {
        EditClass::Grammar
    } else {
        EditClass::Rewrite
    }
}

fn non_word_chars(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_alphanumeric() && !c.is_whitespace())
        .collect()
}

/// How far the change from `old` to `new` reaches into their words (see
/// [`EditClass`]). `old` and `new` are whole lines, so the words around
/// the change are there to compare.
pub fn edit_class(old: &str, new: &str, lexicons: &[&Lexicon]) -> EditClass {
    let spaced = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    if spaced(old) == spaced(new) {
        return EditClass::Spacing;
    }
    let (ow, nw) = (words_of(old), words_of(new));
    if ow == nw {
        let cased = |s: &str| -> Vec<String> {
            s.split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect()
        };
        return if non_word_chars(old) != non_word_chars(new) || cased(old) == cased(new) {
            EditClass::Punctuation
        } else {
            EditClass::Capitalization
        };
    }
    let mut class = EditClass::Typo;
    let mut changed = 0usize;
    for op in capture_diff_slices(Algorithm::Myers, &ow, &nw) {
        let (a, b) = match op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete {
                old_index, old_len, ..
            } => (old_index..old_index + old_len, 0..0),
            DiffOp::Insert {
                new_index, new_len, ..
            } => (0..0, new_index..new_index + new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (
                old_index..old_index + old_len,
                new_index..new_index + new_len,
            ),
        };
        let repeated = is_repeated(&ow, a.clone());
        changed += a.len().max(b.len());
        class = class.max(hunk_class(&ow[a], &nw[b], lexicons, repeated));
    }
    // A grammar fix changes a small part of the text; one that changes
    // most of its words rewrites it.
    let words = ow.len().max(nw.len()).max(1);
    if class == EditClass::Grammar && changed * 2 > words && changed > 2 {
        class = EditClass::Rewrite;
    }
    class
}

/// True when the words `range` of `words` repeat the word just before or
/// after them ("the the").
fn is_repeated(words: &[String], range: Range<usize>) -> bool {
    if range.len() != 1 {
        return false;
    }
    let w = &words[range.start];
    (range.start > 0 && &words[range.start - 1] == w) || words.get(range.end) == Some(w)
}

/// An invisible or bidirectional-control character: it changes what a
/// text says or how it is displayed without being seen (a direction
/// override reverses what follows, a zero-width space splits a word for a
/// search). Its name for messages, or `None` for any other character.
pub fn invisible_char(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{00AD}' => "SOFT HYPHEN",
        '\u{034F}' => "COMBINING GRAPHEME JOINER",
        '\u{061C}' => "ARABIC LETTER MARK",
        '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' => "HANGUL FILLER",
        '\u{180E}' => "MONGOLIAN VOWEL SEPARATOR",
        '\u{200B}' => "ZERO WIDTH SPACE",
        '\u{200C}' => "ZERO WIDTH NON-JOINER",
        '\u{200D}' => "ZERO WIDTH JOINER",
        '\u{200E}' => "LEFT-TO-RIGHT MARK",
        '\u{200F}' => "RIGHT-TO-LEFT MARK",
        '\u{2028}' => "LINE SEPARATOR",
        '\u{2029}' => "PARAGRAPH SEPARATOR",
        '\u{202A}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202B}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202C}' => "POP DIRECTIONAL FORMATTING",
        '\u{202D}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202E}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2060}' => "WORD JOINER",
        '\u{2061}'..='\u{2064}' => "INVISIBLE MATHEMATICAL OPERATOR",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{FEFF}' => "ZERO WIDTH NO-BREAK SPACE (BOM)",
        '\u{FFF9}'..='\u{FFFB}' => "INTERLINEAR ANNOTATION",
        '\u{E0000}'..='\u{E007F}' => "TAG CHARACTER",
        _ => return None,
    })
}

/// Pictographs an emoji sequence joins with a zero-width joiner (👩‍💻).
fn is_pictograph(c: char) -> bool {
    matches!(c, '\u{2600}'..='\u{27BF}' | '\u{2B00}'..='\u{2BFF}' | '\u{1F000}'..='\u{1FAFF}')
}

/// The first invisible or bidirectional character of `text` that
/// `replaced` does not hold (an edit may keep the ones that were there),
/// with its byte offset and name. A zero-width joiner between two
/// pictographs (an emoji sequence) is allowed, and so is a variation
/// selector (not listed).
pub fn new_invisible_char(text: &str, replaced: &str) -> Option<(usize, char, &'static str)> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    chars.iter().enumerate().find_map(|(i, &(at, c))| {
        let name = invisible_char(c)?;
        if replaced.contains(c) {
            return None;
        }
        if c == '\u{200D}' {
            let before = i.checked_sub(1).and_then(|j| chars.get(j)).map(|x| x.1);
            // Skin tones and variation selectors sit between.
            let after = chars[i + 1..]
                .iter()
                .map(|x| x.1)
                .find(|c| !matches!(c, '\u{FE00}'..='\u{FE0F}'));
            let before = before
                .filter(|c| !matches!(c, '\u{FE00}'..='\u{FE0F}'))
                .or_else(|| {
                    chars[..i]
                        .iter()
                        .rev()
                        .map(|x| x.1)
                        .find(|c| !matches!(c, '\u{FE00}'..='\u{FE0F}'))
                });
            if before.is_some_and(is_pictograph) && after.is_some_and(is_pictograph) {
                return None;
            }
        }
        Some((at, c, name))
    })
}

/// The lines around a change whose Markdown shape is compared: from the
/// top-level block before the first changed line to the top-level block
/// after the last one (a sentence followed by a new `|---|` row becomes a
/// table header; a line that loses its blank neighbour joins a paragraph).
/// A text cut at a top-level block parses on its own as in the document.
#[derive(Debug, Clone)]
pub struct Blocks {
    /// Top-level block line ranges (0-based, end excluded), in order.
    ranges: Vec<Range<usize>>,
}

impl Blocks {
    /// The top-level blocks of `text`.
    pub fn of(text: &str) -> Blocks {
        Blocks {
            ranges: koas_md::shape::top_level_blocks(text),
        }
    }

    /// The window of lines (0-based, end excluded) around the planned
    /// lines `start..end` (an insertion when empty) of a document of
    /// `len` lines.
    pub fn window(&self, start: usize, end: usize, len: usize) -> Range<usize> {
        // The block holding (or just before) the first line, then one more.
        let first = self.ranges.partition_point(|r| r.end <= start);
        let from = first.saturating_sub(1);
        let from_line = self.ranges.get(from).map_or(0, |r| r.start.min(start));
        // The block holding (or just after) the last line, then one more.
        let last = self
            .ranges
            .partition_point(|r| r.start < end.max(start + 1));
        let to_line = self
            .ranges
            .get(last)
            .map_or(len, |r| r.end.max(end))
            .min(len);
        from_line.min(start)..to_line.max(end).min(len)
    }
}

/// The shape changes of replacing the planned lines `start..start + old`
/// of `doc` with `new` (lines with terminators), judged on the window of
/// blocks around them.
pub fn structure_changes(
    doc: &LineBuf,
    blocks: &Blocks,
    start: usize,
    old: usize,
    new: &[String],
) -> Vec<ShapeChange> {
    let lines = doc.lines();
    let window = blocks.window(start, start + old, lines.len());
    let before: String = lines[window.clone()].concat();
    let mut after = String::with_capacity(before.len() + 64);
    for line in &lines[window.start..start] {
        after.push_str(line);
    }
    for line in new {
        after.push_str(line);
    }
    for line in &lines[(start + old).min(window.end)..window.end] {
        after.push_str(line);
    }
    let at_top = window.start == 0;
    compare(&shape_of(&before, at_top), &shape_of(&after, at_top))
}

/// The shape changes of the changed lines alone, `old` and `new` each
/// parsed on its own. A change recorded silent must have none: the host
/// checks it on an outcome before recording it, and the apply engine adds
/// these to the window's so that both agree.
pub fn local_structure_changes(old: &str, new: &str) -> Vec<ShapeChange> {
    compare(&shape_of(old, false), &shape_of(new, false))
}

#[cfg(test)]
mod tests;
