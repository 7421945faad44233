//! The on-disk review workspace and its crash-safe runs.
//!
//! ```text
//! .review/<stem>_<hash12 of the file name>/   (see [`auto_workspace_dir`])
//!     workspace.json            document name, creation time
//!     .lock                     held during review / revert
//!     stage1/doc.raw.md         immutable snapshot of the input
//!     stage3/doc.edited.md      current edited document
//!     stage3/doc.REVIEWED.md    edited document with alert notes
//!     stage3/apply_log.jsonl    append-only: one record per op per run
//!     stage3/protected_regions.json   protected regions used by the last run
//!     stage3/REVIEW_<stem>.md   report (copy)
//!     review/ledger.jsonl       append-only ledger
//!     review/REVIEW_<stem>.md   report
//!     review/patches/RVW-NNNN.patch, RVW-NNNN.inverse.patch,
//!                    REVERT-RVW-NNNN.patch, REVERT-RVW-NNNN.inverse.patch
//! ```
//!
//! **Write order of a run** (review or revert), under the lock:
//! 1. patch files, each written atomically (not fsynced one by one);
//! 2. ledger entries — which carry a copy of their patches — appended with
//!    one write and one fsync;
//! 3. `doc.edited.md`, replaced atomically;
//! 4. the apply log, the annotated document, and `--in-place` last.
//!
//! The ledger is the write-ahead log. A crash before step 2 leaves patch
//! files no entry refers to (harmless; their IDs are never reused). A crash
//! that loses a patch file of a recorded entry is repaired from the
//! ledger's copy at the start of the next run. A crash between 2 and 3
//! leaves the document one run behind its ledger: the next run *rolls
//! forward* by applying the recorded forward patches, checking every hash.
//! A crash during 2 leaves a torn last line, which is reported and must be
//! repaired ([`Workspace::repair_ledger`]) before anything else is
//! appended. The document on disk is always a complete version.
//!
//! Ops address the workspace's *current* document (`doc.edited.md`, or the
//! original on a first run).

use std::collections::BTreeSet;
#[cfg(test)]
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

use crate::ledger::{Ledger, LedgerError, TornTail};
use koas_edit::apply::{apply_batch, BatchInput};
use koas_edit::clock::Clock;
use koas_edit::linemap::{cancel_reverted_pairs, LineEdit};
use koas_edit::notes::{annotate, Annotated};
use koas_edit::patch::apply_patch_text;
use koas_edit::protected::mapped_through;
use koas_edit::query::{count, Counts};
use koas_edit::record::PATCH_DIR;
use koas_edit::revert::{plan_reverts, RevertError, RevertRequest};
use koas_edit::text::LineBuf;
use koas_kernel_api::hash::{same_hash, sha256};
use koas_orchestrator::fsio::{is_stale_temp_name, Beneath, EntryKind, FsError};
use koas_orchestrator::lock::{
    acquire_lock_in, lock_state, LockError, LockGuard, LockHolder, LockState,
};
use koas_report::markdown::{render_report, report_file_name, ReportInput};
use koas_review_schema::apply::{ApplyLogRecord, ApplyOptions, BatchOutcome, OpOrigin};
use koas_review_schema::change_id::{ChangeId, EntryId, IdError};
use koas_review_schema::findings::Finding;
use koas_review_schema::ledger::{Actor, LedgerEntry};
use koas_review_schema::review::ReportMeta;
use koas_review_schema::stage1::ProtectedSpans;
use koas_review_schema::stage1::SectionEntry;
use std::ffi::OsString;

mod follow;
pub mod ledger;
mod prepared;
mod verify;
mod workspace;

pub use follow::{
    auto_workspace_dir, carry_edits, external_batch, legacy_workspaces, locate_workspace,
    not_revertible, Located, NotRevertible, Overlap, EXTERNAL_KIND,
};
pub use prepared::{BeginRequest, CommitContext, Follow, PreparedRun, RunKind};
use workspace::file_stamp;
pub use workspace::Workspace;

/// Workspace-relative paths of the files in the layout above.
pub mod paths {
    /// Document name, original hash and creation time
    /// ([`WorkspaceMeta`](crate::WorkspaceMeta)).
    pub const META: &str = "workspace.json";
    /// Immutable snapshot of the input.
    pub const RAW_DOC: &str = "stage1/doc.raw.md";
    /// The current edited document: the original plus every recorded
    /// change; ops address it.
    pub const EDITED_DOC: &str = "stage3/doc.edited.md";
    /// The edited document with an alert note after each change that needs
    /// attention; rebuilt by every run.
    pub const REVIEWED_DOC: &str = "stage3/doc.REVIEWED.md";
    /// Append-only: one record per op per review run, rejections included.
    pub const APPLY_LOG: &str = "stage3/apply_log.jsonl";
    /// Protected regions of the last run.
    pub const PROTECTED: &str = "stage3/protected_regions.json";
    /// The append-only ledger, the write-ahead log of every run.
    pub const LEDGER: &str = "review/ledger.jsonl";
    /// Left by an `--in-place` review from before it records anything
    /// until the document is replaced: while it is there, a document
    /// behind the ledger is an interrupted write, not a choice.
    pub const IN_PLACE_PENDING: &str = "review/in-place.pending";
    /// The document file as koas last read or wrote it: what a writer's
    /// hand edits are measured from when `--rebase` records them, so a
    /// change the review made or reverted since is not taken for one.
    pub const DOC_SEEN: &str = "review/doc-seen.md";
    /// Left by an `--in-place` review once it replaced the document: the
    /// review writes the document, so a revert writes it too. A review
    /// without `--in-place` removes it.
    pub const WRITES_DOC: &str = "review/writes-doc";
    /// What the model did in the last run that asked it: the report's
    /// model section when a later run was answered from the cache.
    pub const MODEL_RUN: &str = "review/model-run.json";
    /// The change IDs of removed orphan patch files: never given again.
    pub const RETIRED_IDS: &str = "review/retired-ids.txt";
    /// The pipeline file the review was made with (`--pipeline`), as an
    /// absolute path: later commands on the workspace use it too.
    pub const PIPELINE: &str = "review/pipeline.txt";

    /// The files of this layout that only the review commands write, with
    /// what they are: no kernel may write them (the runtime refuses) or
    /// declare them. Kernel outputs of the layout (the snapshot, the
    /// edited document, the report…) are the runtime's to protect.
    pub const RESERVED: &[(&str, &str)] = &[
        (LEDGER, "the review ledger"),
        ("review/patches/", "the review's patch files"),
        (APPLY_LOG, "the review's apply log"),
        (PROTECTED, "the review's protected regions"),
        (META, "the review workspace's state"),
        (IN_PLACE_PENDING, "the review's pending in-place write"),
        (DOC_SEEN, "the document as the review last saw it"),
        (WRITES_DOC, "the review's in-place mode"),
        (MODEL_RUN, "the review's last model run"),
        (RETIRED_IDS, "the review's retired change IDs"),
        (PIPELINE, "the review's pipeline file"),
    ];
}

/// Why a workspace operation failed; each message says what to do.
#[derive(Debug, Error)]
pub enum WorkspaceError {
    #[error(transparent)]
    Fs(#[from] FsError),
    /// Lock held or unreadable.
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The ledger ends with a torn line.
    #[error("the ledger {path} ends with a torn line at byte {} ({}); no change was made. Run the ledger repair (it moves the torn bytes to a side file), then retry", torn.offset, torn.reason)]
    TornLedger {
        path: PathBuf,
        /// Where the torn line starts, its bytes, and why it is torn.
        torn: Box<TornTail>,
    },
    /// No workspace here.
    #[error("{0} is not a review workspace (no {raw}); run `koas review` first", raw = paths::RAW_DOC)]
    NotInitialized(PathBuf),
    /// The document given is no version the review knows (the original,
    /// or the document after any ledger entry): it was edited outside koas.
    #[error("{doc} changed outside koas since its last review: it is neither the original, the review's current document, nor any version in between; nothing was written and the review's {changes} recorded change(s) are kept")]
    DocumentMismatch {
        doc: String,
        /// Change entries in the ledger.
        changes: usize,
        /// `sha256:` of the document given.
        found: String,
        /// `sha256:` of the workspace's original.
        original: String,
        /// `sha256:` of the workspace's current edited document.
        current: String,
    },
    /// The workspace holds the review of a document of another name, and
    /// the document given is no version of it.
    #[error("the workspace {} holds the review of another document, {holds}; {given} is no version of it. Nothing was written. Review {given} in a workspace of its own (leave out -w, or give another -w DIR); if {given} is {holds} renamed and edited, --rebase continues this review on it", workspace.display())]
    OtherDocument {
        /// The workspace folder.
        workspace: PathBuf,
        /// The file name of the document the workspace was made for.
        holds: String,
        /// The file name of the document given.
        given: String,
    },
    /// The edited document matches no state in the ledger.
    #[error("{path} (hash {hash}) matches no state recorded in the ledger: it was edited outside koas. Restore it, or start a new workspace")]
    Diverged {
        /// The edited document.
        path: PathBuf,
        hash: String,
    },
    /// Rolling forward failed.
    #[error("cannot bring the document up to date with ledger entry {id}: {reason}")]
    RollForward {
        /// The ledger entry whose forward patch did not apply.
        id: EntryId,
        reason: String,
    },
    /// A file is not UTF-8.
    #[error("{0} is not valid UTF-8 text")]
    NotUtf8(PathBuf),
    /// A JSON file cannot be read.
    #[error("cannot read {path}: {reason}")]
    Json {
        path: PathBuf,
        /// The JSON parse error.
        reason: String,
    },
    /// Change ID allocation failed.
    #[error(transparent)]
    Id(#[from] IdError),
    /// A revert was refused.
    #[error(transparent)]
    Revert(#[from] RevertError),
    /// A request refused before anything was written (e.g. dismissing an
    /// entry that is not a flag).
    #[error("{0}")]
    Refused(String),
    /// An outcome computed outside the workspace does not replay on it.
    #[error("the {what} does not match the workspace ({reason}); nothing was written")]
    UntrustedOutcome {
        /// `apply outcome` or `revert plan`.
        what: &'static str,
        /// The first inconsistency found.
        reason: String,
    },
}

/// Contents of `workspace.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceMeta {
    /// Document file name.
    pub doc_name: String,
    /// `sha256:` of the original document.
    pub original_hash: String,
    /// When the workspace was created (RFC 3339, from the run's clock).
    pub created_at: String,
}

/// Protected regions saved by a run, in the coordinates of the document
/// after the first `ledger_len` ledger entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedRegions {
    /// Ledger length the regions refer to.
    pub ledger_len: usize,
    pub regions: ProtectedSpans,
}

/// What a run had to repair before starting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recovery {
    /// Entries whose forward patches were re-applied to the document.
    pub rolled_forward: Vec<EntryId>,
}

/// A review run's request.
pub struct ReviewRequest<'a> {
    /// Document file name (patch headers, ledger `doc`).
    pub doc_name: &'a str,
    /// The document as given by the user (the original, or the current
    /// edited version after an `--in-place` run).
    pub document: &'a str,
    /// Ops, as untrusted JSON, addressing the workspace's current document.
    pub ops: &'a [Value],
    /// Who proposed the ops: a person (an ops file) or a model.
    pub origin: OpOrigin,
    /// Protected regions of `document`.
    pub protected: &'a ProtectedSpans,
    /// Strict mode, normalization steps and review policy.
    pub options: &'a ApplyOptions,
    /// Who runs it.
    pub actor: &'a Actor,
    /// Command line, for the lock.
    pub command: &'a str,
    /// Timestamps of the ledger entries, the lock and the run ID (a fixed
    /// clock in tests).
    pub clock: &'a dyn Clock,
    /// `--in-place`: replace this file with the edited document at the end.
    pub in_place: Option<&'a Path>,
}

/// A review run's result.
#[derive(Debug)]
pub struct ReviewOutcome {
    /// `run-<timestamp>-<pid>`, also the `run_id` of its ledger entries and
    /// apply log records.
    pub run_id: String,
    /// The batch result (applied and rejected ops).
    pub batch: BatchOutcome,
    /// Ledger entries written.
    pub entries: Vec<LedgerEntry>,
    /// Apply log records written.
    pub log: Vec<ApplyLogRecord>,
    /// Repairs made before the run.
    pub recovery: Option<Recovery>,
    /// A stale lock this run took over.
    pub took_over: Option<LockHolder>,
    /// The annotated document written to `stage3/doc.REVIEWED.md`, and
    /// where its notes went.
    pub annotated: Annotated,
}

impl ReviewOutcome {
    /// One outcome for two batches committed one after the other in the
    /// same run (`self` first): their ops, entries and log records in
    /// order, the later one's text and annotated document.
    pub fn then(mut self, later: ReviewOutcome) -> ReviewOutcome {
        self.batch.applied.extend(later.batch.applied);
        self.batch.rejected.extend(later.batch.rejected);
        self.batch.known.extend(later.batch.known);
        self.batch.final_text = later.batch.final_text;
        self.batch.next_id = later.batch.next_id;
        self.entries.extend(later.entries);
        self.log.extend(later.log);
        self.recovery = self.recovery.or(later.recovery);
        self.took_over = self.took_over.or(later.took_over);
        self.annotated = later.annotated;
        self
    }

    /// A JSON summary for `--json` output: run, counts, applied IDs, the
    /// apply log (rejections with class and reason), recovery.
    pub fn summary_json(&self) -> Value {
        serde_json::json!({
            "status": "completed",
            "run_id": self.run_id,
            "total_changes": self.batch.applied.iter().filter(|a| a.change.is_some()).count(),
            "flags": self.batch.applied.iter().filter(|a| a.change.is_none()).count(),
            "rejected": self.batch.rejected.len(),
            "applied_ids": self.batch.applied.iter().map(|a| a.op.id.to_string()).collect::<Vec<_>>(),
            "apply_log": self.log,
            "notes": self.annotated.notes,
            "recovery": self.recovery,
            "took_over_stale_lock": self.took_over,
        })
    }
}

/// A revert run's request.
pub struct RevertRunRequest<'a> {
    /// Changes to revert (see [`koas_edit::revert::parse_revert_targets`]).
    pub ids: &'a [ChangeId],
    /// Why (stored as the revert entries' rationale).
    pub rationale: &'a str,
    /// The tool and the person recorded in the revert entries.
    pub actor: &'a Actor,
    /// Command line, for the lock.
    pub command: &'a str,
    /// Timestamps of the revert entries, the lock and the run ID.
    pub clock: &'a dyn Clock,
    /// Review policy (alert map for the re-annotated document).
    pub options: &'a ApplyOptions,
    /// `--in-place`: replace this file with the reverted document at the
    /// end.
    pub in_place: Option<&'a Path>,
}

/// A revert run's result.
#[derive(Debug)]
pub struct RevertRunOutcome {
    /// `revert-<timestamp>-<pid>`, also the `run_id` of its entries.
    pub run_id: String,
    /// Revert entries written, in order.
    pub entries: Vec<LedgerEntry>,
    /// Repairs made before the run.
    pub recovery: Option<Recovery>,
}

impl RevertRunOutcome {
    /// A JSON summary for `--json` output.
    pub fn summary_json(&self) -> Value {
        serde_json::json!({
            "status": "completed",
            "run_id": self.run_id,
            "total_reverted": self.entries.len(),
            "reverts": self.entries,
            "recovery": self.recovery,
        })
    }
}

/// `koas status` data.
#[derive(Debug, Clone, Serialize)]
pub struct WorkspaceStatus {
    pub workspace: PathBuf,
    /// The document's file name; `None` before the first review.
    pub doc_name: Option<String>,
    /// Stages with outputs present (`stage1`, `stage2`, `stage3`).
    pub stages_completed: Vec<String>,
    /// `sha256:` of the original.
    pub original_hash: Option<String>,
    /// `sha256:` of the current edited document.
    pub current_hash: Option<String>,
    pub counts: Counts,
    /// Number of ledger entries, flags and reverts included.
    pub ledger_entries: usize,
    /// Torn ledger tail, if any.
    pub torn_tail: Option<TornTail>,
    /// `consistent`, `behind_ledger` (a roll-forward is pending) or
    /// `diverged` (edited outside koas).
    pub document_state: String,
    /// Patch files no ledger entry refers to (left by a run that failed
    /// before its ledger was saved; the next run removes them first).
    pub orphan_patches: Vec<String>,
    /// Their size in bytes.
    pub orphan_patch_bytes: u64,
    /// An `--in-place` review started and did not replace the document
    /// ([`paths::IN_PLACE_PENDING`]).
    pub in_place_pending: bool,
    /// Active changes whose lines were edited outside koas afterwards:
    /// their inverse patch no longer applies, so they cannot be reverted
    /// on their own.
    pub not_revertible: Vec<NotRevertible>,
    /// Patch files the ledger refers to that are missing or damaged (the
    /// next review or revert rebuilds them from the ledger).
    pub damaged_patches: Vec<String>,
    /// Current lock holder, if any (alive, or on another host).
    pub locked_by: Option<LockHolder>,
    /// A lock record whose process is gone (killed): the next run takes
    /// the lock over.
    pub stale_lock: Option<LockHolder>,
    /// Temporary files left by a killed run (in the workspace, and next to
    /// the document for an interrupted `--in-place`); the next review or
    /// revert removes them.
    pub stale_temp_files: Vec<String>,
}

#[cfg(test)]
mod tests;
