//! What a kernel returns.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;

/// The longest summary, in characters, that the host keeps; longer ones are
/// cut at this length with an ellipsis.
pub const MAX_SUMMARY_CHARS: usize = 500;

/// The successful result of a kernel: its output artifacts, a short summary
/// and any warnings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelOutput {
    /// One JSON text per declared output artifact.
    pub artifacts: BTreeMap<String, ArtifactJson>,
    /// A one-line summary for people (under 500 characters).
    #[serde(default)]
    pub summary: String,
    /// Non-fatal problems worth showing to the user.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Why this output must not be reused by the host's cache, when it
    /// depends on something outside the kernel's inputs that failed (a
    /// model server that stopped answering, a budget spent): the host
    /// still stores and writes it, and hands it back as the previous output
    /// of an incremental kernel, but runs the kernel again next time instead
    /// of answering from the cache. `None` (the default) for a complete
    /// output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

/// An output artifact as JSON text.
///
/// Made by [`KernelOutput::artifact`] (or [`ArtifactJson::of`]) it is the
/// value's canonical JSON, written straight from the kernel's own types: no
/// `serde_json::Value` tree is built, on either side of the plugin
/// boundary, for an artifact that may be many times the document's size.
/// The host canonicalizes whatever text it receives again, so a plugin
/// that writes its JSON another way is hashed the same.
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ArtifactJson(Box<RawValue>);

impl ArtifactJson {
    /// The canonical JSON of `value`.
    pub fn of<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<ArtifactJson> {
        let bytes = crate::hash::to_canonical_vec(value)?;
        let text = String::from_utf8(bytes).map_err(serde::ser::Error::custom)?;
        RawValue::from_string(text).map(ArtifactJson)
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// Reads the artifact as `T`, straight from its text.
    pub fn parse<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_str(self.0.get())
    }

    /// The artifact as a `Value` tree (for tests and small artifacts).
    pub fn value(&self) -> Value {
        // The text was checked to be JSON when it was made.
        self.parse().unwrap_or(Value::Null)
    }
}

impl PartialEq for ArtifactJson {
    fn eq(&self, other: &ArtifactJson) -> bool {
        self.text() == other.text()
    }
}

impl Eq for ArtifactJson {}

impl std::fmt::Debug for ArtifactJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

impl KernelOutput {
    /// An output with no artifacts, an empty summary and no warnings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an output artifact, as its canonical JSON text. Anything
    /// `serde_json` can serialize is accepted; a value that fails to
    /// serialize (a map with keys that are not strings, a `Serialize` impl
    /// that errs) becomes `null`, with a warning naming the artifact.
    pub fn artifact(mut self, name: impl Into<String>, value: impl Serialize) -> Self {
        let name = name.into();
        let json = match ArtifactJson::of(&value) {
            Ok(json) => json,
            Err(e) => {
                self.warnings
                    .push(format!("output `{name}` could not be serialized: {e}"));
                ArtifactJson(RawValue::NULL.to_owned())
            }
        };
        self.artifacts.insert(name, json);
        self
    }

    /// The artifact `name` as a `Value` tree; `null` when there is none.
    /// Meant for tests: a kernel's own types read it with [`Self::parse`].
    pub fn value(&self, name: &str) -> Value {
        self.artifacts
            .get(name)
            .map(ArtifactJson::value)
            .unwrap_or(Value::Null)
    }

    /// Reads the artifact `name` as `T` from its text.
    pub fn parse<T: DeserializeOwned>(&self, name: &str) -> serde_json::Result<T> {
        match self.artifacts.get(name) {
            Some(json) => json.parse(),
            None => Err(serde::de::Error::custom(format_args!("no output `{name}`"))),
        }
    }

    /// Sets the summary; it is cut to 500 characters (`MAX_SUMMARY_CHARS`),
    /// ending with `…` when cut.
    pub fn summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = truncate_summary(summary.into());
        self
    }

    /// Adds a warning; the host keeps it in the run record and caches it
    /// with the outputs, so a cache hit reports it again.
    pub fn warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    /// Marks the output incomplete (see the `incomplete` field): the
    /// host will not answer the next run from its cache, so what could not
    /// be done this time is tried again.
    pub fn incomplete(mut self, why: impl Into<String>) -> Self {
        self.incomplete = Some(why.into());
        self
    }
}

/// Cuts a summary to [`MAX_SUMMARY_CHARS`] characters, ending with `…` when
/// it was cut.
pub(crate) fn truncate_summary(s: String) -> String {
    if s.chars().count() <= MAX_SUMMARY_CHARS {
        return s;
    }
    let mut cut: String = s.chars().take(MAX_SUMMARY_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_is_cut_under_500_chars() {
        let out = KernelOutput::new().summary("é".repeat(900));
        assert_eq!(out.summary.chars().count(), MAX_SUMMARY_CHARS);
        assert!(out.summary.ends_with('…'));
        let short = KernelOutput::new().summary("fine");
        assert_eq!(short.summary, "fine");
    }

    #[test]
    fn artifacts_accept_any_serializable_as_canonical_text() {
        #[derive(Serialize)]
        struct Counts {
            words: u32,
            lines: u32,
        }
        let out = KernelOutput::new()
            .artifact("n", 3)
            .artifact("v", vec!["a", "b"])
            .artifact("c", Counts { words: 5, lines: 2 });
        assert_eq!(out.value("n"), 3);
        assert_eq!(out.value("v")[1], "b");
        assert_eq!(out.artifacts["c"].text(), r#"{"lines":2,"words":5}"#);
        assert_eq!(out.parse::<Vec<String>>("v").expect("v"), ["a", "b"]);
        assert!(out.parse::<u32>("absent").is_err());
        assert_eq!(out.value("absent"), Value::Null);
        assert!(out.warnings.is_empty());
    }

    #[test]
    fn an_artifact_that_cannot_be_serialized_is_null_with_a_warning() {
        let bad: BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let out = KernelOutput::new().artifact("pairs", bad);
        assert_eq!(out.artifacts["pairs"].text(), "null");
        assert!(
            out.warnings[0].starts_with("output `pairs` could not be serialized"),
            "{:?}",
            out.warnings
        );
    }
}
