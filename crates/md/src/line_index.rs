//! Byte offset ↔ 1-based line mapping, handling LF, CRLF and a UTF-8 BOM.
//!
//! A line ends at `\n`; a `\r` just before it belongs to the line ending.
//! Line 1 starts after the BOM, when there is one. The last line counts even
//! without a final line ending; an empty document (or a lone BOM) has no
//! lines.

use koas_kernel_api::hash::sha256;
use koas_review_schema::stage1::LineNo;

/// The UTF-8 byte-order mark; skipped before line 1 when the text starts
/// with it.
pub const BOM: &str = "\u{feff}";

/// Line boundaries of one document.
#[derive(Debug, Clone)]
pub struct LineIndex<'a> {
    text: &'a str,
    bom_len: usize,
    /// Byte offset where each line starts (index 0 = line 1).
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    /// Indexes `text` in one pass over its bytes.
    pub fn new(text: &'a str) -> Self {
        let bom_len = if text.starts_with(BOM) { BOM.len() } else { 0 };
        let bytes = text.as_bytes();
        let mut starts = Vec::with_capacity(bytes.len() / 40 + 1);
        if bytes.len() > bom_len {
            starts.push(bom_len);
            // A newline that ends the text starts no line.
            let body = &bytes[..bytes.len() - 1];
            starts.extend(memchr::memchr_iter(b'\n', &body[bom_len..]).map(|i| bom_len + i + 1));
        }
        LineIndex {
            text,
            bom_len,
            starts,
        }
    }

    /// The indexed text, BOM included.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// Length of the BOM (3 or 0).
    pub fn bom_len(&self) -> usize {
        self.bom_len
    }

    /// Number of lines; 0 for an empty text or a lone BOM.
    pub fn line_count(&self) -> LineNo {
        LineNo::try_from(self.starts.len()).unwrap_or(LineNo::MAX)
    }

    fn slot(&self, line: LineNo) -> Option<usize> {
        let i = usize::try_from(line).ok()?.checked_sub(1)?;
        (i < self.starts.len()).then_some(i)
    }

    /// Byte offset where `line` starts; the text's length past the last line.
    pub fn line_start(&self, line: LineNo) -> usize {
        match self.slot(line) {
            Some(i) => self.starts[i],
            None if line == 0 => self.bom_len,
            None => self.text.len(),
        }
    }

    /// Byte offset just after `line`'s line ending (the start of the next
    /// line, or the end of the text).
    pub fn line_end_with_ending(&self, line: LineNo) -> usize {
        match self.slot(line) {
            Some(i) => self.starts.get(i + 1).copied().unwrap_or(self.text.len()),
            None if line == 0 => self.bom_len,
            None => self.text.len(),
        }
    }

    /// Byte offset of the end of `line`'s content (before `\r\n` or `\n`).
    pub fn line_content_end(&self, line: LineNo) -> usize {
        let start = self.line_start(line);
        let mut end = self.line_end_with_ending(line);
        let bytes = self.text.as_bytes();
        if end > start && bytes[end - 1] == b'\n' {
            end -= 1;
            if end > start && bytes[end - 1] == b'\r' {
                end -= 1;
            }
        }
        end
    }

    /// The content of `line`, without its line ending (empty when out of
    /// range).
    pub fn line_text(&self, line: LineNo) -> &'a str {
        // What `line_start..line_content_end` gives, in one lookup: the
        // checks read every line many times.
        let Some(i) = self.slot(line) else {
            return "";
        };
        let start = self.starts[i];
        let end = self.starts.get(i + 1).copied().unwrap_or(self.text.len());
        let line = self.text.get(start..end).unwrap_or("");
        match line.strip_suffix('\n') {
            Some(content) => content.strip_suffix('\r').unwrap_or(content),
            None => line,
        }
    }

    /// The line ending of `line`: `"\n"`, `"\r\n"` or `""` for a last line
    /// without one.
    pub fn line_ending(&self, line: LineNo) -> &'a str {
        let (s, e) = (self.line_content_end(line), self.line_end_with_ending(line));
        self.text.get(s..e).unwrap_or("")
    }

    /// `true` when `line` holds only spaces and tabs (or nothing).
    pub fn is_blank(&self, line: LineNo) -> bool {
        self.line_text(line)
            .bytes()
            .all(|b| b == b' ' || b == b'\t')
    }

    /// The 1-based line holding byte `offset`. Offsets inside the BOM map to
    /// line 1, offsets at or past the end to the last line (1 for an empty
    /// document).
    pub fn line_of(&self, offset: usize) -> LineNo {
        let i = match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(0) => 0,
            Err(i) => i - 1,
        };
        LineNo::try_from(i + 1).unwrap_or(LineNo::MAX)
    }

    /// The line holding the last byte of the range `start..end` (the line of
    /// `start` when the range is empty).
    pub fn last_line_of(&self, start: usize, end: usize) -> LineNo {
        self.line_of(end.saturating_sub(1).max(start))
    }

    /// The 1-based column of byte `offset` in its line, counted in chars.
    /// An offset inside a char counts that char.
    pub fn column_of(&self, offset: usize) -> u32 {
        let start = self.line_start(self.line_of(offset));
        let upto = offset.clamp(start, self.text.len());
        let chars = self.text.as_bytes()[start..upto]
            .iter()
            .filter(|&&b| (b & 0xC0) != 0x80)
            .count();
        u32::try_from(chars + 1).unwrap_or(u32::MAX)
    }

    /// The text of lines `start..=end` without the last line's ending.
    pub fn lines_text(&self, start: LineNo, end: LineNo) -> &'a str {
        let (s, e) = (self.line_start(start), self.line_content_end(end));
        if e < s {
            return "";
        }
        self.text.get(s..e).unwrap_or("")
    }

    /// The *line hash* of lines `start..=end`: `sha256:` of the bytes from
    /// the start of `start` to the end of `end`, inner line endings kept,
    /// the last line's ending excluded.
    pub fn line_hash(&self, start: LineNo, end: LineNo) -> String {
        sha256(self.lines_text(start, end).as_bytes())
    }
}

/// Computes columns for offsets visited in increasing order in linear
/// time overall (a long line with many spans stays linear).
#[derive(Debug, Clone)]
pub struct ColumnCursor {
    line: LineNo,
    offset: usize,
    column: u32,
}

impl Default for ColumnCursor {
    fn default() -> Self {
        Self::new()
    }
}

impl ColumnCursor {
    /// A cursor before the first line.
    pub fn new() -> Self {
        ColumnCursor {
            line: 0,
            offset: 0,
            column: 1,
        }
    }

    /// `(line, column)` of the char that holds byte `offset`. Fast when
    /// offsets come in increasing order; correct in any order.
    pub fn locate(&mut self, index: &LineIndex<'_>, offset: usize) -> (LineNo, u32) {
        let text = index.text();
        let mut offset = offset.min(text.len());
        while offset > 0 && !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = index.line_of(offset);
        if line != self.line || offset < self.offset {
            self.line = line;
            self.offset = index.line_start(line).min(offset);
            self.column = 1;
        }
        let added = text.as_bytes()[self.offset..offset]
            .iter()
            .filter(|&&b| (b & 0xC0) != 0x80)
            .count();
        self.column = self
            .column
            .saturating_add(u32::try_from(added).unwrap_or(u32::MAX));
        self.offset = offset;
        (line, self.column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The line starts are those of a byte-by-byte reading: after the
        /// BOM, then after every newline that does not end the text.
        #[test]
        fn line_starts_are_those_of_a_byte_by_byte_reading(
            text in "(\u{feff})?[a\n\r é]{0,40}"
        ) {
            let idx = LineIndex::new(&text);
            let bom = idx.bom_len();
            let bytes = text.as_bytes();
            let mut expected = Vec::new();
            if bytes.len() > bom {
                expected.push(bom);
                for (i, &b) in bytes.iter().enumerate().skip(bom) {
                    if b == b'\n' && i + 1 < bytes.len() {
                        expected.push(i + 1);
                    }
                }
            }
            prop_assert_eq!(&idx.starts, &expected);
            for line in 0..=idx.line_count() + 1 {
                let (s, e) = (idx.line_start(line), idx.line_content_end(line));
                prop_assert_eq!(idx.line_text(line), &text[s..e]);
            }
        }
    }

    #[test]
    fn counts_lines_with_and_without_final_newline() {
        assert_eq!(LineIndex::new("").line_count(), 0);
        assert_eq!(LineIndex::new(BOM).line_count(), 0);
        assert_eq!(LineIndex::new("a").line_count(), 1);
        assert_eq!(LineIndex::new("a\n").line_count(), 1);
        assert_eq!(LineIndex::new("a\nb").line_count(), 2);
        assert_eq!(LineIndex::new("a\n\n").line_count(), 2);
        assert_eq!(LineIndex::new("\n").line_count(), 1);
        assert_eq!(LineIndex::new("a\r\nb\r\n").line_count(), 2);
    }

    #[test]
    fn crlf_belongs_to_the_line_ending() {
        let idx = LineIndex::new("one\r\ntwo\r\nthree");
        assert_eq!(idx.line_text(1), "one");
        assert_eq!(idx.line_ending(1), "\r\n");
        assert_eq!(idx.line_text(3), "three");
        assert_eq!(idx.line_ending(3), "");
        assert_eq!(idx.line_of(3), 1); // the \r
        assert_eq!(idx.line_of(4), 1); // the \n
        assert_eq!(idx.line_of(5), 2);
        assert_eq!(idx.lines_text(1, 2), "one\r\ntwo");
    }

    #[test]
    fn a_lone_cr_is_text() {
        let idx = LineIndex::new("a\rb\nc");
        assert_eq!(idx.line_count(), 2);
        assert_eq!(idx.line_text(1), "a\rb");
    }

    #[test]
    fn bom_is_outside_line_one_and_its_columns() {
        let text = "\u{feff}# Titre\nété `x`\n";
        let idx = LineIndex::new(text);
        assert_eq!(idx.bom_len(), 3);
        assert_eq!(idx.line_start(1), 3);
        assert_eq!(idx.line_text(1), "# Titre");
        assert_eq!(idx.line_of(0), 1);
        assert_eq!(idx.column_of(3), 1);
        let tick = text.find('`').expect("backtick");
        assert_eq!(idx.line_of(tick), 2);
        assert_eq!(idx.column_of(tick), 5); // é t é space `
    }

    #[test]
    fn line_hash_excludes_only_the_last_line_ending() {
        let a = LineIndex::new("x\ny\nz");
        let b = LineIndex::new("x\ny\n");
        assert_eq!(a.line_hash(1, 2), b.line_hash(1, 2));
        assert_eq!(a.line_hash(1, 2), sha256(b"x\ny"));
        let crlf = LineIndex::new("x\r\ny\r\n");
        assert_eq!(crlf.line_hash(1, 2), sha256(b"x\r\ny"));
    }

    #[test]
    fn column_cursor_matches_column_of() {
        let text = "\u{feff}aé`b`\nxyz ü `q`\n";
        let idx = LineIndex::new(text);
        let mut cur = ColumnCursor::new();
        for (off, _) in text.char_indices().skip(1) {
            assert_eq!(
                cur.locate(&idx, off),
                (idx.line_of(off), idx.column_of(off)),
                "{off}"
            );
        }
        // Backwards, and inside a multi-byte char (counts that char).
        let e = text.find('é').expect("é");
        assert_eq!(cur.locate(&idx, e + 1), (1, 2));
    }

    #[test]
    fn blank_lines_and_out_of_range_lines() {
        let idx = LineIndex::new("a\n \t\n\nb");
        assert!(!idx.is_blank(1));
        assert!(idx.is_blank(2));
        assert!(idx.is_blank(3));
        assert_eq!(idx.line_text(9), "");
        assert_eq!(idx.line_start(9), idx.text().len());
        assert_eq!(idx.last_line_of(0, 2), 1);
        assert_eq!(idx.last_line_of(0, 3), 2);
    }
}
