//! Raw edit proposals as the model wrote them, before the kernel assigns
//! IDs, hashes and defaults.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
    /// models commonly use. Returns `None` when the value is not an object
    /// or names no recognisable action (and carries no before/after pair
    /// from which `replace` can be inferred).
    pub fn from_value(value: &Value) -> Option<RawEditOp> {
        let obj = value.as_object()?;
        let target = obj.get("target").and_then(Value::as_object);
        let before_text = text_field(
            obj,
            &["before_text", "before", "old_text", "old", "original"],
        );
        let after_text = text_field(
            obj,
            &[
                "after_text",
                "after",
                "new_text",
                "new",
                "replacement",
                "text",
            ],
        );
        let action = match text_field(obj, &["action", "op", "operation", "type"]) {
            Some(name) => EditAction::parse(&name)?,
            None if before_text.is_some() && after_text.is_some() => EditAction::Replace,
            None => return None,
        };
        let (mut line_start, mut line_end) = lines_of(obj);
        if line_start.is_none() {
            if let Some(t) = target {
                (line_start, line_end) = lines_of(t);
            }
        }
        Some(RawEditOp {
            action,
            line_start,
            line_end: line_end.or(line_start),
            before_text,
            after_text,
            rationale: text_field(
                obj,
                &[
                    "rationale",
                    "reason",
                    "explanation",
                    "why",
                    "note",
                    "comment",
                ],
            ),
            kind: text_field(obj, &["kind", "category"]),
            severity: text_field(obj, &["severity", "level", "priority"]),
        })
    }
}

/// The first present key among `keys` whose value is a string (or a
/// number / bool, rendered as text).
fn text_field(obj: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match obj.get(*k)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    })
}

/// Line range from `line_start`/`line_end`, `start`/`end`, `lines`
/// ("12-14", "12", [12, 14], 12) or `line`.
fn lines_of(obj: &Map<String, Value>) -> (Option<u64>, Option<u64>) {
    let start = ["line_start", "start_line", "start", "from_line"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(as_line));
    let end = ["line_end", "end_line", "end", "to_line"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(as_line));
    if start.is_some() {
        return (start, end);
    }
    for key in ["lines", "line", "line_range", "range"] {
        match obj.get(key) {
            Some(Value::Array(items)) => {
                let a = items.first().and_then(as_line);
                let b = items.get(1).and_then(as_line);
                if a.is_some() {
                    return (a, b);
                }
            }
            Some(Value::String(s)) => {
                if let Some(range) = parse_line_range(s) {
                    return (Some(range.0), Some(range.1));
                }
            }
            Some(v) => {
                if let Some(n) = as_line(v) {
                    return (Some(n), None);
                }
            }
            None => {}
        }
    }
    (None, end)
}

fn as_line(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Parses "12", "12-14", "12–14", "12..14", "L12-L14" into an inclusive
/// range (end defaults to start).
pub(crate) fn parse_line_range(s: &str) -> Option<(u64, u64)> {
    let cleaned: String = s
        .trim()
        .trim_start_matches(|c: char| c.eq_ignore_ascii_case(&'l'))
        .to_string();
    let parts: Vec<&str> = cleaned
        .split(['-', '–', '—', ':', ','])
        .flat_map(|p| p.split(".."))
        .map(|p| p.trim().trim_start_matches(['L', 'l']))
        .filter(|p| !p.is_empty())
        .collect();
    let start: u64 = parts.first()?.parse().ok()?;
    let end: u64 = match parts.get(1) {
        Some(p) => p.parse().ok()?,
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
        assert!(RawEditOp::from_value(&json!("replace")).is_none());
        assert!(RawEditOp::from_value(&json!({"action": "explode"})).is_none());
        assert!(RawEditOp::from_value(&json!({"summary": "x"})).is_none());
    }

    #[test]
    fn line_ranges() {
        assert_eq!(parse_line_range("12"), Some((12, 12)));
        assert_eq!(parse_line_range("12–14"), Some((12, 14)));
        assert_eq!(parse_line_range("12..14"), Some((12, 14)));
        assert_eq!(parse_line_range("a-b"), None);
        assert_eq!(parse_line_range("1-2-3"), None);
        assert_eq!(parse_line_range(""), None);
    }
}
