//! `md_chunk` through the plugin glue. Its inputs come from `koas_md`,
//! which the upstream kernels wrap (a test binary can only hold one
//! exported plugin; the whole chain runs in `tests/cli.rs`).

use koas_kernel_api::testing::TestHarness;
use koas_kernel_api::{ErrorKind, Kernel};
use koas_kernel_md_chunk::MdChunk;
use koas_md::stage1;
use koas_review_schema::stage1::{ChunkConfig, ChunkPlan};
use serde_json::json;

const SPEC: &str = include_str!("../../../examples/spec-example.md");

fn harness(text: &str) -> TestHarness {
    let s = stage1::run("doc.md", text, ChunkConfig::default()).expect("stage 1");
    TestHarness::new()
        .input("doc_raw", text)
        .input("doc_hash", &s.doc_hash)
        .input("section_index", &s.structure.sections)
        .input("protected_spans", &s.spans)
}

#[test]
fn spec_has_the_spec_defaults() {
    let spec = MdChunk.spec();
    assert_eq!(spec.validate(), Ok(()));
    assert_eq!(
        spec.default_config,
        json!({"max_chunk_tokens": 1800, "overlap_tokens": 100, "min_chunk_tokens": 50})
    );
    let inputs: Vec<&str> = spec.inputs.iter().map(|i| i.artifact.as_str()).collect();
    assert_eq!(
        inputs,
        vec!["doc_raw", "section_index", "protected_spans", "doc_hash"]
    );
    assert_eq!(spec.outputs[0].file.as_deref(), Some("stage1/chunks.json"));
}

#[test]
fn plans_the_example_like_the_library() {
    let out = harness(SPEC).run(&MdChunk).expect("runs");
    let plan: ChunkPlan = serde_json::from_value(out.value("chunks")).expect("plan");
    let lib = stage1::run("doc.md", SPEC, ChunkConfig::default())
        .expect("stage 1")
        .chunks;
    assert_eq!(plan, lib);
    assert_eq!(plan.chunks.len(), 23);
    assert!(out.warnings.is_empty());
    assert!(
        out.summary
            .starts_with("23 chunks over 23 sections (budget 1800 tokens"),
        "{}",
        out.summary
    );
}

#[test]
fn config_overrides_apply() {
    let out = harness(SPEC)
        .config(json!({"max_chunk_tokens": 60, "overlap_tokens": 20, "min_chunk_tokens": 10}))
        .run(&MdChunk)
        .expect("runs");
    let plan: ChunkPlan = serde_json::from_value(out.value("chunks")).expect("plan");
    assert_eq!(plan.config.max_chunk_tokens, 60);
    assert!(plan.chunks.len() > 23, "small budgets sub-split sections");
    assert!(plan.chunks.iter().any(|c| c.overlap_line_start.is_some()));
    // The 13-line rust fence (lines 90-102) cannot fit in 60 tokens.
    assert!(plan
        .chunks
        .iter()
        .any(|c| c.oversized && c.line_start <= 90 && c.line_end >= 102));
    assert_eq!(out.warnings.len(), 1, "oversized chunks are reported");
}

#[test]
fn bad_config_is_refused() {
    let unknown = harness("# A\n")
        .config(json!({"max_tokens": 5}))
        .run(&MdChunk)
        .expect_err("unknown key");
    assert_eq!(unknown.kind, ErrorKind::InvalidConfig);
    assert!(
        unknown.message.contains("max_tokens"),
        "{}",
        unknown.message
    );
    let zero = harness("# A\n")
        .config(json!({"max_chunk_tokens": 0}))
        .run(&MdChunk)
        .expect_err("zero");
    assert_eq!(zero.kind, ErrorKind::InvalidConfig);
    let negative = harness("# A\n")
        .config(json!({"overlap_tokens": -1}))
        .run(&MdChunk)
        .expect_err("negative");
    assert_eq!(negative.kind, ErrorKind::InvalidConfig);
}

#[test]
fn inputs_from_another_document_are_refused() {
    let other = stage1::run("other.md", "# Other\n", ChunkConfig::default()).expect("stage 1");
    let err = TestHarness::new()
        .input("doc_raw", SPEC)
        .input("section_index", &other.structure.sections)
        .input("protected_spans", &other.spans)
        .run(&MdChunk)
        .expect_err("mismatch");
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(err.message.contains("section_index"), "{}", err.message);
}

#[test]
fn empty_document_gives_no_chunk() {
    let out = harness("").run(&MdChunk).expect("runs");
    assert_eq!(out.value("chunks")["chunks"], json!([]));
}

#[test]
fn runs_on_every_shared_document() {
    let Some(files) = koas_test_support::shared_documents("md_chunk") else {
        return;
    };
    for path in files {
        let text = std::fs::read_to_string(&path).expect("UTF-8");
        let out = harness(&text)
            .run(&MdChunk)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let plan: ChunkPlan = serde_json::from_value(out.value("chunks")).expect("plan");
        assert_eq!(
            plan.chunks.last().map(|c| c.line_end),
            Some(plan.line_count)
        );
    }
}
