//! # koas-vale — Vale style rules, read and run
//!
//! Documentation teams write their style guides as Vale styles: a folder
//! per style, a YAML file per rule (`Google/WordList.yml` is the rule
//! `Google.WordList`). This crate reads a rule as Vale documents it and
//! runs it on a span of text, giving Vale's alerts (rule, place, message,
//! level, link, replacements). It knows no Markdown and reads no file: the
//! host hands it a rule's text and the text to check.
//!
//! Built so far: `.vale.ini` ([`ValeIni`]: `StylesPath`, `MinAlertLevel`,
//! `Vocab`, `[glob]` sections with `BasedOnStyles` and each rule's switch),
//! and the `existence` and `substitution` extension points, with
//! `tokens`, `raw`, `ignorecase`, `nonword`, `exceptions`, `swap`,
//! `message` with `%s`, `level`, `link` and `action`. Every other
//! extension point, and every key this crate does not act on, is named
//! once when the rule is read ([`Loaded::unsupported`]), never skipped in
//! silence.

#![deny(missing_docs)]

mod builtin;
mod comments;
mod ini;
mod prose;
mod rule;
mod vocab;

pub use builtin::builtin_rule;
pub use comments::CommentSwitches;
pub use ini::{IniError, Section, Switch, ValeIni};
pub use rule::{
    load_rule, load_rule_with, Block, DocumentCounts, Level, Loaded, Rule, RuleAlert, RuleError,
    ScopeKind, SpellingOptions, SPELLING_DEFAULT_FILTERS,
};
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
