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
use crate::gate::Warm;
use crate::markdown::MarkdownFacts;
use crate::numbers::number_word;
use crate::tables::Table;
use crate::words::CharClass;
use koas_review_schema::findings::{Finding, FindingKind};
use koas_review_schema::stage1::SectionEntry;
use regex::Regex;
use std::sync::LazyLock;

mod lists;
mod prose;
mod sections;
pub use lists::detect_lists;
pub use prose::detect_prose;
pub use sections::detect_sections;

// ASCII word boundaries: a Unicode `\b` makes the regex engine give up its
// fast path on any line with an accented letter, and this one reads most
// prose lines (the number words are ASCII anyway).
static NUMBER: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?-u:\b)(\d{1,3}|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|deux|trois|quatre|cinq|six|sept|huit|neuf|dix|onze|douze)(?-u:\b)",
    )
    .ok()
});

/// `\p{L}`, the letters of the word after a count, read from the regex
/// engine's tables (see [`CharClass`]).
static LETTERS: LazyLock<Option<CharClass>> = LazyLock::new(|| CharClass::parse(r"\p{L}"));

/// Compiles ahead the number regex (any document with prose reads it)
/// and, for text beyond ASCII, reads the letters' table.
pub(crate) fn warm<'a>(text: &'a str, jobs: &mut Vec<Warm<'a>>) {
    jobs.push(Box::new(|| {
        LazyLock::force(&NUMBER);
    }));
    if !text.is_ascii() {
        jobs.push(Box::new(|| {
            LazyLock::force(&LETTERS);
        }));
    }
}

/// The word at the start of `text`, as `^[\s*_]*([\p{L}][\p{L}'’-]*)`
/// would match it: the end of the whole match and the word. Read by hand
/// (compiling `\p{L}` costs more than checking a small document). The
/// two classes are disjoint, so reading greedily is what the regex does.
fn leading_word(text: &str) -> Option<(usize, &str)> {
    let is_letter = |c: char| {
        if c.is_ascii() {
            c.is_ascii_alphabetic()
        } else {
            LETTERS.as_ref().is_some_and(|l| l.contains(c))
        }
    };
    // `\s` is Unicode's White_Space, which is what `char::is_whitespace` reads.
    let rest = text.trim_start_matches(|c: char| c.is_whitespace() || c == '*' || c == '_');
    let start = text.len() - rest.len();
    let mut chars = rest.char_indices();
    let (_, first) = chars.next()?;
    if !is_letter(first) {
        return None;
    }
    let mut end = start + first.len_utf8();
    for (i, c) in chars {
        if !(is_letter(c) || matches!(c, '\'' | '’' | '-')) {
            break;
        }
        end = start + i + c.len_utf8();
    }
    Some((end, &text[start..end]))
}

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

/// How many header cells of `table` name one of the claim's words.
fn header_cells_naming(claim: &Claim, table: &Table) -> u32 {
    table
        .header
        .cells
        .iter()
        .filter(|cell| {
            cell.split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.chars().count() >= 4)
                .any(|w| claim.stems.contains(&stem(w)))
        })
        .count() as u32
}

/// `true` when byte `at` of `text` lies inside parentheses.
fn in_parentheses(text: &str, at: usize) -> bool {
    let before = &text[..at];
    before.matches('(').count() > before.matches(')').count()
}

/// `true` when the claim is what its line announces before a colon: it is
/// in the last sentence, is not a bound ("at least two"), and its noun
/// phrase ends that sentence, followed only by filler ("below", "as
/// follows", "suivantes", "exist") or one plural adjective ("deux approches
/// complémentaires :"). Another verb after it makes the noun a subject
/// whose object is what follows ("the two services share:").
fn announces(prose: &str, claim: &Claim) -> bool {
    let trimmed = prose.trim_end_matches(|c: char| c.is_whitespace() || c == '*' || c == '_');
    let Some(body) = trimmed.strip_suffix(':') else {
        return false;
    };
    if claim.end > body.len() {
        return false;
    }
    let sentence_start = body
        .rfind(". ")
        .or_else(|| body.rfind("! "))
        .or_else(|| body.rfind("? "))
        .map_or(0, |i| i + 2);
    if claim.start < sentence_start || in_parentheses(body, claim.start) {
        return false;
    }
    if BOUNDS.contains(&previous_word(&prose[..claim.start]).as_str()) {
        return false;
    }
    let mut between: Vec<String> = body[claim.end..]
        .split(|ch: char| ch.is_whitespace() || ch == ',')
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect();
    // A complement of the noun ("deux nœuds de calcul", "two kinds of
    // nodes") belongs to the noun phrase.
    if between.len() >= 2 && matches!(between[0].as_str(), "de" | "du" | "des" | "of") {
        between.drain(..2);
    }
    match between.as_slice() {
        [] => true,
        [one] if one.ends_with('s') || one.ends_with('x') => true,
        words => words.iter().all(|w| LIST_FILLER.contains(&w.as_str())),
    }
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
    let Some(number) = NUMBER.as_ref() else {
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
        if not_a_count(before, after) {
            continue;
        }
        if LABEL_WORDS.contains(&previous_word(before).as_str()) {
            continue;
        }
        // The noun phrase: up to three words, up to the first plural one.
        let mut rest = after;
        let mut words: Vec<(String, usize)> = Vec::new();
        while words.len() < 3 {
            let Some((end, w)) = leading_word(rest) else {
                break;
            };
            rest = &rest[end..];
            words.push((w.to_lowercase(), prose.len() - rest.len()));
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

/// Whether the number between `before` and `after` is no count: part of a
/// decimal, a version, a date, an amount, a percentage, a range, a list
/// item's number.
fn not_a_count(before: &str, after: &str) -> bool {
    if before.chars().next_back().is_some_and(|c| {
        matches!(
            c,
            '.' | ',' | '/' | '§' | '#' | '$' | '€' | '£' | '+' | '-' | '–' | ':' | '^' | '~' | '×'
        )
    }) {
        return true;
    }
    let mut next = after.chars();
    match (next.next(), next.next()) {
        (Some('.' | ',' | '/' | '-' | '–' | ':' | 'h' | '×'), Some(c)) if c.is_ascii_digit() => {
            true
        }
        (Some('%' | ')' | ':' | '/' | '°' | '€' | '$' | '+'), _) => true,
        (Some('.'), _)
            if before
                .trim_start_matches([' ', '\t', '>', '-', '*', '+'])
                .is_empty() =>
        {
            true
        }
        (Some(' ' | '\u{a0}' | '\u{202f}'), Some(c)) if c.is_ascii_digit() || c == '%' => true,
        _ => false,
    }
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
        // A claim in parentheses is an aside about something else
        // ("Examples (a server with 8 memory nodes):"); a claim on the
        // intro line must be what that line announces, not the subject of
        // another verb ("les deux services partagent :").
        claims.retain(|c| Some(c.line) == intro || names_header(c, table));
        let rows = table.rows.len() as u32;
        let columns = table.header.cells.len() as u32;
        let expected = |c: &Claim| if c.counts_columns { columns } else { rows };
        // "Les deux services" over `| | Service A | Service B |` counts the
        // header cells that name the noun, not the rows.
        let named_cells = |c: &Claim| header_cells_naming(c, table);
        if claims
            .iter()
            .any(|c| c.value == expected(c) || (named_cells(c) >= 2 && c.value == named_cells(c)))
        {
            continue;
        }
        // Only a claim about the table is reported: one in parentheses is
        // an aside about something else ("Examples (a server with 8 memory
        // nodes):"), and one on the intro line must be what that line
        // announces, not the subject of another verb ("les deux services
        // partagent :").
        claims.retain(|c| {
            let Some(prose) = doc.prose(c.line) else {
                return false;
            };
            !in_parentheses(prose, c.start) && (names_header(c, table) || announces(prose, c))
        });
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
    "exist",
    "apply",
    "follow",
    "remain",
    "available",
    "supported",
    "defined",
    "used",
    "possible",
    "required",
    "existent",
    "suivent",
    "restent",
    "possibles",
    "disponibles",
    "requis",
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

    /// Regression (issue 31, false pattern 3): a count about another noun
    /// than the table's rows was compared with them.
    #[test]
    fn counts_about_something_else_are_not_compared() {
        let four = "| Node | CPUs |\n|---|---|\n| 0 | 8 |\n| 1 | 8 |\n| 2 | 8 |\n| 3 | 8 |\n";
        for intro in [
            "Examples (a 64-core server with 8 memory nodes):",
            "Les deux services partagent :",
            "The two services share:",
        ] {
            let text = format!("# T\n\n{intro}\n\n{four}");
            assert!(scan(&text).is_empty(), "{intro}: {:?}", scan(&text));
        }
        // Two services named by two header cells: the count is of columns.
        let shared = "| Élément | Service A | Service B |\n|---|---|---|\n| base | oui | oui |\n| cache | oui | non |\n| file | non | oui |\n";
        let text = format!("# T\n\nLes deux services partagent :\n\n{shared}");
        assert!(scan(&text).is_empty(), "{:?}", scan(&text));
        // The true cases stay: the count is what the line announces.
        for intro in [
            "The cluster has two memory nodes:",
            "Le cluster compte deux nœuds de calcul suivants :",
            "Two options exist:",
        ] {
            let text = format!("# T\n\n{intro}\n\n{four}");
            assert_eq!(scan(&text).len(), 1, "{intro}");
        }
    }

    fn scan_prose(text: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let mut out = Vec::new();
        detect_prose(&doc, &ScanConfig::default(), &mut out);
        out
    }

    /// Regression (issue 31): a count announced in prose and enumerated
    /// right after it on the line was not compared.
    #[test]
    fn prose_enumerations_are_counted() {
        for (line, items) in [
            ("The repository holds five folders (`src`, `docs`, `tests`).", 3),
            ("Le guide comprend quatre parties : installation, configuration, usage, dépannage, annexes et glossaire.", 6),
            ("Three modes are supported: read, write, admin and audit.", 4),
            ("For three components: external-provisioner, external-resizer, kube-apiserver, kube-controller-manager.", 4),
            ("Il existe deux profils (`lecteur`, `rédacteur`, `administrateur`).", 3),
        ] {
            let found = scan_prose(&format!("# T\n\n{line}\n"));
            assert_eq!(found.len(), 1, "{line}: {found:?}");
            assert!(
                found[0].message.ends_with(&format!("names {items}")),
                "{}",
                found[0].message
            );
        }
    }

    #[test]
    fn prose_enumerations_that_match_or_are_samples_are_quiet() {
        for line in [
            "The repository holds three folders (`src`, `docs`, `tests`).",
            "Three modes: read, write, and admin.",
            "Two ports (80 and 443) are open.",
            "Five formats (e.g. JSON, YAML) are accepted.",
            "Quatre parties, notamment : installation, usage.",
            "Six regions (us-east, eu-west, etc.) are served.",
            "There are two reasons: first, it is slow, and second, it leaks.",
            "At least two options (a, b, c) must be set.",
            "Three modes (each of them, with a flag and its own default value) exist.",
            "Version 2 (2023, 2024) is current.",
            "We ran 3 times (Monday, Tuesday).",
            "Two services (see the table) run here.",
            "The parser handles all 3 test fixtures (code fences, YAML, tables, math).",
            "Sorting functions come in three flavours: *raw*, `_by` and",
        ] {
            let found = scan_prose(&format!("# T\n\n{line}\n"));
            assert!(found.is_empty(), "{line}: {found:?}");
        }
    }

    fn scan_sections(text: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let mut out = Vec::new();
        detect_sections(&doc, &ScanConfig::default(), &mut out);
        out
    }

    /// Regression (issue 31): "quatre sous-parties" announced, six
    /// following, was missed (only the next table or list was compared).
    #[test]
    fn announced_parts_are_compared_with_the_sub_headings() {
        let subs: String = (1..=6)
            .map(|i| format!("### Partie {i}\n\nTexte.\n\n"))
            .collect();
        let fr = format!(
            "# Guide\n\n## Organisation\n\nCette section comprend quatre sous-parties.\n\n{subs}"
        );
        let found = scan_sections(&fr);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].message.contains("6 sub-headings"),
            "{}",
            found[0].message
        );
        let en = "Intro: this document has three parts.\n\n## A\n\n## B\n";
        assert_eq!(scan_sections(en).len(), 1);
    }

    #[test]
    fn announced_parts_that_match_or_are_elsewhere_are_quiet() {
        for body in [
            "Cette section comprend trois parties.",
            "RFC 9110 has twelve sections.",
            "This section has at least two parts.",
            "This guide covers three topics.",
            "The spec has five parts (see below).",
            "RFC 9110, cited below, has twelve sections.",
            "Les quatre parties de la norme sont citées.",
        ] {
            let text = format!("# T\n\n## S\n\n{body}\n\n### a\n\n### b\n\n### c\n");
            assert!(
                scan_sections(&text).is_empty(),
                "{body}: {:?}",
                scan_sections(&text)
            );
        }
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

#[cfg(test)]
mod leading_word_tests {
    use super::leading_word;
    use proptest::prelude::*;

    fn by_regex(text: &str) -> Option<(usize, &str)> {
        let word = regex::Regex::new(r"^[\s*_]*([\p{L}][\p{L}'’-]*)").ok()?;
        let c = word.captures(text)?;
        Some((c.get(0)?.end(), c.get(1)?.as_str()))
    }

    #[test]
    fn reads_words_like_the_regex() {
        for t in [
            " *tables* of",
            "_x",
            "l’équipe",
            "été",
            "\u{a0}word",
            "9 lives",
            "",
            "don't-stop now",
            "a’b",
            "’a",
            "-a",
            "naïve",
            "Ünits",
        ] {
            assert_eq!(leading_word(t), by_regex(t), "{t:?}");
        }
    }

    proptest! {
        #[test]
        fn agrees_with_the_regex(t in "[ \t*_a-zA-Z'’\\-é\u{a0}\u{2028}ǅªⅫ٣0-9.]{0,10}") {
            prop_assert_eq!(leading_word(&t), by_regex(&t));
        }
    }
}
