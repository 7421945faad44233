//! The review workspace of one document: its folder layout, its lock, and
//! every operation a review command performs on it.

use super::*;

mod commands;
mod housekeeping;

/// A review workspace directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    pub(crate) root: PathBuf,
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

    /// Where the workspace folder is opened from, and the part of its
    /// path opened without following links: the folder itself and, for
    /// `.review/<name>`, the `.review` folder too. The folders above are
    /// the person's (a home folder may well be a link).
    fn guarded_split(&self) -> (PathBuf, PathBuf) {
        let Some(name) = self.root.file_name() else {
            return (self.root.clone(), PathBuf::new());
        };
        let parent = self
            .root
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if parent.file_name() == Some(std::ffi::OsStr::new(".review")) {
            let above = parent
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            (above.to_owned(), Path::new(".review").join(name))
        } else {
            (parent.to_owned(), PathBuf::from(name))
        }
    }

    /// The workspace folder held by handle ([`Beneath`]): every file of
    /// the workspace is opened below it, no link followed, and a link in
    /// place of the folder or of its `.review` folder is refused by name.
    /// `None` when the folder does not exist yet.
    pub fn held(&self) -> Result<Option<Beneath>, WorkspaceError> {
        let (base, rel) = self.guarded_split();
        match Beneath::open_below(&base, &rel, false) {
            Ok(dir) => Ok(Some(dir)),
            Err(e) if e.source.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// [`Workspace::held`], the folder created first when missing.
    pub fn held_or_create(&self) -> Result<Beneath, WorkspaceError> {
        let (base, rel) = self.guarded_split();
        Ok(Beneath::open_below(&base, &rel, true)?)
    }

    /// The bytes of a workspace file; `None` when it (or the workspace)
    /// does not exist.
    pub(crate) fn read_bytes(&self, rel: &str) -> Result<Option<Vec<u8>>, WorkspaceError> {
        match self.held()? {
            Some(dir) => Ok(dir.read(rel)?),
            None => Ok(None),
        }
    }

    pub(crate) fn read_text(&self, rel: &str) -> Result<Option<String>, WorkspaceError> {
        match self.read_bytes(rel)? {
            Some(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| WorkspaceError::NotUtf8(self.path(rel))),
            None => Ok(None),
        }
    }

    pub(crate) fn read_json<T: for<'de> Deserialize<'de>>(
        &self,
        rel: &str,
    ) -> Result<Option<T>, WorkspaceError> {
        match self.read_text(rel)? {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| WorkspaceError::Json {
                    path: self.path(rel),
                    reason: e.to_string(),
                }),
        }
    }

    /// Writes a workspace file atomically and durably (missing folders,
    /// the workspace's included, are created).
    pub(crate) fn write(&self, rel: &str, bytes: &[u8]) -> Result<(), WorkspaceError> {
        Ok(self.held_or_create()?.write_atomic(rel, bytes)?)
    }

    /// Removes a workspace file; a missing one is fine.
    pub(crate) fn remove(&self, rel: &str) -> Result<(), WorkspaceError> {
        if let Some(dir) = self.held()? {
            dir.remove_file(rel)?;
        }
        Ok(())
    }

    /// True when `rel` is a regular file of the workspace.
    pub(crate) fn is_file(&self, rel: &str) -> bool {
        self.held()
            .ok()
            .flatten()
            .and_then(|dir| dir.entry(rel).ok().flatten())
            .is_some_and(|kind| matches!(kind, EntryKind::File(_)))
    }

    /// The patch directory, `<root>/review/patches`.
    pub fn patches_dir(&self) -> PathBuf {
        self.root.join(PATCH_DIR)
    }

    /// Reads a workspace-relative patch file.
    pub fn read_patch(&self, relative: &str) -> Result<String, WorkspaceError> {
        self.read_text(relative)?.ok_or_else(|| {
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
        self.read_json(paths::META)
    }

    /// The ledger (read only; a torn tail is reported, not an error).
    pub fn ledger(&self) -> Result<Ledger, WorkspaceError> {
        Ok(Ledger::open_below(self.held()?, Path::new(paths::LEDGER))?)
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
        self.write(paths::IN_PLACE_PENDING, record.to_string().as_bytes())
    }

    /// Clears the mark of [`Workspace::begin_in_place`] (the document was
    /// written, or this run does not write it).
    pub fn end_in_place(&self) -> Result<(), WorkspaceError> {
        self.remove(paths::IN_PLACE_PENDING)
    }

    /// True while an `--in-place` write is pending.
    pub fn in_place_pending(&self) -> bool {
        self.is_file(paths::IN_PLACE_PENDING)
    }

    /// True when the last review replaced the document (`--in-place`)
    /// and no review since left it alone ([`paths::WRITES_DOC`]).
    pub fn writes_doc(&self) -> bool {
        self.is_file(paths::WRITES_DOC)
    }

    /// Forgets that the review writes the document: a review without
    /// `--in-place` keeps its changes in the workspace.
    pub fn stop_writing_doc(&self) -> Result<(), WorkspaceError> {
        self.remove(paths::WRITES_DOC)
    }

    /// What the model did in the last run that asked it
    /// ([`paths::MODEL_RUN`]).
    pub fn last_model_run(&self) -> Option<koas_review_schema::review::ReviewModelRun> {
        let bytes = self.read_bytes(paths::MODEL_RUN).ok()??;
        serde_json::from_slice(&bytes).ok()
    }

    /// Remembers what the model did in this run (best effort: without it
    /// a later cached run's report shows that run's zero calls).
    pub fn remember_model_run(&self, run: &koas_review_schema::review::ReviewModelRun) {
        if let Ok(bytes) = serde_json::to_vec_pretty(run) {
            let _ = self.write(paths::MODEL_RUN, &bytes);
        }
    }

    /// The pipeline file the review was made with ([`paths::PIPELINE`]);
    /// `None` for the built-in pipeline.
    pub fn recorded_pipeline(&self) -> Option<std::path::PathBuf> {
        let text = self.read_text(paths::PIPELINE).ok()??;
        let line = text.lines().next()?.trim();
        (!line.is_empty()).then(|| std::path::PathBuf::from(line))
    }

    /// Records the pipeline file later commands use (`None`: the built-in
    /// one).
    pub fn remember_pipeline(&self, file: Option<&Path>) -> Result<(), WorkspaceError> {
        match file {
            Some(file) => {
                let text = format!("{}\n", file.display());
                self.write(paths::PIPELINE, text.as_bytes())
            }
            None => self.remove(paths::PIPELINE),
        }
    }

    /// The document file as koas last read or wrote it
    /// ([`paths::DOC_SEEN`]); `None` in a workspace from before it was
    /// kept.
    pub fn doc_seen(&self) -> Option<String> {
        self.read_text(paths::DOC_SEEN).ok().flatten()
    }

    /// Remembers `text` as the document file's content now.
    pub(crate) fn see_doc(&self, text: &str) -> Result<(), WorkspaceError> {
        self.write(paths::DOC_SEEN, text.as_bytes())
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
            if mask == 0 {
                return Ok(());
            }
            // Through the held folder: a link in the workspace is never
            // followed to narrow a file elsewhere.
            let Some(dir) = self.held()? else {
                return Ok(());
            };
            for (rel, entries) in Workspace::folders(&dir) {
                dir.remove_permissions(&rel, mask)?;
                for (name, kind) in entries {
                    if matches!(kind, EntryKind::File(_)) {
                        dir.remove_permissions(rel.join(name), mask)?;
                    }
                }
            }
            let (base, guarded) = self.guarded_split();
            if guarded.starts_with(".review") {
                Beneath::open(&base)?.remove_permissions(".review", mask)?;
            }
        }
        #[cfg(not(unix))]
        let _ = mode;
        Ok(())
    }

    /// Takes the workspace lock.
    pub fn lock(&self, command: &str, clock: &dyn Clock) -> Result<LockGuard, WorkspaceError> {
        let dir = self.held_or_create()?;
        Ok(acquire_lock_in(&dir, command, &clock.now())?)
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
        let root = self.held_or_create()?;
        for dir in ["stage1", "stage3", "review", PATCH_DIR] {
            root.create_dir_all(dir)?;
        }
        if root.entry(paths::RAW_DOC)?.is_none() {
            root.write_atomic(paths::RAW_DOC, document.as_bytes())?;
        }
        if self.meta()?.is_none() {
            let original = self.read_text(paths::RAW_DOC)?.unwrap_or_default();
            let meta = WorkspaceMeta {
                doc_name: doc_name.to_owned(),
                original_hash: sha256(&original),
                created_at: clock.now(),
            };
            let body = serde_json::to_vec_pretty(&meta).unwrap_or_default();
            root.write_atomic(paths::META, &body)?;
        }
        Ok(())
    }

    pub(crate) fn raw_text(&self) -> Result<String, WorkspaceError> {
        self.read_text(paths::RAW_DOC)?
            .ok_or_else(|| WorkspaceError::NotInitialized(self.root.clone()))
    }

    /// Where the document stands against the ledger: the text on disk and
    /// the index of the first ledger entry it does not reflect yet.
    pub(crate) fn document_position(
        &self,
        entries: &[LedgerEntry],
    ) -> Result<(String, Option<usize>), WorkspaceError> {
        let raw = self.raw_text()?;
        let text = self.read_text(paths::EDITED_DOC)?.unwrap_or(raw.clone());
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
            self.write(paths::EDITED_DOC, text.as_bytes())?;
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
        Ok(self
            .read_bytes(paths::EDITED_DOC)?
            .is_some_and(|b| same_hash(&sha256(&b), hash)))
    }

    /// The current document (read only: a pending roll-forward is computed
    /// in memory).
    pub fn current_text(&self) -> Result<String, WorkspaceError> {
        let ledger = self.ledger()?;
        Ok(self.current_document(ledger.entries(), false)?.0)
    }

    pub(crate) fn saved_regions(&self) -> Result<Option<SavedRegions>, WorkspaceError> {
        // The file only caches Stage 1's output for placing notes; one
        // written by an older koas in another shape is re-derived on the
        // next review rather than blocking `report` on this workspace.
        match self.read_json(paths::PROTECTED) {
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
            .filter_map(|e| koas_edit::linemap::edit_of(e).map(|edit| (e.id, edit)))
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
        self.write(paths::REVIEWED_DOC, annotated.text.as_bytes())?;
        Ok(annotated)
    }
}
