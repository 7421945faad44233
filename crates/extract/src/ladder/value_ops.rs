//! Turning a parsed JSON/YAML value into edit ops.

use super::Found;
use crate::op::RawEditOp;
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
            if let Some(op) = RawEditOp::from_value(value) {
                return Ok(Found::ops(vec![op], 0));
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

fn ops_from_items(items: &[Value]) -> Result<Found, String> {
    let ops: Vec<RawEditOp> = items.iter().filter_map(RawEditOp::from_value).collect();
    if !items.is_empty() && ops.is_empty() {
        return Err(format!(
            "none of the {} list items is an edit op",
            items.len()
        ));
    }
    let skipped = items.len() - ops.len();
    Ok(Found::ops(ops, skipped))
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
}
