//! `koas graph`: a pipeline's DAG as Graphviz DOT or Mermaid.

use clap::{Args, ValueEnum};
use koas_orchestrator::embed::ExitStatus;
use koas_orchestrator::embed::{discover_and_warn, HostOptions};
use koas_orchestrator::out;
use std::path::PathBuf;

/// `--format` of `koas graph`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GraphFormat {
    /// Graphviz DOT (`koas graph p.toml | dot -Tsvg > dag.svg`).
    Dot,
    /// A Mermaid flowchart (GitHub renders it).
    Mermaid,
}

/// The arguments of `koas graph`.
#[derive(Debug, Args)]
pub struct GraphArgs {
    /// The pipeline file.
    pub pipeline: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "dot")]
    pub format: GraphFormat,
}

/// Runs `koas graph`.
pub fn execute(global: &HostOptions, args: GraphArgs) -> anyhow::Result<ExitStatus> {
    let pipeline = koas_orchestrator::pipeline::load(&args.pipeline, &Default::default())?;
    let discovery = discover_and_warn(global, &pipeline);
    let prepared = koas_orchestrator::prepare::prepare(&pipeline, &discovery)?;
    let text = match args.format {
        GraphFormat::Dot => koas_orchestrator::graph::to_dot(&prepared),
        GraphFormat::Mermaid => koas_orchestrator::graph::to_mermaid(&prepared),
    };
    out!("{text}")?;
    Ok(ExitStatus::Success)
}
