//! Revert planning: the `revert_outcome` artifact of `md_revert`.

use serde::{Deserialize, Serialize};

use crate::apply::{LineChange, PatchPair};
use crate::change_id::ChangeId;
use crate::ledger::LedgerEntry;

/// One planned revert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedRevert {
    /// The reverted change.
    pub reverted: ChangeId,
    /// The reverted change's ledger entry; the revert entry copies its
    /// scope, kind and severity.
    pub original: LedgerEntry,
    /// The change the revert makes, in the state it is applied to.
    pub change: LineChange,
    /// Patches of the revert against that state.
    pub patches: PatchPair,
    /// `sha256:` of the document before the revert.
    pub doc_hash_before: String,
    /// `sha256:` of the document after it.
    pub doc_hash_after: String,
}

/// The result of planning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevertPlan {
    /// Reverts in the order they are applied.
    pub reverts: Vec<PlannedRevert>,
    /// The document after all of them.
    pub final_text: String,
}

/// `revert_outcome`: what `md_revert` planned. The host commits it with
/// the review workspace's `PreparedRun::commit_revert`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevertOutcome {
    /// Document file name used in patch headers.
    pub doc_name: String,
    /// The changes asked for, as given (before ordering).
    pub requested: Vec<ChangeId>,
    /// The reverts, latest change first, and the final text (no revert
    /// and the current text when refused).
    pub plan: RevertPlan,
    /// Why the request was refused (nothing may then be written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}
