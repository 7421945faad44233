//! The declared contract of a kernel.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a kernel declares about itself: identity, artifacts, flags and
/// default config. Built with [`KernelSpec::new`] and the builder methods.
///
/// The host builds the pipeline DAG from [`KernelSpec::inputs`] and
/// [`KernelSpec::outputs`]: a kernel that reads artifact `x` runs after the
/// kernel that writes `x`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelSpec {
    /// Unique kernel name, e.g. `md_structure`. Letters, digits, `_` and `-`.
    pub name: String,
    /// Semantic version of the kernel, e.g. `1.2.0`. Part of the cache key:
    /// bump it whenever the output for the same inputs can change.
    pub version: String,
    /// Free-form stage label used for display and grouping, e.g. `S1`.
    #[serde(default)]
    pub stage: String,
    /// One line saying what the kernel does.
    #[serde(default)]
    pub description: String,
    /// Artifacts the kernel reads.
    #[serde(default)]
    pub inputs: Vec<InputSpec>,
    /// Artifacts the kernel writes.
    #[serde(default)]
    pub outputs: Vec<OutputSpec>,
    /// `true` when the same config and inputs always give the same outputs.
    #[serde(default = "default_true")]
    pub deterministic: bool,
    /// `true` when the kernel calls [`crate::Context::llm_complete`]. The
    /// host then adds the model identity and sampling parameters to the
    /// cache key.
    #[serde(default)]
    pub uses_llm: bool,
    /// The default config, a JSON object. The pipeline may override any of
    /// its keys, but may not add keys it does not have (an empty object or
    /// `null` value accepts anything below it).
    #[serde(default = "empty_object")]
    pub default_config: Value,
    /// Workspace paths the kernel writes or appends to while it runs,
    /// through [`crate::Context::write_file`] and
    /// [`crate::Context::append_file`]: a file (`stage2/ops/status.jsonl`)
    /// or a folder and everything below it (`stage2/ops/`, with the final
    /// `/`). Besides these, a kernel may write only its scratch folder
    /// `scratch/<name>/`; the host refuses every other path, and always
    /// the runtime's own files. Declared outputs are written by the host
    /// and need no entry here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<String>,
    /// Prompt templates the kernel renders, by name (`prompts/<name>.tera`).
    /// The host reads them when the kernel runs, a person may have edited
    /// them, and hands them over as the input [`PROMPTS_INPUT`]
    /// ([`crate::Inputs::prompt`]); their text is part of the cache key,
    /// so an edited template re-runs the kernel.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<String>,
    /// `true` when the kernel builds on its own last outputs (a summary
    /// rebuilt only where the document changed): the host hands it the
    /// outputs of its last successful run in the same workspace as the
    /// input [`PREVIOUS_INPUT`] ([`crate::Inputs::previous`]); absent on
    /// the first run.
    ///
    /// The contract: given its own complete outputs back as the previous
    /// ones, with the same inputs and config, the kernel returns the same
    /// outputs. The host relies on it to answer an unchanged re-run from
    /// the cache at once (a kernel that would do something else on such a
    /// run, such as retry a part that failed, must mark its output
    /// incomplete: [`crate::KernelOutput::incomplete`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incremental: bool,
    /// The kinds of finding the kernel reports in its findings outputs
    /// ([`OutputSpec::findings`]), each with a description for people.
    /// Hosts accept these names wherever a user names a kind (to disable
    /// it, change its severity) and refuse a finding of an undeclared kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finding_kinds: Vec<FindingKindSpec>,
}

/// A kind of finding a kernel reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingKindSpec {
    /// Its snake_case name (see [`crate::findings::check_kind_name`]).
    pub kind: String,
    /// One line saying what it means, shown in listings and reports.
    #[serde(default)]
    pub description: String,
}

/// The input through which the host hands a kernel its prompt templates.
pub const PROMPTS_INPUT: &str = "prompts";

/// The input through which the host hands an incremental kernel its own
/// last outputs.
pub const PREVIOUS_INPUT: &str = "previous";

/// The input through which the host tells a kernel that uses an LLM the
/// model identity and sampling parameters it will answer with (also part
/// of the cache key), so the kernel can record what built its outputs.
pub const LLM_INPUT: &str = "llm";

fn default_true() -> bool {
    true
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// One artifact a kernel reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputSpec {
    /// The artifact's name, matched against other kernels' outputs and the
    /// pipeline's `[inputs]`.
    pub artifact: String,
    /// When `false` the kernel runs even if nothing produces the artifact.
    #[serde(default = "default_true")]
    pub required: bool,
}

/// One artifact a kernel writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputSpec {
    /// The artifact's name; unique across a pipeline.
    pub artifact: String,
    /// Where the host also writes the artifact inside the workspace, as a
    /// relative path with `/` separators (e.g. `stage1/outline.json`). A
    /// JSON string artifact is written as its raw text unless the path ends
    /// in `.json`; any other value is written as pretty JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// When `true`, the host refuses to replace an existing file with
    /// different content (an immutable snapshot).
    #[serde(default)]
    pub write_once: bool,
    /// When `true`, the artifact is a findings output
    /// ([`crate::findings::FindingsOutput`]): the host checks its shape
    /// and kinds when the kernel returns, and shows its findings.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub findings: bool,
}

impl KernelSpec {
    /// Starts a spec with a name and a semantic version; the kernel is
    /// deterministic, uses no LLM and has an empty default config.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        KernelSpec {
            name: name.into(),
            version: version.into(),
            stage: String::new(),
            description: String::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            deterministic: true,
            uses_llm: false,
            default_config: empty_object(),
            writes: Vec::new(),
            prompts: Vec::new(),
            incremental: false,
            finding_kinds: Vec::new(),
        }
    }

    /// Sets the stage label.
    pub fn stage(mut self, stage: impl Into<String>) -> Self {
        self.stage = stage.into();
        self
    }

    /// Sets the one-line description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Declares a required input artifact.
    pub fn input(mut self, artifact: impl Into<String>) -> Self {
        self.inputs.push(InputSpec {
            artifact: artifact.into(),
            required: true,
        });
        self
    }

    /// Declares an optional input artifact.
    pub fn optional_input(mut self, artifact: impl Into<String>) -> Self {
        self.inputs.push(InputSpec {
            artifact: artifact.into(),
            required: false,
        });
        self
    }

    /// Declares an output artifact kept only in the host's store.
    pub fn output(mut self, artifact: impl Into<String>) -> Self {
        self.outputs.push(OutputSpec {
            artifact: artifact.into(),
            file: None,
            write_once: false,
            findings: false,
        });
        self
    }

    /// Declares an output artifact that the host also writes to `file`
    /// inside the workspace.
    pub fn output_file(mut self, artifact: impl Into<String>, file: impl Into<String>) -> Self {
        self.outputs.push(OutputSpec {
            artifact: artifact.into(),
            file: Some(file.into()),
            write_once: false,
            findings: false,
        });
        self
    }

    /// Declares an output artifact written to `file` once: a later run that
    /// would write different content there is an error.
    pub fn output_file_once(
        mut self,
        artifact: impl Into<String>,
        file: impl Into<String>,
    ) -> Self {
        self.outputs.push(OutputSpec {
            artifact: artifact.into(),
            file: Some(file.into()),
            write_once: true,
            findings: false,
        });
        self
    }

    /// Declares a findings output ([`crate::findings::FindingsOutput`])
    /// kept in the host's store. The host checks it when the kernel
    /// returns: a malformed one, or a finding of a kind the spec does not
    /// declare with [`KernelSpec::finding_kind`], fails the kernel.
    pub fn findings_output(mut self, artifact: impl Into<String>) -> Self {
        self = self.output(artifact);
        self.mark_last_findings();
        self
    }

    /// Declares a findings output also written to `file` in the workspace.
    pub fn findings_output_file(
        mut self,
        artifact: impl Into<String>,
        file: impl Into<String>,
    ) -> Self {
        self = self.output_file(artifact, file);
        self.mark_last_findings();
        self
    }

    fn mark_last_findings(&mut self) {
        if let Some(last) = self.outputs.last_mut() {
            last.findings = true;
        }
    }

    /// Declares a kind of finding the kernel reports, with one line saying
    /// what it means.
    pub fn finding_kind(mut self, kind: impl Into<String>, description: impl Into<String>) -> Self {
        self.finding_kinds.push(FindingKindSpec {
            kind: kind.into(),
            description: description.into(),
        });
        self
    }

    /// The names of the declared finding kinds.
    pub fn finding_kind_names(&self) -> Vec<&str> {
        self.finding_kinds.iter().map(|k| k.kind.as_str()).collect()
    }

    /// Checks the findings outputs among `returned` (artifact name and
    /// value), as the host does when the kernel returns: the error names
    /// the output and the field.
    pub fn check_findings(
        &self,
        returned: &std::collections::BTreeMap<String, crate::ArtifactJson>,
    ) -> Result<(), String> {
        let kinds = self.finding_kind_names();
        for o in self.outputs.iter().filter(|o| o.findings) {
            let Some(json) = returned.get(&o.artifact) else {
                continue;
            };
            let name = &o.artifact;
            let malformed =
                |e: String| format!("returned a malformed findings output `{name}`: {e}");
            let value: Value =
                serde_json::from_str(json.text()).map_err(|e| malformed(e.to_string()))?;
            crate::findings::check_artifact(&value, &kinds).map_err(malformed)?;
        }
        Ok(())
    }

    /// Declares a workspace path the kernel writes while it runs (see
    /// [`KernelSpec::writes`]): a file, or a folder when `path` ends in
    /// `/`. For streamed forensics such as per-request raw LLM answers.
    pub fn writes(mut self, path: impl Into<String>) -> Self {
        self.writes.push(path.into());
        self
    }

    /// Marks the kernel as non-deterministic.
    pub fn nondeterministic(mut self) -> Self {
        self.deterministic = false;
        self
    }

    /// Marks the kernel as calling the host's LLM service.
    pub fn uses_llm(mut self) -> Self {
        self.uses_llm = true;
        self
    }

    /// Declares a prompt template the kernel renders (see
    /// [`KernelSpec::prompts`]).
    pub fn prompt(mut self, name: impl Into<String>) -> Self {
        self.prompts.push(name.into());
        self
    }

    /// Asks the host for the kernel's own last outputs (see
    /// [`KernelSpec::incremental`]).
    pub fn incremental(mut self) -> Self {
        self.incremental = true;
        self
    }

    /// Sets the default config (a JSON object).
    pub fn default_config(mut self, config: Value) -> Self {
        self.default_config = config;
        self
    }

    /// Checks a kernel's returned artifacts against its declared outputs,
    /// as the host does before storing them: an artifact the spec does not
    /// declare, or a declared output not returned, is an error (the
    /// host's message, which [`crate::testing::TestHarness`] gives too).
    pub fn check_returned<'a>(
        &self,
        returned: impl IntoIterator<Item = &'a String>,
    ) -> Result<(), String> {
        let declared: Vec<&str> = self.outputs.iter().map(|o| o.artifact.as_str()).collect();
        let returned: Vec<&str> = returned.into_iter().map(String::as_str).collect();
        if let Some(extra) = returned.iter().find(|a| !declared.contains(a)) {
            let mut sorted = declared.clone();
            sorted.sort_unstable();
            return Err(format!(
                "returned artifact `{extra}`, which its spec does not declare (declared: {}){}",
                sorted.join(", "),
                crate::suggest::did_you_mean(extra, declared.iter().copied())
            ));
        }
        if let Some(missing) = declared.iter().find(|d| !returned.contains(d)) {
            return Err(format!("did not return its declared output `{missing}`"));
        }
        Ok(())
    }

    /// Checks the spec for mistakes the host would refuse: an empty or
    /// badly formed name, a version that is not `MAJOR.MINOR.PATCH`, a
    /// default config that is not an object, an artifact declared twice, or
    /// a file path that is absolute or leaves the workspace.
    pub fn validate(&self) -> Result<(), String> {
        let name_ok = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !name_ok {
            return Err(format!(
                "kernel name {:?} must be non-empty and use only ASCII letters, digits, '_' and '-'",
                self.name
            ));
        }
        if !is_semver(&self.version) {
            return Err(format!(
                "kernel {}: version {:?} is not a semantic version (MAJOR.MINOR.PATCH)",
                self.name, self.version
            ));
        }
        if !self.default_config.is_object() {
            return Err(format!(
                "kernel {}: default config must be a JSON object",
                self.name
            ));
        }
        for reserved in [PROMPTS_INPUT, PREVIOUS_INPUT, LLM_INPUT] {
            let declared = self
                .inputs
                .iter()
                .map(|i| &i.artifact)
                .chain(self.outputs.iter().map(|o| &o.artifact));
            if declared.into_iter().any(|a| a == reserved) {
                return Err(format!(
                    "kernel {}: artifact name {reserved:?} is reserved for what the host hands the kernel",
                    self.name
                ));
            }
        }
        for name in &self.prompts {
            let ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !ok {
                return Err(format!(
                    "kernel {}: prompt name {name:?} must be a file name without `.tera` (ASCII letters, digits, '_' and '-')",
                    self.name
                ));
            }
        }
        self.validate_artifacts()?;
        for path in &self.writes {
            if !is_relative_inside(path.strip_suffix('/').unwrap_or(path)) {
                return Err(format!(
                    "kernel {}: written path {path:?} must be a relative path inside the workspace (a folder ends with `/`)",
                    self.name
                ));
            }
        }
        let mut kinds = std::collections::BTreeSet::new();
        for k in &self.finding_kinds {
            crate::findings::check_kind_name(&k.kind)
                .map_err(|e| format!("kernel {}: finding {e}", self.name))?;
            if !kinds.insert(k.kind.as_str()) {
                return Err(format!(
                    "kernel {}: finding kind {:?} declared twice",
                    self.name, k.kind
                ));
            }
        }
        if self.outputs.iter().any(|o| o.findings) && self.finding_kinds.is_empty() {
            return Err(format!(
                "kernel {}: it has a findings output but declares no finding kind (KernelSpec::finding_kind)",
                self.name
            ));
        }
        Ok(())
    }

    /// Checks the declared artifacts: none empty or declared twice, none
    /// both an input and an output, every output file inside the
    /// workspace.
    fn validate_artifacts(&self) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        for a in self.inputs.iter().map(|i| &i.artifact) {
            if a.is_empty() || !seen.insert(("in", a.as_str())) {
                return Err(format!(
                    "kernel {}: input artifact {a:?} is empty or declared twice",
                    self.name
                ));
            }
        }
        for o in &self.outputs {
            if o.artifact.is_empty() || !seen.insert(("out", o.artifact.as_str())) {
                return Err(format!(
                    "kernel {}: output artifact {:?} is empty or declared twice",
                    self.name, o.artifact
                ));
            }
            if seen.contains(&("in", o.artifact.as_str())) {
                return Err(format!(
                    "kernel {}: artifact {:?} is both an input and an output",
                    self.name, o.artifact
                ));
            }
            if let Some(file) = &o.file {
                if !is_relative_inside(file) {
                    return Err(format!(
                        "kernel {}: output file {file:?} must be a relative path inside the workspace",
                        self.name
                    ));
                }
            }
        }
        Ok(())
    }
}

fn is_semver(v: &str) -> bool {
    let core = v.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// `true` when `path` is relative, uses no `..` component and is not empty.
pub(crate) fn is_relative_inside(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.starts_with('\\')
        && !path.contains(':')
        && path
            .split(['/', '\\'])
            .all(|part| part != ".." && !part.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_sets_everything() {
        let s = KernelSpec::new("k", "1.0.0")
            .stage("S1")
            .input("a")
            .optional_input("b")
            .output("c")
            .output_file_once("d", "stage1/d.md")
            .writes("stage2/ops/")
            .uses_llm()
            .nondeterministic();
        assert_eq!(s.inputs.len(), 2);
        assert_eq!(s.writes, ["stage2/ops/"]);
        assert!(!s.inputs[1].required);
        assert!(s.outputs[1].write_once);
        assert!(s.uses_llm && !s.deterministic);
        assert_eq!(s.validate(), Ok(()));
    }

    #[test]
    fn validate_refuses_bad_specs() {
        assert!(KernelSpec::new("", "1.0.0").validate().is_err());
        assert!(KernelSpec::new("a b", "1.0.0").validate().is_err());
        assert!(KernelSpec::new("k", "1.0").validate().is_err());
        assert!(KernelSpec::new("k", "1.0.0")
            .default_config(serde_json::json!([1]))
            .validate()
            .is_err());
        assert!(KernelSpec::new("k", "1.0.0")
            .input("a")
            .input("a")
            .validate()
            .is_err());
        assert!(KernelSpec::new("k", "1.0.0")
            .input("a")
            .output("a")
            .validate()
            .is_err());
        for bad in ["../x", "/etc/passwd", "a/../../b", "C:\\x", "a//b", ""] {
            assert!(
                KernelSpec::new("k", "1.0.0")
                    .output_file("a", bad)
                    .validate()
                    .is_err(),
                "{bad} accepted"
            );
        }
        for bad in ["../x", "/abs/", "a//b", "", "/"] {
            assert!(
                KernelSpec::new("k", "1.0.0")
                    .writes(bad)
                    .validate()
                    .is_err(),
                "writes {bad} accepted"
            );
        }
        assert!(KernelSpec::new("k", "1.0.0-beta.1").validate().is_ok());
    }

    #[test]
    fn spec_round_trips_and_fills_defaults() {
        let s: KernelSpec =
            serde_json::from_str(r#"{"name":"k","version":"0.1.0","future_field":1}"#)
                .expect("parses");
        assert!(s.deterministic);
        assert!(s.default_config.is_object());
        assert!(s.writes.is_empty());
        // A spec without `writes` serializes as before: older hosts read it.
        assert!(!serde_json::to_string(&s).expect("ser").contains("writes"));
        let back: KernelSpec =
            serde_json::from_str(&serde_json::to_string(&s).expect("ser")).expect("de");
        assert_eq!(s, back);
    }
}
