//! A section's announced number of parts against its sub-headings.

use super::*;

/// Nouns that count the sub-sections of the section they stand in.
pub(super) const PART_NOUNS: &[&str] = &[
    "sections",
    "subsections",
    "sub-sections",
    "parts",
    "chapters",
    "parties",
    "sous-parties",
    "sous-sections",
    "chapitres",
];

/// Words that tie a count to the text around it ("this document has three
/// parts", "les quatre parties suivantes") rather than to another document.
pub(super) const HERE_MARKERS: &[&str] = &[
    "this document",
    "this section",
    "this chapter",
    "this guide",
    "this page",
    "this part",
    "this article",
    "this specification",
    "ce document",
    "cette section",
    "ce chapitre",
    "ce guide",
    "cette page",
    "cette partie",
    "cet article",
    "ce texte",
];

/// Words right next to a count that point at what follows ("the following
/// four parts", "quatre parties suivantes").
pub(super) const NEXT_TO: &[&str] = &[
    "following",
    "below",
    "suivants",
    "suivantes",
    "ci-dessous",
    "ci-après",
];

/// Reports a section whose text announces a number of parts ("ce guide
/// comprend quatre parties", "this section has three sub-sections below")
/// that its sub-headings contradict.
pub fn detect_sections(doc: &Document<'_>, config: &ScanConfig, out: &mut Vec<Finding>) {
    let sections = &doc.stage1.sections.sections;
    let top_level: Vec<&SectionEntry> = sections.iter().filter(|s| s.parent.is_none()).collect();
    let mut scopes: Vec<(u32, u32, Vec<u32>)> = Vec::new();
    if let Some(first) = sections.first() {
        if first.line_start > 1 && top_level.len() >= 2 {
            let lines = top_level.iter().map(|s| s.line_start).collect();
            scopes.push((1, first.line_start - 1, lines));
        }
    }
    for s in sections {
        if s.children.len() < 2 {
            continue;
        }
        let lines = sections
            .iter()
            .filter(|c| c.parent.as_deref() == Some(s.id.as_str()))
            .map(|c| c.line_start)
            .collect();
        scopes.push((s.heading_line_end + 1, s.body_line_end, lines));
    }
    for (from, to, children) in scopes {
        let count = children.len() as u32;
        for line in from..=to {
            let Some(prose) = doc.prose(line) else {
                continue;
            };
            // Most lines name no part at all: skip them before lowering
            // the case and looking for counts.
            let lower = prose.to_lowercase();
            if !PART_NOUNS.iter().any(|n| lower.contains(n)) {
                continue;
            }
            let here = HERE_MARKERS.iter().any(|m| lower.contains(m));
            for claim in claims_in(line, prose, config) {
                let next_word = prose[claim.end..]
                    .split(|c: char| c.is_whitespace() || c == ',' || c == '.' || c == ':')
                    .find(|w| !w.is_empty())
                    .unwrap_or("")
                    .to_lowercase();
                let pointed = NEXT_TO.contains(&previous_word(&prose[..claim.start]).as_str())
                    || NEXT_TO.contains(&next_word.as_str());
                if !here && !pointed {
                    continue;
                }
                let noun = claim
                    .phrase
                    .split_whitespace()
                    .last()
                    .unwrap_or("")
                    .to_lowercase();
                if !PART_NOUNS.contains(&noun.as_str())
                    || claim.value == count
                    || in_parentheses(prose, claim.start)
                    || BOUNDS.contains(&previous_word(&prose[..claim.start]).as_str())
                {
                    continue;
                }
                let lines: Vec<String> = children.iter().map(u32::to_string).collect();
                out.push(
                    Finding::new(
                        FindingKind::NumericContradiction,
                        KERNEL,
                        line,
                        to,
                        format!(
                            "The text announces {} (“{}”), but {} sub-headings follow (lines {})",
                            claim.value,
                            claim.phrase,
                            count,
                            lines.join(", ")
                        ),
                        &around(doc.line(line), claim.start, claim.end),
                    )
                    .at_column(doc.column(line, claim.start)),
                );
            }
        }
    }
}
