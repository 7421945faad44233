//! The workspace lock: one run per workspace at a time.
//!
//! `<workspace>/.lock` is held with an exclusive `flock` for the whole
//! run, and holds the holder's pid, host, command and start time for
//! messages. The operating system decides who holds it, so a takeover is
//! race-free: a process that dies (even by SIGKILL) releases its `flock`
//! with it, and the next run takes the lock over, saying whose record it
//! found ([`LockGuard::took_over`]). Nothing is removed to take a lock;
//! the file is removed only by its holder when it releases it, and a run
//! that locked a file which was removed meanwhile opens the new one
//! instead. A record left by a holder that is still alive on this host
//! without holding the `flock` (a koas from before `flock`) or by a holder
//! on another host is respected: the run is refused, naming it.

use std::fs::{self, File};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fs4::fs_std::FileExt;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::fsio::{pid_alive, Access, Beneath, FsError};

/// Who holds a workspace lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    /// Process ID of the holder; checked for liveness when the lock is found
    /// on the same host.
    pub pid: u32,
    /// Host the holder runs on (see [`hostname`]); a lock from another host
    /// is never taken over.
    pub hostname: String,
    /// Command line (e.g. `koas run pipeline.toml --jobs 2`).
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
    /// Another run holds the lock and has not written its record yet (it
    /// is starting).
    #[error("workspace {workspace} is in use by another koas run that is just starting; wait for it to finish")]
    Starting {
        /// The workspace folder that is locked.
        workspace: PathBuf,
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
    /// The open lock file: its `flock` is the lock.
    file: File,
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
        let mut held = held();
        // Removed while still locked, so no other run can lock this file
        // in between; the `flock` goes with the file handle.
        if same_file(&self.file, &self.path) {
            let _ = fs::remove_file(&self.path);
        }
        held.retain(|p| p != &self.path);
    }
}

/// Lock files this process holds, so that an exit that skips destructors
/// (Ctrl-C) can still remove them. Taking a lock and releasing one happen
/// with this list locked, so such an exit, which locks it too, waits for
/// them to finish: it never leaves a lock file between its creation and
/// its registration here.
static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn held() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    // A panic while the list was locked leaves it usable: it is only
    // pushed to and filtered.
    HELD.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes the lock files this process holds, for an exit that will not
/// run destructors. Their `flock`s end with the process. Waits for a lock
/// being taken or released by another thread to be done.
pub fn release_all_on_exit() {
    let held = held();
    let me = std::process::id();
    for path in held.iter() {
        if read_holder(path).is_ok_and(|h| h.pid == me) {
            let _ = fs::remove_file(path);
        }
    }
    // Keep the list locked until the process exits, so no other thread
    // takes a lock meanwhile.
    std::mem::forget(held);
}

/// True when `path` names the file `file` has open (not a file created
/// after it was removed).
fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        path.exists()
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

fn read_holder(path: &Path) -> Result<LockHolder, String> {
    let text = fs::read_to_string(path).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// The holder record in an open lock file: `None` when it is empty (a
/// released lock, or a holder that died before writing it), else the
/// record or why it does not parse.
fn record_in(file: &mut File) -> Option<Result<LockHolder, String>> {
    let mut text = String::new();
    if let Err(e) = file
        .seek(io::SeekFrom::Start(0))
        .and_then(|_| file.read_to_string(&mut text))
    {
        return Some(Err(e.to_string()));
    }
    if text.trim().is_empty() {
        return None;
    }
    Some(serde_json::from_str(&text).map_err(|e| e.to_string()))
}

/// What `koas status` shows about a workspace's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockState {
    /// No lock file, or an empty one.
    Free,
    /// A run holds it.
    Held(LockHolder),
    /// A record left by a holder that is gone (killed): the next run takes
    /// the lock over.
    Stale(LockHolder),
}

/// Who holds the lock of `workspace`, without taking it: the record's
/// holder when it is alive (or on another host, where that cannot be
/// checked), a stale record when its process is gone.
pub fn lock_state(workspace: &Path) -> LockState {
    // Read below the folder, never through a link in place of the file.
    let record = Beneath::open(workspace)
        .and_then(|dir| dir.read(".lock"))
        .map_err(|e| e.to_string())
        .and_then(|bytes| {
            let bytes = bytes.ok_or_else(|| "no lock file".to_owned())?;
            serde_json::from_slice::<LockHolder>(&bytes).map_err(|e| e.to_string())
        });
    match record {
        Err(_) => LockState::Free,
        Ok(holder) if holder.hostname != hostname() || pid_alive(holder.pid) => {
            LockState::Held(holder)
        }
        Ok(holder) => LockState::Stale(holder),
    }
}

/// How many times a lock file that was removed while it was being locked
/// is opened again before giving up (each retry means another run
/// released the lock at that moment).
const REOPEN_ATTEMPTS: usize = 64;

/// Takes the lock of `workspace` for `command`.
pub fn acquire_lock(
    workspace: &Path,
    command: &str,
    started_at: &str,
) -> Result<LockGuard, LockError> {
    acquire_lock_in(&Beneath::open(workspace)?, command, started_at)
}

/// Takes the lock of the held folder `dir` for `command`: its `.lock`
/// file is opened below the handle, and a link in its place is refused
/// by name, never written through.
pub fn acquire_lock_in(
    dir: &Beneath,
    command: &str,
    started_at: &str,
) -> Result<LockGuard, LockError> {
    let workspace = dir.path();
    let lock = dir.join(".lock");
    let holder = LockHolder {
        pid: std::process::id(),
        hostname: hostname(),
        command: command.to_owned(),
        started_at: started_at.to_owned(),
    };
    let body = serde_json::to_vec_pretty(&holder)
        .map_err(|e| FsError::new("serialize the holder of", &lock, io::Error::other(e)))?;
    for _ in 0..REOPEN_ATTEMPTS {
        let mut held = held();
        let access = Access {
            read: true,
            write: true,
            create: true,
            ..Access::default()
        };
        let mut file = dir.open_file(".lock", access)?;
        let locked = file
            .try_lock_exclusive()
            .map_err(|e| FsError::new("lock", &lock, e))?;
        if !locked {
            return Err(match record_in(&mut file) {
                Some(Ok(existing)) => LockError::Held {
                    workspace: workspace.to_owned(),
                    lock: lock.clone(),
                    holder: Box::new(existing),
                },
                // The holder has the `flock` but its record is empty or
                // half written: it is writing it now.
                Some(Err(_)) | None => LockError::Starting {
                    workspace: workspace.to_owned(),
                },
            });
        }
        if !same_file(&file, &lock) {
            // The holder released (removed) it while we opened it.
            continue;
        }
        let took_over = match record_in(&mut file) {
            None => None,
            // A record nobody holds the flock for, which does not parse:
            // its writer died mid-write.
            Some(Err(_)) => None,
            Some(Ok(existing)) => {
                let alive_here = existing.hostname == holder.hostname
                    && existing.pid != holder.pid
                    && pid_alive(existing.pid);
                if alive_here || existing.hostname != holder.hostname {
                    return Err(LockError::Held {
                        workspace: workspace.to_owned(),
                        lock: lock.clone(),
                        holder: Box::new(existing),
                    });
                }
                Some(existing)
            }
        };
        let written = file
            .set_len(0)
            .and_then(|()| file.seek(io::SeekFrom::Start(0)).map(|_| ()))
            .and_then(|()| file.write_all(&body))
            .and_then(|()| file.sync_all());
        written.map_err(|e| FsError::new("write", &lock, e))?;
        dir.sync()?;
        held.push(lock.clone());
        return Ok(LockGuard {
            path: lock,
            file,
            holder,
            took_over,
        });
    }
    Err(LockError::Io(FsError::new(
        "lock",
        &lock,
        io::Error::other("the lock file kept being replaced while it was being locked"),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = acquire_lock(
            dir.path(),
            "koas run spec.toml",
            "2026-01-01T00:00:00+00:00",
        )
        .unwrap();
        let err = acquire_lock(dir.path(), "koas run other.toml", "now").unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(&format!("pid {}", std::process::id())),
            "{message}"
        );
        assert!(message.contains("koas run spec.toml"), "{message}");
        assert!(message.contains(&hostname()), "{message}");
        drop(first);
        let again = acquire_lock(dir.path(), "koas run again", "now").unwrap();
        assert!(again.took_over().is_none());
    }

    #[test]
    fn stale_lock_of_a_dead_pid_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        // A pid far above pid_max on Linux cannot exist.
        let dead = LockHolder {
            pid: 999_999_999,
            hostname: hostname(),
            command: "koas run crashed.toml".into(),
            started_at: "2026-01-01T00:00:00+00:00".into(),
        };
        fs::write(dir.path().join(".lock"), serde_json::to_vec(&dead).unwrap()).unwrap();
        let guard = acquire_lock(dir.path(), "koas run", "now").unwrap();
        assert_eq!(guard.took_over(), Some(&dead));
    }

    #[test]
    fn foreign_host_and_unreadable_locks_are_not_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let foreign = LockHolder {
            pid: 999_999_999,
            hostname: "another-host".into(),
            command: "koas run".into(),
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
    }

    #[test]
    fn an_empty_or_torn_record_nobody_locks_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(".lock"), b"").unwrap();
        let guard = acquire_lock(dir.path(), "x", "t").unwrap();
        assert!(guard.took_over().is_none());
        drop(guard);
        assert!(!dir.path().join(".lock").exists(), "released");
        fs::write(dir.path().join(".lock"), b"{\"pid\": 12").unwrap();
        assert!(acquire_lock(dir.path(), "x", "t").is_ok());
    }

    #[test]
    fn a_lock_held_by_another_handle_is_refused_even_with_a_dead_record() {
        let dir = tempfile::tempdir().unwrap();
        let first = acquire_lock(dir.path(), "koas run a.toml", "t").unwrap();
        // Whatever the record says, the flock decides.
        let dead = LockHolder {
            pid: 999_999_999,
            hostname: hostname(),
            command: "koas run crashed.toml".into(),
            started_at: "t".into(),
        };
        fs::write(dir.path().join(".lock"), serde_json::to_vec(&dead).unwrap()).unwrap();
        assert!(matches!(
            acquire_lock(dir.path(), "x", "t"),
            Err(LockError::Held { .. })
        ));
        // A holder that has not written its record yet is still a holder.
        fs::write(dir.path().join(".lock"), b"").unwrap();
        let err = acquire_lock(dir.path(), "x", "t").unwrap_err();
        assert!(matches!(err, LockError::Starting { .. }), "{err}");
        assert!(err.to_string().contains("is in use by"), "{err}");
        drop(first);
        assert_eq!(lock_state(dir.path()), LockState::Free);
    }

    #[test]
    fn status_tells_a_dead_holder_from_a_live_one() {
        let dir = tempfile::tempdir().unwrap();
        let dead = LockHolder {
            pid: 999_999_999,
            hostname: hostname(),
            command: "koas run crashed.toml".into(),
            started_at: "t".into(),
        };
        fs::write(dir.path().join(".lock"), serde_json::to_vec(&dead).unwrap()).unwrap();
        assert_eq!(lock_state(dir.path()), LockState::Stale(dead));
        let guard = acquire_lock(dir.path(), "koas run", "now").unwrap();
        assert_eq!(
            lock_state(dir.path()),
            LockState::Held(guard.holder().clone())
        );
    }
}
