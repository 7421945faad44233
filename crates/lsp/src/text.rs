//! An open document's text and the conversion between LSP positions
//! (line, UTF-16 code unit) and byte offsets.

use lsp_types::{Position, Range, TextDocumentContentChangeEvent};

/// The text of an open document, with where each line starts.
#[derive(Debug, Clone, Default)]
pub struct Text {
    text: String,
    /// Byte offset of each line's first byte.
    starts: Vec<usize>,
}

impl Text {
    /// A text.
    pub fn new(text: String) -> Text {
        let starts = line_starts(&text);
        Text { text, starts }
    }

    /// The whole text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Number of lines (a text ending with a newline has an empty last
    /// line, as editors count).
    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// Line `line` (0-based) without its line ending; empty past the end.
    pub fn line(&self, line: usize) -> &str {
        let Some(&start) = self.starts.get(line) else {
            return "";
        };
        let end = self
            .starts
            .get(line + 1)
            .copied()
            .unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    /// The byte offset of `position`, clamped to its line and the text.
    pub fn offset(&self, position: Position) -> usize {
        let line = position.line as usize;
        let Some(&start) = self.starts.get(line) else {
            return self.text.len();
        };
        let content = self.line(line);
        let mut units = 0u32;
        for (i, c) in content.char_indices() {
            if units >= position.character {
                return start + i;
            }
            units += c.len_utf16() as u32;
        }
        start + content.len()
    }

    /// The position of byte `offset` of line `line` (0-based).
    pub fn position(&self, line: usize, offset_in_line: usize) -> Position {
        let content = self.line(line);
        let mut end = offset_in_line.min(content.len());
        while end > 0 && !content.is_char_boundary(end) {
            end -= 1;
        }
        Position::new(line as u32, utf16_len(&content[..end]))
    }

    /// The position after the `chars`-th character of line `line`.
    pub fn position_of_char(&self, line: usize, chars: usize) -> Position {
        let content = self.line(line);
        let offset = content
            .char_indices()
            .nth(chars)
            .map_or(content.len(), |(i, _)| i);
        self.position(line, offset)
    }

    /// The range of the whole of line `line` (0-based), without its ending.
    pub fn line_range(&self, line: usize) -> Range {
        Range::new(
            Position::new(line as u32, 0),
            Position::new(line as u32, utf16_len(self.line(line))),
        )
    }

    /// The range of the whole text.
    pub fn full_range(&self) -> Range {
        let last = self.line_count().saturating_sub(1);
        Range::new(Position::new(0, 0), self.line_range(last).end)
    }

    /// Applies one change of `textDocument/didChange` (a range replaced,
    /// or the whole text when it has no range).
    pub fn apply(&mut self, change: &TextDocumentContentChangeEvent) {
        match change.range {
            None => *self = Text::new(change.text.clone()),
            Some(range) => {
                let start = self.offset(range.start);
                let end = self.offset(range.end).max(start);
                self.text.replace_range(start..end, &change.text);
                // Only the lines from the change on move.
                let first = self.starts.partition_point(|&s| s <= start);
                self.starts.truncate(first.max(1));
                let from = self.starts.last().copied().unwrap_or(0);
                self.starts.extend(
                    self.text[from..]
                        .match_indices('\n')
                        .map(|(i, _)| from + i + 1),
                );
            }
        }
    }
}

fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

/// The length of `s` in UTF-16 code units.
pub fn utf16_len(s: &str) -> u32 {
    s.chars().map(|c| c.len_utf16() as u32).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(
        range: Option<((u32, u32), (u32, u32))>,
        text: &str,
    ) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: range
                .map(|((a, b), (c, d))| Range::new(Position::new(a, b), Position::new(c, d))),
            range_length: None,
            text: text.into(),
        }
    }

    #[test]
    fn utf16_positions_and_incremental_changes() {
        let mut t = Text::new("# Été 😀 x\nsecond\nthird\n".into());
        // "😀" is two UTF-16 units: "x", the 9th character, is at 9.
        assert_eq!(t.offset(Position::new(0, 9)), "# Été 😀 ".len());
        assert_eq!(t.position_of_char(0, 8), Position::new(0, 9));
        t.apply(&change(Some(((1, 0), (1, 6))), "2nd\nline"));
        assert_eq!(t.as_str(), "# Été 😀 x\n2nd\nline\nthird\n");
        assert_eq!(t.line(2), "line");
        assert_eq!(t.line(3), "third");
        t.apply(&change(Some(((0, 0), (2, 4))), ""));
        assert_eq!(t.as_str(), "\nthird\n");
        assert_eq!((t.line_count(), t.line(1)), (3, "third"));
        t.apply(&change(None, "new"));
        assert_eq!((t.as_str(), t.line_count()), ("new", 1));
        // Positions past the end are clamped.
        assert_eq!(t.offset(Position::new(9, 9)), 3);
        assert_eq!(t.offset(Position::new(0, 99)), 3);
    }
}
