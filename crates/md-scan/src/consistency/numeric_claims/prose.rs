//! A count against the enumeration that follows it on its line.

use super::*;

/// Words that make an enumeration a sample, not the whole count.
pub(super) const NOT_EXHAUSTIVE: &[&str] = &[
    "e.g",
    "eg",
    "ex",
    "such",
    "like",
    "including",
    "incl",
    "notamment",
    "dont",
    "comme",
    "par",
    "see",
    "voir",
    "cf",
    "etc",
    "among",
    "parmi",
    "which",
    "who",
    "that",
    "where",
    "qui",
    "que",
    "où",
    "each",
    "chacun",
    "chacune",
    "both",
    "all",
    "tous",
    "toutes",
    // A clause, not a name: "two reasons: first, … and second, …".
    "first",
    "second",
    "then",
    "finally",
    "also",
    "but",
    "premièrement",
    "ensuite",
    "puis",
    "enfin",
    "aussi",
    "mais",
];

/// The items of an enumeration that follows a noun phrase on its line:
/// `(a, b, c)` right after it, or `: a, b and c.` to the end of the
/// sentence. Separators are read in the masked prose (a comma inside code
/// does not split); an enumeration that says it is a sample ("e.g.",
/// "notamment", "etc."), holds a clause rather than names (an item of more
/// than four words) or nests parentheses is not counted. `None` when there
/// is no such enumeration or fewer than two items.
pub(super) fn enumeration_after(rest: &str) -> Option<(u32, usize)> {
    let lead = rest.len() - rest.trim_start().len();
    let after = &rest[lead..];
    let in_parens = after.starts_with('(');
    let (inner, consumed) = if let Some(open) = after.strip_prefix('(') {
        let close = open.find(')')?;
        let inner = &open[..close];
        if inner.contains('(') {
            return None;
        }
        (inner, lead + 1 + close + 1)
    } else if let Some(colon) = after.strip_prefix(':') {
        let end = [". ", "; ", "! ", "? "]
            .iter()
            .filter_map(|p| colon.find(p))
            .min()
            .unwrap_or(colon.len());
        // An enumeration that runs past the end of the line without
        // closing its sentence goes on on the next line: not counted.
        let tail = colon.trim_end();
        if end == colon.len() && !tail.ends_with(['.', '!', '?', ';']) {
            return None;
        }
        let inner = colon[..end].trim_end().trim_end_matches(['.', '!', '?']);
        if inner.contains(['(', ')', '[', ']', ':']) {
            return None;
        }
        (inner, lead + 1 + end)
    } else {
        return None;
    };
    if inner.contains('…') || inner.contains("...") {
        return None;
    }
    let mut items: Vec<&str> = inner.split([',', ';']).collect();
    if let Some(last) = items.pop() {
        let last_trim = last.trim_start();
        let mut split = None;
        for conj in [" and ", " et ", " or ", " ou ", " & "] {
            if let Some(i) = last.find(conj) {
                split = Some((i, conj.len()));
                break;
            }
        }
        match split {
            Some((i, len)) => {
                items.push(&last[..i]);
                items.push(&last[i + len..]);
            }
            None => {
                // Oxford comma: "a, b, and c".
                let stripped = ["and ", "et ", "or ", "ou "]
                    .iter()
                    .find_map(|c| last_trim.strip_prefix(c))
                    .unwrap_or(last);
                items.push(stripped);
            }
        }
    }
    if items.len() < 2 {
        return None;
    }
    // Words in parentheses after a count often say what the things hold
    // ("all 3 test fixtures (code fences, YAML, tables, math)"); only
    // names are counted there: code, links, quoted strings.
    if in_parens
        && !items.iter().all(|item| {
            let t = item.trim();
            t.is_empty() || t.starts_with(['[', '"', '“', '«', '\''])
        })
    {
        return None;
    }
    for item in &items {
        let words: Vec<String> = item
            .split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .collect();
        if words.len() > 4 || words.iter().any(|w| NOT_EXHAUSTIVE.contains(&w.as_str())) {
            return None;
        }
        // An empty item that is not masked code is a stray separator.
        if item.is_empty() {
            return None;
        }
    }
    Some((items.len() as u32, consumed))
}

/// Reports a count that the enumeration right after it on its line
/// contradicts: "five folders (`src`, `docs`, `tests`)", "trois modes :
/// lecture, écriture, administration et audit."
pub fn detect_prose(doc: &Document<'_>, config: &ScanConfig, out: &mut Vec<Finding>) {
    for line in 1..=doc.line_count() {
        if doc.is_heading(line) {
            continue;
        }
        let Some(prose) = doc.prose(line) else {
            continue;
        };
        if !prose.contains(['(', ':']) {
            continue;
        }
        for claim in claims_in(line, prose, config) {
            if claim.counts_columns
                || in_parentheses(prose, claim.start)
                || BOUNDS.contains(&previous_word(&prose[..claim.start]).as_str())
            {
                continue;
            }
            // "Three modes are supported: …": filler between the noun and
            // the colon.
            let mut from = claim.end;
            for _ in 0..3 {
                let rest = &prose[from..];
                let word_len = rest
                    .trim_start()
                    .find(|c: char| !c.is_alphabetic() && c != '-')
                    .unwrap_or(rest.trim_start().len());
                let lead = rest.len() - rest.trim_start().len();
                let word = rest[lead..lead + word_len].to_lowercase();
                if word.is_empty() || !LIST_FILLER.contains(&word.as_str()) {
                    break;
                }
                from += lead + word_len;
            }
            if from > claim.end && !prose[from..].trim_start().starts_with(':') {
                from = claim.end;
            }
            let Some((items, consumed)) = enumeration_after(&prose[from..]) else {
                continue;
            };
            let consumed = consumed + (from - claim.end);
            if items == claim.value {
                continue;
            }
            let end = claim.end + consumed;
            out.push(
                Finding::new(
                    FindingKind::NumericContradiction,
                    KERNEL,
                    line,
                    line,
                    format!(
                        "The text announces {} (“{}”), but the enumeration right after it names {}",
                        claim.value, claim.phrase, items
                    ),
                    &around(doc.line(line), claim.start, end.min(prose.len())),
                )
                .at_column(doc.column(line, claim.start)),
            );
        }
    }
}
