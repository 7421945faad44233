//! How a pipeline's config values are checked and merged over a kernel's
//! defaults. The host and [`crate::testing::TestHarness`] use the same rules.
//!
//! * Every key the pipeline sets must exist in the default config.
//! * Its value must have the same JSON type as the default (any number
//!   matches a number).
//! * Objects are merged key by key; arrays and scalars are replaced whole.
//! * A default of `null`, or an empty object, accepts anything: that is how
//!   a kernel declares a free-form value or map.

use serde_json::{Map, Value};

/// A config value the defaults do not allow; names the dotted key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The dotted key path, e.g. `thresholds.max_rows`.
    pub key: String,
    /// What is wrong with it.
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.key, self.message)
    }
}

impl std::error::Error for ConfigError {}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "a table",
    }
}

/// Merges `overrides` over `defaults`, refusing unknown keys and type
/// changes. Both are usually JSON objects. A table left empty (or null)
/// among the defaults takes any value; a kernel whose whole default is
/// empty takes no key at all.
pub fn resolve(defaults: &Value, overrides: &Value) -> Result<Value, ConfigError> {
    // A kernel that declares no config takes none: a key given to it is
    // a typo or a misplaced table, said, not silently ignored.
    let declares_none = match defaults {
        Value::Null => true,
        Value::Object(d) => d.is_empty(),
        _ => false,
    };
    if declares_none {
        if let Some(key) = overrides.as_object().and_then(|o| o.keys().min()) {
            return Err(ConfigError {
                key: key.clone(),
                message: "unknown key: this kernel takes no config".to_string(),
            });
        }
    }
    merge(defaults, overrides, "")
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn merge(default: &Value, over: &Value, path: &str) -> Result<Value, ConfigError> {
    match (default, over) {
        (Value::Null, v) => Ok(v.clone()),
        (Value::Object(d), Value::Object(o)) => {
            if d.is_empty() {
                return Ok(over.clone());
            }
            let mut out: Map<String, Value> = d.clone();
            for (k, v) in o {
                let key = join(path, k);
                let Some(dv) = d.get(k) else {
                    let mut known: Vec<&str> = d.keys().map(String::as_str).collect();
                    known.sort_unstable();
                    return Err(ConfigError {
                        key,
                        message: format!("unknown key (known keys: {})", known.join(", ")),
                    });
                };
                out.insert(k.clone(), merge(dv, v, &key)?);
            }
            Ok(Value::Object(out))
        }
        (d, o) if std::mem::discriminant(d) == std::mem::discriminant(o) => Ok(o.clone()),
        (d, o) => Err(ConfigError {
            key: path.to_string(),
            message: format!(
                "expected {} (like the default {d}), found {}",
                type_name(d),
                type_name(o)
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merges_nested_values() {
        let d = json!({"a": 1, "b": {"c": "x", "d": true}, "free": {}, "any": null});
        let o = json!({"b": {"d": false}, "free": {"k": [1]}, "any": "s"});
        let r = resolve(&d, &o).expect("valid");
        assert_eq!(
            r,
            json!({"a": 1, "b": {"c": "x", "d": false}, "free": {"k": [1]}, "any": "s"})
        );
    }

    #[test]
    fn refuses_unknown_keys_with_their_path() {
        let e = resolve(&json!({"b": {"c": 1}}), &json!({"b": {"typo": 2}})).expect_err("unknown");
        assert_eq!(e.key, "b.typo");
        assert!(e.message.contains("known keys: c"));
    }

    #[test]
    fn a_kernel_that_declares_no_config_takes_none() {
        for none in [json!(null), json!({})] {
            let e = resolve(&none, &json!({"max": 3, "lang": "fr"})).expect_err("no config");
            assert_eq!(e.key, "lang");
            assert!(e.message.contains("takes no config"), "{}", e.message);
            assert_eq!(
                resolve(&none, &json!({})).expect("nothing given"),
                json!({})
            );
        }
    }

    #[test]
    fn refuses_type_changes() {
        let e = resolve(&json!({"n": 1}), &json!({"n": "1"})).expect_err("type");
        assert_eq!(e.key, "n");
        assert!(e.message.contains("a number"));
        assert!(resolve(&json!({"n": 1}), &json!({"n": 2.5})).is_ok());
    }
}
