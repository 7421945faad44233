//! Tables the GFM parser refuses: a paragraph whose first line has a `|`
//! and whose second line is a delimiter row (`|---|:--:|`), but whose
//! column counts do not match, is left as a paragraph by GFM. It is still
//! tabular data a reviewer must not rewrite as prose, so it is protected
//! as a `table` with info `malformed` (conservative policy).

use super::line_flags::{strip_container_prefix, LineFlags};
use crate::line_index::LineIndex;
use koas_review_schema::stage1::LineNo;

/// `true` for a delimiter row: only `|`, `:`, `-` and spaces, at least one
/// `|` and one `-`.
pub fn is_delimiter_row(line: &str) -> bool {
    let s = strip_container_prefix(line).trim();
    s.contains('|')
        && s.contains('-')
        && s.chars().all(|c| matches!(c, '|' | ':' | '-' | ' ' | '\t'))
}

/// Table-like line ranges inside the given paragraphs (line ranges) that
/// no other construct owns.
pub fn find(
    index: &LineIndex<'_>,
    paragraphs: &[(LineNo, LineNo)],
    owned: &LineFlags,
) -> Vec<(LineNo, LineNo)> {
    let mut out = Vec::new();
    for &(s, e) in paragraphs {
        if e <= s || owned.get(s) {
            continue;
        }
        if !index.line_text(s).contains('|') || !is_delimiter_row(index.line_text(s + 1)) {
            continue;
        }
        let mut end = s + 1;
        while end < e && index.line_text(end + 1).contains('|') && !owned.get(end + 1) {
            end += 1;
        }
        out.push((s, end));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delimiter_rows() {
        assert!(is_delimiter_row("|---|:--:|"));
        assert!(is_delimiter_row("> | --- | ---: |"));
        assert!(!is_delimiter_row("---"));
        assert!(!is_delimiter_row("| a | b |"));
    }

    #[test]
    fn finds_the_pipe_rows_of_a_paragraph() {
        let text = "| a | b | c |\n|---|---|\n| 1 | 2 | 3 |\ntrailing prose\n";
        let idx = LineIndex::new(text);
        assert_eq!(find(&idx, &[(1, 4)], &LineFlags::new(4)), vec![(1, 3)]);
        assert!(find(&idx, &[(3, 4)], &LineFlags::new(4)).is_empty());
    }
}
