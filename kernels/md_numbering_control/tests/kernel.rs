//! The kernel through the test harness, with real Stage 1 artifacts.

use koas_kernel_api::testing::TestHarness;
use koas_kernel_md_numbering_control::MdNumberingControl;
use koas_md_scan::stage1::Stage1Artifacts;
use serde_json::json;

const DOC: &str = "# Doc\n\n### Skipped\n\nFigure 1: a\n\nFigure 3: b\n\nAs Figure 4 shows.\n";

fn harness(text: &str) -> TestHarness {
    let s1 = Stage1Artifacts::compute(text);
    TestHarness::new()
        .input("doc_raw", text)
        .input("section_index", &s1.sections)
        .input("protected_spans", &s1.protected)
}

#[test]
fn reports_findings_and_renumber_ops() {
    let out = harness(DOC).run(&MdNumberingControl).expect("runs");
    let findings = out.value("numbering_findings")["findings"]
        .as_array()
        .expect("findings")
        .clone();
    let got: Vec<(String, u64)> = findings
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap_or("").to_string(),
                f["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("heading_level_skip".to_string(), 3),
            ("numbering_gap".to_string(), 7),
            ("missing_target".to_string(), 9)
        ]
    );
    assert_eq!(findings[0]["kernel"], "md_numbering_control");
    assert_eq!(
        out.value("renumber_ops"),
        json!([{"target": "figure", "line": 7, "from": "Figure 3", "to": "Figure 2", "references": []}])
    );
}

#[test]
fn heading_levels_can_be_turned_off() {
    let out = harness(DOC)
        .config(json!({"check_heading_levels": false}))
        .run(&MdNumberingControl)
        .expect("runs");
    assert_eq!(out.value("numbering_findings")["finding_count"], 2);
}
