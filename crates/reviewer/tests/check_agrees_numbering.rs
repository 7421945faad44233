//! `koas check` (Stage 1 + Stage 2 in-process) and the `md_numbering_control` plugin
//! kernel report identical findings. The kernel runs through the test
//! harness (config resolution and the JSON round trip of the plugin
//! boundary) on the Stage 1 artifacts of `koas_md::stage1::run`, the code
//! the four Stage 1 kernels call. (One kernel per test binary: every
//! kernel library exports the same plugin entry symbol.)

mod check_agrees_common;

use koas_kernel_api::testing::TestHarness;
use koas_review_schema::findings::Finding;
use koas_review_schema::stage1::ChunkConfig;
use std::path::Path;

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
    serde_json::from_value(out.value("numbering_findings")["findings"].clone()).expect("findings")
}

#[test]
fn check_and_the_plugin_kernel_report_the_same_findings() {
    check_agrees_common::assert_check_agrees("md_numbering_control", kernel_findings);
}
