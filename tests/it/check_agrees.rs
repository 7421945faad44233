//! `koas check` and the Stage 2 plugin kernels report identical findings:
//! `koas check --no-config --format json DOC` beside `koas run` of the
//! reviewer pipeline up to `md_consistency_scan` and `md_numbering_control`
//! (the real plugins, through the ABI), on our planted documents and the
//! shared ones when `../shared` is there.

use crate::common::{koas, run, stderr};
use koas_review_schema::findings::{Finding, FindingsArtifact};
use koas_test_support::{repo_root, shared_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Our own planted documents, and shared ones when `../shared` exists.
fn documents() -> Vec<PathBuf> {
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

/// The findings of `kernel` that `koas check --no-config --format json`
/// reports for `doc`.
fn check_findings(doc: &Path, kernel: &str) -> Vec<Finding> {
    let out = run(koas()
        .args(["check", "--no-config", "--format", "json"])
        .arg(doc));
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("koas check --format json: {e}\n{}", stderr(&out)));
    v.as_array()
        .expect("an array of findings")
        .iter()
        .map(|item| serde_json::from_value::<Finding>(item.clone()).expect("a finding"))
        .filter(|f| f.kernel == kernel && !needs_neighbours(f))
        .collect()
}

/// A finding about a link to another file: `koas check` sees the files
/// around the document, a kernel sees the document alone.
pub(crate) fn needs_neighbours(f: &Finding) -> bool {
    use koas_review_schema::findings::FindingKind;
    f.kind == FindingKind::BrokenLink
        || (f.kind == FindingKind::BrokenLinkAnchor
            && f.message.contains("no heading of ")
            && !f.message.contains("no heading of this document"))
}

/// The findings the plugin `kernel` writes to `file` when the reviewer
/// pipeline runs on `doc` up to it.
fn kernel_findings(doc: &Path, ws: &Path, kernel: &str, file: &str) -> Vec<Finding> {
    let pipeline = repo_root().join("configs/reviewer.toml");
    let out = run(koas()
        .args(["-q", "run"])
        .arg(&pipeline)
        .arg("--input")
        .arg(format!("doc={}", doc.display()))
        .arg("-w")
        .arg(ws)
        .args(["--until", kernel]));
    assert!(
        out.status.success(),
        "koas run --until {kernel}: {}",
        stderr(&out)
    );
    let bytes = std::fs::read(ws.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let artifact: FindingsArtifact = serde_json::from_slice(&bytes).expect("a findings artifact");
    artifact.findings
}

#[test]
fn check_and_the_plugin_kernels_report_the_same_findings() {
    let kernels = [
        ("md_consistency_scan", "stage2/coherence_issues.json"),
        ("md_numbering_control", "stage2/numbering_findings.json"),
    ];
    let mut compared = [0usize; 2];
    for doc in documents() {
        let ws = tempfile::tempdir().expect("tmp");
        for (k, (kernel, file)) in kernels.iter().enumerate() {
            let from_kernel = kernel_findings(&doc, ws.path(), kernel, file);
            let from_check = check_findings(&doc, kernel);
            assert_eq!(from_kernel, from_check, "{kernel} on {}", doc.display());
            compared[k] += from_check.len();
        }
    }
    // Both comparisons must have findings to compare.
    assert!(compared.iter().all(|&n| n >= 5), "{compared:?}");
}
