//! File-system safety for everything the host writes: atomic writes,
//! durable batches of derived files, durable folder creation and appends.
//!
//! **Atomic write**: the bytes go to a temporary file in the same folder,
//! which is fsynced, renamed over the target, and the folder is fsynced. A
//! reader (or a crash) sees the old file or the new one, never a mix.
//!
//! **Batch of derived files**: many small files (patches, say) are written
//! atomically without a per-file fsync and the folder is fsynced once; the
//! caller keeps their content somewhere fsynced (a ledger) to rebuild them
//! if a crash loses one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use thiserror::Error;

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
}
