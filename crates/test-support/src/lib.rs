//! Test helpers shared by koas crates (a dev-dependency only).
//!
//! The shared corpus lives in `../shared` beside the repository checkout
//! (`corpus/real`, `corpus/planted`, `seeds`). Tests that read it must also
//! pass on a fresh clone without it: these helpers return `None` after
//! printing a clear `SKIPPED:` line, and the test returns early.

#![deny(missing_docs)]

use std::path::{Path, PathBuf};

/// The repository root (the folder holding the workspace `Cargo.toml`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// The shared folder (`../shared` beside the checkout), or `None` — after
/// printing `SKIPPED: …` naming `test` — when it is absent.
pub fn shared_dir(test: &str) -> Option<PathBuf> {
    let dir = repo_root().join("../shared");
    if dir.join("corpus").is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: {test}: {} not found; the shared corpus is not available here",
            dir.display()
        );
        None
    }
}

/// Every Markdown or text document of the shared corpus and seeds
/// (`corpus/real`, `corpus/planted`, `seeds`), sorted; `None` when the
/// shared folder is absent (see [`shared_dir`]).
pub fn shared_documents(test: &str) -> Option<Vec<PathBuf>> {
    let dir = shared_dir(test)?;
    let mut files = Vec::new();
    for sub in ["corpus/real", "corpus/planted", "seeds"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("md" | "txt")
            ) {
                files.push(path);
            }
        }
    }
    files.sort();
    Some(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_documents_are_markdown_or_text_when_present() {
        match shared_documents("self-test") {
            Some(files) => {
                assert!(!files.is_empty());
                assert!(files.iter().all(|f| f.is_file()));
            }
            None => assert!(!repo_root().join("../shared/corpus").is_dir()),
        }
        assert!(repo_root().join("Cargo.toml").is_file());
    }
}
