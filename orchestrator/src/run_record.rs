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

/// Whether the cache answered for a kernel, or why it was not asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheUse {
    /// Outputs came from the cache; the kernel did not execute.
    Hit,
    /// No cached outputs for the key: the kernel executed and its outputs
    /// were stored.
    Miss,
    /// `--no-cache`: the kernel executed without looking at the cache.
    Disabled,
    /// The kernel never got that far (skipped).
    None,
}

/// One kernel's line in the run record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRecord {
    /// Kernel name, as listed in the pipeline.
    pub name: String,
    /// Kernel version from its spec (part of the cache key).
    pub version: String,
    /// Stage label from its spec; empty when the kernel declares none.
    pub stage: String,
    /// How it ended; a skipped kernel has no times, output hashes or cache
    /// key.
    pub status: KernelStatus,
    /// Whether the outputs came from the cache.
    pub cache: CacheUse,
    /// Wall-clock start (RFC 3339), when it got that far.
    pub started_at: Option<String>,
    /// Wall-clock end (RFC 3339), when it got that far.
    pub finished_at: Option<String>,
    /// Start, in milliseconds since the run started.
    pub start_ms: Option<f64>,
    /// End, in milliseconds since the run started.
    pub end_ms: Option<f64>,
    /// Input artifact → hash (`null` for an absent optional input).
    pub input_hashes: BTreeMap<String, Option<String>>,
    /// Output artifact → blake3 of its canonical JSON (the name of its
    /// object in the cache); empty unless the kernel succeeded.
    pub output_hashes: BTreeMap<String, String>,
    /// The cache key (see [`crate::cache::cache_key`]); `None` for a
    /// skipped kernel.
    pub cache_key: Option<String>,
    /// For an incremental kernel that ran: the key its next run on the
    /// same inputs will have (its outputs handed back as the previous
    /// ones), under which this run's entry was stored too; a cache
    /// collection keeps it like `cache_key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cache_key: Option<String>,
    /// Path of the plugin library the kernel was loaded from.
    pub plugin: PathBuf,
    /// blake3 of the plugin library.
    pub plugin_hash: Option<String>,
    /// The one-line summary the kernel returned; empty unless it succeeded.
    pub summary: String,
    /// The warnings the kernel returned with its outputs.
    pub warnings: Vec<String>,
    /// The error, for a failed kernel.
    pub error: Option<String>,
    /// Why it was skipped (which upstream kernel failed or was cancelled);
    /// `None` unless skipped.
    pub skipped_reason: Option<String>,
    /// Files the kernel wrote through the host.
    pub files_written: Vec<String>,
    /// The first log lines of the kernel.
    pub log: Vec<String>,
    /// How its worker process ended, when that is why it failed (a crash,
    /// an exit, a timeout, a kill after a cancellation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<WorkerExit>,
    /// Why the kernel called its output incomplete (a service it depends on
    /// failed): the output was kept but not cached, so the next run runs
    /// the kernel again. `None` for a complete output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

/// How a kernel's worker process ended, in the run record of a kernel it
/// failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerExit {
    /// `crashed` (a signal), `exited` (an exit in the middle of the run),
    /// `out_of_memory`, `timed_out`, `cancel_ignored`, `protocol` (it sent
    /// garbage) or `start` (it could not be started).
    pub cause: String,
    /// Its process id.
    pub pid: Option<u32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
    /// That signal's name (`SIGABRT`, `SIGSEGV`, `SIGKILL`…).
    pub signal_name: Option<String>,
    /// Its exit status, when it exited.
    pub exit_code: Option<i32>,
    /// The end of what it wrote to stderr while running the kernel.
    pub stderr_tail: String,
    /// Set when the worker died after the kernel had answered: the kernel
    /// left something running that ended the process (a thread that
    /// called `exit()` or crashed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_answer: Option<AfterAnswer>,
}

/// How koas found a worker that died after its kernel had answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AfterAnswer {
    /// `between_kernels` (found dead before its next kernel, or when the
    /// run ended), `right_after` (dead as soon as the kernel had answered)
    /// or `during_next` (it died while running `next`, which was then run
    /// again on a fresh worker and completed).
    pub noticed: String,
    /// The kernel it was running when it died (`during_next`), or the
    /// library it was describing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// The threads the kernel had left running in the worker, where the
    /// system says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_threads: Option<u32>,
}

/// A worker that died after work this run cannot name among its kernels
/// (another run's kernel in the same process, or loading a library): the
/// run's failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerDeath {
    /// The work blamed: `kernel `NAME`` or `loading and describing PATH`.
    pub after: String,
    /// What happened, in words.
    pub message: String,
    /// How the worker ended.
    pub worker: WorkerExit,
}

/// How the whole run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every selected kernel succeeded (from the cache or not).
    Ok,
    /// At least one kernel failed.
    Failed,
    /// The user interrupted the run.
    Cancelled,
}

/// The whole run record, written to `<workspace>/run.json` at the end of
/// every run, including failed and cancelled ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Version of the `koas` executable that ran.
    pub koas_version: String,
    /// The plugin ABI version of that executable.
    pub abi_version: u32,
    /// The `name` key of the pipeline file.
    pub pipeline: String,
    /// Path of the pipeline file.
    pub pipeline_file: PathBuf,
    /// The workspace folder this record is written into.
    pub workspace: PathBuf,
    /// How the run ended.
    pub status: RunStatus,
    /// Wall-clock start (RFC 3339, UTC).
    pub started_at: String,
    /// Wall-clock end (RFC 3339, UTC).
    pub finished_at: String,
    /// Wall-clock duration of the whole run, in milliseconds.
    pub duration_ms: f64,
    /// How many kernels could run at once.
    pub jobs: usize,
    /// `false` with `--no-cache` (every kernel executed, nothing was looked
    /// up).
    pub cache_enabled: bool,
    /// The kernel asked for with `--kernel` or `--until`, if any.
    pub target: Option<String>,
    /// Where kernels ran: `process` (worker processes) or `none` (inside
    /// koas, `--in-process`).
    #[serde(default)]
    pub isolation: Option<String>,
    /// Kernels in the order they finished.
    pub kernels: Vec<KernelRecord>,
    /// Worker processes that died after work none of these kernels did:
    /// each fails the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worker_deaths: Vec<WorkerDeath>,
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
    /// The pipeline's kernels, in the order the file lists them.
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
    /// The folder prompt templates were read from, if not koas's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PathBuf>,
    /// The previous outputs handed to incremental kernels: kernel →
    /// artifact → cache blob, so a replay hands them the same.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub previous: BTreeMap<String, BTreeMap<String, String>>,
    /// The source files the workspace's write-once outputs were made
    /// from, by artifact name: the next run in this workspace compares its
    /// sources with them. Carried over from the previous run when this one
    /// did not write those outputs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub write_once_sources: BTreeMap<String, RecordedSource>,
    /// The plugin library of every kernel of the pipeline, as an absolute
    /// path: `koas replay` loads the same libraries without being told
    /// again where they are.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plugins: BTreeMap<String, PathBuf>,
}

/// A source file as a run read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedSource {
    /// The file, as the pipeline named it.
    pub path: PathBuf,
    /// `sha256:` and the hex digest of its bytes.
    pub sha256: String,
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
