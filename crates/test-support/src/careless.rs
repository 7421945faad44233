//! A careless model and a careful one, as functions of a review prompt,
//! for the scripted model of tests and benchmarks.
//!
//! - [`careless_ops`]: for each line of the chunk a prompt shows, at most
//!   one harmful edit labelled `typo`: a negation dropped, a modal
//!   flipped, a quantifier dropped, a heading's `#` removed, a list
//!   marker removed, a table delimiter row added under the line, an HTML
//!   element left open, a code fence left open, an invisible character,
//!   a number where a text belongs. Each op carries its [`Harm`] so that a
//!   benchmark can count what became of each class.
//! - [`plant_typos`]: true typos planted in a document's prose (one a
//!   line at most), with the fixes a careful model proposes.
//!
//! Line numbers in the ops are deliberately wrong: placement is by text.

use serde_json::{json, Value};

/// A class of harmful edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Harm {
    /// "does not own" → "does own", "ne gère pas" → "gère".
    Negation,
    /// "must" → "may", "doit" → "peut".
    Modal,
    /// "all" → "some", "only" dropped, "tous" → "certains".
    Quantifier,
    /// "## Title" → "Title".
    Heading,
    /// "- item" → "item".
    ListMarker,
    /// A `|---|` row added under the line.
    Table,
    /// `<details>` at the end of the line.
    HtmlOpen,
    /// An opening code fence after the line, never closed.
    Fence,
    /// A right-to-left override or a zero-width space inside a word.
    Invisible,
    /// `after_text` is the number 12345.
    WrongType,
}

impl Harm {
    /// Every class, in order.
    pub const ALL: [Harm; 10] = [
        Harm::Negation,
        Harm::Modal,
        Harm::Quantifier,
        Harm::Heading,
        Harm::ListMarker,
        Harm::Table,
        Harm::HtmlOpen,
        Harm::Fence,
        Harm::Invisible,
        Harm::WrongType,
    ];

    /// The class's name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Harm::Negation => "negation dropped",
            Harm::Modal => "modal flipped",
            Harm::Quantifier => "quantifier changed",
            Harm::Heading => "heading marker removed",
            Harm::ListMarker => "list marker removed",
            Harm::Table => "table row under a sentence",
            Harm::HtmlOpen => "HTML element left open",
            Harm::Fence => "code fence left open",
            Harm::Invisible => "invisible character",
            Harm::WrongType => "number as after_text",
        }
    }
}

/// The lines of the chunk a review prompt shows, without their numbers
/// (`  3 | text`): what the model is asked to review.
pub fn chunk_lines(prompt: &str) -> Vec<String> {
    let Some(start) = prompt.find("Text to review") else {
        return Vec::new();
    };
    prompt[start..]
        .lines()
        .skip(1)
        .map_while(|l| {
            let (number, text) = l.split_once(" | ")?;
            number.trim().parse::<usize>().ok()?;
            Some(text.to_owned())
        })
        .collect()
}

/// A cheap, stable hash of a line: which harm a plain line gets.
fn pick(text: &str, choices: usize) -> usize {
    let h = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    (h % choices as u64) as usize
}

fn replace_first(text: &str, from: &str, to: &str) -> Option<String> {
    text.contains(from).then(|| text.replacen(from, to, 1))
}

fn list_marker(text: &str) -> Option<usize> {
    let t = text.trim_start();
    let indent = text.len() - t.len();
    if t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") {
        return Some(indent + 2);
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0 && t[digits..].starts_with(". ")).then_some(indent + digits + 2)
}

/// The harmful edit a careless model makes of one line, if any.
fn harm_of(text: &str) -> Option<(Harm, Value)> {
    let t = text.trim();
    if t.is_empty()
        || t.starts_with("```")
        || t.starts_with("~~~")
        || t.starts_with('|')
        || t.starts_with('<')
        || t.starts_with("[[")
        || t.starts_with("$$")
        || text.starts_with("    ")
        || t.chars().filter(|c| c.is_alphabetic()).count() < 8
    {
        return None;
    }
    if t.starts_with('#') {
        let after = t.trim_start_matches('#').trim_start();
        return Some((Harm::Heading, json!(after)));
    }
    if let Some(at) = list_marker(text) {
        return Some((Harm::ListMarker, json!(&text[at..])));
    }
    let negation = replace_first(text, " not ", " ")
        .or_else(|| replace_first(text, " never ", " always "))
        .or_else(|| {
            let without = replace_first(text, " pas", "")?;
            replace_first(&without, "ne ", "").or_else(|| replace_first(&without, "n'", ""))
        });
    if let Some(after) = negation {
        return Some((Harm::Negation, json!(after)));
    }
    let modal = [
        (" must ", " may "),
        (" should ", " could "),
        (" shall ", " may "),
        (" doit ", " peut "),
        (" doivent ", " peuvent "),
    ]
    .iter()
    .find_map(|(from, to)| replace_first(text, from, to));
    if let Some(after) = modal {
        return Some((Harm::Modal, json!(after)));
    }
    let quantifier = [
        (" all ", " some "),
        (" every ", " some "),
        (" only ", " "),
        (" tous ", " certains "),
        (" toutes ", " certaines "),
        (" seulement ", " "),
    ]
    .iter()
    .find_map(|(from, to)| replace_first(text, from, to));
    if let Some(after) = quantifier {
        return Some((Harm::Quantifier, json!(after)));
    }
    let harm = [
        Harm::Table,
        Harm::HtmlOpen,
        Harm::Fence,
        Harm::Invisible,
        Harm::WrongType,
    ][pick(text, 5)];
    let after = match harm {
        Harm::Table => json!(format!("{text}\n|---|")),
        Harm::HtmlOpen => json!(format!("{text} <details>")),
        Harm::Fence => json!(format!("{text}\n\n```")),
        Harm::Invisible => {
            let at = text.find(' ').unwrap_or(text.len());
            let mark = if pick(text, 2) == 0 {
                '\u{202E}'
            } else {
                '\u{200B}'
            };
            json!(format!("{}{mark}{}", &text[..at], &text[at..]))
        }
        _ => json!(12345),
    };
    Some((harm, after))
}

/// For each line of a chunk, at most one harmful op labelled `typo` (see
/// the module documentation), with its class.
pub fn careless_ops(lines: &[String]) -> Vec<(Harm, Value)> {
    lines
        .iter()
        .enumerate()
        .filter_map(|(i, text)| {
            let (harm, after) = harm_of(text)?;
            Some((
                harm,
                json!({"action": "replace", "line": i + 100, "before_text": text,
                       "after_text": after, "kind": "typo", "severity": "minor",
                       "rationale": "typo"}),
            ))
        })
        .collect()
}

/// A word that may carry a planted typo: six letters or more, letters
/// only, and a word of prose, not an identifier (`CircuitBreaker`,
/// `CHANGELOG`: no capital after the first letter), which the guards
/// never let change silently.
fn typo_candidate(word: &str) -> bool {
    word.chars().count() >= 6
        && word.chars().all(char::is_alphabetic)
        && !word.chars().skip(1).any(char::is_uppercase)
}

/// Misspells `word`: two neighbouring letters in its middle swapped, or a
/// letter dropped when they are the same.
fn misspell(word: &str, seed: usize) -> Option<String> {
    let chars: Vec<char> = word.chars().collect();
    let at = 1 + seed % (chars.len() - 3);
    let mut c = chars.clone();
    if c[at] == c[at + 1] {
        c.remove(at);
    } else {
        c.swap(at, at + 1);
    }
    let typo: String = c.into_iter().collect();
    (typo != word).then_some(typo)
}

/// True typos planted in the prose of `text`: on one line in `every`
/// (outside code fences, tables, HTML, front matter and indented code, and
/// the 1-based lines `skip_line` refuses, such as protected ones), one
/// word of six letters or more that `avoid` does not refuse and that
/// occurs once in the document is misspelled. Returns the planted text
/// and the (typo, word) pairs, in document order.
pub fn plant_typos(
    text: &str,
    every: usize,
    avoid: impl Fn(&str) -> bool,
    skip_line: impl Fn(usize) -> bool,
) -> (String, Vec<(String, String)>) {
    let mut out = String::with_capacity(text.len());
    let mut fixes = Vec::new();
    let mut in_fence = false;
    let count = |w: &str| {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|x| *x == w)
            .count()
    };
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
        }
        let plain = !in_fence
            && !skip_line(n + 1)
            && !t.starts_with('|')
            && !t.starts_with('<')
            && !t.starts_with("$$")
            && !t.starts_with("---")
            && !line.starts_with("    ")
            && !line.starts_with('\t')
            && !t.contains('`')
            && !t.contains("](")
            && !t.contains("http");
        let chosen = (plain && n % every == 0)
            .then(|| {
                line.split(|c: char| !c.is_alphabetic())
                    .filter(|w| typo_candidate(w) && !avoid(w) && count(w) == 1)
                    .find_map(|w| Some((w.to_owned(), misspell(w, n)?)))
            })
            .flatten()
            .filter(|(_, typo)| !text.contains(typo.as_str()));
        match chosen {
            Some((word, typo)) => {
                out.push_str(&line.replacen(&word, &typo, 1));
                fixes.push((typo, word));
            }
            None => out.push_str(line),
        }
    }
    (out, fixes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_lines_are_read_from_the_prompt() {
        let prompt = "Intro\nText to review (2 lines; the numbers on the left are not part of the text):\n1 | # Title\n2 | Body text.\n\nAnswer with BEGIN_EDIT_OPS";
        assert_eq!(chunk_lines(prompt), ["# Title", "Body text."]);
    }

    #[test]
    fn each_plain_line_gets_one_harm() {
        let lines: Vec<String> = [
            "## Payment routing",
            "- Check the alerts first.",
            "The platform does not own payment routing.",
            "La plateforme ne gère pas le routage.",
            "Access must be enforced everywhere.",
            "The rules apply to all accounts here.",
            "A plain sentence with enough letters.",
            "",
            "```sh",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let ops = careless_ops(&lines);
        let harms: Vec<Harm> = ops.iter().map(|(h, _)| *h).collect();
        assert_eq!(
            &harms[..6],
            &[
                Harm::Heading,
                Harm::ListMarker,
                Harm::Negation,
                Harm::Negation,
                Harm::Modal,
                Harm::Quantifier
            ]
        );
        assert_eq!(ops.len(), 7);
        assert_eq!(ops[3].1["after_text"], "La plateforme gère le routage.");
        assert_eq!(ops[0].1["kind"], "typo");
    }

    #[test]
    fn planted_typos_are_unique_misspellings_with_their_fix() {
        let text = "# Title\n\nThe pipeline validates every document carefully.\n\n```\nvalidates inside code\n```\n\nAnother sentence mentions the repository.\n";
        let (planted, fixes) = plant_typos(text, 1, |w| w == "document", |_| false);
        assert_eq!(fixes.len(), 2, "{fixes:?}");
        let mut back = planted.clone();
        for (typo, word) in &fixes {
            assert!(planted.contains(typo.as_str()));
            back = back.replacen(typo.as_str(), word, 1);
        }
        assert_eq!(back, text);
        assert!(planted.contains("validates inside code"), "code untouched");
    }
}
