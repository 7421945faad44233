//! The `koas` command: the runtime's generic commands and the reviewer's
//! command family on one command line. The runtime's commands are this
//! crate's front end over the runtime ([`runtime`]); the reviewer's live
//! in its crate (`koas_review::commands`); this file only parses,
//! dispatches and turns the outcome into the process exit code.

mod runtime;

use clap::{Parser, Subcommand};
use koas_orchestrator::embed::{interrupt, is_broken_pipe, print_error, ExitStatus, HostOptions};
use koas_orchestrator::limits::LimitOverrides;
use koas_orchestrator::worker as runtime_worker;
use koas_review::commands as reviewer;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::ExitCode;

const AFTER_HELP: &str = concat!(
    "\
Exit codes:
  0    success
  1    a kernel failed (its dependents were skipped, independent kernels finished)
  2    usage, pipeline, config or I/O error (nothing was run)
  130  interrupted with Ctrl-C (finished work is kept; nothing half-written is left)

Isolation:
  Kernels run in worker processes: a kernel that crashes, exits, runs past
  --kernel-timeout or over --kernel-memory fails alone (exit 1), with its
  exit status and stderr in run.json. --in-process runs them inside koas.

",
    koas_orchestrator::discovery_order!()
);

/// koas — run kernel pipelines with an artifact DAG and a content-hash cache.
#[derive(Debug, Parser)]
#[command(name = "koas", version, about, long_about = None, after_help = AFTER_HELP)]
pub struct Cli {
    /// Extra folder (or library file) to load kernels from; searched before
    /// KOAS_KERNEL_PATH. Repeatable.
    #[arg(long = "kernel-path", global = true, value_name = "PATH")]
    pub kernel_path: Vec<PathBuf>,

    /// Show each kernel's summary and informational log lines; -vv also
    /// shows debug lines.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Print no progress lines (errors, a failed kernel's included, are
    /// always printed).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Run kernels inside the koas process instead of worker processes
    /// (debugging): a crashing kernel then takes koas down, and no
    /// timeout or memory limit applies.
    #[arg(long, global = true)]
    pub in_process: bool,

    /// Stop a kernel after SECS seconds of its own work (host calls do not
    /// count); 0: no limit [default: the pipeline's [limits] timeout, else
    /// 600].
    #[arg(long, global = true, value_name = "SECS")]
    pub kernel_timeout: Option<u64>,

    /// Cap each kernel's worker process at MB megabytes of address space;
    /// 0: no limit [default: the pipeline's [limits] memory, else 8192].
    #[arg(long, global = true, value_name = "MB")]
    pub kernel_memory: Option<u64>,

    /// Refuse a kernel answer larger than MB megabytes; 0: no limit
    /// [default: the pipeline's [limits] output, else 1024].
    #[arg(long, global = true, value_name = "MB")]
    pub kernel_output: Option<u64>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a pipeline (or part of it).
    Run(runtime::run::RunArgs),
    /// List the kernels koas can find, and every plugin it had to skip.
    Kernels(runtime::kernels::KernelsArgs),
    /// Print a pipeline's DAG as Graphviz DOT or Mermaid.
    Graph(runtime::graph::GraphArgs),
    /// Manage a pipeline workspace's cache.
    #[command(subcommand)]
    Cache(runtime::cache::CacheCommand),
    /// Check Markdown documents (Stage 1 + Stage 2, no LLM, no workspace);
    /// exit 1 on findings at or above --fail-on, 2 on unreadable input.
    Check(reviewer::check::CheckArgs),
    /// Re-run a finished run from its LLM exchange log (no network) and
    /// check that every artifact is identical.
    Replay(runtime::replay::ReplayArgs),
    /// Check the configured LLM server: ping, calibrate.
    #[command(subcommand)]
    Llm(LlmCommand),
    /// Review a document: run the reviewer pipeline in its workspace and
    /// record the changes of --ops (IDs, patches, ledger, report).
    Review(reviewer::review::ReviewArgs),
    /// Refine a document: judges, arbiter, targeted fixes through the
    /// ledger, verification, until the score meets the target.
    Refine(reviewer::refine::RefineArgs),
    /// (Re)write a document's review report and print its path.
    Report(reviewer::report::ReportArgs),
    /// Revert recorded changes (latest first, all or nothing).
    Revert(reviewer::revert::RevertArgs),
    /// Dismiss a flag (a flag_only entry): record in the ledger that it
    /// needs no change; the report, status and grep show it dismissed.
    Dismiss(reviewer::dismiss::DismissArgs),
    /// Show one ledger entry (and its patch).
    Show(reviewer::show::ShowArgs),
    /// Search a document's review ledger like grep: `koas grep [PATTERN]
    /// DOC` lists the matching changes, flags and reverts; exit 1 when
    /// none matches.
    Grep(reviewer::grep::GrepArgs),
    /// State of a document's review workspace; repair a torn ledger.
    Status(reviewer::status::StatusArgs),
    /// Serve the reviewer's commands as MCP tools on stdio (for Claude
    /// Desktop, Claude Code, editors and agents).
    Mcp(koas_mcp::McpArgs),
    /// Serve `koas check` to editors: a Language Server on stdio
    /// (diagnostics, fixes, review hovers, revert)
    Lsp(koas_lsp::LspArgs),
    /// Create a new kernel crate (`koas new kernel NAME`): a findings check
    /// with its tests, a pipeline and a README, ready to build and install.
    #[command(subcommand)]
    New(reviewer::new::NewCommand),
}

/// `koas llm`: the runtime's server checks, and the reviewer's measure of
/// a model (composed here, so the runtime's family names no reviewer).
#[derive(Debug, Subcommand)]
pub enum LlmCommand {
    #[command(flatten)]
    Runtime(runtime::llm::LlmCommand),
    /// Measure models on documents with planted defects: fixes, misses
    /// and harm, per model and language
    Eval(reviewer::llm_eval::EvalArgs),
}

fn main() -> ExitCode {
    // Before any thread exists (see koas_orchestrator::memory).
    koas_orchestrator::memory::bound_allocator_arenas();
    // The hidden worker mode, before anything else: kernels run in
    // `koas __koas-worker` processes (see koas_orchestrator::worker).
    if std::env::args_os().nth(1).as_deref() == Some(OsStr::new(runtime_worker::WORKER_ARG)) {
        return runtime_worker::serve();
    }
    // Then, before any work: a Ctrl-C must end koas with 130 and release
    // what it holds, not kill it by the signal.
    interrupt::install();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitStatus::Success
                }
                _ => ExitStatus::Error,
            }
            .into();
        }
    };
    let global = HostOptions {
        kernel_paths: cli.kernel_path.clone(),
        verbose: cli.verbose >= 1,
        debug: cli.verbose >= 2,
        quiet: cli.quiet,
        in_process: cli.in_process,
        limits: LimitOverrides {
            timeout_secs: cli.kernel_timeout,
            memory_mb: cli.kernel_memory,
            output_mb: cli.kernel_output,
        },
    };
    let result = match cli.command {
        Command::Run(args) => runtime::run::execute(&global, args),
        Command::Kernels(args) => runtime::kernels::execute(&global, args),
        Command::Graph(args) => runtime::graph::execute(&global, args),
        Command::Cache(cmd) => runtime::cache::execute(&global, cmd),
        Command::Replay(args) => runtime::replay::execute(&global, args),
        Command::Llm(LlmCommand::Runtime(cmd)) => runtime::llm::execute(&global, cmd),
        Command::Llm(LlmCommand::Eval(args)) => reviewer::llm_eval::execute(&global, args),
        Command::Check(args) => reviewer::check::execute(&global, args),
        Command::Review(args) => reviewer::review::execute(&global, args),
        Command::Refine(args) => reviewer::refine::execute(&global, args),
        Command::Report(args) => reviewer::report::execute(&global, args),
        Command::Revert(args) => reviewer::revert::execute(&global, args),
        Command::Dismiss(args) => reviewer::dismiss::execute(&global, args),
        Command::Show(args) => reviewer::show::execute(&global, args),
        Command::Grep(args) => reviewer::grep::execute(&global, args),
        Command::Status(args) => reviewer::status::execute(&global, args),
        Command::Mcp(args) => koas_mcp::execute(&global, args),
        Command::Lsp(args) => koas_lsp::execute(&global, args),
        Command::New(command) => reviewer::new::execute(&global, command),
    };
    match result {
        Ok(status) => status.into(),
        // A reader that stopped reading (`koas check … | head`) is a
        // normal end, not an error.
        Err(e) if is_broken_pipe(&e) => ExitStatus::Success.into(),
        Err(e) => {
            print_error(&e);
            ExitStatus::Error.into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The `--llm-*` flags as a subcommand's help shows them.
    fn llm_flags(subcommand: &str) -> Vec<(String, String)> {
        let cli = Cli::command();
        let sub = cli
            .find_subcommand(subcommand)
            .unwrap_or_else(|| panic!("no subcommand {subcommand}"));
        sub.get_arguments()
            .filter_map(|a| {
                let long = a.get_long()?;
                (long.starts_with("llm-") && long != "llm-replay" || long == "no-strict-sovereign")
                    .then(|| {
                        let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
                        (long.to_owned(), help)
                    })
            })
            .collect()
    }

    #[test]
    fn the_review_commands_llm_flags_read_as_koas_runs() {
        let run = llm_flags("run");
        assert_eq!(run.len(), 5, "{run:?}");
        for command in ["review", "refine"] {
            assert_eq!(llm_flags(command), run, "koas {command}");
        }
    }
}
