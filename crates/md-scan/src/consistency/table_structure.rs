//! Table structure: the header, the delimiter row and every body row must
//! have the same number of cells. A pipe block whose header and delimiter
//! row differ is not a table at all for a GFM renderer: it is shown as a
//! paragraph of pipes, which is what this reports first.

use super::KERNEL;
use crate::tables::Table;
use koas_review_schema::findings::{Finding, FindingKind};

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Reports tables whose rows do not all have the header's cell count.
pub fn detect(tables: &[Table], out: &mut Vec<Finding>) {
    for t in tables {
        let header = t.header.cells.len();
        let evidence = t.header.cells.join(" | ");
        if t.delimiter_cells != header {
            out.push(Finding::new(
                FindingKind::TableStructure,
                KERNEL,
                t.line_start,
                t.line_end,
                format!(
                    "The table header has {} but its delimiter row (line {}) has {}: GFM renderers such as GitHub's will not show this as a table",
                    plural(header, "cell"),
                    t.line_start + 1,
                    plural(t.delimiter_cells, "cell")
                ),
                &format!("| {evidence} |"),
            ));
            continue;
        }
        let bad: Vec<_> = t.rows.iter().filter(|r| r.cells.len() != header).collect();
        let (Some(first), Some(last)) = (bad.first(), bad.last()) else {
            continue;
        };
        let detail: Vec<String> = bad
            .iter()
            .take(5)
            .map(|r| format!("line {} has {}", r.line, r.cells.len()))
            .collect();
        let more = if bad.len() > 5 {
            format!(" and {} more", bad.len() - 5)
        } else {
            String::new()
        };
        out.push(Finding::new(
            FindingKind::TableStructure,
            KERNEL,
            first.line,
            last.line,
            format!(
                "The table starting at line {} has {} per row, but {}{more}: extra cells are dropped and missing ones shown empty",
                t.line_start,
                plural(header, "cell"),
                detail.join(", ")
            ),
            &format!("| {} |", first.cells.join(" | ")),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;
    use crate::document::Document;
    use crate::tables::find_tables;

    fn scan(text: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let mut out = Vec::new();
        detect(&find_tables(&doc), &mut out);
        out
    }

    #[test]
    fn refused_pipe_block_is_reported_at_its_header() {
        let found = scan(
            "# T\n\n| Module | Lignes | Couverture |\n|--------|--------|\n| noyau | 1 | 62 % |\n",
        );
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].line, found[0].line_end), (3, 5));
        assert!(found[0].message.contains("3 cells") && found[0].message.contains("2 cells"));
    }

    #[test]
    fn rows_with_other_cell_counts_are_reported_once_per_table() {
        let found = scan("# T\n\n| a | b |\n|---|---|\n| 1 | 2 | 3 |\n| 1 | 2 |\n| 1 |\n");
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].line, found[0].line_end), (5, 7));
        assert!(
            found[0].message.contains("line 5 has 3, line 7 has 1"),
            "{}",
            found[0].message
        );
        assert!(scan("# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n").is_empty());
    }
}
