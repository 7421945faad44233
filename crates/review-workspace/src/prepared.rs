//! A run in two steps, for hosts that compute the outcome elsewhere (a
//! kernel plugin):
//!
//! 1. [`Workspace::begin`] takes the lock, refuses a torn ledger, rebuilds
//!    lost patch files, rolls the document forward if a crash left it
//!    behind its ledger, and returns a [`PreparedRun`]: the current
//!    document, the ledger and the next free change ID — everything a pure
//!    kernel needs to plan a batch or a revert.
//! 2. The caller computes a [`BatchOutcome`] (or a [`RevertPlan`]) from that
//!    state and hands it to [`PreparedRun::commit_review`] (or
//!    [`PreparedRun::commit_revert`]). The outcome is **not trusted**: it is
//!    replayed on the current document and every hash, change, patch and ID
//!    is checked ([`super::verify`]) before anything is written. Then it is
//!    written in the crash-safe order of [`super`]: patch files, ledger
//!    (fsynced), `doc.edited.md`, apply log, annotated document.
//!
//! The lock is held until the [`PreparedRun`] is dropped, so a host can run
//! its views (report, annotated document) and `--in-place`
//! ([`PreparedRun::replace_in_place`]) under the same lock.

use std::collections::BTreeSet;
use std::path::Path;

use crate::ledger::Ledger;
use koas_edit::clock::Clock;
use koas_edit::record::{entry_for_applied, entry_for_revert, RunContext};
use koas_kernel_api::hash::{same_hash, sha256};
use koas_orchestrator::fsio::replace_file;
use koas_orchestrator::lock::{LockGuard, LockHolder};
use koas_review_schema::apply::{ApplyOptions, BatchOutcome};
use koas_review_schema::change_id::{ChangeId, EntryId, IdAllocator};
use koas_review_schema::edit_op::Action;
use koas_review_schema::ledger::{Actor, LedgerEntry};
use koas_review_schema::revert::RevertPlan;
use koas_review_schema::stage1::ProtectedSpans;

use super::verify::{verify_batch, verify_revert_plan};
use super::{
    file_stamp, paths, Recovery, RevertRunOutcome, ReviewOutcome, SavedRegions, Workspace,
    WorkspaceError, WorkspaceMeta,
};

/// What a run is for (its run ID prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// Applying ops (run IDs `run-…`).
    Review,
    /// Reverting changes (run IDs `revert-…`).
    Revert,
}

impl RunKind {
    fn prefix(self) -> &'static str {
        match self {
            RunKind::Review => "run",
            RunKind::Revert => "revert",
        }
    }
}

/// What [`Workspace::begin`] needs.
pub struct BeginRequest<'a> {
    /// Document file name (patch headers, ledger `doc`); used when the
    /// workspace is created.
    pub doc_name: &'a str,
    /// The document as the user gave it: the original (it creates the
    /// workspace on a first run) or the current edited version (after an
    /// `--in-place` run). `None` when the workspace must already exist
    /// (revert).
    pub document: Option<&'a str>,
    /// What the run is for.
    pub kind: RunKind,
    /// Command line, recorded in the lock.
    pub command: &'a str,
    /// Timestamps of the lock, the workspace creation and the run ID.
    pub clock: &'a dyn Clock,
}

/// How [`Workspace::begin_following`] treats a document edited outside
/// koas (a text that is no version the review knows).
pub struct Follow<'a> {
    /// Continue the review on the new text even though the ledger holds
    /// changes. Without it, such a document is refused
    /// ([`WorkspaceError::DocumentMismatch`]) unless the ledger holds no
    /// change of the text yet (flags aside: then nothing recorded could be
    /// undone by mistake).
    pub rebase: bool,
    /// Who the hand edits are recorded as.
    pub actor: &'a Actor,
    /// Review policy (alert map of the annotated document).
    pub options: &'a ApplyOptions,
}

/// Host facts every commit needs.
pub struct CommitContext<'a> {
    /// Who makes the change.
    pub actor: &'a Actor,
    /// Timestamps of the ledger entries.
    pub clock: &'a dyn Clock,
    /// Review policy (alert map of the annotated document).
    pub options: &'a ApplyOptions,
}

/// A locked workspace whose document is up to date with its ledger,
/// waiting for an outcome to commit. Dropping it releases the lock.
#[derive(Debug)]
pub struct PreparedRun<'w> {
    workspace: &'w Workspace,
    lock: LockGuard,
    ledger: Ledger,
    meta: WorkspaceMeta,
    current: String,
    recovery: Option<Recovery>,
    next_id: ChangeId,
    run_id: String,
    rebased: Vec<ChangeId>,
    rebase_overlaps: Vec<String>,
}

impl Workspace {
    /// Starts a run: takes the lock, creates the workspace on a first run,
    /// refuses a torn ledger or a document that is neither the original
    /// nor the current version, rebuilds lost patch files, and rolls the
    /// document forward if a crash left it behind its ledger. The lock is
    /// held until the returned [`PreparedRun`] is dropped.
    pub fn begin(&self, request: BeginRequest<'_>) -> Result<PreparedRun<'_>, WorkspaceError> {
        self.begin_with(request, None)
    }

    /// [`Workspace::begin`] for a document that may have been edited
    /// outside koas: when the document given is no version the review
    /// knows and `follow` allows it, the difference between the current
    /// document and it is recorded first as changes of kind
    /// [`crate::EXTERNAL_KIND`] ([`PreparedRun::rebased`]), so the run
    /// continues on the new text with the ledger kept.
    pub fn begin_following(
        &self,
        request: BeginRequest<'_>,
        follow: &Follow<'_>,
    ) -> Result<PreparedRun<'_>, WorkspaceError> {
        self.begin_with(request, Some(follow))
    }

    fn begin_with(
        &self,
        request: BeginRequest<'_>,
        follow: Option<&Follow<'_>>,
    ) -> Result<PreparedRun<'_>, WorkspaceError> {
        let lock = self.lock(request.command, request.clock)?;
        self.remove_leftovers();
        match request.document {
            Some(document) => self.init(request.doc_name, document, request.clock)?,
            None => {
                if self.meta()?.is_none() || !self.is_file(paths::RAW_DOC) {
                    return Err(WorkspaceError::NotInitialized(self.root.clone()));
                }
            }
        }
        let meta = self
            .meta()?
            .ok_or_else(|| WorkspaceError::NotInitialized(self.root.clone()))?;
        let ledger = self.checked_ledger()?;
        self.restore_patch_files(ledger.entries())?;
        let (current, recovery) = self.current_document(ledger.entries(), true)?;
        let mut external = None;
        // Read once: the known versions, the base of a rebase, and whether
        // the file's content must be remembered anew.
        let seen = request.document.and_then(|_| self.doc_seen());
        if let Some(document) = request.document {
            let given = sha256(document);
            // The file as koas last saw it is known too: after a rebase
            // that carried hand edits onto changes the file lacks, it is
            // no state of the ledger, and it was edited by no one since.
            let known = same_hash(&given, &sha256(&current))
                || same_hash(&given, &meta.original_hash)
                || ledger
                    .entries()
                    .iter()
                    .any(|e| same_hash(&e.doc_hash_after, &given))
                || seen
                    .as_deref()
                    .is_some_and(|seen| same_hash(&sha256(seen), &given));
            // Another document's review is not continued by accident:
            // only `--rebase` says a renamed and edited file is this one.
            if !known && meta.doc_name != request.doc_name && !follow.is_some_and(|f| f.rebase) {
                return Err(WorkspaceError::OtherDocument {
                    workspace: self.root.clone(),
                    holds: meta.doc_name.clone(),
                    given: request.doc_name.to_owned(),
                });
            }
            if !known {
                let changes = ledger
                    .entries()
                    .iter()
                    .filter(|e| !e.is_revert && e.action != Action::FlagOnly)
                    .count();
                match follow {
                    Some(follow) if follow.rebase || changes == 0 => {
                        external = Some((document, follow));
                    }
                    _ => {
                        return Err(WorkspaceError::DocumentMismatch {
                            doc: request.doc_name.to_owned(),
                            changes,
                            found: given,
                            original: meta.original_hash.clone(),
                            current: sha256(&current),
                        })
                    }
                }
            }
        }
        let next_id = IdAllocator::after(self.seen_ids(&ledger)?)?.peek();
        let run_id = format!(
            "{}-{}-{}",
            request.kind.prefix(),
            file_stamp(&request.clock.now()),
            std::process::id()
        );
        let mut run = PreparedRun {
            workspace: self,
            lock,
            ledger,
            meta,
            current,
            recovery,
            next_id,
            run_id,
            rebased: Vec::new(),
            rebase_overlaps: Vec::new(),
        };
        if let Some((document, follow)) = external {
            run.record_external(document, seen.as_deref(), follow, request.clock)?;
        }
        if let Some(document) = request.document.filter(|d| seen.as_deref() != Some(*d)) {
            self.see_doc(document)?;
        }
        Ok(run)
    }

    /// Removes what killed and failed runs left: under the lock, any
    /// temporary file here is a killed run's, and a patch file no ledger
    /// entry names is a failed run's. Both go before anything is written
    /// (they may be what filled the disk).
    fn remove_leftovers(&self) {
        self.remove_stale_temp_files();
        let (orphans, bytes) = self.remove_orphan_patch_files();
        if orphans > 0 {
            eprintln!(
                "koas: removed {orphans} patch files ({bytes} bytes) a failed run left in {} (no ledger entry refers to them)",
                self.path(koas_edit::record::PATCH_DIR).display()
            );
        }
    }
}

impl<'w> PreparedRun<'w> {
    pub fn workspace(&self) -> &'w Workspace {
        self.workspace
    }

    /// The contents of `workspace.json`.
    pub fn meta(&self) -> &WorkspaceMeta {
        &self.meta
    }

    /// The current document (after any roll-forward and any commit made
    /// through this run).
    pub fn current_text(&self) -> &str {
        &self.current
    }

    /// The ledger entries, including those this run committed.
    pub fn entries(&self) -> &[LedgerEntry] {
        self.ledger.entries()
    }

    /// Change IDs already in the ledger.
    pub fn ledger_ids(&self) -> BTreeSet<ChangeId> {
        self.ledger.change_ids()
    }

    /// The review state a planning pass is given: the document's name and
    /// original, the IDs in the ledger and the next one; no ledger effects
    /// (a review adds what it knows of them).
    pub fn review_state(&self) -> koas_review_schema::review::ReviewState {
        koas_review_schema::review::ReviewState {
            doc_name: self.meta.doc_name.clone(),
            next_id: self.next_id,
            ledger_ids: self.ledger_ids(),
            original_hash: self.meta.original_hash.clone(),
            reverted: Vec::new(),
            applied: Vec::new(),
            flags: Vec::new(),
        }
    }

    /// The first change ID a batch planned now must allocate.
    pub fn next_id(&self) -> ChangeId {
        self.next_id
    }

    /// This run's ID (apply log `run_id`, ledger `run_id`).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The changes that recorded an edit made outside koas before this run
    /// (see [`Workspace::begin_following`]); empty when there was none.
    pub fn rebased(&self) -> &[ChangeId] {
        &self.rebased
    }

    /// The lines of the document (`12` or `12-14`) whose hand edits
    /// touched lines the review changed or reverted since the file was
    /// last written: recorded as the file has them (the review's version
    /// of those lines is replaced). Empty when every edit was carried over.
    pub fn rebase_overlaps(&self) -> &[String] {
        &self.rebase_overlaps
    }

    /// Records the difference between the current document and `edited`
    /// as changes of kind `external`, in the crash-safe order of any run.
    fn record_external(
        &mut self,
        edited: &str,
        seen: Option<&str>,
        follow: &Follow<'_>,
        clock: &dyn Clock,
    ) -> Result<(), WorkspaceError> {
        // The hand edits are what changed since koas last saw the file
        // (`seen`): changes the review made or reverted since without
        // writing the file are not the writer's and stay as they are.
        let base = seen.unwrap_or(&self.current);
        let carried = match crate::carry_edits(base, &self.current, edited) {
            Ok(carried) => carried,
            Err(overlaps) => {
                let lines: Vec<String> = overlaps
                    .iter()
                    .map(|o| match o.first == o.last {
                        true => o.first.to_string(),
                        false => format!("{}-{}", o.first, o.last),
                    })
                    .collect();
                self.rebase_overlaps = lines;
                edited.to_owned()
            }
        };
        let batch =
            crate::external_batch(&self.meta.doc_name, &self.current, &carried, self.next_id)?;
        verify_batch(
            &self.meta.doc_name,
            &self.current,
            &self.ledger_ids(),
            self.next_id,
            &batch,
        )
        .map_err(|reason| WorkspaceError::UntrustedOutcome {
            what: "record of the edits made outside koas",
            reason,
        })?;
        let regions = self
            .workspace
            .regions_now(self.ledger.entries(), &self.current)?;
        let outcome = self.write_review(
            batch,
            regions,
            &CommitContext {
                actor: follow.actor,
                clock,
                options: follow.options,
            },
        )?;
        self.rebased = outcome
            .entries
            .iter()
            .filter_map(LedgerEntry::change_id)
            .collect();
        Ok(())
    }

    /// What had to be repaired before the run.
    pub fn recovery(&self) -> Option<&Recovery> {
        self.recovery.as_ref()
    }

    /// The stale lock this run took over, if any.
    pub fn took_over(&self) -> Option<&LockHolder> {
        self.lock.took_over()
    }

    /// Checks a batch computed elsewhere against the current state, then
    /// records it. Nothing is written when the check fails.
    pub fn commit_review(
        &mut self,
        batch: BatchOutcome,
        protected: ProtectedSpans,
        ctx: &CommitContext<'_>,
    ) -> Result<ReviewOutcome, WorkspaceError> {
        verify_batch(
            &self.meta.doc_name,
            &self.current,
            &self.ledger_ids(),
            self.next_id,
            &batch,
        )
        .map_err(|reason| WorkspaceError::UntrustedOutcome {
            what: "apply outcome",
            reason,
        })?;
        self.write_review(batch, protected, ctx)
    }

    /// Records a batch computed in this process from [`Self::current_text`]
    /// (no replay check).
    pub(super) fn write_review(
        &mut self,
        batch: BatchOutcome,
        protected: ProtectedSpans,
        ctx: &CommitContext<'_>,
    ) -> Result<ReviewOutcome, WorkspaceError> {
        let ws = self.workspace;
        let run = RunContext {
            doc_name: &self.meta.doc_name,
            actor: ctx.actor,
            run_id: &self.run_id,
            clock: ctx.clock,
        };
        let entries: Vec<LedgerEntry> = batch
            .applied
            .iter()
            .map(|a| entry_for_applied(a, run))
            .collect();
        let mut files = Vec::new();
        for (applied, entry) in batch.applied.iter().zip(&entries) {
            if let Some(pair) = &applied.patches {
                files.push((
                    entry.patch_forward.clone(),
                    pair.forward.clone().into_bytes(),
                ));
                files.push((
                    entry.patch_inverse.clone(),
                    pair.inverse.clone().into_bytes(),
                ));
            }
        }
        // Every file below the held workspace folder: a link planted in
        // it is refused by name, never written through.
        let root = ws.held_or_create()?;
        root.write_batch(&files)?;
        let ledger_len_before = self.ledger.entries().len();
        self.ledger.append_all(entries.clone())?;
        if batch.final_text != self.current || root.entry(paths::EDITED_DOC)?.is_none() {
            root.write_atomic(paths::EDITED_DOC, batch.final_text.as_bytes())?;
        }
        let log = batch.log_records(&self.run_id);
        if !log.is_empty() {
            let mut bytes = Vec::new();
            for record in &log {
                bytes.extend(serde_json::to_vec(record).unwrap_or_default());
                bytes.push(b'\n');
            }
            root.append(paths::APPLY_LOG, &bytes)?;
        }
        let saved = SavedRegions {
            ledger_len: ledger_len_before,
            regions: protected,
        };
        root.write_atomic(
            paths::PROTECTED,
            &serde_json::to_vec_pretty(&saved).unwrap_or_default(),
        )?;
        let annotated =
            ws.write_annotated(self.ledger.entries(), &batch.final_text, ctx.options)?;
        self.current = batch.final_text.clone();
        if batch.next_id > self.next_id {
            self.next_id = batch.next_id;
        }
        Ok(ReviewOutcome {
            run_id: self.run_id.clone(),
            batch,
            entries,
            log,
            recovery: self.recovery.clone(),
            took_over: self.lock.took_over().cloned(),
            annotated,
        })
    }

    /// Checks a revert plan computed elsewhere against the current state
    /// and the ledger, then records it. Nothing is written when the check
    /// fails.
    pub fn commit_revert(
        &mut self,
        plan: RevertPlan,
        rationale: &str,
        ctx: &CommitContext<'_>,
    ) -> Result<RevertRunOutcome, WorkspaceError> {
        verify_revert_plan(
            &self.meta.doc_name,
            &self.current,
            self.ledger.entries(),
            &plan,
        )
        .map_err(|reason| WorkspaceError::UntrustedOutcome {
            what: "revert plan",
            reason,
        })?;
        self.write_revert(plan, rationale, ctx)
    }

    /// Records a revert plan computed in this process (no replay check).
    pub(super) fn write_revert(
        &mut self,
        plan: RevertPlan,
        rationale: &str,
        ctx: &CommitContext<'_>,
    ) -> Result<RevertRunOutcome, WorkspaceError> {
        let ws = self.workspace;
        let run = RunContext {
            doc_name: &self.meta.doc_name,
            actor: ctx.actor,
            run_id: &self.run_id,
            clock: ctx.clock,
        };
        let entries: Vec<LedgerEntry> = plan
            .reverts
            .iter()
            .map(|r| entry_for_revert(r, rationale, run))
            .collect();
        let mut files = Vec::new();
        for (revert, entry) in plan.reverts.iter().zip(&entries) {
            files.push((
                entry.patch_forward.clone(),
                revert.patches.forward.clone().into_bytes(),
            ));
            files.push((
                entry.patch_inverse.clone(),
                revert.patches.inverse.clone().into_bytes(),
            ));
        }
        let root = ws.held_or_create()?;
        root.write_batch(&files)?;
        self.ledger.append_all(entries.clone())?;
        root.write_atomic(paths::EDITED_DOC, plan.final_text.as_bytes())?;
        ws.write_annotated(self.ledger.entries(), &plan.final_text, ctx.options)?;
        self.current = plan.final_text;
        Ok(RevertRunOutcome {
            run_id: self.run_id.clone(),
            entries,
            recovery: self.recovery.clone(),
        })
    }

    /// Dismisses the flag `id`: appends its dismissal entry
    /// ([`koas_edit::record::entry_for_dismissal`]) and refreshes the
    /// annotated document. Refused ([`WorkspaceError::Refused`], nothing
    /// written) unless `id` is a flag not dismissed yet.
    pub fn commit_dismissal(
        &mut self,
        id: ChangeId,
        rationale: &str,
        ctx: &CommitContext<'_>,
    ) -> Result<LedgerEntry, WorkspaceError> {
        let entries = self.ledger.entries();
        let Some(flag) = entries.iter().find(|e| e.id == EntryId::Change(id)) else {
            return Err(WorkspaceError::Refused(format!(
                "{id} is not in the ledger; `koas grep` lists the entries"
            )));
        };
        if flag.action != Action::FlagOnly {
            return Err(WorkspaceError::Refused(format!(
                "{id} is a change ({}), not a flag: undo it with `koas revert`",
                flag.action
            )));
        }
        if let Some(by) = entries.iter().find(|e| e.id == EntryId::Revert(id)) {
            return Err(WorkspaceError::Refused(format!(
                "{id} was already dismissed by {} at {}",
                by.id, by.timestamp
            )));
        }
        let run = RunContext {
            doc_name: &self.meta.doc_name,
            actor: ctx.actor,
            run_id: &self.run_id,
            clock: ctx.clock,
        };
        let hash = koas_kernel_api::hash::sha256(&self.current);
        let entry = koas_edit::record::entry_for_dismissal(flag, rationale, &hash, run);
        self.ledger.append_all(vec![entry.clone()])?;
        self.workspace
            .write_annotated(self.ledger.entries(), &self.current, ctx.options)?;
        Ok(entry)
    }

    /// `--in-place`: replaces `target` atomically with the current
    /// document, keeping its permissions and owner; through a symbolic
    /// link, the link's target is replaced. Call it last, once everything
    /// else of the run succeeded. Returns the file written.
    pub fn replace_in_place(&self, target: &Path) -> Result<std::path::PathBuf, WorkspaceError> {
        let written = replace_file(target, self.current.as_bytes())?;
        // Best effort after the write: without them the next run asks
        // for a rebase or writes the workspace only, it loses nothing.
        let _ = self.workspace.see_doc(&self.current);
        let _ = self.workspace.write(
            crate::paths::WRITES_DOC,
            target.display().to_string().as_bytes(),
        );
        Ok(written)
    }

    /// Writes the report text to `review/REVIEW_<stem>.md` and its
    /// `stage3/` copy; returns the `review/` path.
    pub fn write_report_text(&self, text: &str) -> Result<std::path::PathBuf, WorkspaceError> {
        self.workspace.write_report_files(&self.meta.doc_name, text)
    }
}
