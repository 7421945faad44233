//! File-system safety for everything the host writes: atomic writes,
//! durable batches of derived files, durable folder creation and appends.
//!
//! **Atomic write**: the bytes go to a temporary file in the same folder,
//! which is fsynced, renamed over the target, and the folder is fsynced. A
//! reader (or a crash) sees the old file or the new one, never a mix.
//!
//! **Batch of derived files**: many small files (patches, say) are written
//! atomically without a per-file fsync and the folder is fsynced once; the
//! caller keeps their content somewhere fsynced (an append-only record) to
//! rebuild them
//! if a crash loses one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use thiserror::Error;

mod beneath;
pub use beneath::{Access, Beneath, EntryKind, Resolver};

/// An I/O error with the path it concerns.
#[derive(Debug, Error)]
#[error("{action} {path}: {source}")]
pub struct FsError {
    /// The operation that failed, as a verb for the message (`"write"`,
    /// `"rename into"`, `"fsync directory"`…).
    pub action: &'static str,
    /// The file or folder the operation was applied to (for a failed
    /// atomic write, possibly the temporary file next to the target).
    pub path: PathBuf,
    /// The operating system's error.
    #[source]
    pub source: io::Error,
}

impl FsError {
    /// Wraps `source`, the error of `action` on `path` (the path is copied).
    pub fn new(action: &'static str, path: &Path, source: io::Error) -> Self {
        FsError {
            action,
            path: path.to_owned(),
            source,
        }
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

pub(crate) fn temp_path_for(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned());
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.tmp-{}-{n}", std::process::id()))
}

pub(crate) fn parent_of(path: &Path) -> PathBuf {
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
    write_temp_and_rename_as(path, bytes, fsync_file, None)
}

/// Writes `bytes` to a temporary file next to `path` and renames it over
/// `path`; with `like`, the file gets that file's permissions (and owner,
/// where the process may set it) before it replaces anything.
fn write_temp_and_rename_as(
    path: &Path,
    bytes: &[u8],
    fsync_file: bool,
    like: Option<&fs::Metadata>,
) -> Result<(), FsError> {
    let temp = temp_path_for(path);
    let result = (|| {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            // Owner-only until the final permissions are set: the bytes
            // may be a private document's.
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(if like.is_some() { 0o600 } else { 0o666 });
        }
        let mut file = match options.open(&temp) {
            // Left by a killed process that had the same pid.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let _ = fs::remove_file(&temp);
                options.open(&temp)
            }
            other => other,
        }
        .map_err(|e| FsError::new("create", &temp, e))?;
        file.write_all(bytes)
            .map_err(|e| FsError::new("write", &temp, e))?;
        if let Some(meta) = like {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                // Best effort: only root may give a file to another user;
                // the group may be kept when the user belongs to it.
                let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
            }
            file.set_permissions(meta.permissions())
                .map_err(|e| FsError::new("set the permissions of", &temp, e))?;
        }
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

/// Replaces a user's file with `bytes`, atomically and durably, keeping
/// what makes it that file: through a symbolic link, the link's target is
/// replaced and the link kept; the file keeps its permissions and, where
/// the process may set them, its owner and group. Returns the path that
/// was written (the link's target for a link).
pub fn replace_file(path: &Path, bytes: &[u8]) -> Result<PathBuf, FsError> {
    let target = if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        fs::canonicalize(path).map_err(|e| FsError::new("follow the link", path, e))?
    } else {
        path.to_owned()
    };
    let meta = match fs::metadata(&target) {
        Ok(meta) if meta.is_file() => Some(meta),
        Ok(_) => {
            return Err(FsError::new(
                "replace",
                &target,
                io::Error::other("it is not a regular file"),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(FsError::new("read the permissions of", &target, e)),
    };
    write_temp_and_rename_as(&target, bytes, true, meta.as_ref())?;
    fsync_dir(&parent_of(&target))?;
    Ok(target)
}

/// Temporary files ([`atomic_write`]'s `.NAME.tmp-PID-N`) in `dir` whose
/// writing process is gone: left by a run that was killed. With `name`,
/// only those of the file called `name`.
pub fn stale_temp_files(dir: &Path, name: Option<&str>) -> Vec<PathBuf> {
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .filter(|entry| {
            is_stale_temp_name(&entry.file_name().to_string_lossy(), name)
                && entry.file_type().is_ok_and(|t| t.is_file())
        })
        .map(|entry| entry.path())
        .collect();
    found.sort();
    found
}

/// True when `file_name` is an atomic write's temporary file
/// (`.NAME.tmp-PID-N`) whose writing process is gone; with `name`, only
/// one of the file called `name`.
pub fn is_stale_temp_name(file_name: &str, name: Option<&str>) -> bool {
    let stale = || {
        let rest = file_name.strip_prefix('.')?;
        let (base, tail) = rest.rsplit_once(".tmp-")?;
        let (pid, n) = tail.split_once('-')?;
        let pid: u32 = pid.parse().ok()?;
        n.parse::<u64>().ok()?;
        let wanted = name.map_or(true, |name| name == base);
        Some(wanted && pid != std::process::id() && !pid_alive(pid))
    };
    stale().unwrap_or(false)
}

/// Removes [`stale_temp_files`] of `dir`; returns those removed.
pub fn remove_stale_temp_files(dir: &Path, name: Option<&str>) -> Vec<PathBuf> {
    stale_temp_files(dir, name)
        .into_iter()
        .filter(|p| fs::remove_file(p).is_ok())
        .collect()
}

/// Makes every file and folder this process creates from now on no more
/// permissive than `mode` (a file's permission bits): group and others
/// lose the access `mode` denies them. A workspace may hold copies of its
/// inputs, which must stay as private as the inputs.
pub fn restrict_new_files_to(mode: u32) {
    #[cfg(unix)]
    {
        let mut mask: libc::mode_t = 0;
        for (read, class) in [(0o040, 0o070), (0o004, 0o007)] {
            if mode & read == 0 {
                mask |= class;
            }
        }
        for (write, bit) in [(0o020, 0o020), (0o002, 0o002)] {
            if mode & write == 0 {
                mask |= bit;
            }
        }
        // SAFETY: umask only swaps the process's file creation mask; it
        // takes and returns plain integers and cannot fail. It is called
        // twice to read the current mask, which is kept and widened.
        #[allow(unsafe_code)]
        unsafe {
            let current = libc::umask(0o077);
            libc::umask(current | mask);
        }
    }
    #[cfg(not(unix))]
    let _ = mode;
}

/// Writes `bytes` to `path` atomically and durably, creating missing
/// parent folders.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), FsError> {
    let dir = parent_of(path);
    if !dir.is_dir() {
        fs::create_dir_all(&dir).map_err(|e| FsError::new("create directory", &dir, e))?;
    }
    write_temp_and_rename(path, bytes, true)?;
    fsync_dir(&dir)
}

/// Writes every `(path, bytes)` atomically (temporary file + rename) and
/// fsyncs `dir` once, without fsyncing each file. For derived files that
/// can be rebuilt (files whose content an fsynced record also holds):
/// one fsync costs milliseconds and a host may write thousands of them.
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

/// Appends `bytes` to `path` and fsyncs its data, creating missing folders
/// and the file.
pub fn append(path: &Path, bytes: &[u8]) -> Result<(), FsError> {
    let dir = parent_of(path);
    if !dir.is_dir() {
        fs::create_dir_all(&dir).map_err(|e| FsError::new("create directory", &dir, e))?;
    }
    let mut file = open_append(path)?;
    file.write_all(bytes)
        .map_err(|e| FsError::new("append to", path, e))?;
    file.sync_data().map_err(|e| FsError::new("fsync", path, e))
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

    #[cfg(unix)]
    #[test]
    fn replace_file_keeps_mode_owner_and_symbolic_links() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.md");
        fs::write(&path, b"old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        // Only root may give a file to another user: check the owner is
        // kept where the process can set it.
        let root = fs::metadata(dir.path()).unwrap().uid() == 0;
        if root {
            std::os::unix::fs::chown(&path, Some(1234), Some(1234)).unwrap();
        }
        assert_eq!(replace_file(&path, b"new").unwrap(), path);
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(meta.permissions().mode() & 0o7777, 0o640);
        if root {
            assert_eq!((meta.uid(), meta.gid()), (1234, 1234));
        }
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink("secret.md", &link).unwrap();
        let written = replace_file(&link, b"through the link").unwrap();
        assert_eq!(
            fs::canonicalize(&written).unwrap(),
            fs::canonicalize(&path).unwrap()
        );
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&path).unwrap(), b"through the link");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
            0o640
        );
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
        // A folder is not replaced.
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        assert!(replace_file(&sub, b"x").is_err());
    }

    #[test]
    fn stale_temporary_files_are_those_of_dead_processes() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(".doc.md.tmp-999999999-3");
        let other_doc = dir.path().join(".other.md.tmp-999999999-0");
        // Pid 1 is alive: its file may be being written.
        let live = dir.path().join(".doc.md.tmp-1-0");
        let mine = dir
            .path()
            .join(format!(".doc.md.tmp-{}-0", std::process::id()));
        let unrelated = dir.path().join(".doc.md.tmp-notes");
        for p in [&dead, &other_doc, &live, &mine, &unrelated] {
            fs::write(p, b"half").unwrap();
        }
        assert_eq!(
            stale_temp_files(dir.path(), None),
            vec![dead.clone(), other_doc.clone()]
        );
        assert_eq!(
            stale_temp_files(dir.path(), Some("doc.md")),
            vec![dead.clone()]
        );
        assert_eq!(
            remove_stale_temp_files(dir.path(), Some("doc.md")),
            vec![dead.clone()]
        );
        assert!(!dead.exists() && other_doc.exists() && live.exists() && mine.exists());
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
}
