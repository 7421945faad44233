//! The kernel through the test harness, with real Stage 1 artifacts.

use koas_kernel_api::testing::TestHarness;
use koas_kernel_md_fingerprint_chunk::MdFingerprintChunk;
use koas_md_scan::stage1::Stage1Artifacts;
use serde_json::json;

const DOC: &str = "# Plain\n\nJust words here.\n\n# Busy\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n| 5 | 6 |\n\n```mermaid\ngraph TD\n```\n\nEmoji 🚀🚀🚀🚀🚀.\n";

fn harness(text: &str) -> TestHarness {
    let s1 = Stage1Artifacts::compute(text);
    TestHarness::new()
        .input("doc_raw", text)
        .input("chunks", &s1.chunks)
        .input("section_index", &s1.sections)
        .input("protected_spans", &s1.protected)
}

#[test]
fn fingerprints_every_chunk_with_triggers() {
    let out = harness(DOC).run(&MdFingerprintChunk).expect("runs");
    let prints = &out.value("chunk_fingerprints");
    assert_eq!(prints["chunk_count"], 2);
    assert_eq!(prints["triggered_count"], 1);
    let plain = &prints["fingerprints"][0];
    assert_eq!(plain["triggers_recipe"], false);
    assert_eq!(plain["table_rows"], 0);
    let busy = &prints["fingerprints"][1];
    assert_eq!(busy["section_id"], "S2");
    assert_eq!(busy["table_rows"], 3);
    assert_eq!(busy["emoji_count"], 5);
    assert_eq!(busy["code_fence_count"], 1);
    assert_eq!(
        busy["triggers"],
        json!([
            "table_rows_with_emoji_or_quote",
            "emoji",
            "code_fence",
            "table_rows"
        ])
    );
}

#[test]
fn thresholds_come_from_config() {
    let out = harness(DOC)
        .config(json!({"emoji_min": 8, "code_fence_min": 0, "table_rows_min": 0, "table_rows_with_emoji_or_quote": 0}))
        .run(&MdFingerprintChunk)
        .expect("runs");
    assert_eq!(out.value("chunk_fingerprints")["triggered_count"], 0);
}
