//! The planted-defect documents: every expected finding is found within
//! its line range and nothing is reported at a `must_not_flag` line.
//! The repository's own fixtures always run (and must match exactly:
//! no unexpected finding either); the shared corpus (`../shared/corpus/
//! planted`) runs when present and is skipped with a message otherwise.

use koas_md_scan::check_document;
use koas_md_scan::config::ProjectConfig;
use koas_md_scan::planted::{compare, Expectations};
use std::path::{Path, PathBuf};

fn check_folder(dir: &Path, exact: bool) -> usize {
    let mut checked = 0;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("readable fixture folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".expected.json"))
        .collect();
    entries.sort();
    for path in entries {
        let expectations: Expectations =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("readable"))
                .expect("valid expectations");
        let doc = dir.join(&expectations.document);
        let text = std::fs::read_to_string(&doc).expect("readable document");
        let output = check_document(&text, &ProjectConfig::default()).expect("checks");
        let c = compare(&expectations, &output.findings);
        assert!(
            c.passes(true),
            "{}: missed {:#?}\nviolations {:#?}",
            doc.display(),
            c.missed,
            c.violations
        );
        if exact {
            assert!(
                c.unexpected.is_empty(),
                "{}: unexpected {:#?}",
                doc.display(),
                c.unexpected
            );
        } else if !c.unexpected.is_empty() {
            println!(
                "{}: {} finding(s) beyond the expected ones",
                doc.display(),
                c.unexpected.len()
            );
        }
        checked += 1;
    }
    checked
}

#[test]
fn own_planted_fixtures_match_exactly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/planted");
    assert_eq!(check_folder(&dir, true), 2);
}

#[test]
fn shared_planted_corpus() {
    let Some(shared) = koas_test_support::shared_dir("shared_planted_corpus") else {
        return;
    };
    assert!(check_folder(&shared.join("corpus/planted"), false) >= 2);
}
