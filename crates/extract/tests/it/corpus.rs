//! Every shared document, read as if a model had answered it: the
//! canonicalizer and the forgiving readers must take it without panicking.

use koas_extract::relaxed_json::to_strict_json;
use koas_extract::yaml::yaml_to_json;
use koas_extract::{extract_json_block, fences, normalize_text};

#[test]
fn shared_documents_as_model_output_never_break_the_readers() {
    let Some(files) = koas_test_support::shared_documents(
        "shared_documents_as_model_output_never_break_the_readers",
    ) else {
        return;
    };
    assert!(!files.is_empty(), "the shared folder holds documents");
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        let normalized = normalize_text(&text);
        let _ = extract_json_block(&normalized);
        let payload = fences::payload(&normalized);
        let _ = to_strict_json(payload);
        let _ = yaml_to_json(payload);
    }
}
