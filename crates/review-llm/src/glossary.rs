//! The terms a document defines, found without a model: acronyms
//! introduced with their expansion, bold or quoted terms followed by a
//! definition, "X means …", « X » désigne …, and the entries of a
//! glossary section (list items or table rows). A reviewer that knows
//! the document's own vocabulary does not "correct" it.

use std::collections::HashSet;

use koas_review_schema::pyramid::{Glossary, GlossaryTerm};
use koas_review_schema::stage1::{LineNo, SectionIndex, PREAMBLE_SECTION_ID};

/// Words of a heading that make its section a glossary.
const GLOSSARY_HEADINGS: &[&str] = &[
    "glossary",
    "glossaire",
    "definitions",
    "définitions",
    "terminology",
    "terminologie",
    "lexique",
    "abbreviations",
    "abréviations",
    "acronyms",
    "acronymes",
    "sigles",
];

/// Verbs that introduce a definition after a term.
const DEFINING: &[&str] = &[
    " means ",
    " refers to ",
    " is defined as ",
    " stands for ",
    " désigne ",
    " signifie ",
    " s'entend ",
    " se définit comme ",
];

/// The glossary of `text`.
pub fn extract(text: &str, sections: &SectionIndex, doc_hash: &str) -> Glossary {
    let mut terms = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut in_fence: Option<&str> = None;
    let glossary_sections: Vec<(LineNo, LineNo)> = sections
        .sections
        .iter()
        .filter(|s| {
            let title = s.title.to_lowercase();
            GLOSSARY_HEADINGS.iter().any(|g| title.contains(g))
        })
        .map(|s| (s.heading_line_end + 1, s.line_end))
        .collect();
    for (i, raw) in text.lines().enumerate() {
        let line_no = LineNo::try_from(i + 1).unwrap_or(LineNo::MAX);
        let line = raw.trim();
        if let Some(fence) = in_fence {
            if line.starts_with(fence) {
                in_fence = None;
            }
            continue;
        }
        if line.starts_with("```") {
            in_fence = Some("```");
            continue;
        }
        if line.starts_with("~~~") {
            in_fence = Some("~~~");
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let in_glossary = glossary_sections
            .iter()
            .any(|&(s, e)| s <= line_no && line_no <= e);
        let mut found = Vec::new();
        if in_glossary {
            found.extend(glossary_entry(line));
        }
        found.extend(bold_definition(line));
        found.extend(verb_definition(line));
        found.extend(acronyms(line));
        for (term, definition) in found {
            let key = term.to_lowercase();
            if term.len() < 2 || definition.len() < 2 || !seen.insert(key) {
                continue;
            }
            terms.push(GlossaryTerm {
                term,
                definition,
                section_id: section_of(sections, line_no),
                line: line_no,
            });
        }
    }
    Glossary {
        doc_hash: doc_hash.to_owned(),
        terms,
    }
}

fn section_of(sections: &SectionIndex, line: LineNo) -> String {
    sections
        .sections
        .iter()
        .filter(|s| s.line_start <= line && line <= s.line_end)
        .max_by_key(|s| s.line_start)
        .map_or_else(|| PREAMBLE_SECTION_ID.to_owned(), |s| s.id.clone())
}

fn clean(text: &str) -> String {
    text.trim()
        .trim_matches(|c: char| matches!(c, '*' | '_' | '`' | '"' | '«' | '»' | '“' | '”'))
        .trim()
        .trim_end_matches(['.', ';', ','])
        .trim()
        .to_owned()
}

/// `- Term: definition`, `- **Term** — definition`, `| Term | Definition |`.
fn glossary_entry(line: &str) -> Option<(String, String)> {
    if let Some(row) = line.strip_prefix('|') {
        let cells: Vec<&str> = row
            .trim_end_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        if cells.len() >= 2
            && !cells[0].chars().all(|c| matches!(c, '-' | ':' | ' '))
            && !cells[0].is_empty()
        {
            let lower = cells[0].to_lowercase();
            if [
                "term",
                "terme",
                "acronym",
                "sigle",
                "abréviation",
                "abbreviation",
            ]
            .contains(&lower.as_str())
            {
                return None;
            }
            return Some((clean(cells[0]), clean(cells[1])));
        }
        return None;
    }
    let item = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .or_else(|| line.strip_prefix("+ "))?;
    for sep in [" : ", ": ", " — ", " – ", " - "] {
        if let Some((term, def)) = item.split_once(sep) {
            if term.split_whitespace().count() <= 6 {
                return Some((clean(term), clean(def)));
            }
        }
    }
    None
}

/// `**Term**: definition` or `**Term** — definition` at the start of a line
/// (after an optional list marker).
fn bold_definition(line: &str) -> Option<(String, String)> {
    let item = line.trim_start_matches(['-', '*', '+', ' ']);
    let item = if line.starts_with("**") { line } else { item };
    let rest = item.strip_prefix("**")?;
    let (term, after) = rest.split_once("**")?;
    let after = after.trim_start();
    let def = after
        .strip_prefix(':')
        .or_else(|| after.strip_prefix('—'))
        .or_else(|| after.strip_prefix('–'))
        .or_else(|| after.strip_prefix(" :"))?;
    (term.split_whitespace().count() <= 6).then(|| (clean(term), clean(def)))
}

/// `Term means …`, `« Terme » désigne …`, `On entend par X …`.
fn verb_definition(line: &str) -> Option<(String, String)> {
    let lower = line.to_lowercase();
    if let Some(rest) = lower.strip_prefix("on entend par ") {
        let start = line.len() - rest.len();
        let (term, def) = line[start..].split_once(',')?;
        return Some((clean(term), clean(def)));
    }
    for verb in DEFINING {
        let Some(at) = lower.find(verb) else {
            continue;
        };
        let head = line[..at].trim();
        // A quoted or emphasized term is the term, whatever precedes it
        // ("A \"workspace\" means").
        let term = quoted(head).unwrap_or_else(|| clean(head));
        // A term is a short noun phrase at the start of the sentence,
        // written as a name: quoted, emphasized or capitalized.
        let marked = quoted(head).is_some() || term.chars().next().is_some_and(char::is_uppercase);
        if !marked || term.split_whitespace().count() > 5 || term.is_empty() {
            continue;
        }
        let def = clean(&line[at + verb.len()..]);
        return Some((term, def));
    }
    None
}

/// The text between the first pair of quotes or emphasis marks in `head`.
fn quoted(head: &str) -> Option<String> {
    for (open, close) in [
        ("\"", "\""),
        ("«", "»"),
        ("“", "”"),
        ("**", "**"),
        ("*", "*"),
        ("`", "`"),
    ] {
        if let Some(start) = head.find(open) {
            let after = &head[start + open.len()..];
            if let Some(end) = after.find(close) {
                let term = clean(&after[..end]);
                if !term.is_empty() {
                    return Some(term);
                }
            }
        }
    }
    None
}

/// `Service Level Objective (SLO)` and `SLO (Service Level Objective)`:
/// an acronym whose letters are the initials of the words beside it.
fn acronyms(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find('(') {
        let Some(close) = rest[open..].find(')').map(|c| open + c) else {
            break;
        };
        let inside = rest[open + 1..close].trim();
        let before = &rest[..open];
        if is_acronym(inside) {
            let n = inside.chars().filter(|c| c.is_alphabetic()).count();
            let words: Vec<&str> = before.split_whitespace().collect();
            let window = words.len().saturating_sub(n + 3);
            let candidates = &words[window..];
            // The shortest run of words ending before the parenthesis whose
            // significant initials spell the acronym.
            for start in (0..candidates.len()).rev() {
                let phrase = &candidates[start..];
                if initials_match(phrase, inside) {
                    out.push((inside.to_owned(), clean(&phrase.join(" "))));
                    break;
                }
            }
        } else if let Some(acronym) = before.split_whitespace().last().filter(|w| is_acronym(w)) {
            let words: Vec<&str> = inside.split_whitespace().collect();
            if initials_match(&words, acronym) {
                out.push((acronym.to_owned(), clean(inside)));
            }
        }
        rest = &rest[close + 1..];
    }
    out
}

fn is_acronym(word: &str) -> bool {
    let letters = word.chars().filter(|c| c.is_alphabetic()).count();
    (2..=8).contains(&letters)
        && word
            .chars()
            .all(|c| c.is_uppercase() || c.is_ascii_digit() || c == '-')
        && word.chars().filter(|c| c.is_uppercase()).count() >= 2
}

/// True when the acronym's letters are prefixes of the words, in order:
/// every significant word gives at least its first letter (`Numérique`
/// may give `NUM`), small words (`of`, `de`) may give none.
fn initials_match(words: &[&str], acronym: &str) -> bool {
    const SMALL: &[&str] = &[
        "of", "the", "and", "for", "de", "des", "du", "la", "le", "les", "et", "à", "en", "a",
    ];
    let letters: Vec<char> = acronym
        .chars()
        .filter(|c| c.is_alphabetic())
        .flat_map(char::to_uppercase)
        .collect();
    let words: Vec<Vec<char>> = words
        .iter()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .trim_start_matches("d'")
                .trim_start_matches("l'")
                .chars()
                .flat_map(char::to_uppercase)
                .collect::<Vec<char>>()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let small: Vec<bool> = words
        .iter()
        .map(|w| SMALL.contains(&w.iter().collect::<String>().to_lowercase().as_str()))
        .collect();
    fn go(words: &[Vec<char>], small: &[bool], letters: &[char]) -> bool {
        let Some((word, rest)) = words.split_first() else {
            return letters.is_empty();
        };
        if small[0] && go(rest, &small[1..], letters) {
            return true;
        }
        (1..=word.len().min(letters.len()))
            .any(|k| word[..k] == letters[..k] && go(rest, &small[1..], &letters[k..]))
    }
    !words.is_empty() && !small[0] && go(&words, &small, &letters)
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_md::stage1;
    use koas_review_schema::stage1::ChunkConfig;

    fn glossary(text: &str) -> Vec<(String, String, String)> {
        let s = stage1::run("d.md", text, ChunkConfig::default()).expect("stage 1");
        extract(text, &s.structure.sections, &s.doc_hash)
            .terms
            .into_iter()
            .map(|t| (t.term, t.definition, t.section_id))
            .collect()
    }

    #[test]
    fn acronyms_both_ways() {
        let g = glossary("# Scope\n\nEach Service Level Objective (SLO) is reviewed.\nThe RTO (Recovery Time Objective) is 4 h.\n");
        assert!(
            g.contains(&("SLO".into(), "Service Level Objective".into(), "S1".into())),
            "{g:?}"
        );
        assert!(
            g.contains(&("RTO".into(), "Recovery Time Objective".into(), "S1".into())),
            "{g:?}"
        );
        let fr =
            glossary("La Direction Interministérielle du Numérique (DINUM) pilote le projet.\n");
        assert!(
            fr.contains(&(
                "DINUM".into(),
                "Direction Interministérielle du Numérique".into(),
                "S0".into()
            )),
            "{fr:?}"
        );
        assert!(glossary("The value (see TABLE) is (probably) fine.\n").is_empty());
    }

    #[test]
    fn definitions_and_glossary_sections() {
        let g = glossary("# Terms\n\n**Tenant**: an organisation using the platform.\nA \"workspace\" means the folder of one review.\n« Opérateur » désigne la personne qui lance la revue.\n\n## Glossaire\n\n- Jalon : étape datée du projet.\n| Terme | Définition |\n|---|---|\n| Lot | ensemble de changements |\n");
        let terms: Vec<&str> = g.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(
            terms,
            ["Tenant", "workspace", "Opérateur", "Jalon", "Lot"],
            "{g:?}"
        );
        assert_eq!(g[3].2, "S1.1");
        assert_eq!(g[0].1, "an organisation using the platform");
    }

    #[test]
    fn code_and_ordinary_sentences_define_nothing() {
        assert!(glossary("```\n**NotATerm**: in code\n```\nthe system means well.\n").is_empty());
    }
}
