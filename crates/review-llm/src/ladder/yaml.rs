//! Level 3, `yaml`: models that answer in YAML.

use super::value_ops::ops_from_value;
use super::Found;
use koas_extract::fences;
use koas_extract::yaml::yaml_to_json;
use serde_json::Value;

/// Parses the (fence-stripped) payload as one YAML document holding ops;
/// the bounds (size, depth, no anchors) are `yaml_to_json`'s.
pub(crate) fn extract(text: &str) -> Result<Found, String> {
    let payload = fences::payload(text);
    let value = yaml_to_json(payload).map_err(|e| e.to_string())?;
    if !matches!(value, Value::Array(_) | Value::Object(_)) {
        return Err("YAML scalar, not a list of ops".to_string());
    }
    ops_from_value(&value, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_list_of_op_mappings() {
        let found = extract(
            "- action: replace\n  lines: 12-14\n  before: \"colour\"\n  after: color\n- action: flag\n  line: 20\n  rationale: unclear\n",
        )
        .unwrap();
        assert_eq!(found.ops.len(), 2);
        assert_eq!(found.ops[0].line_start, Some(12));
        assert_eq!(found.ops[1].rationale.as_deref(), Some("unclear"));
    }

    #[test]
    fn reads_a_wrapped_list_and_a_single_op() {
        assert_eq!(
            extract("edits:\n  - action: delete\n    line: 3\n")
                .unwrap()
                .ops
                .len(),
            1
        );
        assert_eq!(
            extract("action: insert\nline: 4\ntext: hello\n")
                .unwrap()
                .ops
                .len(),
            1
        );
    }

    #[test]
    fn refuses_scalars_anchors_and_deep_nesting() {
        assert!(extract("just some prose").is_err());
        assert!(extract("a: &x [1]\nb: *x\n").is_err());
        assert!(extract(&"- ".repeat(200)).is_err());
        assert!(extract(&format!("{}1{}", "[".repeat(300), "]".repeat(300))).is_err());
    }
}
