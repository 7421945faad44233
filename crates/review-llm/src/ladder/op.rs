//! Raw edit proposals as the model wrote them, before the kernel assigns
//! IDs, hashes and defaults.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

/// What an edit proposal asks for: the four actions a review may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditAction {
    /// Replace `before_text` at the target lines with `after_text`.
    Replace,
    /// Insert `after_text` after the target line range.
    Insert,
    /// Remove the text at the target lines.
    Delete,
    /// Change nothing; record a finding.
    FlagOnly,
}

impl EditAction {
    /// Parses an action name, accepting the synonyms models commonly use
    /// (`modify`, `edit`, `fix` → replace; `add` → insert; `remove` →
    /// delete; `flag`, `note`, `comment` → flag_only). Case-insensitive.
    pub fn parse(name: &str) -> Option<EditAction> {
        let lower = name.trim().to_ascii_lowercase().replace(['-', ' '], "_");
        Some(match lower.as_str() {
            "replace" | "modify" | "edit" | "fix" | "rewrite" | "substitute" | "change" => {
                EditAction::Replace
            }
            "insert" | "add" | "append" => EditAction::Insert,
            "delete" | "remove" | "drop" => EditAction::Delete,
            "flag_only" | "flag" | "flagonly" | "note" | "comment" | "warn" => EditAction::FlagOnly,
            _ => return None,
        })
    }

    /// The canonical name (`replace`, `insert`, `delete`, `flag_only`).
    pub fn as_str(self) -> &'static str {
        match self {
            EditAction::Replace => "replace",
            EditAction::Insert => "insert",
            EditAction::Delete => "delete",
            EditAction::FlagOnly => "flag_only",
        }
    }
}

/// One raw edit proposal extracted from model output.
///
/// Every field but `action` is optional: the kernel fills defaults,
/// computes `before_hash` from the document and allocates the `RVW-NNNN`
/// id, so a model can never choose or collide change ids. Nothing here is
/// trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawEditOp {
    /// The requested action, after synonyms are mapped (see
    /// [`EditAction::parse`]).
    pub action: EditAction,
    /// First target line (1-based, as the model wrote it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_start: Option<u64>,
    /// Last target line (1-based, inclusive); the same as `line_start` when
    /// the model named a single line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_end: Option<u64>,
    /// The text the model says is there now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_text: Option<String>,
    /// The text the model proposes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_text: Option<String>,
    /// The model's reason for the change, shown to the reviewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
    /// Category such as `terminology`, `typo`, `style`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Severity as the model wrote it (`minor`, `attention`, `deletion`,
    /// `critical`…); not checked here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
}

impl RawEditOp {
    /// An op with only an action.
    pub fn new(action: EditAction) -> Self {
        RawEditOp {
            action,
            line_start: None,
            line_end: None,
            before_text: None,
            after_text: None,
            rationale: None,
            kind: None,
            severity: None,
        }
    }

    /// Reads an op from a JSON/YAML object, tolerating the field names
    /// models commonly use, but never their types: a field's value is
    /// read as written or the op is refused with a reason.
    ///
    /// Of each group of synonyms (`after_text`, `after`, `new_text`, …),
    /// the first key present with a non-`null` value is the one read, and
    /// only it is checked. A text field (action, before/after text,
    /// rationale, kind, severity) must be a JSON string; a single-line key
    /// (`line_start`, `start`, `line_end`, …) a whole number or a string of
    /// digits (`"12"` is the number 12); a range key (`line`, `lines`,
    /// `line_range`, `range`) one of those, a range string (`"12-14"`) or a
    /// list of one or two line numbers. Lines count from 1; 0 is accepted
    /// only for an insert (at the top).
    ///
    /// # Errors
    ///
    /// [`OpReadError::NotAnOp`] when the value is not an object or names
    /// no recognisable action (and carries no before/after pair from which
    /// `replace` is inferred); [`OpReadError::WrongType`] when it is an op
    /// but a field it uses has the wrong type or is not a line number.
    pub fn from_value(value: &Value) -> Result<RawEditOp, OpReadError> {
        let Some(obj) = value.as_object() else {
            return Err(OpReadError::NotAnOp(format!(
                "{} is not an object",
                describe(value)
            )));
        };
        // Whether this is an op is decided first, so that an object that
        // names no action is skipped, not refused for its other fields.
        let action_field = first_present(obj, ACTION_KEYS);
        let before_field = first_present(obj, BEFORE_KEYS);
        let after_field = first_present(obj, AFTER_KEYS);
        let action = match action_field {
            Some((_, Value::String(name))) => EditAction::parse(name).ok_or_else(|| {
                OpReadError::NotAnOp(format!("unknown action {}", clip_quoted(name)))
            })?,
            Some((key, other)) => return Err(wrong_text("", key, other)),
            None if before_field.is_some() && after_field.is_some() => EditAction::Replace,
            None => {
                return Err(OpReadError::NotAnOp(
                    "no action and no before/after pair".to_owned(),
                ))
            }
        };
        let insert = action == EditAction::Insert;
        let text = |field: Option<(&str, &Value)>| -> Result<Option<String>, OpReadError> {
            match field {
                None => Ok(None),
                Some((_, Value::String(s))) => Ok(Some(s.clone())),
                Some((key, other)) => Err(wrong_text("", key, other)),
            }
        };
        let before_text = text(before_field)?;
        let after_text = text(after_field)?;
        let rationale = text(first_present(obj, RATIONALE_KEYS))?;
        let kind = text(first_present(obj, KIND_KEYS))?;
        let severity = text(first_present(obj, SEVERITY_KEYS))?;
        let (mut line_start, mut line_end) = lines_of(obj, "", insert)?;
        if line_start.is_none() {
            if let Some(Value::Object(target)) = obj.get("target") {
                (line_start, line_end) = lines_of(target, "target.", insert)?;
            }
        }
        Ok(RawEditOp {
            action,
            line_start,
            line_end: line_end.or(line_start),
            before_text,
            after_text,
            rationale,
            kind,
            severity,
        })
    }
}

/// Why a JSON/YAML value is not read as a [`RawEditOp`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OpReadError {
    /// Not an op at all: not an object, or an object naming no
    /// recognisable action. The ladder counts these as skipped items.
    #[error("not an edit op: {0}")]
    NotAnOp(String),
    /// An op, but a field it uses holds a value of the wrong type or no
    /// line number, e.g. `after_text must be a string, found the number
    /// 12345`. The ladder reports these as rejected items.
    #[error("{0}")]
    WrongType(String),
}

const ACTION_KEYS: &[&str] = &["action", "op", "operation", "type"];
const BEFORE_KEYS: &[&str] = &["before_text", "before", "old_text", "old", "original"];
const AFTER_KEYS: &[&str] = &[
    "after_text",
    "after",
    "new_text",
    "new",
    "replacement",
    "text",
];
const RATIONALE_KEYS: &[&str] = &[
    "rationale",
    "reason",
    "explanation",
    "why",
    "note",
    "comment",
];
const KIND_KEYS: &[&str] = &["kind", "category"];
const SEVERITY_KEYS: &[&str] = &["severity", "level", "priority"];
const START_KEYS: &[&str] = &["line_start", "start_line", "start", "from_line"];
const END_KEYS: &[&str] = &["line_end", "end_line", "end", "to_line"];
/// Keys that may hold a whole range; `line` is among them because models
/// write `"line": "3-4"` as often as `"line": 3`.
const RANGE_KEYS: &[&str] = &["lines", "line", "line_range", "range"];

/// The first of `keys` present with a non-`null` value (`null` is how
/// models write "absent").
fn first_present<'a>(
    obj: &'a Map<String, Value>,
    keys: &[&'static str],
) -> Option<(&'static str, &'a Value)> {
    keys.iter()
        .find_map(|k| obj.get(*k).filter(|v| !v.is_null()).map(|v| (*k, v)))
}

/// The action an op object names, when it names one as text.
pub(crate) fn written_action(value: &Value) -> Option<String> {
    let obj = value.as_object()?;
    match first_present(obj, ACTION_KEYS)? {
        (_, Value::String(name)) => Some(name.clone()),
        _ => None,
    }
}

fn wrong_text(prefix: &str, key: &str, found: &Value) -> OpReadError {
    OpReadError::WrongType(format!(
        "{prefix}{key} must be a string, found {}",
        describe(found)
    ))
}

/// Longest rendering of a found value in a reason, in characters.
const SHOWN_CHARS: usize = 40;

fn clip(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn clip_quoted(text: &str) -> String {
    format!("{:?}", clip(text))
}

/// A value as a reason names it: `the number 12345`, `the list [3]`.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {}", clip_quoted(s)),
        Value::Array(_) => format!("the list {}", clip(&value.to_string())),
        Value::Object(_) => format!("an object {}", clip(&value.to_string())),
    }
}

/// A line number as the model wrote it: a whole number, or a string of
/// digits (models quote numbers; `"12"` is read as 12, not converted from
/// something else).
fn line_number(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => {
            let digits = s.trim();
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                digits.parse().ok()
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Refuses line 0 except for an insert, where it means "at the top".
fn check_zero(prefix: &str, key: &str, line: u64, insert: bool) -> Result<u64, OpReadError> {
    if line == 0 && !insert {
        return Err(OpReadError::WrongType(format!(
            "{prefix}{key} must be a line number, found the number 0 (lines count from 1; 0 is only for an insert at the top)"
        )));
    }
    Ok(line)
}

/// The first of `keys` present, as a line number.
fn single_line(
    obj: &Map<String, Value>,
    keys: &[&'static str],
    prefix: &str,
    insert: bool,
) -> Result<Option<u64>, OpReadError> {
    let Some((key, value)) = first_present(obj, keys) else {
        return Ok(None);
    };
    match line_number(value) {
        Some(line) => check_zero(prefix, key, line, insert).map(Some),
        None => Err(OpReadError::WrongType(format!(
            "{prefix}{key} must be a line number, found {}",
            describe(value)
        ))),
    }
}

/// A range key's value: a line number, `"12-14"`, or `[12, 14]` / `[12]`.
fn range_of(
    key: &str,
    value: &Value,
    prefix: &str,
    insert: bool,
) -> Result<(u64, Option<u64>), OpReadError> {
    let range = match value {
        Value::Array(items) if (1..=2).contains(&items.len()) => {
            let lines: Option<Vec<u64>> = items.iter().map(line_number).collect();
            lines.map(|l| (l[0], l.get(1).copied()))
        }
        Value::String(s) => parse_line_range(s).map(|(a, b)| (a, Some(b))),
        Value::Number(_) => line_number(value).map(|n| (n, None)),
        _ => None,
    };
    let Some((start, end)) = range else {
        return Err(OpReadError::WrongType(format!(
            "{prefix}{key} must be a line number or a range of two, found {}",
            describe(value)
        )));
    };
    check_zero(prefix, key, start, insert)?;
    if let Some(end) = end {
        check_zero(prefix, key, end, insert)?;
    }
    Ok((start, end))
}

/// Line range from `line_start`/`line_end` (and synonyms) or, when no
/// start key is present, from a range key. `prefix` names the object in
/// reasons (`target.`).
fn lines_of(
    obj: &Map<String, Value>,
    prefix: &str,
    insert: bool,
) -> Result<(Option<u64>, Option<u64>), OpReadError> {
    let start = single_line(obj, START_KEYS, prefix, insert)?;
    let end = single_line(obj, END_KEYS, prefix, insert)?;
    if start.is_some() {
        return Ok((start, end));
    }
    match first_present(obj, RANGE_KEYS) {
        Some((key, value)) => {
            let (a, b) = range_of(key, value, prefix, insert)?;
            Ok((Some(a), b.or(end)))
        }
        None => Ok((None, end)),
    }
}

/// Parses "12", "12-14", "12–14", "12..14", "L12-L14" into an inclusive
/// range (end defaults to start). Every part must be digits: "-3", "12-"
/// and "+3" are not ranges (a sign or a missing bound is not read as a
/// line).
pub(crate) fn parse_line_range(s: &str) -> Option<(u64, u64)> {
    let cleaned: String = s
        .trim()
        .trim_start_matches(|c: char| c.eq_ignore_ascii_case(&'l'))
        .to_string();
    let parts: Vec<&str> = cleaned
        .split(['-', '–', '—', ':', ','])
        .flat_map(|p| p.split(".."))
        .map(|p| p.trim().trim_start_matches(['L', 'l']))
        .collect();
    let digits = |p: &str| -> Option<u64> {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        p.parse().ok()
    };
    let start = digits(parts.first()?)?;
    let end = match parts.get(1) {
        Some(p) => digits(p)?,
        None => start,
    };
    if parts.len() > 2 {
        return None;
    }
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_spec_schema() {
        let op = RawEditOp::from_value(&json!({
            "action": "replace",
            "target": {"line_start": 142, "line_end": 145},
            "before_text": "bandwith", "after_text": "bandwidth",
            "kind": "typo", "severity": "minor", "rationale": "spelling"
        }))
        .unwrap();
        assert_eq!(op.action, EditAction::Replace);
        assert_eq!((op.line_start, op.line_end), (Some(142), Some(145)));
        assert_eq!(op.after_text.as_deref(), Some("bandwidth"));
        assert_eq!(op.kind.as_deref(), Some("typo"));
    }

    #[test]
    fn tolerates_synonyms_and_line_strings() {
        let op = RawEditOp::from_value(&json!({"op": "Remove", "lines": "L7-L9", "reason": "dup"}))
            .unwrap();
        assert_eq!(op.action, EditAction::Delete);
        assert_eq!((op.line_start, op.line_end), (Some(7), Some(9)));
        assert_eq!(op.rationale.as_deref(), Some("dup"));
        let op = RawEditOp::from_value(&json!({"before": "a", "after": "b", "line": 3})).unwrap();
        assert_eq!(op.action, EditAction::Replace);
        assert_eq!((op.line_start, op.line_end), (Some(3), Some(3)));
    }

    #[test]
    fn rejects_non_ops() {
        for value in [
            json!("replace"),
            json!({"action": "explode"}),
            json!({"summary": "x"}),
            // No action: not an op, whatever its other fields hold.
            json!({"summary": "x", "line": [1, 2, 3]}),
        ] {
            assert!(
                matches!(RawEditOp::from_value(&value), Err(OpReadError::NotAnOp(_))),
                "{value}"
            );
        }
    }

    /// The reason `value` is refused for, which must be a wrong type.
    fn wrong_type(value: Value) -> String {
        match RawEditOp::from_value(&value) {
            Err(OpReadError::WrongType(reason)) => reason,
            other => panic!("{value} gave {other:?}"),
        }
    }

    #[test]
    fn text_fields_of_another_type_are_refused_not_converted() {
        let op = |after: Value| json!({"action": "replace", "line": 3, "after_text": after});
        let cases = [
            (
                json!(12345),
                "after_text must be a string, found the number 12345",
            ),
            (
                json!(true),
                "after_text must be a string, found the boolean true",
            ),
            (
                json!(["a"]),
                "after_text must be a string, found the list [\"a\"]",
            ),
            (
                json!({"text": "a"}),
                "after_text must be a string, found an object {\"text\":\"a\"}",
            ),
        ];
        for (after, reason) in cases {
            assert_eq!(wrong_type(op(after)), reason);
        }
        // Every text field, under the name the model used.
        assert_eq!(
            wrong_type(json!({"action": 3, "line": 1})),
            "action must be a string, found the number 3"
        );
        assert_eq!(
            wrong_type(json!({"before": 1.5, "after": "b"})),
            "before must be a string, found the number 1.5"
        );
        for key in [
            "rationale",
            "reason",
            "note",
            "kind",
            "category",
            "severity",
            "priority",
        ] {
            let reason = wrong_type(json!({"action": "flag", "line": 1, key: 2}));
            assert_eq!(
                reason,
                format!("{key} must be a string, found the number 2")
            );
        }
        // `null` is "absent".
        let op = RawEditOp::from_value(
            &json!({"action": "delete", "line": 2, "rationale": null, "kind": null}),
        )
        .unwrap();
        assert_eq!((op.rationale, op.kind), (None, None));
    }

    #[test]
    fn line_fields_must_hold_line_numbers() {
        let op = |line: Value| json!({"action": "delete", "line_start": line});
        let cases = [
            (
                json!([3]),
                "line_start must be a line number, found the list [3]",
            ),
            (
                json!(3.5),
                "line_start must be a line number, found the number 3.5",
            ),
            (
                json!(3.0),
                "line_start must be a line number, found the number 3.0",
            ),
            (
                json!(-2),
                "line_start must be a line number, found the number -2",
            ),
            (
                json!({"n": 3}),
                "line_start must be a line number, found an object {\"n\":3}",
            ),
            (
                json!("three"),
                "line_start must be a line number, found the string \"three\"",
            ),
            (
                json!("-2"),
                "line_start must be a line number, found the string \"-2\"",
            ),
            (
                json!(true),
                "line_start must be a line number, found the boolean true",
            ),
        ];
        for (line, reason) in cases {
            assert_eq!(wrong_type(op(line)), reason);
        }
        assert!(wrong_type(op(json!(0)))
            .starts_with("line_start must be a line number, found the number 0"));
        assert_eq!(
            wrong_type(json!({"action": "delete", "line_start": 2, "end": [4]})),
            "end must be a line number, found the list [4]"
        );
        assert_eq!(
            wrong_type(json!({"action": "delete", "target": {"line_start": "x"}})),
            "target.line_start must be a line number, found the string \"x\""
        );
        // Range keys: a list whose items are not line numbers, or of more
        // than two, is refused the same way.
        for (lines, found) in [
            (json!(["a", "b"]), "the list [\"a\",\"b\"]"),
            (json!([3, 4, 5]), "the list [3,4,5]"),
            (json!([]), "the list []"),
            (json!("12-"), "the string \"12-\""),
            (json!(2.5), "the number 2.5"),
        ] {
            assert_eq!(
                wrong_type(json!({"action": "delete", "lines": lines})),
                format!("lines must be a line number or a range of two, found {found}")
            );
        }
    }

    #[test]
    fn good_line_forms_are_read() {
        let lines = |value: Value| {
            let op = RawEditOp::from_value(&value).unwrap();
            (op.line_start, op.line_end)
        };
        // A string of digits is the same number (read, not converted).
        assert_eq!(
            lines(json!({"action": "delete", "line_start": "12"})),
            (Some(12), Some(12))
        );
        assert_eq!(
            lines(json!({"action": "delete", "start": " 12 ", "end": 14})),
            (Some(12), Some(14))
        );
        assert_eq!(
            lines(json!({"action": "delete", "lines": "12-14"})),
            (Some(12), Some(14))
        );
        assert_eq!(
            lines(json!({"action": "delete", "lines": [12, 14]})),
            (Some(12), Some(14))
        );
        assert_eq!(
            lines(json!({"action": "delete", "lines": ["12", "14"]})),
            (Some(12), Some(14))
        );
        assert_eq!(
            lines(json!({"action": "delete", "lines": [12]})),
            (Some(12), Some(12))
        );
        assert_eq!(
            lines(json!({"action": "delete", "lines": 12})),
            (Some(12), Some(12))
        );
        assert_eq!(
            lines(json!({"action": "delete", "line": "3-4"})),
            (Some(3), Some(4))
        );
        // 0 is the top of the document, for an insert only.
        assert_eq!(
            lines(json!({"action": "insert", "line_start": 0, "line_end": 0, "after_text": "x"})),
            (Some(0), Some(0))
        );
        assert_eq!(
            lines(json!({"action": "insert", "lines": "0", "text": "x"})),
            (Some(0), Some(0))
        );
        assert_eq!(lines(json!({"action": "flag"})), (None, None));
    }

    #[test]
    fn line_ranges() {
        assert_eq!(parse_line_range("12"), Some((12, 12)));
        assert_eq!(parse_line_range("12–14"), Some((12, 14)));
        assert_eq!(parse_line_range("12..14"), Some((12, 14)));
        assert_eq!(parse_line_range("a-b"), None);
        assert_eq!(parse_line_range("1-2-3"), None);
        assert_eq!(parse_line_range(""), None);
        assert_eq!(parse_line_range("-3"), None);
        assert_eq!(parse_line_range("12-"), None);
        assert_eq!(parse_line_range("+3"), None);
        assert_eq!(parse_line_range("L7-L9"), Some((7, 9)));
    }
}
