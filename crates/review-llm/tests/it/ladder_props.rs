//! Property ("fuzz") tests of the extraction ladder: no input makes it
//! panic, it is deterministic, and it reads back any strict op list
//! without turning a field that is not text into text. (The
//! canonicalizer's own properties are `koas-extract`'s.)
//!
//! CI runs these with a bounded number of cases (`PROPTEST_CASES`, default
//! 256 per property here); raise it locally for a longer fuzzing session.

use koas_extract::normalize_text;
use koas_review_llm::ladder::{extract_edit_ops, ExtractionMethod};
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
        Just("BEGIN_EDIT_OPS".to_string()),
        Just("END_EDIT_OPS".to_string()),
        Just("<EDIT_OPS>".to_string()),
        Just("[RVW] action=replace / lines=1-2 / before=\"".to_string()),
        Just("replace: lines 3-4: \"a\" -> \"b\"".to_string()),
        Just("- action: delete\n  line: 2\n".to_string()),
        Just("&anchor ".to_string()),
        Just("*alias ".to_string()),
        Just("// c".to_string()),
        Just("/*".to_string()),
        Just("True".to_string()),
        Just("aucune modification".to_string()),
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
    fn ladder_never_panics(text in tricky_text()) {
        let out = extract_edit_ops(&text);
        if out.method == ExtractionMethod::EmptyResponse {
            prop_assert!(normalize_text(&text).is_empty());
        }
        if !out.method.succeeded() {
            prop_assert!(out.ops.is_empty());
        }
        prop_assert_eq!(extract_edit_ops(&text), out);
    }

    #[test]
    fn ladder_survives_arbitrary_unicode(text in any::<String>()) {
        let _ = extract_edit_ops(&text);
    }

    #[test]
    fn ladder_reads_back_any_strict_op_list(
        // Lines count from 1: a replace at line 0 is refused.
        ops in prop::collection::vec((1u64..5000, 0u64..20, "[a-zA-Z ]{0,20}", "[a-zA-Z ]{0,20}"), 0..8)
    ) {
        let list: Vec<Value> = ops
            .iter()
            .map(|(start, len, before, after)| serde_json::json!({
                "action": "replace", "line_start": start, "line_end": start + len,
                "before_text": before, "after_text": after,
            }))
            .collect();
        let out = extract_edit_ops(&serde_json::to_string(&list).unwrap());
        prop_assert_eq!(out.method, ExtractionMethod::JsonStrict);
        prop_assert_eq!(out.ops.len(), ops.len());
        for (op, (start, len, before, after)) in out.ops.iter().zip(&ops) {
            prop_assert_eq!(op.line_start, Some(*start));
            prop_assert_eq!(op.line_end, Some(start + len));
            prop_assert_eq!(op.before_text.as_deref(), Some(before.as_str()));
            prop_assert_eq!(op.after_text.as_deref(), Some(after.as_str()));
        }
    }

    #[test]
    fn a_field_that_is_not_text_is_never_turned_into_text(value in json_value()) {
        let op = serde_json::json!({"action": "replace", "line": 3, "before_text": "a", "after_text": value});
        let out = extract_edit_ops(&serde_json::to_string(&[op]).unwrap());
        prop_assert_eq!(out.method, ExtractionMethod::JsonStrict);
        match &value {
            Value::String(s) => prop_assert_eq!(out.ops[0].after_text.as_deref(), Some(s.as_str())),
            Value::Null => prop_assert_eq!(out.ops[0].after_text.as_deref(), None),
            _ => {
                prop_assert!(out.ops.is_empty());
                prop_assert_eq!(out.rejected_items.len(), 1);
                prop_assert!(out.rejected_items[0].reason.starts_with("after_text must be a string, found "));
            }
        }
    }
}

#[test]
fn pathological_inputs_do_not_overflow_the_stack() {
    for text in [
        "[".repeat(100_000),
        "{".repeat(100_000),
        format!("{}{}", "[".repeat(50_000), "]".repeat(50_000)),
        "- ".repeat(50_000),
        format!("BEGIN_EDIT_OPS{}", "{\"a\":".repeat(20_000)),
        "[RVW] action=".repeat(10_000),
        "'".repeat(100_000),
    ] {
        let _ = extract_edit_ops(&text);
    }
}
