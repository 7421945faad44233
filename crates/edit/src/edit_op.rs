//! Building a typed [`EditOp`] from untrusted JSON, under the review policy
//! (silent tier, severity → alert).
//!
//! Ops come from outside (an ops file, a person, an LLM planner): nothing in
//! them is trusted. Their `id` is replaced by an engine-allocated
//! [`ChangeId`] (the original is kept as `source_id`), missing fields get
//! their defaults, and every default that was filled is reported, so the
//! apply log shows what the engine assumed.

use koas_review_schema::edit_op::{Action, Alert, EditOp, ReviewNote, ReviewPolicy, Target};

use serde_json::Value;
use thiserror::Error;

use koas_review_schema::change_id::ChangeId;
use koas_review_schema::rejection::RejectClass;

/// An op that cannot even be read as an EditOp.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{reason}")]
pub struct SchemaProblem {
    /// Rejection class to report.
    pub class: RejectClass,
    /// A reason a person can act on.
    pub reason: String,
}

fn problem(class: RejectClass, reason: impl Into<String>) -> SchemaProblem {
    SchemaProblem {
        class,
        reason: reason.into(),
    }
}

/// Reading an ops file failed as a whole.
#[derive(Debug, Error)]
pub enum OpsFileError {
    /// The file does not parse as JSON.
    #[error("the ops file is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// JSON, but not a list of ops.
    #[error("the ops file must be a JSON array of edit ops, or an object with an \"ops\" array")]
    Shape,
}

/// Reads an ops file: a JSON array of ops, or an object holding an `ops`
/// (or `edit_ops`) array, as an edit plan does. Each op stays raw JSON so a
/// bad op is rejected on its own instead of failing the whole file.
pub fn parse_ops_file(text: &str) -> Result<Vec<Value>, OpsFileError> {
    let value: Value = serde_json::from_str(text)?;
    match value {
        Value::Array(ops) => Ok(ops),
        Value::Object(mut map) => match map.remove("ops").or_else(|| map.remove("edit_ops")) {
            Some(Value::Array(ops)) => Ok(ops),
            _ => Err(OpsFileError::Shape),
        },
        _ => Err(OpsFileError::Shape),
    }
}

fn opt_str(
    obj: &serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<String>, SchemaProblem> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(problem(
            RejectClass::Other,
            format!("field '{key}' must be a string, found {other}"),
        )),
    }
}

fn opt_bool(
    obj: &serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<bool>, SchemaProblem> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(other) => Err(problem(
            RejectClass::Other,
            format!("field '{key}' must be true or false, found {other}"),
        )),
    }
}

fn opt_line(
    obj: &serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<usize>, SchemaProblem> {
    let bad = |v: &Value| {
        problem(
            RejectClass::Range,
            format!("'{key}' must be a line number (a whole number ≥ 0), found {v}"),
        )
    };
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Number(n)) => n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| bad(v)),
        // A quoted number is the same number; a sign, a fraction or
        // anything else is not a line.
        Some(v @ Value::String(s)) => {
            let digits = s.trim();
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(v));
            }
            digits.parse().map(Some).map_err(|_| bad(v))
        }
        Some(v) => Err(bad(v)),
    }
}

/// An op read from JSON, with the defaults that had to be filled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltOp {
    /// The typed op.
    pub op: EditOp,
    /// Names of the fields the engine filled in: missing ones (e.g. `kind`,
    /// `target.line_end`), and `silent` when the op's value contradicted
    /// the tier.
    pub defaults: Vec<String>,
}

/// Builds a typed op from untrusted JSON, giving it the engine-allocated
/// `id` and filling the defaults: `kind: "style"`, `severity: "minor"`
/// (`"deletion"` for a delete), `needs_attention` from the silent tier
/// (always true for a delete), `silent` from the tier policy,
/// `line_end = line_start`. `before_text`/`before_hash` are left for
/// normalization, which knows the document.
pub fn build_op(
    value: &Value,
    id: ChangeId,
    policy: &ReviewPolicy,
) -> Result<BuiltOp, SchemaProblem> {
    let obj = value.as_object().ok_or_else(|| {
        problem(
            RejectClass::Other,
            format!("an op must be a JSON object, found {value}"),
        )
    })?;
    let mut defaults = Vec::new();

    let source_id = obj.get("id").filter(|v| !v.is_null()).map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let action = read_action(obj)?;
    let target = read_target(obj, &mut defaults)?;
    let after_text = read_after_text(obj, action)?;
    let kind = read_kind(obj, &mut defaults)?;
    let severity = read_severity(obj, action, policy, &mut defaults)?;
    let needs_attention = match opt_bool(obj, "needs_attention")? {
        Some(explicit) => explicit,
        None => {
            defaults.push("needs_attention".to_owned());
            action == Action::Delete || !policy.is_silent_kind(&kind)
        }
    };
    let silent = !needs_attention && policy.is_silent_kind(&kind);
    if opt_bool(obj, "silent")? != Some(silent) {
        defaults.push("silent".to_owned());
    }
    let review_note = read_review_note(obj, &severity, policy, &mut defaults)?;

    Ok(BuiltOp {
        op: EditOp {
            id,
            source_id,
            action,
            target,
            before_hash: opt_str(obj, "before_hash")?.filter(|h| !h.trim().is_empty()),
            before_text: opt_str(obj, "before_text")?,
            after_text,
            needs_attention,
            kind,
            severity,
            silent,
            review_note,
            rationale: opt_str(obj, "rationale")?.unwrap_or_default(),
            summary: opt_str(obj, "summary")?.filter(|s| !s.trim().is_empty()),
        },
        defaults,
    })
}

/// The op's `action`, which it must give.
fn read_action(obj: &serde_json::Map<String, Value>) -> Result<Action, SchemaProblem> {
    let action_text = opt_str(obj, "action")?.ok_or_else(|| {
        problem(
            RejectClass::Other,
            "the op has no 'action'; use replace, insert, delete or flag_only",
        )
    })?;
    Action::parse(&action_text).ok_or_else(|| {
        problem(
            RejectClass::Other,
            format!("unknown action '{action_text}'; use replace, insert, delete or flag_only"),
        )
    })
}

/// The op's target: its `target` object, or the line fields given on the
/// op itself (then it has no chunk, anchor or node path).
fn read_target(
    obj: &serde_json::Map<String, Value>,
    defaults: &mut Vec<String>,
) -> Result<Target, SchemaProblem> {
    let empty = serde_json::Map::new();
    let target_obj = match obj.get("target") {
        Some(Value::Object(t)) => t,
        None | Some(Value::Null) => obj,
        Some(other) => {
            return Err(problem(
                RejectClass::Other,
                format!("'target' must be an object with line_start/line_end, found {other}"),
            ))
        }
    };
    let line_start = opt_line(target_obj, "line_start")?.ok_or_else(|| {
        problem(
            RejectClass::Range,
            "the op has no target.line_start; give the 1-based first line it applies to",
        )
    })?;
    let line_end = match opt_line(target_obj, "line_end")? {
        Some(end) => end,
        None => {
            defaults.push("target.line_end".to_owned());
            line_start
        }
    };
    let target_src = if std::ptr::eq(target_obj, obj) {
        &empty
    } else {
        target_obj
    };
    Ok(Target {
        chunk_id: opt_str(target_src, "chunk_id")?.unwrap_or_default(),
        anchor: opt_str(target_src, "anchor")?.unwrap_or_default(),
        node_path: opt_str(target_src, "node_path")?.unwrap_or_default(),
        line_start,
        line_end,
    })
}

/// The op's `after_text`, which a replace or an insert must give.
fn read_after_text(
    obj: &serde_json::Map<String, Value>,
    action: Action,
) -> Result<String, SchemaProblem> {
    match (action, opt_str(obj, "after_text")?) {
        (Action::Replace | Action::Insert, Some(text)) => Ok(text),
        (Action::Replace | Action::Insert, None) => Err(problem(
            RejectClass::Other,
            format!("a {action} op needs 'after_text' (the new text)"),
        )),
        (_, text) => Ok(text.unwrap_or_default()),
    }
}

/// The op's `kind`, `style` when it gives none.
fn read_kind(
    obj: &serde_json::Map<String, Value>,
    defaults: &mut Vec<String>,
) -> Result<String, SchemaProblem> {
    Ok(match opt_str(obj, "kind")? {
        Some(k) if !k.trim().is_empty() => k.trim().to_owned(),
        _ => {
            defaults.push("kind".to_owned());
            "style".to_owned()
        }
    })
}

/// The op's `severity` (`minor` when it gives none, `deletion` for a
/// delete), which must be one the policy maps to an alert.
fn read_severity(
    obj: &serde_json::Map<String, Value>,
    action: Action,
    policy: &ReviewPolicy,
    defaults: &mut Vec<String>,
) -> Result<String, SchemaProblem> {
    let severity = match opt_str(obj, "severity")? {
        Some(s) if !s.trim().is_empty() => s.trim().to_ascii_lowercase(),
        _ => {
            defaults.push("severity".to_owned());
            if action == Action::Delete {
                "deletion"
            } else {
                "minor"
            }
            .to_owned()
        }
    };
    if policy.alert_for(&severity).is_none() {
        return Err(problem(
            RejectClass::Other,
            format!(
                "severity '{severity}' is not one of {}; fix the op or extend severity_alert_map",
                policy.severities()
            ),
        ));
    }
    Ok(severity)
}

/// The op's review note: a text alone, or an object `{alert, text}`; the
/// alert the policy gives the severity when none is given. A note with no
/// text is no note.
fn read_review_note(
    obj: &serde_json::Map<String, Value>,
    severity: &str,
    policy: &ReviewPolicy,
    defaults: &mut Vec<String>,
) -> Result<Option<ReviewNote>, SchemaProblem> {
    match obj.get("review_note") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => {
            defaults.push("review_note.alert".to_owned());
            Ok(Some(ReviewNote {
                alert: policy.alert_for(severity).unwrap_or(Alert::Note),
                text: text.clone(),
            }))
        }
        Some(Value::Object(note)) => {
            let text = opt_str(note, "text")?.unwrap_or_default();
            let alert = match opt_str(note, "alert")? {
                Some(a) => Alert::parse(&a).ok_or_else(|| {
                    problem(
                        RejectClass::SchemaNote,
                        format!("review_note.alert '{a}' is not one of NOTE, TIP, IMPORTANT, WARNING, CAUTION"),
                    )
                })?,
                None => {
                    defaults.push("review_note.alert".to_owned());
                    policy.alert_for(severity).unwrap_or(Alert::Note)
                }
            };
            if text.trim().is_empty() {
                Ok(None)
            } else {
                Ok(Some(ReviewNote { alert, text }))
            }
        }
        Some(other) => Err(problem(
            RejectClass::SchemaNote,
            format!("review_note must be an object {{alert, text}}, found {other}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn build(v: Value) -> Result<BuiltOp, SchemaProblem> {
        build_op(&v, ChangeId::first(), &ReviewPolicy::default())
    }

    #[test]
    fn minimal_replace_gets_section7_defaults() {
        let built = build(json!({
            "id": "LLM-7", "action": "replace",
            "target": {"line_start": 4}, "after_text": "x"
        }))
        .unwrap();
        let op = built.op;
        assert_eq!(op.id.to_string(), "RVW-0001");
        assert_eq!(op.source_id.as_deref(), Some("LLM-7"));
        assert_eq!(op.kind, "style");
        assert_eq!(op.severity, "minor");
        assert_eq!(op.target.line_end, 4);
        assert!(op.needs_attention, "style is not in the silent tier");
        assert!(!op.silent);
        for field in ["kind", "severity", "needs_attention", "target.line_end"] {
            assert!(built.defaults.iter().any(|d| d == field), "{field}");
        }
    }

    #[test]
    fn silent_tier_follows_the_allowlist() {
        let op = build(json!({"action": "replace", "kind": "typo",
            "target": {"line_start": 1, "line_end": 1}, "after_text": "x"}))
        .unwrap()
        .op;
        assert!(!op.needs_attention);
        assert!(op.silent);
        let mut policy = ReviewPolicy::default();
        policy.silent_allowlist.clear();
        let op = build_op(
            &json!({"action": "replace", "kind": "typo", "target": {"line_start": 1}, "after_text": "x"}),
            ChangeId::first(),
            &policy,
        )
        .unwrap()
        .op;
        assert!(op.needs_attention && !op.silent);
    }

    #[test]
    fn delete_defaults_to_attention_and_deletion_severity() {
        let op = build(json!({"action": "delete", "target": {"line_start": 2, "line_end": 3}}))
            .unwrap()
            .op;
        assert!(op.needs_attention);
        assert_eq!(op.severity, "deletion");
        assert_eq!(op.after_text, "");
    }

    #[test]
    fn bad_ops_are_explained() {
        let cases = [
            (
                json!({"target": {"line_start": 1}}),
                RejectClass::Other,
                "no 'action'",
            ),
            (
                json!({"action": "rewrite", "target": {"line_start": 1}}),
                RejectClass::Other,
                "unknown action",
            ),
            (
                json!({"action": "replace", "target": {"line_start": 1}}),
                RejectClass::Other,
                "after_text",
            ),
            (
                json!({"action": "replace", "after_text": "x"}),
                RejectClass::Range,
                "line_start",
            ),
            (
                json!({"action": "replace", "after_text": "x", "target": {"line_start": -2}}),
                RejectClass::Range,
                "line number",
            ),
            (
                json!({"action": "flag_only", "severity": "high", "target": {"line_start": 1}}),
                RejectClass::Other,
                "severity 'high'",
            ),
            (
                json!({"action": "flag_only", "target": {"line_start": 1}, "review_note": {"alert": "LOUD", "text": "x"}}),
                RejectClass::SchemaNote,
                "LOUD",
            ),
            (json!(42), RejectClass::Other, "JSON object"),
        ];
        for (value, class, needle) in cases {
            let err = build(value.clone()).unwrap_err();
            assert_eq!(err.class, class, "{value}");
            assert!(err.reason.contains(needle), "{value}: {}", err.reason);
        }
    }

    #[test]
    fn wrongly_typed_fields_are_refused_not_converted() {
        let cases = [
            (
                json!({"action": "replace", "target": {"line_start": 3}, "after_text": 12345}),
                RejectClass::Other,
                "field 'after_text' must be a string, found 12345",
            ),
            (
                json!({"action": "replace", "target": {"line_start": [3]}, "after_text": "x"}),
                RejectClass::Range,
                "'line_start' must be a line number (a whole number ≥ 0), found [3]",
            ),
            (
                json!({"action": "replace", "target": {"line_start": 3.5}, "after_text": "x"}),
                RejectClass::Range,
                "found 3.5",
            ),
            (
                json!({"action": "replace", "target": {"line_start": 3.0}, "after_text": "x"}),
                RejectClass::Range,
                "found 3.0",
            ),
            (
                json!({"action": "delete", "target": {"line_start": 2, "line_end": "-4"}}),
                RejectClass::Range,
                "'line_end' must be a line number",
            ),
            (
                json!({"action": "delete", "target": {"line_start": "+2"}}),
                RejectClass::Range,
                "'line_start' must be a line number",
            ),
            (
                json!({"action": "flag_only", "target": {"line_start": 1}, "rationale": true}),
                RejectClass::Other,
                "field 'rationale' must be a string, found true",
            ),
        ];
        for (value, class, needle) in cases {
            let err = build(value.clone()).unwrap_err();
            assert_eq!(err.class, class, "{value}");
            assert!(err.reason.contains(needle), "{value}: {}", err.reason);
        }
    }

    #[test]
    fn ops_file_shapes() {
        assert_eq!(parse_ops_file("[{}, {}]").unwrap().len(), 2);
        assert_eq!(parse_ops_file(r#"{"ops": [{}]}"#).unwrap().len(), 1);
        assert!(matches!(parse_ops_file("{}"), Err(OpsFileError::Shape)));
        assert!(matches!(parse_ops_file("nope"), Err(OpsFileError::Json(_))));
    }

    #[test]
    fn edit_op_serializes_with_schema_names() {
        let op = build(json!({"action": "flag_only", "target": {"line_start": 3},
            "review_note": {"alert": "warning", "text": "REVIEWER: RVW-0001 — x"}}))
        .unwrap()
        .op;
        let v = serde_json::to_value(&op).unwrap();
        assert_eq!(v["id"], "RVW-0001");
        assert_eq!(v["action"], "flag_only");
        assert_eq!(v["review_note"]["alert"], "WARNING");
        assert_eq!(v["target"]["line_start"], 3);
        let back: EditOp = serde_json::from_value(v).unwrap();
        assert_eq!(back, op);
    }
}
