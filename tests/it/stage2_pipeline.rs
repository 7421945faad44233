//! End to end through the real runtime: the four Stage 1 plugins and the
//! four Stage 2 plugins loaded by `koas run` from the executable's folder,
//! on a pipeline written here. The Stage 2 files it writes in the workspace
//! must hold exactly the findings `koas check` reports in-process.
//!
//! `koas_test_support::koas_bin` first builds `koas` and the reviewer
//! plugins (offline, into the test's own target directory) so that the
//! test never runs stale plugins; a failed build fails the test.

use koas_review_schema::findings::Finding;
use koas_test_support::{koas_bin, repo_root};
use serde_json::Value;
use std::process::Command;

fn findings(v: &Value) -> Vec<Finding> {
    serde_json::from_value(v["findings"].clone()).expect("findings")
}

#[test]
fn plugins_in_a_pipeline_agree_with_koas_check() {
    let koas = koas_bin();
    let dir = tempfile::tempdir().expect("tmp");
    let doc = repo_root().join("crates/md-scan/tests/fixtures/planted/rapport_conformite_fr.md");
    let pipeline = dir.path().join("review.toml");
    std::fs::write(
        &pipeline,
        format!(
            "name = \"review-stage2\"\n\
             kernels = [\"md_inventory\", \"md_structure\", \"md_protected_regions\", \"md_chunk\",\n\
                        \"md_consistency_scan\", \"md_numbering_control\", \"md_language_check\",\n\
                        \"md_fingerprint_chunk\"]\n\
             [inputs]\ndoc = {:?}\n",
            doc.display().to_string()
        ),
    )
    .expect("write pipeline");
    let ws = dir.path().join("ws");
    let out = Command::new(koas)
        .arg("run")
        .arg(&pipeline)
        .arg("--workspace")
        .arg(&ws)
        .env_remove("KOAS_KERNEL_PATH")
        .output()
        .expect("koas runs");
    assert!(
        out.status.success(),
        "koas run failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let read = |rel: &str| -> Value {
        let path = ws.join(rel);
        serde_json::from_slice(
            &std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        )
        .expect("json")
    };
    let mut from_plugins = findings(&read("stage2/coherence_issues.json"));
    from_plugins.extend(findings(&read("stage2/numbering_findings.json")));
    from_plugins.extend(findings(&read("stage2/language_findings.json")));
    koas_review_schema::findings::sort_findings(&mut from_plugins);
    let renumber = read("stage2/renumber_ops.json");
    assert_eq!(renumber[0]["to"], "Tableau 2");
    let prints = read("stage2/md_fingerprint_chunk.json");
    assert!(prints["chunk_count"].as_u64().is_some_and(|n| n > 5));

    let check = Command::new(koas)
        .args(["check", "--no-config", "--format", "json"])
        .arg(&doc)
        .output()
        .expect("koas check runs");
    let listed: Value = serde_json::from_slice(&check.stdout).expect("json");
    let from_check: Vec<Finding> = listed
        .as_array()
        .expect("array")
        .iter()
        .map(|f| serde_json::from_value(f.clone()).expect("finding"))
        .collect();
    let language = from_plugins.iter().filter(|f| f.kind.is_language()).count();
    assert_eq!(from_plugins.len() - language, 11);
    assert_eq!(from_plugins, from_check);
}
