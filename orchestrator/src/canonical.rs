//! Canonical JSON bytes: object keys sorted, no whitespace. Artifact ids
//! and cache keys hash these bytes, so equal values always hash equal
//! whatever order a kernel built its maps in.

use serde_json::Value;

/// Serializes `value` canonically.
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(&Value::String((*k).clone()), out);
                out.push(b':');
                if let Some(v) = map.get(*k) {
                    write(v, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(v, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    // Serializing a scalar into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// The blake3 hex digest of `value`'s canonical bytes.
pub fn hash(value: &Value) -> String {
    blake3::hash(&to_vec(value)).to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_matter() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":[1,{"d":2,"c":3}],"x":"é"}}"#).expect("json");
        let b = json!({"a": {"x": "é", "y": [1, {"c": 3, "d": 2}]}, "b": 1});
        assert_eq!(to_vec(&a), to_vec(&b));
        assert_eq!(
            String::from_utf8(to_vec(&b)).expect("utf8"),
            r#"{"a":{"x":"é","y":[1,{"c":3,"d":2}]},"b":1}"#
        );
        assert_eq!(hash(&a), hash(&b));
        assert_ne!(hash(&json!(1)), hash(&json!("1")));
    }

    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-zé\\\"\n]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{1,4}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Canonical bytes are valid JSON for the same value, and stable
        /// through a serialize/parse round trip.
        #[test]
        fn canonical_bytes_round_trip(v in json_value()) {
            let bytes = to_vec(&v);
            let back: Value = serde_json::from_slice(&bytes).expect("canonical bytes parse");
            prop_assert_eq!(&back, &v);
            prop_assert_eq!(to_vec(&back), bytes);
            let pretty = serde_json::to_string_pretty(&v).expect("ser");
            let reparsed: Value = serde_json::from_str(&pretty).expect("de");
            prop_assert_eq!(hash(&reparsed), hash(&v));
        }
    }
}
