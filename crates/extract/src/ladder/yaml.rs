//! Level 3, `yaml`: models that answer in YAML.

use super::value_ops::ops_from_value;
use super::{fences, Found};
use serde_json::{Map, Number, Value};
use std::sync::OnceLock;
use yaml_rust2::{Yaml, YamlLoader};

/// Inputs larger than this are not handed to the YAML parser.
const MAX_YAML_BYTES: usize = 64 * 1024;
/// Lines whose leading run of indentation and indicators is longer than
/// this are refused, which bounds the nesting depth of the parsed tree.
const MAX_LEADING_RUN: usize = 128;
/// Converted trees deeper than this are refused.
const MAX_DEPTH: usize = 64;

/// Parses the (fence-stripped) payload as one YAML document holding ops.
pub(crate) fn extract(text: &str) -> Result<Found, String> {
    let payload = fences::payload(text);
    guard(payload)?;
    let loaded = std::panic::catch_unwind(|| YamlLoader::load_from_str(payload))
        .map_err(|_| "the YAML parser failed internally".to_string())?;
    let docs = loaded.map_err(|e| format!("YAML: {e}"))?;
    let doc = match docs.as_slice() {
        [one] => one,
        [] => return Err("empty YAML".to_string()),
        _ => return Err(format!("{} YAML documents, expected one", docs.len())),
    };
    if !matches!(doc, Yaml::Array(_) | Yaml::Hash(_)) {
        return Err("YAML scalar, not a list of ops".to_string());
    }
    let value = to_json(doc, 0)?;
    ops_from_value(&value, true)
}

/// Refuses inputs that are too large, too deeply nested or use anchors
/// (alias expansion can grow exponentially).
fn guard(payload: &str) -> Result<(), String> {
    if payload.len() > MAX_YAML_BYTES {
        return Err(format!("larger than {MAX_YAML_BYTES} bytes"));
    }
    for line in payload.lines() {
        let run = line
            .chars()
            .take_while(|c| matches!(c, ' ' | '\t' | '-' | '?' | ':'))
            .count();
        if run > MAX_LEADING_RUN {
            return Err("nested too deeply".to_string());
        }
    }
    if anchor_pattern().is_some_and(|re| re.is_match(payload)) {
        return Err("YAML anchors are not accepted".to_string());
    }
    Ok(())
}

fn anchor_pattern() -> Option<&'static regex::Regex> {
    static RE: OnceLock<Option<regex::Regex>> = OnceLock::new();
    RE.get_or_init(|| regex::Regex::new(r"(?:^|[\s\[{,:-])&[^\s\[\]{},]").ok())
        .as_ref()
}

fn to_json(node: &Yaml, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err("nested too deeply".to_string());
    }
    Ok(match node {
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Integer(i) => Value::Number(Number::from(*i)),
        Yaml::Real(s) => match s.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Value::Number(n),
            None => Value::String(s.clone()),
        },
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| to_json(item, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Yaml::Hash(hash) => {
            let mut map = Map::new();
            for (k, v) in hash {
                let key = match k {
                    Yaml::String(s) | Yaml::Real(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    _ => continue,
                };
                map.insert(key, to_json(v, depth + 1)?);
            }
            Value::Object(map)
        }
        Yaml::Null | Yaml::BadValue | Yaml::Alias(_) => Value::Null,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_list_of_op_mappings() {
        let found = extract(
            "- action: replace\n  lines: 12-14\n  before: \"colour\"\n  after: color\n- action: flag\n  line: 20\n  rationale: unclear\n",
        )
        .unwrap();
        assert_eq!(found.ops.len(), 2);
        assert_eq!(found.ops[0].line_start, Some(12));
        assert_eq!(found.ops[1].rationale.as_deref(), Some("unclear"));
    }

    #[test]
    fn reads_a_wrapped_list_and_a_single_op() {
        assert_eq!(
            extract("edits:\n  - action: delete\n    line: 3\n")
                .unwrap()
                .ops
                .len(),
            1
        );
        assert_eq!(
            extract("action: insert\nline: 4\ntext: hello\n")
                .unwrap()
                .ops
                .len(),
            1
        );
    }

    #[test]
    fn refuses_scalars_anchors_and_deep_nesting() {
        assert!(extract("just some prose").is_err());
        assert!(extract("a: &x [1]\nb: *x\n").is_err());
        assert!(extract(&"- ".repeat(200)).is_err());
        assert!(extract(&format!("{}1{}", "[".repeat(300), "]".repeat(300))).is_err());
    }
}
