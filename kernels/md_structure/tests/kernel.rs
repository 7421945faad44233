//! `md_structure` through the plugin glue.

use koas_kernel_api::hash::sha256;
use koas_kernel_api::testing::TestHarness;
use koas_kernel_api::{ErrorKind, Kernel};
use koas_kernel_md_structure::MdStructure;
use koas_review_schema::stage1::{AnchorMap, HeadingTree, SectionIndex};

const SPEC: &str = include_str!("../../../examples/spec-example.md");

#[test]
fn spec_declares_inputs_and_files() {
    let spec = MdStructure.spec();
    assert_eq!(spec.validate(), Ok(()));
    let files: Vec<(&str, Option<&str>)> = spec
        .outputs
        .iter()
        .map(|o| (o.artifact.as_str(), o.file.as_deref()))
        .collect();
    assert_eq!(
        files,
        vec![
            ("heading_tree", Some("stage1/md_structure.json")),
            ("section_index", Some("stage1/outline.json")),
            ("anchor_map", Some("stage1/anchors.json")),
        ]
    );
    assert!(spec
        .inputs
        .iter()
        .any(|i| i.artifact == "doc_raw" && i.required));
    assert!(spec
        .inputs
        .iter()
        .any(|i| i.artifact == "doc_hash" && !i.required));
}

#[test]
fn builds_the_tree_of_the_example() {
    let hash = sha256(SPEC.as_bytes());
    let out = TestHarness::new()
        .input("doc_raw", SPEC)
        .input("doc_hash", &hash)
        .run(&MdStructure)
        .expect("runs");
    let tree: HeadingTree = serde_json::from_value(out.value("heading_tree")).expect("tree");
    let index: SectionIndex = serde_json::from_value(out.value("section_index")).expect("index");
    let anchors: AnchorMap = serde_json::from_value(out.value("anchor_map")).expect("anchors");
    assert_eq!(tree.doc_hash, hash);
    assert_eq!(tree.heading_count, 22);
    assert_eq!(
        tree.roots[0].children[1].children[1].children[0].id,
        "S1.2.2.1"
    );
    assert_eq!(
        tree.roots[0].children[1].children[1].children[0].anchor,
        "storage-layout-on-disk"
    );
    assert_eq!(index.sections.len(), 22);
    assert_eq!(
        anchors.anchors.get("3-public-api").map(String::as_str),
        Some("S1.3")
    );
    assert_eq!(
        out.summary,
        "238 lines, 22 headings (max depth 4, deepest level H4), 1 top-level, 1 duplicate anchor, 17 explicitly numbered, preamble lines 1–7"
    );
}

#[test]
fn computes_the_hash_when_doc_hash_is_absent() {
    let out = TestHarness::new()
        .input("doc_raw", "# A\n")
        .run(&MdStructure)
        .expect("runs");
    assert_eq!(out.value("section_index")["doc_hash"], sha256(b"# A\n"));
}

#[test]
fn missing_doc_raw_is_an_input_error() {
    let err = TestHarness::new()
        .run(&MdStructure)
        .expect_err("missing input");
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(err.message.contains("doc_raw"));
}

#[test]
fn runs_on_every_shared_document() {
    let Some(files) = koas_test_support::shared_documents("md_structure") else {
        return;
    };
    for path in files {
        let text = std::fs::read_to_string(&path).expect("UTF-8");
        let out = TestHarness::new()
            .input("doc_raw", &text)
            .run(&MdStructure)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let index: SectionIndex =
            serde_json::from_value(out.value("section_index")).expect("index");
        assert_eq!(
            index.line_count as usize,
            text.lines().count(),
            "{}",
            path.display()
        );
    }
}
