//! What to run and how, and what a run returns.

use crate::host::SharedLlm;
use crate::run_record::{CacheUse, KernelStatus, RunRecord};
use crate::workspace::WorkspaceError;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Which part of the pipeline to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunTarget {
    /// Every kernel.
    All,
    /// The named kernel and everything it depends on.
    Until(String),
    /// Like `Until`, and the named kernel's outputs are returned.
    Kernel(String),
}

impl RunTarget {
    pub(crate) fn name(&self) -> Option<&str> {
        match self {
            RunTarget::All => None,
            RunTarget::Until(n) | RunTarget::Kernel(n) => Some(n),
        }
    }
}

/// How to run.
#[derive(Clone)]
pub struct RunOptions {
    /// Kernels running at once, at most.
    pub jobs: usize,
    /// `false` for `--no-cache`: every kernel executes (results are still
    /// stored, refreshing the cache).
    pub use_cache: bool,
    /// Which kernels.
    pub target: RunTarget,
    /// Set to stop the run (Ctrl-C).
    pub cancel: Arc<AtomicBool>,
    /// The LLM service, if any.
    pub llm: Option<SharedLlm>,
    /// Model identity and sampling parameters, added to LLM kernels' keys.
    pub llm_identity: Option<Value>,
    /// The LLM config in effect, recorded in the run record for replay.
    pub llm_config: Option<Value>,
    /// Artifacts the host provides in memory, by name: state it computed
    /// or read itself (e.g. under a lock) rather than a file. They are
    /// given to every kernel that declares an input of that name, and are
    /// part of those kernels' cache keys like any input. Because the DAG
    /// is built before the run, kernels must declare such inputs optional.
    /// A provided artifact may not share its name with a pipeline
    /// `[inputs]` entry or a kernel output.
    pub provided: BTreeMap<String, Value>,
    /// Output artifacts whose declared files the engine must not write
    /// (neither after a run nor when restoring a cache hit): the host
    /// writes them itself, e.g. in a crash-safe order after committing a
    /// ledger. Their values are still returned and cached.
    pub host_written: BTreeSet<String>,
}

impl RunOptions {
    /// Default options: all kernels, cache on, no LLM.
    pub fn new(jobs: usize) -> RunOptions {
        RunOptions {
            jobs: jobs.max(1),
            use_cache: true,
            target: RunTarget::All,
            cancel: Arc::new(AtomicBool::new(false)),
            llm: None,
            llm_identity: None,
            llm_config: None,
            provided: BTreeMap::new(),
            host_written: BTreeSet::new(),
        }
    }
}

/// A run that could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// `--kernel`/`--until` names a kernel that is not in the pipeline.
    #[error("kernel `{0}` is not in the pipeline (its kernels: {1})")]
    UnknownTarget(String, String),
    /// A source file cannot be read.
    #[error("input `{name}`: cannot read {path}: {message}")]
    Input {
        /// The source artifact.
        name: String,
        /// Its file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The workspace cannot be created or written.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// The thread pool cannot be built.
    #[error("cannot start worker threads: {0}")]
    Threads(String),
    /// A provided artifact has the name of a source or a kernel output.
    #[error("artifact `{name}` is provided by the host but is also {other}")]
    ProvidedConflict {
        /// The artifact.
        name: String,
        /// Its other producer.
        other: String,
    },
}

/// The outputs of the kernel asked for with [`RunTarget::Kernel`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct TargetOutput {
    /// The kernel.
    pub kernel: String,
    /// Its version.
    pub version: String,
    /// How it ended.
    pub status: KernelStatus,
    /// Cache hit or miss.
    pub cache: CacheUse,
    /// Its summary.
    pub summary: String,
    /// Its warnings.
    pub warnings: Vec<String>,
    /// Its error, if it failed.
    pub error: Option<String>,
    /// Its output artifacts.
    pub outputs: BTreeMap<String, Value>,
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// The run record (also written to `run.json`).
    pub record: RunRecord,
    /// The target kernel's outputs, for [`RunTarget::Kernel`].
    pub target_output: Option<TargetOutput>,
}
