//! Exactly-one JSON object extraction: purely structural, and a text with
//! several objects is rejected rather than guessed at, so the result never
//! depends on a heuristic choice.

use crate::scan::{top_level_regions, Region, OBJECT};
use koas_kernel_api::hash::{canonical_json, canonical_sha256};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::ops::Range;

/// The one JSON object found in a text.
#[derive(Debug, Clone, PartialEq)]
pub struct CanonicalBlock {
    /// The object's text exactly as it appeared (a clean JSON string).
    pub text: String,
    /// Where it appeared, as a byte range of the input.
    pub span: Range<usize>,
    /// The parsed object (a JSON object, never an array or scalar).
    pub value: Value,
    /// Its dict-level canonical JSON (sorted keys, compact).
    pub canonical: String,
    /// `sha256:` hash of [`CanonicalBlock::canonical`].
    pub hash: String,
}

/// Why a text was rejected. Each variant has a stable code
/// ([`CanonicalRejection::code`]) recorded in logs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "code", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CanonicalRejection {
    /// The text contains no `{` at all.
    #[error("NO_JSON: the text contains no JSON object")]
    NoJson,
    /// More than one top-level object parses; none is chosen (no
    /// first/last/largest heuristic).
    #[error(
        "AMBIGUOUS_MULTI_BLOCK: {count} top-level JSON objects found, exactly one is required"
    )]
    AmbiguousMultiBlock {
        /// How many valid top-level objects were found.
        count: usize,
    },
    /// Brace-delimited regions exist but none is valid JSON.
    #[error("PARSE_ERROR: {message}")]
    ParseError {
        /// The parser's message for the first failing region, with its offset.
        message: String,
    },
}

impl CanonicalRejection {
    /// The stable code: `NO_JSON`, `AMBIGUOUS_MULTI_BLOCK` or `PARSE_ERROR`.
    pub fn code(&self) -> &'static str {
        match self {
            CanonicalRejection::NoJson => "NO_JSON",
            CanonicalRejection::AmbiguousMultiBlock { .. } => "AMBIGUOUS_MULTI_BLOCK",
            CanonicalRejection::ParseError { .. } => "PARSE_ERROR",
        }
    }
}

/// Extracts exactly one top-level JSON object from `text` (normally the
/// output of [`crate::normalize_text`]).
///
/// The text is scanned for outermost `{…}` regions, honouring JSON string
/// literals so braces inside strings do not count. Then:
///
/// * exactly one region parses as JSON → accepted;
/// * more than one parses → [`CanonicalRejection::AmbiguousMultiBlock`];
/// * no `{` at all → [`CanonicalRejection::NoJson`];
/// * regions exist but none parses (or one never closes) →
///   [`CanonicalRejection::ParseError`].
///
/// Regions that do not parse are ignored when exactly one other region
/// does (prose such as "use {braces}" around a valid object is tolerated).
/// Only outermost regions are considered: an invalid region is not searched
/// for a valid object inside it. Purely structural, no heuristics.
pub fn extract_json_block(text: &str) -> Result<CanonicalBlock, CanonicalRejection> {
    let regions = top_level_regions(text, OBJECT);
    if regions.is_empty() {
        return Err(CanonicalRejection::NoJson);
    }
    let mut valid: Vec<(Range<usize>, Value)> = Vec::new();
    let mut first_error: Option<String> = None;
    for region in regions {
        match region {
            Region::Closed(range) => match serde_json::from_str::<Value>(&text[range.clone()]) {
                Ok(value) => valid.push((range, value)),
                Err(e) => {
                    first_error
                        .get_or_insert_with(|| format!("object at byte {}: {e}", range.start));
                }
            },
            Region::Unclosed(start) => {
                first_error
                    .get_or_insert_with(|| format!("object at byte {start} is never closed"));
            }
        }
    }
    match valid.len() {
        1 => {
            let (span, value) = valid.remove(0);
            let canonical = canonical_json(&value);
            let hash = canonical_sha256(&value);
            Ok(CanonicalBlock {
                text: text[span.clone()].to_string(),
                span,
                value,
                canonical,
                hash,
            })
        }
        0 => Err(CanonicalRejection::ParseError {
            message: first_error.unwrap_or_else(|| "no valid JSON object".to_string()),
        }),
        count => Err(CanonicalRejection::AmbiguousMultiBlock { count }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_one_object_wrapped_in_prose_and_fences() {
        let text = "Here you go:\n```json\n{\"ops\": [], \"note\": \"a } brace\"}\n```\nDone.";
        let block = extract_json_block(text).unwrap();
        assert_eq!(block.value["note"], "a } brace");
        assert_eq!(block.canonical, r#"{"note":"a } brace","ops":[]}"#);
        assert_eq!(&text[block.span.clone()], block.text);
    }

    #[test]
    fn rejects_two_objects_as_ambiguous() {
        let err = extract_json_block(r#"{"a": 1}\n{"a": 2}"#).unwrap_err();
        assert_eq!(err, CanonicalRejection::AmbiguousMultiBlock { count: 2 });
        assert_eq!(err.code(), "AMBIGUOUS_MULTI_BLOCK");
    }

    #[test]
    fn rejects_text_without_braces() {
        assert_eq!(
            extract_json_block("no changes").unwrap_err(),
            CanonicalRejection::NoJson
        );
        assert_eq!(
            extract_json_block("").unwrap_err(),
            CanonicalRejection::NoJson
        );
    }

    #[test]
    fn rejects_broken_objects_with_a_parse_error() {
        let err = extract_json_block("{\"a\": 1,}").unwrap_err();
        assert_eq!(err.code(), "PARSE_ERROR");
        let err = extract_json_block("start {\"a\": 1").unwrap_err();
        assert_eq!(
            err,
            CanonicalRejection::ParseError {
                message: "object at byte 6 is never closed".into()
            }
        );
    }

    #[test]
    fn invalid_prose_braces_beside_one_valid_object_are_ignored() {
        let block = extract_json_block("use {braces} here: {\"ok\": true}").unwrap();
        assert_eq!(block.value["ok"], true);
    }

    #[test]
    fn objects_inside_an_array_count_separately() {
        let err = extract_json_block(r#"[{"a":1},{"b":2}]"#).unwrap_err();
        assert_eq!(err, CanonicalRejection::AmbiguousMultiBlock { count: 2 });
    }

    #[test]
    fn rejection_serialises_with_its_code() {
        let v = serde_json::to_value(CanonicalRejection::AmbiguousMultiBlock { count: 3 }).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"code": "AMBIGUOUS_MULTI_BLOCK", "count": 3})
        );
    }
}
