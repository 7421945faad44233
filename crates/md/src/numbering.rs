//! Explicit heading numbering: `2.3`, `2.3.`, `1.`, `1)`, `II.`, `iv)`,
//! `A.1`, `B.`.
//!
//! The number is the first whitespace-separated token of the title. It is
//! made of parts separated by `.`; the first part is Arabic (1–4 digits), a
//! valid Roman numeral, or a single ASCII letter; the other parts are
//! Arabic. A single part needs a trailing `.` or `)` (so `2024 Roadmap` and
//! `A Guide` are not numbered). The single letters `I`, `V` and `X` read as
//! Roman numerals, every other single letter (including `C`, `D`, `L`, `M`)
//! as a letter.

use koas_review_schema::stage1::{Numbering, NumberingKind};

/// Separators allowed between the number and the rest of the title.
const SEPARATORS: &[char] = &['-', '–', '—', ':'];

/// Detects explicit numbering at the start of `title`.
pub fn detect(title: &str) -> Option<Numbering> {
    let title = title.trim_start();
    let token_end = title.find(char::is_whitespace).unwrap_or(title.len());
    let raw = &title[..token_end];
    let (label, delimited) = match raw.strip_suffix(['.', ')']) {
        Some(l) => (l, true),
        None => (raw, false),
    };
    if label.is_empty() || label.contains(')') {
        return None;
    }
    let pieces: Vec<&str> = label.split('.').collect();
    if pieces.len() < 2 && !delimited {
        return None;
    }
    let (kind, first) = first_part(pieces[0])?;
    let mut parts = vec![first];
    for p in &pieces[1..] {
        parts.push(arabic(p)?);
    }
    let rest = title[token_end..]
        .trim_start()
        .trim_start_matches(SEPARATORS)
        .trim_start()
        .to_string();
    Some(Numbering {
        label: label.to_string(),
        raw: raw.to_string(),
        kind,
        parts,
        rest,
    })
}

fn arabic(p: &str) -> Option<u32> {
    if p.is_empty() || p.len() > 4 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse().ok()
}

fn first_part(p: &str) -> Option<(NumberingKind, u32)> {
    if let Some(n) = arabic(p) {
        return Some((NumberingKind::Arabic, n));
    }
    let mut chars = p.chars();
    if let (Some(c), None) = (chars.next(), chars.clone().next()) {
        if c.is_ascii_alphabetic() {
            if matches!(c.to_ascii_uppercase(), 'I' | 'V' | 'X') {
                return roman(p).map(|n| (NumberingKind::Roman, n));
            }
            let value = u32::from(c.to_ascii_uppercase()) - u32::from('A') + 1;
            return Some((NumberingKind::Letter, value));
        }
        return None;
    }
    roman(p).map(|n| (NumberingKind::Roman, n))
}

/// The value of a valid Roman numeral (all upper or all lower case,
/// canonical form only: `IIII` and `IC` are refused).
fn roman(p: &str) -> Option<u32> {
    // The longest canonical numeral below 4000 is MMMDCCCLXXXVIII (15).
    if p.is_empty() || p.len() > 15 {
        return None;
    }
    let upper = p.to_ascii_uppercase();
    if p != upper && p != p.to_ascii_lowercase() {
        return None;
    }
    let value_of = |c: char| match c {
        'I' => Some(1),
        'V' => Some(5),
        'X' => Some(10),
        'L' => Some(50),
        'C' => Some(100),
        'D' => Some(500),
        'M' => Some(1000),
        _ => None,
    };
    let values: Vec<u32> = upper.chars().map(value_of).collect::<Option<_>>()?;
    // Evaluate, then round-trip to refuse non-canonical forms.
    let mut total = 0u32;
    let mut i = 0;
    while i < values.len() {
        let v = values[i];
        match values.get(i + 1) {
            Some(&next) if next > v => {
                total += next - v;
                i += 2;
            }
            _ => {
                total += v;
                i += 1;
            }
        }
    }
    (total > 0 && total < 4000 && to_roman(total) == upper).then_some(total)
}

fn to_roman(mut n: u32) -> String {
    const TABLE: &[(u32, &str)] = &[
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut out = String::new();
    for &(v, s) in TABLE {
        while n >= v {
            out.push_str(s);
            n -= v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(title: &str, label: &str, kind: NumberingKind, parts: &[u32], rest: &str) {
        let n = detect(title).unwrap_or_else(|| panic!("{title:?} should be numbered"));
        assert_eq!(n.label, label, "{title}");
        assert_eq!(n.kind, kind, "{title}");
        assert_eq!(n.parts, parts, "{title}");
        assert_eq!(n.rest, rest, "{title}");
    }

    #[test]
    fn the_four_required_patterns() {
        check(
            "2.3 Methods",
            "2.3",
            NumberingKind::Arabic,
            &[2, 3],
            "Methods",
        );
        check(
            "2.3. Methods",
            "2.3",
            NumberingKind::Arabic,
            &[2, 3],
            "Methods",
        );
        check(
            "II. Résultats",
            "II",
            NumberingKind::Roman,
            &[2],
            "Résultats",
        );
        check(
            "A.1 Annex table",
            "A.1",
            NumberingKind::Letter,
            &[1, 1],
            "Annex table",
        );
    }

    #[test]
    fn other_accepted_forms() {
        check(
            "1. Introduction",
            "1",
            NumberingKind::Arabic,
            &[1],
            "Introduction",
        );
        check("3) Scope", "3", NumberingKind::Arabic, &[3], "Scope");
        check("iv. Notes", "iv", NumberingKind::Roman, &[4], "Notes");
        check(
            "XIV. Fourteen",
            "XIV",
            NumberingKind::Roman,
            &[14],
            "Fourteen",
        );
        check("B. Glossary", "B", NumberingKind::Letter, &[2], "Glossary");
        check("C. Data", "C", NumberingKind::Letter, &[3], "Data");
        check(
            "1.2.3.4 Deep",
            "1.2.3.4",
            NumberingKind::Arabic,
            &[1, 2, 3, 4],
            "Deep",
        );
        check(
            "4.1 — Overview",
            "4.1",
            NumberingKind::Arabic,
            &[4, 1],
            "Overview",
        );
        check("5.2", "5.2", NumberingKind::Arabic, &[5, 2], "");
        assert_eq!(detect("2.3. Methods").map(|n| n.raw), Some("2.3.".into()));
    }

    #[test]
    fn not_numbering() {
        for t in [
            "Methods",
            "2024 Roadmap",
            "A Guide",
            "I am here",
            "IIII. Bad roman",
            "IC. Bad roman",
            "v7.3.1 Policy",
            "12345. Too long",
            "2..3 Empty part",
            "1.a Letter later",
            "",
            "Ab. Two letters",
            "é. accent",
        ] {
            assert_eq!(detect(t), None, "{t:?}");
        }
    }
}
