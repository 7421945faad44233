//! Dict-level canonical JSON and its hash.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The canonical text of a JSON value: object keys sorted by their UTF-8
/// bytes, no insignificant whitespace, string values preserved exactly.
///
/// Two values that differ only in key order or formatting have the same
/// canonical text. Independent of serde_json's `preserve_order` feature.
///
/// ```
/// let v: serde_json::Value = serde_json::from_str(r#"{ "b": [1, {"d": 1, "c": 2}], "a": "x y" }"#).unwrap();
/// assert_eq!(koas_extract::canonical_json(&v), r#"{"a":"x y","b":[1,{"c":2,"d":1}]}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// `sha256:<hex>` of [`canonical_json`] of `value`.
pub fn canonical_hash(value: &Value) -> String {
    sha256_prefixed(canonical_json(value).as_bytes())
}

/// `sha256:<hex>` of `bytes`, the content-hash form the spec uses.
pub fn sha256_prefixed(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_scalar(&Value::String(key.clone()), out);
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(value: &Value, out: &mut String) {
    // Serialising a scalar Value cannot fail; fall back to null defensively.
    match serde_json::to_string(value) {
        Ok(text) => out.push_str(&text),
        Err(_) => out.push_str("null"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_spacing_do_not_matter() {
        let a: Value = serde_json::from_str(r#"{"z":1,"a":{"y":[true,null],"b":"s"}}"#).unwrap();
        let b: Value =
            serde_json::from_str("{ \"a\" : { \"b\":\"s\", \"y\" : [ true , null ] }, \"z\" : 1 }")
                .unwrap();
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(canonical_hash(&a), canonical_hash(&b));
    }

    #[test]
    fn string_values_are_preserved_exactly() {
        let v = json!({"t": "two  spaces\n\"quoted\" é"});
        assert_eq!(canonical_json(&v), r#"{"t":"two  spaces\n\"quoted\" é"}"#);
    }

    #[test]
    fn hash_has_the_sha256_prefix_and_known_value() {
        // sha256("") is a well-known constant.
        assert_eq!(
            sha256_prefixed(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
