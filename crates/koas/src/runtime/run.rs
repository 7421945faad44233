//! `koas run`: run a pipeline, part of it, or one kernel for debugging.

use anyhow::{bail, Context as _};
use clap::Args;
use koas_kernel_api::terminal::escape_controls_keep_lines;
use koas_orchestrator::embed::ExitStatus;
pub use koas_orchestrator::embed::LlmFlags;
use koas_orchestrator::embed::{
    discover_and_warn, interrupt, llm_service, prompts_folder, HostOptions,
};
use koas_orchestrator::engine::{self, RunOptions, RunTarget};
use koas_orchestrator::llm_host::{project_layer, resolve_config, LlmLayer, ServiceHandler};
use koas_orchestrator::outln;
use koas_orchestrator::pipeline::{self, Overrides, Pipeline};
use koas_orchestrator::prepare::{prepare, Prepared};
use koas_orchestrator::run_record::{CacheUse, KernelStatus, RunStatus};
use std::path::PathBuf;
use std::sync::Arc;

/// The arguments of `koas run`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  koas run pipeline.toml
  koas run mine pipeline.toml          # checks the file's name = \"mine\"
  koas run pipeline.toml --until split
  koas run pipeline.toml --kernel parse   # prints its outputs as JSON
  koas run pipeline.toml --input doc=spec.md --set split.max_tokens=900")]
pub struct RunArgs {
    /// `[NAME] PIPELINE`: the pipeline file, optionally preceded by the
    /// pipeline's name (which must then match the file's `name`).
    #[arg(value_name = "PIPELINE", num_args = 1..=2, required = true)]
    pub positional: Vec<String>,

    /// Run only this kernel and what it needs, then print its outputs
    /// (JSON) and summary on stdout.
    #[arg(long, value_name = "NAME", conflicts_with = "until")]
    pub kernel: Option<String>,

    /// Run this kernel and everything it depends on, nothing after it.
    #[arg(long, value_name = "NAME")]
    pub until: Option<String>,

    /// Kernels running at once [default: the pipeline's `jobs`, else the
    /// number of CPUs].
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,

    /// Execute every kernel even when the cache has its outputs (the cache
    /// is refreshed with the new results).
    #[arg(long)]
    pub no_cache: bool,

    /// The workspace folder [default: the pipeline's `workspace`, else
    /// .koas/runs/NAME].
    #[arg(short, long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    // `[inputs]` is help text, not a doc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Use this file for a source artifact (overrides [inputs]).
    #[arg(long = "input", value_name = "NAME=PATH")]
    pub inputs: Vec<String>,

    /// Override a kernel config value, e.g. split.max_tokens=900.
    #[arg(long = "set", value_name = "KERNEL.KEY=VALUE")]
    pub sets: Vec<String>,

    // `[inputs]` is help text, not a doc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Refuse an [inputs] file larger than SIZE (bytes, or with K, M or
    /// G) [default: 256M, or KOAS_MAX_INPUT_SIZE]. Inputs must be regular
    /// files: a FIFO, a device, a socket or a folder is refused.
    #[arg(long, value_name = "SIZE")]
    pub max_input_size: Option<String>,

    /// Print the run record (run.json) on stdout.
    #[arg(long)]
    pub json: bool,

    /// Read prompt templates from this folder first (overrides the
    /// pipeline's `prompts` key; templates it lacks come from koas's own).
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,

    /// The model to use, overriding the pipeline's `[llm]` table.
    #[command(flatten)]
    pub llm: LlmFlags,

    /// Answer every LLM request from this exchange log (an earlier run's
    /// llm/exchanges.jsonl) instead of the model: no network; a request
    /// the log does not hold fails with REPLAY_MISS. The `[llm]` table
    /// (backend, models, parameters) must be the recorded run's, since
    /// they are part of each request's key.
    #[arg(long = "llm-replay", value_name = "EXCHANGE_LOG")]
    pub llm_replay: Option<PathBuf>,
}

/// The `[llm]` tables a run of `pipeline` reads, lowest precedence first:
/// the project's `koas.toml` (found upward from the pipeline file's
/// folder), then the pipeline's own table.
pub fn llm_layers(
    pipeline: &koas_orchestrator::pipeline::Pipeline,
) -> anyhow::Result<Vec<LlmLayer>> {
    let folder = pipeline
        .file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let mut layers: Vec<LlmLayer> = project_layer(folder)?.into_iter().collect();
    if let Some(table) = &pipeline.llm {
        layers.push(LlmLayer {
            origin: pipeline.file.clone(),
            table: table.clone(),
        });
    }
    Ok(layers)
}

/// Builds the LLM service for a run when a selected kernel uses an LLM and
/// an LLM is configured.
pub fn llm_for_run(
    prepared: &koas_orchestrator::prepare::Prepared,
    target: &RunTarget,
    flags: &LlmFlags,
    replay: Option<&std::path::Path>,
    quiet: bool,
    opts: &mut RunOptions,
) -> anyhow::Result<()> {
    let selected: Vec<&String> = match target {
        RunTarget::All => prepared.dag.order.iter().collect(),
        RunTarget::Until(n) | RunTarget::Kernel(n) => {
            let a = prepared.dag.ancestors(n);
            prepared
                .dag
                .order
                .iter()
                .filter(|k| a.contains(*k))
                .collect()
        }
    };
    let needs = selected
        .iter()
        .any(|k| prepared.kernels.get(*k).is_some_and(|k| k.spec.uses_llm));
    let Some((value, config)) =
        resolve_config(&llm_layers(&prepared.pipeline)?, &flags.overrides())?
    else {
        if let Some(log) = replay {
            bail!(
                "--llm-replay {}: no [llm] table or --llm-* flags say which backend and models the recorded run used",
                log.display()
            );
        }
        return Ok(());
    };
    opts.llm_identity = Some(koas_orchestrator::llm_host::identity(&config));
    opts.llm_config = Some(value);
    if !needs {
        return Ok(());
    }
    if let Some(log) = replay {
        let source = koas_llm::ReplaySource::from_exchange_log(log)
            .with_context(|| format!("cannot read the exchange log {}", log.display()))?;
        // The run's own log is the usual one, so that `koas replay` works
        // on this workspace like on any other.
        let own_log = prepared.pipeline.workspace.join(koas_llm::EXCHANGE_LOG);
        let service = koas_llm::LlmService::builder(config, &prepared.pipeline.workspace)
            .replay(source)
            .exchange_log(own_log)
            .build()
            .with_context(|| format!("LLM replay of {}", log.display()))?;
        opts.llm = Some(Arc::new(ServiceHandler::new(service)));
        return Ok(());
    }
    opts.llm = Some(llm_service(
        config,
        &prepared.pipeline.workspace,
        &prepared.pipeline.file,
        quiet,
    )?);
    Ok(())
}

/// How long after [`koas_orchestrator::limits::CANCEL_GRACE`] a cancelled run may
/// take to write its record before the process exits anyway.
const INTERRUPT_DEADLINE_MARGIN: std::time::Duration = std::time::Duration::from_secs(7);

/// Runs `koas run`.
pub fn execute(global: &HostOptions, args: RunArgs) -> anyhow::Result<ExitStatus> {
    let (expected_name, file) = match args.positional.as_slice() {
        [file] => (None, PathBuf::from(file)),
        [name, file] => (Some(name.clone()), PathBuf::from(file)),
        _ => bail!("expected `koas run [NAME] PIPELINE`"),
    };
    let overrides = Overrides {
        workspace: args.workspace.clone(),
        jobs: args.jobs.map(usize::from),
        inputs: args
            .inputs
            .iter()
            .map(|i| pipeline::parse_input_flag(i))
            .collect::<Result<_, _>>()?,
        sets: args.sets.clone(),
    };
    let pipeline = pipeline::load(&file, &overrides)?;
    if let Some(name) = expected_name {
        if name != pipeline.name {
            bail!(
                "{}: this pipeline is named `{}`, not `{name}`",
                file.display(),
                pipeline.name
            );
        }
    }
    let discovery = discover_and_warn(global, &pipeline);
    let prepared = prepare(&pipeline, &discovery)?;
    let target = match (&args.kernel, &args.until) {
        (Some(k), _) => RunTarget::Kernel(k.clone()),
        (None, Some(u)) => RunTarget::Until(u.clone()),
        (None, None) => RunTarget::All,
    };
    // A kernel in this process may never look at the flag, and a worker
    // is killed CANCEL_GRACE after the cancel: past the deadline the run
    // is abandoned, its lock removed, rather than a SIGTERM ignored.
    let cancel = interrupt::flag_within(
        "letting running kernels stop",
        koas_orchestrator::limits::CANCEL_GRACE + INTERRUPT_DEADLINE_MARGIN,
    );
    let opts = run_options(global, &args, &pipeline, &prepared, target, cancel)?;
    let total = match opts.target {
        RunTarget::All => prepared.dag.order.len(),
        RunTarget::Until(ref n) | RunTarget::Kernel(ref n) => prepared.dag.ancestors(n).len(),
    };
    let reporter = Arc::new(global.reporter(total as u64));
    // One run per workspace at a time: a second one is refused, naming
    // the holder (a dead holder's lock on this host is taken over).
    std::fs::create_dir_all(&pipeline.workspace)
        .with_context(|| format!("cannot create {}", pipeline.workspace.display()))?;
    let command: Vec<String> = std::env::args().collect();
    let _lock = koas_orchestrator::lock::acquire_lock(
        &pipeline.workspace,
        &command.join(" "),
        &koas_orchestrator::run_record::now_rfc3339(),
    )?;
    let outcome = engine::run(&prepared, &opts, reporter.clone())
        .with_context(|| format!("pipeline {}", file.display()))?;
    reporter.finish();
    let record = &outcome.record;
    if let Some(target) = &outcome.target_output {
        outln!("{}", serde_json::to_string_pretty(target)?)?;
    } else if args.json {
        outln!("{}", serde_json::to_string_pretty(record)?)?;
    }
    if !global.quiet {
        eprintln!("{}", summary_line(record));
    }
    // A failure is never hidden, not even by --quiet: a script that runs
    // `koas run -q` still needs to know which kernel failed and why.
    for k in record
        .kernels
        .iter()
        .filter(|k| k.status == KernelStatus::Failed)
    {
        eprintln!(
            "error: kernel `{}` ({}) failed: {}",
            k.name,
            k.plugin.display(),
            // The plugin wrote the message.
            escape_controls_keep_lines(k.error.as_deref().unwrap_or("no message"))
        );
    }
    for death in &record.worker_deaths {
        eprintln!("error: {}", escape_controls_keep_lines(&death.message));
    }
    Ok(match record.status {
        RunStatus::Ok => ExitStatus::Success,
        RunStatus::Failed => ExitStatus::Failure,
        RunStatus::Cancelled => ExitStatus::Interrupted,
    })
}

/// The run's last line: kernels ok, ran, cached, failed and skipped, the
/// time, where its record is.
fn summary_line(record: &koas_orchestrator::run_record::RunRecord) -> String {
    let ok = record
        .kernels
        .iter()
        .filter(|k| k.status == KernelStatus::Ok)
        .count();
    let cached = record
        .kernels
        .iter()
        .filter(|k| k.cache == CacheUse::Hit)
        .count();
    let failed: Vec<&str> = record
        .kernels
        .iter()
        .filter(|k| k.status == KernelStatus::Failed)
        .map(|k| k.name.as_str())
        .collect();
    let skipped = record
        .kernels
        .iter()
        .filter(|k| k.status == KernelStatus::Skipped)
        .count();
    let mut line = format!(
        "koas: {}: {ok}/{} kernels ok ({} ran, {cached} cached)",
        record.pipeline,
        record.kernels.len(),
        record.executed()
    );
    if !failed.is_empty() {
        line.push_str(&format!(", failed: {}", failed.join(", ")));
    }
    if skipped > 0 {
        line.push_str(&format!(", {skipped} skipped"));
    }
    line.push_str(&format!(
        " in {:.1} ms; run record: {}",
        record.duration_ms,
        record
            .workspace
            .join(koas_orchestrator::run_record::RUN_RECORD_FILE)
            .display()
    ));
    line
}

/// The engine's options for this run: the cache, input sizes, isolation
/// and limits, the target, the prompts, the model.
fn run_options(
    global: &HostOptions,
    args: &RunArgs,
    pipeline: &Pipeline,
    prepared: &Prepared,
    target: RunTarget,
    cancel: Arc<std::sync::atomic::AtomicBool>,
) -> anyhow::Result<RunOptions> {
    let mut opts = RunOptions::new(pipeline.jobs);
    opts.use_cache = !args.no_cache;
    opts.max_source_bytes = koas_orchestrator::guarded_read::limit_from(
        args.max_input_size.as_deref(),
        "--max-input-size",
        koas_orchestrator::guarded_read::MAX_INPUT_SIZE_ENV,
        koas_orchestrator::guarded_read::DEFAULT_MAX_READ_BYTES,
    )
    .map_err(anyhow::Error::msg)?;
    opts.isolation = global.isolation(Some(pipeline));
    opts.limits = global.limits(pipeline);
    opts.target = target;
    opts.cancel = cancel;
    opts.prompts = prompts_folder(args.prompts.as_deref().or(pipeline.prompts.as_deref()))?;
    llm_for_run(
        prepared,
        &opts.target.clone(),
        &args.llm,
        args.llm_replay.as_deref(),
        global.quiet,
        &mut opts,
    )?;
    Ok(opts)
}
