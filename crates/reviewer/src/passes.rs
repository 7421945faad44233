//! How the review commands run kernels: the reviewer pipeline (built in,
//! or `--pipeline FILE`) in *passes* over the review workspace.
//!
//! A review command never lets a kernel's output reach the ledger
//! directly. It runs a **planning pass** (`md_apply_ops`, or `md_revert`,
//! with Stage 1 and 2), commits the planned outcome itself through
//! [`koas_review_workspace::PreparedRun`] under the workspace lock, then
//! runs a **view pass** (`md_inline_notes_inject`,
//! `md_review_report_assemble`) on the committed state. The workspace state
//! reaches the kernels as host-provided artifacts (`review_doc`, `ledger`,
//! `review_state`, `review_meta`; see [`koas_review::artifacts`]). Each
//! pass is an ordinary engine run in the workspace (cache in `.koas/`,
//! record in `run.json`, which holds the last pass).

use crate::common::LlmFlags;
pub use crate::outputs::{output, parse_output};
use anyhow::{bail, Context as _};
use koas_kernel_api::hash::sha256;
use koas_orchestrator::cache::Cache;
use koas_orchestrator::discovery::Discovery;
use koas_orchestrator::embed::{
    discover_and_warn, interrupt, llm_service, prompts_folder, HostOptions,
};
use koas_orchestrator::engine::{self, CanonicalJson, Provided, RunOptions, RunOutcome};
use koas_orchestrator::host::SharedLlm;
use koas_orchestrator::llm_host::{identity, project_layer, resolve_config, LlmLayer};
use koas_orchestrator::pipeline::{self, Overrides, Pipeline};
use koas_orchestrator::prepare::{prepare, Prepared};
use koas_orchestrator::report::{Observer, Reporter};
use koas_orchestrator::run_record::{KernelStatus, RunRecord, RunStatus};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// The built-in reviewer pipeline: `configs/reviewer.toml` as shipped.
const BUILT_IN: &str = include_str!("../../../configs/reviewer.toml");

/// How the built-in pipeline is named in messages.
pub const BUILT_IN_NAME: &str = "<built-in reviewer pipeline (configs/reviewer.toml)>";

/// The kernel that applies ops.
pub const APPLY: &str = "md_apply_ops";
/// The kernel that plans reverts.
pub const REVERT: &str = "md_revert";

/// The kernel that summarizes the document with the model.
pub const PYRAMID: &str = "md_pyramid";

/// The kernel that asks the model for edit ops.
pub const EDIT_PLAN: &str = "md_edit_plan";
/// The view kernels: they rebuild the annotated document and the report
/// from the committed state after every run.
pub const VIEWS: [&str; 2] = ["md_inline_notes_inject", "md_review_report_assemble"];
/// The report kernel.
pub const REPORT: &str = "md_review_report_assemble";

#[derive(Debug, Deserialize)]
struct BuiltIn {
    name: String,
    #[serde(default)]
    description: String,
    kernels: Vec<String>,
    #[serde(default)]
    config: BTreeMap<String, Value>,
}

/// The reviewer pipeline for a workspace: `file`, or the built-in one,
/// with `inputs` as its sources and the workspace as its workspace.
pub fn load(
    file: Option<&Path>,
    workspace: &Path,
    inputs: Vec<(String, PathBuf)>,
) -> anyhow::Result<Pipeline> {
    if let Some(file) = file {
        let overrides = Overrides {
            workspace: Some(workspace.to_path_buf()),
            jobs: None,
            inputs,
            sets: Vec::new(),
        };
        return Ok(pipeline::load(file, &overrides)?);
    }
    built_in(
        BUILT_IN,
        BUILT_IN_NAME,
        "the built-in reviewer pipeline",
        workspace,
        inputs,
    )
}

/// The pipeline of a built-in file's `text`, shown as `shown` (its file
/// name in messages), on `workspace` with `inputs` as its sources.
fn built_in(
    text: &str,
    shown: &str,
    what: &str,
    workspace: &Path,
    inputs: Vec<(String, PathBuf)>,
) -> anyhow::Result<Pipeline> {
    let raw: BuiltIn = toml::from_str(text).with_context(|| what.to_owned())?;
    Ok(Pipeline {
        file: PathBuf::from(shown),
        name: raw.name,
        description: raw.description,
        kernels: raw.kernels,
        kernel_paths: Vec::new(),
        workspace: workspace.to_path_buf(),
        jobs: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        inputs: inputs.into_iter().collect(),
        config: raw.config,
        llm: None,
        in_process: false,
        limits: Default::default(),
        prompts: None,
        config_origins: Default::default(),
    })
}

/// Sets `[config.KERNEL] KEY = value` (when the kernel is in the
/// pipeline).
pub fn set_config(pipeline: &mut Pipeline, kernel: &str, key: &str, value: Value) {
    if !pipeline.kernels.iter().any(|k| k == kernel) {
        return;
    }
    let table = pipeline
        .config
        .entry(kernel.to_owned())
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(map) = table.as_object_mut() {
        map.insert(key.to_owned(), value);
    }
}

/// The same pipeline with only the kernels `keep` accepts.
pub fn subset(pipeline: &Pipeline, keep: impl Fn(&str) -> bool) -> Pipeline {
    let mut out = pipeline.clone();
    out.kernels.retain(|k| keep(k));
    out.config.retain(|k, _| keep(k));
    out
}

/// True when the pipeline runs `kernel`.
pub fn has(pipeline: &Pipeline, kernel: &str) -> bool {
    pipeline.kernels.iter().any(|k| k == kernel)
}

/// Finds the kernels once for every pass.
pub fn discover(global: &HostOptions, pipeline: &Pipeline) -> Discovery {
    discover_and_warn(global, pipeline)
}

/// How a command's runs are stopped and watched: the command line uses
/// the process's Ctrl-C flag and prints progress on stderr; an embedding
/// program (the MCP server) gives each request its own flag and relays
/// progress to its client.
#[derive(Clone, Default)]
pub struct Control {
    /// Set to stop the runs after the current step; `None`: the process's
    /// Ctrl-C flag, asked for only when a pass starts (until then a
    /// Ctrl-C ends the process at once).
    pub cancel: Option<Arc<AtomicBool>>,
    /// Told every step of every pass.
    pub observer: Option<Observer>,
    /// The command's one progress display, made by its first pass and
    /// shared by the next ones (so a review's passes show one bar, and a
    /// kernel a later pass takes from the cache is not listed twice);
    /// cleared when the last clone of this `Control` goes.
    progress: Arc<CommandProgress>,
    /// The cache entries the command's passes used, by workspace: what a
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

    /// The flag a pass watches.
    fn flag(&self) -> Arc<AtomicBool> {
        match &self.cancel {
            Some(flag) => flag.clone(),
            None => interrupt::flag("finishing the current step"),
        }
    }

    /// Remembers the cache entries a finished pass used (its kernels'
    /// action keys, input and output blobs).
    fn note_used(&self, record: &RunRecord) {
        let Ok(mut used) = self.used.lock() else {
            return;
        };
        let entry = used.entry(record.workspace.clone()).or_default();
        for k in &record.kernels {
            entry.actions.extend(k.cache_key.iter().cloned());
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

    /// Collects the cache of every workspace this command ran passes in:
    /// keeps what its passes used and what the incremental kernels
    /// remember, deletes the rest (older document versions' artifacts),
    /// so a workspace does not grow with every review. Best effort: a
    /// failure leaves more on disk, never less than a run needs.
    pub fn collect_caches(&self, global: &HostOptions) {
        let Ok(used) = self.used.lock() else {
            return;
        };
        for (workspace, used) in used.iter() {
            let mut blobs = used.blobs.clone();
            blobs.extend(koas_orchestrator::engine::previous_blobs(workspace));
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

/// The model of a review, set up once for all its passes.
#[derive(Clone)]
pub struct ReviewLlm {
    handler: SharedLlm,
    identity: Value,
    config: Value,
    /// The tutor model, when one is configured.
    pub tutor_model: Option<String>,
    /// Requests in flight at once.
    pub max_in_flight: usize,
    /// The server's base URL, for messages.
    pub endpoint: String,
}

impl ReviewLlm {
    /// The backend and the model of each role, as the report shows them.
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

/// The LLM a review of `document` uses: the `[llm]` table of the
/// project's `koas.toml` (found upward from the document), then the
/// pipeline's, then the flags. `None` with `no_llm`, or when nothing
/// configures a model (the LLM kernels then run in their deterministic
/// mode).
pub fn review_llm(
    pipeline: &Pipeline,
    document: &Path,
    flags: &LlmFlags,
    tutor_model: Option<&str>,
    no_llm: bool,
    quiet: bool,
) -> anyhow::Result<Option<ReviewLlm>> {
    if no_llm {
        return Ok(None);
    }
    let folder = document
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut layers: Vec<LlmLayer> = project_layer(folder)?.into_iter().collect();
    if let Some(table) = &pipeline.llm {
        layers.push(LlmLayer {
            origin: pipeline.file.clone(),
            table: table.clone(),
        });
    }
    if let Some(tutor) = tutor_model {
        layers.push(LlmLayer {
            origin: PathBuf::from("--tutor-model"),
            table: serde_json::json!({ "tutor_model": tutor }),
        });
    }
    let Some((config_value, config)) = resolve_config(&layers, &flags.overrides())? else {
        return Ok(None);
    };
    let identity = identity(&config);
    let tutor_model = config.tutor_model.clone();
    let max_in_flight = config.max_in_flight;
    let endpoint = config.endpoint();
    let origin = layers
        .last()
        .map(|l| l.origin.clone())
        .unwrap_or_else(|| PathBuf::from("the command line"));
    let handler = llm_service(config, &pipeline.workspace, &origin, quiet)?;
    Ok(Some(ReviewLlm {
        handler,
        identity,
        config: config_value,
        tutor_model,
        max_in_flight,
        endpoint,
    }))
}

/// What a pass needs besides the pipeline.
#[derive(Default)]
pub struct PassInputs {
    /// Artifacts the host provides instead of a kernel, by name (the
    /// workspace's `review_doc`, `ledger`, `review_state`, `review_meta`).
    pub provided: BTreeMap<String, Provided>,
    /// The contents of `[inputs]` entries the command already read (the
    /// document, read once with its guards), by artifact name: the engine
    /// keys them under the entry's path as if it had read that file.
    pub sources: BTreeMap<String, Arc<[u8]>>,
    /// Outputs whose declared files the host writes itself.
    pub host_written: BTreeSet<String>,
    /// The model, when the review has one.
    pub llm: Option<ReviewLlm>,
    /// Show no progress (a pass that only reads cached results back).
    pub quiet: bool,
    /// The command's cache collection does not keep this pass's entries
    /// (its result is kept elsewhere).
    pub transient: bool,
}

/// How a pass ended when it did not succeed.
pub enum PassFailure {
    /// A kernel failed (its message names it).
    Kernel(String),
    /// Ctrl-C was pressed; the run stopped after the current step.
    Interrupted,
}

/// One engine run of `pipeline` (already reduced to the pass's kernels).
pub fn run_pass(
    global: &HostOptions,
    control: &Control,
    pipeline: &Pipeline,
    discovery: &Discovery,
    inputs: PassInputs,
) -> anyhow::Result<(Prepared, Result<RunOutcome, PassFailure>)> {
    let prepared = prepare(pipeline, discovery)?;
    let mut opts = RunOptions::new(pipeline.jobs);
    opts.cancel = control.flag();
    opts.isolation = global.isolation(Some(pipeline));
    opts.limits = global.limits(pipeline);
    opts.reserved = koas_review_workspace::paths::RESERVED
        .iter()
        .map(|(path, what)| (path.to_string(), what.to_string()))
        .collect();
    opts.provided = inputs.provided;
    opts.source_contents = inputs.sources;
    opts.host_written = inputs.host_written;
    // The workspace wrote its snapshot of the original when it was
    // created; Stage 1 runs on the current document, whose text must not
    // reach that write-once file.
    opts.host_written
        .insert(koas_review_schema::names::DOC_RAW.to_owned());
    opts.prompts = prompts_folder(pipeline.prompts.as_deref())?;
    if let Some(llm) = inputs.llm {
        opts.llm = Some(llm.handler);
        opts.llm_identity = Some(llm.identity);
        opts.llm_config = Some(llm.config);
    }
    // A pass that only reads cached results back shows nothing, but the
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
    let outcome = engine::run(&prepared, &opts, reporter.clone())
        .with_context(|| format!("pipeline {}", pipeline.file.display()))?;
    if !inputs.transient {
        control.note_used(&outcome.record);
    }
    if own {
        reporter.finish();
    }
    let status = outcome.record.status;
    let result = match status {
        RunStatus::Ok => Ok(outcome),
        RunStatus::Cancelled => Err(PassFailure::Interrupted),
        RunStatus::Failed => Err(PassFailure::Kernel(failures(&outcome.record))),
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

/// `review_meta` as canonical JSON, its apply log (one record per op of
/// the last run: 100,000 for a large review) written a record at a time.
/// The destructuring names every field, so a new one cannot be forgotten.
fn context_json(
    context: &koas_review_schema::review::ReportContext,
) -> serde_json::Result<CanonicalJson> {
    let koas_review_schema::review::ReportContext {
        meta,
        apply_log,
        earlier_findings,
        model,
    } = context;
    let mut members = vec![
        ("meta".to_owned(), CanonicalJson::of(meta)?),
        (
            "apply_log".to_owned(),
            CanonicalJson::array(apply_log, |_| {})?,
        ),
        (
            "earlier_findings".to_owned(),
            CanonicalJson::array(earlier_findings, |_| {})?,
        ),
    ];
    if let Some(model) = model {
        members.push(("model".to_owned(), CanonicalJson::of(model)?));
    }
    CanonicalJson::object(members)
}

/// Fails unless the pipeline runs `kernel`.
pub fn require(pipeline: &Pipeline, kernel: &str, why: &str) -> anyhow::Result<()> {
    if !has(pipeline, kernel) {
        bail!(
            "{}: the pipeline has no `{kernel}` kernel, which {why}",
            pipeline.file.display()
        );
    }
    Ok(())
}

/// The kernel versions of every kernel of `pipeline` that discovery found.
pub fn versions_of(pipeline: &Pipeline, discovery: &Discovery) -> Vec<(String, String)> {
    pipeline
        .kernels
        .iter()
        .filter_map(|k| {
            discovery
                .kernels
                .get(k)
                .map(|l| (k.clone(), l.spec.version.clone()))
        })
        .collect()
}

/// What the view pass produced.
#[derive(Default)]
pub struct Views {
    /// `review/REVIEW_<stem>.md`, when the pipeline has the report kernel.
    pub report: Option<PathBuf>,
    /// What the report was made of, for the HTML page (`koas report
    /// --html`); an error when it could not be read back.
    pub data: Option<anyhow::Result<crate::html_report::ViewData>>,
}

/// The view pass on the committed state of `run`: annotated document
/// (written by the engine) and report (written by the host as
/// `review/REVIEW_<stem>.md` and its `stage3/` copy). `notice` is shown
/// under the report's title.
///
/// It runs after a commit, so every failure, a setup error included, is a
/// [`PassFailure`]: the caller reports that the changes are recorded but
/// the views are stale.
pub fn run_views(
    global: &HostOptions,
    control: &Control,
    pipeline: &Pipeline,
    discovery: &Discovery,
    run: &koas_review_workspace::PreparedRun<'_>,
    notice: Option<String>,
) -> Result<Views, PassFailure> {
    run_views_with_model(global, control, pipeline, discovery, run, notice, None)
}

/// [`run_views`] after a run that asked a model: the report says which
/// model, how many calls, and whether the service stopped early.
pub fn run_views_with_model(
    global: &HostOptions,
    control: &Control,
    pipeline: &Pipeline,
    discovery: &Discovery,
    run: &koas_review_workspace::PreparedRun<'_>,
    notice: Option<String>,
    model: Option<koas_review_schema::review::ReviewModelRun>,
) -> Result<Views, PassFailure> {
    views_pass(global, control, pipeline, discovery, run, notice, model).unwrap_or_else(|e| {
        let mut message = e.to_string();
        for cause in e.chain().skip(1) {
            let cause = cause.to_string();
            if !message.contains(&cause) {
                message.push_str(&format!(": {cause}"));
            }
        }
        Err(PassFailure::Kernel(message))
    })
}

/// The Stage 2 findings of the workspace's original document, for the
/// report's resolved findings: Stage 1 and the scans of `pipeline` run on
/// `stage1/doc.raw.md` (cache hits after the first review), writing no
/// file.
fn original_findings(
    global: &HostOptions,
    control: &Control,
    pipeline: &Pipeline,
    discovery: &Discovery,
    workspace: &koas_review_workspace::Workspace,
) -> anyhow::Result<Result<Vec<koas_review_schema::findings::Finding>, PassFailure>> {
    use koas_review_schema::findings::FindingsArtifact;
    use koas_review_schema::names;
    const FINDINGS: [&str; 2] = [names::ISSUES, names::NUMBERING_FINDINGS];
    let spec = |k: &str| discovery.kernels.get(k).map(|l| &l.spec);
    let scans: Vec<String> = pipeline
        .kernels
        .iter()
        .filter(|k| {
            spec(k).is_some_and(|s| {
                s.outputs
                    .iter()
                    .any(|o| FINDINGS.contains(&o.artifact.as_str()))
            })
        })
        .cloned()
        .collect();
    if scans.is_empty() {
        return Ok(Ok(Vec::new()));
    }
    let mut original = subset(pipeline, |k| {
        scans.iter().any(|s| s == k) || spec(k).is_some_and(|s| s.stage == "S1" && !s.uses_llm)
    });
    // The original document never changes in a workspace: its findings are
    // kept in a file, keyed by the kernels (name, version, library) and
    // their config, so the cache need not keep its Stage 1 for them.
    let key = {
        let cache = Cache::open(workspace.root());
        let kernels: Vec<Value> = original
            .kernels
            .iter()
            .filter_map(|k| discovery.kernels.get(k))
            .map(|l| {
                serde_json::json!([
                    l.spec.name,
                    l.spec.version,
                    cache.plugin_hash(&l.library).unwrap_or_default()
                ])
            })
            .collect();
        let config: BTreeMap<&String, &Value> = original
            .config
            .iter()
            .filter(|(k, _)| original.kernels.contains(k))
            .collect();
        let _ = cache.flush();
        sha256(serde_json::to_string(&serde_json::json!([
            kernels, config
        ]))?)
    };
    let kept = workspace.path(ORIGINAL_FINDINGS);
    if let Some(found) = std::fs::read(&kept)
        .ok()
        .and_then(|b| serde_json::from_slice::<KeptFindings>(&b).ok())
        .filter(|k| k.key == key)
    {
        return Ok(Ok(found.findings));
    }
    original.inputs.insert(
        "doc".to_owned(),
        workspace.path(koas_review_workspace::paths::RAW_DOC),
    );
    let mut inputs = PassInputs {
        quiet: true,
        transient: true,
        ..PassInputs::default()
    };
    inputs.host_written = original
        .kernels
        .iter()
        .filter_map(|k| spec(k))
        .flat_map(|s| s.outputs.iter().map(|o| o.artifact.clone()))
        .collect();
    let (_, result) = run_pass(global, control, &original, discovery, inputs)?;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(failure) => return Ok(Err(failure)),
    };
    let mut found = Vec::new();
    for kernel in &scans {
        for artifact in FINDINGS {
            if let Ok(value) = output(&outcome.record, kernel, artifact) {
                let parsed: FindingsArtifact =
                    serde_json::from_value(value).with_context(|| {
                        format!("`{artifact}` of kernel `{kernel}` has an unexpected shape")
                    })?;
                found.extend(parsed.findings);
            }
        }
    }
    // Best effort: without the file, the next view pass runs the scans
    // again.
    if let Ok(bytes) = serde_json::to_vec(&KeptFindings {
        key,
        findings: found.clone(),
    }) {
        let _ = koas_orchestrator::fsio::atomic_write(&kept, &bytes);
    }
    Ok(Ok(found))
}

/// `review/original_findings.json`: the findings of the workspace's
/// original document, for the report's resolved findings.
const ORIGINAL_FINDINGS: &str = "review/original_findings.json";

/// The content of [`ORIGINAL_FINDINGS`].
#[derive(serde::Serialize, Deserialize)]
struct KeptFindings {
    /// What the findings were computed with (see `original_findings`).
    key: String,
    findings: Vec<koas_review_schema::findings::Finding>,
}

fn views_pass(
    global: &HostOptions,
    control: &Control,
    pipeline: &Pipeline,
    discovery: &Discovery,
    run: &koas_review_workspace::PreparedRun<'_>,
    notice: Option<String>,
    model: Option<koas_review_schema::review::ReviewModelRun>,
) -> anyhow::Result<Result<Views, PassFailure>> {
    use koas_review_schema::names;
    use koas_review_schema::review::ReportContext;
    use koas_review_schema::review::ReportMeta;
    // The model's kernels ran in the planning pass; run again here, without
    // the model, they would overwrite what it wrote.
    let uses_llm = |k: &str| discovery.kernels.get(k).is_some_and(|l| l.spec.uses_llm);
    let mut views = subset(pipeline, |k| k != APPLY && k != REVERT && !uses_llm(k));
    let workspace = run.workspace();
    // Stage 1 and 2 describe the document as committed: the file every
    // commit rewrites, whose text the run holds (handed over below).
    let edited = workspace.path(koas_review_workspace::paths::EDITED_DOC);
    let committed = edited.is_file();
    if committed {
        views.inputs.insert("doc".to_owned(), edited);
    }
    if !VIEWS.iter().any(|v| has(&views, v)) {
        return Ok(Ok(Views::default()));
    }
    let meta = ReportMeta {
        generated_at: crate::common::clock().now(),
        tool: format!("koas {}", env!("CARGO_PKG_VERSION")),
        kernels: versions_of(pipeline, discovery),
        doc_name: run.meta().doc_name.clone(),
        original_hash: run.meta().original_hash.clone(),
        current_hash: sha256(run.current_text()),
        notice,
    };
    let earlier_findings =
        if koas_kernel_api::hash::same_hash(&meta.original_hash, &meta.current_hash) {
            Vec::new()
        } else {
            match original_findings(global, control, &views, discovery, workspace)? {
                Ok(found) => found,
                Err(failure) => return Ok(Err(failure)),
            }
        };
    let context = ReportContext {
        meta,
        apply_log: workspace.last_run_log()?,
        model,
        earlier_findings,
    };
    let mut inputs = PassInputs::default();
    if committed {
        inputs
            .sources
            .insert("doc".to_owned(), Arc::from(run.current_text().as_bytes()));
    }
    inputs.provided.insert(
        names::REVIEW_DOC.to_owned(),
        Provided::from(Value::String(run.current_text().to_owned())),
    );
    // The views need no patch text: leaving the ledger's copies out keeps
    // this artifact (and its copy in every request) small. The ledger and
    // the report's context are given as canonical JSON, one entry a tree at
    // a time: as trees they were the largest part of a 100,000-change
    // review's memory.
    let ledger = CanonicalJson::array(run.entries(), |entry| {
        if let Some(entry) = entry.as_object_mut() {
            entry.remove("patch_text");
        }
    })?;
    inputs.provided.insert(
        names::LEDGER.to_owned(),
        Provided::Canonical(Arc::new(ledger)),
    );
    inputs.provided.insert(
        names::REVIEW_META.to_owned(),
        Provided::Canonical(Arc::new(context_json(&context)?)),
    );
    inputs.host_written.insert(names::REVIEW_REPORT.to_owned());
    let (_, result) = run_pass(global, control, &views, discovery, inputs)?;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(failure) => return Ok(Err(failure)),
    };
    if !has(&views, REPORT) {
        return Ok(Ok(Views::default()));
    }
    let text = output(&outcome.record, REPORT, names::REVIEW_REPORT)?;
    let text = text
        .as_str()
        .context("the report kernel returned a report that is not text")?;
    // Findings of the pipeline's other kernels (a third party's checks),
    // computed in this pass on the current document, named by kernel.
    let (found, errors) = crate::kernel_findings::collect(&outcome.record);
    for e in &errors {
        eprintln!("warning: {e}");
    }
    let text = format!(
        "{text}{}",
        crate::kernel_findings::report_section(&found, &errors)
    );
    let path = run.write_report_text(&text)?;
    let data = crate::html_report::ViewData::collect(
        &outcome.record,
        &views,
        discovery,
        context,
        run.current_text(),
        found,
    );
    Ok(Ok(Views {
        report: Some(path),
        data: Some(data),
    }))
}

/// A built-in pipeline other than the reviewer's (`koas refine`'s
/// `configs/refine.toml`), named `shown` in messages, or `file` when
/// given, with `inputs` as its sources and `workspace` as its workspace.
pub fn load_built_in(
    file: Option<&Path>,
    text: &str,
    shown: &str,
    workspace: &Path,
    inputs: Vec<(String, PathBuf)>,
) -> anyhow::Result<Pipeline> {
    if file.is_some() {
        return load(file, workspace, inputs);
    }
    built_in(text, shown, shown, workspace, inputs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::review::{ReportContext, ReviewModelRun};
    use serde_json::json;

    fn context(model: Option<ReviewModelRun>) -> ReportContext {
        ReportContext {
            meta: serde_json::from_value(json!({
                "generated_at": "2026-11-26T06:00:00Z", "tool": "koas test",
                "kernels": [["md_apply_ops", "0.1.0"]], "doc_name": "doc.md",
                "original_hash": "sha256:aa", "current_hash": "sha256:bb",
                "notice": "a \"quoted\" notice"
            }))
            .expect("meta"),
            apply_log: (1..=30)
                .map(|i| {
                    serde_json::from_value(json!({
                        "run_id": "run-1", "op_index": i, "status": "flagged",
                        "id": format!("RVW-{i:04}"), "action": "flag_only", "lines": [i, i],
                        "fixes": [{"fix": "HASH_RECOMPUTE", "from": null, "to": "sha256:b7"},
                                  {"fix": "NOTE_INJECT", "alert": "NOTE"}],
                        "defaults_filled": ["kind"], "reason": format!("op {i} é")
                    }))
                    .expect("record")
                })
                .collect(),
            earlier_findings: Vec::new(),
            model,
        }
    }

    #[test]
    fn the_report_context_written_a_record_at_a_time_is_its_canonical_json() {
        for model in [
            None,
            Some(ReviewModelRun {
                backend: "openai".into(),
                ..ReviewModelRun::default()
            }),
        ] {
            let context = context(model);
            let tree = serde_json::to_value(&context).expect("tree");
            assert_eq!(
                context_json(&context).expect("canonical").bytes(),
                koas_kernel_api::hash::canonical_bytes(&tree)
            );
        }
    }
}
