//! Turning a parsed JSON/YAML value into edit ops.

use super::op::{written_action, OpReadError, RawEditOp};
use super::{Found, RejectedItem};
use serde_json::Value;

/// Object keys under which a list of ops is accepted.
pub const OPS_KEYS: &[&str] = &["ops", "edit_ops", "edits", "changes", "operations"];

/// Reads ops from `value`.
///
/// Accepts an array of op objects (an empty array means "no changes"), or
/// an object holding such an array under one of [`OPS_KEYS`]. With
/// `lenient`, also a single op object and an object whose only entry is an
/// array of ops.
pub(crate) fn ops_from_value(value: &Value, lenient: bool) -> Result<Found, String> {
    match value {
        Value::Array(items) => ops_from_items(items),
        Value::Object(obj) => {
            for key in OPS_KEYS {
                match obj.get(*key) {
                    Some(Value::Array(items)) => return ops_from_items(items),
                    Some(Value::Null) => return Ok(Found::ops(Vec::new(), 0)),
                    Some(_) => return Err(format!("`{key}` is not a list")),
                    None => {}
                }
            }
            if !lenient {
                return Err("an object without an ops list".to_string());
            }
            match RawEditOp::from_value(value) {
                Ok(op) => return Ok(Found::ops(vec![op], 0)),
                // A single op with a wrongly typed field: the model answered
                // with an op, so the level succeeds, with the rejection.
                Err(OpReadError::WrongType(reason)) => {
                    let mut found = Found::ops(Vec::new(), 0);
                    found.rejected.push(rejected(1, value, reason));
                    return Ok(found);
                }
                Err(OpReadError::NotAnOp(_)) => {}
            }
            if obj.len() == 1 {
                if let Some(Value::Array(items)) = obj.values().next() {
                    return ops_from_items(items);
                }
            }
            Err("an object that is neither an op nor an ops list".to_string())
        }
        Value::Null => Err("null".to_string()),
        _ => Err("a scalar, not a list of ops".to_string()),
    }
}

/// Reads each item: an op, a rejected op (wrong field type) or not an op
/// at all (skipped). A list of rejected ops still succeeds: the model
/// answered in the format, its ops were bad, and a later level would only
/// misread the same text.
fn ops_from_items(items: &[Value]) -> Result<Found, String> {
    let mut found = Found::ops(Vec::new(), 0);
    for (i, item) in items.iter().enumerate() {
        match RawEditOp::from_value(item) {
            Ok(op) => found.ops.push(op),
            Err(OpReadError::WrongType(reason)) => {
                found.rejected.push(rejected(i + 1, item, reason));
            }
            Err(OpReadError::NotAnOp(_)) => found.skipped += 1,
        }
    }
    if !items.is_empty() && found.ops.is_empty() && found.rejected.is_empty() {
        return Err(format!(
            "none of the {} list items is an edit op",
            items.len()
        ));
    }
    Ok(found)
}

fn rejected(index: usize, item: &Value, reason: String) -> RejectedItem {
    // The text the op was about, when it wrote one: a person reading the
    // plan sees which proposal was refused.
    let before_text = ["before_text", "before", "old_text", "old", "original"]
        .iter()
        .find_map(|k| item.get(*k).and_then(Value::as_str))
        .map(str::to_owned);
    RejectedItem {
        index,
        action: written_action(item),
        before_text,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wrapped_and_bare_lists() {
        let op = json!({"action": "delete", "line": 1});
        assert_eq!(
            ops_from_value(&json!([op.clone()]), false)
                .unwrap()
                .ops
                .len(),
            1
        );
        assert_eq!(
            ops_from_value(&json!({"edits": [op.clone(), 3]}), false)
                .unwrap()
                .skipped,
            1
        );
        assert!(ops_from_value(&op, false).is_err());
        assert_eq!(ops_from_value(&op, true).unwrap().ops.len(), 1);
        assert_eq!(
            ops_from_value(&json!({"x": [op]}), true).unwrap().ops.len(),
            1
        );
        assert!(ops_from_value(&json!(["a", "b"]), true).is_err());
        assert!(ops_from_value(&json!("text"), true).is_err());
    }

    #[test]
    fn wrongly_typed_items_are_rejected_with_their_place_and_reason() {
        let list = json!([
            {"action": "delete", "line": 1},
            "a bare string",
            {"action": "replace", "line": 3, "after_text": 12345},
            {"before": "a", "after": "b", "line_start": [3]},
        ]);
        let found = ops_from_value(&list, false).unwrap();
        assert_eq!(found.ops.len(), 1);
        assert_eq!(found.skipped, 1);
        let rejected: Vec<(usize, Option<&str>, &str)> = found
            .rejected
            .iter()
            .map(|r| (r.index, r.action.as_deref(), r.reason.as_str()))
            .collect();
        assert_eq!(
            rejected,
            [
                (
                    3,
                    Some("replace"),
                    "after_text must be a string, found the number 12345"
                ),
                (
                    4,
                    None,
                    "line_start must be a line number, found the list [3]"
                ),
            ]
        );
        // Every item rejected: still a success, with no ops.
        let found =
            ops_from_value(&json!([{"action": "flag", "line": 1, "kind": 7}]), false).unwrap();
        assert!(found.ops.is_empty());
        assert_eq!(found.rejected.len(), 1);
        // A single op object (lenient levels) is item 1.
        let found =
            ops_from_value(&json!({"action": "insert", "line": 2, "text": false}), true).unwrap();
        assert_eq!(found.rejected[0].index, 1);
        assert_eq!(
            found.rejected[0].reason,
            "text must be a string, found the boolean false"
        );
    }
}
