//! The run's workspace folder: safe paths and atomic writes.
//!
//! Every file the runtime writes is written to a temporary file in the same
//! folder, fsynced and renamed into place, so an interrupted run never
//! leaves a half-written file. Kernel-requested paths must be relative and
//! stay inside the workspace (no `..`, no absolute path, no symlink that
//! leads out), and may not touch the runtime's own `.koas/` folder.

use crate::fsio::atomic_write;
use crate::fsio::FsError;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The runtime's private folder inside a workspace.
pub const PRIVATE_DIR: &str = ".koas";

/// A workspace path or write that was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The path is absolute, uses `..`, or leads outside the workspace.
    #[error(
        "refused to write {path:?}: it is not a relative path inside the workspace {workspace}"
    )]
    Escapes {
        /// The path as the kernel requested it, relative to the workspace.
        path: String,
        /// The workspace folder the path had to stay in.
        workspace: PathBuf,
    },
    /// The path is inside the runtime's private folder.
    #[error("refused to write {path:?}: `.koas/` inside the workspace belongs to the runtime")]
    Private {
        /// The path as the kernel requested it, relative to the workspace.
        path: String,
    },
    /// A write-once file already holds different content.
    #[error("{path} already exists with different content and may not be replaced; this workspace was made for a different input. Use another workspace (--workspace) or delete this one")]
    WriteOnce {
        /// The existing file (the artifact's declared path inside the workspace).
        path: PathBuf,
    },
    /// Reading, checking or creating a file or folder failed (an atomic
    /// write's failure is [`WorkspaceError::Fs`]).
    #[error("{path}: {source}")]
    Io {
        /// The file or folder that could not be read, created or resolved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An atomic write or append failed; the error names the step and path.
    #[error(transparent)]
    Fs(#[from] FsError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WorkspaceError + '_ {
    move |source| WorkspaceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Resolves a kernel-requested relative path inside `workspace`, refusing
/// escapes. Does not create anything.
pub fn resolve_inside(workspace: &Path, rel: &str) -> Result<PathBuf, WorkspaceError> {
    let escapes = || WorkspaceError::Escapes {
        path: rel.to_string(),
        workspace: workspace.to_path_buf(),
    };
    let p = Path::new(rel);
    if rel.is_empty() || rel.contains('\\') || p.is_absolute() {
        return Err(escapes());
    }
    let mut first = true;
    for c in p.components() {
        match c {
            Component::Normal(part) => {
                if first && part == PRIVATE_DIR {
                    return Err(WorkspaceError::Private {
                        path: rel.to_string(),
                    });
                }
                first = false;
            }
            Component::CurDir => {}
            _ => return Err(escapes()),
        }
    }
    let full = workspace.join(p);
    // A symlink anywhere under the workspace could lead out: check the
    // deepest existing ancestor's real location.
    let root = fs::canonicalize(workspace).map_err(io(workspace))?;
    let mut probe = full.clone();
    while !probe.exists() {
        match probe.parent() {
            Some(parent) => probe = parent.to_path_buf(),
            None => break,
        }
    }
    let real = fs::canonicalize(&probe).map_err(io(&probe))?;
    if !real.starts_with(&root) {
        return Err(escapes());
    }
    Ok(full)
}

/// Writes an artifact's declared file. With `write_once`, an existing file
/// with different content is an error and an identical one is left alone.
pub fn materialize(path: &Path, bytes: &[u8], write_once: bool) -> Result<(), WorkspaceError> {
    if let Ok(meta) = fs::metadata(path) {
        if meta.len() == bytes.len() as u64 {
            if let Ok(existing) = fs::read(path) {
                if existing == bytes {
                    return Ok(());
                }
            }
        }
        if write_once {
            return Err(WorkspaceError::WriteOnce {
                path: path.to_path_buf(),
            });
        }
    }
    Ok(atomic_write(path, bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsio::append;

    #[test]
    fn refuses_escapes_and_private_paths() {
        let ws = tempfile::tempdir().expect("tmp");
        for bad in ["../x", "/etc/passwd", "a/../../x", "", "a\\..\\x"] {
            assert!(
                matches!(
                    resolve_inside(ws.path(), bad),
                    Err(WorkspaceError::Escapes { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            resolve_inside(ws.path(), ".koas/cache/x"),
            Err(WorkspaceError::Private { .. })
        ));
        assert_eq!(
            resolve_inside(ws.path(), "stage2/ops/a.txt").expect("ok"),
            ws.path().join("stage2/ops/a.txt")
        );
    }

    #[cfg(unix)]
    #[test]
    fn refuses_symlinks_leading_out() {
        let ws = tempfile::tempdir().expect("tmp");
        let outside = tempfile::tempdir().expect("tmp");
        std::os::unix::fs::symlink(outside.path(), ws.path().join("link")).expect("symlink");
        assert!(matches!(
            resolve_inside(ws.path(), "link/x.txt"),
            Err(WorkspaceError::Escapes { .. })
        ));
    }

    #[test]
    fn atomic_write_and_write_once() {
        let ws = tempfile::tempdir().expect("tmp");
        let p = ws.path().join("a/b.txt");
        materialize(&p, b"one", true).expect("first write");
        materialize(&p, b"one", true).expect("same content is fine");
        assert!(matches!(
            materialize(&p, b"two", true),
            Err(WorkspaceError::WriteOnce { .. })
        ));
        materialize(&p, b"two", false).expect("replace");
        assert_eq!(fs::read(&p).expect("read"), b"two");
        let leftovers: Vec<_> = fs::read_dir(ws.path().join("a"))
            .expect("dir")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty());
        append(&ws.path().join("log.jsonl"), b"1\n").expect("append");
        append(&ws.path().join("log.jsonl"), b"2\n").expect("append");
        assert_eq!(
            fs::read(ws.path().join("log.jsonl")).expect("read"),
            b"1\n2\n"
        );
    }
}
