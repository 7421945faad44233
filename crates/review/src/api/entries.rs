//! One ledger entry: shown in detail, or a flag dismissed.

use super::session::{ApiError, Session};
use crate::common::{actor, clock, ReviewTarget};
use crate::passes;
use anyhow::Context as _;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::ledger::LedgerEntry;
use koas_review_workspace::{CommitContext, RunKind};
use std::path::PathBuf;

/// The entry a person named (`RVW-0034`, `REVERT-RVW-0034`), or why that
/// names none.
pub fn entry_id(text: &str) -> Result<EntryId, ApiError> {
    EntryId::parse(text.trim()).map_err(|_| {
        ApiError::Other(anyhow::anyhow!(
            "'{text}' is not a change ID (expected RVW-NNNN or REVERT-RVW-NNNN)"
        ))
    })
}

/// The change a person named (`RVW-0034`), or why that names none.
pub fn change_id(text: &str) -> Result<ChangeId, ApiError> {
    ChangeId::parse(text.trim()).map_err(|e| {
        ApiError::Other(anyhow::Error::new(e).context(format!("{text:?} is not a change ID")))
    })
}

/// One entry in detail.
#[derive(Debug)]
pub struct Shown {
    /// The entry as the ledger holds it.
    pub entry: LedgerEntry,
    /// The revert that undid it, if any.
    pub reverted_by: Option<LedgerEntry>,
    /// Its forward patch, when asked for and it has one.
    pub patch: Option<String>,
    /// Why it can no longer be reverted on its own, if so.
    pub not_revertible: Option<String>,
}

/// A flag dismissed.
#[derive(Debug)]
pub struct Dismissed {
    /// The dismissal's ledger entry (`REVERT-RVW-NNNN`).
    pub entry: LedgerEntry,
    /// The report, refreshed.
    pub report: Option<PathBuf>,
}

impl Shown {
    /// The answer's JSON form (`koas show --json`, the MCP tool).
    pub fn to_json(&self, workspace: &std::path::Path) -> serde_json::Value {
        serde_json::json!({
            "status": "completed",
            "summary": self.entry.summary,
            "not_revertible": self.not_revertible,
            "workspace": workspace,
            "change": self.entry,
            "reverted_by": self.reverted_by.as_ref().map(|e| e.id),
            "patch": self.patch,
        })
    }
}

impl Dismissed {
    /// The answer's JSON form (`koas dismiss --json`).
    pub fn to_json(&self, workspace: &std::path::Path) -> serde_json::Value {
        serde_json::json!({
            "status": "completed",
            "summary": format!("{} dismissed", self.entry.reverted_id),
            "workspace": workspace,
            "entry": self.entry,
            "report": self.report,
        })
    }
}

impl Session<'_> {
    /// The entry `id`, with its forward patch when `patch`.
    pub fn show(&self, id: EntryId, patch: bool) -> Result<Shown, ApiError> {
        let target = self.target();
        target.require_workspace()?;
        let ledger = target
            .workspace
            .ledger()
            .with_context(|| format!("review workspace {}", target.root().display()))?;
        let Some(entry) = ledger.find(id) else {
            return Err(ApiError::NotFound {
                message: format!(
                    "{id} is not in the ledger of {} ({} entries); `koas grep {}` lists them",
                    target.root().display(),
                    ledger.entries().len(),
                    target.doc_path.display()
                ),
            });
        };
        let reverted_by = match id {
            EntryId::Change(change) => ledger.revert_of(change),
            EntryId::Revert(_) => None,
        };
        let patch = if patch && !entry.patch_forward.is_empty() {
            Some(match &entry.patch_text {
                Some(copy) => copy.forward.clone(),
                None => target
                    .workspace
                    .read_patch(&entry.patch_forward)
                    .map_err(anyhow::Error::from)?,
            })
        } else {
            None
        };
        let not_revertible = match id {
            EntryId::Change(change) if reverted_by.is_none() => {
                koas_review_workspace::not_revertible(ledger.entries())
                    .into_iter()
                    .find(|b| b.id == change)
                    .map(|b| format!("its lines were edited outside koas afterwards ({})", b.by))
            }
            _ => None,
        };
        Ok(Shown {
            entry: entry.clone(),
            reverted_by: reverted_by.cloned(),
            patch,
            not_revertible,
        })
    }

    /// Dismisses the flag `id`: a ledger entry that says it was looked at
    /// and needs no change; the document is not touched.
    pub fn dismiss(
        &self,
        id: ChangeId,
        reason: &str,
        pipeline: Option<&std::path::Path>,
    ) -> Result<Dismissed, ApiError> {
        let target: &ReviewTarget = self.target();
        target.require_workspace()?;
        let mut run = target.begin_run(RunKind::Revert)?;
        let entry = match run.commit_dismissal(
            id,
            reason,
            &CommitContext {
                actor: &actor(),
                clock: clock(),
                options: &ApplyOptions::default(),
            },
        ) {
            Ok(entry) => entry,
            Err(koas_review_workspace::WorkspaceError::Refused(reason)) => {
                return Err(ApiError::Refused {
                    reason: format!("dismissal refused: {reason}"),
                })
            }
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!(
                        "recording the dismissal in {}",
                        target.root().display()
                    ))
                    .into())
            }
        };
        let (pipeline, discovery) = passes::workspace_pipeline(self.global, target, pipeline)?;
        let views = self.views(&pipeline, &discovery, &run, |m| format!("the dismissal is recorded, but the report and annotated document could not be refreshed: {m}"), true)?;
        Ok(Dismissed {
            entry,
            report: views.report,
        })
    }
}
