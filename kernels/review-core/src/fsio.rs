//! File-system safety: atomic writes, durable batches of files, and the
//! workspace lock.
//!
//! **Atomic write**: the bytes go to a temporary file in the same
//! directory, which is fsynced, renamed over the target, and the directory
//! is fsynced. A reader (or a crash) sees the old file or the new one,
//! never a mix.
//!
//! **Batch of derived files**: many small files (patches) are written
//! atomically without a per-file fsync and the directory is fsynced once;
//! their content is also in the fsynced ledger, which rebuilds them if a
//! crash loses one.
//!
//! **Lock**: `<workspace>/.lock` holds the holder's pid, host, command and
//! start time. It is created complete (written to a temporary file, then
//! hard-linked to the lock name, which fails if the lock exists), so a
//! crash never leaves a half-written lock. A second run is refused with a
//! message naming the holder. A lock whose holder is on this host and whose
//! pid no longer exists is stale: it is removed and taken over (the new
//! holder's [`LockGuard::took_over`] says so). A lock from another host is
//! never taken over automatically.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// An I/O error with the path it concerns.
#[derive(Debug, Error)]
#[error("{action} {path}: {source}")]
pub struct FsError {
    /// What was being done.
    pub action: &'static str,
    /// The path.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: io::Error,
}

impl FsError {
    /// Wraps an I/O error.
    pub fn new(action: &'static str, path: &Path, source: io::Error) -> Self {
        FsError {
            action,
            path: path.to_owned(),
            source,
        }
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_path_for(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned());
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.tmp-{}-{n}", std::process::id()))
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Fsyncs a directory so a rename or creation inside it is durable.
pub fn fsync_dir(dir: &Path) -> Result<(), FsError> {
    #[cfg(unix)]
    {
        let handle = File::open(dir).map_err(|e| FsError::new("open directory", dir, e))?;
        handle
            .sync_all()
            .map_err(|e| FsError::new("fsync directory", dir, e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

fn write_temp_and_rename(path: &Path, bytes: &[u8], fsync_file: bool) -> Result<(), FsError> {
    let temp = temp_path_for(path);
    let result = (|| {
        let mut file = File::create(&temp).map_err(|e| FsError::new("create", &temp, e))?;
        file.write_all(bytes)
            .map_err(|e| FsError::new("write", &temp, e))?;
        if fsync_file {
            file.sync_all()
                .map_err(|e| FsError::new("fsync", &temp, e))?;
        }
        fs::rename(&temp, path).map_err(|e| FsError::new("rename into", path, e))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Writes `bytes` to `path` atomically and durably.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), FsError> {
    write_temp_and_rename(path, bytes, true)?;
    fsync_dir(&parent_of(path))
}

/// Writes every `(path, bytes)` atomically (temporary file + rename) and
/// fsyncs `dir` once, without fsyncing each file. For derived files that
/// can be rebuilt (patch files, whose text the fsynced ledger also holds):
/// one fsync costs milliseconds and a review writes two patches per change.
pub fn write_files_atomically(dir: &Path, files: &[(PathBuf, Vec<u8>)]) -> Result<(), FsError> {
    if files.is_empty() {
        return Ok(());
    }
    for (path, bytes) in files {
        write_temp_and_rename(path, bytes, false)?;
    }
    fsync_dir(dir)
}

/// Creates `dir` and its parents, fsyncing the new directory's parent.
pub fn create_dir_durably(dir: &Path) -> Result<(), FsError> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::create_dir_all(dir).map_err(|e| FsError::new("create directory", dir, e))?;
    fsync_dir(&parent_of(dir))
}

/// Who holds a workspace lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    /// Process ID.
    pub pid: u32,
    /// Host name.
    pub hostname: String,
    /// Command line (e.g. `koas review spec.md --ops ops.json`).
    pub command: String,
    /// When the lock was taken (RFC 3339).
    pub started_at: String,
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pid {} on {} running `{}` since {}",
            self.pid, self.hostname, self.command, self.started_at
        )
    }
}

/// Why a lock could not be taken.
#[derive(Debug, Error)]
pub enum LockError {
    /// Another run holds the lock.
    #[error("workspace {workspace} is in use by {holder}; wait for it to finish (if that process is gone from that host, delete {lock})")]
    Held {
        /// Workspace directory.
        workspace: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// Its holder.
        holder: Box<LockHolder>,
    },
    /// A lock file exists but cannot be read.
    #[error("workspace {workspace} has a lock file {lock} that cannot be read ({reason}); if no koas run is active on this workspace, delete it")]
    Unreadable {
        /// Workspace directory.
        workspace: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// I/O failure.
    #[error(transparent)]
    Io(#[from] FsError),
}

/// A held workspace lock; released on drop.
#[derive(Debug)]
pub struct LockGuard {
    path: PathBuf,
    holder: LockHolder,
    took_over: Option<LockHolder>,
}

impl LockGuard {
    /// This run's holder record.
    pub fn holder(&self) -> &LockHolder {
        &self.holder
    }

    /// The stale holder this lock replaced, if any.
    pub fn took_over(&self) -> Option<&LockHolder> {
        self.took_over.as_ref()
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Only remove the lock if it is still ours.
        if read_holder(&self.path).is_ok_and(|h| h == self.holder) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// The host name, best effort.
pub fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".to_owned())
}

/// True when a process with `pid` exists on this host (always true where
/// that cannot be checked).
pub fn pid_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        // SAFETY: kill with signal 0 sends nothing; it only checks existence.
        let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
        rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

fn read_holder(path: &Path) -> Result<LockHolder, String> {
    let text = fs::read_to_string(path).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// Takes the lock of `workspace` for `command`.
pub fn acquire_lock(
    workspace: &Path,
    command: &str,
    started_at: &str,
) -> Result<LockGuard, LockError> {
    let lock = workspace.join(".lock");
    let holder = LockHolder {
        pid: std::process::id(),
        hostname: hostname(),
        command: command.to_owned(),
        started_at: started_at.to_owned(),
    };
    let body = serde_json::to_vec_pretty(&holder).unwrap_or_default();
    let temp = temp_path_for(&lock);
    {
        let mut file = File::create(&temp).map_err(|e| FsError::new("create", &temp, e))?;
        file.write_all(&body)
            .map_err(|e| FsError::new("write", &temp, e))?;
        file.sync_all()
            .map_err(|e| FsError::new("fsync", &temp, e))?;
    }
    let mut took_over = None;
    let result = loop {
        match fs::hard_link(&temp, &lock) {
            Ok(()) => break Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match read_holder(&lock) {
                Ok(existing) => {
                    let stale = took_over.is_none()
                        && existing.hostname == holder.hostname
                        && !pid_alive(existing.pid);
                    if stale {
                        let _ = fs::remove_file(&lock);
                        took_over = Some(existing);
                        continue;
                    }
                    break Err(LockError::Held {
                        workspace: workspace.to_owned(),
                        lock: lock.clone(),
                        holder: Box::new(existing),
                    });
                }
                Err(reason) => {
                    break Err(LockError::Unreadable {
                        workspace: workspace.to_owned(),
                        lock: lock.clone(),
                        reason,
                    })
                }
            },
            Err(e) => break Err(LockError::Io(FsError::new("create lock", &lock, e))),
        }
    };
    let _ = fs::remove_file(&temp);
    result?;
    fsync_dir(workspace)?;
    Ok(LockGuard {
        path: lock,
        holder,
        took_over,
    })
}

/// Opens `path` for appending, creating it (and fsyncing its directory)
/// when new.
pub fn open_append(path: &Path) -> Result<File, FsError> {
    let existed = path.exists();
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| FsError::new("open for append", path, e))?;
    if !existed {
        file.sync_all()
            .map_err(|e| FsError::new("fsync", path, e))?;
        fsync_dir(&parent_of(path))?;
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("doc.md");
        atomic_write(&path, b"old").unwrap();
        atomic_write(&path, b"new content").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new content");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn batch_writes_every_file() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<(PathBuf, Vec<u8>)> = (0..5)
            .map(|i| (dir.path().join(format!("f{i}")), vec![b'a' + i as u8; 3]))
            .collect();
        write_files_atomically(dir.path(), &files).unwrap();
        for (path, bytes) in &files {
            assert_eq!(&fs::read(path).unwrap(), bytes);
        }
    }

    #[test]
    fn second_lock_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = acquire_lock(
            dir.path(),
            "koas review spec.md",
            "2026-01-01T00:00:00+00:00",
        )
        .unwrap();
        let err = acquire_lock(dir.path(), "koas revert spec.md RVW-0001", "now").unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(&format!("pid {}", std::process::id())),
            "{message}"
        );
        assert!(message.contains("koas review spec.md"), "{message}");
        assert!(message.contains(&hostname()), "{message}");
        drop(first);
        let again = acquire_lock(dir.path(), "koas revert", "now").unwrap();
        assert!(again.took_over().is_none());
    }

    #[test]
    fn stale_lock_of_a_dead_pid_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        // A pid far above pid_max on Linux cannot exist.
        let dead = LockHolder {
            pid: 999_999_999,
            hostname: hostname(),
            command: "koas review crashed.md".into(),
            started_at: "2026-01-01T00:00:00+00:00".into(),
        };
        fs::write(dir.path().join(".lock"), serde_json::to_vec(&dead).unwrap()).unwrap();
        let guard = acquire_lock(dir.path(), "koas review", "now").unwrap();
        assert_eq!(guard.took_over(), Some(&dead));
    }

    #[test]
    fn foreign_host_and_unreadable_locks_are_not_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let foreign = LockHolder {
            pid: 999_999_999,
            hostname: "another-host".into(),
            command: "koas review".into(),
            started_at: "t".into(),
        };
        fs::write(
            dir.path().join(".lock"),
            serde_json::to_vec(&foreign).unwrap(),
        )
        .unwrap();
        assert!(matches!(
            acquire_lock(dir.path(), "x", "t"),
            Err(LockError::Held { .. })
        ));
        fs::write(dir.path().join(".lock"), b"").unwrap();
        assert!(matches!(
            acquire_lock(dir.path(), "x", "t"),
            Err(LockError::Unreadable { .. })
        ));
    }
}
