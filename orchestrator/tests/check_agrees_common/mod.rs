//! Shared by the `check_agrees_*` tests: `koas check` and each Stage 2
//! plugin kernel must report identical findings.

use koas_review_schema::findings::Finding;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The findings `koas check --format json` reports for `path`, of
/// `kernel` only.
pub fn check_findings(path: &Path, kernel: &str) -> Vec<Finding> {
    let out = Command::new(env!("CARGO_BIN_EXE_koas"))
        .args(["check", "--no-config", "--format", "json"])
        .arg(path)
        .output()
        .expect("koas runs");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    v.as_array()
        .expect("array")
        .iter()
        .map(|item| serde_json::from_value::<Finding>(item.clone()).expect("finding"))
        .filter(|f| f.kernel == kernel)
        .collect()
}

/// Our own planted documents, and shared ones when `../shared` exists.
pub fn documents() -> Vec<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut docs = vec![
        repo.join("kernels/md-scan/tests/fixtures/planted/rapport_conformite_fr.md"),
        repo.join("kernels/md-scan/tests/fixtures/planted/api_spec_en.md"),
    ];
    let shared = repo.join("../shared");
    if shared.is_dir() {
        docs.push(shared.join("seeds/000_2676a4bca076e17a.txt"));
        docs.push(shared.join("corpus/planted/audit_fr.md"));
        docs.push(shared.join("corpus/planted/spec_en.md"));
        docs.push(shared.join("corpus/real/ragix_SOVEREIGN_LLM_OPERATIONS.md"));
    } else {
        println!(
            "skipped the shared documents: {} is absent",
            shared.display()
        );
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
