//! The workspace lock: one run per workspace at a time.
//!
//! `<workspace>/.lock` holds the holder's pid, host, command and start
//! time. It is created complete (written to a temporary file, then
//! hard-linked to the lock name, which fails if the lock exists), so a
//! crash never leaves a half-written lock. A second run is refused with a
//! message naming the holder. A lock whose holder is on this host and whose
//! pid no longer exists is stale: it is removed and taken over (the new
//! holder's [`LockGuard::took_over`] says so). A lock from another host is
//! never taken over automatically.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::fsio::{fsync_dir, temp_path_for, FsError};

/// Who holds a workspace lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    /// Process ID of the holder; checked for liveness when the lock is found
    /// on the same host.
    pub pid: u32,
    /// Host the holder runs on (see [`hostname`]); a lock from another host
    /// is never taken over.
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
        /// The workspace folder that is locked.
        workspace: PathBuf,
        /// Path of the lock file, `<workspace>/.lock`, named so the user can
        /// delete it.
        lock: PathBuf,
        /// The holder record read from the lock file.
        holder: Box<LockHolder>,
    },
    /// A lock file exists but cannot be read.
    #[error("workspace {workspace} has a lock file {lock} that cannot be read ({reason}); if no koas run is active on this workspace, delete it")]
    Unreadable {
        /// The workspace folder that is locked.
        workspace: PathBuf,
        /// Path of the unreadable lock file, `<workspace>/.lock`.
        lock: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Writing the lock file (or its temporary copy) or fsyncing the
    /// workspace failed.
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
        // SAFETY: kill with signal 0 sends nothing; it only checks that
        // the pid exists. No memory is shared with the callee.
        #[allow(unsafe_code)]
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
    let body = serde_json::to_vec_pretty(&holder)
        .map_err(|e| FsError::new("serialize the holder of", &lock, io::Error::other(e)))?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
