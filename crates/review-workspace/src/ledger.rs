//! The append-only change ledger file, `review/ledger.jsonl`.
//!
//! One JSON object per line, one line per applied change, flag or revert.
//! Lines are only ever appended, each append is fsynced before it returns,
//! and no entry is rewritten.
//!
//! **Torn tail policy.** A crash in the middle of an append can leave a
//! last line without its newline, or with bytes that do not parse. Opening
//! the ledger detects this and reports a [`TornTail`] (byte offset and raw
//! text); the entries before it are read normally. While a torn tail is
//! present, [`Ledger::append`] refuses to write, so new entries are never
//! mixed with torn bytes. [`Ledger::repair_torn_tail`] moves the torn
//! bytes to `ledger.jsonl.torn-<UTC timestamp>` (fsynced), then cuts them
//! from the ledger. That cut is the one write that is not an append, and
//! it only removes bytes that never formed an entry. A line that does not
//! parse *before* the last one is corruption, not a torn write: the ledger
//! refuses to open.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use koas_orchestrator::fsio::{Access, Beneath, EntryKind, FsError};
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::ledger::LedgerEntry;
use serde::Serialize;
use thiserror::Error;

/// What is wrong with the end of the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TornTail {
    /// Byte offset where the torn line starts.
    pub offset: u64,
    /// The torn bytes (lossy UTF-8).
    pub raw: String,
    /// Why it is considered torn.
    pub reason: String,
}

/// Why the ledger cannot be read or appended to.
#[derive(Debug, Error)]
pub enum LedgerError {
    #[error(transparent)]
    Io(#[from] FsError),
    /// A line before the last does not parse.
    #[error("ledger {path} is corrupt at line {line} (byte {offset}): {reason}; it was not written by koas or was edited by hand — restore it from a backup")]
    Corrupt {
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// Byte offset of the line.
        offset: u64,
        /// The UTF-8 or JSON error.
        reason: String,
    },
    /// Two entries share an ID.
    #[error("ledger {path} has two entries with ID {id} (second at line {line}); the ledger is inconsistent")]
    DuplicateId {
        path: PathBuf,
        id: EntryId,
        /// 1-based line of the second one.
        line: usize,
    },
    /// Appending while a torn tail is present.
    #[error("ledger {path} ends with a torn line at byte {offset} (a crash interrupted a write); nothing was appended — run the ledger repair, which moves the torn bytes to a side file")]
    TornTail {
        path: PathBuf,
        /// Offset of the torn line.
        offset: u64,
    },
    /// The file changed since it was read.
    #[error("ledger {path} changed on disk since it was read ({expected} bytes expected, {found} found); another process wrote to it — re-run the command")]
    ChangedOnDisk {
        path: PathBuf,
        /// File length in bytes when it was read.
        expected: u64,
        /// File length in bytes now.
        found: u64,
    },
    /// An entry cannot be serialized (should not happen).
    #[error("cannot serialize ledger entry {id}: {reason}")]
    Serialize {
        id: EntryId,
        /// The serde_json error.
        reason: String,
    },
}

/// The ledger file and its parsed entries.
#[derive(Debug)]
pub struct Ledger {
    /// The folder the ledger is opened below (never through a link);
    /// `None` when that folder does not exist yet.
    dir: Option<Beneath>,
    /// The ledger's path below `dir`.
    rel: PathBuf,
    path: PathBuf,
    entries: Vec<LedgerEntry>,
    torn: Option<TornTail>,
    valid_len: u64,
}

/// Parses ledger bytes: the entries, and a torn tail if any.
pub fn parse_ledger(
    path: &Path,
    bytes: &[u8],
) -> Result<(Vec<LedgerEntry>, Option<TornTail>, u64), LedgerError> {
    let mut entries = Vec::new();
    let mut seen = BTreeSet::new();
    let mut offset = 0usize;
    let mut line_no = 0usize;
    while offset < bytes.len() {
        line_no += 1;
        let rest = &bytes[offset..];
        let (line, has_newline) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], true),
            None => (rest, false),
        };
        let next = offset + line.len() + usize::from(has_newline);
        let is_last = next >= bytes.len();
        let parsed = std::str::from_utf8(line)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str::<LedgerEntry>(text).map_err(|e| e.to_string()));
        match parsed {
            Ok(entry) if has_newline => {
                if !seen.insert(entry.id) {
                    return Err(LedgerError::DuplicateId {
                        path: path.to_owned(),
                        id: entry.id,
                        line: line_no,
                    });
                }
                entries.push(entry);
            }
            outcome if is_last => {
                let reason = match outcome {
                    Ok(_) => "the last line has no newline: its write did not finish".to_owned(),
                    Err(e) => format!("the last line does not parse: {e}"),
                };
                return Ok((
                    entries,
                    Some(TornTail {
                        offset: offset as u64,
                        raw: String::from_utf8_lossy(rest).into_owned(),
                        reason,
                    }),
                    offset as u64,
                ));
            }
            other => {
                let reason = match other {
                    Ok(_) => "line has no newline".to_owned(),
                    Err(e) => e,
                };
                return Err(LedgerError::Corrupt {
                    path: path.to_owned(),
                    line: line_no,
                    offset: offset as u64,
                    reason,
                });
            }
        }
        offset = next;
    }
    Ok((entries, None, bytes.len() as u64))
}

impl Ledger {
    /// Opens (or starts) the ledger at `path` (its folder as given, the
    /// file itself never through a link). A missing file is an empty
    /// ledger; it is created on the first append.
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = Path::new(path.file_name().unwrap_or(path.as_os_str()));
        let dir = match Beneath::open(parent) {
            Ok(dir) => Some(dir),
            Err(e) if e.source.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        Ledger::open_below(dir, name)
    }

    /// Opens (or starts) the ledger at `rel` below the held folder `dir`
    /// (`None`: that folder does not exist yet, the ledger is empty); no
    /// link is followed on the way.
    pub fn open_below(dir: Option<Beneath>, rel: &Path) -> Result<Ledger, LedgerError> {
        let path = match &dir {
            Some(dir) => dir.join(rel),
            None => rel.to_owned(),
        };
        let bytes = match &dir {
            Some(dir) => dir.read(rel)?.unwrap_or_default(),
            None => Vec::new(),
        };
        let (entries, torn, valid_len) = parse_ledger(&path, &bytes)?;
        Ok(Ledger {
            dir,
            rel: rel.to_owned(),
            path,
            entries,
            torn,
            valid_len,
        })
    }

    /// The held folder, or the error of a folder that does not exist.
    fn dir(&self) -> Result<&Beneath, LedgerError> {
        self.dir.as_ref().ok_or_else(|| {
            FsError::new(
                "open the folder of",
                &self.path,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
            .into()
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The parsed entries, in file order (a torn tail excluded).
    pub fn entries(&self) -> &[LedgerEntry] {
        &self.entries
    }

    /// The torn tail, if the last write was interrupted.
    pub fn torn_tail(&self) -> Option<&TornTail> {
        self.torn.as_ref()
    }

    /// Change IDs present (not revert IDs).
    pub fn change_ids(&self) -> BTreeSet<ChangeId> {
        self.entries
            .iter()
            .filter_map(LedgerEntry::change_id)
            .collect()
    }

    /// The entry with `id`.
    pub fn find(&self, id: EntryId) -> Option<&LedgerEntry> {
        self.entries.iter().find(|e| e.id == id)
    }

    /// The revert entry of change `id`, if it was reverted.
    pub fn revert_of(&self, id: ChangeId) -> Option<&LedgerEntry> {
        self.find(EntryId::Revert(id))
    }

    /// Appends one entry and fsyncs.
    pub fn append(&mut self, entry: LedgerEntry) -> Result<(), LedgerError> {
        self.append_all(vec![entry])
    }

    /// Appends entries with one write and one fsync (group commit). After a
    /// crash, a prefix of them is in the ledger, possibly followed by a
    /// torn line.
    pub fn append_all(&mut self, entries: Vec<LedgerEntry>) -> Result<(), LedgerError> {
        if entries.is_empty() {
            return Ok(());
        }
        if let Some(torn) = &self.torn {
            return Err(LedgerError::TornTail {
                path: self.path.clone(),
                offset: torn.offset,
            });
        }
        let dir = self.dir()?;
        let found = match dir.entry(&self.rel)? {
            Some(EntryKind::File(len)) => len,
            _ => 0,
        };
        if found != self.valid_len {
            return Err(LedgerError::ChangedOnDisk {
                path: self.path.clone(),
                expected: self.valid_len,
                found,
            });
        }
        let mut ids: BTreeSet<EntryId> = self.entries.iter().map(|e| e.id).collect();
        let mut bytes = Vec::new();
        for entry in &entries {
            if !ids.insert(entry.id) {
                return Err(LedgerError::DuplicateId {
                    path: self.path.clone(),
                    id: entry.id,
                    line: self.entries.len() + 1,
                });
            }
            let line = serde_json::to_vec(entry).map_err(|e| LedgerError::Serialize {
                id: entry.id,
                reason: e.to_string(),
            })?;
            bytes.extend_from_slice(&line);
            bytes.push(b'\n');
        }
        let mut file = dir.open_append(&self.rel)?;
        file.write_all(&bytes)
            .map_err(|e| FsError::new("append to", &self.path, e))?;
        file.sync_data()
            .map_err(|e| FsError::new("fsync", &self.path, e))?;
        self.valid_len += bytes.len() as u64;
        self.entries.extend(entries);
        Ok(())
    }

    /// Moves a torn tail aside to `<ledger>.torn-<stamp>` and cuts it from
    /// the ledger. Returns the side file, or `None` when there was nothing
    /// to repair. `stamp` should be a file-name-safe UTC timestamp.
    pub fn repair_torn_tail(&mut self, stamp: &str) -> Result<Option<PathBuf>, LedgerError> {
        let Some(torn) = self.torn.clone() else {
            return Ok(None);
        };
        let dir = self.dir()?;
        let bytes = dir.read(&self.rel)?.unwrap_or_default();
        let start = usize::try_from(torn.offset)
            .unwrap_or(bytes.len())
            .min(bytes.len());
        let name = self
            .rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "ledger.jsonl".to_owned());
        let side = self.rel.with_file_name(format!("{name}.torn-{stamp}"));
        dir.write_atomic(&side, &bytes[start..])?;
        let write = Access {
            write: true,
            ..Access::default()
        };
        let file = dir.open_file(&self.rel, write)?;
        file.set_len(torn.offset)
            .map_err(|e| FsError::new("truncate torn tail of", &self.path, e))?;
        file.sync_all()
            .map_err(|e| FsError::new("fsync", &self.path, e))?;
        let side = dir.join(&side);
        self.valid_len = torn.offset;
        self.torn = None;
        Ok(Some(side))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{self, OpenOptions};

    pub(crate) fn entry(id: &str) -> LedgerEntry {
        LedgerEntry::example(EntryId::parse(id).unwrap())
    }

    #[test]
    fn append_then_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        let mut ledger = Ledger::open(&path).unwrap();
        assert!(ledger.entries().is_empty());
        ledger.append(entry("RVW-0001")).unwrap();
        ledger
            .append_all(vec![entry("RVW-0002"), entry("REVERT-RVW-0001")])
            .unwrap();
        let reopened = Ledger::open(&path).unwrap();
        assert_eq!(reopened.entries().len(), 3);
        assert!(reopened.torn_tail().is_none());
        assert_eq!(reopened.change_ids().len(), 2);
        assert!(reopened.revert_of(ChangeId::first()).is_some());
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn duplicate_ids_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = Ledger::open(&dir.path().join("l.jsonl")).unwrap();
        ledger.append(entry("RVW-0001")).unwrap();
        assert!(matches!(
            ledger.append(entry("RVW-0001")),
            Err(LedgerError::DuplicateId { .. })
        ));
    }

    #[test]
    fn torn_tail_is_reported_refused_and_repaired() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        let mut ledger = Ledger::open(&path).unwrap();
        ledger.append(entry("RVW-0001")).unwrap();
        let good_len = fs::metadata(&path).unwrap().len();
        // Simulate a crash half-way through the second line.
        let line = serde_json::to_string(&entry("RVW-0002")).unwrap();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(&line.as_bytes()[..40]).unwrap();
        drop(file);

        let mut ledger = Ledger::open(&path).unwrap();
        assert_eq!(ledger.entries().len(), 1, "the good entry is still read");
        let torn = ledger.torn_tail().unwrap().clone();
        assert_eq!(torn.offset, good_len);
        assert_eq!(torn.raw, &line[..40]);
        let err = ledger.append(entry("RVW-0003")).unwrap_err();
        assert!(matches!(err, LedgerError::TornTail { .. }), "{err}");
        assert_eq!(
            fs::metadata(&path).unwrap().len(),
            good_len + 40,
            "nothing appended"
        );

        let side = ledger
            .repair_torn_tail("20260101T000000Z")
            .unwrap()
            .unwrap();
        assert_eq!(fs::read_to_string(&side).unwrap(), &line[..40]);
        assert_eq!(fs::metadata(&path).unwrap().len(), good_len);
        ledger.append(entry("RVW-0003")).unwrap();
        let reopened = Ledger::open(&path).unwrap();
        assert!(reopened.torn_tail().is_none());
        assert_eq!(reopened.entries().len(), 2);
    }

    #[test]
    fn complete_line_without_newline_is_torn_too() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        fs::write(&path, serde_json::to_string(&entry("RVW-0001")).unwrap()).unwrap();
        let ledger = Ledger::open(&path).unwrap();
        assert!(ledger.entries().is_empty());
        assert!(ledger.torn_tail().unwrap().reason.contains("no newline"));
    }

    #[test]
    fn garbage_before_the_last_line_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        let good = serde_json::to_string(&entry("RVW-0002")).unwrap();
        fs::write(&path, format!("{{broken\n{good}\n")).unwrap();
        let err = Ledger::open(&path).unwrap_err();
        assert!(matches!(err, LedgerError::Corrupt { line: 1, .. }), "{err}");
    }

    #[test]
    fn external_writes_are_detected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        let mut ledger = Ledger::open(&path).unwrap();
        ledger.append(entry("RVW-0001")).unwrap();
        let mut other = Ledger::open(&path).unwrap();
        other.append(entry("RVW-0002")).unwrap();
        assert!(matches!(
            ledger.append(entry("RVW-0003")),
            Err(LedgerError::ChangedOnDisk { .. })
        ));
    }
}
