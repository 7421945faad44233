//! Running a prepared pipeline: cache lookups, parallel execution, failure
//! isolation, cancellation and the run record.
//!
//! A kernel becomes ready when every producer of its inputs has finished.
//! Its cache key (see [`crate::cache::cache_key`]) is computed from the
//! hashes of those inputs; on a hit its outputs are taken from the store
//! without executing it, so a kernel whose upstream re-ran but produced the
//! same bytes is not re-run either (early cutoff). Misses run on a rayon
//! pool of `jobs` threads. A failure marks every downstream kernel as
//! skipped while independent branches go on.

use crate::cache::{cache_key, ActionRecord, Cache, KeyParts};
use crate::dag::Producer;
use crate::discovery::LoadedKernel;
use crate::fsio::atomic_write;
use crate::host::{RunHost, SharedLlm};
use crate::prepare::Prepared;
use crate::report::{Reporter, Shown};
use crate::run_record::{
    now_rfc3339, CacheUse, KernelRecord, KernelStatus, RunPlan, RunRecord, RunStatus,
    RUN_RECORD_FILE,
};
use crate::workspace::{materialize, WorkspaceError};
use koas_kernel_api::protocol::{RunRequest, RunResponse};
use koas_kernel_api::{ErrorKind, SourceFile};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

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
    fn name(&self) -> Option<&str> {
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

struct Artifact {
    hash: String,
    value: Option<Arc<Value>>,
}

struct Completion {
    kernel: String,
    key: String,
    inputs: BTreeMap<String, Option<String>>,
    start_ms: f64,
    end_ms: f64,
    started_at: String,
    finished_at: String,
    result: Result<Produced, (String, bool)>,
    logs: Vec<String>,
    files: Vec<String>,
}

struct Produced {
    outputs: BTreeMap<String, (String, Arc<Value>)>,
    summary: String,
    warnings: Vec<String>,
}

/// The id of an artifact the host provides in memory: its name and
/// canonical JSON, so equal values get equal ids whatever their key order.
fn provided_hash(name: &str, value: &Value) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"koas-provided-v1\0");
    h.update(name.as_bytes());
    h.update(b"\0");
    h.update(&koas_kernel_api::hash::canonical_bytes(value));
    h.finalize().to_hex().to_string()
}

fn source_hash(path: &Path, bytes: &[u8]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"koas-source-v1\0");
    h.update(path.to_string_lossy().as_bytes());
    h.update(b"\0");
    h.update(bytes);
    h.finalize().to_hex().to_string()
}

/// The bytes written to an artifact's declared file: the raw text of a
/// JSON string (unless the file ends in `.json`), pretty JSON otherwise.
pub fn file_bytes(file: &str, value: &Value) -> Vec<u8> {
    match value {
        Value::String(s) if !file.ends_with(".json") => s.as_bytes().to_vec(),
        other => {
            let mut v = serde_json::to_vec_pretty(other).unwrap_or_default();
            v.push(b'\n');
            v
        }
    }
}

struct Engine<'a> {
    prepared: &'a Prepared,
    opts: &'a RunOptions,
    cache: Arc<Cache>,
    workspace: PathBuf,
    reporter: Arc<Reporter>,
    run_start: Instant,
    artifacts: BTreeMap<String, Artifact>,
    records: Vec<KernelRecord>,
    done: BTreeSet<String>,
    dead: BTreeSet<String>,
}

/// Runs a prepared pipeline and writes `run.json` into its workspace.
pub fn run(
    prepared: &Prepared,
    opts: &RunOptions,
    reporter: Arc<Reporter>,
) -> Result<RunOutcome, RunError> {
    let selected: BTreeSet<String> = match opts.target.name() {
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
    };
    let workspace = prepared.pipeline.workspace.clone();
    std::fs::create_dir_all(&workspace).map_err(|source| WorkspaceError::Io {
        path: workspace.clone(),
        source,
    })?;
    let started_at = now_rfc3339();
    let mut engine = Engine {
        prepared,
        opts,
        cache: Arc::new(Cache::open(&workspace)),
        workspace,
        reporter,
        run_start: Instant::now(),
        artifacts: BTreeMap::new(),
        records: Vec::new(),
        done: BTreeSet::new(),
        dead: BTreeSet::new(),
    };
    let provided = engine.load_provided()?;
    engine.load_sources(&selected)?;
    engine.schedule(&selected)?;
    let _ = engine.cache.flush();
    let cancelled = opts.cancel.load(Ordering::SeqCst);
    let failed = engine
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
        kernels: std::mem::take(&mut engine.records),
        plan: Some(RunPlan {
            kernels: prepared.pipeline.kernels.clone(),
            inputs: prepared.pipeline.inputs.clone(),
            configs: prepared.configs.clone(),
            kernel_paths: prepared.pipeline.kernel_paths.clone(),
            llm: opts.llm_config.clone(),
            provided,
            host_written: opts.host_written.iter().cloned().collect(),
        }),
        llm_session: opts.llm.as_ref().and_then(|l| l.session_metadata()),
    };
    let record_path = engine.workspace.join(RUN_RECORD_FILE);
    let bytes = serde_json::to_vec_pretty(&record).map_err(|e| WorkspaceError::Io {
        path: record_path.clone(),
        source: std::io::Error::other(e),
    })?;
    atomic_write(&record_path, &bytes).map_err(WorkspaceError::from)?;
    Ok(RunOutcome {
        record,
        target_output,
    })
}

impl Engine<'_> {
    fn now_ms(&self) -> f64 {
        self.run_start.elapsed().as_secs_f64() * 1000.0
    }

    fn kernel(&self, name: &str) -> &LoadedKernel {
        &self.prepared.kernels[name]
    }

    /// Registers the artifacts the host provides, and stores their values
    /// in the cache so `koas replay` can provide them again.
    fn load_provided(&mut self) -> Result<BTreeMap<String, String>, RunError> {
        let mut stored = BTreeMap::new();
        for (name, value) in &self.opts.provided {
            let other = match self.prepared.dag.producers.get(name) {
                Some(Producer::Kernel(k)) => Some(format!("an output of kernel `{k}`")),
                Some(Producer::Source) => Some("an [inputs] entry of the pipeline".to_string()),
                None => None,
            };
            if let Some(other) = other {
                return Err(RunError::ProvidedConflict {
                    name: name.clone(),
                    other,
                });
            }
            stored.insert(
                name.clone(),
                self.cache
                    .put_blob(&koas_kernel_api::hash::canonical_bytes(value))?,
            );
            self.artifacts.insert(
                name.clone(),
                Artifact {
                    hash: provided_hash(name, value),
                    value: Some(Arc::new(value.clone())),
                },
            );
        }
        Ok(stored)
    }

    /// Reads every source file a selected kernel needs.
    fn load_sources(&mut self, selected: &BTreeSet<String>) -> Result<(), RunError> {
        let mut needed = BTreeSet::new();
        for name in selected {
            for input in &self.kernel(name).spec.inputs {
                if self.prepared.dag.producers.get(&input.artifact) == Some(&Producer::Source) {
                    needed.insert(input.artifact.clone());
                }
            }
        }
        for name in needed {
            let Some(path) = self.prepared.pipeline.inputs.get(&name) else {
                continue;
            };
            let bytes = std::fs::read(path).map_err(|e| RunError::Input {
                name: name.clone(),
                path: path.clone(),
                message: e.to_string(),
            })?;
            let hash = source_hash(path, &bytes);
            let file = SourceFile::from_bytes(&path.display().to_string(), &bytes);
            let value = serde_json::to_value(file).unwrap_or(Value::Null);
            self.artifacts.insert(
                name,
                Artifact {
                    hash,
                    value: Some(Arc::new(value)),
                },
            );
        }
        Ok(())
    }

    /// The number of distinct selected kernels producing `name`'s inputs.
    fn upstream(&self, name: &str) -> BTreeSet<String> {
        self.kernel(name)
            .spec
            .inputs
            .iter()
            .filter_map(|i| match self.prepared.dag.producers.get(&i.artifact) {
                Some(Producer::Kernel(k)) => Some(k.clone()),
                _ => None,
            })
            .collect()
    }

    fn schedule(&mut self, selected: &BTreeSet<String>) -> Result<(), RunError> {
        let order: Vec<String> = self
            .prepared
            .dag
            .order
            .iter()
            .filter(|k| selected.contains(*k))
            .cloned()
            .collect();
        let mut waiting: BTreeMap<String, usize> = order
            .iter()
            .map(|k| (k.clone(), self.upstream(k).len()))
            .collect();
        let mut ready: VecDeque<String> =
            order.iter().filter(|k| waiting[*k] == 0).cloned().collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.opts.jobs)
            .thread_name(|i| format!("koas-kernel-{i}"))
            .build()
            .map_err(|e| RunError::Threads(e.to_string()))?;
        let (tx, rx) = mpsc::channel::<Completion>();
        let mut running = 0usize;
        loop {
            while let Some(name) = ready.pop_front() {
                if self.opts.cancel.load(Ordering::SeqCst) {
                    self.skip(&name, "the run was cancelled before it started".into());
                    continue;
                }
                let (inputs, key) = self.key_for(&name);
                if self.opts.use_cache {
                    if let Some(hit) = self.cache.get_action(&key) {
                        match self.take_hit(&name, &inputs, &key, hit) {
                            Ok(()) => {
                                self.release(&name, &mut waiting, &mut ready);
                                continue;
                            }
                            Err(e) => {
                                self.reporter.note(&format!(
                                    "{name}: cache entry unusable ({e}); running it"
                                ));
                            }
                        }
                    }
                }
                if running >= self.opts.jobs {
                    ready.push_front(name);
                    break;
                }
                match self.request_for(&name) {
                    Ok(request) => {
                        self.spawn(&pool, &tx, &name, request, key, inputs);
                        running += 1;
                    }
                    Err(e) => {
                        let now = self.now_ms();
                        self.fail(&name, &inputs, Some(key), now, now, e, false);
                    }
                }
            }
            if running == 0 {
                break;
            }
            let Ok(c) = rx.recv() else { break };
            running -= 1;
            let name = c.kernel.clone();
            if self.finish(c) {
                self.release(&name, &mut waiting, &mut ready);
            }
        }
        // Whatever never became ready sits behind a failure or a cancel.
        for name in order {
            if !self.done.contains(&name) && !self.dead.contains(&name) {
                let reason = if self.opts.cancel.load(Ordering::SeqCst) {
                    "the run was cancelled before it started".to_string()
                } else {
                    "an upstream kernel did not complete".to_string()
                };
                self.skip(&name, reason);
            }
        }
        Ok(())
    }

    /// Input hashes and cache key of a ready kernel.
    fn key_for(&self, name: &str) -> (BTreeMap<String, Option<String>>, String) {
        let k = self.kernel(name);
        let inputs: BTreeMap<String, Option<String>> = k
            .spec
            .inputs
            .iter()
            .map(|i| {
                (
                    i.artifact.clone(),
                    self.artifacts.get(&i.artifact).map(|a| a.hash.clone()),
                )
            })
            .collect();
        let plugin_hash = self
            .cache
            .plugin_hash(&k.library)
            .unwrap_or_else(|_| format!("unreadable:{}", k.library.display()));
        let key = cache_key(&KeyParts {
            kernel: &k.spec.name,
            version: &k.spec.version,
            plugin_hash: &plugin_hash,
            config: &self.prepared.configs[name],
            inputs: &inputs,
            llm: if k.spec.uses_llm {
                self.opts.llm_identity.as_ref()
            } else {
                None
            },
        });
        (inputs, key)
    }

    fn base_record(&self, name: &str, inputs: &BTreeMap<String, Option<String>>) -> KernelRecord {
        let k = self.kernel(name);
        KernelRecord {
            name: name.to_string(),
            version: k.spec.version.clone(),
            stage: k.spec.stage.clone(),
            status: KernelStatus::Skipped,
            cache: CacheUse::None,
            started_at: None,
            finished_at: None,
            start_ms: None,
            end_ms: None,
            input_hashes: inputs.clone(),
            output_hashes: BTreeMap::new(),
            cache_key: None,
            plugin: k.library.clone(),
            plugin_hash: self.cache.plugin_hash(&k.library).ok(),
            summary: String::new(),
            warnings: Vec::new(),
            error: None,
            skipped_reason: None,
            files_written: Vec::new(),
            log: Vec::new(),
        }
    }

    /// Uses a cache entry: restores missing declared files and records the
    /// outputs' hashes.
    fn take_hit(
        &mut self,
        name: &str,
        inputs: &BTreeMap<String, Option<String>>,
        key: &str,
        hit: ActionRecord,
    ) -> Result<(), WorkspaceError> {
        let start = self.now_ms();
        for o in &self.kernel(name).spec.outputs {
            let (Some(file), Some(hash)) = (&o.file, hit.outputs.get(&o.artifact)) else {
                continue;
            };
            if self.opts.host_written.contains(&o.artifact) {
                continue;
            }
            let path = self.workspace.join(file);
            if !path.exists() {
                let value = self.cache.get_value(hash)?;
                materialize(&path, &file_bytes(file, &value), o.write_once)?;
            }
        }
        let mut record = self.base_record(name, inputs);
        record.status = KernelStatus::Ok;
        record.cache = CacheUse::Hit;
        let now = now_rfc3339();
        record.started_at = Some(now.clone());
        record.finished_at = Some(now);
        record.start_ms = Some(start);
        record.end_ms = Some(self.now_ms());
        record.output_hashes = hit.outputs.clone();
        record.cache_key = Some(key.to_string());
        record.summary = hit.summary.clone();
        record.warnings = hit.warnings.clone();
        for (artifact, hash) in hit.outputs {
            self.artifacts
                .insert(artifact, Artifact { hash, value: None });
        }
        self.reporter
            .kernel_finished(name, Shown::Cached, 0.0, &record.summary);
        self.records.push(record);
        self.done.insert(name.to_string());
        Ok(())
    }

    /// The value of an artifact, from memory or the store.
    fn value_of(&mut self, artifact: &str) -> Result<Option<Arc<Value>>, String> {
        let Some(a) = self.artifacts.get(artifact) else {
            return Ok(None);
        };
        if let Some(v) = &a.value {
            return Ok(Some(v.clone()));
        }
        let v = Arc::new(
            self.cache
                .get_value(&a.hash)
                .map_err(|e| format!("cannot read input `{artifact}` from the cache: {e}"))?,
        );
        if let Some(a) = self.artifacts.get_mut(artifact) {
            a.value = Some(v.clone());
        }
        Ok(Some(v))
    }

    fn request_for(&mut self, name: &str) -> Result<RunRequest, String> {
        let inputs: Vec<String> = self
            .kernel(name)
            .spec
            .inputs
            .iter()
            .map(|i| i.artifact.clone())
            .collect();
        let mut values = BTreeMap::new();
        for artifact in inputs {
            if let Some(v) = self.value_of(&artifact)? {
                values.insert(artifact, (*v).clone());
            }
        }
        Ok(RunRequest {
            config: self.prepared.configs[name].clone(),
            inputs: values,
        })
    }

    fn spawn(
        &self,
        pool: &rayon::ThreadPool,
        tx: &mpsc::Sender<Completion>,
        name: &str,
        request: RunRequest,
        key: String,
        inputs: BTreeMap<String, Option<String>>,
    ) {
        let kernel = self.kernel(name).clone();
        let tx = tx.clone();
        let cache = self.cache.clone();
        let workspace = self.workspace.clone();
        let reporter = self.reporter.clone();
        let cancel = self.opts.cancel.clone();
        let llm = self.opts.llm.clone();
        let host_written = self.opts.host_written.clone();
        let run_start = self.run_start;
        pool.spawn(move || {
            reporter.kernel_started(&kernel.spec.name);
            let started_at = now_rfc3339();
            let start_ms = run_start.elapsed().as_secs_f64() * 1000.0;
            let host = RunHost::new(
                &kernel.spec.name,
                &workspace,
                &cancel,
                &reporter,
                llm.as_deref(),
            );
            let response = kernel.handle.run(kernel.index, &host, &request);
            drop(request);
            let result = match response {
                RunResponse::Ok(out) => {
                    store_outputs(&kernel, &cache, &workspace, &key, out, &host_written)
                        .map_err(|e| (e, false))
                }
                RunResponse::Error(e) => Err((
                    match e.kind {
                        ErrorKind::Panic if !e.message.starts_with("panicked") => {
                            format!("panicked: {}", e.message)
                        }
                        _ => e.message,
                    },
                    e.kind == ErrorKind::Cancelled,
                )),
            };
            let completion = Completion {
                kernel: kernel.spec.name.clone(),
                key,
                inputs,
                start_ms,
                end_ms: run_start.elapsed().as_secs_f64() * 1000.0,
                started_at,
                finished_at: now_rfc3339(),
                result,
                logs: host.logs.lock().map(|l| l.clone()).unwrap_or_default(),
                files: host.files.lock().map(|l| l.clone()).unwrap_or_default(),
            };
            let _ = tx.send(completion);
        });
    }

    /// Records a finished kernel; `true` when it succeeded.
    fn finish(&mut self, c: Completion) -> bool {
        let name = c.kernel.clone();
        let (inputs, key) = (c.inputs, c.key);
        match c.result {
            Ok(produced) => {
                let mut record = self.base_record(&name, &inputs);
                record.status = KernelStatus::Ok;
                record.cache = if self.opts.use_cache {
                    CacheUse::Miss
                } else {
                    CacheUse::Disabled
                };
                record.started_at = Some(c.started_at);
                record.finished_at = Some(c.finished_at);
                record.start_ms = Some(c.start_ms);
                record.end_ms = Some(c.end_ms);
                record.cache_key = Some(key);
                record.summary = produced.summary;
                record.warnings = produced.warnings;
                record.files_written = c.files;
                record.log = c.logs;
                for (artifact, (hash, value)) in produced.outputs {
                    record.output_hashes.insert(artifact.clone(), hash.clone());
                    self.artifacts.insert(
                        artifact,
                        Artifact {
                            hash,
                            value: Some(value),
                        },
                    );
                }
                self.reporter.kernel_finished(
                    &name,
                    Shown::Ran,
                    c.end_ms - c.start_ms,
                    &record.summary,
                );
                self.records.push(record);
                self.done.insert(name);
                true
            }
            Err((message, cancelled)) => {
                self.fail_with(
                    &name,
                    &inputs,
                    Some(key),
                    (c.start_ms, c.end_ms),
                    (c.started_at, c.finished_at),
                    message,
                    cancelled,
                    (c.logs, c.files),
                );
                false
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn fail(
        &mut self,
        name: &str,
        inputs: &BTreeMap<String, Option<String>>,
        key: Option<String>,
        start_ms: f64,
        end_ms: f64,
        message: String,
        cancelled: bool,
    ) {
        let now = now_rfc3339();
        self.fail_with(
            name,
            inputs,
            key,
            (start_ms, end_ms),
            (now.clone(), now),
            message,
            cancelled,
            (Vec::new(), Vec::new()),
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn fail_with(
        &mut self,
        name: &str,
        inputs: &BTreeMap<String, Option<String>>,
        key: Option<String>,
        (start_ms, end_ms): (f64, f64),
        (started_at, finished_at): (String, String),
        message: String,
        cancelled: bool,
        (logs, files): (Vec<String>, Vec<String>),
    ) {
        let mut record = self.base_record(name, inputs);
        record.status = if cancelled {
            KernelStatus::Cancelled
        } else {
            KernelStatus::Failed
        };
        record.cache = if self.opts.use_cache {
            CacheUse::Miss
        } else {
            CacheUse::Disabled
        };
        record.start_ms = Some(start_ms);
        record.end_ms = Some(end_ms);
        record.started_at = Some(started_at);
        record.finished_at = Some(finished_at);
        record.cache_key = key;
        record.error = Some(message.clone());
        record.log = logs;
        record.files_written = files;
        self.reporter.kernel_finished(
            name,
            if cancelled {
                Shown::Cancelled
            } else {
                Shown::Failed
            },
            end_ms - start_ms,
            &message,
        );
        self.records.push(record);
        self.dead.insert(name.to_string());
        let reason = if cancelled {
            format!("upstream kernel `{name}` was cancelled")
        } else {
            format!("upstream kernel `{name}` failed")
        };
        let mut stack = self.prepared.dag.dependents(name);
        while let Some(d) = stack.pop() {
            if self.dead.contains(&d) || self.done.contains(&d) {
                continue;
            }
            self.skip(&d, reason.clone());
            stack.extend(self.prepared.dag.dependents(&d));
        }
    }

    fn skip(&mut self, name: &str, reason: String) {
        if !self.prepared.kernels.contains_key(name) || self.dead.contains(name) {
            return;
        }
        let mut record = self.base_record(name, &BTreeMap::new());
        record.status = KernelStatus::Skipped;
        record.skipped_reason = Some(reason.clone());
        self.reporter
            .kernel_finished(name, Shown::Skipped, 0.0, &reason);
        self.records.push(record);
        self.dead.insert(name.to_string());
    }

    /// Makes the dependents of a finished kernel ready when all their
    /// producers are done.
    fn release(
        &self,
        name: &str,
        waiting: &mut BTreeMap<String, usize>,
        ready: &mut VecDeque<String>,
    ) {
        for d in self.prepared.dag.dependents(name) {
            if let Some(n) = waiting.get_mut(&d) {
                *n = n.saturating_sub(1);
                if *n == 0 && !self.dead.contains(&d) {
                    ready.push_back(d);
                }
            }
        }
    }

    fn target_output(&mut self, name: &str) -> TargetOutput {
        let k = self.kernel(name).clone();
        let record = self.records.iter().find(|r| r.name == name).cloned();
        let mut outputs = BTreeMap::new();
        if record.as_ref().map(|r| r.status) == Some(KernelStatus::Ok) {
            for o in &k.spec.outputs {
                if let Ok(Some(v)) = self.value_of(&o.artifact) {
                    outputs.insert(o.artifact.clone(), (*v).clone());
                }
            }
        }
        TargetOutput {
            kernel: name.to_string(),
            version: k.spec.version.clone(),
            status: record
                .as_ref()
                .map(|r| r.status)
                .unwrap_or(KernelStatus::Skipped),
            cache: record.as_ref().map(|r| r.cache).unwrap_or(CacheUse::None),
            summary: record
                .as_ref()
                .map(|r| r.summary.clone())
                .unwrap_or_default(),
            warnings: record
                .as_ref()
                .map(|r| r.warnings.clone())
                .unwrap_or_default(),
            error: record
                .as_ref()
                .and_then(|r| r.error.clone().or_else(|| r.skipped_reason.clone())),
            outputs,
        }
    }
}

/// Checks a kernel's outputs against its spec, stores them and writes
/// their declared files (except the host-written ones). Runs on the worker
/// thread.
fn store_outputs(
    kernel: &LoadedKernel,
    cache: &Cache,
    workspace: &Path,
    key: &str,
    out: koas_kernel_api::KernelOutput,
    host_written: &BTreeSet<String>,
) -> Result<Produced, String> {
    let spec = &kernel.spec;
    let declared: BTreeSet<&str> = spec.outputs.iter().map(|o| o.artifact.as_str()).collect();
    if let Some(extra) = out
        .artifacts
        .keys()
        .find(|a| !declared.contains(a.as_str()))
    {
        return Err(format!(
            "returned artifact `{extra}`, which its spec does not declare (declared: {})",
            declared.iter().copied().collect::<Vec<_>>().join(", ")
        ));
    }
    let mut artifacts = out.artifacts;
    let mut outputs = BTreeMap::new();
    for o in &spec.outputs {
        let value = artifacts
            .remove(&o.artifact)
            .ok_or_else(|| format!("did not return its declared output `{}`", o.artifact))?;
        let bytes = koas_kernel_api::hash::canonical_bytes(&value);
        let hash = cache.put_blob(&bytes).map_err(|e| e.to_string())?;
        if let Some(file) = o
            .file
            .as_ref()
            .filter(|_| !host_written.contains(&o.artifact))
        {
            materialize(
                &workspace.join(file),
                &file_bytes(file, &value),
                o.write_once,
            )
            .map_err(|e| e.to_string())?;
        }
        outputs.insert(o.artifact.clone(), (hash, Arc::new(value)));
    }
    let record = ActionRecord {
        kernel: spec.name.clone(),
        version: spec.version.clone(),
        outputs: outputs
            .iter()
            .map(|(k, (h, _))| (k.clone(), h.clone()))
            .collect(),
        summary: out.summary.clone(),
        warnings: out.warnings.clone(),
    };
    cache.put_action(key, &record).map_err(|e| e.to_string())?;
    Ok(Produced {
        outputs,
        summary: out.summary,
        warnings: out.warnings,
    })
}
