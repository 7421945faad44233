//! `run.json`: what happened in a run, kernel by kernel.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The file name of the run record inside the workspace.
pub const RUN_RECORD_FILE: &str = "run.json";

/// How a kernel's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelStatus {
    /// Outputs available (computed or from the cache).
    Ok,
    /// The kernel returned an error or panicked.
    Failed,
    /// Not run because an upstream kernel failed or the run was cancelled.
    Skipped,
    /// Stopped by cancellation while running.
    Cancelled,
}

/// Whether the cache answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheUse {
    /// Outputs came from the cache; the kernel did not execute.
    Hit,
    /// The kernel executed.
    Miss,
    /// `--no-cache`: the kernel executed without looking at the cache.
    Disabled,
    /// The kernel never got that far (skipped).
    None,
}

/// One kernel's line in the run record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRecord {
    /// Kernel name.
    pub name: String,
    /// Kernel version.
    pub version: String,
    /// Stage label.
    pub stage: String,
    /// How it ended.
    pub status: KernelStatus,
    /// Cache hit or miss.
    pub cache: CacheUse,
    /// Wall-clock start (RFC 3339), when it got that far.
    pub started_at: Option<String>,
    /// Wall-clock end (RFC 3339).
    pub finished_at: Option<String>,
    /// Start, in milliseconds since the run started.
    pub start_ms: Option<f64>,
    /// End, in milliseconds since the run started.
    pub end_ms: Option<f64>,
    /// Input artifact → hash (`null` for an absent optional input).
    pub input_hashes: BTreeMap<String, Option<String>>,
    /// Output artifact → hash.
    pub output_hashes: BTreeMap<String, String>,
    /// The cache key.
    pub cache_key: Option<String>,
    /// The plugin library.
    pub plugin: PathBuf,
    /// blake3 of the plugin library.
    pub plugin_hash: Option<String>,
    /// The kernel's summary.
    pub summary: String,
    /// The kernel's warnings.
    pub warnings: Vec<String>,
    /// The error, for a failed kernel.
    pub error: Option<String>,
    /// Why it was skipped.
    pub skipped_reason: Option<String>,
    /// Files the kernel wrote through the host.
    pub files_written: Vec<String>,
    /// The first log lines of the kernel.
    pub log: Vec<String>,
}

/// How the whole run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every kernel succeeded.
    Ok,
    /// At least one kernel failed.
    Failed,
    /// The user interrupted the run.
    Cancelled,
}

/// The whole run record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The koas version.
    pub koas_version: String,
    /// The plugin ABI version.
    pub abi_version: u32,
    /// The pipeline's name.
    pub pipeline: String,
    /// The pipeline file.
    pub pipeline_file: PathBuf,
    /// The workspace.
    pub workspace: PathBuf,
    /// How it ended.
    pub status: RunStatus,
    /// Wall-clock start.
    pub started_at: String,
    /// Wall-clock end.
    pub finished_at: String,
    /// Duration in milliseconds.
    pub duration_ms: f64,
    /// Parallelism bound.
    pub jobs: usize,
    /// `false` with `--no-cache`.
    pub cache_enabled: bool,
    /// The kernel asked for with `--kernel` or `--until`, if any.
    pub target: Option<String>,
    /// Kernels in the order they finished.
    pub kernels: Vec<KernelRecord>,
    /// What was run, so that `koas replay` can run it again exactly.
    #[serde(default)]
    pub plan: Option<RunPlan>,
    /// The LLM session: models, parameters, canonicalizer hash, token use,
    /// and why it stopped early (`SESSION_BUDGET_EXHAUSTED`, …).
    #[serde(default)]
    pub llm_session: Option<serde_json::Value>,
}

/// The effective pipeline of a run, after environment and command-line
/// overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunPlan {
    /// The pipeline's kernels.
    pub kernels: Vec<String>,
    /// Source files by artifact name.
    pub inputs: BTreeMap<String, PathBuf>,
    /// Resolved config of every kernel.
    pub configs: BTreeMap<String, serde_json::Value>,
    /// Extra kernel folders of the pipeline.
    pub kernel_paths: Vec<PathBuf>,
    /// The `[llm]` table in effect (names of key variables only, never keys).
    pub llm: Option<serde_json::Value>,
    /// Artifacts the host provided in memory: name → blake3 of their
    /// canonical JSON, stored in the workspace cache so a replay can give
    /// kernels the same values.
    #[serde(default)]
    pub provided: BTreeMap<String, String>,
    /// Outputs whose files the host wrote itself.
    #[serde(default)]
    pub host_written: Vec<String>,
}

impl RunRecord {
    /// The record of a kernel by name.
    pub fn kernel(&self, name: &str) -> Option<&KernelRecord> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// How many kernels executed (cache misses).
    pub fn executed(&self) -> usize {
        self.kernels
            .iter()
            .filter(|k| matches!(k.cache, CacheUse::Miss | CacheUse::Disabled))
            .count()
    }
}

/// The current time as RFC 3339 with microseconds, UTC.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}
