//! Runs of a pipeline started by a host that embeds the runtime: how a
//! command's runs are stopped and watched ([`Control`]), the model they
//! share ([`HostLlm`]), and one run with inputs the host already holds
//! ([`run`]).

use super::{interrupt, llm_service, prompts_folder, HostError, HostOptions};
use crate::cache::Cache;
use crate::discovery::Discovery;
use crate::engine::{self, Provided, RunOptions, RunOutcome};
use crate::host::SharedLlm;
use crate::llm_host::{identity, project_layer, resolve_config, LlmLayer, LlmOverrides};
use crate::pipeline::Pipeline;
use crate::prepare::{prepare, Prepared};
use crate::progress::{Observer, Reporter};
use crate::run_record::{KernelStatus, RunRecord, RunStatus};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// How a command's runs are stopped and watched: the command line uses
/// the process's Ctrl-C flag and prints progress on stderr; an embedding
/// program (a server) gives each request its own flag and relays
/// progress to its client.
#[derive(Clone, Default)]
pub struct Control {
    /// Set to stop the runs after the current step; `None`: the process's
    /// Ctrl-C flag, asked for only when a run starts (until then a
    /// Ctrl-C ends the process at once).
    pub cancel: Option<Arc<AtomicBool>>,
    /// Told every step of every run.
    pub observer: Option<Observer>,
    /// The command's one progress display, made by its first run and
    /// shared by the next ones (so a command's runs show one bar, and a
    /// kernel a later run takes from the cache is not listed twice);
    /// cleared when the last clone of this `Control` goes.
    progress: Arc<CommandProgress>,
    /// The cache entries the command's runs used, by workspace: what a
    /// collection at the end of the command keeps.
    used: Arc<Mutex<BTreeMap<PathBuf, Used>>>,
}

/// Cache entries a command used in one workspace.
#[derive(Default)]
struct Used {
    actions: BTreeSet<String>,
    blobs: BTreeSet<String>,
}

/// Holds the progress display of one command; clears it on drop.
#[derive(Default)]
struct CommandProgress(Mutex<Option<Arc<Reporter>>>);

impl Drop for CommandProgress {
    fn drop(&mut self) {
        if let Some(reporter) = self.0.lock().ok().and_then(|mut p| p.take()) {
            reporter.finish();
        }
    }
}

impl Control {
    /// The command line's: Ctrl-C, progress on stderr only.
    pub fn ctrl_c() -> Control {
        Control::default()
    }

    /// A request of its own: stopped by setting `cancel`, watched by
    /// `observer`.
    pub fn new(cancel: Arc<AtomicBool>, observer: Option<Observer>) -> Control {
        Control {
            cancel: Some(cancel),
            observer,
            progress: Arc::default(),
            used: Arc::default(),
        }
    }

    /// The command's progress display (made on first use): silent with
    /// `--quiet`, telling the observer every step.
    fn reporter(&self, global: &HostOptions) -> Arc<Reporter> {
        let make = || {
            let reporter = global.reporter(0);
            Arc::new(match &self.observer {
                Some(observer) => reporter.with_observer(observer.clone()),
                None => reporter,
            })
        };
        match self.progress.0.lock() {
            Ok(mut slot) => slot.get_or_insert_with(make).clone(),
            Err(_) => make(),
        }
    }

    /// The flag a run watches.
    fn flag(&self) -> Arc<AtomicBool> {
        match &self.cancel {
            Some(flag) => flag.clone(),
            None => interrupt::flag("finishing the current step"),
        }
    }

    /// Remembers the cache entries a finished run used (its kernels'
    /// action keys, input and output blobs).
    fn note_used(&self, record: &RunRecord) {
        let Ok(mut used) = self.used.lock() else {
            return;
        };
        let entry = used.entry(record.workspace.clone()).or_default();
        for k in &record.kernels {
            entry.actions.extend(k.cache_key.iter().cloned());
            entry.actions.extend(k.next_cache_key.iter().cloned());
        }
        // Every blob the record names (outputs, inputs, what the host
        // provided, previous outputs handed over): `koas replay` of this
        // run reads them all. Blob names are 64 hex digits.
        fn blobs_in(v: &Value, out: &mut BTreeSet<String>) {
            match v {
                Value::String(s) if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    out.insert(s.clone());
                }
                Value::Array(items) => items.iter().for_each(|i| blobs_in(i, out)),
                Value::Object(map) => map.values().for_each(|i| blobs_in(i, out)),
                _ => {}
            }
        }
        if let Ok(value) = serde_json::to_value(record) {
            blobs_in(&value, &mut entry.blobs);
        }
    }

    /// Collects the cache of every workspace this command ran in: keeps
    /// what its runs used and what the incremental kernels remember,
    /// deletes the rest (artifacts of older inputs), so a workspace does
    /// not grow with every run. Best effort: a failure leaves more on
    /// disk, never less than a run needs.
    pub fn collect_caches(&self, global: &HostOptions) {
        let Ok(used) = self.used.lock() else {
            return;
        };
        for (workspace, used) in used.iter() {
            let mut blobs = used.blobs.clone();
            blobs.extend(engine::previous_blobs(workspace));
            match Cache::open(workspace).collect(&used.actions, &blobs) {
                Ok(done) if global.verbose && done.bytes > 0 => eprintln!(
                    "koas: cache: {} older entries deleted ({} KB freed)",
                    done.actions + done.blobs,
                    done.bytes / 1024
                ),
                Ok(_) => {}
                Err(e) => eprintln!("warning: cache collection in {}: {e}", workspace.display()),
            }
        }
    }

    /// True once the runs were asked to stop.
    pub fn interrupted(&self) -> bool {
        match &self.cancel {
            Some(flag) => flag.load(std::sync::atomic::Ordering::SeqCst),
            None => interrupt::interrupted(),
        }
    }
}

/// The model of a command, set up once for all its runs.
#[derive(Clone)]
pub struct HostLlm {
    handler: SharedLlm,
    identity: Value,
    config: Value,
    /// The tutor model, when one is configured.
    pub tutor_model: Option<String>,
    /// Requests in flight at once: the slots of every endpoint together.
    pub max_in_flight: usize,
    /// The servers' base URLs (comma-separated when several), for
    /// messages.
    pub endpoint: String,
}

impl HostLlm {
    /// The model a run in `pipeline`'s workspace uses: the `[llm]` table
    /// of the project's `koas.toml` (found upward from `folder`), then the
    /// pipeline's, then `extra` layers, then `overrides` (the flags).
    /// `None` when nothing configures a model. Progress is shown on
    /// stderr unless `quiet`.
    pub fn configured(
        pipeline: &Pipeline,
        folder: &Path,
        extra: Vec<LlmLayer>,
        overrides: &LlmOverrides,
        quiet: bool,
    ) -> Result<Option<HostLlm>, HostError> {
        let mut layers: Vec<LlmLayer> = project_layer(folder)?.into_iter().collect();
        if let Some(table) = &pipeline.llm {
            layers.push(LlmLayer {
                origin: pipeline.file.clone(),
                table: table.clone(),
            });
        }
        layers.extend(extra);
        let Some((config_value, config)) = resolve_config(&layers, overrides)? else {
            return Ok(None);
        };
        let identity = identity(&config);
        let tutor_model = config.tutor_model.clone();
        let max_in_flight = config.total_slots();
        let endpoint = config
            .endpoints()
            .into_iter()
            .map(|e| e.url)
            .collect::<Vec<_>>()
            .join(", ");
        let origin = layers
            .last()
            .map(|l| l.origin.clone())
            .unwrap_or_else(|| PathBuf::from("the command line"));
        let handler = llm_service(config, &pipeline.workspace, &origin, quiet)?;
        Ok(Some(HostLlm {
            handler,
            identity,
            config: config_value,
            tutor_model,
            max_in_flight,
            endpoint,
        }))
    }

    /// The backend and the model of each role, as reports show them.
    pub fn models(&self) -> (String, BTreeMap<String, String>) {
        let backend = self.identity["backend"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let models = self.identity["models"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(role, model)| Some((role.clone(), model.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        (backend, models)
    }
}

/// What a run needs besides the pipeline.
#[derive(Default)]
pub struct RunInputs {
    /// Artifacts the host provides instead of a kernel, by name.
    pub provided: BTreeMap<String, Provided>,
    /// The contents of `[inputs]` entries the host already read (with its
    /// own guards), by artifact name: the engine keys them under the
    /// entry's path as if it had read that file.
    pub sources: BTreeMap<String, Arc<[u8]>>,
    /// Outputs whose declared files the host writes itself.
    pub host_written: BTreeSet<String>,
    /// Workspace paths no kernel may declare, with what the host keeps
    /// there.
    pub reserved: Vec<(String, String)>,
    /// The model, when the command has one.
    pub llm: Option<HostLlm>,
    /// Show no progress (a run that only reads cached results back).
    pub quiet: bool,
    /// The command's cache collection does not keep this run's entries
    /// (its result is kept elsewhere).
    pub transient: bool,
}

/// How a run ended when it did not succeed.
#[derive(Debug)]
pub enum RunFailure {
    /// A kernel failed (the message names it).
    Kernel(String),
    /// The run was asked to stop; it stopped after the current step.
    Interrupted,
}

/// One engine run of `pipeline` with the kernels of `discovery`, stopped
/// and watched by `control`: prepared, then run with `inputs`. The
/// outer error is a run that could not start; the inner one a run that
/// started and did not succeed.
pub fn run(
    global: &HostOptions,
    control: &Control,
    pipeline: &Pipeline,
    discovery: &Discovery,
    inputs: RunInputs,
) -> Result<(Prepared, Result<RunOutcome, RunFailure>), HostError> {
    let prepared = prepare(pipeline, discovery)?;
    let mut opts = RunOptions::new(pipeline.jobs);
    opts.cancel = control.flag();
    opts.isolation = global.isolation(Some(pipeline));
    opts.limits = global.limits(pipeline);
    opts.reserved = inputs.reserved;
    opts.provided = inputs.provided;
    opts.source_contents = inputs.sources;
    opts.host_written = inputs.host_written;
    opts.prompts = prompts_folder(pipeline.prompts.as_deref())?;
    if let Some(llm) = inputs.llm {
        opts.llm = Some(llm.handler);
        opts.llm_identity = Some(llm.identity);
        opts.llm_config = Some(llm.config);
    }
    // A run that only reads cached results back shows nothing, but the
    // observer still hears it.
    let (reporter, own) = if inputs.quiet {
        let reporter = Reporter::quiet();
        let reporter = match &control.observer {
            Some(observer) => reporter.with_observer(observer.clone()),
            None => reporter,
        };
        (Arc::new(reporter), true)
    } else {
        (control.reporter(global), false)
    };
    reporter.plan(&prepared.dag.order);
    let outcome =
        engine::run(&prepared, &opts, reporter.clone()).map_err(|source| HostError::Run {
            pipeline: pipeline.file.clone(),
            source: Box::new(source),
        })?;
    if !inputs.transient {
        control.note_used(&outcome.record);
    }
    if own {
        reporter.finish();
    }
    let result = match outcome.record.status {
        RunStatus::Ok => Ok(outcome),
        RunStatus::Cancelled => Err(RunFailure::Interrupted),
        RunStatus::Failed => Err(RunFailure::Kernel(failures(&outcome.record))),
    };
    Ok((prepared, result))
}

/// The failed kernels of a run, one line each.
fn failures(record: &RunRecord) -> String {
    record
        .kernels
        .iter()
        .filter(|k| k.status == KernelStatus::Failed)
        .map(|k| {
            format!(
                "kernel `{}` ({}) failed: {}",
                k.name,
                k.plugin.display(),
                k.error.as_deref().unwrap_or("no message")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
