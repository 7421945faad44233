//! The review workspace of one document: its folder layout, its lock, and
//! every operation a review command performs on it.

use super::*;

/// A review workspace directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    pub(crate) root: PathBuf,
}

pub(crate) fn read_text(path: &Path) -> Result<Option<String>, WorkspaceError> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| WorkspaceError::NotUtf8(path.to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(FsError::new("read", path, e).into()),
    }
}

pub(crate) fn read_json<T: for<'de> Deserialize<'de>>(
    path: &Path,
) -> Result<Option<T>, WorkspaceError> {
    match read_text(path)? {
        None => Ok(None),
        Some(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| WorkspaceError::Json {
                path: path.to_owned(),
                reason: e.to_string(),
            }),
    }
}

pub(crate) fn file_stamp(timestamp: &str) -> String {
    timestamp
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect()
}

impl Workspace {
    /// The workspace at `root` (nothing is created yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Workspace { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Absolute path of a workspace-relative path.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// The patch directory, `<root>/review/patches`.
    pub fn patches_dir(&self) -> PathBuf {
        self.root.join(PATCH_DIR)
    }

    /// Reads a workspace-relative patch file.
    pub fn read_patch(&self, relative: &str) -> Result<String, WorkspaceError> {
        read_text(&self.path(relative))?.ok_or_else(|| {
            FsError::new(
                "read",
                &self.path(relative),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
            .into()
        })
    }

    /// `workspace.json`, if present.
    pub fn meta(&self) -> Result<Option<WorkspaceMeta>, WorkspaceError> {
        read_json(&self.path(paths::META))
    }

    /// The ledger (read only; a torn tail is reported, not an error).
    pub fn ledger(&self) -> Result<Ledger, WorkspaceError> {
        Ok(Ledger::open(&self.path(paths::LEDGER))?)
    }

    /// The folders of the workspace, itself included (for temporary
    /// files and permissions).
    pub(crate) fn folders(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            if let Ok(read) = fs::read_dir(&dir) {
                for entry in read.filter_map(Result::ok) {
                    if entry.file_type().is_ok_and(|t| t.is_dir()) {
                        stack.push(entry.path());
                    }
                }
            }
            out.push(dir);
        }
        out
    }

    /// Temporary files a killed run left in the workspace.
    pub fn stale_temp_files(&self) -> Vec<PathBuf> {
        self.folders()
            .iter()
            .flat_map(|dir| stale_temp_files(dir, None))
            .collect()
    }

    /// Removes the temporary files a killed run left in the workspace.
    pub fn remove_stale_temp_files(&self) -> Vec<PathBuf> {
        self.folders()
            .iter()
            .flat_map(|dir| remove_stale_temp_files(dir, None))
            .collect()
    }

    /// Patch files no ledger entry refers to: a run that failed before
    /// its ledger was saved wrote them (they are derived: every entry
    /// keeps its patches' text).
    pub fn orphan_patch_files(&self, entries: &[LedgerEntry]) -> Vec<PathBuf> {
        let referenced: BTreeSet<&str> = entries
            .iter()
            .flat_map(|e| [e.patch_forward.as_str(), e.patch_inverse.as_str()])
            .collect();
        let mut out: Vec<PathBuf> = fs::read_dir(self.patches_dir())
            .map(|read| {
                read.filter_map(Result::ok)
                    .filter(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        name.ends_with(".patch")
                            && !referenced.contains(format!("{PATCH_DIR}/{name}").as_str())
                    })
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }

    /// Removes the orphan patch files ([`Workspace::orphan_patch_files`])
    /// of a sound ledger; returns how many and their bytes. Under the lock
    /// only: a running review writes its patches before its ledger lines.
    pub(crate) fn remove_orphan_patch_files(&self) -> (usize, u64) {
        let Ok(ledger) = self.ledger() else {
            return (0, 0);
        };
        // A torn tail is repaired by a person first: its patches stay.
        if ledger.torn_tail().is_some() {
            return (0, 0);
        }
        let mut removed = (0, 0);
        let mut retired = String::new();
        for path in self.orphan_patch_files(ledger.entries()) {
            let size = fs::symlink_metadata(&path).map_or(0, |m| m.len());
            if fs::remove_file(&path).is_ok() {
                removed.0 += 1;
                removed.1 += size;
                if let Some(name) = path.file_name() {
                    for id in ChangeId::scan(&name.to_string_lossy()) {
                        retired.push_str(&format!("{id}\n"));
                    }
                }
            }
        }
        // After the space is freed: their IDs may have been shown by the
        // failed run, so they are never given to another change.
        if !retired.is_empty() {
            let _ =
                koas_orchestrator::fsio::append(&self.path(paths::RETIRED_IDS), retired.as_bytes());
        }
        removed
    }

    /// Marks an `--in-place` review of `doc` as started: until
    /// [`Workspace::end_in_place`], a document behind the ledger is a
    /// write that did not happen ([`paths::IN_PLACE_PENDING`]).
    pub fn begin_in_place(&self, doc: &Path, clock: &dyn Clock) -> Result<(), WorkspaceError> {
        let record = serde_json::json!({
            "doc": doc,
            "pid": std::process::id(),
            "started_at": clock.now(),
        });
        atomic_write(
            &self.path(paths::IN_PLACE_PENDING),
            record.to_string().as_bytes(),
        )?;
        Ok(())
    }

    /// Clears the mark of [`Workspace::begin_in_place`] (the document was
    /// written, or this run does not write it).
    pub fn end_in_place(&self) -> Result<(), WorkspaceError> {
        match fs::remove_file(self.path(paths::IN_PLACE_PENDING)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(FsError::new("remove", &self.path(paths::IN_PLACE_PENDING), e).into())
            }
            _ => Ok(()),
        }
    }

    /// True while an `--in-place` write is pending.
    pub fn in_place_pending(&self) -> bool {
        self.path(paths::IN_PLACE_PENDING).is_file()
    }

    /// True when the last review replaced the document (`--in-place`)
    /// and no review since left it alone ([`paths::WRITES_DOC`]).
    pub fn writes_doc(&self) -> bool {
        self.path(paths::WRITES_DOC).is_file()
    }

    /// Forgets that the review writes the document: a review without
    /// `--in-place` keeps its changes in the workspace.
    pub fn stop_writing_doc(&self) -> Result<(), WorkspaceError> {
        match fs::remove_file(self.path(paths::WRITES_DOC)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(FsError::new("remove", &self.path(paths::WRITES_DOC), e).into())
            }
            _ => Ok(()),
        }
    }

    /// What the model did in the last run that asked it
    /// ([`paths::MODEL_RUN`]).
    pub fn last_model_run(&self) -> Option<koas_review_schema::review::ReviewModelRun> {
        let bytes = fs::read(self.path(paths::MODEL_RUN)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Remembers what the model did in this run (best effort: without it
    /// a later cached run's report shows that run's zero calls).
    pub fn remember_model_run(&self, run: &koas_review_schema::review::ReviewModelRun) {
        if let Ok(bytes) = serde_json::to_vec_pretty(run) {
            let _ = atomic_write(&self.path(paths::MODEL_RUN), &bytes);
        }
    }

    /// The pipeline file the review was made with ([`paths::PIPELINE`]);
    /// `None` for the built-in pipeline.
    pub fn recorded_pipeline(&self) -> Option<std::path::PathBuf> {
        let text = fs::read_to_string(self.path(paths::PIPELINE)).ok()?;
        let line = text.lines().next()?.trim();
        (!line.is_empty()).then(|| std::path::PathBuf::from(line))
    }

    /// Records the pipeline file later commands use (`None`: the built-in
    /// one).
    pub fn remember_pipeline(&self, file: Option<&Path>) -> Result<(), WorkspaceError> {
        let path = self.path(paths::PIPELINE);
        match file {
            Some(file) => {
                let text = format!("{}\n", file.display());
                atomic_write(&path, text.as_bytes())?;
            }
            None => match fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(FsError::new("remove", &path, e).into())
                }
                _ => {}
            },
        }
        Ok(())
    }

    /// The document file as koas last read or wrote it
    /// ([`paths::DOC_SEEN`]); `None` in a workspace from before it was
    /// kept.
    pub fn doc_seen(&self) -> Option<String> {
        fs::read_to_string(self.path(paths::DOC_SEEN)).ok()
    }

    /// Remembers `text` as the document file's content now.
    pub(crate) fn see_doc(&self, text: &str) -> Result<(), WorkspaceError> {
        atomic_write(&self.path(paths::DOC_SEEN), text.as_bytes())?;
        Ok(())
    }

    /// How many recorded changes a document of hash `hash` lacks: `Some(0)`
    /// when it is the current document, `Some(n)` for an earlier state the
    /// ledger knows (the original, or the document after an entry), `None`
    /// for a text the review does not know.
    pub fn changes_missing_from(&self, hash: &str) -> Result<Option<usize>, WorkspaceError> {
        let Some(meta) = self.meta()? else {
            return Ok(None);
        };
        let ledger = self.ledger()?;
        let entries = ledger.entries();
        // The last state with this hash: a text reverted to an earlier
        // version is that later state.
        let mut at = same_hash(&meta.original_hash, hash).then_some(0);
        for (index, entry) in entries.iter().enumerate() {
            if same_hash(&entry.doc_hash_after, hash) {
                at = Some(index + 1);
            }
        }
        let Some(at) = at else {
            return Ok(None);
        };
        let mut previous = match at {
            0 => meta.original_hash.clone(),
            n => entries[n - 1].doc_hash_after.clone(),
        };
        let mut missing = 0;
        for entry in &entries[at..] {
            if !same_hash(&entry.doc_hash_after, &previous) {
                missing += 1;
            }
            previous = entry.doc_hash_after.clone();
        }
        Ok(Some(missing))
    }

    /// Takes from the workspace's existing folders and files the access
    /// that `mode` (the document's permission bits) denies group and
    /// others: files written from now on are created that way (see
    /// [`koas_orchestrator::fsio::restrict_new_files_to`]), this narrows
    /// what earlier runs created.
    pub fn restrict_to(&self, mode: u32) -> Result<(), WorkspaceError> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let denied = |mode: u32| -> u32 {
                let mut mask = 0;
                if mode & 0o040 == 0 {
                    mask |= 0o070;
                }
                if mode & 0o004 == 0 {
                    mask |= 0o007;
                }
                mask | (!mode & 0o022)
            };
            let mask = denied(mode);
            if mask == 0 || !self.root.is_dir() {
                return Ok(());
            }
            let narrow = |path: &Path| -> Result<(), WorkspaceError> {
                let Ok(meta) = fs::symlink_metadata(path) else {
                    return Ok(());
                };
                if meta.file_type().is_symlink() {
                    return Ok(());
                }
                let current = meta.permissions().mode() & 0o7777;
                if current & mask != 0 {
                    fs::set_permissions(path, fs::Permissions::from_mode(current & !mask))
                        .map_err(|e| FsError::new("narrow the permissions of", path, e))?;
                }
                Ok(())
            };
            for dir in self.folders() {
                narrow(&dir)?;
                if let Ok(read) = fs::read_dir(&dir) {
                    for entry in read.filter_map(Result::ok) {
                        if entry.file_type().is_ok_and(|t| t.is_file()) {
                            narrow(&entry.path())?;
                        }
                    }
                }
            }
            if let Some(parent) = self.root.parent().filter(|p| p.ends_with(".review")) {
                narrow(parent)?;
            }
        }
        #[cfg(not(unix))]
        let _ = mode;
        Ok(())
    }

    /// Takes the workspace lock.
    pub fn lock(&self, command: &str, clock: &dyn Clock) -> Result<LockGuard, WorkspaceError> {
        create_dir_durably(&self.root)?;
        Ok(acquire_lock(&self.root, command, &clock.now())?)
    }

    /// Moves a torn ledger tail aside. Takes the lock.
    pub fn repair_ledger(
        &self,
        command: &str,
        clock: &dyn Clock,
    ) -> Result<Option<PathBuf>, WorkspaceError> {
        let _lock = self.lock(command, clock)?;
        let mut ledger = self.ledger()?;
        Ok(ledger.repair_torn_tail(&file_stamp(&clock.now()))?)
    }

    pub(crate) fn init(
        &self,
        doc_name: &str,
        document: &str,
        clock: &dyn Clock,
    ) -> Result<(), WorkspaceError> {
        for dir in ["stage1", "stage3", "review", PATCH_DIR] {
            create_dir_durably(&self.path(dir))?;
        }
        let raw = self.path(paths::RAW_DOC);
        if !raw.exists() {
            atomic_write(&raw, document.as_bytes())?;
        }
        if self.meta()?.is_none() {
            let original = read_text(&raw)?.unwrap_or_default();
            let meta = WorkspaceMeta {
                doc_name: doc_name.to_owned(),
                original_hash: sha256(&original),
                created_at: clock.now(),
            };
            let body = serde_json::to_vec_pretty(&meta).unwrap_or_default();
            atomic_write(&self.path(paths::META), &body)?;
        }
        Ok(())
    }

    pub(crate) fn raw_text(&self) -> Result<String, WorkspaceError> {
        read_text(&self.path(paths::RAW_DOC))?
            .ok_or_else(|| WorkspaceError::NotInitialized(self.root.clone()))
    }

    /// Where the document stands against the ledger: the text on disk and
    /// the index of the first ledger entry it does not reflect yet.
    pub(crate) fn document_position(
        &self,
        entries: &[LedgerEntry],
    ) -> Result<(String, Option<usize>), WorkspaceError> {
        let raw = self.raw_text()?;
        let text = read_text(&self.path(paths::EDITED_DOC))?.unwrap_or(raw.clone());
        let hash = sha256(&text);
        let mut reflected = None;
        if same_hash(&hash, &sha256(&raw)) {
            reflected = Some(0);
        }
        for (index, entry) in entries.iter().enumerate() {
            if same_hash(&entry.doc_hash_after, &hash) {
                reflected = Some(index + 1);
            }
        }
        Ok((text, reflected))
    }

    /// The current document, rolled forward if a crash left it behind the
    /// ledger (only when `write` is true; the rolled-forward text is then
    /// saved atomically).
    pub(crate) fn current_document(
        &self,
        entries: &[LedgerEntry],
        write: bool,
    ) -> Result<(String, Option<Recovery>), WorkspaceError> {
        let (mut text, reflected) = self.document_position(entries)?;
        let reflected = reflected.ok_or_else(|| WorkspaceError::Diverged {
            path: self.path(paths::EDITED_DOC),
            hash: sha256(&text),
        })?;
        if reflected == entries.len() {
            return Ok((text, None));
        }
        let mut rolled = Vec::new();
        for entry in &entries[reflected..] {
            if !entry.patch_forward.is_empty() {
                let patch = match &entry.patch_text {
                    Some(copy) => Ok(copy.forward.clone()),
                    None => self.read_patch(&entry.patch_forward),
                }
                .map_err(|e| WorkspaceError::RollForward {
                    id: entry.id,
                    reason: e.to_string(),
                })?;
                text =
                    apply_patch_text(&text, &patch).map_err(|e| WorkspaceError::RollForward {
                        id: entry.id,
                        reason: e.to_string(),
                    })?;
            }
            if !same_hash(&sha256(&text), &entry.doc_hash_after) {
                return Err(WorkspaceError::RollForward {
                    id: entry.id,
                    reason: "the result does not match the hash the ledger recorded".into(),
                });
            }
            rolled.push(entry.id);
        }
        if write {
            atomic_write(&self.path(paths::EDITED_DOC), text.as_bytes())?;
        }
        Ok((
            text,
            Some(Recovery {
                rolled_forward: rolled,
            }),
        ))
    }

    /// True when a text of hash `hash` is a version of the document this
    /// review knows: the original, the document after any ledger entry,
    /// or the current edited document.
    pub fn knows(&self, hash: &str) -> Result<bool, WorkspaceError> {
        if self
            .meta()?
            .is_some_and(|m| same_hash(&m.original_hash, hash))
        {
            return Ok(true);
        }
        if self
            .ledger()?
            .entries()
            .iter()
            .any(|e| same_hash(&e.doc_hash_after, hash))
        {
            return Ok(true);
        }
        if self
            .doc_seen()
            .is_some_and(|seen| same_hash(&sha256(&seen), hash))
        {
            return Ok(true);
        }
        Ok(fs::read(self.path(paths::EDITED_DOC)).is_ok_and(|b| same_hash(&sha256(&b), hash)))
    }

    /// The current document (read only: a pending roll-forward is computed
    /// in memory).
    pub fn current_text(&self) -> Result<String, WorkspaceError> {
        let ledger = self.ledger()?;
        Ok(self.current_document(ledger.entries(), false)?.0)
    }

    /// Patch files the ledger refers to that are missing or differ in size
    /// from the ledger's copy (a crash can lose a patch file: they are not
    /// fsynced one by one).
    pub fn damaged_patch_files(&self, entries: &[LedgerEntry]) -> Vec<(PathBuf, String)> {
        let mut damaged = Vec::new();
        for entry in entries {
            let Some(copy) = &entry.patch_text else {
                continue;
            };
            for (rel, text) in [
                (&entry.patch_forward, &copy.forward),
                (&entry.patch_inverse, &copy.inverse),
            ] {
                let path = self.path(rel);
                let intact = fs::metadata(&path).is_ok_and(|m| m.len() == text.len() as u64);
                if !rel.is_empty() && !intact {
                    damaged.push((path, text.clone()));
                }
            }
        }
        damaged
    }

    /// Rewrites damaged patch files from the ledger's copies.
    pub(crate) fn restore_patch_files(
        &self,
        entries: &[LedgerEntry],
    ) -> Result<usize, WorkspaceError> {
        let files: Vec<(PathBuf, Vec<u8>)> = self
            .damaged_patch_files(entries)
            .into_iter()
            .map(|(path, text)| (path, text.into_bytes()))
            .collect();
        write_files_atomically(&self.patches_dir(), &files)?;
        Ok(files.len())
    }

    pub(crate) fn checked_ledger(&self) -> Result<Ledger, WorkspaceError> {
        let ledger = self.ledger()?;
        if let Some(torn) = ledger.torn_tail() {
            return Err(WorkspaceError::TornLedger {
                path: ledger.path().to_owned(),
                torn: Box::new(torn.clone()),
            });
        }
        Ok(ledger)
    }

    /// IDs seen anywhere: ledger, patch file names, apply log, torn side
    /// files. Allocation continues after the highest.
    pub(crate) fn seen_ids(&self, ledger: &Ledger) -> Result<Vec<ChangeId>, WorkspaceError> {
        let mut seen: Vec<ChangeId> = ledger.change_ids().into_iter().collect();
        if let Ok(read) = fs::read_dir(self.patches_dir()) {
            for entry in read.filter_map(Result::ok) {
                seen.extend(ChangeId::scan(&entry.file_name().to_string_lossy()));
            }
        }
        if let Some(log) = read_text(&self.path(paths::APPLY_LOG)).ok().flatten() {
            seen.extend(ChangeId::scan(&log));
        }
        if let Some(retired) = read_text(&self.path(paths::RETIRED_IDS)).ok().flatten() {
            seen.extend(ChangeId::scan(&retired));
        }
        if let Ok(read) = fs::read_dir(self.path("review")) {
            for entry in read.filter_map(Result::ok) {
                if entry.file_name().to_string_lossy().contains(".torn-") {
                    if let Ok(bytes) = fs::read(entry.path()) {
                        seen.extend(ChangeId::scan(&String::from_utf8_lossy(&bytes)));
                    }
                }
            }
        }
        Ok(seen)
    }

    pub(crate) fn saved_regions(&self) -> Result<Option<SavedRegions>, WorkspaceError> {
        // The file only caches Stage 1's output for placing notes; one
        // written by an older koas in another shape is re-derived on the
        // next review rather than blocking `report` on this workspace.
        match read_json(&self.path(paths::PROTECTED)) {
            Err(WorkspaceError::Json { .. }) => Ok(None),
            other => other,
        }
    }

    /// Protected regions located in the current document.
    pub(crate) fn regions_now(
        &self,
        entries: &[LedgerEntry],
        current: &str,
    ) -> Result<ProtectedSpans, WorkspaceError> {
        let Some(saved) = self.saved_regions()? else {
            return Ok(ProtectedSpans::default());
        };
        let chain: Vec<(EntryId, LineEdit)> = entries
            .iter()
            .skip(saved.ledger_len)
            .filter_map(|e| koas_review::linemap::edit_of(e).map(|edit| (e.id, edit)))
            .collect();
        let edits: Vec<LineEdit> = cancel_reverted_pairs(&chain)
            .into_iter()
            .map(|(_, e)| e)
            .collect();
        Ok(mapped_through(
            &saved.regions,
            &edits,
            &LineBuf::parse(current),
        ))
    }

    pub(crate) fn write_annotated(
        &self,
        entries: &[LedgerEntry],
        current: &str,
        options: &ApplyOptions,
    ) -> Result<Annotated, WorkspaceError> {
        let regions = self.regions_now(entries, current)?;
        let annotated = annotate(current, entries, &regions, &options.policy);
        atomic_write(&self.path(paths::REVIEWED_DOC), annotated.text.as_bytes())?;
        Ok(annotated)
    }

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
                .filter_map(|e| koas_review::linemap::edit_of(e).map(|edit| (e.id, edit)))
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
        let Some(text) = read_text(&self.path(paths::APPLY_LOG))? else {
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
        let main = self.path(&format!("review/{name}"));
        atomic_write(&main, text.as_bytes())?;
        atomic_write(&self.path(&format!("stage3/{name}")), text.as_bytes())?;
        Ok(main)
    }

    /// What `koas status` shows. Writes nothing and takes no lock: a
    /// pending roll-forward or a torn tail is reported, not repaired.
    pub fn status(&self) -> Result<WorkspaceStatus, WorkspaceError> {
        let meta = self.meta()?;
        let ledger = self.ledger()?;
        let entries = ledger.entries();
        let stages_completed = ["stage1", "stage2", "stage3"]
            .iter()
            .filter(|s| fs::read_dir(self.path(s)).is_ok_and(|mut d| d.next().is_some()))
            .map(|s| s.to_string())
            .collect();
        let raw = read_text(&self.path(paths::RAW_DOC))?;
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
        let orphans = self.orphan_patch_files(entries);
        let orphan_patch_bytes = orphans
            .iter()
            .map(|p| fs::symlink_metadata(p).map_or(0, |m| m.len()))
            .sum();
        let orphan_patches: Vec<String> = orphans
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| format!("{PATCH_DIR}/{}", n.to_string_lossy()))
            .collect();
        let damaged_patches = self
            .damaged_patch_files(entries)
            .into_iter()
            .map(|(path, _)| {
                path.strip_prefix(&self.root)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_else(|_| path.to_string_lossy().into_owned())
            })
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
