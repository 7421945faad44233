//! The review commands' operations on the workspace: review, revert, report and
//! status.

use super::*;

impl Workspace {
    /// Runs a review with ops: normalize, validate, apply, record.
    pub fn review(&self, request: ReviewRequest<'_>) -> Result<ReviewOutcome, WorkspaceError> {
        let mut run = self.begin(BeginRequest {
            doc_name: request.doc_name,
            document: Some(request.document),
            kind: RunKind::Review,
            command: request.command,
            clock: request.clock,
        })?;
        // Protected regions: given for `document`, needed for `current`.
        let current_hash = sha256(run.current_text());
        let protected = if same_hash(&sha256(request.document), &current_hash) {
            request.protected.clone()
        } else {
            let chain: Vec<(EntryId, LineEdit)> = run
                .entries()
                .iter()
                .filter_map(|e| koas_edit::linemap::edit_of(e).map(|edit| (e.id, edit)))
                .collect();
            let edits: Vec<LineEdit> = cancel_reverted_pairs(&chain)
                .into_iter()
                .map(|(_, e)| e)
                .collect();
            mapped_through(
                request.protected,
                &edits,
                &LineBuf::parse(run.current_text()),
            )
        };
        let ledger_ids: BTreeSet<ChangeId> = run.ledger_ids();
        let batch = apply_batch(BatchInput {
            doc_name: request.doc_name,
            text: run.current_text(),
            ops: request.ops,
            protected: &protected,
            ledger_ids: &ledger_ids,
            first_id: run.next_id(),
            options: request.options,
            origins: &vec![request.origin; request.ops.len()],
            known: Default::default(),
        });
        let outcome = run.write_review(
            batch,
            protected,
            &CommitContext {
                actor: request.actor,
                clock: request.clock,
                options: request.options,
            },
        )?;
        if let Some(target) = request.in_place {
            run.replace_in_place(target)?;
        }
        Ok(outcome)
    }

    /// Reverts changes (all or nothing) and records the revert entries.
    pub fn revert(
        &self,
        request: RevertRunRequest<'_>,
    ) -> Result<RevertRunOutcome, WorkspaceError> {
        let doc_name = self.meta()?.map(|m| m.doc_name).unwrap_or_default();
        let mut run = self.begin(BeginRequest {
            doc_name: &doc_name,
            document: None,
            kind: RunKind::Revert,
            command: request.command,
            clock: request.clock,
        })?;
        let read = |path: &str| self.read_patch(path).map_err(|e| e.to_string());
        let plan = plan_reverts(RevertRequest {
            doc_name: &run.meta().doc_name,
            current_text: run.current_text(),
            entries: run.entries(),
            ids: request.ids,
            read_patch: &read,
        })?;
        let outcome = run.write_revert(
            plan,
            request.rationale,
            &CommitContext {
                actor: request.actor,
                clock: request.clock,
                options: request.options,
            },
        )?;
        if let Some(target) = request.in_place {
            run.replace_in_place(target)?;
        }
        Ok(outcome)
    }

    /// Apply log records of the last run.
    pub fn last_run_log(&self) -> Result<Vec<ApplyLogRecord>, WorkspaceError> {
        let Some(text) = self.read_text(paths::APPLY_LOG)? else {
            return Ok(Vec::new());
        };
        // The last run's records are the file's last lines: read backwards
        // until the run changes, so the cost follows this run, not the
        // workspace's history.
        let mut records: Vec<ApplyLogRecord> = Vec::new();
        for line in text.lines().rev() {
            let Ok(record) = serde_json::from_str::<ApplyLogRecord>(line) else {
                continue;
            };
            if records.first().is_some_and(|r| r.run_id != record.run_id) {
                break;
            }
            records.push(record);
        }
        records.reverse();
        Ok(records)
    }

    /// Renders the report and writes `review/REVIEW_<stem>.md` and its
    /// `stage3/` copy. Returns the report text.
    pub fn write_report(
        &self,
        meta: &ReportMeta,
        sections: &[SectionEntry],
        findings: &[Finding],
    ) -> Result<String, WorkspaceError> {
        let ledger = self.ledger()?;
        let log = self.last_run_log()?;
        let text = render_report(ReportInput {
            meta,
            entries: ledger.entries(),
            sections,
            findings,
            earlier_findings: &[],
            apply_log: &log,
            model: None,
        });
        self.write_report_files(&meta.doc_name, &text)?;
        Ok(text)
    }

    /// Writes a rendered report of document `doc_name` to
    /// `review/REVIEW_<stem>.md` and its `stage3/` copy, each atomically.
    /// Returns the `review/` path.
    pub fn write_report_files(
        &self,
        doc_name: &str,
        text: &str,
    ) -> Result<PathBuf, WorkspaceError> {
        let name = report_file_name(doc_name);
        let root = self.held_or_create()?;
        let main = format!("review/{name}");
        root.write_atomic(&main, text.as_bytes())?;
        root.write_atomic(format!("stage3/{name}"), text.as_bytes())?;
        Ok(self.path(&main))
    }

    /// What `koas status` shows. Writes nothing and takes no lock: a
    /// pending roll-forward or a torn tail is reported, not repaired.
    pub fn status(&self) -> Result<WorkspaceStatus, WorkspaceError> {
        let held = self.held()?;
        let meta = self.meta()?;
        let ledger = self.ledger()?;
        let entries = ledger.entries();
        let stages_completed = ["stage1", "stage2", "stage3"]
            .iter()
            .filter(|s| {
                held.as_ref()
                    .is_some_and(|dir| dir.list(s).is_ok_and(|names| !names.is_empty()))
            })
            .map(|s| s.to_string())
            .collect();
        let raw = self.read_text(paths::RAW_DOC)?;
        let (current_hash, document_state) = match raw {
            None => (None, "not_initialized".to_owned()),
            Some(_) => {
                let (text, reflected) = self.document_position(entries)?;
                let state = match reflected {
                    Some(n) if n == entries.len() => "consistent",
                    Some(_) => "behind_ledger",
                    None => "diverged",
                };
                (Some(sha256(&text)), state.to_owned())
            }
        };
        let orphans = self.orphan_patch_entries(entries);
        let orphan_patch_bytes = orphans.iter().map(|(_, size)| size).sum();
        let orphan_patches: Vec<String> = orphans
            .iter()
            .map(|(n, _)| format!("{PATCH_DIR}/{}", n.to_string_lossy()))
            .collect();
        let damaged_patches = self
            .damaged_patch_rels(entries)
            .into_iter()
            .map(|(rel, _)| rel)
            .collect();
        let (locked_by, stale_lock) = match lock_state(&self.root) {
            LockState::Free => (None, None),
            LockState::Held(holder) => (Some(holder), None),
            LockState::Stale(holder) => (None, Some(holder)),
        };
        let stale_temp_files = self
            .stale_temp_files()
            .into_iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        Ok(WorkspaceStatus {
            workspace: self.root.clone(),
            doc_name: meta.as_ref().map(|m| m.doc_name.clone()),
            stages_completed,
            original_hash: meta.map(|m| m.original_hash),
            current_hash,
            counts: count(entries),
            ledger_entries: entries.len(),
            torn_tail: ledger.torn_tail().cloned(),
            document_state,
            orphan_patches,
            orphan_patch_bytes,
            in_place_pending: self.in_place_pending(),
            not_revertible: not_revertible(entries),
            damaged_patches,
            locked_by,
            stale_lock,
            stale_temp_files,
        })
    }
}
