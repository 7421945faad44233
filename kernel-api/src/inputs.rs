//! A kernel's inputs: its resolved config and its input artifacts.

use crate::KernelError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// A kernel's resolved config: its default config with the pipeline's
/// values merged over it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KernelConfig(pub Value);

impl KernelConfig {
    /// Deserializes the config into a struct of the kernel's own.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, KernelError> {
        T::deserialize(&self.0).map_err(|e| KernelError::invalid_config(e.to_string()))
    }

    /// The whole resolved config, a JSON object.
    pub fn value(&self) -> &Value {
        &self.0
    }

    /// One key of the config.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }
}

/// A file the pipeline names as a source (`[inputs]` in a pipeline file),
/// as the host hands it to a kernel.
///
/// The host reads the file's bytes; when they are valid UTF-8 the text is
/// given exactly (a byte-order mark and CR LF line endings included),
/// otherwise [`SourceFile::invalid_utf8_at`] gives the offset of the first
/// byte that is not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    /// The file's path as the user gave it, resolved against the pipeline
    /// file's folder.
    pub path: String,
    /// The file's size in bytes.
    pub len: u64,
    /// `sha256:` followed by the lowercase hex SHA-256 of the bytes.
    pub sha256: String,
    /// The exact text, when the bytes are valid UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The byte offset of the first invalid UTF-8 sequence, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_utf8_at: Option<u64>,
}

impl SourceFile {
    /// Describes a file from its path and bytes, as the host does.
    pub fn from_bytes(path: &str, bytes: &[u8]) -> SourceFile {
        let sha256 = crate::hash::sha256(bytes);
        let (text, invalid_utf8_at) = match std::str::from_utf8(bytes) {
            Ok(t) => (Some(t.to_string()), None),
            Err(e) => (None, Some(e.valid_up_to() as u64)),
        };
        SourceFile {
            path: path.to_string(),
            len: bytes.len() as u64,
            sha256,
            text,
            invalid_utf8_at,
        }
    }
}

/// A prompt template as the host hands it to a kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptTemplate {
    /// The template's name (its file name without `.tera`).
    pub name: String,
    /// Its Tera text, as read when the run started.
    pub text: String,
    /// `sha256:` of the text.
    pub hash: String,
    /// Where the host read it: a file path, or `built into koas`.
    #[serde(default)]
    pub source: String,
}

/// One input artifact: the JSON text the host sent, read into a `Value`
/// only when a kernel asks for one.
#[derive(Debug, Clone)]
struct Input {
    raw: Option<Box<serde_json::value::RawValue>>,
    tree: std::sync::OnceLock<Value>,
}

impl Input {
    fn of_value(value: Value) -> Input {
        Input {
            raw: None,
            tree: std::sync::OnceLock::from(value),
        }
    }

    fn tree(&self) -> &Value {
        self.tree.get_or_init(|| {
            // The text was checked as JSON when the request was read.
            self.raw
                .as_ref()
                .and_then(|raw| serde_json::from_str(raw.get()).ok())
                .unwrap_or(Value::Null)
        })
    }

    fn is_null(&self) -> bool {
        match (self.tree.get(), &self.raw) {
            (Some(tree), _) => tree.is_null(),
            (None, Some(raw)) => raw.get().trim() == "null",
            (None, None) => true,
        }
    }

    /// Parses the artifact into `T` straight from its text when no tree
    /// was built: a large input (thousands of records, every part of a document) is
    /// never held twice.
    fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match (self.tree.get(), &self.raw) {
            (None, Some(raw)) => serde_json::from_str(raw.get()),
            _ => T::deserialize(self.tree()),
        }
    }
}

/// The input artifacts of one run, by artifact name. Each is kept as the
/// JSON text the host sent and parsed on demand: [`Inputs::parse`] reads a
/// kernel's own types straight from the text, [`Inputs::get`] builds a
/// `Value` the first time it is asked.
#[derive(Debug, Clone, Default)]
pub struct Inputs(BTreeMap<String, Input>);

impl PartialEq for Inputs {
    fn eq(&self, other: &Inputs) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|((a, x), (b, y))| a == b && x.tree() == y.tree())
    }
}

impl From<BTreeMap<String, Value>> for Inputs {
    fn from(values: BTreeMap<String, Value>) -> Inputs {
        Inputs(
            values
                .into_iter()
                .map(|(name, value)| (name, Input::of_value(value)))
                .collect(),
        )
    }
}

impl Inputs {
    /// Inputs holding the JSON text of each artifact, as read from a run
    /// request.
    pub(crate) fn from_raw(raw: BTreeMap<String, Box<serde_json::value::RawValue>>) -> Inputs {
        Inputs(
            raw.into_iter()
                .map(|(name, raw)| {
                    (
                        name,
                        Input {
                            raw: Some(raw),
                            tree: std::sync::OnceLock::new(),
                        },
                    )
                })
                .collect(),
        )
    }

    /// The names of the artifacts the host provided.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The artifact, if the host provided it (an optional input whose
    /// producer is not in the pipeline is absent).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name).map(Input::tree)
    }

    fn input(&self, name: &str) -> Result<&Input, KernelError> {
        self.0.get(name).ok_or_else(|| {
            KernelError::invalid_input(format!(
                "input artifact `{name}` is missing{}",
                crate::suggest::did_you_mean(name, self.0.keys())
            ))
        })
    }

    /// The artifact, or an [`crate::ErrorKind::InvalidInput`] error naming it.
    pub fn require(&self, name: &str) -> Result<&Value, KernelError> {
        self.input(name).map(Input::tree)
    }

    /// Deserializes an artifact into a type of the kernel's own.
    pub fn parse<T: DeserializeOwned>(&self, name: &str) -> Result<T, KernelError> {
        self.input(name)?.parse().map_err(|e| {
            KernelError::invalid_input(format!(
                "input artifact `{name}` has an unexpected shape: {e}"
            ))
        })
    }

    /// Deserializes an optional artifact; `Ok(None)` when it is absent.
    pub fn parse_optional<T: DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<Option<T>, KernelError> {
        match self.0.get(name) {
            None => Ok(None),
            Some(input) if input.is_null() => Ok(None),
            Some(_) => self.parse(name).map(Some),
        }
    }

    /// The prompt template `name` the host handed over (the kernel declared
    /// it with [`crate::KernelSpec::prompt`]). A template the host did not
    /// provide is an error naming it: a kernel run outside a host that
    /// reads templates, or a spec that forgot to declare it.
    pub fn prompt(&self, name: &str) -> Result<PromptTemplate, KernelError> {
        let value = self
            .get(crate::spec::PROMPTS_INPUT)
            .and_then(|p| p.get(name))
            .ok_or_else(|| {
                KernelError::invalid_input(format!(
                    "prompt template `{name}` was not provided by the host (is it declared in the kernel's spec?)"
                ))
            })?;
        serde_json::from_value(value.clone())
            .map_err(|e| KernelError::invalid_input(format!("prompt template `{name}`: {e}")))
    }

    /// The kernel's own output `artifact` from its last successful run in
    /// this workspace (see [`crate::KernelSpec::incremental`]); `None` on a
    /// first run, or when the last output no longer reads as `T` (written
    /// by another version of the kernel): the kernel then starts afresh.
    pub fn previous<T: DeserializeOwned>(&self, artifact: &str) -> Option<T> {
        let value = self.get(crate::spec::PREVIOUS_INPUT)?.get(artifact)?;
        serde_json::from_value(value.clone()).ok()
    }

    /// A source file artifact (see [`SourceFile`]).
    pub fn source(&self, name: &str) -> Result<SourceFile, KernelError> {
        self.parse(name)
    }

    /// The text of an artifact that is either a JSON string or a
    /// [`SourceFile`]. A source file that is not valid UTF-8 is an error
    /// naming the file and the offset of the first bad byte.
    pub fn source_text(&self, name: &str) -> Result<&str, KernelError> {
        let value = self.require(name)?;
        if let Some(s) = value.as_str() {
            return Ok(s);
        }
        if let Some(text) = value.get("text").and_then(Value::as_str) {
            return Ok(text);
        }
        let path = value.get("path").and_then(Value::as_str).unwrap_or(name);
        match value.get("invalid_utf8_at").and_then(Value::as_u64) {
            Some(offset) => Err(KernelError::invalid_input(format!(
                "{path}: not valid UTF-8 (first bad byte at offset {offset})"
            ))),
            None => Err(KernelError::invalid_input(format!(
                "input artifact `{name}` is neither text nor a source file"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn inputs(v: Value) -> Inputs {
        Inputs::from(serde_json::from_value::<BTreeMap<String, Value>>(v).expect("map"))
    }

    #[test]
    fn inputs_read_from_a_request_are_parsed_from_their_text_and_a_tree_only_on_demand() {
        let raw = |t: &str| serde_json::value::RawValue::from_string(t.to_owned()).expect("raw");
        let i = Inputs::from_raw(
            [
                (
                    "records".to_string(),
                    raw(r#"[{"id":"ID-0001","n":1},{"id":"ID-0002","n":2}]"#),
                ),
                ("gone".to_string(), raw("null")),
                ("doc".to_string(), raw(r#""text \u00e9""#)),
            ]
            .into(),
        );
        #[derive(Debug, PartialEq, serde::Deserialize)]
        struct Entry {
            id: String,
            n: u32,
        }
        let entries: Vec<Entry> = i.parse("records").expect("typed");
        assert_eq!((entries[1].id.as_str(), entries[1].n), ("ID-0002", 2));
        assert!(
            i.0["records"].tree.get().is_none(),
            "a typed parse builds no tree"
        );
        assert_eq!(i.get("records").expect("tree")[0]["n"], 1);
        assert!(i.0["records"].tree.get().is_some());
        // Parsed again from the tree once it exists: the same answer.
        let again: Vec<Entry> = i.parse("records").expect("typed again");
        assert_eq!(again.len(), 2);
        assert_eq!(i.parse_optional::<Vec<Entry>>("gone").expect("null"), None);
        assert_eq!(
            i.parse_optional::<Vec<Entry>>("absent").expect("absent"),
            None
        );
        assert_eq!(i.source_text("doc"), Ok("text é"));
        let err = i.parse::<Vec<Entry>>("recrds").expect_err("missing");
        assert!(err.message.contains("did you mean `records`"), "{err:?}");
        assert_eq!(i.names().collect::<Vec<_>>(), ["doc", "gone", "records"]);
        // The same values given as trees compare equal.
        let trees = Inputs::from(BTreeMap::from([
            (
                "records".to_string(),
                json!([{"id": "ID-0001", "n": 1}, {"id": "ID-0002", "n": 2}]),
            ),
            ("gone".to_string(), Value::Null),
            ("doc".to_string(), json!("text é")),
        ]));
        assert_eq!(trees, i);
    }

    #[test]
    fn source_text_accepts_strings_and_source_files() {
        let i = inputs(json!({
            "a": "plain",
            "b": {"path": "x.md", "len": 2, "sha256": "sha256:00", "text": "hi"},
            "c": {"path": "bad.md", "len": 9, "sha256": "sha256:00", "invalid_utf8_at": 7},
        }));
        assert_eq!(i.source_text("a"), Ok("plain"));
        assert_eq!(i.source_text("b"), Ok("hi"));
        let err = i.source_text("c").expect_err("invalid utf8");
        assert!(err.message.contains("bad.md") && err.message.contains("offset 7"));
        assert!(i.source_text("missing").is_err());
        let typo = i.source_text("bb").expect_err("no such input");
        assert!(
            typo.message.contains("did you mean `b`?"),
            "{}",
            typo.message
        );
    }

    #[test]
    fn parse_reports_the_artifact_name() {
        let i = inputs(json!({"n": "not a number"}));
        let err = i.parse::<u32>("n").expect_err("shape");
        assert!(err.message.contains("`n`"));
        assert_eq!(i.parse_optional::<u32>("absent"), Ok(None));
    }

    #[test]
    fn config_parse_maps_errors_to_invalid_config() {
        #[derive(Deserialize)]
        struct C {
            #[allow(dead_code)]
            n: u32,
        }
        let err = KernelConfig(json!({"n": "x"}))
            .parse::<C>()
            .err()
            .expect("error");
        assert_eq!(err.kind, crate::ErrorKind::InvalidConfig);
    }
}
