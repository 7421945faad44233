//! What the host tells the Stage 3 kernels about a review workspace
//! (`review_state`, `review_meta`), and where a view's document comes from.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::apply::ApplyLogRecord;
use crate::change_id::ChangeId;

/// `review_state`: what the host knows about the workspace that a pure
/// kernel needs to plan a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewState {
    /// Document file name (patch headers, ledger `doc`).
    pub doc_name: String,
    /// The first change ID the batch allocates (after every ID the
    /// workspace ever used: ledger, patch files, apply log, torn tails).
    pub next_id: ChangeId,
    /// Change IDs already in the ledger; an op given one of them is
    /// rejected (`REJECT_LEDGER`).
    pub ledger_ids: BTreeSet<ChangeId>,
    /// `sha256:` of the original document.
    pub original_hash: String,
    /// The changes of the ledger that were reverted, by what they changed:
    /// an op making one of them again (a re-run asks the same question
    /// about the same text) is not recorded again, so a reverted change
    /// stays reverted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reverted: Vec<KnownChange>,
    /// The changes of the ledger in effect (applied, not reverted), by
    /// what they changed: an op whose change is already made is not
    /// recorded again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied: Vec<KnownChange>,
    /// The flags of the ledger, open or dismissed: the same flag on the
    /// same text is not recorded again, and a dismissed one does not come
    /// back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<KnownFlag>,
}

/// A change of the ledger, by what it changed (see
/// [`ReviewState::reverted`] and [`ReviewState::applied`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownChange {
    /// Its change ID.
    pub id: ChangeId,
    /// The lines it removed, with terminators, without unchanged context.
    pub old: Vec<String>,
    /// The lines it inserted, with terminators, without unchanged context.
    pub new: Vec<String>,
}

/// A flag of the ledger, by what it flags (see [`ReviewState::flags`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownFlag {
    /// Its change ID.
    pub id: ChangeId,
    /// `sha256:` of the flagged lines (with terminators), as the ledger
    /// entry's `region_hash_before` holds it.
    pub lines_hash: String,
    /// Its kind, lower case.
    pub kind: String,
    /// True when it was dismissed (`koas dismiss`).
    pub dismissed: bool,
}

/// `review_meta`: the report's run metadata and the last run's apply log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportContext {
    /// Metadata shown at the top of the report.
    pub meta: ReportMeta,
    /// Apply log records of the last review run (its rejections are
    /// listed).
    #[serde(default)]
    pub apply_log: Vec<ApplyLogRecord>,
    /// Stage 2 findings of the workspace's original document, in its
    /// lines: the report lists those the current document no longer has
    /// as resolved, by the change that edited their lines. Empty when the
    /// document was not changed.
    #[serde(default)]
    pub earlier_findings: Vec<crate::findings::Finding>,
    /// What the model did in the last review run, when one was configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ReviewModelRun>,
}

/// What the model did during one `koas review` run: which model, how many
/// calls, and whether the service stopped asking before the end.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewModelRun {
    /// The backend's wire protocol (`openai`, `ollama`, …).
    #[serde(default)]
    pub backend: String,
    /// The model of each role (`edit`, `pyramid`, `tutor`, `default`).
    #[serde(default)]
    pub models: BTreeMap<String, String>,
    /// The pyramid's one-line summary (or its kernel's error or skip
    /// reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pyramid: Option<String>,
    /// `md_edit_plan`'s one-line summary (or its error or skip reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_plan: Option<String>,
    /// Requests sent to the server.
    #[serde(default)]
    pub calls: u64,
    /// Requests answered from the response cache.
    #[serde(default)]
    pub cached_calls: u64,
    /// Tokens used (prompt and completion).
    #[serde(default)]
    pub tokens: u64,
    /// Why the service stopped asking, if it did
    /// (`SESSION_BUDGET_EXHAUSTED`, `TRANSPORT_FAILURE`, `SOVEREIGNTY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Chunks the edit plan did not review because the service stopped
    /// (asked again on the next run).
    #[serde(default)]
    pub chunks_not_reviewed: u64,
}

impl ReviewModelRun {
    /// The requests of the run in the one wording the summary, the report
    /// and the HTML page share: `22 requests: 20 sent to the server, 2
    /// answered from the cache`.
    pub fn requests_phrase(&self) -> String {
        format!(
            "{} requests: {} sent to the server, {} answered from the cache",
            self.calls + self.cached_calls,
            self.calls,
            self.cached_calls
        )
    }
}

/// Run metadata shown at the top.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportMeta {
    /// The time of the review state the report shows (RFC 3339): its last
    /// ledger entry, or the workspace's creation when the ledger is empty
    /// (so an unchanged review gives the same report).
    pub generated_at: String,
    /// Tool and version, e.g. `koas 0.1.0`.
    pub tool: String,
    /// Kernel name → version.
    pub kernels: Vec<(String, String)>,
    /// Document file name.
    pub doc_name: String,
    /// `sha256:` of the original document.
    pub original_hash: String,
    /// `sha256:` of the current document.
    pub current_hash: String,
    /// A sentence shown under the title, e.g. that the changes are a
    /// preview not recorded in any ledger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// Where a view's document and ledger come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewSource {
    /// A review workspace: the host's current document and ledger.
    Workspace,
    /// A plain pipeline run: `md_apply_ops`'s batch, not recorded.
    Preview,
    /// Neither: the original document, no change.
    Original,
}
