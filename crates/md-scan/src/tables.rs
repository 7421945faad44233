//! Pipe tables: the GFM tables Stage 1 protects, and the pipe blocks a GFM
//! parser refuses as tables because their header and delimiter row have
//! different cell counts. Cells are split the way GFM splits them: on every
//! `|` not escaped with a backslash (code spans included), after removing
//! one leading and one trailing pipe.

use crate::document::Document;
use koas_review_schema::stage1::{BlockKind, LineNo};

/// One table row: its line and its cells (trimmed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The row's line (1-based).
    pub line: LineNo,
    /// The cells, trimmed, split on unescaped `|`.
    pub cells: Vec<String>,
}

/// A pipe table or pipe block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// First line (the header row).
    pub line_start: LineNo,
    /// Last line (inclusive): the last body row, or the delimiter row of a
    /// table without body.
    pub line_end: LineNo,
    /// The header row (the line above the delimiter row).
    pub header: Row,
    /// Cell count of the delimiter row (`|---|:--:|`).
    pub delimiter_cells: usize,
    /// The body rows, in order; empty for a header-only table.
    pub rows: Vec<Row>,
    /// `true` when a GFM parser renders it as a table (Stage 1 protects it
    /// as `table`); `false` for a pipe block it refuses.
    pub recognized: bool,
}

/// Strips block-quote markers and up to three spaces of indentation.
fn strip_container(line: &str) -> &str {
    let mut s = line;
    loop {
        let t = s.trim_start_matches([' ', '\t']);
        match t.strip_prefix('>') {
            Some(rest) => s = rest,
            None => return t,
        }
    }
}

/// Splits a row into trimmed cells, GFM style.
pub fn split_cells(line: &str) -> Vec<String> {
    let s = strip_container(line).trim();
    let s = s.strip_prefix('|').unwrap_or(s);
    let bytes = s.as_bytes();
    let mut cells = Vec::new();
    let mut cell_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'|' => {
                cells.push(s.get(cell_start..i).unwrap_or("").trim().to_string());
                cell_start = i + 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    let last = s.get(cell_start..).unwrap_or("").trim();
    // A trailing pipe closes the last cell instead of opening a new one.
    if !last.is_empty() || cell_start == 0 {
        cells.push(last.to_string());
    }
    cells
}

/// `true` for a GFM delimiter row with at least one pipe:
/// `|---|:---:|`, `--- | ---`.
pub fn is_delimiter_row(line: &str) -> bool {
    let s = strip_container(line).trim();
    if !s.contains('|') || !s.contains('-') {
        return false;
    }
    split_cells(s).iter().all(|c| {
        let c = c.trim();
        let c = c.strip_prefix(':').unwrap_or(c);
        let c = c.strip_suffix(':').unwrap_or(c);
        !c.is_empty() && c.bytes().all(|b| b == b'-')
    })
}

fn row(doc: &Document<'_>, line: LineNo) -> Row {
    Row {
        line,
        cells: split_cells(doc.line(line)),
    }
}

/// `true` for a line a renderer extension reads as markup of the table,
/// not as a row, although a GFM parser takes it for one: a kramdown or
/// MkDocs attribute list (`{: .table }`, `{#id .class}`), a Liquid tag
/// (`{% endfor %}`), a Pandoc caption (`Table: …`, `: …`) or an HTML
/// comment.
pub fn is_extension_line(line: &str) -> bool {
    let t = strip_container(line).trim();
    let wrapped = |open: &str, close: &str| t.starts_with(open) && t.ends_with(close);
    wrapped("{:", "}")
        || (wrapped("{", "}") && t[1..].trim_start().starts_with(['#', '.']))
        || wrapped("{%", "%}")
        || wrapped("<!--", "-->")
        || t.starts_with("Table:")
        || (t.starts_with(": ") && !t.contains('|'))
}

fn build(doc: &Document<'_>, start: LineNo, end: LineNo, recognized: bool) -> Option<Table> {
    if end <= start {
        return None;
    }
    let rows: Vec<Row> = ((start + 2)..=end)
        .filter(|&l| !is_extension_line(doc.line(l)))
        .map(|l| row(doc, l))
        .collect();
    Some(Table {
        line_start: start,
        line_end: rows.last().map_or(start + 1, |r| r.line),
        header: row(doc, start),
        delimiter_cells: split_cells(doc.line(start + 1)).len(),
        rows,
        recognized,
    })
}

/// Every table of the document in order: the GFM tables of Stage 1 and
/// the refused pipe blocks found in the prose.
pub fn find_tables(doc: &Document<'_>) -> Vec<Table> {
    let mut tables: Vec<Table> = doc
        .stage1
        .protected
        .blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Table)
        .filter_map(|b| build(doc, b.line_start, b.line_end, true))
        .collect();
    let n = doc.line_count();
    let mut line = 1;
    while line < n {
        let is_candidate = |l: LineNo| {
            doc.block_kind(l).is_none()
                && !doc.is_heading(l)
                && strip_container(doc.line(l)).contains('|')
        };
        if is_candidate(line) && is_candidate(line + 1) && is_delimiter_row(doc.line(line + 1)) {
            let mut end = line + 1;
            while end < n && is_candidate(end + 1) {
                end += 1;
            }
            if let Some(t) = build(doc, line, end, false) {
                tables.push(t);
            }
            line = end + 1;
        } else {
            line += 1;
        }
    }
    tables.sort_by_key(|t| t.line_start);
    tables
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;
    use proptest::prelude::*;

    #[test]
    fn splits_cells_like_gfm() {
        assert_eq!(split_cells("| a | b |"), ["a", "b"]);
        assert_eq!(split_cells("a | b"), ["a", "b"]);
        assert_eq!(split_cells("| a \\| x | `c|d` |"), ["a \\| x", "`c", "d`"]);
        assert_eq!(split_cells("> | q | r |"), ["q", "r"]);
        assert_eq!(split_cells("| a | |"), ["a", ""]);
        assert_eq!(split_cells("|"), [""]);
    }

    #[test]
    fn recognises_delimiter_rows() {
        assert!(is_delimiter_row("|---|:--:|"));
        assert!(is_delimiter_row("--- | ---:"));
        assert!(!is_delimiter_row("---"));
        assert!(!is_delimiter_row("| a | b |"));
        assert!(!is_delimiter_row("| - x |"));
    }

    /// Regression: renderer extensions after a table were read as rows.
    #[test]
    fn renderer_extension_lines_are_not_rows() {
        for extension in [
            "{: .table }",
            "{:.table-striped}",
            "{ .compact #options }",
            "{%- endfor %}",
            "Table: Supported formats",
            ": Supported formats",
            "<!-- end of the generated table -->",
        ] {
            assert!(is_extension_line(extension), "{extension}");
            let text = format!("# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n{extension}\n\nText.\n");
            let s1 = stage1(&text);
            let doc = Document::new(s1.view(&text)).expect("doc");
            let tables = find_tables(&doc);
            assert_eq!(tables[0].rows.len(), 1, "{extension}");
            assert_eq!(tables[0].line_end, 5, "{extension}");
        }
        for row in [
            "| 1 | 2 |",
            "Some text glued to the table.",
            "{{ site.title }} | x",
        ] {
            assert!(!is_extension_line(row), "{row}");
        }
    }

    #[test]
    fn finds_gfm_tables_and_refused_pipe_blocks() {
        let text = "# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\ntext\n\n| a | b | c |\n|---|---|\n| 1 | 2 |\n";
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let tables = find_tables(&doc);
        assert_eq!(tables.len(), 2);
        assert!(tables[0].recognized);
        assert_eq!((tables[0].line_start, tables[0].line_end), (3, 5));
        assert_eq!((tables[1].line_start, tables[1].line_end), (9, 11));
        assert_eq!(tables[1].header.cells.len(), 3);
        assert_eq!(tables[1].delimiter_cells, 2);
        assert_eq!(tables[1].rows.len(), 1);
    }

    proptest! {
        /// Joining n plain cells with pipes always splits back into n cells.
        #[test]
        fn split_inverts_join(cells in prop::collection::vec("[a-zé0-9 ]{0,8}", 1..8), outer in any::<bool>()) {
            let inner = cells.join("|");
            let line = if outer { format!("|{inner}|") } else { inner.clone() };
            let split = split_cells(&line);
            let expected: Vec<String> = cells.iter().map(|c| c.trim().to_string()).collect();
            // Without outer pipes, an empty first or last cell cannot be
            // told from an outer pipe (GFM reads it the same way).
            let ends_filled = expected.first().is_some_and(|c| !c.is_empty())
                && expected.last().is_some_and(|c| !c.is_empty());
            if outer || ends_filled {
                prop_assert_eq!(split, expected);
            }
        }
    }
}
