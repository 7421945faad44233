//! Every reviewer artifact type is defined once, here. A struct or enum of
//! the same name anywhere else in the repository (a private copy "with only
//! the fields I need", a second `Finding`) is how the artifact shapes drifted
//! apart before; this test names the file and line of any such copy.

use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The names after `struct` / `enum` on each line of `text`, with their
/// 1-based line numbers.
fn type_definitions(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let words: Vec<&str> = line
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        for pair in words.windows(2) {
            if matches!(pair[0], "struct" | "enum") {
                out.push((pair[1].to_owned(), i + 1));
            }
        }
    }
    out
}

#[test]
fn artifact_types_are_defined_only_in_the_schema_crate() {
    let schema_src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut schema_files = Vec::new();
    rust_files(&schema_src, &mut schema_files);
    let mut names = std::collections::BTreeSet::new();
    for file in &schema_files {
        let text = std::fs::read_to_string(file).expect("schema source is readable");
        for (name, _) in type_definitions(&text) {
            names.insert(name);
        }
    }
    assert!(names.contains("LedgerEntry") && names.contains("ProtectedSpans"));

    let root = repo_root();
    let mut files = Vec::new();
    for top in [
        "crates",
        "kernels",
        "orchestrator",
        "kernel-api",
        "tests",
        "examples",
    ] {
        rust_files(&root.join(top), &mut files);
    }
    let schema_dir = root.join("crates/review-schema");
    let mut copies = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(&schema_dir)) {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for (name, line) in type_definitions(&text) {
            if names.contains(&name) {
                copies.push(format!(
                    "{}:{line}: `{name}` is an artifact type of koas-review-schema",
                    file.strip_prefix(&root).unwrap_or(file).display()
                ));
            }
        }
    }
    assert!(
        copies.is_empty(),
        "artifact types defined outside koas-review-schema (use the schema type, or give a type that is not an artifact another name):\n{}",
        copies.join("\n")
    );
}
