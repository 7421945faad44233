//! Running a *built* plugin the way `koas` runs it: found by the runtime's
//! discovery, run by its engine in a worker process of the `koas`
//! executable, its answer checked by the host.
//!
//! [`koas_kernel_api::testing::TestHarness`] calls your `Kernel` in the
//! test process; [`PluginHarness`] loads the `cdylib` you ship. What only
//! the second one sees: the export macro and the library's name, the ABI
//! and describe, a crash or an `exit()` in the plugin (a failed kernel
//! here, with the worker's exit status and stderr), the output checks of
//! the host, the time, memory and output limits.
//!
//! ```no_run
//! use koas_plugin_test::{built_plugin, PluginHarness};
//! let library = built_plugin("koas_kernel_word_count").expect("built");
//! let out = PluginHarness::new(library)
//!     .kernel("word_count")
//!     .source_text("doc", "one two three")
//!     .run()
//!     .expect("runs");
//! assert_eq!(out.value("word_count")["words"], 3);
//! ```

use crate::error::PluginError;
use crate::Artifacts;
use koas_kernel_api::{KernelSpec, SourceFile};
use koas_orchestrator::dag::Dag;
use koas_orchestrator::discovery::{discover_isolated, Discovery, SearchOrigin, SearchPath};
use koas_orchestrator::engine::{self, Provided, RunOptions, RunTarget};
use koas_orchestrator::limits::{Isolation, LimitOverrides, Limits};
use koas_orchestrator::pipeline::Pipeline;
use koas_orchestrator::prepare::Prepared;
use koas_orchestrator::progress::Reporter;
use koas_orchestrator::run_record::KernelStatus;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The variable naming the `koas` executable whose worker mode runs the
/// kernels (before `koas` on `PATH`).
pub const KOAS_BIN_ENV: &str = "KOAS_BIN";

/// The `koas` executable workers are started from: `$KOAS_BIN`, else
/// `koas` on `PATH`.
pub fn locate_koas() -> Result<PathBuf, PluginError> {
    if let Some(given) = std::env::var_os(KOAS_BIN_ENV).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(given);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(PluginError::NoKoas(format!(
                "{KOAS_BIN_ENV} is {}, which is not a file",
                path.display()
            )))
        };
    }
    let exe = format!("koas{}", std::env::consts::EXE_SUFFIX);
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(&exe))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            PluginError::NoKoas(format!(
                "{KOAS_BIN_ENV} is not set and there is no `{exe}` on PATH; set {KOAS_BIN_ENV} to a koas executable (target/debug/koas of a koas checkout after `cargo build`), or run the kernel in the test process with PluginHarness::in_process()"
            ))
        })
}

/// The plugin library `lib_name` (`koas_kernel_<name>`, the `[lib] name`
/// of your crate) built by the cargo command running this test: in the
/// profile's `deps/` folder (where `cargo test` builds it, when the crate
/// has a test in `tests/`), else the profile folder (`cargo build`).
pub fn built_plugin(lib_name: &str) -> Result<PathBuf, PluginError> {
    let file = format!(
        "{}{lib_name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let exe = std::env::current_exe().map_err(|e| PluginError::NoLibrary {
        path: PathBuf::from(&file),
        hint: format!(" (cannot locate the running test: {e})"),
    })?;
    // A test runs from <target>/<profile>/deps/.
    let deps = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let candidates = [Some(deps.clone()), deps.parent().map(Path::to_path_buf)];
    candidates
        .iter()
        .flatten()
        .map(|dir| dir.join(&file))
        .find(|p| p.is_file())
        .ok_or_else(|| PluginError::NoLibrary {
            path: deps.join(&file),
            hint: "; `cargo test` builds the cdylib only for a crate with a test in tests/, and `cargo build` builds it next to deps/".to_owned(),
        })
}

/// Runs the kernels of one built plugin library as `koas` does.
#[derive(Debug, Clone)]
pub struct PluginHarness {
    library: PathBuf,
    koas: Option<PathBuf>,
    in_process: bool,
    limits: LimitOverrides,
}

/// What a kernel returned through the runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginOutput {
    /// The kernel's name.
    pub kernel: String,
    /// The version its spec declares.
    pub version: String,
    /// Its outputs by name, as the host stored them.
    pub outputs: BTreeMap<String, Value>,
    /// Its one-line summary.
    pub summary: String,
    /// Its warnings.
    pub warnings: Vec<String>,
    /// The log lines the run record keeps.
    pub logs: Vec<String>,
}

impl PluginOutput {
    /// Output `name`, or `null` when the kernel has no such output.
    pub fn value(&self, name: &str) -> &Value {
        self.outputs.get(name).unwrap_or(&Value::Null)
    }

    /// Output `name` as your type.
    pub fn parse<T: serde::de::DeserializeOwned>(&self, name: &str) -> serde_json::Result<T> {
        T::deserialize(self.value(name))
    }
}

impl PluginHarness {
    /// A harness for the plugin library at `library` (see
    /// [`built_plugin`]), run in workers of [`locate_koas`]'s executable.
    pub fn new(library: impl Into<PathBuf>) -> PluginHarness {
        PluginHarness {
            library: library.into(),
            koas: None,
            in_process: false,
            limits: LimitOverrides::default(),
        }
    }

    /// Starts workers from this `koas` executable instead of
    /// [`locate_koas`]'s.
    pub fn koas(mut self, program: impl Into<PathBuf>) -> PluginHarness {
        self.koas = Some(program.into());
        self
    }

    /// Loads and runs the plugin in this process (`koas --in-process`): no
    /// `koas` executable needed, but a crash of the plugin is a crash of
    /// the test.
    pub fn in_process(mut self) -> PluginHarness {
        self.in_process = true;
        self
    }

    /// Stops a kernel after `secs` seconds, as `--kernel-timeout` does (0:
    /// no limit; by default koas's).
    pub fn timeout_secs(mut self, secs: u64) -> PluginHarness {
        self.limits.timeout_secs = Some(secs);
        self
    }

    /// Caps each worker at `mb` megabytes of address space, as
    /// `--kernel-memory` does (0: no limit; by default koas's).
    pub fn memory_mb(mut self, mb: u64) -> PluginHarness {
        self.limits.memory_mb = Some(mb);
        self
    }

    /// The specs of the kernels the library exports, as discovery reads
    /// them.
    pub fn kernels(&self) -> Result<Vec<KernelSpec>, PluginError> {
        let found = self.discover()?;
        if found.kernels.is_empty() && !found.problems.is_empty() {
            return Err(problems(&found));
        }
        Ok(found.kernels.into_values().map(|k| k.spec).collect())
    }

    /// A run of kernel `name`, to give inputs and config.
    pub fn kernel(&self, name: &str) -> PluginRun<'_> {
        PluginRun {
            harness: self,
            kernel: name.to_owned(),
            inputs: Artifacts::new(),
            config: Value::Object(Default::default()),
        }
    }

    fn isolation(&self) -> Result<Isolation, PluginError> {
        if self.in_process {
            return Ok(Isolation::InProcess);
        }
        let program = match &self.koas {
            Some(p) if p.is_file() => p.clone(),
            Some(p) => {
                return Err(PluginError::NoKoas(format!(
                    "{} is not a file",
                    p.display()
                )))
            }
            None => locate_koas()?,
        };
        Ok(Isolation::Process { program })
    }

    fn limits(&self) -> Limits {
        Limits {
            flags: self.limits,
            ..Limits::default()
        }
    }

    /// The library, found and described as `koas --kernel-path LIBRARY`
    /// would.
    fn discover(&self) -> Result<Discovery, PluginError> {
        if !self.library.is_file() {
            return Err(PluginError::NoLibrary {
                path: self.library.clone(),
                hint: String::new(),
            });
        }
        let search = [SearchPath {
            path: self.library.clone(),
            origin: SearchOrigin::Flag,
        }];
        Ok(discover_isolated(
            &search,
            &self.isolation()?,
            self.limits().general().memory_mb,
        ))
    }
}

/// Discovery's problems, one message.
fn problems(found: &Discovery) -> PluginError {
    PluginError::Discovery(
        found
            .problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// One kernel run of a [`PluginHarness`]: its inputs and config.
#[derive(Debug, Clone)]
pub struct PluginRun<'h> {
    harness: &'h PluginHarness,
    kernel: String,
    inputs: Artifacts,
    config: Value,
}

impl PluginRun<'_> {
    /// Gives input artifact `name` (a value that cannot be made JSON
    /// becomes `null`, as in [`koas_kernel_api::testing::TestHarness`]).
    pub fn input(mut self, name: &str, value: impl serde::Serialize) -> Self {
        self.inputs.insert(
            name.to_owned(),
            serde_json::to_value(value).unwrap_or(Value::Null),
        );
        self
    }

    /// Gives every artifact of `artifacts` (a Markdown fixture's of
    /// `koas-kernel-test`, for one): the kernel gets those it declares.
    pub fn inputs(mut self, artifacts: Artifacts) -> Self {
        self.inputs.extend(artifacts);
        self
    }

    /// Gives a source-file input holding `text`, as the host describes a
    /// UTF-8 file named `file_name`.
    pub fn source_file(self, name: &str, file_name: &str, text: &str) -> Self {
        let file = SourceFile::from_bytes(file_name, text.as_bytes());
        self.input(name, file)
    }

    /// Gives a Markdown source-file input holding `text`, as the host
    /// describes a UTF-8 file named `<name>.md`.
    pub fn source_text(self, name: &str, text: &str) -> Self {
        let file_name = format!("{name}.md");
        self.source_file(name, &file_name, text)
    }

    /// Config values merged over the kernel's defaults, checked as a
    /// pipeline's `[config.<kernel>]` table is.
    pub fn config(mut self, overrides: Value) -> Self {
        self.config = overrides;
        self
    }

    /// Runs the kernel: its outputs, or why it did not produce them.
    pub fn run(self) -> Result<PluginOutput, PluginError> {
        let h = self.harness;
        let name = self.kernel.as_str();
        let found = h.discover()?;
        let Some(loaded) = found.kernels.get(name) else {
            if !found.problems.is_empty() {
                return Err(problems(&found));
            }
            return Err(PluginError::NoKernel {
                name: name.to_owned(),
                library: h.library.clone(),
                available: found.kernels.keys().cloned().collect(),
            });
        };
        let config = koas_kernel_api::config::resolve(&loaded.spec.default_config, &self.config)
            .map_err(|e| PluginError::Config {
                kernel: name.to_owned(),
                message: e.to_string(),
            })?;
        if let Some(missing) = loaded
            .spec
            .inputs
            .iter()
            .find(|i| i.required && !self.inputs.contains_key(&i.artifact))
        {
            return Err(PluginError::MissingInput {
                kernel: name.to_owned(),
                artifact: missing.artifact.clone(),
                given: self.inputs.keys().cloned().collect(),
            });
        }
        let failed_to_run = |message: String| PluginError::Run {
            kernel: name.to_owned(),
            message,
        };
        let workspace = tempfile::tempdir()
            .map_err(|e| failed_to_run(format!("cannot create a workspace: {e}")))?;
        // The inputs are handed in as the host's own artifacts, which the
        // engine gives to kernels that declare them optional: the copy of
        // the spec the run uses says so (the one discovery returned is
        // what the plugin declared).
        let mut kernel = loaded.clone();
        for input in &mut kernel.spec.inputs {
            input.required = false;
        }
        let dag = Dag::build(&[&kernel.spec], &BTreeSet::new())
            .map_err(|e| failed_to_run(e.to_string()))?;
        let pipeline = one_kernel_pipeline(h, name, workspace.path(), self.config.clone());
        let prepared = Prepared {
            pipeline,
            kernels: BTreeMap::from([(name.to_owned(), kernel)]),
            configs: BTreeMap::from([(name.to_owned(), config)]),
            dag,
        };
        let mut opts = RunOptions::new(1);
        opts.use_cache = false;
        opts.target = RunTarget::Kernel(name.to_owned());
        opts.isolation = h.isolation()?;
        opts.limits = h.limits();
        opts.provided = self
            .inputs
            .into_iter()
            .map(|(k, v)| (k, Provided::from(v)))
            .collect();
        let outcome = engine::run(&prepared, &opts, Arc::new(Reporter::quiet()))
            .map_err(|e| failed_to_run(e.to_string()))?;
        let record = outcome.record.kernels.iter().find(|k| k.name == name);
        let target = outcome
            .target_output
            .ok_or_else(|| failed_to_run("the run returned no output".to_owned()))?;
        match target.status {
            KernelStatus::Ok => Ok(PluginOutput {
                kernel: target.kernel,
                version: target.version,
                outputs: target.outputs,
                summary: target.summary,
                warnings: target.warnings,
                logs: record.map(|r| r.log.clone()).unwrap_or_default(),
            }),
            KernelStatus::Failed => Err(PluginError::Failed {
                kernel: name.to_owned(),
                library: record
                    .map(|r| r.plugin.clone())
                    .unwrap_or_else(|| h.library.clone()),
                message: target.error.unwrap_or_else(|| "no message".to_owned()),
            }),
            other => Err(failed_to_run(format!(
                "it ended {other:?}: {}",
                target.error.unwrap_or_default()
            ))),
        }
    }
}

/// The pipeline of one run of kernel `name` in `workspace`, with its
/// `config` overrides.
fn one_kernel_pipeline(h: &PluginHarness, name: &str, workspace: &Path, config: Value) -> Pipeline {
    Pipeline {
        file: workspace.join("kernel-test.toml"),
        name: "kernel-test".to_owned(),
        description: String::new(),
        kernels: vec![name.to_owned()],
        kernel_paths: Vec::new(),
        workspace: workspace.to_path_buf(),
        jobs: 1,
        inputs: BTreeMap::new(),
        config: BTreeMap::from([(name.to_owned(), config)]),
        llm: None,
        in_process: h.in_process,
        limits: h.limits(),
        prompts: None,
        config_origins: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_named() {
        let err = PluginHarness::new("/no/such/libkoas_kernel_x.so")
            .in_process()
            .kernel("x")
            .run()
            .expect_err("no library");
        assert!(
            err.to_string().contains("/no/such/libkoas_kernel_x.so"),
            "{err}"
        );
    }

    #[test]
    fn a_koas_that_is_not_a_file_is_named() {
        let dir = tempfile::tempdir().expect("tmp");
        let lib = dir.path().join("libkoas_kernel_x.so");
        std::fs::write(&lib, b"x").expect("lib");
        let err = PluginHarness::new(&lib)
            .koas(dir.path().join("nokoas"))
            .kernels()
            .expect_err("no koas");
        assert!(matches!(err, PluginError::NoKoas(_)), "{err}");
        assert!(err.to_string().contains("nokoas"), "{err}");
    }
}
