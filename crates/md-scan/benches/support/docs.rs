//! The documents the benchmarks run on: seed 000 (or the repository's own
//! fixtures when `../shared` is absent) and a 100,000-line document built
//! by concatenating the real corpus (or the fixtures).

use koas_test_support::{shared_files, shared_seed_000};
use std::path::{Path, PathBuf};

/// `(name, text)` of the small document: seed 000, else a fixture.
pub fn small() -> (String, String) {
    match shared_seed_000().and_then(|seed| std::fs::read_to_string(seed).ok()) {
        Some(t) => ("seed 000".into(), t),
        None => {
            println!("../shared is absent: using the repository's fixtures");
            let f = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/planted/rapport_conformite_fr.md");
            (
                "rapport_conformite_fr.md".into(),
                std::fs::read_to_string(f).unwrap_or_default(),
            )
        }
    }
}

/// A document of exactly `lines` lines made of whole corpus documents.
pub fn large(lines: usize) -> String {
    let mut sources: Vec<PathBuf> = shared_files("corpus/real", &["md"]);
    sources.extend(shared_seed_000());
    sources.sort();
    let mut texts: Vec<String> = sources
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    if texts.is_empty() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/planted");
        for name in ["rapport_conformite_fr.md", "api_spec_en.md"] {
            texts.extend(std::fs::read_to_string(dir.join(name)).ok());
        }
    }
    let mut out = String::new();
    let mut count = 0;
    'outer: loop {
        for t in &texts {
            for line in t.lines() {
                out.push_str(line);
                out.push('\n');
                count += 1;
                if count == lines {
                    break 'outer;
                }
            }
        }
        if texts.is_empty() {
            break;
        }
    }
    out
}
