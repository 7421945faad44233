//! Planted-defect expectation files (`*.expected.json`) and how findings
//! are compared with them.
//!
//! ```json
//! { "document": "spec_en.md",
//!   "expected": [ { "kind": "ai_leftover", "line_from": 7, "line_to": 9,
//!                   "text": "As an AI language model", "stretch": false } ],
//!   "must_not_flag": [ { "line": 50, "text": "see_section: \"Section 12\"" } ] }
//! ```
//!
//! * An expected entry is **found** when a finding of its kind starts on a
//!   line in `line_from..=line_to`.
//! * A `must_not_flag` line is **violated** by a finding starting on it,
//!   unless that finding is explained by an expected entry (same kind, line
//!   in range) and does not quote the protected text: a finding whose
//!   message quotes (“…”) part of the `must_not_flag` text is about that
//!   text, so it violates the line even when explained.

use koas_review_schema::findings::{Finding, FindingKind};
use serde::{Deserialize, Serialize};

/// One planted defect that a finding must report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedFinding {
    /// The kind the finding must have.
    pub kind: FindingKind,
    /// First line (1-based) the finding may start on.
    pub line_from: u32,
    /// Last line (inclusive) the finding may start on.
    pub line_to: u32,
    /// The planted text (for people).
    #[serde(default)]
    pub text: String,
    /// `true` for findings that are hard to get.
    #[serde(default)]
    pub stretch: bool,
}

/// A line that must not be flagged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MustNotFlag {
    /// The line (1-based) no finding may start on.
    pub line: u32,
    /// The text on it that looks like a defect but is not.
    #[serde(default)]
    pub text: String,
}

/// The content of an `*.expected.json` file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expectations {
    /// The file name of the document the expectations are for, next to the
    /// `.expected.json` file.
    pub document: String,
    /// Findings that must be reported.
    pub expected: Vec<ExpectedFinding>,
    /// Lines that must not be flagged.
    #[serde(default)]
    pub must_not_flag: Vec<MustNotFlag>,
}

/// How findings compare with the expectations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    /// Expected entries no finding matched.
    pub missed: Vec<ExpectedFinding>,
    /// Must-not-flag lines with the findings that violate them.
    pub violations: Vec<(MustNotFlag, Finding)>,
    /// Findings that match no expected entry.
    pub unexpected: Vec<Finding>,
}

impl Comparison {
    /// `true` when nothing required was missed and nothing forbidden was
    /// reported (stretch entries count as required when `with_stretch`).
    pub fn passes(&self, with_stretch: bool) -> bool {
        self.violations.is_empty() && self.missed.iter().all(|m| m.stretch && !with_stretch)
    }
}

fn matches(e: &ExpectedFinding, f: &Finding) -> bool {
    e.kind == f.kind && (e.line_from..=e.line_to).contains(&f.line)
}

/// The texts a message quotes between “ and ”.
fn quoted_in_message(message: &str) -> Vec<&str> {
    message
        .split('“')
        .skip(1)
        .filter_map(|s| s.split('”').next())
        .filter(|s| !s.trim().is_empty())
        .collect()
}

/// Compares findings with expectations: which planted defects were
/// missed, which `must_not_flag` lines were hit, and which findings no
/// expectation explains.
pub fn compare(expectations: &Expectations, findings: &[Finding]) -> Comparison {
    let mut out = Comparison::default();
    for e in &expectations.expected {
        if !findings.iter().any(|f| matches(e, f)) {
            out.missed.push(e.clone());
        }
    }
    for f in findings {
        let explained = expectations.expected.iter().any(|e| matches(e, f));
        if !explained {
            out.unexpected.push(f.clone());
        }
        for m in expectations
            .must_not_flag
            .iter()
            .filter(|m| m.line == f.line)
        {
            let about_protected_text = quoted_in_message(&f.message)
                .iter()
                .any(|q| m.text.contains(q.trim()));
            if !explained || about_protected_text {
                out.violations.push((m.clone(), f.clone()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(kind: FindingKind, line: u32, message: &str) -> Finding {
        Finding::new(kind, "k", line, line, message, "")
    }

    fn expectations() -> Expectations {
        serde_json::from_value(serde_json::json!({
            "document": "d.md",
            "expected": [
                {"kind": "broken_reference", "line_from": 9, "line_to": 11, "text": "Section 7", "stretch": false},
                {"kind": "missing_target", "line_from": 20, "line_to": 20, "text": "x", "stretch": true}
            ],
            "must_not_flag": [{"line": 10, "text": "described in Section 2.1"}, {"line": 30, "text": "code"}]
        }))
        .expect("valid")
    }

    #[test]
    fn found_missed_and_stretch() {
        let e = expectations();
        let c = compare(
            &e,
            &[finding(
                FindingKind::BrokenReference,
                10,
                "“Section 7” points…",
            )],
        );
        assert!(c.violations.is_empty() && c.unexpected.is_empty());
        assert_eq!(c.missed.len(), 1);
        assert!(c.passes(false) && !c.passes(true));
    }

    #[test]
    fn must_not_flag_lines() {
        let e = expectations();
        let about_protected = compare(
            &e,
            &[finding(
                FindingKind::BrokenReference,
                10,
                "“Section 2.1” points…",
            )],
        );
        assert_eq!(about_protected.violations.len(), 1);
        let unexplained = compare(&e, &[finding(FindingKind::AiLeftover, 30, "m")]);
        assert_eq!(unexplained.violations.len(), 1);
        assert_eq!(unexplained.unexpected.len(), 1);
        assert!(!unexplained.passes(false));
    }
}
