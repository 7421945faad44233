//! The canonicalizer's frozen self-test and source hash, recorded with
//! every session so a changed canonicalizer is visible in the metadata.

use super::json_block::extract_json_block;
use super::normalize::normalize_text;
use koas_kernel_api::hash::sha256;
use serde::{Deserialize, Serialize};

/// The source files whose bytes define the canonicalizer's behaviour.
const SOURCES: &[(&str, &str)] = &[
    ("scan.rs", include_str!("../scan.rs")),
    ("normalize.rs", include_str!("normalize.rs")),
    ("json_block.rs", include_str!("json_block.rs")),
    (
        "kernel-api/src/hash.rs",
        include_str!("../../../../kernel-api/src/hash.rs"),
    ),
];

/// One fixed self-test case: a name, a raw input and the expected outcome
/// (`OK` or a rejection code).
struct Case {
    name: &'static str,
    raw: &'static str,
    expect: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "bare_object",
        raw: r#"{"b": 2, "a": [1, 2.5, "x"]}"#,
        expect: "OK",
    },
    Case {
        name: "fenced_in_prose_crlf",
        raw: "Sure, here it is:\r\n```json\r\n{\"ops\": [], \"why\": \"fine\"}\r\n```\r\n",
        expect: "OK",
    },
    Case {
        name: "braces_inside_strings",
        raw: "  {\"t\": \"} { \\\" }\"}  ",
        expect: "OK",
    },
    Case {
        name: "interior_whitespace_kept",
        raw: "{\"t\": \"two  spaces\\tand\\nlines\"}\n\n\n",
        expect: "OK",
    },
    Case {
        name: "two_objects",
        raw: "{\"a\": 1}\n{\"a\": 2}",
        expect: "AMBIGUOUS_MULTI_BLOCK",
    },
    Case {
        name: "no_json",
        raw: "No changes are needed.",
        expect: "NO_JSON",
    },
    Case {
        name: "empty",
        raw: " \r\n\t ",
        expect: "NO_JSON",
    },
    Case {
        name: "trailing_comma",
        raw: "{\"a\": 1,}",
        expect: "PARSE_ERROR",
    },
    Case {
        name: "never_closed",
        raw: "{\"a\": {\"b\": 1}",
        expect: "PARSE_ERROR",
    },
];

/// The result of a passing self-test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelfTestReport {
    /// Number of fixed cases run.
    pub cases: usize,
    /// `sha256:` hash of the self-test's complete output (one line per
    /// case: name, outcome, canonical JSON or rejection message). Recorded
    /// in the run metadata; it changes whenever the canonicalizer's
    /// behaviour on the fixed inputs changes.
    pub output_hash: String,
    /// `sha256:` hash of the canonicalizer's source files.
    pub source_hash: String,
}

/// A self-test case produced an outcome other than the frozen expectation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("canonicalizer self-test case `{case}` produced {actual}, expected {expected}")]
pub struct SelfTestError {
    /// The name of the failing case.
    pub case: String,
    /// The frozen expected outcome: `OK` or a rejection code.
    pub expected: String,
    /// The outcome the current code produced.
    pub actual: String,
}

/// Runs the fixed self-test: every case through [`normalize_text`] and
/// [`extract_json_block`], each outcome checked against its frozen
/// expectation, and the whole output hashed.
pub fn self_test() -> Result<SelfTestReport, SelfTestError> {
    let mut output = String::new();
    for case in CASES {
        let normalized = normalize_text(case.raw);
        let (code, detail) = match extract_json_block(&normalized) {
            Ok(block) => ("OK", block.canonical),
            Err(rejection) => (rejection.code(), rejection.to_string()),
        };
        if code != case.expect {
            return Err(SelfTestError {
                case: case.name.to_string(),
                expected: case.expect.to_string(),
                actual: code.to_string(),
            });
        }
        output.push_str(&format!("{}\t{}\t{}\n", case.name, code, detail));
    }
    Ok(SelfTestReport {
        cases: CASES.len(),
        output_hash: sha256(output.as_bytes()),
        source_hash: canonicalizer_source_hash(),
    })
}

/// `sha256:` hash of the canonicalizer's source files, as compiled into
/// this binary (file name and contents of each, in a fixed order).
pub fn canonicalizer_source_hash() -> String {
    let mut all = Vec::new();
    for (name, text) in SOURCES {
        all.extend_from_slice(name.as_bytes());
        all.push(0);
        all.extend_from_slice(text.as_bytes());
        all.push(0);
    }
    sha256(&all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_test_passes_and_is_stable() {
        let a = self_test().unwrap();
        let b = self_test().unwrap();
        assert_eq!(a, b);
        assert_eq!(a.cases, CASES.len());
        assert!(a.output_hash.starts_with("sha256:"));
        assert_ne!(a.output_hash, a.source_hash);
    }

    #[test]
    fn every_rejection_code_is_exercised() {
        for code in ["OK", "NO_JSON", "AMBIGUOUS_MULTI_BLOCK", "PARSE_ERROR"] {
            assert!(CASES.iter().any(|c| c.expect == code), "{code} not covered");
        }
    }
}
