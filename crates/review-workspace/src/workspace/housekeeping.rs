//! Stray files of the workspace: stale temporary files, orphan and damaged
//! patch files.

use super::*;

impl Workspace {
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
    pub(super) fn stale_temp_rels(dir: &Beneath) -> Vec<PathBuf> {
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
    pub(super) fn orphan_patch_entries(&self, entries: &[LedgerEntry]) -> Vec<(OsString, u64)> {
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
    pub(super) fn damaged_patch_rels(&self, entries: &[LedgerEntry]) -> Vec<(String, String)> {
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
}
