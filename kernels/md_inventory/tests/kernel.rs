//! `md_inventory` through the plugin glue (TestHarness round-trips JSON
//! like the host).

use koas_kernel_api::hash::sha256;
use koas_kernel_api::testing::TestHarness;
use koas_kernel_api::ErrorKind;
use koas_kernel_md_inventory::MdInventory;
use koas_review_schema::stage1::{FileStats, FrontMatterFormat, LineEndingStyle};

const SPEC: &str = include_str!("../../../examples/spec-example.md");

#[test]
fn spec_declares_the_stage1_artifacts() {
    use koas_kernel_api::Kernel;
    let spec = MdInventory.spec();
    assert_eq!(spec.validate(), Ok(()));
    let raw = spec
        .outputs
        .iter()
        .find(|o| o.artifact == "doc_raw")
        .expect("doc_raw");
    assert_eq!(raw.file.as_deref(), Some("stage1/doc.raw.md"));
    assert!(raw.write_once, "the snapshot is immutable");
    let stats = spec
        .outputs
        .iter()
        .find(|o| o.artifact == "file_stats")
        .expect("file_stats");
    assert_eq!(stats.file.as_deref(), Some("stage1/md_inventory.json"));
    assert!(spec.outputs.iter().any(|o| o.artifact == "doc_hash"));
    assert_eq!(spec.inputs.len(), 1);
    assert_eq!(spec.inputs[0].artifact, "doc");
}

#[test]
fn snapshots_and_describes_the_example() {
    let out = TestHarness::new()
        .source_bytes("doc", "examples/spec-example.md", SPEC.as_bytes())
        .run(&MdInventory)
        .expect("runs");
    assert_eq!(out.value("doc_raw").as_str(), Some(SPEC));
    assert_eq!(
        out.value("doc_hash").as_str(),
        Some(sha256(SPEC.as_bytes()).as_str())
    );
    let stats: FileStats = serde_json::from_value(out.value("file_stats")).expect("FileStats");
    assert_eq!(stats.path, "examples/spec-example.md");
    assert_eq!((stats.lines, stats.code_fences, stats.tables), (238, 3, 4));
    assert_eq!(
        stats.front_matter.map(|f| f.format),
        Some(FrontMatterFormat::Yaml)
    );
    assert!(out.summary.starts_with("238 lines, "), "{}", out.summary);
    assert!(out.summary.chars().count() < 500);
}

#[test]
fn keeps_bom_and_crlf_byte_for_byte() {
    let text = format!("\u{feff}{}", SPEC.replace('\n', "\r\n"));
    let out = TestHarness::new()
        .source_bytes("doc", "crlf.md", text.as_bytes())
        .run(&MdInventory)
        .expect("runs");
    assert_eq!(out.value("doc_raw").as_str(), Some(text.as_str()));
    let stats: FileStats = serde_json::from_value(out.value("file_stats")).expect("FileStats");
    assert!(stats.has_bom);
    assert_eq!(stats.line_endings.style, LineEndingStyle::Crlf);
    assert_eq!(stats.line_endings.crlf, 238);
    assert_eq!(stats.sha256, sha256(text.as_bytes()));
}

#[test]
fn invalid_utf8_names_the_file_and_offset() {
    let mut bytes = b"# Title\nok ".to_vec();
    bytes.extend_from_slice(&[0xFF, 0xFE]);
    let err = TestHarness::new()
        .source_bytes("doc", "notes/latin1.md", &bytes)
        .run(&MdInventory)
        .expect_err("refused");
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(err.message.contains("notes/latin1.md"), "{}", err.message);
    assert!(err.message.contains("offset 11"), "{}", err.message);
}

#[test]
fn binary_content_names_the_file_and_offset() {
    let mut harness = TestHarness::new().source_bytes("doc", "blob.bin", b"abc\ndef\0ghi");
    let err = harness.run(&MdInventory).expect_err("refused");
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(
        err.message.contains("blob.bin") && err.message.contains("offset 7"),
        "{}",
        err.message
    );
    assert!(harness.files().is_empty(), "nothing is written");
}

#[test]
fn empty_document() {
    let out = TestHarness::new()
        .source_text("doc", "")
        .run(&MdInventory)
        .expect("runs");
    let stats: FileStats = serde_json::from_value(out.value("file_stats")).expect("FileStats");
    assert_eq!((stats.lines, stats.bytes), (0, 0));
    assert_eq!(out.value("doc_raw").as_str(), Some(""));
}

#[test]
fn runs_on_every_shared_document() {
    let Some(files) = koas_test_support::shared_documents("md_inventory") else {
        return;
    };
    assert!(files.len() >= 14);
    for path in files {
        let bytes = std::fs::read(&path).expect("readable");
        let name = path.display().to_string();
        let out = TestHarness::new()
            .source_bytes("doc", &name, &bytes)
            .run(&MdInventory)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            out.value("doc_raw").as_str().map(str::as_bytes),
            Some(bytes.as_slice())
        );
    }
}
