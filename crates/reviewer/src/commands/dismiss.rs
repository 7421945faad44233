//! `koas dismiss DOC RVW-NNNN [--reason TEXT]`: dismiss a flag.
//!
//! A `flag_only` entry records a finding and changes nothing; dismissing
//! it says the finding was looked at and needs no change. The dismissal is
//! a ledger entry of its own, `REVERT-RVW-NNNN` with the action
//! `flag_only` and no patch (the document does not change), written under
//! the workspace lock; the report, `koas status` and `koas grep` then show
//! the flag as dismissed and the annotated document drops its note.

use crate::common::{actor, clock, review_exit_codes, Reply, ReviewTarget, WorkspaceArgs, REFUSED};
use crate::passes::{self, Control, RunFailure};
use anyhow::Context as _;
use clap::Args;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::change_id::ChangeId;
use koas_review_workspace::{CommitContext, RunKind};
use serde_json::json;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(after_help = concat!("\
Only a flag (a flag_only entry) can be dismissed, once; a change is undone
with `koas revert` instead. The dismissal is recorded in the ledger as
REVERT-RVW-NNNN (action flag_only, no patch): the document is not touched.

Examples:
  koas dismiss spec.md RVW-0007
  koas dismiss spec.md RVW-0007 --reason \"the calendar is defined in §2\"

", review_exit_codes!()))]
pub struct DismissArgs {
    #[command(flatten)]
    pub target: WorkspaceArgs,

    /// The flag to dismiss (RVW-NNNN).
    #[arg(value_name = "ID")]
    pub id: String,

    /// Why (stored as the dismissal's rationale).
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub reason: String,

    /// Use this pipeline file instead of the built-in reviewer pipeline
    /// (for the report refreshed afterwards).
    /// Default: the pipeline the review was made with (`koas review
    /// --pipeline`), else the built-in one; `built-in` forces the latter.
    #[arg(long, value_name = "FILE")]
    pub pipeline: Option<PathBuf>,
}

impl super::OnWorkspace for DismissArgs {
    fn target(&self) -> &WorkspaceArgs {
        &self.target
    }
}

pub fn execute(global: &HostOptions, args: DismissArgs) -> anyhow::Result<ExitStatus> {
    super::execute_on(global, &args, dismiss)
}

/// `koas dismiss` as a library call: the answer is returned, not printed.
pub fn run(global: &HostOptions, control: &Control, args: &DismissArgs) -> anyhow::Result<Reply> {
    super::run_on(global, control, args, dismiss)
}

fn dismiss(
    global: &HostOptions,
    control: &Control,
    args: &DismissArgs,
    target: &ReviewTarget,
) -> anyhow::Result<Reply> {
    let id = ChangeId::parse(args.id.trim())
        .with_context(|| format!("{:?} is not a change ID", args.id))?;
    target.require_workspace()?;
    let mut run = target.begin_run(RunKind::Revert)?;
    let entry = match run.commit_dismissal(
        id,
        &args.reason,
        &CommitContext {
            actor: &actor(),
            clock: clock(),
            options: &ApplyOptions::default(),
        },
    ) {
        Ok(entry) => entry,
        Err(koas_review_workspace::WorkspaceError::Refused(reason)) => {
            drop(run);
            eprintln!("error: dismissal refused: {reason}\n  (nothing was changed)");
            return Ok(Reply::failed(
                REFUSED,
                &format!("dismissal refused: {reason}"),
                target.root(),
            ));
        }
        Err(e) => {
            return Err(e)
                .with_context(|| format!("recording the dismissal in {}", target.root().display()))
        }
    };
    let (pipeline, discovery) =
        passes::workspace_pipeline(global, target, args.pipeline.as_deref())?;
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
        Err(failure) => {
            let stale = "the dismissal is recorded, but the report and annotated document could not be refreshed";
            eprintln!("koas: {stale}");
            return Ok(match failure {
                RunFailure::Kernel(message) => {
                    eprintln!("error: {message}");
                    Reply::failed(REFUSED, &format!("{stale}: {message}"), target.root())
                }
                RunFailure::Interrupted => Reply::failed(
                    ExitStatus::Interrupted,
                    &format!("{stale}: interrupted"),
                    target.root(),
                ),
            });
        }
    };
    drop(run);
    let value = json!({
        "status": "completed",
        "summary": format!("{id} dismissed"),
        "workspace": target.root(),
        "entry": entry,
        "report": views.report,
    });
    let mut text = format!(
        "koas dismiss: {}: {id} dismissed by {}\nworkspace: {}\n",
        target.doc_name,
        entry.id,
        target.root().display()
    );
    if let Some(report) = &views.report {
        text.push_str(&format!("report:    {}\n", report.display()));
    }
    Ok(Reply::new(ExitStatus::Success, value, text))
}
