//! `koas llm ping` and `koas llm calibrate`: check the configured model
//! server before a long run.

use super::run::LlmFlags;
use super::ExitStatus;
use super::Global;
use crate::llm_host::resolve_config;
use crate::outln;
use anyhow::{bail, Context as _};
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `koas llm …`.
#[derive(Debug, Subcommand)]
pub enum LlmCommand {
    /// Check that the endpoint answers and list its models.
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
}

fn config(args: &LlmArgs) -> anyhow::Result<(koas_llm::LlmConfig, PathBuf)> {
    let (table, origin, workspace) = match &args.pipeline {
        Some(file) => {
            let p = crate::pipeline::load(file, &Default::default())?;
            (p.llm, file.clone(), p.workspace)
        }
        None => (
            None,
            PathBuf::from("command line"),
            PathBuf::from(".koas/llm"),
        ),
    };
    match resolve_config(table.as_ref(), &args.llm.overrides(), &origin)? {
        Some((_, c)) => Ok((c, workspace)),
        None => bail!(
            "no LLM configured: give a pipeline file with an [llm] table, or --llm-backend/--llm-endpoint/--llm-model"
        ),
    }
}

/// Runs `koas llm …`.
pub fn execute(global: &Global, cmd: LlmCommand) -> anyhow::Result<ExitStatus> {
    match cmd {
        LlmCommand::Ping(args) => {
            let (config, _) = config(&args)?;
            let report = koas_llm::ping(&config)?;
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&report)?)?;
            } else {
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
            }
            Ok(ExitStatus::Success)
        }
        LlmCommand::Calibrate { args, role } => {
            let (config, workspace) = config(&args)?;
            std::fs::create_dir_all(&workspace)
                .with_context(|| format!("cannot create {}", workspace.display()))?;
            let progress: Box<dyn koas_llm::ProgressSink> = if global.quiet {
                Box::new(koas_llm::NoProgress)
            } else {
                koas_llm::auto_progress()
            };
            let service = koas_llm::LlmService::builder(config, &workspace)
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
