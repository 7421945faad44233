//! `koas report DOC`: (re)write the review report of a document's
//! workspace — `review/REVIEW_<stem>.md` and its `stage3/` copy — and the
//! annotated document, from the ledger as it stands.

use crate::common::{
    clock, command_line, on_workspace, print_json, review_exit_codes, ReviewTarget, WorkspaceArgs,
    REFUSED,
};
use crate::pipeline::{self as passes, PassFailure};
use anyhow::Context as _;
use clap::Args;
use koas_orchestrator::cli::{ExitStatus, Global};
use koas_orchestrator::{out, outln};
use koas_review::query::count;
use koas_review_workspace::{paths, BeginRequest, RunKind};
use serde_json::json;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(after_help = concat!("\
Examples:
  koas report spec.md            # prints the report's path
  koas report spec.md --print    # prints the report itself
  koas report spec.md --json     # path, counts, workspace

", review_exit_codes!()))]
pub struct ReportArgs {
    #[command(flatten)]
    pub target: WorkspaceArgs,

    /// Print the report (Markdown) instead of its path.
    #[arg(long, conflicts_with = "json")]
    pub print: bool,

    /// Use this pipeline file instead of the built-in reviewer pipeline.
    #[arg(long, value_name = "FILE")]
    pub pipeline: Option<PathBuf>,
}

pub fn execute(global: &Global, args: ReportArgs) -> anyhow::Result<ExitStatus> {
    let _progress = passes::Progress::start(global);
    on_workspace(&args.target, |target| report(global, &args, target))
}

fn report(global: &Global, args: &ReportArgs, target: &ReviewTarget) -> anyhow::Result<ExitStatus> {
    target.require_workspace()?;
    target.prepare_writes()?;
    let command = command_line();
    let workspace = &target.workspace;
    // Under the lock: the report shows one consistent state.
    let run = workspace
        .begin(BeginRequest {
            doc_name: &target.doc_name,
            document: Some(&target.text),
            kind: RunKind::Review,
            command: &command,
            clock: clock(),
        })
        .with_context(|| format!("review workspace {}", workspace.root().display()))?;
    let doc_input = workspace.path(paths::RAW_DOC);
    let mut pipeline = passes::load(
        args.pipeline.as_deref(),
        workspace.root(),
        vec![("doc".to_owned(), doc_input)],
    )?;
    target.project.apply(&mut pipeline)?;
    passes::require(&pipeline, passes::REPORT, "renders the report")?;
    let discovery = passes::discover(global, &pipeline);
    let views = match passes::run_views(global, &pipeline, &discovery, &run, None) {
        Ok(views) => views,
        Err(PassFailure::Kernel(message)) => {
            eprintln!("error: {message}");
            return Ok(REFUSED);
        }
        Err(PassFailure::Interrupted) => return Ok(ExitStatus::Interrupted),
    };
    let counts = count(run.entries());
    drop(run);
    let path = views.report.context("the pipeline produced no report")?;
    if args.target.json {
        print_json(&json!({
            "status": "completed",
            "summary": format!("{} changes ({} active), {} reverts, {} flags", counts.total_changes, counts.active_changes, counts.reverts, counts.flags),
            "workspace": target.root(),
            "report": path,
            "annotated": target.root().join(paths::REVIEWED_DOC),
            "counts": counts,
        }))?;
    } else if args.print {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        out!("{text}")?;
    } else {
        outln!("{}", path.display())?;
    }
    Ok(ExitStatus::Success)
}
