//! `koas replay WORKSPACE`: run a finished run again with its LLM exchange
//! log standing in for the model (no network), and check that every
//! artifact comes out byte-identical.

use anyhow::{bail, Context as _};
use clap::Args;
use koas_orchestrator::embed::ExitStatus;
use koas_orchestrator::embed::{discover_and_warn, HostOptions};
use koas_orchestrator::engine::{self, RunOptions, RunTarget};
use koas_orchestrator::host::SharedLlm;
use koas_orchestrator::llm_host::ServiceHandler;
use koas_orchestrator::outln;
use koas_orchestrator::pipeline::Pipeline;
use koas_orchestrator::prepare::prepare;
use koas_orchestrator::progress::Reporter;
use koas_orchestrator::run_record::{
    KernelRecord, KernelStatus, RunPlan, RunRecord, RUN_RECORD_FILE,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The arguments of `koas replay`.
#[derive(Debug, Args)]
#[command(after_help = "\
The replay runs in WORKSPACE/.koas/replay (kept for inspection) with the cache
off, the same kernels, inputs and resolved configs as the original run (read
from WORKSPACE/run.json), the plugin libraries it loaded (--kernel-path and
KOAS_KERNEL_PATH come first), and WORKSPACE/llm/exchanges.jsonl answering every
LLM request. Exit code 0 when every artifact matches, 1 when any differs, 2 when
the replay cannot start.")]
pub struct ReplayArgs {
    /// The workspace of the run to replay (it holds run.json).
    pub workspace: PathBuf,

    /// Print the verdict as JSON.
    #[arg(long)]
    pub json: bool,

    /// Replay this run record instead of WORKSPACE/run.json (a path
    /// relative to WORKSPACE, or absolute): a command that runs several
    /// passes in one workspace may keep each pass's record.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
}

#[derive(Debug, serde::Serialize)]
struct Difference {
    kernel: String,
    what: String,
}

/// Runs `koas replay`.
pub fn execute(global: &HostOptions, args: ReplayArgs) -> anyhow::Result<ExitStatus> {
    let record_path = args.workspace.join(
        args.record
            .as_deref()
            .unwrap_or(std::path::Path::new(RUN_RECORD_FILE)),
    );
    let (original, plan) = read_record(&record_path)?;
    let scratch = args.workspace.join(".koas").join("replay");
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)
            .with_context(|| format!("cannot clear {}", scratch.display()))?;
    }
    let pipeline = replay_pipeline(&original, &plan, &scratch);
    let discovery = discover_and_warn(global, &pipeline);
    let prepared = prepare(&pipeline, &discovery)?;
    let mut opts = RunOptions::new(original.jobs);
    opts.use_cache = false;
    opts.isolation = global.isolation(Some(&pipeline));
    opts.limits = global.limits(&pipeline);
    hand_recorded_values(&mut opts, &args.workspace, &plan)?;
    opts.target = match &original.target {
        Some(t) => RunTarget::Until(t.clone()),
        None => RunTarget::All,
    };
    let uses_llm = prepared.kernels.values().any(|k| k.spec.uses_llm);
    if let Some(llm) = &plan.llm {
        let config = koas_llm::LlmConfig::from_json(llm.clone())
            .with_context(|| format!("the [llm] table recorded in {}", record_path.display()))?;
        opts.llm_identity = Some(koas_orchestrator::llm_host::identity(&config));
        opts.llm_config = Some(llm.clone());
        if uses_llm {
            opts.llm = Some(replay_service(config, &args.workspace, &scratch)?);
        }
    }
    let reporter = Arc::new(if global.quiet || args.json {
        Reporter::quiet()
    } else {
        global.reporter(prepared.dag.order.len() as u64)
    });
    let replayed = engine::run(&prepared, &opts, reporter.clone())?;
    reporter.finish();

    let (differences, compared) = compare_runs(&original, &replayed.record);
    let pass = differences.is_empty();
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "verdict": if pass { "pass" } else { "fail" },
                "artifacts_compared": compared,
                "differences": differences,
                "replay_workspace": scratch,
                "llm_session": replayed.record.llm_session,
            }))?
        )?;
    } else {
        let network_calls = replayed
            .record
            .llm_session
            .as_ref()
            .and_then(|s| s["calls"]["backend"].as_u64())
            .unwrap_or(0);
        for d in &differences {
            eprintln!("replay: {}: {}", d.kernel, d.what);
        }
        eprintln!(
            "replay: {} — {compared} artifacts of {} kernels compared, {} difference(s), {network_calls} network LLM call(s); replay workspace {}",
            if pass { "PASS" } else { "FAIL" },
            original.kernels.iter().filter(|k| k.status == KernelStatus::Ok).count(),
            differences.len(),
            scratch.display()
        );
    }
    Ok(if pass {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// The run record to replay, and the plan it recorded (a record written
/// before koas recorded plans cannot be replayed).
fn read_record(record_path: &std::path::Path) -> anyhow::Result<(RunRecord, RunPlan)> {
    let bytes = std::fs::read(record_path)
        .with_context(|| format!("cannot read {}", record_path.display()))?;
    let original: RunRecord = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a koas run record", record_path.display()))?;
    let Some(plan) = original.plan.clone() else {
        bail!(
            "{} was written by a koas that did not record its plan; run the pipeline again first",
            record_path.display()
        );
    };
    Ok((original, plan))
}

/// The pipeline of the original run, run in `scratch`.
fn replay_pipeline(original: &RunRecord, plan: &RunPlan, scratch: &std::path::Path) -> Pipeline {
    Pipeline {
        file: original.pipeline_file.clone(),
        name: original.pipeline.clone(),
        description: String::new(),
        kernels: plan.kernels.clone(),
        kernel_paths: recorded_search_path(plan),
        workspace: scratch.to_path_buf(),
        jobs: original.jobs,
        inputs: plan.inputs.clone(),
        config: plan.configs.clone(),
        llm: plan.llm.clone(),
        in_process: false,
        limits: Default::default(),
        prompts: plan.prompts.clone(),
        config_origins: Default::default(),
    }
}

/// Hands the replay what the host gave the original run: the artifacts it
/// provided in memory and the previous outputs of incremental kernels,
/// both read back from the original workspace's cache, the outputs it
/// wrote itself and its prompt folder.
fn hand_recorded_values(
    opts: &mut RunOptions,
    workspace: &std::path::Path,
    plan: &RunPlan,
) -> anyhow::Result<()> {
    let original_cache = koas_orchestrator::cache::Cache::open(workspace);
    for (name, hash) in &plan.provided {
        let value = original_cache.get_value(hash).with_context(|| {
            format!(
                "artifact `{name}` that the host provided to the original run is not in {}'s cache",
                workspace.display()
            )
        })?;
        opts.provided.insert(name.clone(), value.into());
    }
    opts.host_written = plan.host_written.iter().cloned().collect();
    opts.prompts = koas_llm::Prompts::locate(plan.prompts.as_deref());
    let mut previous = BTreeMap::new();
    for (kernel, outputs) in &plan.previous {
        let mut values = BTreeMap::new();
        for (artifact, hash) in outputs {
            let value = original_cache.get_value(hash).with_context(|| {
                format!(
                    "the previous `{artifact}` handed to kernel `{kernel}` in the original run is not in {}'s cache",
                    workspace.display()
                )
            })?;
            values.insert(artifact.clone(), value);
        }
        previous.insert(kernel.clone(), values);
    }
    opts.previous = Some(previous);
    Ok(())
}

/// The LLM service of the replay: the original run's exchange log answers
/// every request, with no network.
fn replay_service(
    config: koas_llm::LlmConfig,
    workspace: &std::path::Path,
    scratch: &std::path::Path,
) -> anyhow::Result<SharedLlm> {
    let log = workspace.join(koas_llm::EXCHANGE_LOG);
    let source = koas_llm::ReplaySource::from_exchange_log(&log)
        .with_context(|| format!("cannot read the exchange log {}", log.display()))?;
    std::fs::create_dir_all(scratch)
        .with_context(|| format!("cannot create {}", scratch.display()))?;
    let service = koas_llm::LlmService::replay(config, scratch, source)?;
    Ok(Arc::new(ServiceHandler::new(service)))
}

/// What differs between the original run and the replay, for every kernel
/// that succeeded in the original, and how many artifacts were compared.
fn compare_runs(original: &RunRecord, replayed: &RunRecord) -> (Vec<Difference>, usize) {
    let mut differences = Vec::new();
    let mut compared = 0usize;
    for k in original
        .kernels
        .iter()
        .filter(|k| k.status == KernelStatus::Ok)
    {
        let Some(r) = replayed.kernel(&k.name) else {
            differences.push(Difference {
                kernel: k.name.clone(),
                what: "was not run by the replay".into(),
            });
            continue;
        };
        if r.status != KernelStatus::Ok {
            differences.push(Difference {
                kernel: k.name.clone(),
                what: format!(
                    "failed in the replay: {}",
                    r.error
                        .as_deref()
                        .or(r.skipped_reason.as_deref())
                        .unwrap_or("no message")
                ),
            });
            continue;
        }
        compared += k.output_hashes.len();
        differences.extend(kernel_differences(original, k, r));
    }
    (differences, compared)
}

/// What differs in one kernel that ran in both: a source input changed
/// since the original run, another plugin binary, an artifact that
/// differs or was not produced.
fn kernel_differences(original: &RunRecord, k: &KernelRecord, r: &KernelRecord) -> Vec<Difference> {
    let mut differences = Vec::new();
    let mut differs = |what: String| {
        differences.push(Difference {
            kernel: k.name.clone(),
            what,
        })
    };
    for (input, hash) in &k.input_hashes {
        if r.input_hashes.get(input) != Some(hash)
            && !original
                .kernels
                .iter()
                .any(|o| o.output_hashes.contains_key(input))
        {
            differs(format!(
                "source input `{input}` changed since the original run"
            ));
        }
    }
    if r.plugin_hash != k.plugin_hash {
        differs(format!(
            "plugin {} is not the binary of the original run",
            r.plugin.display()
        ));
    }
    for (artifact, hash) in &k.output_hashes {
        match r.output_hashes.get(artifact) {
            Some(h) if h == hash => {}
            Some(h) => differs(format!(
                "artifact `{artifact}` differs: {} (original) vs {} (replay)",
                short(hash),
                short(h)
            )),
            None => differs(format!("artifact `{artifact}` was not produced")),
        }
    }
    differences
}

/// Where the replay looks for kernels after `--kernel-path` and
/// `KOAS_KERNEL_PATH` (which still come first, to override): the plugin
/// files the original run loaded, then its pipeline's `kernel_paths`.
fn recorded_search_path(plan: &RunPlan) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = Vec::new();
    for p in plan.plugins.values().chain(&plan.kernel_paths) {
        if !paths.contains(p) {
            paths.push(p.clone());
        }
    }
    paths
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}
