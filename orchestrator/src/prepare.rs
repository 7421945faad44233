//! Turning a pipeline file and the discovered kernels into a runnable plan:
//! every kernel found, every config checked, the DAG validated.

use crate::dag::{Dag, DagError};
use crate::discovery::{Discovery, LoadedKernel};
use crate::pipeline::Pipeline;
use koas_kernel_api::suggest::closest;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Why a pipeline cannot run. All of these are usage or config errors.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The pipeline names kernels no library provides.
    #[error("{file}: {} not found. Searched: {searched}.{problems}\nRun `koas kernels` to see what is available.", unknown_list(.names))]
    UnknownKernels {
        /// Path of the pipeline file (prefixes the message).
        file: String,
        /// The missing kernel names, quoted, with a suggestion when one is
        /// close.
        names: Vec<String>,
        /// The kernel search path, comma-separated, in search order.
        searched: String,
        /// Discovery problems that may explain it.
        problems: String,
    },
    /// A `[config.X]` table for a kernel that is not in the pipeline.
    #[error("{file}: [config.{kernel}] configures a kernel that is not in `kernels`")]
    ConfigForAbsentKernel {
        /// Where the table was set (prefixes the message): the pipeline
        /// file, the `--set` flag or the `KOAS_CONFIG__…` variable.
        file: String,
        /// The `X` of `[config.X]`.
        kernel: String,
    },
    /// A `[limits.X]` table for a kernel that is not in the pipeline.
    #[error("{file}: [limits.{kernel}] limits a kernel that is not in `kernels`")]
    LimitsForAbsentKernel {
        /// Path of the pipeline file (prefixes the message).
        file: String,
        /// The `X` of `[limits.X]`.
        kernel: String,
    },
    /// A config value the kernel's defaults do not allow.
    #[error("{file}: [config.{kernel}] {detail}")]
    InvalidConfig {
        /// Where the value was set (prefixes the message): the pipeline
        /// file, the `--set` flag or the `KOAS_CONFIG__…` variable.
        file: String,
        /// The kernel whose `[config.X]` table holds the value.
        kernel: String,
        /// The key and what is wrong.
        detail: String,
    },
    /// The kernels' inputs and outputs do not form a valid DAG (an
    /// artifact without producer, two producers, or a cycle).
    #[error("{file}: {source}")]
    Dag {
        /// Path of the pipeline file (prefixes the message).
        file: String,
        /// Every problem found, not just the first.
        source: DagError,
    },
    /// A kernel declares a runtime file (the lock, the run record, the
    /// cache…) as an output or a written path.
    #[error("{file}: {message}")]
    RuntimeFile {
        /// Path of the pipeline file (prefixes the message).
        file: String,
        /// Which kernel declares which path, and what that path is.
        message: String,
    },
    /// A kernel appears twice in `kernels`.
    #[error("{file}: kernel `{kernel}` is listed twice in `kernels`")]
    Duplicate {
        /// Path of the pipeline file (prefixes the message).
        file: String,
        /// The kernel listed more than once.
        kernel: String,
    },
}

fn unknown_list(names: &[String]) -> String {
    if names.len() == 1 {
        format!("kernel {}", names.join(""))
    } else {
        format!("kernels {}", names.join(", "))
    }
}

/// A pipeline ready to run.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The loaded pipeline (a copy).
    pub pipeline: Pipeline,
    /// The loaded plugin of every kernel the pipeline lists, by name.
    pub kernels: BTreeMap<String, LoadedKernel>,
    /// Per kernel, its default config with the pipeline's `[config.X]`
    /// overrides applied.
    pub configs: BTreeMap<String, Value>,
    /// The DAG of the listed kernels, with the pipeline's inputs as sources.
    pub dag: Dag,
}

/// Finds the pipeline's kernels, checks their configs and builds the DAG.
pub fn prepare(pipeline: &Pipeline, discovery: &Discovery) -> Result<Prepared, PrepareError> {
    let file = pipeline.file.display().to_string();
    let mut kernels = BTreeMap::new();
    let mut unknown = Vec::new();
    let mut seen = BTreeSet::new();
    for name in &pipeline.kernels {
        if !seen.insert(name) {
            return Err(PrepareError::Duplicate {
                file,
                kernel: name.clone(),
            });
        }
        match discovery.kernels.get(name) {
            Some(k) => {
                kernels.insert(name.clone(), k.clone());
            }
            None => unknown.push(name.clone()),
        }
    }
    if !unknown.is_empty() {
        return Err(unknown_kernels(file, unknown, discovery));
    }
    for k in kernels.values() {
        crate::workspace::check_declared_paths(&k.spec, &[]).map_err(|message| {
            PrepareError::RuntimeFile {
                file: file.clone(),
                message,
            }
        })?;
    }
    for kernel in pipeline.limits.kernels.keys() {
        if !kernels.contains_key(kernel) {
            return Err(PrepareError::LimitsForAbsentKernel {
                file,
                kernel: kernel.clone(),
            });
        }
    }
    for kernel in pipeline.config.keys() {
        if !kernels.contains_key(kernel) {
            return Err(PrepareError::ConfigForAbsentKernel {
                file: pipeline.config_origin(kernel, ""),
                kernel: kernel.clone(),
            });
        }
    }
    let mut configs = BTreeMap::new();
    for (name, k) in &kernels {
        let overrides = pipeline
            .config
            .get(name)
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default()));
        let resolved = koas_kernel_api::config::resolve(&k.spec.default_config, &overrides)
            .map_err(|e| PrepareError::InvalidConfig {
                file: pipeline.config_origin(name, &e.key),
                kernel: name.clone(),
                detail: e.to_string(),
            })?;
        configs.insert(name.clone(), resolved);
    }
    let specs: Vec<_> = pipeline
        .kernels
        .iter()
        .filter_map(|n| kernels.get(n).map(|k| &k.spec))
        .collect();
    let sources: BTreeSet<String> = pipeline.inputs.keys().cloned().collect();
    let dag = Dag::build(&specs, &sources).map_err(|source| PrepareError::Dag {
        file: file.clone(),
        source,
    })?;
    Ok(Prepared {
        pipeline: pipeline.clone(),
        kernels,
        configs,
        dag,
    })
}

/// The error for kernels the pipeline lists and discovery did not find,
/// with the names close to theirs, where it looked, and the plugins that
/// failed to load.
fn unknown_kernels(file: String, unknown: Vec<String>, discovery: &Discovery) -> PrepareError {
    let unknown: Vec<String> = unknown
        .into_iter()
        .map(|n| match closest(&n, discovery.kernels.keys()) {
            Some(s) => format!("`{n}` (did you mean `{s}`?)"),
            None => format!("`{n}`"),
        })
        .collect();
    let searched = discovery
        .searched
        .iter()
        .map(|s| s.path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let problems = if discovery.kernels.is_empty() && discovery.problems.is_empty() {
        format!(
            "\nNo kernel was found at all. {}",
            crate::discovery::INSTALL_HINT
        )
    } else if discovery.problems.is_empty() {
        String::new()
    } else {
        format!(
            "\nPlugins that failed to load:\n{}",
            discovery
                .problems
                .iter()
                .map(|p| format!("  - {p}"))
                .collect::<Vec<_>>()
                .join("\n")
        )
    };
    PrepareError::UnknownKernels {
        file,
        names: unknown,
        searched,
        problems,
    }
}
