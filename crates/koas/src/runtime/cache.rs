//! `koas cache clear`: forget every cached output of a workspace.

use anyhow::bail;
use clap::Subcommand;
use koas_orchestrator::embed::ExitStatus;
use koas_orchestrator::embed::HostOptions;
use std::path::PathBuf;

/// `koas cache …`.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Delete the cache of a pipeline's workspace; the next run executes
    /// every kernel.
    Clear {
        /// The pipeline whose workspace to clear.
        #[arg(value_name = "PIPELINE", required_unless_present = "workspace")]
        pipeline: Option<PathBuf>,
        /// The workspace folder (instead of a pipeline file).
        #[arg(short, long, value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
}

/// Runs `koas cache …`.
pub fn execute(global: &HostOptions, cmd: CacheCommand) -> anyhow::Result<ExitStatus> {
    let CacheCommand::Clear {
        pipeline,
        workspace,
    } = cmd;
    let ws = match (workspace, pipeline) {
        (Some(w), _) => w,
        (None, Some(p)) => koas_orchestrator::pipeline::load(&p, &Default::default())?.workspace,
        (None, None) => bail!("give a pipeline file or --workspace DIR"),
    };
    let cache = koas_orchestrator::cache::Cache::open(&ws);
    let cleared = cache.clear()?;
    if !global.quiet {
        if cleared {
            eprintln!("koas: cleared {}", cache.root().display());
        } else {
            eprintln!("koas: no cache at {}", cache.root().display());
        }
    }
    Ok(ExitStatus::Success)
}
