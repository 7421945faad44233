//! Reading a document: only a regular file (or standard input), and only
//! up to a size limit; and the documents a folder holds.
//!
//! A FIFO would block the command forever, and `/dev/zero` or
//! `/dev/urandom` would grow memory without end, so anything that is not
//! a regular file is refused (the runtime's guard,
//! [`koas_orchestrator::guarded_read`], which `koas run` applies to its
//! inputs too). A document over the limit (default
//! [`DEFAULT_MAX_DOC_BYTES`]; `--max-doc-size` or `KOAS_MAX_DOC_SIZE`
//! changes it) is refused with a message naming the limit; standard input
//! is read up to the limit and no further.
//!
//! A folder is walked as ripgrep walks one ([`walk_folder`]): links are not
//! followed, hidden entries and those `.gitignore` (in a Git repository),
//! `.ignore` or a global Git excludes file ignore are skipped, and every
//! entry that could be a document but is not one of the results (a
//! subfolder that cannot be read, a name that is not UTF-8, a link) is
//! returned with its own path and the reason.

use koas_orchestrator::guarded_read::{self, GuardedReadError};
use std::path::{Path, PathBuf};

/// The default document size limit: 256 MiB, five times the largest
/// document the Stage 1 benchmark handles.
pub const DEFAULT_MAX_DOC_BYTES: u64 = guarded_read::DEFAULT_MAX_READ_BYTES;

/// The environment variable that sets the limit when no flag does.
pub const MAX_DOC_SIZE_ENV: &str = "KOAS_MAX_DOC_SIZE";

/// Parses a size: bytes, or a number with `K`, `M` or `G` (powers of
/// 1024; `KB`, `MiB`… accepted).
pub fn parse_size(text: &str) -> anyhow::Result<u64> {
    guarded_read::parse_size(text).map_err(anyhow::Error::msg)
}

/// The limit in force: `flag`, else `KOAS_MAX_DOC_SIZE`, else the default.
pub fn max_doc_bytes(flag: Option<&str>) -> anyhow::Result<u64> {
    guarded_read::limit_from(
        flag,
        "--max-doc-size",
        MAX_DOC_SIZE_ENV,
        DEFAULT_MAX_DOC_BYTES,
    )
    .map_err(anyhow::Error::msg)
}

/// `1.5 MiB`, for messages.
pub fn human_size(bytes: u64) -> String {
    guarded_read::human_size(bytes)
}

/// The guard's refusal of `shown`, in the reviewer's words.
fn refusal(shown: &str, e: GuardedReadError) -> anyhow::Error {
    match e {
        GuardedReadError::TooLarge { size, limit } => {
            let size = size.map_or_else(String::new, |s| format!("{}, ", human_size(s)));
            anyhow::anyhow!(
                "{shown} is {size}over the limit of {} on documents and ops files; raise it with --max-doc-size SIZE or {MAX_DOC_SIZE_ENV}=SIZE (e.g. 1G)",
                human_size(limit)
            )
        }
        GuardedReadError::NotRegular { kind } => anyhow::anyhow!(
            "{shown} is {kind}, not a regular file: koas reads documents and ops files from regular files only (or from standard input where a command takes -)"
        ),
        GuardedReadError::Io(e) => anyhow::Error::new(e).context(format!("cannot read {shown}")),
    }
}

/// Reads the document at `path` (`-`: standard input, when `stdin_ok`),
/// refusing what is not a regular file and what is over `limit` bytes.
/// `shown` names it in errors.
pub fn read_document_bytes(
    path: &Path,
    shown: &str,
    limit: u64,
    stdin_ok: bool,
) -> anyhow::Result<Vec<u8>> {
    if stdin_ok && path == Path::new("-") {
        return guarded_read::read_bounded(std::io::stdin().lock(), 0, limit)
            .map_err(|e| refusal(shown, e));
    }
    guarded_read::read_regular_file(path, limit).map_err(|e| refusal(shown, e))
}

/// `true` for the file names a folder argument contributes (compared as
/// bytes, so that a name that is not UTF-8 is still recognised).
fn is_markdown(name: &std::ffi::OsStr) -> bool {
    let bytes = name.as_encoded_bytes();
    let ends = |ext: &[u8]| {
        bytes.len() > ext.len() && bytes[bytes.len() - ext.len()..].eq_ignore_ascii_case(ext)
    };
    ends(b".md") || ends(b".markdown")
}

/// A path for messages: a byte that is not UTF-8 is shown as `\xNN`, so
/// two such names never look alike.
pub(crate) fn shown_path(path: &Path) -> String {
    let mut out = String::new();
    for chunk in path.as_os_str().as_encoded_bytes().utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Why an entry of a folder was not taken as a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SkipReason {
    /// It could not be read (a subfolder without permission, an entry
    /// that vanished…): the walk goes on with the next entry.
    Unreadable(String),
    /// Its name is not UTF-8: koas names documents in UTF-8 (JSON
    /// answers, workspace names).
    NotUtf8,
    /// A symbolic link (to a folder, or named like a document): links are
    /// not followed inside a folder, so no loop is ever walked.
    Link,
}

impl SkipReason {
    /// `true` when the entry is an error (the command fails), not a rule.
    pub(crate) fn is_error(&self) -> bool {
        !matches!(self, SkipReason::Link)
    }
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::Unreadable(why) => write!(f, "cannot be read: {why}"),
            SkipReason::NotUtf8 => f.write_str(
                "its name is not UTF-8, which koas cannot name in its answers; rename it to review it",
            ),
            SkipReason::Link => f.write_str(
                "a symbolic link: links inside a folder are not followed; name its target to review it",
            ),
        }
    }
}

/// An entry of a folder that was not taken as a document, with its own
/// path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skipped {
    /// The entry (under the folder as it was named).
    pub path: PathBuf,
    /// Why.
    pub reason: SkipReason,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", shown_path(&self.path), self.reason)
    }
}

/// The documents of a folder and the entries that were not taken.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// The Markdown files, sorted by path.
    pub files: Vec<PathBuf>,
    /// What was not taken, in walk order.
    pub skipped: Vec<Skipped>,
}

/// The path an error of the walk is about, and what went wrong.
fn error_parts(e: &ignore::Error) -> (Option<PathBuf>, String) {
    // The operating system's words alone: the row already names the path
    // (the walk's own message repeats it).
    let os = |e: &ignore::Error| {
        let io = e.io_error()?;
        match io.raw_os_error() {
            Some(code) => Some(std::io::Error::from_raw_os_error(code).to_string()),
            // The walk's own error, wrapped: its kind is the system's.
            None if io.kind() != std::io::ErrorKind::Other => Some(io.kind().to_string()),
            None => None,
        }
    };
    match e {
        ignore::Error::WithPath { path, err } => (
            Some(path.clone()),
            os(err).unwrap_or_else(|| error_parts(err).1),
        ),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_parts(err)
        }
        ignore::Error::Partial(errs) => match errs.first() {
            Some(first) => error_parts(first),
            None => (None, e.to_string()),
        },
        ignore::Error::Loop { child, .. } => (Some(child.clone()), e.to_string()),
        other => (None, other.to_string()),
    }
}

/// Walks `dir` as ripgrep does: no link followed (so no loop), hidden
/// entries skipped, `.gitignore` (inside a Git repository), `.ignore` and
/// the global Git excludes respected; every entry that fails is named
/// with its own path and the walk goes on.
pub(crate) fn walk_folder(dir: &Path) -> Walked {
    let mut walked = Walked::default();
    let mut builder = ignore::WalkBuilder::new(dir);
    builder
        .follow_links(false)
        .hidden(true)
        .sort_by_file_name(|a, b| a.cmp(b));
    // A folder whose name is not UTF-8 is reported, not walked: every
    // path under it would be unnamable too.
    let not_utf8 = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&not_utf8);
    builder.filter_entry(move |entry| {
        if entry.depth() > 0 && entry.file_name().to_str().is_none() {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if is_dir || is_markdown(entry.file_name()) {
                if let Ok(mut list) = seen.lock() {
                    list.push(entry.path().to_path_buf());
                }
            }
            return false;
        }
        true
    });
    for item in builder.build() {
        // Entries the filter refused were recorded as it met them: keep
        // them in walk order.
        if let Ok(mut list) = not_utf8.lock() {
            walked.skipped.extend(list.drain(..).map(|path| Skipped {
                path,
                reason: SkipReason::NotUtf8,
            }));
        }
        let entry = match item {
            Ok(entry) => entry,
            Err(e) => {
                let (path, why) = error_parts(&e);
                walked.skipped.push(Skipped {
                    path: path.unwrap_or_else(|| dir.to_path_buf()),
                    reason: SkipReason::Unreadable(why),
                });
                continue;
            }
        };
        let path = entry.path();
        if entry.depth() > 0 && entry.path_is_symlink() {
            // A link to a folder, or one named like a document (dangling
            // or not), is reported; other links are no documents anyway.
            if path.is_dir() || is_markdown(entry.file_name()) {
                walked.skipped.push(Skipped {
                    path: path.to_path_buf(),
                    reason: SkipReason::Link,
                });
            }
            continue;
        }
        if entry.file_type().is_some_and(|t| t.is_file()) && is_markdown(entry.file_name()) {
            walked.files.push(path.to_path_buf());
        }
    }
    if let Ok(mut list) = not_utf8.lock() {
        walked.skipped.extend(list.drain(..).map(|path| Skipped {
            path,
            reason: SkipReason::NotUtf8,
        }));
    }
    walked
}

/// The documents the arguments name: folders walked ([`walk_folder`]),
/// files and `-` kept as named.
pub(crate) fn walk_documents(docs: &[PathBuf]) -> Walked {
    let mut all = Walked::default();
    for d in docs {
        if d.is_dir() {
            let walked = walk_folder(d);
            all.files.extend(walked.files);
            all.skipped.extend(walked.skipped);
        } else {
            all.files.push(d.clone());
        }
    }
    all
}

/// The documents the arguments name, and the entries of their folders
/// that are errors (unreadable, a name that is not UTF-8), as messages.
/// Links are skipped by rule, as ripgrep skips them.
pub(crate) fn expand_documents(docs: &[PathBuf]) -> (Vec<PathBuf>, Vec<String>) {
    let walked = walk_documents(docs);
    let errors = walked
        .skipped
        .iter()
        .filter(|s| s.reason.is_error())
        .map(ToString::to_string)
        .collect();
    (walked.files, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("1048576").unwrap(), 1 << 20);
        assert_eq!(parse_size("300M").unwrap(), 300 << 20);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("1.5KiB").unwrap(), 1536);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5X").is_err());
        assert!(parse_size("0").is_err());
    }

    #[test]
    fn a_document_over_the_limit_is_refused_naming_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("doc.md");
        std::fs::write(&path, "x".repeat(2048)).unwrap();
        let err = read_document_bytes(&path, "doc.md", 1024, false).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("2.0 KiB"), "{message}");
        assert!(message.contains("1.0 KiB"), "{message}");
        assert!(message.contains("--max-doc-size"), "{message}");
        assert_eq!(
            read_document_bytes(&path, "doc.md", 4096, false)
                .unwrap()
                .len(),
            2048
        );
    }

    /// `dir` with `a.md`, `sub/b.md`, `z.md`, a hidden `.h.md`, a file
    /// `.ignore` leaves out, and `sub/loop -> ..`.
    #[cfg(unix)]
    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir(p.join("sub")).unwrap();
        for f in [
            "a.md",
            "sub/b.md",
            "z.md",
            ".h.md",
            "ignored.md",
            "notes.txt",
        ] {
            std::fs::write(p.join(f), "# T\n").unwrap();
        }
        std::fs::write(p.join(".ignore"), "ignored.md\n").unwrap();
        std::os::unix::fs::symlink("..", p.join("sub/loop")).unwrap();
        dir
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_is_walked_without_links_hidden_or_ignored_entries() {
        let dir = folder();
        let p = dir.path();
        let walked = walk_folder(p);
        assert_eq!(
            walked.files,
            vec![p.join("a.md"), p.join("sub/b.md"), p.join("z.md")]
        );
        assert_eq!(
            walked.skipped,
            vec![Skipped {
                path: p.join("sub/loop"),
                reason: SkipReason::Link
            }]
        );
        // `koas check`'s view: a link is no error.
        let (files, errors) = expand_documents(&[p.to_path_buf()]);
        assert_eq!(files.len(), 3);
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[cfg(unix)]
    #[test]
    fn a_name_that_is_not_utf8_is_reported_with_its_bytes_escaped() {
        use std::os::unix::ffi::OsStrExt;
        let dir = folder();
        let p = dir.path();
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9.md");
        if std::fs::write(p.join(name), "# T\n").is_err() {
            return; // a file system that refuses such names
        }
        let walked = walk_folder(p);
        assert_eq!(walked.files.len(), 3);
        let not_utf8: Vec<String> = walked
            .skipped
            .iter()
            .filter(|s| s.reason == SkipReason::NotUtf8)
            .map(ToString::to_string)
            .collect();
        assert_eq!(not_utf8.len(), 1, "{:?}", walked.skipped);
        assert!(
            not_utf8[0].contains("caf\\xe9.md: its name is not UTF-8"),
            "{not_utf8:?}"
        );
        let (_, errors) = expand_documents(&[p.to_path_buf()]);
        assert_eq!(errors.len(), 1, "{errors:?}");
    }

    #[cfg(unix)]
    #[test]
    fn an_unreadable_subfolder_is_named_and_the_walk_goes_on() {
        use std::os::unix::fs::PermissionsExt;
        let dir = folder();
        let p = dir.path();
        std::fs::create_dir(p.join("m_locked")).unwrap();
        std::fs::write(p.join("m_locked/in.md"), "# T\n").unwrap();
        std::fs::set_permissions(p.join("m_locked"), std::fs::Permissions::from_mode(0o000))
            .unwrap();
        let readable = std::fs::read_dir(p.join("m_locked")).is_ok();
        let walked = walk_folder(p);
        std::fs::set_permissions(p.join("m_locked"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        if readable {
            // Root reads it anyway: the folder is walked like any other
            // (the test through the binary covers the error as root).
            assert_eq!(walked.files.len(), 4);
            return;
        }
        // The files after it are still there, and it is named itself.
        assert_eq!(
            walked.files,
            vec![p.join("a.md"), p.join("sub/b.md"), p.join("z.md")]
        );
        let locked: Vec<&Skipped> = walked
            .skipped
            .iter()
            .filter(|s| matches!(s.reason, SkipReason::Unreadable(_)))
            .collect();
        assert_eq!(locked.len(), 1, "{:?}", walked.skipped);
        assert_eq!(locked[0].path, p.join("m_locked"));
    }

    #[test]
    fn a_folder_is_not_a_document() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_document_bytes(dir.path(), "dir", 1024, false).unwrap_err();
        assert!(err.to_string().contains("a folder"), "{err}");
    }
}
