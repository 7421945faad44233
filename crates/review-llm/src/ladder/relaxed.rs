//! Level 2, `json_relaxed`: JSON as models actually write it.

use super::value_ops::ops_from_value;
use super::Found;
use koas_extract::fences;
use koas_extract::relaxed_json::to_strict_json;
use koas_extract::scan::{top_level_regions, Region, ARRAY, OBJECT};
use serde_json::Value;

/// Parses the payload after `to_strict_json`; a single op object is
/// accepted. With `search_prose`, also tries exactly one bracketed region
/// of the text (an array first, else an object).
pub(crate) fn extract(text: &str, search_prose: bool) -> Result<Found, String> {
    let payload = fences::payload(text);
    let whole = parse_relaxed(payload).and_then(|v| ops_from_value(&v, true));
    let whole_error = match whole {
        Ok(found) => return Ok(found),
        Err(e) => e,
    };
    if !search_prose {
        return Err(whole_error);
    }
    for delimiters in [ARRAY, OBJECT] {
        let regions = top_level_regions(payload, delimiters);
        let closed: Vec<_> = regions
            .iter()
            .filter_map(|r| match r {
                Region::Closed(range) => Some(range.clone()),
                Region::Unclosed(_) => None,
            })
            .collect();
        if closed.len() == 1 {
            let value = parse_relaxed(&payload[closed[0].clone()])?;
            return ops_from_value(&value, true);
        }
    }
    Err(format!(
        "{whole_error}; no single bracketed region in the text"
    ))
}

fn parse_relaxed(text: &str) -> Result<Value, String> {
    serde_json::from_str(&to_strict_json(text)).map_err(|e| format!("relaxed JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_op_and_prose_search() {
        let found = extract("{'action': 'flag', 'line': 3, 'reason': 'vague',}", true).unwrap();
        assert_eq!(found.ops.len(), 1);
        let found = extract(
            "I suggest these edits: [{'action':'delete','lines':'4-5'},] hope it helps",
            true,
        )
        .unwrap();
        assert_eq!(found.ops[0].line_end, Some(5));
        assert!(extract("see [a] and [b]", true).is_err());
        assert!(extract("edits: [{'action':'delete','line':4}]", false).is_err());
    }
}
