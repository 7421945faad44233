//! What a kernel returns.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The longest summary, in characters, that the host keeps; longer ones are
/// cut at this length with an ellipsis.
pub const MAX_SUMMARY_CHARS: usize = 500;

/// The successful result of a kernel: its output artifacts, a short summary
/// and any warnings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelOutput {
    /// One JSON value per declared output artifact.
    pub artifacts: BTreeMap<String, Value>,
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

impl KernelOutput {
    /// An output with no artifacts, an empty summary and no warnings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an output artifact. Anything `serde_json` can serialize is
    /// accepted; a value that fails to serialize becomes `null`.
    pub fn artifact(mut self, name: impl Into<String>, value: impl Serialize) -> Self {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        self.artifacts.insert(name.into(), value);
        self
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
    fn artifacts_accept_any_serializable() {
        let out = KernelOutput::new()
            .artifact("n", 3)
            .artifact("v", vec!["a", "b"]);
        assert_eq!(out.artifacts["n"], 3);
        assert_eq!(out.artifacts["v"][1], "b");
    }
}
