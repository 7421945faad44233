//! The one-line summary and the warnings of a batch.

use std::collections::BTreeMap;

use koas_review_schema::apply::BatchOutcome;

/// The most rejections listed as warnings.
const MAX_WARNINGS: usize = 10;

/// `12 ops (ops.json: 12 ops): 9 applied, 1 flagged, 2 rejected (REJECT_HASH 1, REJECT_RANGE 1); 3 need attention`,
/// with `, 4 already in the ledger (3 flagged, 1 dismissed)` after the
/// rejections when ops were known.
pub fn describe(batch: &BatchOutcome, sources: &[String]) -> String {
    let total = batch.applied.len() + batch.rejected.len() + batch.known.len();
    if total == 0 {
        return if sources.is_empty() {
            "no ops (no ops file and no edit plan): the document is unchanged".to_owned()
        } else {
            format!("no ops ({}): the document is unchanged", sources.join(", "))
        };
    }
    let changed = batch.applied.iter().filter(|a| a.change.is_some()).count();
    let flagged = batch.applied.len() - changed;
    let attention = batch
        .applied
        .iter()
        .filter(|a| a.op.needs_attention)
        .count();
    let mut by_class: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &batch.rejected {
        *by_class.entry(r.rejection.class.as_str()).or_insert(0) += 1;
    }
    let mut line = format!(
        "{total} ops ({}): {changed} applied, {flagged} flagged, {} rejected",
        sources.join(", "),
        batch.rejected.len()
    );
    if !by_class.is_empty() {
        let classes: Vec<String> = by_class.iter().map(|(c, n)| format!("{c} {n}")).collect();
        line.push_str(&format!(" ({})", classes.join(", ")));
    }
    if !batch.known.is_empty() {
        line.push_str(&format!(
            ", {} already in the ledger ({})",
            batch.known.len(),
            koas_edit::known::describe(&batch.known)
        ));
    }
    line.push_str(&format!("; {attention} need attention"));
    line
}

/// One warning per rejected op (the first few), with its reason.
pub fn rejection_warnings(batch: &BatchOutcome) -> Vec<String> {
    let mut out: Vec<String> = batch
        .rejected
        .iter()
        .take(MAX_WARNINGS)
        .map(|r| format!("{}: {}", r.rejection.class.as_str(), r.rejection.reason))
        .collect();
    if batch.rejected.len() > MAX_WARNINGS {
        out.push(format!(
            "… and {} more rejections (see stage3/apply_outcome.json)",
            batch.rejected.len() - MAX_WARNINGS
        ));
    }
    out
}
