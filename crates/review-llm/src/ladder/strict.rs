//! Level 1, `json_strict`: standard JSON, built on the canonicalizer.

use super::value_ops::ops_from_value;
use super::Found;
use koas_extract::{extract_json_block, fences};
use serde_json::Value;

/// Parses the (fence-stripped) payload as standard JSON; if it is not JSON
/// as a whole, extracts exactly one object with the canonicalizer.
pub(crate) fn extract(text: &str) -> Result<Found, String> {
    let payload = fences::payload(text);
    match serde_json::from_str::<Value>(payload) {
        Ok(value) => ops_from_value(&value, false),
        Err(whole_error) => match extract_json_block(payload) {
            Ok(block) => ops_from_value(&block.value, false),
            Err(rejection) => Err(format!(
                "not JSON ({whole_error}); canonicalizer: {rejection}"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_in_prose_is_found_by_the_canonicalizer() {
        let found = extract(
            "Here:\n{\"ops\": [{\"action\": \"insert\", \"line\": 2, \"text\": \"x\"}]}\nok",
        )
        .unwrap();
        assert_eq!(found.ops.len(), 1);
    }

    #[test]
    fn rejections_are_named() {
        let err = extract("{\"ops\": []} {\"ops\": []}").err().unwrap();
        assert!(err.contains("AMBIGUOUS_MULTI_BLOCK"), "{err}");
        let err = extract("[{'action': 'delete'}]").err().unwrap();
        assert!(
            err.contains("NO_JSON") || err.contains("PARSE_ERROR"),
            "{err}"
        );
    }
}
