//! `md_protected_regions` through the plugin glue.

use koas_kernel_api::testing::TestHarness;
use koas_kernel_api::Kernel;
use koas_kernel_md_protected_regions::MdProtectedRegions;
use koas_review_schema::stage1::{BlockKind, ProtectedSpans, ProtectedSummary};

const AUDIT_FR: &str = include_str!("../../../examples/audit-fr.md");

#[test]
fn spec_declares_inputs_and_files() {
    let spec = MdProtectedRegions.spec();
    assert_eq!(spec.validate(), Ok(()));
    let files: Vec<(&str, Option<&str>)> = spec
        .outputs
        .iter()
        .map(|o| (o.artifact.as_str(), o.file.as_deref()))
        .collect();
    assert_eq!(
        files,
        vec![
            ("protected_spans", Some("stage1/protected_spans.json")),
            (
                "protected_summary",
                Some("stage1/md_protected_regions.json")
            ),
        ]
    );
}

#[test]
fn protects_the_french_example() {
    let out = TestHarness::new()
        .input("doc_raw", AUDIT_FR)
        .run(&MdProtectedRegions)
        .expect("runs");
    let spans: ProtectedSpans =
        serde_json::from_value(out.value("protected_spans")).expect("spans");
    let kinds: Vec<(BlockKind, u32, u32)> = spans
        .blocks
        .iter()
        .map(|b| (b.kind, b.line_start, b.line_end))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (BlockKind::TomlFrontMatter, 1, 5),
            (BlockKind::Table, 29, 33),
            (BlockKind::MathBlock, 42, 44),
            (BlockKind::CodeFence, 49, 52),
            (BlockKind::HtmlBlock, 71, 74),
            (BlockKind::LinkRefDef, 82, 82),
        ]
    );
    let summary: ProtectedSummary =
        serde_json::from_value(out.value("protected_summary")).expect("summary");
    assert_eq!(summary.block_count, 6);
    assert_eq!(summary.protected_lines, 5 + 5 + 3 + 4 + 4 + 1);
    assert!(
        out.summary
            .starts_with("6 protected blocks over 22 lines of 82"),
        "{}",
        out.summary
    );
}

#[test]
fn runs_on_every_shared_document() {
    let Some(files) = koas_test_support::shared_documents("md_protected_regions") else {
        return;
    };
    for path in files {
        let text = std::fs::read_to_string(&path).expect("UTF-8");
        let out = TestHarness::new()
            .input("doc_raw", &text)
            .run(&MdProtectedRegions)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let spans: ProtectedSpans =
            serde_json::from_value(out.value("protected_spans")).expect("spans");
        for b in &spans.blocks {
            assert!(
                b.line_start >= 1 && b.line_start <= b.line_end && b.line_end <= spans.line_count
            );
        }
    }
}
