//! The review workspace of one document: its folder layout, its lock, and
//! every operation a review command performs on it.

use super::*;

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

    /// The folders of the workspace below the held folder `dir` (`""` for
    /// itself), each with its entries; links are listed, not entered.
    pub(crate) fn folders(dir: &Beneath) -> Vec<(PathBuf, Vec<(OsString, EntryKind)>)> {
        let mut out = Vec::new();
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            let entries = dir.list(&rel).unwrap_or_default();
            for (name, kind) in &entries {
                if *kind == EntryKind::Dir {
                    stack.push(rel.join(name));
                }
            }
            out.push((rel, entries));
        }
        out
    }

    /// The workspace-relative paths of the temporary files a killed run
    /// left in the workspace.
    fn stale_temp_rels(dir: &Beneath) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Workspace::folders(dir)
            .into_iter()
            .flat_map(|(rel, entries)| {
                entries.into_iter().filter_map(move |(name, kind)| {
                    (matches!(kind, EntryKind::File(_))
                        && is_stale_temp_name(&name.to_string_lossy(), None))
                    .then(|| rel.join(name))
                })
            })
            .collect();
        out.sort();
        out
    }

    /// Temporary files a killed run left in the workspace.
    pub fn stale_temp_files(&self) -> Vec<PathBuf> {
        let Ok(Some(dir)) = self.held() else {
            return Vec::new();
        };
        Workspace::stale_temp_rels(&dir)
            .iter()
            .map(|rel| self.root.join(rel))
            .collect()
    }

    /// Removes the temporary files a killed run left in the workspace.
    pub fn remove_stale_temp_files(&self) -> Vec<PathBuf> {
        let Ok(Some(dir)) = self.held() else {
            return Vec::new();
        };
        Workspace::stale_temp_rels(&dir)
            .iter()
            .filter(|rel| dir.remove_file(rel).unwrap_or(false))
            .map(|rel| self.root.join(rel))
            .collect()
    }

    /// Patch files no ledger entry refers to: a run that failed before
    /// its ledger was saved wrote them (they are derived: every entry
    /// keeps its patches' text).
    pub fn orphan_patch_files(&self, entries: &[LedgerEntry]) -> Vec<PathBuf> {
        self.orphan_patch_entries(entries)
            .into_iter()
            .map(|(name, _)| self.patches_dir().join(name))
            .collect()
    }

    /// The names and sizes of the orphan patch files (a link's size is
    /// 0; a link is listed so it can be removed, never followed).
    fn orphan_patch_entries(&self, entries: &[LedgerEntry]) -> Vec<(OsString, u64)> {
        let referenced: BTreeSet<&str> = entries
            .iter()
            .flat_map(|e| [e.patch_forward.as_str(), e.patch_inverse.as_str()])
            .collect();
        let Ok(Some(dir)) = self.held() else {
            return Vec::new();
        };
        dir.list(PATCH_DIR)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(name, kind)| {
                let text = name.to_string_lossy();
                let size = match kind {
                    EntryKind::File(len) => len,
                    EntryKind::Link => 0,
                    _ => return None,
                };
                (text.ends_with(".patch")
                    && !referenced.contains(format!("{PATCH_DIR}/{text}").as_str()))
                .then_some((name, size))
            })
            .collect()
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
        let Ok(Some(dir)) = self.held() else {
            return (0, 0);
        };
        let mut removed = (0, 0);
        let mut retired = String::new();
        for (name, size) in self.orphan_patch_entries(ledger.entries()) {
            if dir
                .remove_file(Path::new(PATCH_DIR).join(&name))
                .unwrap_or(false)
            {
                removed.0 += 1;
                removed.1 += size;
                for id in ChangeId::scan(&name.to_string_lossy()) {
                    retired.push_str(&format!("{id}\n"));
                }
            }
        }
        // After the space is freed: their IDs may have been shown by the
        // failed run, so they are never given to another change.
        if !retired.is_empty() {
            let _ = dir.append(paths::RETIRED_IDS, retired.as_bytes());
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

    /// Patch files the ledger refers to that are missing or differ in size
    /// from the ledger's copy (a crash can lose a patch file: they are not
    /// fsynced one by one).
    pub fn damaged_patch_files(&self, entries: &[LedgerEntry]) -> Vec<(PathBuf, String)> {
        self.damaged_patch_rels(entries)
            .into_iter()
            .map(|(rel, text)| (self.path(&rel), text))
            .collect()
    }

    /// [`Workspace::damaged_patch_files`], workspace-relative.
    fn damaged_patch_rels(&self, entries: &[LedgerEntry]) -> Vec<(String, String)> {
        let dir = self.held().ok().flatten();
        let mut damaged = Vec::new();
        for entry in entries {
            let Some(copy) = &entry.patch_text else {
                continue;
            };
            for (rel, text) in [
                (&entry.patch_forward, &copy.forward),
                (&entry.patch_inverse, &copy.inverse),
            ] {
                let intact = dir.as_ref().is_some_and(|dir| {
                    dir.entry(rel.as_str())
                        .is_ok_and(|e| e == Some(EntryKind::File(text.len() as u64)))
                });
                if !rel.is_empty() && !intact {
                    damaged.push((rel.clone(), text.clone()));
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
        let files: Vec<(String, Vec<u8>)> = self
            .damaged_patch_rels(entries)
            .into_iter()
            .map(|(rel, text)| (rel, text.into_bytes()))
            .collect();
        if !files.is_empty() {
            self.held_or_create()?.write_batch(&files)?;
        }
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
        let Some(dir) = self.held()? else {
            return Ok(seen);
        };
        for (name, _) in dir.list(PATCH_DIR).unwrap_or_default() {
            seen.extend(ChangeId::scan(&name.to_string_lossy()));
        }
        if let Some(log) = self.read_text(paths::APPLY_LOG).ok().flatten() {
            seen.extend(ChangeId::scan(&log));
        }
        if let Some(retired) = self.read_text(paths::RETIRED_IDS).ok().flatten() {
            seen.extend(ChangeId::scan(&retired));
        }
        for (name, _) in dir.list("review").unwrap_or_default() {
            if name.to_string_lossy().contains(".torn-") {
                if let Ok(Some(bytes)) = dir.read(Path::new("review").join(&name)) {
                    seen.extend(ChangeId::scan(&String::from_utf8_lossy(&bytes)));
                }
            }
        }
        Ok(seen)
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
        self.write(paths::REVIEWED_DOC, annotated.text.as_bytes())?;
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
