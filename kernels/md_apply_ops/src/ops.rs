//! Where ops come from: an ops file (`ops`, from `--ops`) and, later, the
//! LLM planner's `edit_plan`. Both are optional; ops from the file come
//! first. Each op stays raw JSON so that a bad op is rejected on its own.

use koas_kernel_api::{Inputs, KernelError};
use koas_review::edit_op::parse_ops_file;
use koas_review_schema::apply::OpOrigin;
use koas_review_schema::names;
use serde_json::Value;

/// The ops and a description of where they came from.
pub struct GatheredOps {
    /// The ops, in order.
    pub ops: Vec<Value>,
    /// Who proposed each op: the ops file is a person's, the edit plan a
    /// model's.
    pub origins: Vec<OpOrigin>,
    /// `ops.json: 12 ops`, … (for the summary).
    pub sources: Vec<String>,
}

/// Reads one ops artifact: a source file holding JSON, a JSON string, an
/// array of ops, or an object with an `ops` array.
fn read(value: &Value, artifact: &str) -> Result<(Vec<Value>, String), KernelError> {
    let (text, label) = match value {
        Value::String(text) => (text.clone(), artifact.to_owned()),
        Value::Object(map) if map.contains_key("sha256") && map.contains_key("path") => {
            let path = map.get("path").and_then(Value::as_str).unwrap_or(artifact);
            match map.get("text").and_then(Value::as_str) {
                Some(text) => (text.to_owned(), path.to_owned()),
                None => {
                    return Err(KernelError::invalid_input(format!(
                        "ops file {path}: not valid UTF-8 text"
                    )))
                }
            }
        }
        other => (other.to_string(), artifact.to_owned()),
    };
    let ops = parse_ops_file(&text)
        .map_err(|e| KernelError::invalid_input(format!("ops file {label}: {e}")))?;
    Ok((ops, label))
}

/// Gathers the ops of `ops` and `edit_plan`.
pub fn gather(inputs: &Inputs) -> Result<GatheredOps, KernelError> {
    let mut ops = Vec::new();
    let mut origins = Vec::new();
    let mut sources = Vec::new();
    for (artifact, origin) in [
        (names::OPS, OpOrigin::Person),
        (names::EDIT_PLAN, OpOrigin::Model),
    ] {
        if let Some(value) = inputs.get(artifact).filter(|v| !v.is_null()) {
            let (found, label) = read(value, artifact)?;
            sources.push(format!("{label}: {} ops", found.len()));
            origins.extend(std::iter::repeat(origin).take(found.len()));
            ops.extend(found);
        }
    }
    Ok(GatheredOps {
        ops,
        origins,
        sources,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn inputs(v: Value) -> Inputs {
        Inputs(serde_json::from_value(v).unwrap())
    }

    #[test]
    fn reads_files_strings_arrays_and_plans() {
        let file = json!({"path": "ops.json", "len": 2, "sha256": "sha256:00",
                          "text": "[{\"action\": \"flag_only\"}]"});
        let got = gather(&inputs(
            json!({"ops": file, "edit_plan": {"ops": [{}, {}]}}),
        ))
        .unwrap();
        assert_eq!(got.ops.len(), 3);
        assert_eq!(got.sources, vec!["ops.json: 1 ops", "edit_plan: 2 ops"]);
        assert_eq!(
            got.origins,
            vec![OpOrigin::Person, OpOrigin::Model, OpOrigin::Model]
        );
        let got = gather(&inputs(json!({"ops": "[]"}))).unwrap();
        assert!(got.ops.is_empty());
        assert!(gather(&inputs(json!({}))).unwrap().sources.is_empty());
    }

    #[test]
    fn a_bad_file_names_the_file() {
        let file = json!({"path": "my/ops.json", "len": 2, "sha256": "sha256:00", "text": "{oops"});
        let err = gather(&inputs(json!({"ops": file}))).err().unwrap();
        assert!(err.message.contains("my/ops.json"), "{}", err.message);
        let file =
            json!({"path": "bin.json", "len": 2, "sha256": "sha256:00", "invalid_utf8_at": 1});
        let err = gather(&inputs(json!({"ops": file}))).err().unwrap();
        assert!(err.message.contains("bin.json"), "{}", err.message);
        let err = gather(&inputs(json!({"ops": {"nothing": 1}})))
            .err()
            .unwrap();
        assert!(err.message.contains("JSON array"), "{}", err.message);
    }
}
