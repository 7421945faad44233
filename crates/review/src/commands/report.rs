//! `koas report DOC`: (re)write the review report of a document's
//! workspace — `review/REVIEW_<stem>.md` and its `stage3/` copy — and the
//! annotated document, from the ledger as it stands.

use crate::api::{HtmlPage, ReportRequest, Session};
use crate::common::{review_exit_codes, Reply, ReviewTarget, WorkspaceArgs};
use crate::passes::Control;
use anyhow::Context as _;
use clap::Args;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
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

impl super::OnWorkspace for ReportArgs {
    fn target(&self) -> &WorkspaceArgs {
        &self.target
    }
}

pub fn execute(global: &HostOptions, args: ReportArgs) -> anyhow::Result<ExitStatus> {
    super::execute_on(global, &args, report)
}

fn report(
    global: &HostOptions,
    control: &Control,
    args: &ReportArgs,
    target: &ReviewTarget,
) -> anyhow::Result<Reply> {
    let request = ReportRequest {
        pipeline: args.pipeline.clone(),
        html: args.html.as_ref().map(|dest| HtmlPage {
            dest: dest.clone(),
            details: args.details,
            workspace_arg: args
                .target
                .workspace
                .as_ref()
                .map(|w| w.to_string_lossy().into_owned()),
        }),
    };
    let reported = match Session::on(global, control, target).report(&request) {
        Ok(reported) => reported,
        Err(e) => return super::stopped(e, target.root()),
    };
    let text = if args.print {
        std::fs::read_to_string(&reported.report)
            .with_context(|| format!("cannot read {}", reported.report.display()))?
    } else {
        format!("{}\n", reported.report.display())
    };
    let text = match &reported.html {
        Some(page) => format!("{text}{}\n", page.display()),
        None => text,
    };
    Ok(Reply::new(
        ExitStatus::Success,
        reported.to_json(target.root()),
        text,
    ))
}
