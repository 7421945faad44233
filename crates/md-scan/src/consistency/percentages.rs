//! Percentage columns that should add up to 100 % and do not.
//!
//! A column is a percentage column when every non-empty body cell is one
//! percentage (`40%`, `12,5 %`) and there are at least two. A "Total" row
//! is left out of the sum. Whether the column is meant to add up to 100 %
//! is read from its header: share words (`share_headers`: part, share,
//! répartition…) say yes, rate words (`rate_headers`: coverage, taux,
//! success…) say no; for any other header the column is checked only when
//! its sum is within 80–120 %, i.e. when it looks like a share with an
//! error rather than a list of independent rates.

use super::KERNEL;
use crate::config::ScanConfig;
use crate::numbers::{format_percent, parse_percent_cell};
use crate::tables::Table;
use koas_review_schema::findings::{Finding, FindingKind};

/// The sum band in which a column with a neutral header is checked.
const NEUTRAL_BAND: (f64, f64) = (80.0, 120.0);

/// `true` when one of the header's words starts with one of `keywords`.
fn header_mentions(header: &str, keywords: &[String]) -> bool {
    let lower = header.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    keywords.iter().any(|k| {
        words.iter().any(|w| w.starts_with(k.as_str()))
            || (k.contains(' ') && lower.contains(k.as_str()))
    })
}

fn is_total_row(first_cell: &str) -> bool {
    let c = first_cell
        .trim_matches(|ch: char| ch == '*' || ch == '_' || ch.is_whitespace())
        .to_lowercase();
    [
        "total", "totaux", "sum", "somme", "overall", "ensemble", "tous", "all",
    ]
    .iter()
    .any(|w| c == *w || c.starts_with(&format!("{w} ")) || c.starts_with(&format!("{w}:")))
}

/// A plain number in a cell (`184`, `1 250`, `3.5`), if it is one.
fn plain_number(cell: &str) -> Option<f64> {
    let t: String = cell
        .trim()
        .chars()
        .filter(|c| !matches!(c, ' ' | '\u{a0}' | '\u{202f}' | '*' | '_'))
        .collect();
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    t.parse().ok()
}

/// Numbers of one row paired by [`computed_per_row`] (a table wider than
/// this is not one a rate column is computed in).
const MAX_PAIRED_NUMBERS: usize = 64;

/// `true` when, in every row with a value, the percentage of column `col`
/// is the ratio of two number cells of the same row (a / b or a / (a + b),
/// to the nearest point): a rate computed per row ("184 stopped, 362
/// continued: 34 %"), which has no reason to add up to 100 %.
fn computed_per_row(t: &Table, col: usize) -> bool {
    let mut rows = 0;
    for row in &t.rows {
        let Some(pct) = row
            .cells
            .get(col)
            .and_then(|c| parse_percent_cell(c.trim()))
        else {
            continue;
        };
        let numbers: Vec<f64> = row
            .cells
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != col)
            .filter_map(|(_, c)| plain_number(c))
            // Every pair is tried: a row's first numbers only, so that a
            // row of thousands of cells costs no more than a usual one.
            .take(MAX_PAIRED_NUMBERS)
            .collect();
        let close = |v: f64| (v * 100.0 - pct).abs() <= 1.0;
        let found = numbers.iter().enumerate().any(|(i, &a)| {
            numbers.iter().enumerate().any(|(j, &b)| {
                i != j && ((b > 0.0 && close(a / b)) || (a + b > 0.0 && close(a / (a + b))))
            })
        });
        if !found {
            return false;
        }
        rows += 1;
    }
    rows >= 2
}

/// Reports share columns whose total is outside `percent_min..=percent_max`.
pub fn detect(tables: &[Table], config: &ScanConfig, out: &mut Vec<Finding>) {
    for t in tables {
        if t.delimiter_cells != t.header.cells.len() && !t.recognized {
            // Column positions are unreliable in a refused block.
            continue;
        }
        for (col, header) in t.header.cells.iter().enumerate() {
            let mut values = Vec::new();
            let mut is_percent_column = true;
            for row in &t.rows {
                if row.cells.first().is_some_and(|c| is_total_row(c)) {
                    continue;
                }
                let cell = row.cells.get(col).map(String::as_str).unwrap_or("");
                let trimmed = cell.trim();
                if trimmed.is_empty() || matches!(trimmed, "-" | "–" | "—" | "n/a" | "N/A") {
                    continue;
                }
                match parse_percent_cell(trimmed) {
                    Some(v) => values.push(v),
                    None => {
                        is_percent_column = false;
                        break;
                    }
                }
            }
            if !is_percent_column || values.len() < 2 {
                continue;
            }
            let sum: f64 = values.iter().sum();
            let share = header_mentions(header, &config.share_headers);
            let rate = header_mentions(header, &config.rate_headers);
            let checked = if share {
                true
            } else if rate {
                false
            } else {
                (NEUTRAL_BAND.0..=NEUTRAL_BAND.1).contains(&sum)
            };
            if !checked
                || (config.percent_min..=config.percent_max).contains(&sum)
                || computed_per_row(t, col)
            {
                continue;
            }
            let shown: Vec<String> = values.iter().map(|v| format_percent(*v)).collect();
            out.push(Finding::new(
                FindingKind::TablePercentage,
                KERNEL,
                t.line_start,
                t.line_end,
                format!(
                    "The column “{header}” adds up to {} ({}), not 100 % (accepted: {}–{})",
                    format_percent(sum),
                    shown.join(" + "),
                    format_percent(config.percent_min),
                    format_percent(config.percent_max)
                ),
                &format!("| {} |", t.header.cells.join(" | ")),
            ));
        }
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
        detect(&find_tables(&doc), &ScanConfig::default(), &mut out);
        out
    }

    #[test]
    fn share_columns_off_100_are_reported() {
        let found = scan("# T\n\n| Composant | Part de la dette |\n|---|---|\n| Noyau | 55 % |\n| Portail | 40 % |\n| Connecteurs | 25 % |\n");
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].line, found[0].line_end), (3, 7));
        assert!(found[0].message.contains("120 %"), "{}", found[0].message);
        let found = scan("# T\n\n| Tier | Share of traffic |\n|---|---|\n| Hot | 40% |\n| Warm | 30% |\n| Cold | 20% |\n");
        assert_eq!(found.len(), 1);
        assert!(found[0].message.contains("90 %"));
    }

    /// Regression (issue 31, held-out documents): a rate computed in each
    /// row from the row's counts was added up like a share.
    #[test]
    fn rates_computed_per_row_are_not_shares() {
        let rates = "# T\n\n| Phase | Stop | Go | Pourcentage de produits arrêtés |\n|---|---|---|---|\n| Investigation | 184 | 362 | 34 % |\n| Construction | 88 | 305 | 22 % |\n| Accélération | 22 | 144 | 13 % |\n| Transfert | 12 | 57 | 17 % |\n";
        assert!(scan(rates).is_empty(), "{:?}", scan(rates));
        // A share column next to counts that do not give it is still checked.
        let shares = "# T\n\n| Phase | Produits | Part |\n|---|---|---|\n| A | 184 | 34 % |\n| B | 88 | 22 % |\n| C | 22 | 13 % |\n| D | 12 | 17 % |\n";
        assert_eq!(scan(shares).len(), 1);
    }

    #[test]
    fn decimal_commas_totals_and_rates() {
        assert!(scan("# T\n\n| x | Part |\n|---|---|\n| a | 33,3 % |\n| b | 33,3 % |\n| c | 33,4 % |\n| Total | 100 % |\n").is_empty());
        assert!(scan("# T\n\n| Approche | Couverture |\n|---|---|\n| a | 100 % |\n| b | 35 % |\n| c | 20 % |\n").is_empty());
        assert_eq!(
            scan("# T\n\n| x | Value |\n|---|---|\n| a | 60% |\n| b | 50% |\n").len(),
            1
        );
        assert!(scan("# T\n\n| x | Value |\n|---|---|\n| a | 5% |\n| b | 10% |\n").is_empty());
        assert!(
            scan("# T\n\n| x | Part |\n|---|---|\n| a | 50% |\n| b | about half |\n").is_empty()
        );
    }
}
