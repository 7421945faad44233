//! A count against the list right after it.

use super::*;

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
        let claims: Vec<Claim> = claims_in(intro, prose, config)
            .into_iter()
            .filter(|c| !c.counts_columns && announces(prose, c))
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
