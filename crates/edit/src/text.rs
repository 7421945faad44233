//! Byte-exact line model of a Markdown document.
//!
//! A document is held as a list of lines, each line *including* its
//! terminator (`"\n"`, `"\r\n"`, or nothing for a last line without a final
//! newline). Concatenating the lines gives back the original bytes exactly,
//! whatever the line endings, the byte-order mark or the final newline.
//!
//! Ops and hashes see *line content*: a line without its terminator, and for
//! line 1 without the UTF-8 byte-order mark. That keeps `before_hash` and
//! `before_text` independent of CRLF versus LF.

use sha2::{Digest, Sha256};

/// The UTF-8 byte-order mark.
pub const BOM: &str = "\u{feff}";

/// A document split into lines that keep their terminators.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LineBuf {
    lines: Vec<String>,
}

impl LineBuf {
    /// Splits `text` into lines, keeping every byte.
    pub fn parse(text: &str) -> Self {
        LineBuf {
            lines: text.split_inclusive('\n').map(str::to_owned).collect(),
        }
    }

    /// Builds a buffer from lines that already carry their terminators.
    pub fn from_lines(lines: Vec<String>) -> Self {
        LineBuf { lines }
    }

    /// Number of lines (a final newline does not start an extra line).
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when the document has no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// All lines, with terminators.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// Line at 0-based `index`, with its terminator (and the BOM for line 0).
    pub fn raw_line(&self, index: usize) -> Option<&str> {
        self.lines.get(index).map(String::as_str)
    }

    /// True when the document starts with a UTF-8 byte-order mark.
    pub fn has_bom(&self) -> bool {
        self.lines.first().is_some_and(|l| l.starts_with(BOM))
    }

    /// Content of the line at 0-based `index`: no terminator, no BOM.
    pub fn content(&self, index: usize) -> Option<&str> {
        let line = self.lines.get(index)?;
        let body = strip_terminator(line);
        Some(if index == 0 {
            body.strip_prefix(BOM).unwrap_or(body)
        } else {
            body
        })
    }

    /// Terminator of the line at 0-based `index` (`""` for a last line
    /// without a final newline).
    pub fn terminator(&self, index: usize) -> &str {
        self.lines
            .get(index)
            .map(|l| terminator_of(l))
            .unwrap_or("")
    }

    /// The dominant line ending: the terminator of the first terminated
    /// line, or `"\n"` when no line is terminated.
    pub fn eol(&self) -> &'static str {
        match self
            .lines
            .iter()
            .map(|l| terminator_of(l))
            .find(|t| !t.is_empty())
        {
            Some("\r\n") => "\r\n",
            _ => "\n",
        }
    }

    /// True when the last line has no terminator (or the document is empty).
    pub fn lacks_final_newline(&self) -> bool {
        self.lines.last().is_some_and(|l| !l.ends_with('\n'))
    }

    /// The text of 1-based inclusive lines `start..=end`: line contents
    /// joined with `"\n"`, no trailing newline. `None` when out of range.
    /// An empty range (`end < start`, or `0..=0`) yields `""`.
    pub fn target_text(&self, start: usize, end: usize) -> Option<String> {
        if end < start || end == 0 {
            // An empty range (e.g. 0/0: the insertion point at the top).
            return Some(String::new());
        }
        if start == 0 || end > self.len() {
            return None;
        }
        let mut out = String::new();
        for index in (start - 1)..end {
            if index > start - 1 {
                out.push('\n');
            }
            out.push_str(self.content(index)?);
        }
        Some(out)
    }

    /// Byte offset of the start of the line at 0-based `index`
    /// (`index == len()` gives the document length).
    pub fn byte_offset(&self, index: usize) -> usize {
        self.lines.iter().take(index).map(String::len).sum()
    }

    /// Byte offsets of the start of every line, plus the document length.
    pub fn line_offsets(&self) -> Vec<usize> {
        let mut offsets = Vec::with_capacity(self.lines.len() + 1);
        let mut at = 0;
        offsets.push(0);
        for line in &self.lines {
            at += line.len();
            offsets.push(at);
        }
        offsets
    }

    /// Replaces `old_len` lines starting at 0-based `start` by `new_lines`.
    /// Returns the removed lines. The caller guarantees the range exists.
    pub fn splice(&mut self, start: usize, old_len: usize, new_lines: Vec<String>) -> Vec<String> {
        let end = (start + old_len).min(self.lines.len());
        let start = start.min(end);
        self.lines.splice(start..end, new_lines).collect()
    }

    /// The document, byte for byte: the lines concatenated.
    pub fn to_text(&self) -> String {
        self.lines.concat()
    }

    /// `sha256:` hash of the document bytes, without building the text.
    pub fn hash(&self) -> String {
        let mut hasher = Sha256::new();
        for line in &self.lines {
            hasher.update(line.as_bytes());
        }
        koas_kernel_api::hash::format_sha256(&hasher.finalize())
    }
}

/// The line without its `"\n"` or `"\r\n"` terminator.
pub fn strip_terminator(line: &str) -> &str {
    let body = line.strip_suffix('\n').unwrap_or(line);
    if body.len() < line.len() {
        body.strip_suffix('\r').unwrap_or(body)
    } else {
        body
    }
}

/// The terminator of a line: `"\r\n"`, `"\n"` or `""`.
pub fn terminator_of(line: &str) -> &'static str {
    if line.ends_with("\r\n") {
        "\r\n"
    } else if line.ends_with('\n') {
        "\n"
    } else {
        ""
    }
}

/// Normalizes CRLF (and lone CR) in op-supplied text to LF.
pub fn normalize_newlines(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// True when every character of `text` is whitespace.
pub fn is_blank(text: &str) -> bool {
    text.chars().all(char::is_whitespace)
}

/// Escapes text that ops, the ledger or a model wrote for a Markdown view
/// (the report's cells, the annotated document's alert blocks), so that
/// it is shown as written and never rendered: no HTML (`<script>`,
/// `<img onerror=…>`), no image or link (`![x](http://…)`,
/// `[x](javascript:…)`), no emphasis, code or table cell breaks, and no
/// heading, quote or list started by a line of it.
///
/// - `&`, `<`, `>` become `&amp;`, `&lt;`, `&gt;`;
/// - `\`, `` ` ``, `*`, `_`, `[`, `]`, `~`, `|` get a backslash;
/// - at the start of each line (after its indentation), a `#`, `-`, `+`
///   or `=` gets a backslash, and so does the `.` or `)` after a number
///   (`1.`, `2)`), which would start an ordered list.
///
/// Newlines are kept (a table cell replaces them). The result is meant to
/// be written once into Markdown: escaping it again escapes the escapes
/// (`&` → `&amp;` → `&amp;amp;`), it is not idempotent. Letters, accents,
/// quotes and apostrophes are left alone. Bare URLs are left too: a
/// viewer may make them links, but never loads them.
pub fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let body = line.trim_start_matches([' ', '\t']);
        out.push_str(&line[..line.len() - body.len()]);
        let digits = body.bytes().take_while(u8::is_ascii_digit).count();
        let after_digits = body[digits..].chars().next();
        if matches!(body.chars().next(), Some('#' | '-' | '+' | '=')) {
            out.push('\\');
        } else if digits > 0 && matches!(after_digits, Some('.' | ')')) {
            out.push_str(&body[..digits]);
            out.push('\\');
            push_escaped_inline(&mut out, &body[digits..]);
            continue;
        }
        push_escaped_inline(&mut out, body);
    }
    out
}

/// [`escape_markdown`] for text that is not at the start of a line (a
/// table cell, a heading after its `### `): the same characters are
/// escaped, but no block marker can start there, so the line starts are
/// left as written (`1. Introduction`, a version `0.1.0`, not `1\.`).
pub fn escape_markdown_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    push_escaped_inline(&mut out, text);
    out
}

fn push_escaped_inline(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '~' | '|' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_kernel_api::hash::sha256;

    #[test]
    fn round_trips_every_byte() {
        for text in [
            "",
            "a",
            "a\n",
            "a\r\nb\r\n",
            "a\nb",
            "\u{feff}title\r\nbody",
            "é\n\n\nü",
        ] {
            assert_eq!(LineBuf::parse(text).to_text(), text);
        }
    }

    #[test]
    fn content_strips_terminator_and_bom() {
        let buf = LineBuf::parse("\u{feff}Title\r\nBody\nlast");
        assert_eq!(buf.len(), 3);
        assert_eq!(buf.content(0), Some("Title"));
        assert_eq!(buf.content(1), Some("Body"));
        assert_eq!(buf.content(2), Some("last"));
        assert_eq!(buf.terminator(0), "\r\n");
        assert_eq!(buf.terminator(2), "");
        assert!(buf.has_bom());
        assert!(buf.lacks_final_newline());
        assert_eq!(buf.eol(), "\r\n");
    }

    #[test]
    fn target_text_joins_contents_with_lf() {
        let buf = LineBuf::parse("a\r\nb\r\nc\r\n");
        assert_eq!(buf.target_text(1, 2).as_deref(), Some("a\nb"));
        assert_eq!(buf.target_text(3, 3).as_deref(), Some("c"));
        assert_eq!(buf.target_text(0, 1), None);
        assert_eq!(buf.target_text(0, 0).as_deref(), Some(""));
        assert_eq!(buf.target_text(2, 4), None);
        assert_eq!(buf.target_text(3, 2).as_deref(), Some(""));
    }

    #[test]
    fn hash_matches_text_hash() {
        let text = "x\r\ny\n";
        assert_eq!(LineBuf::parse(text).hash(), sha256(text));
    }

    #[test]
    fn markdown_escaping_neutralizes_html_links_and_formatting() {
        assert_eq!(
            escape_markdown("<script>alert(1)</script> & <img src=x onerror=alert(1)>"),
            "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt;"
        );
        assert_eq!(
            escape_markdown("![x](http://tracker/p.png) [y](javascript:alert(1))"),
            "!\\[x\\](http://tracker/p.png) \\[y\\](javascript:alert(1))"
        );
        assert_eq!(
            escape_markdown(r"a\b `c` *d* _e_ ~~f~~ g|h"),
            r"a\\b \`c\` \*d\* \_e\_ \~\~f\~\~ g\|h"
        );
    }

    #[test]
    fn markdown_escaping_guards_line_starts() {
        assert_eq!(escape_markdown("# title"), r"\# title");
        assert_eq!(escape_markdown("> quote"), "&gt; quote");
        assert_eq!(escape_markdown("- item"), r"\- item");
        assert_eq!(escape_markdown("+ item"), r"\+ item");
        assert_eq!(escape_markdown("==="), r"\===");
        assert_eq!(escape_markdown("12. item"), r"12\. item");
        assert_eq!(escape_markdown("3) item"), r"3\) item");
        assert_eq!(escape_markdown("* item"), r"\* item");
        // Every line, after its indentation; not in the middle of a line.
        assert_eq!(
            escape_markdown("ok\n  # h\nsee 1. - fine + #1 = 2"),
            "ok\n  \\# h\nsee 1. - fine + #1 = 2"
        );
        assert_eq!(escape_markdown_inline("1. Introduction"), "1. Introduction");
        assert_eq!(escape_markdown_inline("# x <b>"), "# x &lt;b&gt;");
    }

    #[test]
    fn markdown_escaping_leaves_prose_alone() {
        for prose in [
            "Le débit du système est élevé, n'est-ce pas ? « Oui » — dit-il.",
            "The user's data isn't lost: \"quoted\" (fine), 50% / 3.5 = ok!",
            "",
        ] {
            assert_eq!(escape_markdown(prose), prose);
            assert_eq!(escape_markdown_inline(prose), prose);
        }
        // Not idempotent, by design: the output is written once.
        assert_eq!(escape_markdown(&escape_markdown("a&b")), "a&amp;amp;b");
    }

    #[test]
    fn offsets_and_splice() {
        let mut buf = LineBuf::parse("a\nbb\nccc\n");
        assert_eq!(buf.line_offsets(), vec![0, 2, 5, 9]);
        assert_eq!(buf.byte_offset(2), 5);
        let removed = buf.splice(1, 1, vec!["X\n".into(), "Y\n".into()]);
        assert_eq!(removed, vec!["bb\n".to_string()]);
        assert_eq!(buf.to_text(), "a\nX\nY\nccc\n");
    }
}
