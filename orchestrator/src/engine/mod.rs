//! Running a prepared pipeline: cache lookups, parallel execution, failure
//! isolation, cancellation and the run record.
//!
//! A kernel becomes ready when every producer of its inputs has finished.
//! Its cache key (see [`crate::cache::cache_key`]) is computed from the
//! hashes of those inputs; on a hit its outputs are taken from the store
//! without executing it, so a kernel whose upstream re-ran but produced the
//! same bytes is not re-run either (early cutoff). Misses run on a pool of
//! `jobs` threads. A failure marks every downstream kernel as skipped while
//! independent branches go on.
//!
//! The modules follow one kernel through a run: [`options`] (what to run),
//! `inputs` (sources, provided artifacts, cache keys, requests),
//! `schedule` (readiness and the thread pool), `outputs` (checking and
//! storing what a kernel returned, cache hits) and `records` (the run
//! record: one entry per kernel, however it ended).

mod inputs;
mod late;
pub mod options;
mod outputs;
mod records;
mod reserved;
mod schedule;
mod sources;

pub use options::{
    CanonicalJson, Provided, RunError, RunOptions, RunOutcome, RunTarget, TargetOutput,
};
pub use reserved::{previous_blobs, read_previous};
pub use sources::SourceConflict;

use crate::cache::Cache;
use crate::discovery::LoadedKernel;
use crate::limits::Isolation;
use crate::prepare::Prepared;
use crate::progress::Reporter;
use crate::run_record::{
    now_rfc3339, AfterAnswer, KernelRecord, KernelStatus, RunPlan, RunRecord, RunStatus,
    WorkerDeath, WorkerExit,
};
use crate::worker::pool::EndCause;
use crate::worker::{LateDeath, WorkerEnd, WorkerPool};
use crate::workspace::{check_declared_paths, WorkspaceError, WriteRules};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// An artifact of the run: its id, and its value once loaded — canonical
/// JSON text for kernels' outputs, cache hits and provided text (sent to
/// kernels as it is, never made a tree), a tree for sources and provided
/// values.
struct Artifact {
    hash: String,
    loaded: Option<inputs::Shared>,
}

/// Why a kernel did not produce its outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    /// It (or the host, checking what it returned) reported an error.
    Failed(String),
    /// It stopped because the run was cancelled.
    Cancelled(String),
    /// Its worker process died or was killed before it answered, or died
    /// after it answered (`after_answer`).
    Worker {
        /// What happened, in words.
        message: String,
        /// How the worker ended.
        end: WorkerEnd,
        /// How a death after the kernel had answered was found (boxed:
        /// rare, and every result carries the variant's size).
        after_answer: Option<Box<AfterAnswer>>,
    },
}

impl Failure {
    fn message(&self) -> &str {
        match self {
            Failure::Failed(m) | Failure::Cancelled(m) | Failure::Worker { message: m, .. } => m,
        }
    }

    fn is_cancellation(&self) -> bool {
        match self {
            Failure::Cancelled(_) => true,
            Failure::Worker { end, .. } => end.is_cancellation(),
            Failure::Failed(_) => false,
        }
    }

    /// The run record's account of the worker's end, if that is the cause.
    fn worker_exit(&self) -> Option<WorkerExit> {
        let Failure::Worker {
            end, after_answer, ..
        } = self
        else {
            return None;
        };
        Some(worker_exit(end, after_answer.as_deref().cloned()))
    }
}

/// The run record's account of a worker's end.
fn worker_exit(end: &WorkerEnd, after_answer: Option<AfterAnswer>) -> WorkerExit {
    let cause = match &end.cause {
        EndCause::Start(_) => "start",
        EndCause::Died if end.out_of_memory() => "out_of_memory",
        EndCause::Died if end.signal.is_some() => "crashed",
        EndCause::Died => "exited",
        EndCause::TimedOut(_) => "timed_out",
        EndCause::CancelIgnored => "cancel_ignored",
        EndCause::Protocol(_) => "protocol",
    };
    WorkerExit {
        cause: cause.to_string(),
        pid: end.pid,
        signal: end.signal,
        signal_name: end
            .signal
            .map(|s| crate::worker::pool::signal_name(s).to_string()),
        exit_code: end.exit_code,
        stderr_tail: end.stderr_tail.clone(),
        after_answer,
    }
}

/// When a kernel ran and what it logged, whatever the outcome.
struct Attempt {
    start_ms: f64,
    end_ms: f64,
    started_at: String,
    finished_at: String,
    logs: Vec<String>,
    files: Vec<String>,
}

impl Attempt {
    /// An attempt that never reached the kernel (at `at_ms`, now).
    fn instant(at_ms: f64) -> Attempt {
        let now = now_rfc3339();
        Attempt {
            start_ms: at_ms,
            end_ms: at_ms,
            started_at: now.clone(),
            finished_at: now,
            logs: Vec::new(),
            files: Vec::new(),
        }
    }
}

/// A kernel run finished on a worker thread.
struct Completion {
    kernel: String,
    key: String,
    inputs: BTreeMap<String, Option<String>>,
    attempt: Attempt,
    result: Result<Produced, Failure>,
    /// The worker pool's ticket for this run, if it ran in a worker.
    ticket: Option<u64>,
    /// Workers found dead after earlier work while it ran.
    late_deaths: Vec<LateDeath>,
}

/// What a successful kernel run produced, already stored.
struct Produced {
    outputs: BTreeMap<String, (String, Arc<CanonicalJson>)>,
    summary: String,
    warnings: Vec<String>,
    /// The kernel's reason for not caching the outputs.
    incomplete: Option<String>,
}

struct Engine<'a> {
    prepared: &'a Prepared,
    opts: &'a RunOptions,
    cache: Arc<Cache>,
    workspace: PathBuf,
    reporter: Arc<Reporter>,
    run_start: Instant,
    artifacts: BTreeMap<String, Artifact>,
    /// Per kernel: the templates, previous outputs and model identity the
    /// host hands it (see `reserved`).
    reserved: BTreeMap<String, BTreeMap<String, Artifact>>,
    /// Per incremental kernel: the cache blobs of the previous outputs
    /// it was handed, for the run record.
    previous_handed: BTreeMap<String, BTreeMap<String, String>>,
    records: Vec<KernelRecord>,
    done: BTreeSet<String>,
    dead: BTreeSet<String>,
    /// The worker processes kernels run in; `None` with `--in-process`.
    workers: Option<Arc<WorkerPool>>,
    /// What kernels may write.
    rules: Arc<WriteRules>,
    /// The kernels that ran in workers, by their pool ticket: a worker's
    /// later death is blamed on one of them.
    tickets: BTreeMap<u64, String>,
    /// Worker deaths after work none of this run's kernels did.
    worker_deaths: Vec<WorkerDeath>,
}

/// Runs a prepared pipeline and writes `run.json` into its workspace.
pub fn run(
    prepared: &Prepared,
    opts: &RunOptions,
    reporter: Arc<Reporter>,
) -> Result<RunOutcome, RunError> {
    let selected = selected_kernels(prepared, opts)?;
    for k in prepared.kernels.values() {
        check_declared_paths(&k.spec, &opts.reserved).map_err(RunError::Reserved)?;
    }
    let rules = Arc::new(WriteRules::new(
        prepared.kernels.values().map(|k| &k.spec),
        opts.reserved.clone(),
    ));
    let workers = match &opts.isolation {
        Isolation::Process { program } => Some(WorkerPool::shared(program)),
        Isolation::InProcess => None,
    };
    let workspace = prepared.pipeline.workspace.clone();
    // Created and opened without following a link in place of the
    // workspace (or of the runtime's folders holding it).
    crate::workspace::hold(&workspace, true).map_err(WorkspaceError::from)?;
    let started_at = now_rfc3339();
    let mut engine = Engine {
        prepared,
        opts,
        cache: Arc::new(Cache::open(&workspace)),
        workspace,
        reporter,
        run_start: Instant::now(),
        artifacts: BTreeMap::new(),
        reserved: BTreeMap::new(),
        previous_handed: BTreeMap::new(),
        records: Vec::new(),
        done: BTreeSet::new(),
        dead: BTreeSet::new(),
        workers,
        rules,
        tickets: BTreeMap::new(),
        worker_deaths: Vec::new(),
    };
    let provided = engine.load_provided()?;
    engine.load_sources(&selected)?;
    engine.check_sources(&selected)?;
    engine.schedule(&selected)?;
    engine.idle_deaths();
    let _ = engine.cache.flush();
    let cancelled = opts.cancel.load(Ordering::SeqCst);
    let failed = !engine.worker_deaths.is_empty()
        || engine
            .records
            .iter()
            .any(|r| r.status == KernelStatus::Failed);
    let status = if cancelled {
        RunStatus::Cancelled
    } else if failed {
        RunStatus::Failed
    } else {
        RunStatus::Ok
    };
    let target_output = match &opts.target {
        RunTarget::Kernel(name) => Some(engine.target_output(name)),
        _ => None,
    };
    let write_once_sources = engine.write_once_sources(&selected);
    let record = RunRecord {
        koas_version: env!("CARGO_PKG_VERSION").to_string(),
        abi_version: koas_kernel_api::abi::ABI_VERSION,
        pipeline: prepared.pipeline.name.clone(),
        pipeline_file: prepared.pipeline.file.clone(),
        workspace: engine.workspace.clone(),
        status,
        started_at,
        finished_at: now_rfc3339(),
        duration_ms: engine.run_start.elapsed().as_secs_f64() * 1000.0,
        jobs: opts.jobs,
        cache_enabled: opts.use_cache,
        target: opts.target.name().map(str::to_string),
        isolation: Some(opts.isolation.name().to_string()),
        kernels: std::mem::take(&mut engine.records),
        worker_deaths: std::mem::take(&mut engine.worker_deaths),
        plan: Some(run_plan(
            prepared,
            opts,
            provided,
            std::mem::take(&mut engine.previous_handed),
            write_once_sources,
        )),
        llm_session: opts.llm.as_ref().and_then(|l| l.session_metadata()),
    };
    records::write_run_record(&engine.workspace, &record)?;
    Ok(RunOutcome {
        record,
        target_output,
    })
}

/// The kernels a run runs: all, or its target and what it depends on.
fn selected_kernels(prepared: &Prepared, opts: &RunOptions) -> Result<BTreeSet<String>, RunError> {
    Ok(match opts.target.name() {
        None => prepared.dag.order.iter().cloned().collect(),
        Some(name) => {
            if !prepared.dag.contains(name) {
                return Err(RunError::UnknownTarget(
                    name.to_string(),
                    prepared.pipeline.kernels.join(", "),
                ));
            }
            prepared.dag.ancestors(name)
        }
    })
}

/// The plan a run record holds: what the run was given.
fn run_plan(
    prepared: &Prepared,
    opts: &RunOptions,
    provided: BTreeMap<String, String>,
    previous: BTreeMap<String, BTreeMap<String, String>>,
    write_once_sources: BTreeMap<String, crate::run_record::RecordedSource>,
) -> RunPlan {
    RunPlan {
        kernels: prepared.pipeline.kernels.clone(),
        inputs: prepared.pipeline.inputs.clone(),
        configs: prepared.configs.clone(),
        kernel_paths: prepared.pipeline.kernel_paths.clone(),
        llm: opts.llm_config.clone(),
        provided,
        host_written: opts.host_written.iter().cloned().collect(),
        prompts: opts.prompts.dir().map(std::path::Path::to_path_buf),
        previous,
        write_once_sources,
        plugins: prepared
            .kernels
            .iter()
            .map(|(name, k)| {
                let path = std::fs::canonicalize(&k.library).unwrap_or_else(|_| k.library.clone());
                (name.clone(), path)
            })
            .collect(),
    }
}

impl Engine<'_> {
    fn now_ms(&self) -> f64 {
        self.run_start.elapsed().as_secs_f64() * 1000.0
    }

    fn kernel(&self, name: &str) -> &LoadedKernel {
        &self.prepared.kernels[name]
    }
}
