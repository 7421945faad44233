//! `koas check` (Stage 1 + Stage 2 in-process) and the `md_numbering_control` plugin
//! kernel report identical findings. The kernel runs through the test
//! harness (config resolution and the JSON round trip of the plugin
//! boundary) on the Stage 1 artifacts of `koas_md::stage1::run`, the code
//! the four Stage 1 kernels call. (One kernel per test binary: every
//! kernel library exports the same plugin entry symbol.)

use koas_kernel_api::testing::TestHarness;
use koas_md::model::ChunkConfig;
use koas_md_scan::Finding;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn kernel_findings(path: &Path) -> Vec<Finding> {
    let text = std::fs::read_to_string(path).expect("readable");
    let s1 = koas_md::stage1::run(&path.to_string_lossy(), &text, ChunkConfig::default())
        .expect("stage 1");
    let out = TestHarness::new()
        .input("doc_raw", &text)
        .input("section_index", &s1.structure.sections)
        .input("anchor_map", &s1.structure.anchors)
        .input("protected_spans", &s1.spans)
        .input("chunks", &s1.chunks)
        .run(&koas_kernel_md_numbering_control::MdNumberingControl)
        .expect("the kernel runs");
    serde_json::from_value(out.artifacts["numbering_findings"]["findings"].clone())
        .expect("findings")
}

fn check_findings(path: &Path) -> Vec<Finding> {
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
        .filter(|f| f.kernel == "md_numbering_control")
        .collect()
}

fn documents() -> Vec<PathBuf> {
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

#[test]
fn check_and_the_plugin_kernel_report_the_same_findings() {
    let mut compared = 0;
    for doc in documents() {
        let from_kernel = kernel_findings(&doc);
        let from_check = check_findings(&doc);
        assert_eq!(from_kernel, from_check, "{}", doc.display());
        compared += from_check.len();
    }
    assert!(compared >= 5, "the comparison needs findings ({compared})");
}
