//! The findings contract: problems a kernel found in its input, in one
//! shape every host understands.
//!
//! A kernel that reports problems declares the output that carries them
//! with [`crate::KernelSpec::findings_output`] and every kind of problem it
//! reports with [`crate::KernelSpec::finding_kind`]. The host then checks
//! that output when the kernel returns ([`check_artifact`]): a malformed
//! one fails *that* kernel, naming the field, instead of the kernel that
//! later reads it. Hosts show such findings next to their own, let users
//! disable a kind or change its severity by name, and list every declared
//! kind with its description.
//!
//! ```
//! use koas_kernel_api::findings::{KernelFinding, FindingsOutput, Severity};
//!
//! let mut found = FindingsOutput::new("heading_length");
//! found.push(
//!     KernelFinding::new("heading_too_long", 12, Severity::Warning, "heading of 74 characters (limit 60)")
//!         .evidence("A very long heading that goes on"),
//! );
//! assert_eq!(found.summary(), "1 finding: 1 heading_too_long");
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// How serious a finding is. Ordered: `Info < Warning < Error`.
///
/// In JSON, config files and on command lines it is `info`, `warning` or
/// `error`; `minor`, `attention` and `critical` are accepted as the same
/// three levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth a look; often a matter of style.
    #[serde(alias = "minor")]
    Info,
    /// Probably wrong; a reader may be misled.
    #[serde(alias = "attention")]
    Warning,
    /// Certainly wrong.
    #[serde(alias = "critical")]
    Error,
}

impl Severity {
    /// Every severity, lowest first.
    pub const ALL: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Error];

    /// The lowercase name used in JSON, config files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    /// The level named `text` (`info`, `warning`, `error`, or `minor`,
    /// `attention`, `deletion`, `critical`), ignoring case; `None` for any
    /// other word.
    pub fn parse_any(text: &str) -> Option<Severity> {
        match text.trim().to_ascii_lowercase().as_str() {
            "info" | "minor" => Some(Severity::Info),
            "warning" | "attention" | "deletion" => Some(Severity::Warning),
            "error" | "critical" => Some(Severity::Error),
            _ => None,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Severity {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Severity::parse_any(s).ok_or_else(|| {
            format!(
                "unknown severity {s:?} (expected info, warning or error; or minor, attention, critical)"
            )
        })
    }
}

/// One line a [`FindingFix`] changes: the line as it is and what it becomes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixLine {
    /// The line (1-based).
    pub line: u32,
    /// Its text as the kernel saw it, without the line ending. A host does
    /// not apply a fix whose `before` no longer matches the document.
    pub before: String,
    /// Its new text (no line ending), or `None` to remove the line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// A correction that certainly resolves a finding: whole-line changes, in
/// line order, on distinct lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingFix {
    /// What the fix does, in a few words.
    pub description: String,
    /// The lines it changes or removes (named `edits` in JSON).
    #[serde(rename = "edits")]
    pub lines: Vec<FixLine>,
}

fn first_column() -> u32 {
    1
}

/// One problem a kernel found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelFinding {
    /// What the problem is: one of the kinds the kernel declares
    /// ([`crate::KernelSpec::finding_kind`]), in snake_case.
    pub kind: String,
    /// First line of the problem (1-based).
    pub line: u32,
    /// Column of `line` where it starts (1-based, in characters); 1 when
    /// the whole line is meant.
    #[serde(default = "first_column")]
    pub column: u32,
    /// Last line (inclusive); `line` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_end: Option<u32>,
    /// How serious it is.
    pub severity: Severity,
    /// What is wrong, in words a person can act on without knowing the
    /// kernel.
    pub message: String,
    /// The text that shows the problem (a line or so).
    #[serde(default)]
    pub evidence: String,
    /// The correction, when one is certain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<FindingFix>,
}

impl KernelFinding {
    /// A finding of `kind` on `line`, for the whole line.
    pub fn new(
        kind: impl Into<String>,
        line: u32,
        severity: Severity,
        message: impl Into<String>,
    ) -> Self {
        KernelFinding {
            kind: kind.into(),
            line,
            column: 1,
            line_end: None,
            severity,
            message: message.into(),
            evidence: String::new(),
            fix: None,
        }
    }

    /// The same finding starting at `column` (1-based, in characters).
    pub fn column(mut self, column: u32) -> Self {
        self.column = column;
        self
    }

    /// The same finding ending on `line_end` (inclusive).
    pub fn line_end(mut self, line_end: u32) -> Self {
        self.line_end = Some(line_end);
        self
    }

    /// The same finding with the text that shows it.
    pub fn evidence(mut self, evidence: impl Into<String>) -> Self {
        self.evidence = evidence.into();
        self
    }

    /// The same finding with a certain correction.
    pub fn fix(mut self, fix: FindingFix) -> Self {
        self.fix = Some(fix);
        self
    }

    /// The last line of the problem.
    pub fn last_line(&self) -> u32 {
        self.line_end.unwrap_or(self.line)
    }
}

/// The JSON shape of a findings output: the kernel that made it and its
/// findings. Other fields may sit beside these two; hosts ignore them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingsOutput {
    /// The kernel that produced it.
    pub kernel: String,
    /// The findings, in any order (hosts sort them by line).
    pub findings: Vec<KernelFinding>,
}

impl FindingsOutput {
    /// An empty findings output of `kernel`.
    pub fn new(kernel: impl Into<String>) -> Self {
        FindingsOutput {
            kernel: kernel.into(),
            findings: Vec::new(),
        }
    }

    /// Adds a finding.
    pub fn push(&mut self, finding: KernelFinding) {
        self.findings.push(finding);
    }

    /// A one-line summary: `3 findings: 2 heading_too_long, 1 empty_title`.
    pub fn summary(&self) -> String {
        if self.findings.is_empty() {
            return "no findings".to_owned();
        }
        let mut by_kind = std::collections::BTreeMap::<&str, usize>::new();
        for f in &self.findings {
            *by_kind.entry(f.kind.as_str()).or_insert(0) += 1;
        }
        let parts: Vec<String> = by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let noun = if self.findings.len() == 1 {
            "finding"
        } else {
            "findings"
        };
        format!("{} {noun}: {}", self.findings.len(), parts.join(", "))
    }
}

/// The longest kind name, in bytes.
pub const MAX_KIND_LEN: usize = 64;

/// Checks a kind name: a lowercase ASCII letter, then lowercase letters,
/// digits and `_`, at most [`MAX_KIND_LEN`] bytes. (`/` is kept for the
/// `kernel/kind` form hosts use when two kernels declare the same kind.)
pub fn check_kind_name(kind: &str) -> Result<(), String> {
    let mut chars = kind.chars();
    let starts = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if starts && rest && kind.len() <= MAX_KIND_LEN {
        Ok(())
    } else {
        Err(format!(
            "kind {kind:?} must be snake_case: a lowercase letter, then lowercase letters, digits and '_' (at most {MAX_KIND_LEN} bytes)"
        ))
    }
}

/// Checks a findings output the way the host does when its kernel returns,
/// and reads it. `declared` are the kinds the kernel declares: a finding
/// of another kind is refused. The error names the field, e.g.
/// ``findings[3].line: expected a whole number ≥ 1, got "seven"``.
pub fn check_artifact(value: &Value, declared: &[&str]) -> Result<FindingsOutput, String> {
    check(value, Some(declared))
}

/// Checks and reads a findings output like [`check_artifact`], accepting
/// any well-formed kind: for a host reading an output whose producer's
/// declarations it does not have at hand.
pub fn check_shape(value: &Value) -> Result<FindingsOutput, String> {
    check(value, None)
}

fn check(value: &Value, declared: Option<&[&str]>) -> Result<FindingsOutput, String> {
    let object = value.as_object().ok_or_else(|| {
        format!(
            "expected an object with `kernel` and `findings`, got {}",
            shown(value)
        )
    })?;
    match object.get("kernel") {
        Some(Value::String(_)) => {}
        Some(other) => return Err(format!("kernel: expected a string, got {}", shown(other))),
        None => return Err("kernel: missing (the name of the kernel that made it)".to_owned()),
    }
    let list = match object.get("findings") {
        Some(Value::Array(list)) => list,
        Some(other) => return Err(format!("findings: expected an array, got {}", shown(other))),
        None => return Err("findings: missing".to_owned()),
    };
    for (i, item) in list.iter().enumerate() {
        check_finding(item, declared).map_err(|e| {
            let dot = if e.starts_with(':') { "" } else { "." };
            format!("findings[{i}]{dot}{e}")
        })?;
    }
    // Every field was checked above, so this only fails on a bug here.
    serde_json::from_value(value.clone()).map_err(|e| format!("does not read as findings: {e}"))
}

/// Checks one finding; the error starts with the field's name.
fn check_finding(item: &Value, declared: Option<&[&str]>) -> Result<(), String> {
    let Some(f) = item.as_object() else {
        // No field to name: the caller puts this right after the index.
        return Err(format!(": expected an object, got {}", shown(item)));
    };
    let kind = match f.get("kind") {
        Some(Value::String(k)) => k,
        Some(other) => return Err(format!("kind: expected a string, got {}", shown(other))),
        None => return Err("kind: missing".to_owned()),
    };
    check_kind_name(kind).map_err(|e| format!("kind: {e}"))?;
    if let Some(declared) = declared.filter(|d| !d.contains(&kind.as_str())) {
        let known = if declared.is_empty() {
            "the kernel declares no kind (KernelSpec::finding_kind)".to_owned()
        } else {
            format!("declared kinds: {}", declared.join(", "))
        };
        return Err(format!(
            "kind: {kind:?} is not declared by the kernel ({known})"
        ));
    }
    let line = positive(f, "line")?.ok_or_else(|| "line: missing".to_owned())?;
    positive(f, "column")?;
    if let Some(end) = positive(f, "line_end")? {
        if end < line {
            return Err(format!("line_end: {end} is before line {line}"));
        }
    }
    match f.get("severity") {
        Some(Value::String(s)) if Severity::parse_any(s).is_some() => {}
        Some(other) => {
            return Err(format!(
                "severity: expected \"info\", \"warning\" or \"error\", got {}",
                shown(other)
            ))
        }
        None => return Err("severity: missing".to_owned()),
    }
    for (field, required) in [("message", true), ("evidence", false)] {
        match f.get(field) {
            Some(Value::String(_)) => {}
            None if !required => {}
            None => return Err(format!("{field}: missing")),
            Some(other) => return Err(format!("{field}: expected a string, got {}", shown(other))),
        }
    }
    match f.get("fix") {
        None | Some(Value::Null) => Ok(()),
        Some(fix) => check_fix(fix).map_err(|e| format!("fix.{e}")),
    }
}

fn check_fix(fix: &Value) -> Result<(), String> {
    let Some(fix) = fix.as_object() else {
        return Err(format!("expected an object, got {}", shown(fix)));
    };
    if !matches!(fix.get("description"), Some(Value::String(_))) {
        return Err("description: expected a string".to_owned());
    }
    let Some(Value::Array(lines)) = fix.get("edits") else {
        return Err("edits: expected an array".to_owned());
    };
    let mut last = 0;
    for (i, l) in lines.iter().enumerate() {
        let Some(l) = l.as_object() else {
            return Err(format!("edits[{i}]: expected an object, got {}", shown(l)));
        };
        let line = positive(l, "line")
            .map_err(|e| format!("edits[{i}].{e}"))?
            .ok_or_else(|| format!("edits[{i}].line: missing"))?;
        if line <= last {
            return Err(format!(
                "edits[{i}].line: {line} is not after the previous line {last} (lines in order, each once)"
            ));
        }
        last = line;
        if !matches!(l.get("before"), Some(Value::String(_))) {
            return Err(format!("edits[{i}].before: expected a string"));
        }
        if !matches!(
            l.get("after"),
            None | Some(Value::Null) | Some(Value::String(_))
        ) {
            return Err(format!("edits[{i}].after: expected a string or null"));
        }
    }
    Ok(())
}

/// The value of `field` as a whole number ≥ 1 that fits a `u32`; `None`
/// when absent.
fn positive(object: &serde_json::Map<String, Value>, field: &str) -> Result<Option<u32>, String> {
    match object.get(field) {
        None => Ok(None),
        Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(n) if n >= 1 => Ok(Some(n)),
            _ => Err(format!(
                "{field}: expected a whole number ≥ 1, got {}",
                shown(v)
            )),
        },
    }
}

/// A value as shown in an error: its JSON text, cut after 60 characters.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 60 {
        text
    } else {
        let cut: String = text.chars().take(59).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(kind: &str) -> Value {
        json!({"kind": kind, "line": 3, "severity": "warning", "message": "m"})
    }

    #[test]
    fn a_finding_round_trips_and_defaults_its_optional_fields() {
        let mut a = FindingsOutput::new("k");
        a.push(
            KernelFinding::new("long", 2, Severity::Info, "m")
                .column(4)
                .line_end(3)
                .evidence("e"),
        );
        let v = serde_json::to_value(&a).expect("serializes");
        assert_eq!(check_artifact(&v, &["long"]), Ok(a));
        let bare = json!({"kernel": "k", "findings": [ok("long")]});
        let read = check_artifact(&bare, &["long"]).expect("valid");
        assert_eq!(read.findings[0].column, 1);
        assert_eq!(read.findings[0].last_line(), 3);
        assert_eq!(read.findings[0].evidence, "");
    }

    #[test]
    fn every_malformed_field_is_named() {
        let cases = [
            (json!([]), "expected an object with `kernel`"),
            (json!({"findings": []}), "kernel: missing"),
            (
                json!({"kernel": 1, "findings": []}),
                "kernel: expected a string",
            ),
            (json!({"kernel": "k"}), "findings: missing"),
            (
                json!({"kernel": "k", "findings": 2}),
                "findings: expected an array",
            ),
            (
                json!({"kernel": "k", "findings": [3]}),
                "findings[0]: expected an object, got 3",
            ),
        ];
        for (value, want) in cases {
            let err = check_artifact(&value, &["long"]).expect_err("malformed");
            assert!(err.starts_with(want), "{err} / {want}");
        }
        let finding_cases = [
            (
                json!({"line": "seven"}),
                "findings[0].line: expected a whole number ≥ 1, got \"seven\"",
            ),
            (
                json!({"line": 0}),
                "findings[0].line: expected a whole number ≥ 1, got 0",
            ),
            (
                json!({"line": 5_000_000_000u64}),
                "findings[0].line: expected a whole number",
            ),
            (
                json!({"column": -1}),
                "findings[0].column: expected a whole number ≥ 1, got -1",
            ),
            (
                json!({"line_end": 2}),
                "findings[0].line_end: 2 is before line 3",
            ),
            (
                json!({"severity": "fatal"}),
                "findings[0].severity: expected \"info\", \"warning\" or \"error\", got \"fatal\"",
            ),
            (
                json!({"message": null}),
                "findings[0].message: expected a string, got null",
            ),
            (
                json!({"evidence": ["x"]}),
                "findings[0].evidence: expected a string",
            ),
            (
                json!({"kind": "Long"}),
                "findings[0].kind: kind \"Long\" must be snake_case",
            ),
            (
                json!({"kind": "other"}),
                "findings[0].kind: \"other\" is not declared by the kernel (declared kinds: long)",
            ),
            (
                json!({"fix": {"description": "d", "edits": [{"line": 2, "before": "a"}, {"line": 2, "before": "b"}]}}),
                "findings[0].fix.edits[1].line: 2 is not after",
            ),
            (
                json!({"fix": {"edits": []}}),
                "findings[0].fix.description: expected a string",
            ),
        ];
        for (patch, want) in finding_cases {
            let mut finding = ok("long");
            if let (Some(f), Some(p)) = (finding.as_object_mut(), patch.as_object()) {
                f.extend(p.clone());
            }
            let value = json!({"kernel": "k", "findings": [ok("long"), finding]});
            let err = check_artifact(&value, &["long"]).expect_err("malformed");
            let want = want.replacen("findings[0]", "findings[1]", 1);
            assert!(err.starts_with(&want), "{err}\n  wanted {want}");
        }
        let missing = json!({"kernel": "k", "findings": [{"kind": "long"}]});
        assert_eq!(
            check_artifact(&missing, &["long"]),
            Err("findings[0].line: missing".to_owned())
        );
        let undeclared = json!({"kernel": "k", "findings": [ok("long")]});
        let err = check_artifact(&undeclared, &[]).expect_err("nothing declared");
        assert!(err.contains("declares no kind"), "{err}");
    }

    #[test]
    fn extra_fields_are_ignored() {
        let mut f = ok("long");
        if let Some(f) = f.as_object_mut() {
            f.insert("section_id".into(), json!("s1"));
        }
        let v = json!({"kernel": "k", "doc_hash": "sha256:x", "findings": [f]});
        assert!(check_artifact(&v, &["long"]).is_ok());
        // Without the declarations at hand, any well-formed kind reads.
        assert!(check_artifact(&v, &["short"]).is_err());
        assert!(check_shape(&v).is_ok());
    }

    #[test]
    fn severities_are_ordered_and_parse() {
        assert!(Severity::Info < Severity::Warning && Severity::Warning < Severity::Error);
        assert_eq!("CRITICAL".parse::<Severity>(), Ok(Severity::Error));
        assert!("fatal".parse::<Severity>().is_err());
        let v: Severity = serde_json::from_value(json!("attention")).expect("alias");
        assert_eq!(v, Severity::Warning);
    }

    #[test]
    fn kind_names_are_snake_case() {
        assert!(check_kind_name("heading_too_long").is_ok());
        assert!(check_kind_name("h2").is_ok());
        for bad in ["", "2h", "Heading", "a-b", "team/kind", &"a".repeat(65)] {
            assert!(check_kind_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_summary_counts_kinds() {
        let mut a = FindingsOutput::new("k");
        assert_eq!(a.summary(), "no findings");
        for kind in ["b", "a", "b"] {
            a.push(KernelFinding::new(kind, 1, Severity::Info, "m"));
        }
        assert_eq!(a.summary(), "3 findings: 1 a, 2 b");
    }
}
