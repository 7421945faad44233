//! The kernel through the test harness, with real Stage 1 artifacts.

use koas_kernel_api::testing::TestHarness;
use koas_kernel_api::ErrorKind;
use koas_kernel_md_consistency_scan::MdConsistencyScan;
use koas_md_scan::stage1::Stage1Artifacts;
use serde_json::json;

const DOC: &str = "# Spec\n\n## 1. Intro\n\nCertainly! Here is the spec.\n\nSee Section 4 and [x](#nowhere).\n\n| Tier | Share |\n|---|---|\n| a | 50% |\n| b | 20% |\n";

fn harness(text: &str) -> TestHarness {
    let s1 = Stage1Artifacts::compute(text);
    TestHarness::new()
        .input("doc_raw", text)
        .input("section_index", &s1.sections)
        .input("anchor_map", &s1.anchors)
        .input("protected_spans", &s1.protected)
        .input("chunks", &s1.chunks)
}

#[test]
fn reports_issues_with_chunk_ids() {
    let out = harness(DOC).run(&MdConsistencyScan).expect("runs");
    let issues = &out.value("issues");
    let kinds: Vec<&str> = issues["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        kinds,
        [
            "ai_leftover",
            "broken_reference",
            "broken_link_anchor",
            "table_percentage"
        ]
    );
    assert_eq!(issues["finding_count"], 4);
    assert!(issues["findings"][0]["chunk_id"]
        .as_str()
        .is_some_and(|c| c.starts_with("1-intro_")));
    assert!(out.summary.starts_with("4 findings"), "{}", out.summary);
}

#[test]
fn config_is_checked_and_applied() {
    let out = harness(DOC)
        .config(json!({"ai_leftover_patterns": [], "percent_min": 60.0}))
        .run(&MdConsistencyScan)
        .expect("runs");
    // The share column (70 %) is now within bounds; the leftover stays:
    // "Certainly!" opening a paragraph is a chat reply whatever the
    // phrase patterns say.
    let issues = out.value("issues");
    let kinds: Vec<&str> = issues["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        kinds,
        ["ai_leftover", "broken_reference", "broken_link_anchor"]
    );
    let err = harness(DOC)
        .config(json!({"ai_leftover_patterns": ["(bad"]}))
        .run(&MdConsistencyScan)
        .expect_err("bad regex");
    assert_eq!(err.kind, ErrorKind::InvalidConfig);
    let err = harness(DOC)
        .config(json!({"typo": 1}))
        .run(&MdConsistencyScan)
        .expect_err("unknown key");
    assert_eq!(err.kind, ErrorKind::InvalidConfig);
}

#[test]
fn artifacts_of_another_document_are_refused() {
    let err = harness(DOC)
        .input("doc_raw", "# Other\n")
        .run(&MdConsistencyScan)
        .expect_err("mismatch");
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(err.message.contains("section_index"), "{}", err.message);
}
