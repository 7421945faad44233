//! The ladder on the repo's own fixture responses (one per format, with the
//! expected level), and on every shared document as adversarial input.

use koas_extract::{extract_json_block, normalize_text};
use koas_review_llm::ladder::extract_edit_ops;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ladder")
}

#[test]
fn each_fixture_response_is_read_at_its_level() {
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("expected_methods.json")).unwrap(),
    )
    .unwrap();
    let expected = expected.as_object().unwrap();
    assert_eq!(expected.len(), 8);
    for (file, want) in expected {
        let raw = std::fs::read_to_string(fixtures().join("responses").join(file)).unwrap();
        let out = extract_edit_ops(&raw);
        assert_eq!(out.method.as_str(), want["method"], "{file}");
        assert_eq!(
            out.ops.len() as u64,
            want["ops"].as_u64().unwrap(),
            "{file}"
        );
        if want.get("no_changes") == Some(&Value::Bool(true)) {
            assert!(out.no_changes, "{file}");
        }
    }
}

#[test]
fn fixture_ops_carry_their_fields() {
    let raw = std::fs::read_to_string(fixtures().join("responses/relaxed_fr.txt")).unwrap();
    let out = extract_edit_ops(&raw);
    assert_eq!(out.ops[0].after_text.as_deref(), Some("les données"));
    assert_eq!(
        (out.ops[1].line_start, out.ops[1].line_end),
        (Some(20), Some(21))
    );
    let raw = std::fs::read_to_string(fixtures().join("responses/two_objects.txt")).unwrap();
    assert_eq!(
        extract_json_block(&normalize_text(&raw))
            .unwrap_err()
            .code(),
        "AMBIGUOUS_MULTI_BLOCK"
    );
}

#[test]
fn shared_documents_as_model_output_never_break_the_ladder() {
    let Some(files) = koas_test_support::shared_documents(
        "shared_documents_as_model_output_never_break_the_ladder",
    ) else {
        return;
    };
    assert!(!files.is_empty(), "the shared folder holds documents");
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        let out = extract_edit_ops(&text);
        assert!(
            out.method.succeeded() || out.ops.is_empty(),
            "{}",
            file.display()
        );
        let _ = extract_json_block(&normalize_text(&text));
    }
}
