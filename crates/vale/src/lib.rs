//! # koas-vale — Vale style rules, read and run
//!
//! Documentation teams write their style guides as Vale styles: a folder
//! per style, a YAML file per rule (`Google/WordList.yml` is the rule
//! `Google.WordList`). This crate reads a rule as Vale (3.x) documents it
//! and runs it on a document's blocks, giving Vale's alerts (rule, place,
//! message, level, link, replacements). It knows no Markdown and reads no
//! file: the host hands it a rule's text, a document's text and the
//! document's prose blocks ([`Block`]: headings, paragraphs, list items,
//! blockquotes, table cells), with code blanked out as Vale blanks it.
//!
//! What runs ([`load_rule`], [`Rule::check_blocks`]):
//!
//! - `existence`, `substitution`, `capitalization` (`$sentence`,
//!   `$title`, `$lower`, `$upper`, a pattern), `occurrence`,
//!   `repetition`, `consistency`, `conditional`, `metric` (its formula
//!   read by a small checked arithmetic reader) and `readability`, with
//!   every key Vale documents for them;
//! - scopes as Vale's selectors (`heading.h2`, `~blockquote`, `a & b`): a
//!   paragraph is linted whole (`paragraph`), by sentence (`sentence`) and
//!   as `text`; `summary` (paragraphs, list items, blockquotes) and `raw`
//!   (the whole file) after the blocks; what a `consistency` or
//!   `conditional` rule saw in earlier blocks counts in later ones;
//! - `.vale.ini` ([`ValeIni`]: `StylesPath`, `MinAlertLevel`, `Vocab`,
//!   `[glob]` sections with `BasedOnStyles` and each rule's switch);
//! - vocabularies ([`Vocabulary`]: `accept.txt` and `reject.txt`, the
//!   `Vale.Terms` and `Vale.Avoid` rules, accepted entries as exceptions
//!   through [`load_rule_with`]) and Vale's own `Vale.Repetition`
//!   ([`builtin_rule`]);
//! - comment switches ([`CommentSwitches`]: `<!-- vale off -->`, a rule's,
//!   a style's, some matches', `styles = …`).
//!
//! What does not run: `spelling` is read, not run ([`Rule::spelling`]
//! gives its options to the host's speller, as does `Vale.Spelling`);
//! `sequence` (it needs part-of-speech tagging) and `script` (a Tengo
//! script) are named as not run. Every key, scope or extension point a
//! rule has that this crate does not act on is named once when the rule
//! is read ([`Loaded::unsupported`]), never skipped in silence. Sentences
//! and syllables are found by small heuristics where Vale uses trained
//! models: they agree on ordinary prose, not on every abbreviation.
//! Messages are written on one line with runs of spaces made one, as the
//! Vale the style repositories' tests were written with (3.3–3.9) does.
//!
//! What the host does for Vale's results (see `examples/style_fixtures.rs`
//! and `FIXTURES.md`): in the text it gives block rules, code spans'
//! contents as `*` and their backticks as spaces, byte for byte, and link
//! and image targets and emphasis marks out of the prose (spaces keep the
//! offsets); the text as written to `raw` rules ([`Rule::is_raw`]);
//! alerts a comment switch silences ([`CommentSwitches::silences`]) left
//! out, but for `raw` and `summary` rules, which Vale runs with every
//! switch back on.

#![deny(missing_docs)]

mod builtin;
mod comments;
mod ini;
mod prose;
mod rule;
mod styles;
mod vocab;

pub use builtin::builtin_rule;
pub use comments::CommentSwitches;
pub use ini::{IniError, Section, Switch, ValeIni};
pub use rule::{
    load_rule, load_rule_with, Block, DocumentCounts, Level, Loaded, Rule, RuleAlert, RuleError,
    ScopeKind, SpellingOptions, SPELLING_DEFAULT_FILTERS,
};
pub use styles::{glob_matches, Selected, StyleError, Styles, ValeSources, VocabText};
pub use vocab::{VocabError, Vocabulary};

/// The 1-based line and column (in characters) of byte `offset` of
/// `text`, as Vale reports an alert's place. A line ends at `\n`, `\r\n`
/// or a lone `\r` (Vale reads old Mac line ends as line ends too).
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    // An offset inside a character counts from the character's start.
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let bytes = before.as_bytes();
    let mut line = 1;
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let lone_cr = b == b'\r' && text.as_bytes().get(i + 1) != Some(&b'\n');
        if b == b'\n' || lone_cr {
            line += 1;
            start = i + 1;
        }
    }
    (line, before[start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::line_column;

    #[test]
    fn places_count_lines_and_characters_from_one() {
        let text = "# Title\n\nÉtait là. Go!";
        assert_eq!(line_column(text, 0), (1, 1));
        let bang = text.find('!').expect("a bang");
        assert_eq!(line_column(text, bang), (3, 13));
        assert_eq!(line_column(text, 10), (3, 1), "inside `É`");
        assert_eq!(line_column(text, 999), (3, 14));
        assert_eq!(line_column("a\r\nb\rc", 3), (2, 1));
        assert_eq!(line_column("a\r\nb\rc", 5), (3, 1));
    }
}
