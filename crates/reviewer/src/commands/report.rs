//! `koas report DOC`: (re)write the review report of a document's
//! workspace — `review/REVIEW_<stem>.md` and its `stage3/` copy — and the
//! annotated document, from the ledger as it stands.

use crate::common::{review_exit_codes, Reply, ReviewTarget, WorkspaceArgs, REFUSED};
use crate::passes::{self, Control, RunFailure};
use anyhow::Context as _;
use clap::Args;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_review::query::count;
use koas_review_workspace::{paths, RunKind};
use serde_json::json;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(after_help = concat!("\
Examples:
  koas report spec.md            # prints the report's path
  koas report spec.md --print    # prints the report itself
  koas report spec.md --json     # path, counts, workspace
  koas report spec.md --html     # also REVIEW_spec.html, one self-contained page
  koas report spec.md --html out/review.html
  koas report spec.md --html --details   # with guard names, section IDs, kernels

", review_exit_codes!()))]
pub struct ReportArgs {
    #[command(flatten)]
    pub target: WorkspaceArgs,

    /// Print the report (Markdown) instead of its path.
    #[arg(long, conflicts_with = "json")]
    pub print: bool,

    /// Use this pipeline file instead of the built-in reviewer pipeline.
    /// Default: the pipeline the review was made with (`koas review
    /// --pipeline`), else the built-in one; `built-in` forces the latter.
    #[arg(long, value_name = "FILE")]
    pub pipeline: Option<PathBuf>,

    /// Also write the report as one self-contained HTML page (diffs,
    /// filters, revert commands; no network): next to the Markdown report
    /// as REVIEW_<stem>.html, or at PATH. Its path is printed.
    #[arg(long, value_name = "PATH", num_args = 0..=1, conflicts_with = "print")]
    pub html: Option<Option<PathBuf>>,

    /// With --html: also show the engine's internals a writer does not
    /// need — guard and normalization names, section IDs, the kernel
    /// behind each finding, the kernels' versions, the ledger's severity
    /// words.
    #[arg(long, requires = "html")]
    pub details: bool,
}

impl ReportArgs {
    /// `koas report DOC`.
    pub fn new(target: WorkspaceArgs) -> ReportArgs {
        ReportArgs {
            target,
            print: false,
            pipeline: None,
            html: None,
            details: false,
        }
    }
}

impl super::OnWorkspace for ReportArgs {
    fn target(&self) -> &WorkspaceArgs {
        &self.target
    }
}

pub fn execute(global: &HostOptions, args: ReportArgs) -> anyhow::Result<ExitStatus> {
    super::execute_on(global, &args, report)
}

/// `koas report` as a library call: the answer is returned, not printed.
pub fn run(global: &HostOptions, control: &Control, args: &ReportArgs) -> anyhow::Result<Reply> {
    super::run_on(global, control, args, report)
}

fn report(
    global: &HostOptions,
    control: &Control,
    args: &ReportArgs,
    target: &ReviewTarget,
) -> anyhow::Result<Reply> {
    target.require_workspace()?;
    // Under the lock: the report shows one consistent state.
    let run = target.begin_run(RunKind::Review)?;
    let (pipeline, discovery) =
        passes::workspace_pipeline(global, target, args.pipeline.as_deref())?;
    pipeline.require(passes::REPORT, "renders the report")?;
    let views = match passes::run_views(
        global,
        control,
        &pipeline,
        &discovery,
        &run,
        None,
        &target.project,
    ) {
        Ok(views) => views,
        Err(RunFailure::Kernel(message)) => {
            eprintln!("error: {message}");
            return Ok(Reply::failed(REFUSED, &message, target.root()));
        }
        Err(RunFailure::Interrupted) => {
            return Ok(Reply::failed(
                ExitStatus::Interrupted,
                "interrupted",
                target.root(),
            ))
        }
    };
    let counts = count(run.entries());
    let html = match &args.html {
        Some(dest) => Some(crate::html_report::write_page(
            &run,
            views.report.as_deref(),
            views.data.as_ref(),
            dest.as_deref(),
            &args.target,
            args.details,
        )?),
        None => None,
    };
    drop(run);
    let path = views.report.context("the pipeline produced no report")?;
    let mut value = json!({
        "status": "completed",
        "summary": counts.sentence(),
        "workspace": target.root(),
        "report": path,
        "annotated": target.root().join(paths::REVIEWED_DOC),
        "counts": counts,
    });
    if let Some(page) = &html {
        value["html"] = json!(page);
    }
    let text = if args.print {
        std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?
    } else {
        format!("{}\n", path.display())
    };
    let text = match &html {
        Some(page) => format!("{text}{}\n", page.display()),
        None => text,
    };
    Ok(Reply::new(ExitStatus::Success, value, text))
}
