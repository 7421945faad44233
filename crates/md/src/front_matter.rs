//! Front matter detection: a YAML (`---`) or TOML (`+++`) block opening on
//! line 1 and closed by its delimiter.
//!
//! Rules (documented in `docs/artifacts.md`):
//! * the opening line is exactly `---` or `+++` (trailing spaces allowed);
//! * YAML closes at a line `---` or `...`, TOML at a line `+++`;
//! * an unclosed block is not front matter (a `---` is then a thematic
//!   break);
//! * as in pulldown-cmark, a YAML opener directly followed by a blank line
//!   is a thematic break, not front matter.

use crate::line_index::LineIndex;
use koas_review_schema::stage1::{FrontMatterFormat, LineNo};

/// A detected front matter block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrontMatterBlock {
    /// YAML (`---`) or TOML (`+++`), from the opening delimiter.
    pub format: FrontMatterFormat,
    /// The closing delimiter's line (the block is `1..=line_end`).
    pub line_end: LineNo,
    /// Byte offset just after the closing line's ending: where the Markdown
    /// body starts.
    pub body_start: usize,
}

fn is_delimiter(line: &str, delim: &str) -> bool {
    line.trim_end_matches([' ', '\t']) == delim
}

/// Where the Markdown body of `index`'s text starts: after `front`, its
/// front matter block ([`detect`]), else after the BOM. Every reader of
/// the body uses this, so that their offsets agree.
pub fn body_start(index: &LineIndex<'_>, front: Option<&FrontMatterBlock>) -> usize {
    front.map_or(index.bom_len(), |f| f.body_start)
}

/// Finds the front matter block of an indexed document, if any.
pub fn detect(index: &LineIndex<'_>) -> Option<FrontMatterBlock> {
    let first = index.line_text(1);
    let (format, closers): (FrontMatterFormat, &[&str]) = if is_delimiter(first, "---") {
        (FrontMatterFormat::Yaml, &["---", "..."])
    } else if is_delimiter(first, "+++") {
        (FrontMatterFormat::Toml, &["+++"])
    } else {
        return None;
    };
    let count = index.line_count();
    if format == FrontMatterFormat::Yaml && count >= 2 && index.is_blank(2) {
        return None;
    }
    (2..=count)
        .find(|&line| {
            let text = index.line_text(line);
            closers.iter().any(|c| is_delimiter(text, c))
        })
        .map(|line_end| FrontMatterBlock {
            format,
            line_end,
            body_start: index.line_end_with_ending(line_end),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(text: &str) -> Option<FrontMatterBlock> {
        detect(&LineIndex::new(text))
    }

    #[test]
    fn yaml_closed_by_dashes_or_dots() {
        let b = fm("---\ntitle: x\n---\n# H\n").expect("yaml");
        assert_eq!(b.format, FrontMatterFormat::Yaml);
        assert_eq!(b.line_end, 3);
        assert_eq!(b.body_start, "---\ntitle: x\n---\n".len());
        assert_eq!(fm("---\na: 1\n...\n").map(|b| b.line_end), Some(3));
    }

    #[test]
    fn toml_and_bom_and_crlf() {
        let b = fm("\u{feff}+++\r\ntitle = \"x\"\r\n+++\r\nbody").expect("toml");
        assert_eq!(b.format, FrontMatterFormat::Toml);
        assert_eq!(b.line_end, 3);
        assert_eq!(
            b.body_start,
            "\u{feff}+++\r\ntitle = \"x\"\r\n+++\r\n".len()
        );
    }

    #[test]
    fn only_front_matter_without_final_newline() {
        let b = fm("---\nk: v\n---").expect("yaml");
        assert_eq!(b.line_end, 3);
        assert_eq!(b.body_start, "---\nk: v\n---".len());
    }

    #[test]
    fn not_front_matter() {
        assert_eq!(fm("---\nunclosed: yes\n"), None);
        assert_eq!(fm("text\n---\na\n---\n"), None);
        assert_eq!(fm("---\n\nparagraph\n---\n"), None);
        assert_eq!(fm(" ---\na: 1\n---\n"), None);
        assert_eq!(fm("+++\na = 1\n---\n"), None);
        assert_eq!(fm(""), None);
    }
}
