//! Numerical contradictions: a count announced in the prose ("deux
//! approches", "5 classes", "three ingestion protocols") that the next
//! table contradicts.
//!
//! A claim is a number (digits or an English/French word) within
//! `claim_min..=claim_max`, followed by a plural noun phrase. Only the lines
//! in the `claim_window_lines` before a table are read (a count announces
//! the table that follows it, never one above it), stopping at a heading
//! or a protected block. The claim counts the table's body rows, or its
//! columns when the noun is "columns"/"colonnes". A claim is only compared
//! with a table it introduces: its noun names a header cell ("deux
//! approches" over an `Approche` column, "three protocols" over
//! `Protocol`), or it stands on the last prose line before the table and
//! that line ends with `:`.
//! When one claim of the window matches, nothing is reported; otherwise
//! the claim nearest the table is.
//!
//! Lists are checked the same way, more strictly: the claim must be in the
//! last sentence of the line right before the list, that line must end
//! with `:`, and its noun phrase must end the sentence (only filler such as
//! "below", "as follows", "suivantes" may stand between it and the colon):
//! "imposes two additional requirements:" over a list of four items. The
//! count is of the list's own items (nested lists are not counted), and a
//! bound ("at least two", "au moins deux", "up to") is not a count.

use super::KERNEL;
use crate::config::ScanConfig;
use crate::document::Document;
use crate::evidence::around;
use crate::markdown::MarkdownFacts;
use crate::numbers::number_word;
use crate::tables::Table;
use koas_review_schema::findings::{Finding, FindingKind};
use regex::Regex;
use std::sync::LazyLock;

static NUMBER: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(\d{1,3}|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|deux|trois|quatre|cinq|six|sept|huit|neuf|dix|onze|douze)\b",
    )
    .ok()
});

static WORD: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[\s*_]*([\p{L}][\p{L}'’-]*)").ok());

/// Words that, just before a number, make it a label rather than a count.
const LABEL_WORDS: &[&str] = &[
    "section",
    "sections",
    "table",
    "tableau",
    "figure",
    "fig",
    "step",
    "étape",
    "phase",
    "version",
    "level",
    "niveau",
    "tier",
    "chapter",
    "chapitre",
    "article",
    "annexe",
    "annex",
    "page",
    "priority",
    "priorité",
    "no",
    "n°",
    "number",
    "numéro",
    "rfc",
    "iso",
    "equation",
    "équation",
    "policy",
    "stage",
    "python",
    "option",
    "item",
    "line",
    "ligne",
    "row",
    "v",
];

/// Nouns after a number that measure rather than count things in a table.
const UNIT_WORDS: &[&str] = &[
    "ms",
    "s",
    "sec",
    "secs",
    "seconds",
    "secondes",
    "min",
    "mins",
    "minutes",
    "h",
    "hours",
    "heures",
    "jours",
    "days",
    "weeks",
    "semaines",
    "mois",
    "months",
    "ans",
    "années",
    "years",
    "bytes",
    "octets",
    "kb",
    "mb",
    "gb",
    "tb",
    "ko",
    "mo",
    "go",
    "to",
    "tokens",
    "chars",
    "characters",
    "caractères",
    "times",
    "fois",
    "x",
    "px",
    "pts",
    "points",
    "lines",
    "lignes",
    "words",
    "mots",
    "pages",
    "percent",
    "pourcent",
    "fois",
];

/// A count found in the prose.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Claim {
    line: u32,
    start: usize,
    end: usize,
    value: u32,
    counts_columns: bool,
    phrase: String,
    /// Stems of the noun phrase's words.
    stems: Vec<String>,
}

/// A crude stem: lowercase, plural `s`/`x` removed, first five letters.
fn stem(word: &str) -> String {
    let w = word.to_lowercase();
    let w = w
        .strip_suffix('s')
        .or_else(|| w.strip_suffix('x'))
        .unwrap_or(&w);
    w.chars().take(5).collect()
}

/// `true` when one of the claim's words shares a stem (of at least four
/// letters) with a word of the table's header.
fn names_header(claim: &Claim, table: &Table) -> bool {
    table.header.cells.iter().any(|cell| {
        cell.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 4)
            .any(|w| claim.stems.contains(&stem(w)))
    })
}

fn previous_word(text: &str) -> String {
    text.trim_end()
        .rsplit(|c: char| c.is_whitespace() || c == '(' || c == '[')
        .next()
        .unwrap_or("")
        .trim_end_matches('.')
        .to_lowercase()
}

/// The claims of one prose line.
fn claims_in(line: u32, prose: &str, config: &ScanConfig) -> Vec<Claim> {
    let (Some(number), Some(word_re)) = (NUMBER.as_ref(), WORD.as_ref()) else {
        return Vec::new();
    };
    let mut claims = Vec::new();
    for m in number.find_iter(prose) {
        let token = m.as_str();
        let value = match token.parse::<u32>() {
            Ok(v) => v,
            Err(_) => match number_word(token) {
                Some(v) => v,
                None => continue,
            },
        };
        if value < config.claim_min || value > config.claim_max {
            continue;
        }
        let before = &prose[..m.start()];
        let after = &prose[m.end()..];
        if before.chars().next_back().is_some_and(|c| {
            matches!(
                c,
                '.' | ','
                    | '/'
                    | '§'
                    | '#'
                    | '$'
                    | '€'
                    | '£'
                    | '+'
                    | '-'
                    | '–'
                    | ':'
                    | '^'
                    | '~'
                    | '×'
            )
        }) {
            continue;
        }
        let mut next = after.chars();
        match (next.next(), next.next()) {
            (Some('.' | ',' | '/' | '-' | '–' | ':' | 'h' | '×'), Some(c))
                if c.is_ascii_digit() =>
            {
                continue
            }
            (Some('%' | ')' | ':' | '/' | '°' | '€' | '$' | '+'), _) => continue,
            (Some('.'), _)
                if before
                    .trim_start_matches([' ', '\t', '>', '-', '*', '+'])
                    .is_empty() =>
            {
                continue
            }
            (Some(' ' | '\u{a0}' | '\u{202f}'), Some(c)) if c.is_ascii_digit() || c == '%' => {
                continue
            }
            _ => {}
        }
        if LABEL_WORDS.contains(&previous_word(before).as_str()) {
            continue;
        }
        // The noun phrase: up to three words, up to the first plural one.
        let mut rest = after;
        let mut words: Vec<(String, usize)> = Vec::new();
        while words.len() < 3 {
            let Some(c) = word_re.captures(rest) else {
                break;
            };
            let (Some(all), Some(w)) = (c.get(0), c.get(1)) else {
                break;
            };
            rest = &rest[all.end()..];
            words.push((w.as_str().to_lowercase(), prose.len() - rest.len()));
        }
        let Some((first, _)) = words.first() else {
            continue;
        };
        if first.chars().count() < 3 && !first.starts_with("col")
            || UNIT_WORDS.contains(&first.as_str())
        {
            continue;
        }
        let counts_columns = first.starts_with("column") || first.starts_with("colonne");
        let Some(plural_at) = words
            .iter()
            .position(|(w, _)| w.ends_with('s') || w.ends_with('x'))
        else {
            continue;
        };
        words.truncate(plural_at + 1);
        let phrase_end = words.last().map_or(m.end(), |(_, end)| *end);
        claims.push(Claim {
            line,
            start: m.start(),
            end: phrase_end,
            value,
            counts_columns,
            phrase: prose[m.start()..phrase_end].trim().to_string(),
            stems: words.iter().map(|(w, _)| stem(w)).collect(),
        });
    }
    claims
}

/// Reports counts that the next table contradicts.
pub fn detect(doc: &Document<'_>, tables: &[Table], config: &ScanConfig, out: &mut Vec<Finding>) {
    for table in tables {
        let mut claims: Vec<Claim> = Vec::new();
        let first = table
            .line_start
            .saturating_sub(config.claim_window_lines)
            .max(1);
        let mut line = table.line_start;
        while line > first {
            line -= 1;
            if doc.is_heading(line) {
                break;
            }
            let Some(prose) = doc.prose(line) else { break };
            let mut found = claims_in(line, prose, config);
            found.extend(claims);
            claims = found;
        }
        let intro = (first..table.line_start)
            .rev()
            .find(|&l| !doc.index.is_blank(l))
            .filter(|&l| {
                doc.prose(l).is_some_and(|p| {
                    p.trim_end_matches(|c: char| c.is_whitespace() || c == '*' || c == '_')
                        .ends_with(':')
                })
            });
        claims.retain(|c| Some(c.line) == intro || names_header(c, table));
        if claims.is_empty() {
            continue;
        }
        let rows = table.rows.len() as u32;
        let columns = table.header.cells.len() as u32;
        let expected = |c: &Claim| if c.counts_columns { columns } else { rows };
        if claims.iter().any(|c| c.value == expected(c)) {
            continue;
        }
        let Some(claim) = claims.last() else { continue };
        let (what, actual) = if claim.counts_columns {
            ("columns", columns)
        } else {
            ("rows", rows)
        };
        out.push(Finding::new(
            FindingKind::NumericContradiction,
            KERNEL,
            claim.line,
            table.line_end,
            format!(
                "The text announces {} (“{}”), but the table that follows at line {} has {} {what}",
                claim.value, claim.phrase, table.line_start, actual
            ),
            &around(doc.line(claim.line), claim.start, claim.end),
        ));
    }
}

/// Words that may stand between a list's announced count and its colon.
const LIST_FILLER: &[&str] = &[
    "below",
    "here",
    "as",
    "follows",
    "following",
    "listed",
    "described",
    "shown",
    "are",
    "is",
    "suivants",
    "suivantes",
    "ci-dessous",
    "ci-après",
    "sont",
    "voici",
];

/// Words just before a number that make it a bound, not a count.
const BOUNDS: &[&str] = &[
    "least",
    "moins",
    "to",
    "than",
    "over",
    "under",
    "about",
    "environ",
    "around",
    "jusqu'à",
    "max",
    "min",
    "maximum",
    "minimum",
    "approximately",
    "de",
];

/// Reports a count that the list right after it contradicts.
pub fn detect_lists(
    doc: &Document<'_>,
    facts: &MarkdownFacts,
    config: &ScanConfig,
    out: &mut Vec<Finding>,
) {
    for (i, list) in facts.lists.iter().enumerate() {
        // A nested list's intro is its parent item, whose counts describe
        // the item ("Secrets (9 patterns):" over categories of patterns).
        let nested = facts.lists[..i]
            .iter()
            .any(|outer| outer.line_start < list.line_start && list.line_end <= outer.line_end);
        if nested {
            continue;
        }
        let Some(intro) = (1..list.line_start)
            .rev()
            .take(2)
            .find(|&l| !doc.index.is_blank(l))
        else {
            continue;
        };
        if doc.is_heading(intro) {
            continue;
        }
        let Some(prose) = doc.prose(intro) else {
            continue;
        };
        let trimmed = prose.trim_end_matches(|c: char| c.is_whitespace() || c == '*' || c == '_');
        let Some(body) = trimmed.strip_suffix(':') else {
            continue;
        };
        let sentence_start = body
            .rfind(". ")
            .or_else(|| body.rfind("! "))
            .or_else(|| body.rfind("? "))
            .map_or(0, |i| i + 2);
        let claims: Vec<Claim> = claims_in(intro, prose, config)
            .into_iter()
            .filter(|c| c.start >= sentence_start && c.end <= body.len())
            .filter(|c| !c.counts_columns)
            // A count in parentheses is an aside, not the announcement.
            .filter(|c| {
                body[..c.start].matches('(').count() <= body[..c.start].matches(')').count()
            })
            .filter(|c| {
                let before = previous_word(&prose[..c.start]);
                !BOUNDS.contains(&before.as_str())
            })
            .filter(|c| {
                let between: Vec<String> = body[c.end..]
                    .split(|ch: char| ch.is_whitespace() || ch == ',')
                    .filter(|w| !w.is_empty())
                    .map(|w| w.to_lowercase())
                    .collect();
                between.len() <= 1 || between.iter().all(|w| LIST_FILLER.contains(&w.as_str()))
            })
            .collect();
        let items = list.items as u32;
        if claims.is_empty() || claims.iter().any(|c| c.value == items) {
            continue;
        }
        let Some(claim) = claims.last() else { continue };
        out.push(
            Finding::new(
                FindingKind::NumericContradiction,
                KERNEL,
                claim.line,
                list.line_end,
                format!(
                    "The text announces {} (“{}”), but the list that follows at line {} has {} item{}",
                    claim.value,
                    claim.phrase,
                    list.line_start,
                    items,
                    if items == 1 { "" } else { "s" }
                ),
                &around(doc.line(claim.line), claim.start, claim.end),
            )
            .at_column(doc.column(claim.line, claim.start)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;
    use crate::markdown;
    use crate::tables::find_tables;

    fn scan_lists(text: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let facts = markdown::collect(&doc);
        let mut out = Vec::new();
        detect_lists(&doc, &facts, &ScanConfig::default(), &mut out);
        out
    }

    /// Regression: an announced count that the following list contradicts
    /// was missed (only tables were compared).
    #[test]
    fn list_counts_are_compared_with_the_list() {
        let text = "# T\n\nThe gateway imposes two additional requirements:\n\n- TLS 1.3\n- mutual auth\n  - with nested\n  - items\n- rotation\n- audit\n";
        let found = scan_lists(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].line, found[0].line_end), (3, 10));
        assert!(
            found[0].message.contains("has 4 items"),
            "{}",
            found[0].message
        );
        let fr = "# T\n\nLe service respecte trois exigences suivantes :\n\n1. une\n2. deux\n";
        assert_eq!(scan_lists(fr).len(), 1);
    }

    #[test]
    fn list_counts_that_match_or_are_not_counts_are_quiet() {
        for intro in [
            "The gateway imposes two additional requirements:",
            "It needs at least two of the following:",
            "Two options exist. Pick one of these:",
            "There are two headers, sent in the following cases:",
            "See section 2 for the parameters:",
        ] {
            let text = format!("# T\n\n{intro}\n\n- a\n- b\n");
            let text3 = format!("# T\n\n{intro}\n\n- a\n- b\n- c\n");
            assert!(scan_lists(&text).is_empty(), "{intro}");
            if !intro.starts_with("The gateway") {
                assert!(scan_lists(&text3).is_empty(), "{intro} (3 items)");
            }
        }
        assert!(scan_lists("# T\n\nTwo requirements.\n\n- a\n- b\n- c\n").is_empty());
        // Counts of a parent item or in parentheses describe something else.
        assert!(scan_lists(
            "# T\n\n1. **Secrets** (9 patterns):\n   - keys\n   - tokens\n2. Other\n"
        )
        .is_empty());
        assert!(scan_lists("# T\n\nThe checks (two groups):\n\n- a\n- b\n- c\n").is_empty());
    }

    fn scan(text: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let tables = find_tables(&doc);
        let mut out = Vec::new();
        detect(&doc, &tables, &ScanConfig::default(), &mut out);
        out
    }

    const TABLE3: &str = "| A | B |\n|---|---|\n| 1 | x |\n| 2 | y |\n| 3 | z |\n";

    #[test]
    fn french_and_english_words_and_digits() {
        for claim in [
            "Nous avons retenu deux approches complémentaires :",
            "The gateway exposes two ingestion protocols:",
            "Les 4 classes suivantes :",
        ] {
            let text = format!("# T\n\n{claim}\n\n{TABLE3}");
            let found = scan(&text);
            assert_eq!(found.len(), 1, "{claim}: {found:?}");
            assert_eq!((found[0].line, found[0].line_end), (3, 9));
            assert!(
                found[0].message.contains("has 3 rows"),
                "{}",
                found[0].message
            );
        }
    }

    #[test]
    fn matching_claims_labels_units_and_far_claims_are_quiet() {
        for claim in [
            "Nous avons retenu trois approches :",
            "Three services and 2 databases are listed:",
            "See Section 2 for the 4.5 units.",
            "The 2,5 values and 10% of 2 000 requests, 5 ms each:",
            "2. Configure the services",
            "Version 2 introduces these parameters:",
        ] {
            let text = format!("# T\n\n{claim}\n\n{TABLE3}");
            assert!(scan(&text).is_empty(), "{claim}: {:?}", scan(&text));
        }
        let far = format!("# T\n\ndeux approches\n\n\n\n\n\n\n{TABLE3}");
        assert!(scan(&far).is_empty());
        let across_heading = format!("# T\n\ndeux approches\n\n## U\n\n{TABLE3}");
        assert!(scan(&across_heading).is_empty());
    }

    #[test]
    fn claims_must_introduce_the_table() {
        let unrelated = format!("# T\n\nThe release adds three major subsystems.\n\n{TABLE3}");
        assert!(scan(&unrelated).is_empty());
        let named = format!("# T\n\nWe list four kinds of A values.\n\n{TABLE3}");
        assert_eq!(scan(&named).len(), 0, "\"values\" is not a header word");
        let header = "| Protocol | Port |\n|---|---|\n| MQTT | 1 |\n| HTTP | 2 |\n| gRPC | 3 |\n";
        let by_header = format!(
            "# T\n\nThe gateway exposes two ingestion protocols, listed below.\n\n{header}"
        );
        assert_eq!(scan(&by_header).len(), 1);
    }

    #[test]
    fn column_claims_count_columns() {
        let text = format!("# T\n\nLe tableau a trois colonnes :\n\n{TABLE3}");
        let found = scan(&text);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].message.contains("has 2 columns"),
            "{}",
            found[0].message
        );
    }
}
