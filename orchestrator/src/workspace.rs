//! The run's workspace folder: safe paths and atomic writes.
//!
//! Every file the runtime writes is written to a temporary file in the same
//! folder, fsynced and renamed into place, so an interrupted run never
//! leaves a half-written file. Kernel-requested paths must be relative and
//! stay inside the workspace (no `..`, no absolute path, no symlink that
//! leads out), and may not touch the runtime's own `.koas/` folder.
//!
//! Which paths a kernel may write ([`WriteRules`]): below its scratch
//! folder `scratch/<kernel>/`, and the paths its spec declares with
//! `writes`, never a runtime file ([`RUNTIME_FILES`] and those its host
//! adds) nor a kernel's declared output file (the host writes those from
//! the returned artifacts).

use crate::fsio::{Beneath, EntryKind, FsError};
use koas_kernel_api::KernelSpec;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The runtime's private folder inside a workspace.
pub const PRIVATE_DIR: &str = ".koas";

/// The folder holding each kernel's scratch folder, `scratch/<kernel>/`.
pub const SCRATCH_DIR: &str = "scratch";

/// Workspace paths of the runtime and of hosts' state, with what they
/// are (a folder ends with `/`). No kernel may write one through the file
/// API or declare one as an output or a written path. A host adds its own
/// with [`crate::engine::RunOptions::reserved`].
pub const RUNTIME_FILES: &[(&str, &str)] = &[
    (".lock", "the workspace lock"),
    ("run.json", "the run record"),
    (".koas/", "the runtime's cache and private state"),
    ("workspace.json", "the host's workspace state"),
    ("llm/", "the LLM exchange log"),
];

/// A workspace-relative path with `.` and empty parts dropped, `/`
/// separated.
fn normalized(rel: &str) -> String {
    rel.split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// `true` when `path` (normalized) is `entry` or, for a folder entry
/// (ending in `/`), inside it. Compared without ASCII case: on a
/// case-insensitive file system `.LOCK` is `.lock`.
fn covered_by(path: &str, entry: &str) -> bool {
    let path = path.to_ascii_lowercase();
    match entry.strip_suffix('/') {
        Some(dir) => {
            let dir = normalized(dir).to_ascii_lowercase();
            path == dir || path.starts_with(&format!("{dir}/"))
        }
        None => path == normalized(entry).to_ascii_lowercase(),
    }
}

/// Which runtime or host file `path` is, if any (`path` normalized).
fn reserved_what<'a>(path: &str, extra: &'a [(String, String)]) -> Option<&'a str> {
    RUNTIME_FILES
        .iter()
        .map(|(p, w)| (*p, *w))
        .chain(extra.iter().map(|(p, w)| (p.as_str(), w.as_str())))
        .find(|(entry, _)| covered_by(path, entry))
        .map(|(_, what)| what)
}

/// The owner of a scratch path: `Some(kernel)` for a path below
/// `scratch/<kernel>/` (or that folder itself, when `folder`), `Some("")`
/// for `scratch` itself or a file directly in it.
fn scratch_owner(path: &str, folder: bool) -> Option<&str> {
    let mut parts = path.split('/');
    if !parts.next()?.eq_ignore_ascii_case(SCRATCH_DIR) {
        return None;
    }
    match (parts.next(), parts.next()) {
        (Some(kernel), Some(_)) => Some(kernel),
        (Some(kernel), None) if folder => Some(kernel),
        _ => Some(""),
    }
}

/// Checks the workspace paths `spec` declares (output files and `writes`):
/// none may be a runtime or host file (`extra` adds the host's, as
/// `(path, what)`) or another kernel's scratch folder.
pub fn check_declared_paths(spec: &KernelSpec, extra: &[(String, String)]) -> Result<(), String> {
    let declared = spec
        .outputs
        .iter()
        .filter_map(|o| o.file.as_deref().map(|f| ("output file", f)))
        .chain(spec.writes.iter().map(|w| ("written path", w.as_str())));
    for (kind, path) in declared {
        let norm = normalized(path);
        if let Some(what) = reserved_what(&norm, extra) {
            return Err(format!(
                "kernel `{}` declares the {kind} `{path}`, which is {what}: a runtime file no kernel may write",
                spec.name
            ));
        }
        if let Some(owner) = scratch_owner(&norm, path.ends_with('/')) {
            if owner != spec.name {
                return Err(format!(
                    "kernel `{}` declares the {kind} `{path}`: below `{SCRATCH_DIR}/` a kernel may use only its own folder `{SCRATCH_DIR}/{}/`",
                    spec.name, spec.name
                ));
            }
        }
    }
    Ok(())
}

/// What the kernels of one run may write through the file API.
#[derive(Debug, Clone, Default)]
pub struct WriteRules {
    /// Host files besides [`RUNTIME_FILES`], as `(path, what)`.
    extra: Vec<(String, String)>,
    /// Declared output file (normalized) → the kernel declaring it.
    outputs: BTreeMap<String, String>,
    /// Kernel → its declared `writes`.
    writes: BTreeMap<String, Vec<String>>,
}

impl WriteRules {
    /// The rules for a run of these kernels; `extra` adds the host's own
    /// files as `(path, what)`, a folder ending with `/`.
    pub fn new<'a>(
        specs: impl IntoIterator<Item = &'a KernelSpec>,
        extra: Vec<(String, String)>,
    ) -> WriteRules {
        let mut rules = WriteRules {
            extra,
            ..WriteRules::default()
        };
        for spec in specs {
            for file in spec.outputs.iter().filter_map(|o| o.file.as_deref()) {
                rules.outputs.insert(normalized(file), spec.name.clone());
            }
            rules.writes.insert(spec.name.clone(), spec.writes.clone());
        }
        rules
    }

    /// The host's files besides [`RUNTIME_FILES`].
    pub fn extra(&self) -> &[(String, String)] {
        &self.extra
    }

    /// May `kernel` write (or append to) `rel`? The error names the kernel
    /// and the path and says why not.
    pub fn check(&self, kernel: &str, rel: &str) -> Result<(), String> {
        let path = normalized(rel);
        let refused = |why: String| Err(format!("kernel `{kernel}` may not write `{rel}`: {why}"));
        if let Some(what) = reserved_what(&path, &self.extra) {
            return refused(format!("it is {what}, a runtime file"));
        }
        if let Some(owner) = self.outputs.get(&path) {
            return refused(format!(
                "it is the declared output file of kernel `{owner}`, which koas writes from the returned artifact"
            ));
        }
        if scratch_owner(&path, false) == Some(kernel) {
            return Ok(());
        }
        let declared = self.writes.get(kernel).map(Vec::as_slice).unwrap_or(&[]);
        if declared.iter().any(|entry| covered_by(&path, entry)) {
            return Ok(());
        }
        let listed = if declared.is_empty() {
            "it declares none".to_string()
        } else {
            declared
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        refused(format!(
            "a kernel writes only below its scratch folder `{SCRATCH_DIR}/{kernel}/` and the paths its spec declares with `writes` ({listed})"
        ))
    }
}

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

/// The workspace folder `workspace` held by handle ([`Beneath`]), created
/// with `create`: every file the runtime writes in it is opened below the
/// handle, no link followed. The folder itself is opened without following
/// a link, and so is every folder from the runtime's private folder on
/// when the workspace is inside one (`.koas/runs/<name>`); the folders
/// above are the person's.
pub fn hold(workspace: &Path, create: bool) -> Result<Beneath, FsError> {
    let parts: Vec<Component> = workspace.components().collect();
    let plain = |c: &Component| matches!(c, Component::Normal(_));
    let from = parts
        .iter()
        .rposition(|c| c.as_os_str() == PRIVATE_DIR)
        .unwrap_or(parts.len().saturating_sub(1));
    if parts.is_empty() || !parts[from..].iter().all(plain) {
        // `.`, `/`, a path ending in `..`: held as named.
        if create && !workspace.is_dir() {
            fs::create_dir_all(workspace)
                .map_err(|e| FsError::new("create directory", workspace, e))?;
        }
        return Beneath::open(workspace);
    }
    let base: PathBuf = parts[..from].iter().collect();
    let rel: PathBuf = parts[from..].iter().collect();
    let base = if base.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        base
    };
    if create && !base.is_dir() {
        fs::create_dir_all(&base).map_err(|e| FsError::new("create directory", &base, e))?;
    }
    Beneath::open_below(&base, &rel, create)
}

/// Writes `path` (a file below `workspace`) atomically and durably
/// through the held workspace folder ([`hold`]): a link on the way is
/// refused by name.
pub fn write_below(workspace: &Path, path: &Path, bytes: &[u8]) -> Result<(), WorkspaceError> {
    let rel = path
        .strip_prefix(workspace)
        .map_err(|_| WorkspaceError::Escapes {
            path: path.display().to_string(),
            workspace: workspace.to_path_buf(),
        })?;
    Ok(hold(workspace, true)?.write_atomic(rel, bytes)?)
}

/// Writes an artifact's declared file `rel` below `workspace`, through
/// the held folder. With `write_once`, an existing file with different
/// content is an error and an identical one is left alone.
pub fn materialize(
    workspace: &Path,
    rel: &str,
    bytes: &[u8],
    write_once: bool,
) -> Result<(), WorkspaceError> {
    let dir = hold(workspace, true)?;
    if let Some(kind) = dir.entry(rel)? {
        if kind == EntryKind::File(bytes.len() as u64) && dir.read(rel)?.as_deref() == Some(bytes) {
            return Ok(());
        }
        if write_once {
            return Err(WorkspaceError::WriteOnce {
                path: workspace.join(rel),
            });
        }
    }
    Ok(dir.write_atomic(rel, bytes)?)
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

    #[test]
    fn kernels_write_only_their_scratch_and_declared_paths() {
        let streamer = KernelSpec::new("streamer", "1.0.0")
            .output_file("o", "stage2/out.json")
            .writes("stage2/ops/")
            .writes("stage2/status.jsonl");
        let other = KernelSpec::new("other", "1.0.0").output_file("p", "stage1/doc.raw.md");
        let rules = WriteRules::new(
            [&streamer, &other],
            vec![("host/records.jsonl".into(), "the host's records".into())],
        );
        for ok in [
            "stage2/ops/c1.raw.txt",
            "./stage2/ops/deep/c2.txt",
            "stage2/status.jsonl",
            "scratch/streamer/x.bin",
        ] {
            rules
                .check("streamer", ok)
                .unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for (bad, why) in [
            (".lock", "the workspace lock"),
            (".LOCK", "the workspace lock"),
            ("run.json", "the run record"),
            ("./run.json", "the run record"),
            ("workspace.json", "workspace state"),
            (".koas/cache/x", "cache"),
            ("llm/exchanges.jsonl", "LLM exchange log"),
            ("host/records.jsonl", "the host's records"),
            (
                "stage1/doc.raw.md",
                "declared output file of kernel `other`",
            ),
            (
                "stage2/out.json",
                "declared output file of kernel `streamer`",
            ),
            ("scratch/other/x", "its scratch folder `scratch/streamer/`"),
            ("scratch/streamer", "its scratch folder"),
            ("notes.txt", "`stage2/ops/`, `stage2/status.jsonl`"),
        ] {
            let e = rules.check("streamer", bad).expect_err(bad);
            assert!(e.contains("kernel `streamer`") && e.contains(bad), "{e}");
            assert!(e.contains(why), "{bad}: {e}");
        }
        let e = rules
            .check("other", "stage2/ops/x")
            .expect_err("not declared");
        assert!(e.contains("it declares none"), "{e}");
    }

    #[test]
    fn declaring_a_runtime_file_is_refused() {
        let lock = KernelSpec::new("k", "1.0.0").output_file("o", ".lock");
        let e = check_declared_paths(&lock, &[]).expect_err("lock");
        assert!(
            e.contains("kernel `k`") && e.contains("`.lock`") && e.contains("workspace lock"),
            "{e}"
        );
        let above = KernelSpec::new("k", "1.0.0").writes("host/");
        check_declared_paths(&above, &[]).expect("a folder above a host file is fine");
        let e = check_declared_paths(
            &KernelSpec::new("k", "1.0.0").writes("host/records.jsonl"),
            &[("host/records.jsonl".into(), "the host's records".into())],
        )
        .expect_err("host file");
        assert!(e.contains("the host's records"), "{e}");
        let e = check_declared_paths(&KernelSpec::new("k", "1.0.0").writes("scratch/j/"), &[])
            .expect_err("another scratch");
        assert!(e.contains("scratch/k/"), "{e}");
        check_declared_paths(&KernelSpec::new("k", "1.0.0").writes("scratch/k/"), &[])
            .expect("own");
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

    #[cfg(unix)]
    #[test]
    fn runtime_folders_and_outputs_refuse_links_by_name() {
        let tmp = tempfile::tempdir().expect("tmp");
        let outside = tmp.path().join("outside");
        fs::create_dir_all(&outside).expect("mkdir");
        // `.koas` linked elsewhere: the default run folder is refused.
        let project = tmp.path().join("project");
        fs::create_dir_all(&project).expect("mkdir");
        std::os::unix::fs::symlink(&outside, project.join(PRIVATE_DIR)).expect("symlink");
        let run = project.join(".koas/runs/demo");
        let e = hold(&run, true).expect_err("a linked .koas");
        assert!(
            e.is_refused_link() && e.path == project.join(".koas"),
            "{e}"
        );
        // A declared output below a linked folder of the workspace.
        let ws = tmp.path().join("ws");
        fs::create_dir_all(&ws).expect("mkdir");
        std::os::unix::fs::symlink(&outside, ws.join("stage1")).expect("symlink");
        let e = materialize(&ws, "stage1/out.json", b"{}", false).expect_err("linked");
        assert!(
            e.to_string()
                .contains(&ws.join("stage1").display().to_string()),
            "{e}"
        );
        let e = write_below(&ws, &ws.join("stage1/run.json"), b"{}").expect_err("linked");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(fs::read_dir(&outside).expect("list").count(), 0);
        // The workspace itself a link.
        let linked = tmp.path().join("linked-ws");
        std::os::unix::fs::symlink(&outside, &linked).expect("symlink");
        assert!(hold(&linked, true).expect_err("linked").is_refused_link());
    }

    #[test]
    fn atomic_write_and_write_once() {
        let ws = tempfile::tempdir().expect("tmp");
        let p = ws.path().join("a/b.txt");
        materialize(ws.path(), "a/b.txt", b"one", true).expect("first write");
        materialize(ws.path(), "a/b.txt", b"one", true).expect("same content is fine");
        assert!(matches!(
            materialize(ws.path(), "a/b.txt", b"two", true),
            Err(WorkspaceError::WriteOnce { .. })
        ));
        materialize(ws.path(), "a/b.txt", b"two", false).expect("replace");
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
