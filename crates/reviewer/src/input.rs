//! Reading a document: only a regular file (or standard input), and only
//! up to a size limit.
//!
//! A FIFO would block the command forever, and `/dev/zero` or
//! `/dev/urandom` would grow memory without end, so anything that is not
//! a regular file is refused before it is opened for reading. A document
//! over the limit (default [`DEFAULT_MAX_DOC_BYTES`]; `--max-doc-size` or
//! `KOAS_MAX_DOC_SIZE` changes it) is refused with a message naming the
//! limit; standard input is read up to the limit and no further.

use anyhow::{bail, Context as _};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The default document size limit: 256 MiB, five times the largest
/// document the Stage 1 benchmark handles.
pub const DEFAULT_MAX_DOC_BYTES: u64 = 256 * 1024 * 1024;

/// The environment variable that sets the limit when no flag does.
pub const MAX_DOC_SIZE_ENV: &str = "KOAS_MAX_DOC_SIZE";

/// Parses a size: bytes, or a number with `K`, `M` or `G` (powers of
/// 1024; `KB`, `MiB`… accepted).
pub fn parse_size(text: &str) -> anyhow::Result<u64> {
    let t = text.trim();
    let digits = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let number: f64 = number
        .parse()
        .with_context(|| format!("'{text}' is not a size (e.g. 300M, 2G, 1048576)"))?;
    let factor: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        other => bail!("'{text}': unknown size unit '{other}' (use K, M or G)"),
    };
    if !(number.is_finite() && number > 0.0) {
        bail!("'{text}' is not a positive size");
    }
    Ok((number * factor as f64) as u64)
}

/// The limit in force: `flag`, else `KOAS_MAX_DOC_SIZE`, else the default.
pub fn max_doc_bytes(flag: Option<&str>) -> anyhow::Result<u64> {
    if let Some(flag) = flag {
        return parse_size(flag).context("--max-doc-size");
    }
    match std::env::var(MAX_DOC_SIZE_ENV) {
        Ok(value) if !value.trim().is_empty() => parse_size(&value).context(MAX_DOC_SIZE_ENV),
        _ => Ok(DEFAULT_MAX_DOC_BYTES),
    }
}

/// `1.5 MiB`, for messages.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["bytes", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

fn too_large(shown: &str, size: Option<u64>, limit: u64) -> anyhow::Error {
    let size = size.map_or_else(String::new, |s| format!("{}, ", human_size(s)));
    anyhow::anyhow!(
        "{shown} is {size}over the limit of {} on documents and ops files; raise it with --max-doc-size SIZE or {MAX_DOC_SIZE_ENV}=SIZE (e.g. 1G)",
        human_size(limit)
    )
}

/// What a path is, when it is not a regular file.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
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
        let mut buf = Vec::new();
        std::io::stdin()
            .lock()
            .take(limit.saturating_add(1))
            .read_to_end(&mut buf)
            .with_context(|| format!("cannot read {shown}"))?;
        if buf.len() as u64 > limit {
            return Err(too_large(shown, None, limit));
        }
        return Ok(buf);
    }
    let meta = std::fs::metadata(path).with_context(|| format!("cannot read {shown}"))?;
    if !meta.is_file() {
        bail!(
            "{shown} is {}, not a regular file: koas reads documents and ops files from regular files only (or from standard input where a command takes -)",
            kind_of(&meta)
        );
    }
    if meta.len() > limit {
        return Err(too_large(shown, Some(meta.len()), limit));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        // Opening a FIFO for reading waits for a writer: should the path
        // have been replaced by one since it was checked, fail instead.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .with_context(|| format!("cannot read {shown}"))?;
    let opened = file
        .metadata()
        .with_context(|| format!("cannot read {shown}"))?;
    if !opened.is_file() {
        bail!("{shown} is {}, not a regular file", kind_of(&opened));
    }
    let mut buf = Vec::with_capacity(usize::try_from(opened.len()).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .with_context(|| format!("cannot read {shown}"))?;
    if buf.len() as u64 > limit {
        return Err(too_large(shown, None, limit));
    }
    Ok(buf)
}

/// `true` for the file names a folder argument contributes.
fn is_markdown(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("markdown"))
}

/// The Markdown files under `dir`, sorted, hidden entries skipped.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.'))
        })
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            markdown_files(&p, out)?;
        } else if is_markdown(&p) {
            out.push(p);
        }
    }
    Ok(())
}

/// The documents the arguments name: folders expanded, `-` kept.
pub(crate) fn expand_documents(docs: &[PathBuf]) -> (Vec<PathBuf>, Vec<String>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for d in docs {
        if d.is_dir() {
            if let Err(e) = markdown_files(d, &mut files) {
                errors.push(format!("cannot read folder {}: {e}", d.display()));
            }
        } else {
            files.push(d.clone());
        }
    }
    (files, errors)
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

    #[test]
    fn a_folder_is_not_a_document() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_document_bytes(dir.path(), "dir", 1024, false).unwrap_err();
        assert!(err.to_string().contains("a folder"), "{err}");
    }
}
