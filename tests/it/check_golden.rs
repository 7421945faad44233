//! `koas check` reports the same findings, byte for byte, as the snapshots
//! taken before its speed work: every field of `--format json` (line,
//! column, kind, severity, message, evidence, section, anchor, chunk ID)
//! on our own fixtures and, when `../shared` is there, on every seed and
//! corpus document. A change of any finding must be read and the snapshot
//! accepted on purpose (`cargo insta review`), never by accident.

use crate::common::{koas, run, stderr};
use koas_test_support::{repo_root, shared_dir};
use std::path::Path;

/// `koas check --format json` of `docs` (relative to `dir`, so the
/// snapshot names no machine's folders).
fn findings(dir: &Path, docs: &[String]) -> String {
    let mut args = vec![
        "check",
        "--format",
        "json",
        "--no-config",
        "--fail-on",
        "never",
    ];
    args.extend(docs.iter().map(String::as_str));
    let out = run(koas().current_dir(dir).args(&args));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The Markdown files of `dir/sub`, relative to `dir`, sorted.
fn markdown_in(dir: &Path, sub: &str, ext: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir.join(sub))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(ext))
                .map(|n| format!("{sub}/{n}"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn own_fixtures_findings_are_unchanged() {
    let root = repo_root();
    let mut docs = markdown_in(&root, "crates/md-scan/tests/fixtures/planted", ".md");
    docs.extend(markdown_in(&root, "tests/fixtures/review", ".md"));
    docs.extend(markdown_in(&root, "crates/edit/tests/fixtures", ".md"));
    assert!(docs.len() >= 6, "{docs:?}");
    insta::assert_snapshot!("check_golden_own_fixtures", findings(&root, &docs));
}

#[test]
fn shared_corpus_findings_are_unchanged() {
    let Some(shared) = shared_dir("check_golden: the shared seeds and corpus") else {
        return;
    };
    let mut docs = markdown_in(&shared, "seeds", ".txt");
    docs.extend(markdown_in(&shared, "corpus/planted", ".md"));
    docs.extend(markdown_in(&shared, "corpus/real", ".md"));
    assert!(docs.len() >= 10, "{docs:?}");
    // The corpus holds copies taken out of their repositories: their links
    // to other files name files never copied, and what lies next to them
    // in the shared folder may change. Those findings are left out here.
    #[derive(serde::Deserialize, serde::Serialize)]
    struct Item {
        file: String,
        #[serde(flatten)]
        finding: koas_review_schema::findings::Finding,
    }
    let all: Vec<Item> = serde_json::from_str(&findings(&shared, &docs)).expect("JSON findings");
    let alone: Vec<&Item> = all
        .iter()
        .filter(|item| !crate::check_agrees::needs_neighbours(&item.finding))
        .collect();
    let mut text = serde_json::to_string_pretty(&alone).expect("JSON");
    text.push('\n');
    insta::assert_snapshot!("check_golden_shared_corpus", text);
}
