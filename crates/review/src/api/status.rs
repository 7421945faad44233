//! The state of a document's review workspace, and the repair of a torn
//! ledger tail.

use super::session::{ApiError, Session};
use crate::common::{clock, command_line};
use anyhow::Context as _;
use koas_review_workspace::WorkspaceStatus;
use serde_json::json;
use std::path::PathBuf;

/// A review's state, and DOC's against it.
#[derive(Debug)]
pub struct ReviewStatus {
    /// What the workspace holds.
    pub status: WorkspaceStatus,
    /// DOC against its review.
    pub doc: DocState,
    /// DOC was edited outside koas since its last review.
    pub changed_outside: bool,
    /// Recorded changes DOC does not have; `None`: DOC is no version the
    /// review knows.
    pub behind: Option<usize>,
    /// Where a repaired torn ledger tail was moved (`repair` asked).
    pub repaired: Option<PathBuf>,
    /// Other workspaces of this document, under names an earlier koas gave.
    pub others: Vec<PathBuf>,
}

impl ReviewStatus {
    /// The answer's JSON form (`koas status --json`, the MCP tool).
    pub fn to_json(&self) -> Result<serde_json::Value, ApiError> {
        let mut value = serde_json::to_value(&self.status).map_err(anyhow::Error::from)?;
        if let Some(map) = value.as_object_mut() {
            map.insert("status".into(), json!(overall(&self.status, &self.doc)));
            map.insert("document_behind_by".into(), json!(self.behind));
            map.insert("in_place_interrupted".into(), json!(self.doc.interrupted));
            map.insert(
                "document_changed_outside".into(),
                json!(self.changed_outside),
            );
            map.insert("document_file".into(), json!(self.doc.file.as_str()));
            map.insert("writes_document".into(), json!(self.doc.writes_doc));
            map.insert("other_workspaces".into(), json!(self.others));
            map.insert("summary".into(), json!(summary(&self.status, &self.doc)));
            map.insert("repaired_to".into(), json!(self.repaired));
        }
        Ok(value)
    }
}

impl Session<'_> {
    /// The review's state; with `repair`, a torn ledger tail is moved
    /// aside first (under the workspace lock).
    pub fn status(&self, repair: bool) -> Result<ReviewStatus, ApiError> {
        let target = self.target();
        target.require_workspace()?;
        let workspace = &target.workspace;
        let repaired = if repair {
            workspace
                .repair_ledger(&command_line(), clock())
                .with_context(|| {
                    format!("repairing the ledger of {}", workspace.root().display())
                })?
        } else {
            None
        };
        let mut status = workspace
            .status()
            .with_context(|| format!("review workspace {}", workspace.root().display()))?;
        status.stale_temp_files.extend(
            target
                .stale_doc_temp_files()
                .into_iter()
                .map(|p| p.to_string_lossy().into_owned()),
        );
        let changed_outside = target.changed_outside()?;
        // DOC against its review: the changes recorded that DOC does not
        // have (a review without --in-place keeps them in the workspace;
        // an interrupted --in-place write did not deliver them).
        let hash = koas_kernel_api::hash::sha256(&target.text);
        let behind = workspace
            .changes_missing_from(&hash)
            .with_context(|| format!("review workspace {}", workspace.root().display()))?;
        let is = |known: &Option<String>| {
            known
                .as_deref()
                .is_some_and(|h| koas_kernel_api::hash::same_hash(h, &hash))
        };
        let doc = DocState {
            behind_by: behind.unwrap_or(0),
            interrupted: status.in_place_pending && behind.is_some_and(|n| n > 0),
            file: if is(&status.current_hash) {
                FileState::Current
            } else if changed_outside {
                FileState::Edited
            } else if is(&status.original_hash) {
                FileState::Original
            } else {
                FileState::Behind
            },
            writes_doc: workspace.writes_doc(),
        };
        Ok(ReviewStatus {
            status,
            doc,
            changed_outside,
            behind,
            repaired,
            others: target.others.clone(),
        })
    }
}

/// DOC itself against its review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocState {
    /// Recorded changes DOC does not have (0 when it is current or not a
    /// version the review knows).
    pub behind_by: usize,
    /// An `--in-place` review recorded them and did not write DOC.
    pub interrupted: bool,
    /// What DOC is to its review.
    pub file: FileState,
    /// The review writes DOC (its last review was `--in-place`).
    pub writes_doc: bool,
}

/// `ok`, or what needs attention first.
pub fn overall(status: &WorkspaceStatus, doc: &DocState) -> &'static str {
    if status.torn_tail.is_some() {
        "torn_ledger"
    } else if status.document_state == "diverged" {
        "diverged"
    } else if status.locked_by.is_some() {
        "locked"
    } else if !status.stale_temp_files.is_empty()
        || status.stale_lock.is_some()
        || !status.orphan_patches.is_empty()
        || doc.interrupted
    {
        "interrupted"
    } else {
        "ok"
    }
}

pub fn summary(status: &WorkspaceStatus, doc: &DocState) -> String {
    let c = &status.counts;
    let mut out = format!(
        "{}; edited document {}",
        c.sentence(),
        status.document_state.replace('_', " ")
    );
    if doc.interrupted {
        out.push_str(&format!(
            "; DOC is {} change(s) behind (an --in-place write did not happen)",
            doc.behind_by
        ));
    } else if doc.behind_by > 0 {
        out.push_str(&format!(
            "; DOC is {} change(s) behind (kept in the workspace)",
            doc.behind_by
        ));
    }
    out
}

/// What DOC is to its review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    /// The review's current version.
    Current,
    /// The original, before any change.
    Original,
    /// A version lacking changes recorded since it was last written.
    Behind,
    /// Edited outside koas since the review last saw it.
    Edited,
}

impl FileState {
    /// The name in JSON (`document_file`).
    pub fn as_str(self) -> &'static str {
        match self {
            FileState::Current => "current",
            FileState::Original => "original",
            FileState::Behind => "behind",
            FileState::Edited => "edited",
        }
    }
}
