//! Shared by the `check_agrees_*` tests: `koas check` and each Stage 2
//! plugin kernel must report identical findings.

use koas_md_scan::config::ProjectConfig;
use koas_md_scan::report::{render_json, FileFindings};
use koas_md_scan::Checker;
use koas_review_schema::findings::Finding;
use koas_test_support::{repo_root, shared_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The findings `koas check --no-config --format json` reports for
/// `path`, of `kernel` only: the same library calls as the command
/// (built-in config, the JSON report), in-process, read back from the
/// JSON like a user of the command would.
pub fn check_findings(path: &Path, kernel: &str) -> Vec<Finding> {
    let text = std::fs::read_to_string(path).expect("readable");
    let checker = Checker::new(&ProjectConfig::default()).expect("the built-in config compiles");
    let output = checker.check(&text).expect("koas check runs");
    let shown = path.display().to_string();
    let json = render_json(&[FileFindings {
        path: &shown,
        findings: &output.findings,
    }]);
    let v: Value = serde_json::from_str(&json).expect("json");
    v.as_array()
        .expect("array")
        .iter()
        .map(|item| serde_json::from_value::<Finding>(item.clone()).expect("finding"))
        .filter(|f| f.kernel == kernel)
        .collect()
}

/// Our own planted documents, and shared ones when `../shared` exists.
pub fn documents() -> Vec<PathBuf> {
    let planted = repo_root().join("crates/md-scan/tests/fixtures/planted");
    let mut docs = vec![
        planted.join("rapport_conformite_fr.md"),
        planted.join("api_spec_en.md"),
    ];
    if let Some(shared) = shared_dir("check_agrees: the shared documents") {
        docs.push(shared.join("seeds/000_2676a4bca076e17a.txt"));
        docs.push(shared.join("corpus/planted/audit_fr.md"));
        docs.push(shared.join("corpus/planted/spec_en.md"));
        docs.push(shared.join("corpus/real/ragix_SOVEREIGN_LLM_OPERATIONS.md"));
    }
    docs
}

/// Checks that `kernel_findings` (the plugin kernel through the test
/// harness) and `koas check` report the same findings of `kernel` on every
/// document.
pub fn assert_check_agrees(kernel: &str, kernel_findings: impl Fn(&Path) -> Vec<Finding>) {
    let mut compared = 0;
    for doc in documents() {
        let from_kernel = kernel_findings(&doc);
        let from_check = check_findings(&doc, kernel);
        assert_eq!(from_kernel, from_check, "{}", doc.display());
        compared += from_check.len();
    }
    assert!(compared >= 5, "the comparison needs findings ({compared})");
}
