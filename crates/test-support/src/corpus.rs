//! The repository root and the shared corpus (`../shared` beside the
//! checkout).
//!
//! The corpus is not part of the repository, so every lookup goes through
//! here: one place decides where it is and what "absent" means (no
//! `corpus` folder), and tests that need it skip with the same message.

use std::path::{Path, PathBuf};

/// The repository root (the folder holding the workspace `Cargo.toml`).
///
/// Derived from this crate's own location (`crates/test-support`), so it
/// is right whichever crate's test or bench calls it.
pub fn repo_root() -> PathBuf {
    let fallback = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    fallback.canonicalize().unwrap_or(fallback)
}

/// Where the shared folder is expected (`../shared` seen from the
/// repository root), whether or not it exists; for messages.
pub fn shared_location() -> PathBuf {
    let root = repo_root();
    match root.parent() {
        Some(parent) => parent.join("shared"),
        None => root.join("../shared"),
    }
}

/// The shared folder when it is present (it holds `corpus/`), without
/// printing anything: for benchmarks and optional extra documents that
/// fall back silently.
pub fn find_shared() -> Option<PathBuf> {
    let dir = shared_location();
    dir.join("corpus").is_dir().then_some(dir)
}

/// The shared folder, or `None` — after printing `SKIPPED: …` naming
/// `test` — when it is absent, so that a skipped check is visible in the
/// test output instead of passing silently.
pub fn shared_dir(test: &str) -> Option<PathBuf> {
    let found = find_shared();
    if found.is_none() {
        eprintln!(
            "SKIPPED: {test}: {} not found; the shared corpus is not available here",
            shared_location().display()
        );
    }
    found
}

/// Every Markdown or text document of the shared corpus and seeds
/// (`corpus/real`, `corpus/planted`, `seeds`), sorted; `None` when the
/// shared folder is absent (see [`shared_dir`]).
pub fn shared_documents(test: &str) -> Option<Vec<PathBuf>> {
    let dir = shared_dir(test)?;
    let mut files = Vec::new();
    for sub in ["corpus/real", "corpus/planted", "seeds"] {
        files.extend(files_with_extension(&dir.join(sub), &["md", "txt"]));
    }
    files.sort();
    Some(files)
}

/// The files of the shared folder `sub` (e.g. `corpus/real`) whose
/// extension is one of `extensions`, sorted; empty when the shared folder
/// or `sub` is absent (callers that need the corpus check [`shared_dir`]
/// first).
pub fn shared_files(sub: &str, extensions: &[&str]) -> Vec<PathBuf> {
    match find_shared() {
        Some(dir) => files_with_extension(&dir.join(sub), extensions),
        None => Vec::new(),
    }
}

/// Seed 000 (`seeds/000_*.txt`, a ~1,600-line document), the document the
/// benchmarks time, when the shared folder is present.
pub fn shared_seed_000() -> Option<PathBuf> {
    let seeds = find_shared()?.join("seeds");
    let mut found: Vec<PathBuf> = std::fs::read_dir(seeds)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("000_"))
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

/// The files directly in `dir` with one of `extensions`, sorted.
fn files_with_extension(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| {
        p.is_file()
            && p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| extensions.contains(&e))
    });
    files.sort();
    files
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
                assert!(shared_seed_000().is_some_and(|p| files.contains(&p)));
            }
            None => {
                assert!(!shared_location().join("corpus").is_dir());
                assert!(shared_files("corpus/real", &["md"]).is_empty());
                assert!(shared_seed_000().is_none());
            }
        }
        assert!(repo_root().join("Cargo.toml").is_file());
    }
}
