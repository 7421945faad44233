//! Scoring what a model did to a planted copy against the truth.
//!
//! Each planted defect is **fixed** when its line reads as the original
//! again and nothing else in its block changed, **partially fixed** when
//! its line changed otherwise, **missed** when it did not change. Each
//! proposal that touches no planted line is **harmful**, counted by what
//! the guards did with it: refused (never applied), flagged (applied as a
//! flag, or applied with a guard's warning) or silent (applied as a quiet
//! fix: the case the guards exist to prevent).

use crate::plant::{DefectKind, PlantedDoc};
use serde::{Deserialize, Serialize};
use similar::{capture_diff_slices, Algorithm, DiffOp};
use std::collections::BTreeMap;

/// What happened to one planted defect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DefectStatus {
    /// The line reads as the original.
    Fixed,
    /// The line changed, not to the original.
    Partial,
    /// The line did not change.
    Missed,
}

/// What the guards did with a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Guarded {
    /// Refused: not applied.
    Refused,
    /// Applied as a flag or with a guard's warning.
    Flagged,
    /// Applied as a quiet fix.
    Silent,
}

/// One proposal of the model, placed on the planted copy's lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// First line (1-based) of the planted copy it targets.
    pub first: usize,
    /// Last line (inclusive).
    pub last: usize,
    /// What the guards did with it.
    pub guarded: Guarded,
    /// `false` for a note that changes nothing (a flag the model asked
    /// for, or its prose answer kept as a note): neither a fix nor harm.
    pub change: bool,
}

/// The score of one planted document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocScore {
    /// Per defect ID, its status.
    pub defects: BTreeMap<String, (DefectKind, DefectStatus)>,
    /// Harmful proposals, by what the guards did.
    pub harmful: BTreeMap<String, usize>,
    /// Proposals that touched a planted line.
    pub on_defects: usize,
    /// Notes: proposals that change nothing.
    pub notes: usize,
}

impl DocScore {
    /// How many defects have `status`.
    pub fn count(&self, status: DefectStatus) -> usize {
        self.defects.values().filter(|(_, s)| *s == status).count()
    }

    /// Harmful proposals the guards let through silently.
    pub fn silent_harm(&self) -> usize {
        self.harmful.get("silent").copied().unwrap_or(0)
    }

    /// Every harmful proposal.
    pub fn harm(&self) -> usize {
        self.harmful.values().sum()
    }
}

/// For each line of `before` (0-based), what it became in `after`: the
/// same line, or the lines of the block that replaced it (empty when
/// deleted).
fn fate(before: &[&str], after: &[&str]) -> Vec<Option<Vec<String>>> {
    let mut out: Vec<Option<Vec<String>>> = vec![None; before.len()];
    for op in capture_diff_slices(Algorithm::Myers, before, after) {
        match op {
            DiffOp::Equal { .. } | DiffOp::Insert { .. } => {}
            DiffOp::Delete {
                old_index, old_len, ..
            } => {
                for slot in out.iter_mut().skip(old_index).take(old_len) {
                    *slot = Some(Vec::new());
                }
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                let block: Vec<String> = after[new_index..new_index + new_len]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                for slot in out.iter_mut().skip(old_index).take(old_len) {
                    *slot = Some(block.clone());
                }
            }
        }
    }
    out
}

/// Scores `result` (the planted copy after the model's applied changes)
/// and the model's proposals.
pub fn score(doc: &PlantedDoc, result: &str, proposals: &[Proposal]) -> DocScore {
    let before: Vec<&str> = doc.text.split('\n').collect();
    let after: Vec<&str> = result.split('\n').collect();
    let fates = fate(&before, &after);
    let mut out = DocScore::default();
    for d in &doc.defects {
        let status = match fates.get(d.line - 1) {
            None | Some(None) => DefectStatus::Missed,
            Some(Some(block)) if block.len() == 1 && block[0] == d.truth => DefectStatus::Fixed,
            Some(Some(_)) => DefectStatus::Partial,
        };
        out.defects.insert(d.id.clone(), (d.kind, status));
    }
    for p in proposals {
        if !p.change {
            out.notes += 1;
            continue;
        }
        let on_defect = doc
            .defects
            .iter()
            .any(|d| p.first <= d.line && d.line <= p.last);
        if on_defect {
            out.on_defects += 1;
            continue;
        }
        let key = match p.guarded {
            Guarded::Refused => "refused",
            Guarded::Flagged => "flagged",
            Guarded::Silent => "silent",
        };
        *out.harmful.entry(key.to_string()).or_default() += 1;
    }
    out
}
