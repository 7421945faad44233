//! Pipeline files: which kernels to run, on which inputs, with which config.
//!
//! A pipeline is a TOML file read with figment. Environment variables
//! prefixed `KOAS_` override its keys (`KOAS_JOBS=4`,
//! `KOAS_WORKSPACE=/tmp/ws`, nested keys with `__`:
//! `KOAS_CONFIG__SPLIT__MAX_TOKENS=900`), and command-line flags
//! override both. Relative paths in the file are resolved against the
//! file's folder; relative paths from the environment or the command line
//! against the current folder.

use crate::limits::Limits;
use figment::providers::{Env, Format, Toml};
use figment::Figment;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The top-level keys a pipeline file may have (also the only `KOAS_…`
/// variables read as overrides).
pub const PIPELINE_KEYS: &[&str] = &[
    "name",
    "description",
    "kernels",
    "kernel_paths",
    "workspace",
    "jobs",
    "inputs",
    "config",
    "llm",
    "isolation",
    "limits",
    "prompts",
];

/// A pipeline file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The file does not exist or cannot be read.
    #[error("{path}: cannot read the pipeline file: {message}")]
    Read {
        /// The pipeline file, as passed to [`load`].
        path: PathBuf,
        /// The operating system's error message.
        message: String,
    },
    /// A key is unknown, a value has the wrong type, or TOML is malformed.
    #[error("{path}: {message}")]
    Invalid {
        /// The pipeline file, as passed to [`load`].
        path: PathBuf,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A `--set` or `--input` flag is malformed.
    #[error("{flag}: {message}")]
    Flag {
        /// The flag as given, e.g. `--set split.max_tokens` (no `=`).
        flag: String,
        /// What is wrong with it, and the expected form.
        message: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPipeline {
    name: String,
    #[serde(default)]
    description: String,
    kernels: Vec<String>,
    #[serde(default)]
    kernel_paths: Vec<PathBuf>,
    #[serde(default)]
    workspace: Option<PathBuf>,
    #[serde(default)]
    jobs: Option<usize>,
    #[serde(default)]
    inputs: BTreeMap<String, PathBuf>,
    #[serde(default)]
    config: BTreeMap<String, Value>,
    #[serde(default)]
    llm: Option<Value>,
    #[serde(default)]
    isolation: Option<String>,
    #[serde(default)]
    limits: Option<Value>,
    #[serde(default)]
    prompts: Option<PathBuf>,
}

/// A loaded pipeline with every path resolved.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// The pipeline file, as passed to [`load`].
    pub file: PathBuf,
    /// The `name` key; also names the default workspace
    /// `.koas/runs/<name>`.
    pub name: String,
    /// The `description` key; empty when absent.
    pub description: String,
    /// The kernels it runs, by name.
    pub kernels: Vec<String>,
    /// Extra folders to search for kernels.
    pub kernel_paths: Vec<PathBuf>,
    /// The run's workspace folder: `--workspace`, else the `workspace` key,
    /// else `.koas/runs/<name>`.
    pub workspace: PathBuf,
    /// How many kernels may run at once.
    pub jobs: usize,
    /// Source artifacts: name → file.
    pub inputs: BTreeMap<String, PathBuf>,
    /// Config overrides per kernel (validated later against each kernel's
    /// defaults).
    pub config: BTreeMap<String, Value>,
    /// The `[llm]` table, if any (validated when an LLM kernel runs).
    pub llm: Option<Value>,
    /// `isolation = "none"`: run kernels inside koas, as `--in-process`
    /// does; `false` for `"process"` or no key (the default).
    pub in_process: bool,
    /// The `[limits]` table (without the flags, which the command adds).
    pub limits: Limits,
    /// The `prompts` key: the folder kernels' prompt templates are read
    /// from first (templates it lacks come from koas's own); `None` lets
    /// koas find its own folder.
    pub prompts: Option<PathBuf>,
    /// Where config values that do not come from the file were set:
    /// `KERNEL.KEY.PATH` → `--set KERNEL.KEY.PATH=VALUE` or
    /// `environment variable KOAS_CONFIG__KERNEL__KEY`, so that a refused
    /// value names the flag or variable to fix (see [`Pipeline::config_origin`]).
    pub config_origins: BTreeMap<String, String>,
}

/// A pipeline a host carries in its own binary: the same keys as a file,
/// read from text, on the host's workspace and inputs.
#[derive(Debug, Clone, Copy)]
pub struct Embedded<'a> {
    /// The TOML text (only `name`, `description`, `kernels` and `config`
    /// are read: the rest is the host's to decide).
    pub text: &'a str,
    /// How the pipeline is named in messages, in place of a file name.
    pub shown: &'a str,
}

impl Pipeline {
    /// The pipeline of an [`Embedded`] text on `workspace`, with `inputs`
    /// as its sources; jobs follow the machine's cores.
    pub fn embedded(
        embedded: Embedded<'_>,
        workspace: &Path,
        inputs: Vec<(String, PathBuf)>,
    ) -> Result<Pipeline, PipelineError> {
        #[derive(Deserialize)]
        struct Raw {
            name: String,
            #[serde(default)]
            description: String,
            kernels: Vec<String>,
            #[serde(default)]
            config: BTreeMap<String, Value>,
        }
        let raw: Raw = toml::from_str(embedded.text).map_err(|e| PipelineError::Invalid {
            path: PathBuf::from(embedded.shown),
            message: e.to_string(),
        })?;
        Ok(Pipeline {
            file: PathBuf::from(embedded.shown),
            name: raw.name,
            description: raw.description,
            kernels: raw.kernels,
            kernel_paths: Vec::new(),
            workspace: workspace.to_path_buf(),
            jobs: default_jobs(),
            inputs: inputs.into_iter().collect(),
            config: raw.config,
            llm: None,
            in_process: false,
            limits: Default::default(),
            prompts: None,
            config_origins: Default::default(),
        })
    }

    /// True when the pipeline runs `kernel`.
    pub fn has(&self, kernel: &str) -> bool {
        self.kernels.iter().any(|k| k == kernel)
    }

    /// Fails unless the pipeline runs `kernel`; `why` says what the host
    /// needs it for.
    pub fn require(&self, kernel: &str, why: &str) -> Result<(), PipelineError> {
        if self.has(kernel) {
            return Ok(());
        }
        Err(PipelineError::Invalid {
            path: self.file.clone(),
            message: format!("the pipeline has no `{kernel}` kernel, which {why}"),
        })
    }

    /// Sets `[config.KERNEL] KEY = value` when the pipeline runs `kernel`
    /// (a setting for a kernel it does not run would be refused later).
    pub fn set_config(&mut self, kernel: &str, key: &str, value: Value) {
        if !self.has(kernel) {
            return;
        }
        let table = self
            .config
            .entry(kernel.to_owned())
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(map) = table.as_object_mut() {
            map.insert(key.to_owned(), value);
        }
    }

    /// Puts `defaults` under `kernel`'s own config table (its own keys
    /// win), when the pipeline runs `kernel`.
    pub fn config_defaults(&mut self, kernel: &str, defaults: serde_json::Map<String, Value>) {
        if !self.has(kernel) {
            return;
        }
        let mut table = defaults;
        if let Some(Value::Object(own)) = self.config.get(kernel) {
            table.extend(own.clone());
        }
        self.config.insert(kernel.to_owned(), Value::Object(table));
    }

    /// The same pipeline with only the kernels `keep` accepts (and their
    /// config).
    pub fn subset(&self, keep: impl Fn(&str) -> bool) -> Pipeline {
        let mut out = self.clone();
        out.kernels.retain(|k| keep(k));
        out.config.retain(|k, _| keep(k));
        out
    }

    /// Where the value of `kernel`'s config key `key` (a dotted path, or
    /// empty for the whole table) was set: the flag or environment
    /// variable that set it or a key below it, else the pipeline file.
    pub fn config_origin(&self, kernel: &str, key: &str) -> String {
        let path = if key.is_empty() {
            kernel.to_string()
        } else {
            format!("{kernel}.{key}")
        };
        let below = format!("{path}.");
        // The last flag wins over the environment, as when they were applied.
        self.config_origins
            .iter()
            .filter(|(k, _)| *k == &path || k.starts_with(&below))
            .map(|(_, origin)| origin)
            .max_by_key(|origin| origin.starts_with("--set"))
            .cloned()
            .unwrap_or_else(|| self.file.display().to_string())
    }
}

/// The dotted paths of the leaves of `value` (a table's keys, recursively)
/// below `prefix`.
fn leaf_paths(prefix: &str, value: &Value, out: &mut Vec<String>) {
    match value.as_object() {
        Some(map) if !map.is_empty() => {
            for (k, v) in map {
                leaf_paths(&format!("{prefix}.{k}"), v, out);
            }
        }
        _ => out.push(prefix.to_string()),
    }
}

/// The value at a dotted path below `config`, if any.
fn value_at<'a>(config: &'a BTreeMap<String, Value>, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut v = config.get(parts.next()?)?;
    for p in parts {
        v = v.get(p)?;
    }
    Some(v)
}

/// Command-line overrides of a pipeline file.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--workspace`: replaces the file's `workspace`; `None` keeps it.
    pub workspace: Option<PathBuf>,
    /// `--jobs`: replaces the file's `jobs`; `None` keeps it.
    pub jobs: Option<usize>,
    /// `--input NAME=PATH`, already split; each adds or replaces one
    /// `[inputs]` entry (a relative path is taken from the current folder).
    pub inputs: Vec<(String, PathBuf)>,
    /// `--set KERNEL.KEY=VALUE`, raw; parsed and applied on top of
    /// `[config.KERNEL]` by [`load`].
    pub sets: Vec<String>,
}

fn base_dir(file: &Path) -> PathBuf {
    file.parent()
        .map(Path::to_path_buf)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."))
}

fn resolve(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Reads a pipeline file, applies `KOAS_…` environment variables and then
/// the command-line overrides.
pub fn load(file: &Path, overrides: &Overrides) -> Result<Pipeline, PipelineError> {
    load_with_env(file, overrides, Env::prefixed("KOAS_"))
}

/// Like [`load`], with an explicit environment provider (for tests).
pub fn load_with_env(
    file: &Path,
    overrides: &Overrides,
    env: Env,
) -> Result<Pipeline, PipelineError> {
    if let Err(e) = std::fs::metadata(file) {
        return Err(PipelineError::Read {
            path: file.to_path_buf(),
            message: e.to_string(),
        });
    }
    let env = env.split("__").filter(|k| {
        let top = k.as_str().split('.').next().unwrap_or("");
        PIPELINE_KEYS.iter().any(|p| p.eq_ignore_ascii_case(top))
    });
    // Env-provided paths are relative to the current folder, file-provided
    // ones to the file's folder: extract the file alone first to tell them
    // apart.
    let from_file: RawPipeline = Figment::from(Toml::file_exact(file))
        .extract()
        .map_err(|e| invalid(file, e))?;
    let raw: RawPipeline = Figment::from(Toml::file_exact(file))
        .merge(env)
        .extract()
        .map_err(|e| invalid(file, e))?;
    let base = base_dir(file);
    let cwd = PathBuf::from(".");
    let pick = |value: &Path, file_value: Option<&PathBuf>| {
        if file_value.map(PathBuf::as_path) == Some(value) {
            resolve(&base, value)
        } else {
            resolve(&cwd, value)
        }
    };
    let mut inputs: BTreeMap<String, PathBuf> = raw
        .inputs
        .iter()
        .map(|(k, v)| (k.clone(), pick(v, from_file.inputs.get(k))))
        .collect();
    for (name, path) in &overrides.inputs {
        inputs.insert(name.clone(), path.clone());
    }
    let workspace = match (&overrides.workspace, &raw.workspace) {
        (Some(w), _) => w.clone(),
        (None, Some(w)) => pick(w, from_file.workspace.as_ref()),
        (None, None) => PathBuf::from(".koas").join("runs").join(&raw.name),
    };
    let kernel_paths = raw
        .kernel_paths
        .iter()
        .map(|p| {
            if from_file.kernel_paths.contains(p) {
                resolve(&base, p)
            } else {
                resolve(&cwd, p)
            }
        })
        .collect();
    let mut config_origins = env_origins(&from_file.config, &raw.config);
    let mut config = raw.config;
    for set in &overrides.sets {
        apply_set(&mut config, set)?;
        if let Some((key, _)) = set.split_once('=') {
            config_origins.insert(key.to_string(), format!("--set {set}"));
        }
    }
    let jobs = overrides
        .jobs
        .or(raw.jobs)
        .unwrap_or_else(default_jobs)
        .max(1);
    let in_process = in_process(file, raw.isolation.as_deref())?;
    let limits = match &raw.limits {
        Some(value) => Limits::from_value(value).map_err(|message| PipelineError::Invalid {
            path: file.to_path_buf(),
            message,
        })?,
        None => Limits::default(),
    };
    Ok(Pipeline {
        file: file.to_path_buf(),
        name: raw.name,
        description: raw.description,
        kernels: raw.kernels,
        kernel_paths,
        workspace,
        jobs,
        inputs,
        config,
        llm: raw.llm,
        in_process,
        limits,
        prompts: raw
            .prompts
            .as_deref()
            .map(|p| pick(p, from_file.prompts.as_ref())),
        config_origins,
    })
}

/// The config keys the environment set (their value differs from the
/// file's), each with the variable that set it.
fn env_origins(
    from_file: &BTreeMap<String, Value>,
    merged: &BTreeMap<String, Value>,
) -> BTreeMap<String, String> {
    let mut config_origins = BTreeMap::new();
    let mut leaves = Vec::new();
    for (kernel, table) in merged {
        leaf_paths(kernel, table, &mut leaves);
    }
    for leaf in leaves {
        if value_at(from_file, &leaf) != value_at(merged, &leaf) {
            let var = format!("KOAS_CONFIG__{}", leaf.replace('.', "__").to_uppercase());
            config_origins.insert(leaf, format!("environment variable {var}"));
        }
    }
    config_origins
}

/// Whether kernels run inside koas (`isolation = "none"`) rather than in
/// worker processes.
fn in_process(file: &Path, isolation: Option<&str>) -> Result<bool, PipelineError> {
    match isolation {
        None | Some("process") => Ok(false),
        Some("none") => Ok(true),
        Some(other) => Err(PipelineError::Invalid {
            path: file.to_path_buf(),
            message: format!(
                "key `isolation`: {other:?} is not \"process\" (kernels in worker processes, the default) or \"none\" (inside koas)"
            ),
        }),
    }
}

fn invalid(file: &Path, e: figment::Error) -> PipelineError {
    let mut messages = Vec::new();
    for err in e {
        let path = err.path.join(".");
        let kind = match &err.kind {
            figment::error::Kind::UnknownField(field, _) => {
                let full = if path.is_empty() {
                    field.clone()
                } else {
                    format!("{path}.{field}")
                };
                format!(
                    "unknown key `{full}` (known top-level keys: {})",
                    PIPELINE_KEYS.join(", ")
                )
            }
            figment::error::Kind::MissingField(field) => format!("missing key `{field}`"),
            other => {
                if path.is_empty() {
                    other.to_string()
                } else {
                    format!("key `{path}`: {other}")
                }
            }
        };
        let from = err
            .metadata
            .as_ref()
            .map(|m| m.name.to_string())
            .filter(|n| n.to_lowercase().contains("env"))
            .map(|n| format!(" (from {n})"))
            .unwrap_or_default();
        messages.push(format!("{kind}{from}"));
    }
    PipelineError::Invalid {
        path: file.to_path_buf(),
        message: messages.join("; "),
    }
}

/// Parses `NAME=PATH` (the `--input` flag).
pub fn parse_input_flag(flag: &str) -> Result<(String, PathBuf), PipelineError> {
    match flag.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.to_string(), PathBuf::from(path)))
        }
        _ => Err(PipelineError::Flag {
            flag: format!("--input {flag}"),
            message: "expected NAME=PATH, e.g. --input doc=spec.md".into(),
        }),
    }
}

/// Applies `KERNEL.KEY[.SUBKEY]=VALUE` to the config table. VALUE is read
/// as a TOML value (`3`, `true`, `"text"`, `[1, 2]`), or as a plain string
/// when it is not one.
fn apply_set(config: &mut BTreeMap<String, Value>, set: &str) -> Result<(), PipelineError> {
    let flag_err = |message: &str| PipelineError::Flag {
        flag: format!("--set {set}"),
        message: message.to_string(),
    };
    let (key, raw_value) = set
        .split_once('=')
        .ok_or_else(|| flag_err("expected KERNEL.KEY=VALUE, e.g. --set split.max_tokens=900"))?;
    let mut parts = key.split('.');
    let kernel = parts
        .next()
        .filter(|k| !k.is_empty())
        .ok_or_else(|| flag_err("missing kernel name"))?;
    let path: Vec<&str> = parts.collect();
    if path.is_empty() || path.iter().any(|p| p.is_empty()) {
        return Err(flag_err(
            "expected KERNEL.KEY=VALUE, e.g. --set split.max_tokens=900",
        ));
    }
    let value = toml::from_str::<toml::Table>(&format!("v = {raw_value}"))
        .ok()
        .and_then(|t| t.get("v").cloned())
        .and_then(|v| serde_json::to_value(v).ok())
        .unwrap_or_else(|| Value::String(raw_value.to_string()));
    let mut slot = config
        .entry(kernel.to_string())
        .or_insert_with(|| Value::Object(Default::default()));
    for (i, part) in path.iter().enumerate() {
        let obj = slot
            .as_object_mut()
            .ok_or_else(|| flag_err("a parent key is not a table"))?;
        if i + 1 == path.len() {
            obj.insert((*part).to_string(), value);
            return Ok(());
        }
        slot = obj
            .entry((*part).to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, body: &str) -> PathBuf {
        let p = dir.join("p.toml");
        std::fs::write(&p, body).expect("write");
        p
    }

    fn no_env() -> Env {
        Env::prefixed("KOAS_TEST_NEVER_SET_")
    }

    #[test]
    fn resolves_paths_against_the_file() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = write(
            dir.path(),
            "name = \"x\"\nkernels = [\"a\"]\nworkspace = \"ws\"\n[inputs]\ndoc = \"d.md\"\n[config.a]\nn = 1\n",
        );
        let p = load_with_env(&f, &Overrides::default(), no_env()).expect("loads");
        assert_eq!(p.inputs["doc"], dir.path().join("d.md"));
        assert_eq!(p.workspace, dir.path().join("ws"));
        assert_eq!(p.config["a"]["n"], 1);
    }

    #[test]
    fn unknown_keys_name_the_key_and_the_file() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = write(
            dir.path(),
            "name = \"x\"\nkernels = []\nkernal_paths = []\n",
        );
        let e = load_with_env(&f, &Overrides::default(), no_env()).expect_err("unknown");
        let msg = e.to_string();
        assert!(msg.contains("kernal_paths"), "{msg}");
        assert!(msg.contains("p.toml"), "{msg}");
    }

    #[test]
    fn isolation_and_limits_are_read_and_checked() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = write(
            dir.path(),
            "name = \"x\"\nkernels = [\"a\"]\nisolation = \"none\"\n[limits]\ntimeout = 5\n[limits.a]\nmemory = 100\n",
        );
        let p = load_with_env(&f, &Overrides::default(), no_env()).expect("loads");
        assert!(p.in_process);
        assert_eq!(p.limits.for_kernel("a").timeout_secs, Some(5));
        assert_eq!(p.limits.for_kernel("a").memory_mb, Some(100));
        let f = write(
            dir.path(),
            "name = \"x\"\nkernels = []\nisolation = \"thread\"\n",
        );
        let e = load_with_env(&f, &Overrides::default(), no_env()).expect_err("bad isolation");
        assert!(e.to_string().contains("`isolation`"), "{e}");
        let f = write(
            dir.path(),
            "name = \"x\"\nkernels = []\n[limits]\ntime = 5\n",
        );
        let e = load_with_env(&f, &Overrides::default(), no_env()).expect_err("bad key");
        assert!(e.to_string().contains("`limits.time`"), "{e}");
    }

    #[test]
    fn missing_file_is_a_read_error() {
        let e = load_with_env(Path::new("/nope/p.toml"), &Overrides::default(), no_env())
            .expect_err("missing");
        assert!(matches!(e, PipelineError::Read { .. }));
    }

    #[test]
    fn sets_and_flags_override() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = write(dir.path(), "name = \"x\"\nkernels = [\"a\"]\njobs = 3\n");
        let o = Overrides {
            jobs: Some(1),
            sets: vec![
                "a.n=5".into(),
                "a.deep.s=hello".into(),
                "a.list=[1, 2]".into(),
            ],
            inputs: vec![parse_input_flag("doc=z.md").expect("flag")],
            ..Overrides::default()
        };
        let p = load_with_env(&f, &o, no_env()).expect("loads");
        assert_eq!(p.jobs, 1);
        assert_eq!(p.config["a"]["n"], 5);
        assert_eq!(p.config["a"]["deep"]["s"], "hello");
        assert_eq!(p.config["a"]["list"][1], 2);
        assert_eq!(p.inputs["doc"], PathBuf::from("z.md"));
        assert!(parse_input_flag("nope").is_err());
        let bad = Overrides {
            sets: vec!["nokey=1".into()],
            ..Overrides::default()
        };
        assert!(load_with_env(&f, &bad, no_env()).is_err());
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API returns its own large error
    fn environment_overrides_the_file() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = write(dir.path(), "name = \"x\"\nkernels = [\"a\"]\njobs = 3\n");
        figment::Jail::expect_with(|jail| {
            jail.set_env("KOAS_JOBS", "7");
            jail.set_env("KOAS_CONFIG__A__N", "9");
            jail.set_env("KOAS_KERNEL_PATH", "/ignored/by/the/pipeline");
            let p = load(&f, &Overrides::default()).expect("loads");
            assert_eq!(p.jobs, 7);
            assert_eq!(p.config["a"]["n"], 9);
            Ok(())
        });
    }
}
