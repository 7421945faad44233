//! `koas llm ping` and `koas llm calibrate`: check the configured model
//! server before a long run.

use super::run::LlmFlags;
use anyhow::{bail, Context as _};
use clap::{Args, Subcommand};
use koas_orchestrator::embed::ExitStatus;
use koas_orchestrator::embed::HostOptions;
use koas_orchestrator::llm_host::resolve_config;
use koas_orchestrator::outln;
use std::path::{Path, PathBuf};

/// `koas llm …`.
#[derive(Debug, Subcommand)]
pub enum LlmCommand {
    /// Check that the endpoint answers and list its models; with several
    /// endpoints, each of them, and whether they serve the same models
    /// (exit 1 when one is down or they disagree).
    Ping(LlmArgs),
    /// Send the fixed calibration prompt three times at temperature 0 and
    /// require identical canonical answers (exit 1 when they drift).
    Calibrate {
        /// What to talk to.
        #[command(flatten)]
        args: LlmArgs,
        /// The model role to calibrate (edit, pyramid, tutor, …).
        #[arg(long, default_value = "edit")]
        role: String,
    },
}

/// What `koas llm ping|calibrate` talk to.
#[derive(Debug, Args)]
pub struct LlmArgs {
    // `[llm]` is help text, not a doc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// A pipeline file whose [llm] table to use (flags override it).
    #[arg(value_name = "PIPELINE")]
    pub pipeline: Option<PathBuf>,
    /// The endpoint and model, overriding the pipeline's.
    #[command(flatten)]
    pub llm: LlmFlags,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Give up after SECS: for ping, waiting for the server (default
    /// ping_timeout_secs, 5 s); for calibrate, the whole calibration, every
    /// attempt included (default calibrate_deadline_secs, 300 s).
    #[arg(long, value_name = "SECS")]
    pub deadline: Option<f64>,
}

/// The LLM config in effect and the workspace whose `llm/exchanges.jsonl`
/// gets calibration exchanges: the pipeline's workspace, or `.koas` in the
/// current folder without a pipeline (so `.koas/llm/exchanges.jsonl`).
fn config(args: &LlmArgs) -> anyhow::Result<(koas_llm::LlmConfig, PathBuf)> {
    let (layers, workspace) = match &args.pipeline {
        Some(file) => {
            let p = koas_orchestrator::pipeline::load(file, &Default::default())?;
            (super::run::llm_layers(&p)?, p.workspace)
        }
        None => (
            koas_orchestrator::llm_host::project_layer(Path::new("."))?
                .into_iter()
                .collect(),
            PathBuf::from(".koas"),
        ),
    };
    match resolve_config(&layers, &args.llm.overrides())? {
        Some((_, c)) => Ok((c, workspace)),
        None => bail!(
            "no LLM configured: add an [llm] table to koas.toml or the pipeline file, or give --llm-backend/--llm-endpoint/--llm-model"
        ),
    }
}

/// `--deadline`, checked like the config key it overrides.
fn deadline(args: &LlmArgs, key: &mut f64) -> anyhow::Result<()> {
    if let Some(secs) = args.deadline {
        if !(secs > 0.0 && secs.is_finite()) {
            bail!("--deadline must be a positive number of seconds, not {secs}");
        }
        *key = secs;
    }
    Ok(())
}

/// One endpoint's answer to a ping: its latency and the models it lists.
fn print_ping(report: &koas_llm::PingReport) -> anyhow::Result<()> {
    outln!(
        "{} ({}) answered in {} ms; {} model(s):",
        report.endpoint,
        report.backend.as_str(),
        report.latency_ms,
        report.models.len()
    )?;
    for m in &report.models {
        outln!("  {m}")?;
    }
    Ok(())
}

/// `koas llm ping` with several endpoints: one block per endpoint, then
/// whether they agree. Failure when one is down or they disagree: a run
/// would refuse them, or lose that endpoint's slots.
fn ping_all(config: &koas_llm::LlmConfig, json: bool) -> anyhow::Result<ExitStatus> {
    let all = koas_llm::ping_endpoints(config)?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&all)?)?;
    } else {
        for e in &all.endpoints {
            match (&e.report, &e.error) {
                (Some(report), _) => print_ping(report)?,
                (None, error) => {
                    outln!(
                        "{} is down: {}",
                        e.endpoint,
                        error.as_deref().unwrap_or("no answer")
                    )?;
                }
            }
        }
        let down = all.endpoints.iter().filter(|e| e.report.is_none()).count();
        match (&all.disagreement, down) {
            (Some(why), _) => outln!("endpoints disagree: {why}")?,
            (None, 0) => outln!(
                "endpoints agree: all {} serve the same models",
                all.endpoints.len()
            )?,
            (None, n) => outln!(
                "endpoints that answered agree; {n} of {} did not answer",
                all.endpoints.len()
            )?,
        }
    }
    Ok(if all.agree && all.all_up {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// Runs `koas llm …`.
pub fn execute(global: &HostOptions, cmd: LlmCommand) -> anyhow::Result<ExitStatus> {
    match cmd {
        LlmCommand::Ping(args) => {
            let (mut config, _) = config(&args)?;
            deadline(&args, &mut config.ping_timeout_secs)?;
            if config.endpoints().len() > 1 {
                return ping_all(&config, args.json);
            }
            let report = koas_llm::ping(&config)?;
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&report)?)?;
            } else {
                print_ping(&report)?;
            }
            Ok(ExitStatus::Success)
        }
        LlmCommand::Calibrate { args, role } => {
            let (mut config, workspace) = config(&args)?;
            deadline(&args, &mut config.calibrate_deadline_secs)?;
            std::fs::create_dir_all(&workspace)
                .with_context(|| format!("cannot create {}", workspace.display()))?;
            let progress: Box<dyn koas_llm::ProgressSink> = if global.quiet {
                Box::new(koas_llm::NoProgress)
            } else {
                koas_llm::auto_progress()
            };
            // Calibration never reads or fills the response cache.
            let service = koas_llm::LlmService::builder(config, &workspace)
                .cache_dir(None)
                .progress(progress)
                .build()?;
            let prompts = koas_llm::Prompts::locate(None);
            let report = koas_llm::calibrate_role(&service, &role, &prompts)?;
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&report)?)?;
            } else {
                outln!("{}", report.verdict)?;
            }
            Ok(if report.passed {
                ExitStatus::Success
            } else {
                ExitStatus::Failure
            })
        }
    }
}
