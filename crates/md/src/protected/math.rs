//! Display math blocks written on their own lines: `$$ … $$` and `\[ … \]`.
//!
//! pulldown-cmark reports `$$…$$` inside one paragraph; this line scanner
//! adds what it does not know (`\[ … \]`) and keeps the conservative rule
//! for an unclosed `$$`. A block never runs past a blank line, a heading or
//! a line another construct owns (LaTeX display math cannot hold a blank
//! line either).
//!
//! * `$$` opens when a line starts with it (after block-quote markers and
//!   indentation); the block closes at the first line that contains `$$`
//!   again (the same line when it also ends with `$$`). Unclosed, it
//!   protects its lines up to the paragraph's end.
//! * `\[` opens when a line starts with it and closes at the first line
//!   ending with `\]`. Unclosed, nothing is protected (`\[` is then most
//!   likely an escaped bracket).

use super::line_flags::{strip_container_prefix, LineFlags};
use crate::line_index::LineIndex;
use koas_review_schema::stage1::LineNo;

/// A math block found on whole lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MathLines {
    /// First line (1-based), the opening delimiter's.
    pub line_start: LineNo,
    /// Last line (inclusive), the closing delimiter's.
    pub line_end: LineNo,
    /// The opening delimiter, `$$` or `\[`.
    pub delimiter: &'static str,
}

/// Finds math blocks on lines that are not `owned` and not `headings`.
pub fn find(index: &LineIndex<'_>, owned: &LineFlags, headings: &LineFlags) -> Vec<MathLines> {
    let count = index.line_count();
    let usable = |l: LineNo| !owned.get(l) && !headings.get(l);
    let content = |l: LineNo| strip_container_prefix(index.line_text(l)).trim_end();
    let mut out = Vec::new();
    let mut line = 1;
    while line <= count {
        if !usable(line) {
            line += 1;
            continue;
        }
        let c = content(line);
        let (delimiter, closes_at): (&'static str, fn(&str) -> bool) =
            if let Some(after) = c.strip_prefix("$$") {
                if c.len() >= 4 && c.ends_with("$$") {
                    out.push(MathLines {
                        line_start: line,
                        line_end: line,
                        delimiter: "$$",
                    });
                    line += 1;
                    continue;
                }
                if after.contains("$$") {
                    // `$$a$$ and text`: inline display math, not a block.
                    line += 1;
                    continue;
                }
                ("$$", |s: &str| s.contains("$$"))
            } else if c.starts_with("\\[") {
                if c.len() >= 4 && c.ends_with("\\]") {
                    out.push(MathLines {
                        line_start: line,
                        line_end: line,
                        delimiter: "\\[",
                    });
                    line += 1;
                    continue;
                }
                ("\\[", |s: &str| s.ends_with("\\]"))
            } else {
                line += 1;
                continue;
            };
        let mut end = line;
        let mut closed = false;
        let mut next = line + 1;
        while next <= count && usable(next) && !index.is_blank(next) {
            end = next;
            if closes_at(content(next)) {
                closed = true;
                break;
            }
            next += 1;
        }
        if closed || delimiter == "$$" {
            out.push(MathLines {
                line_start: line,
                line_end: end,
                delimiter,
            });
        }
        line = end + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Vec<(LineNo, LineNo, &'static str)> {
        let idx = LineIndex::new(text);
        let n = idx.line_count();
        find(&idx, &LineFlags::new(n), &LineFlags::new(n))
            .into_iter()
            .map(|m| (m.line_start, m.line_end, m.delimiter))
            .collect()
    }

    #[test]
    fn dollar_blocks() {
        assert_eq!(run("a\n\n$$\nx = 1\n$$\n\nb\n"), vec![(3, 5, "$$")]);
        assert_eq!(run("$$ x = 1 $$\n"), vec![(1, 1, "$$")]);
        assert_eq!(run("> $$\n> y\n> $$\n"), vec![(1, 3, "$$")]);
        assert_eq!(run("$$a$$ and text\n"), vec![]);
    }

    #[test]
    fn bracket_blocks() {
        assert_eq!(run("\\[\n\\int f\n\\]\n"), vec![(1, 3, "\\[")]);
        assert_eq!(run("\\[ e = mc^2 \\]\n"), vec![(1, 1, "\\[")]);
        assert_eq!(run("\\[note] text\nmore\n\nlater \\]\n"), vec![]);
    }

    #[test]
    fn unclosed_dollars_protect_their_paragraph_only() {
        assert_eq!(
            run("$$\nx\ny\n\n# H\n$$\n"),
            vec![(1, 3, "$$"), (6, 6, "$$")]
        );
    }

    #[test]
    fn stops_at_headings_and_owned_lines() {
        let text = "$$\nx\n# H\n$$\n";
        let idx = LineIndex::new(text);
        let mut headings = LineFlags::new(4);
        headings.set_range(3, 3);
        let got = find(&idx, &LineFlags::new(4), &headings);
        assert_eq!((got[0].line_start, got[0].line_end), (1, 2));
        let mut owned = LineFlags::new(4);
        owned.set_range(1, 4);
        assert!(find(&idx, &owned, &LineFlags::new(4)).is_empty());
    }
}
