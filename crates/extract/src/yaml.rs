//! YAML as a model may answer it, read into a JSON value with bounds: the
//! text is refused, never parsed, when it is too large, nested too deeply
//! or uses anchors (alias expansion can grow exponentially).

use serde_json::{Map, Number, Value};
use std::sync::OnceLock;
use thiserror::Error;
use yaml_rust2::{Yaml, YamlLoader};

/// Inputs larger than this are not handed to the YAML parser.
const MAX_YAML_BYTES: usize = 64 * 1024;
/// Lines whose leading run of indentation and indicators is longer than
/// this are refused, which bounds the nesting depth of the parsed tree.
const MAX_LEADING_RUN: usize = 128;
/// Converted trees deeper than this are refused.
const MAX_DEPTH: usize = 64;

/// Why a text was not read as one YAML document.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum YamlRefusal {
    /// The text is larger than the parser is given.
    #[error("larger than {MAX_YAML_BYTES} bytes")]
    TooLarge,
    /// The text or its tree is nested too deeply.
    #[error("nested too deeply")]
    TooDeep,
    /// The text uses anchors.
    #[error("YAML anchors are not accepted")]
    Anchors,
    /// The parser panicked (it is run under `catch_unwind`).
    #[error("the YAML parser failed internally")]
    ParserFailed,
    /// The text is not valid YAML.
    #[error("YAML: {0}")]
    Syntax(String),
    /// The text holds no document.
    #[error("empty YAML")]
    Empty,
    /// The text holds several documents.
    #[error("{0} YAML documents, expected one")]
    Several(usize),
}

/// Parses `text` as exactly one YAML document and converts it to JSON:
/// strings, integers, reals (kept as strings when not finite), booleans,
/// sequences and mappings with scalar keys; nulls and aliases become
/// `null`.
///
/// # Errors
///
/// A [`YamlRefusal`] naming why the text was not read.
pub fn yaml_to_json(text: &str) -> Result<Value, YamlRefusal> {
    guard(text)?;
    let loaded = std::panic::catch_unwind(|| YamlLoader::load_from_str(text))
        .map_err(|_| YamlRefusal::ParserFailed)?;
    let docs = loaded.map_err(|e| YamlRefusal::Syntax(e.to_string()))?;
    match docs.as_slice() {
        [one] => to_json(one, 0),
        [] => Err(YamlRefusal::Empty),
        _ => Err(YamlRefusal::Several(docs.len())),
    }
}

/// Refuses inputs that are too large, too deeply nested or use anchors.
fn guard(payload: &str) -> Result<(), YamlRefusal> {
    if payload.len() > MAX_YAML_BYTES {
        return Err(YamlRefusal::TooLarge);
    }
    for line in payload.lines() {
        let run = line
            .chars()
            .take_while(|c| matches!(c, ' ' | '\t' | '-' | '?' | ':'))
            .count();
        if run > MAX_LEADING_RUN {
            return Err(YamlRefusal::TooDeep);
        }
    }
    if anchor_pattern().is_some_and(|re| re.is_match(payload)) {
        return Err(YamlRefusal::Anchors);
    }
    Ok(())
}

fn anchor_pattern() -> Option<&'static regex::Regex> {
    static RE: OnceLock<Option<regex::Regex>> = OnceLock::new();
    RE.get_or_init(|| regex::Regex::new(r"(?:^|[\s\[{,:-])&[^\s\[\]{},]").ok())
        .as_ref()
}

fn to_json(node: &Yaml, depth: usize) -> Result<Value, YamlRefusal> {
    if depth > MAX_DEPTH {
        return Err(YamlRefusal::TooDeep);
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
    fn reads_one_document_as_json() {
        let v = yaml_to_json("- name: a\n  n: 12\n  ok: true\n- 2.5\n").unwrap();
        assert_eq!(
            v,
            serde_json::json!([{"name": "a", "n": 12, "ok": true}, 2.5])
        );
        assert_eq!(yaml_to_json("just prose").unwrap(), "just prose");
    }

    #[test]
    fn refuses_anchors_deep_nesting_and_several_documents() {
        assert_eq!(
            yaml_to_json("a: &x [1]\nb: *x\n"),
            Err(YamlRefusal::Anchors)
        );
        assert_eq!(yaml_to_json(&"- ".repeat(200)), Err(YamlRefusal::TooDeep));
        let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
        // Flow nesting is refused by the parser's own recursion limit.
        assert!(yaml_to_json(&deep).is_err());
        assert_eq!(
            yaml_to_json("a: 1\n---\nb: 2\n"),
            Err(YamlRefusal::Several(2))
        );
        assert_eq!(yaml_to_json(""), Err(YamlRefusal::Empty));
    }
}
