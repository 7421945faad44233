//! Property ("fuzz") tests: no input makes the canonicalizer or the
//! forgiving readers panic, and the canonicalizer's rules (idempotent, non-destructive
//! normalization; exactly one object or a rejection) hold for arbitrary
//! text.
//!
//! CI runs these with a bounded number of cases (`PROPTEST_CASES`, default
//! 256 per property here); raise it locally for a longer fuzzing session.

use koas_extract::relaxed_json::to_strict_json;
use koas_extract::yaml::yaml_to_json;
use koas_extract::{extract_json_block, fences, normalize_text, CanonicalRejection};
use koas_kernel_api::hash::{canonical_json, canonical_sha256};
use proptest::prelude::*;
use serde_json::Value;

/// Text built from the fragments that make parsers work hardest.
fn tricky_text() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("\\".to_string()),
        Just(",".to_string()),
        Just(":".to_string()),
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("```json\n".to_string()),
        Just("~~~\n".to_string()),
        Just("- action: delete\n  line: 2\n".to_string()),
        Just("&anchor ".to_string()),
        Just("*alias ".to_string()),
        Just("// c".to_string()),
        Just("/*".to_string()),
        Just("True".to_string()),
        Just("{\"action\": \"flag\", \"line\": 1}".to_string()),
        Just("é🙂\u{feff}".to_string()),
        "[a-z ]{0,8}",
        "[0-9]{1,3}",
        any::<String>(),
    ];
    prop::collection::vec(fragment, 0..24).prop_map(|v| v.concat())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn normalize_is_idempotent(text in tricky_text()) {
        let once = normalize_text(&text);
        prop_assert_eq!(normalize_text(&once), once.clone());
        prop_assert!(!once.contains('\r'));
    }

    #[test]
    fn normalize_keeps_interior_text(text in tricky_text()) {
        // Only line endings and the outer whitespace change, so no JSON
        // string value can be altered.
        let unified = text.replace("\r\n", "\n").replace('\r', "\n");
        let normalized = normalize_text(&text);
        prop_assert!(unified.contains(&normalized));
    }

    #[test]
    fn extraction_never_panics_and_is_deterministic(text in tricky_text()) {
        let a = extract_json_block(&text);
        let b = extract_json_block(&text);
        prop_assert_eq!(a, b);
    }

    #[test]
    fn accepted_block_is_a_real_object_at_its_span(text in tricky_text()) {
        if let Ok(block) = extract_json_block(&text) {
            prop_assert_eq!(&text[block.span.clone()], block.text.as_str());
            prop_assert!(block.value.is_object());
            let reparsed: Value = serde_json::from_str(&block.canonical).unwrap();
            prop_assert_eq!(&reparsed, &block.value);
        }
    }

    #[test]
    fn one_object_in_prose_is_always_found(
        value in json_value(),
        before in "[a-zA-Z .!?\n]{0,40}",
        after in "[a-zA-Z .!?\n]{0,40}",
    ) {
        let object = match value {
            Value::Object(_) => value,
            other => serde_json::json!({ "v": other }),
        };
        let text = format!("{before}{}{after}", serde_json::to_string_pretty(&object).unwrap());
        let block = extract_json_block(&normalize_text(&text)).unwrap();
        prop_assert_eq!(block.hash, canonical_sha256(&object));
    }

    #[test]
    fn two_objects_are_always_ambiguous(a in json_value(), b in json_value(), sep in "[a-z \n]{0,10}") {
        let wrap = |v: Value| serde_json::json!({ "x": v });
        let text = format!("{}{sep}{}", wrap(a), wrap(b));
        prop_assert_eq!(extract_json_block(&text), Err(CanonicalRejection::AmbiguousMultiBlock { count: 2 }));
    }

    #[test]
    fn canonical_json_is_a_fixed_point(value in json_value()) {
        let canonical = canonical_json(&value);
        let reparsed: Value = serde_json::from_str(&canonical).unwrap();
        prop_assert_eq!(canonical_json(&reparsed), canonical);
    }

    #[test]
    fn forgiving_readers_never_panic_and_are_deterministic(text in tricky_text()) {
        let payload = fences::payload(&text);
        prop_assert!(text.contains(payload));
        prop_assert_eq!(to_strict_json(&text), to_strict_json(&text));
        prop_assert_eq!(yaml_to_json(&text), yaml_to_json(&text));
    }

    #[test]
    fn readers_survive_arbitrary_unicode(text in any::<String>()) {
        let _ = fences::payload(&text);
        let _ = to_strict_json(&text);
        let _ = yaml_to_json(&text);
    }
}

#[test]
fn pathological_inputs_do_not_overflow_the_stack() {
    for text in [
        "[".repeat(100_000),
        "{".repeat(100_000),
        format!("{}{}", "[".repeat(50_000), "]".repeat(50_000)),
        "- ".repeat(50_000),
        format!("BEGIN{}", "{\"a\":".repeat(20_000)),
        "'".repeat(100_000),
    ] {
        let _ = extract_json_block(&text);
        let _ = to_strict_json(&text);
        let _ = yaml_to_json(&text);
    }
}
