//! Command-line definitions and dispatch.

mod cache;
mod check;
mod common;
mod graph;
mod grep;
mod kernels;
mod llm;
mod replay;
mod report;
mod revert;
mod review;
mod review_common;
mod review_pipeline;
mod run;
mod show;
mod status;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Exit codes:
  0    success
  1    a kernel failed (its dependents were skipped, independent kernels finished)
  2    usage, pipeline, config or I/O error (nothing was run)
  130  interrupted with Ctrl-C (finished work is kept; nothing half-written is left)

Kernel discovery order:
  1. --kernel-path flags   2. KOAS_KERNEL_PATH   3. the pipeline's kernel_paths
  4. the folder of the koas executable, and its kernels/ subfolder
Only files named like libkoas_kernel_*.so (.dylib, or koas_kernel_*.dll) are loaded.";

/// koas — run kernel pipelines with an artifact DAG and a content-hash cache.
#[derive(Debug, Parser)]
#[command(name = "koas", version, about, long_about = None, after_help = AFTER_HELP)]
pub struct Cli {
    /// Extra folder (or library file) to load kernels from; searched before
    /// KOAS_KERNEL_PATH. Repeatable.
    #[arg(long = "kernel-path", global = true, value_name = "PATH")]
    pub kernel_path: Vec<PathBuf>,

    /// Show kernels' informational log lines.
    #[arg(short, long, global = true)]
    pub verbose: bool,

    /// Print no progress lines.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a pipeline (or part of it).
    Run(run::RunArgs),
    /// List the kernels koas can find, and every plugin it had to skip.
    Kernels(kernels::KernelsArgs),
    /// Print a pipeline's DAG as Graphviz DOT or Mermaid.
    Graph(graph::GraphArgs),
    /// Manage a pipeline workspace's cache.
    #[command(subcommand)]
    Cache(cache::CacheCommand),
    /// Check Markdown documents (Stage 1 + Stage 2, no LLM, no workspace);
    /// exit 1 on findings at or above --fail-on, 2 on unreadable input.
    Check(check::CheckArgs),
    /// Re-run a finished run from its LLM exchange log (no network) and
    /// check that every artifact is identical.
    Replay(replay::ReplayArgs),
    /// Check the configured LLM server: ping, calibrate.
    #[command(subcommand)]
    Llm(llm::LlmCommand),
    /// Review a document: run the reviewer pipeline in its workspace and
    /// record the changes of --ops (IDs, patches, ledger, report).
    Review(review::ReviewArgs),
    /// (Re)write a document's review report and print its path.
    Report(report::ReportArgs),
    /// Revert recorded changes (latest first, all or nothing).
    Revert(revert::RevertArgs),
    /// Show one ledger entry (and its patch).
    Show(show::ShowArgs),
    /// Search a document's ledger by pattern, kind, severity, tier.
    Grep(grep::GrepArgs),
    /// State of a document's review workspace; repair a torn ledger.
    Status(status::StatusArgs),
}

/// Parses the command line, runs the command and returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    crate::exit::OK
                }
                _ => crate::exit::USAGE,
            };
        }
    };
    let global = common::Global {
        kernel_paths: cli.kernel_path.clone(),
        verbose: cli.verbose,
        quiet: cli.quiet,
    };
    let result = match cli.command {
        Command::Run(args) => run::execute(&global, args),
        Command::Kernels(args) => kernels::execute(&global, args),
        Command::Graph(args) => graph::execute(&global, args),
        Command::Cache(cmd) => cache::execute(&global, cmd),
        Command::Check(args) => check::execute(&global, args),
        Command::Replay(args) => replay::execute(&global, args),
        Command::Llm(cmd) => llm::execute(&global, cmd),
        Command::Review(args) => review::execute(&global, args),
        Command::Report(args) => report::execute(&global, args),
        Command::Revert(args) => revert::execute(&global, args),
        Command::Show(args) => show::execute(&global, args),
        Command::Grep(args) => grep::execute(&global, args),
        Command::Status(args) => status::execute(&global, args),
    };
    match result {
        Ok(code) => code,
        Err(e) => crate::exit::report_error(&e),
    }
}
