//! Table structure: what a GFM renderer shows differently from what the
//! author wrote.
//!
//! * A pipe block whose header and delimiter row differ is not a table at
//!   all: it is shown as a paragraph of pipes (error).
//! * A row with more cells than the header loses the extra ones: an error
//!   when they hold text, a warning with a certain fix when they are empty
//!   (`| a | b | |`).
//! * A line without any pipe at the end of a table is a paragraph that
//!   lost its blank line and is shown as a one-cell row (warning).
//! * A row with fewer cells is shown with empty cells at the end. Tables
//!   do that on purpose (one-cell group rows, a last column left blank), so
//!   it is reported only as an exception: a row of two cells or more, in a
//!   table of at least three rows where at most one row in five is short,
//!   missing cells that are filled in at least four rows in five of the
//!   full ones (a forgotten cell shifts the values under the wrong
//!   headers). A small table (three or four rows) may have that one short
//!   row, when every other row fills the cells it lacks.
//!
//! Lines a renderer extension reads as markup (`{: .table }`, `Table:`
//! captions, comments) are not rows ([`crate::tables`]).

use super::KERNEL;
use crate::document::Document;
use crate::tables::{split_cells, Row, Table};
use koas_review_schema::findings::{Finding, FindingKind, Fix, FixEdit, Severity};

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The row without its empty cells past `keep`, when that is all it has
/// too many: `| a | b | |` → `| a | b |`.
fn without_extra_empty_cells(line: &str, keep: usize) -> Option<String> {
    let mut text = line.trim_end().to_string();
    for _ in 0..64 {
        if split_cells(&text).len() <= keep {
            break;
        }
        let body = text.strip_suffix('|')?.trim_end();
        // The last cell must be empty: what is left ends with the pipe
        // that opened it.
        if !body.ends_with('|') || body.ends_with("\\|") {
            return None;
        }
        text = body.to_string();
    }
    (split_cells(&text).len() == keep).then_some(text)
}

/// How the full rows of a table (those with a cell under every header)
/// fill each column: counted once per table, so that judging each short
/// row does not read the whole table again.
struct FullRows {
    /// Number of full rows.
    count: usize,
    /// Per column, the full rows whose cell there is not empty.
    filled: Vec<usize>,
}

impl FullRows {
    fn of(table: &Table, header: usize) -> Self {
        let mut filled = vec![0; header];
        let mut count = 0;
        for r in table.rows.iter().filter(|r| r.cells.len() >= header) {
            count += 1;
            for (slot, cell) in filled.iter_mut().zip(&r.cells) {
                *slot += usize::from(!cell.is_empty());
            }
        }
        FullRows { count, filled }
    }
}

/// `true` when a short row is an exception in its table (see the module
/// documentation).
fn short_row_stands_out(row: &Row, table: &Table, full: &FullRows, short_rows: usize) -> bool {
    let body = table.rows.len();
    // A table under five rows may have one short row: then every full row
    // must fill what it lacks.
    let small = body < 5;
    let too_many = if small {
        short_rows > 1
    } else {
        short_rows * 5 > body
    };
    if row.cells.len() < 2 || body < 3 || too_many {
        return false;
    }
    if full.count == 0 {
        return false;
    }
    full.filled
        .get(row.cells.len()..)
        .unwrap_or_default()
        .iter()
        .all(|&filled| {
            if small {
                full.count >= 2 && filled == full.count
            } else {
                filled * 5 >= full.count * 4
            }
        })
}

/// Reports tables whose rows a renderer shows otherwise than written.
pub fn detect(doc: &Document<'_>, tables: &[Table], out: &mut Vec<Finding>) {
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
        let Rows {
            problems,
            fix_edits,
            certain,
            error,
        } = rows_of(doc, t, header);
        let (Some(first), Some(last)) = (problems.first(), problems.last()) else {
            continue;
        };
        let detail: Vec<&str> = problems.iter().take(5).map(|p| p.1.as_str()).collect();
        let more = if problems.len() > 5 {
            format!(" and {} more", problems.len() - 5)
        } else {
            String::new()
        };
        let first_row = split_cells(doc.line(first.0)).join(" | ");
        let mut finding = Finding::new(
            FindingKind::TableStructure,
            KERNEL,
            first.0,
            last.0,
            format!(
                "The table starting at line {} has {} per row, but {}{more}",
                t.line_start,
                plural(header, "cell"),
                detail.join(", ")
            ),
            &format!("| {first_row} |"),
        );
        if !error {
            finding.severity = Severity::Warning;
        }
        if certain && !fix_edits.is_empty() {
            finding = finding.with_fix(Fix {
                description: format!(
                    "remove the extra empty cell of {}",
                    plural(fix_edits.len(), "row")
                ),
                edits: fix_edits,
            });
        }
        out.push(finding);
    }
}

/// What a table's rows show against its header of `header` cells.
struct Rows {
    /// Each row that differs: its line and what is wrong.
    problems: Vec<(u32, String)>,
    /// The edits that remove the extra empty cells.
    fix_edits: Vec<FixEdit>,
    /// Whether the edits fix every problem.
    certain: bool,
    /// Whether a renderer drops text.
    error: bool,
}

/// The rows of `t` a renderer shows otherwise than written.
fn rows_of(doc: &Document<'_>, t: &Table, header: usize) -> Rows {
    let mut problems: Vec<(u32, String)> = Vec::new();
    let mut fix_edits: Vec<FixEdit> = Vec::new();
    let mut certain = true;
    let mut error = false;
    let short_rows = t
        .rows
        .iter()
        .filter(|r| r.cells.len() < header && r.cells.len() >= 2)
        .count();
    let full = (short_rows > 0).then(|| FullRows::of(t, header));
    for (i, r) in t.rows.iter().enumerate() {
        let n = r.cells.len();
        let line = doc.line(r.line);
        if n > header {
            let dropped = r.cells[header..].iter().any(|c| !c.is_empty());
            if dropped {
                error = true;
                certain = false;
                problems.push((
                    r.line,
                    format!(
                        "line {} has {n} (the text past cell {header} is dropped)",
                        r.line
                    ),
                ));
            } else {
                problems.push((
                    r.line,
                    format!("line {} has {n} (an extra empty cell)", r.line),
                ));
                match without_extra_empty_cells(line, header) {
                    Some(after) => fix_edits.push(FixEdit {
                        line: r.line,
                        before: line.to_string(),
                        after: Some(after),
                    }),
                    None => certain = false,
                }
            }
        } else if i + 1 == t.rows.len() && !line.contains('|') {
            certain = false;
            problems.push((
                r.line,
                format!(
                    "line {} has no pipe: a paragraph without a blank line before it, shown as a row",
                    r.line
                ),
            ));
        } else if n < header
            && full
                .as_ref()
                .is_some_and(|full| short_row_stands_out(r, t, full, short_rows))
        {
            certain = false;
            problems.push((
                r.line,
                format!(
                    "line {} has {n} (its values may sit under the wrong headers)",
                    r.line
                ),
            ));
        }
    }
    Rows {
        problems,
        fix_edits,
        certain,
        error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;
    use crate::tables::find_tables;

    fn scan(text: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let mut out = Vec::new();
        detect(&doc, &find_tables(&doc), &mut out);
        out
    }

    #[test]
    fn refused_pipe_block_is_reported_at_its_header() {
        let found = scan(
            "# T\n\n| Module | Lignes | Couverture |\n|--------|--------|\n| noyau | 1 | 62 % |\n",
        );
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].line, found[0].line_end), (3, 5));
        assert_eq!(found[0].severity, Severity::Error);
        assert!(found[0].message.contains("3 cells") && found[0].message.contains("2 cells"));
    }

    #[test]
    fn dropped_text_is_an_error_reported_once_per_table() {
        let found = scan("# T\n\n| a | b |\n|---|---|\n| 1 | 2 | 3 |\n| 1 | 2 |\n| 4 | 5 | 6 |\n");
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].line, found[0].line_end), (5, 7));
        assert_eq!(found[0].severity, Severity::Error);
        assert!(
            found[0].message.contains("line 5 has 3"),
            "{}",
            found[0].message
        );
        assert!(found[0].fix.is_none());
        assert!(scan("# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n").is_empty());
    }

    #[test]
    fn an_extra_empty_cell_is_a_warning_with_a_certain_fix() {
        let found = scan("# T\n\n| a | b |\n|---|---|\n| 1 | 2 | |\n| 3 | 4 ||\n| 5 | 6 |\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].severity, Severity::Warning);
        let fix = found[0].fix.as_ref().expect("a fix");
        let after: Vec<_> = fix.edits.iter().map(|e| e.after.as_deref()).collect();
        assert_eq!(after, [Some("| 1 | 2 |"), Some("| 3 | 4 |")]);
        assert_eq!(
            without_extra_empty_cells("a | b | |", 2).as_deref(),
            Some("a | b |")
        );
        assert_eq!(without_extra_empty_cells("| a | b | c |", 2), None);
    }

    /// Regression: deliberate layouts were reported (one-cell group rows,
    /// a mostly empty last column, many short rows).
    #[test]
    fn deliberate_short_rows_are_not_reported() {
        let group_rows = "| Feature | A | B |\n|---|---|---|\n| **Core** |\n| x | yes | no |\n| **Formats** |\n| y | yes | yes |\n";
        let blank_last_column = "name | id | comment\n:--- | :--- | :---\nsecio | /secio |\nTLS | /tls | not done\nyamux | /yamux |\nping | /ping |\n";
        let many_short = "| a | b | c |\n|---|---|---|\n| 1 | 2 |\n| 1 | 2 |\n| 1 | 2 | 3 |\n";
        for table in [group_rows, blank_last_column, many_short] {
            let found = scan(&format!("# T\n\n{table}"));
            assert!(found.is_empty(), "{table}\n{found:?}");
        }
    }

    /// Regression (issue 31, a miss): a forgotten cell in a table of three
    /// rows, every other row filling that column (markdownlint's MD056
    /// reports it); a small table whose column is not always filled, or
    /// with two short rows, stays silent.
    #[test]
    fn a_forgotten_cell_in_a_small_table_is_reported() {
        let forgotten = "| Service | Port | Protocole |\n|---|---|---|\n| api | 443 | HTTPS |\n| base | 5432 |\n| cache | 6379 | TCP |\n";
        let found = scan(&format!("# T\n\n{forgotten}"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].line, 6);
        assert_eq!(found[0].severity, Severity::Warning);
        let optional = "| Service | Port | Note |\n|---|---|---|\n| api | 443 | public |\n| base | 5432 |\n| cache | 6379 | |\n";
        let two_short =
            "| a | b | c |\n|---|---|---|\n| 1 | 2 |\n| 1 | 2 |\n| 1 | 2 | 3 |\n| 4 | 5 | 6 |\n";
        for table in [optional, two_short] {
            let found = scan(&format!("# T\n\n{table}"));
            assert!(found.is_empty(), "{table}\n{found:?}");
        }
    }

    #[test]
    fn a_row_missing_a_filled_cell_and_a_glued_paragraph_are_reported() {
        let table = "| Name | Type | Description |\n|---|---|---|\n| a | int | first |\n| b | the second one |\n| c | str | third |\n| d | int | fourth |\n| e | int | fifth |\n";
        let found = scan(&format!("# T\n\n{table}"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].line, 6);
        assert_eq!(found[0].severity, Severity::Warning);
        let glued =
            scan("# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\nThis sentence lost its blank line.\n");
        assert_eq!(glued.len(), 1, "{glued:?}");
        assert!(glued[0].message.contains("no pipe"), "{}", glued[0].message);
    }
}
