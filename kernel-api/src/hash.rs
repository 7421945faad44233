//! Content hashes and canonical JSON, as every koas crate writes them.
//!
//! Documents and content carry `sha256:` + 64 lowercase hex digits.
//! Canonical JSON (object keys sorted by their bytes, no insignificant
//! whitespace, strings exactly as given) makes two values that differ only
//! in key order or formatting hash the same: the runtime's cache keys and
//! the LLM answer canonicalizer both rely on it, and a kernel that hashes
//! its own JSON gets the host's hashes.

pub use crate::canonical::{canonicalize, to_canonical_vec};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The prefix every content hash carries.
pub const SHA256_PREFIX: &str = "sha256:";

/// `sha256:<hex>` of `bytes`.
///
/// ```
/// assert_eq!(
///     koas_kernel_api::hash::sha256(b"abc"),
///     "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// );
/// ```
pub fn sha256(bytes: impl AsRef<[u8]>) -> String {
    format_sha256(&Sha256::digest(bytes.as_ref()))
}

/// `sha256:<hex>` of the concatenation of `parts`, without building it.
pub fn sha256_of_parts<I, P>(parts: I) -> String
where
    I: IntoIterator<Item = P>,
    P: AsRef<[u8]>,
{
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_ref());
    }
    format_sha256(&hasher.finalize())
}

/// Formats a SHA-256 digest as `sha256:<hex>`.
pub fn format_sha256(digest: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(SHA256_PREFIX.len() + digest.len() * 2);
    out.push_str(SHA256_PREFIX);
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

/// The hex digits of a `sha256:` hash (the whole text when it has no
/// prefix).
pub fn hex_part(hash: &str) -> &str {
    hash.strip_prefix(SHA256_PREFIX).unwrap_or(hash)
}

/// Compares two hashes, tolerating a missing `sha256:` prefix, case and
/// surrounding whitespace (as a person or a model may write them).
pub fn same_hash(a: &str, b: &str) -> bool {
    let strip = |h: &str| hex_part(h.trim()).to_ascii_lowercase();
    strip(a) == strip(b)
}

/// The canonical JSON text of `value`.
///
/// ```
/// let v: serde_json::Value =
///     serde_json::from_str(r#"{ "b": [1, {"d": 1, "c": 2}], "a": "x y" }"#).unwrap();
/// assert_eq!(koas_kernel_api::hash::canonical_json(&v), r#"{"a":"x y","b":[1,{"c":2,"d":1}]}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // Only valid UTF-8 (JSON text from `serde_json`) was written.
    String::from_utf8(out).unwrap_or_default()
}

/// The canonical JSON bytes of `value`.
pub fn canonical_bytes(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    out
}

/// `sha256:<hex>` of [`canonical_json`] of `value`.
pub fn canonical_sha256(value: &Value) -> String {
    sha256(canonical_bytes(value))
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => {
            // Writing a scalar into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

fn write_string(text: &str, out: &mut Vec<u8>) {
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_vectors() {
        assert_eq!(
            sha256(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(sha256_of_parts(["a\n", "b"]), sha256(b"a\nb"));
        assert_eq!(hex_part("sha256:abcd"), "abcd");
        assert_eq!(hex_part("abcd"), "abcd");
    }

    #[test]
    fn same_hash_is_lenient_on_prefix_case_and_spaces() {
        let h = sha256(b"x");
        assert!(same_hash(&h, &format!(" {} ", hex_part(&h).to_uppercase())));
        assert!(!same_hash(&h, &sha256(b"y")));
    }

    #[test]
    fn canonical_json_ignores_key_order_and_keeps_strings() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":[1,{"d":2,"c":3}],"x":"é"}}"#).expect("json");
        let b = json!({"a": {"x": "é", "y": [1, {"c": 3, "d": 2}]}, "b": 1});
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":"é","y":[1,{"c":3,"d":2}]},"b":1}"#
        );
        assert_eq!(canonical_bytes(&a), canonical_bytes(&b));
        assert_eq!(canonical_sha256(&a), canonical_sha256(&b));
        assert_eq!(
            canonical_json(&json!({"t": "two  spaces\n\"quoted\""})),
            r#"{"t":"two  spaces\n\"quoted\""}"#
        );
        assert_ne!(canonical_sha256(&json!(1)), canonical_sha256(&json!("1")));
    }

    use proptest::prelude::*;

    /// Any JSON value: strings and keys with characters that must be
    /// escaped; floats only when asked (serde_json may read a float's
    /// text back one digit off, so a value with floats does not survive
    /// a round trip through text).
    pub(crate) fn json_value(floats: bool) -> BoxedStrategy<Value> {
        let mut leaves = vec![
            Just(Value::Null).boxed(),
            any::<bool>().prop_map(Value::Bool).boxed(),
            any::<i64>().prop_map(|n| json!(n)).boxed(),
            "[a-zé\\\"\n\u{1}]{0,8}".prop_map(Value::String).boxed(),
        ];
        if floats {
            leaves.push(any::<f64>().prop_map(|f| json!(f)).boxed());
        }
        proptest::strategy::Union::new(leaves)
            .prop_recursive(4, 48, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                    prop::collection::btree_map("[a-zé\"\\\\]{1,4}", inner, 0..6)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
            .boxed()
    }

    proptest! {
        /// Canonical bytes are valid JSON for the same value, a fixed point
        /// of parse-then-canonicalize, and independent of formatting.
        #[test]
        fn canonical_bytes_round_trip(v in json_value(false)) {
            let bytes = canonical_bytes(&v);
            let back: Value = serde_json::from_slice(&bytes).expect("canonical bytes parse");
            prop_assert_eq!(&back, &v);
            prop_assert_eq!(canonical_bytes(&back), bytes);
            let pretty = serde_json::to_string_pretty(&v).expect("ser");
            let reparsed: Value = serde_json::from_str(&pretty).expect("de");
            prop_assert_eq!(canonical_sha256(&reparsed), canonical_sha256(&v));
        }
    }
}
