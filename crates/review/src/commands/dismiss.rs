//! `koas dismiss DOC RVW-NNNN [--reason TEXT]`: dismiss a flag.
//!
//! A `flag_only` entry records a finding and changes nothing; dismissing
//! it says the finding was looked at and needs no change. The dismissal is
//! a ledger entry of its own, `REVERT-RVW-NNNN` with the action
//! `flag_only` and no patch (the document does not change), written under
//! the workspace lock; the report, `koas status` and `koas grep` then show
//! the flag as dismissed and the annotated document drops its note.

use crate::api::{change_id, Session};
use crate::common::{review_exit_codes, Reply, ReviewTarget, WorkspaceArgs};
use crate::passes::Control;
use clap::Args;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
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

fn dismiss(
    global: &HostOptions,
    control: &Control,
    args: &DismissArgs,
    target: &ReviewTarget,
) -> anyhow::Result<Reply> {
    let session = Session::on(global, control, target);
    let dismissed = change_id(&args.id)
        .and_then(|id| session.dismiss(id, &args.reason, args.pipeline.as_deref()));
    let dismissed = match dismissed {
        Ok(d) => d,
        Err(e) => return super::stopped(e, target.root()),
    };
    let value = dismissed.to_json(target.root());
    let mut text = format!(
        "koas dismiss: {}: {} dismissed by {}\nworkspace: {}\n",
        target.doc_name,
        dismissed.entry.reverted_id,
        dismissed.entry.id,
        target.root().display()
    );
    if let Some(report) = &dismissed.report {
        text.push_str(&format!("report:    {}\n", report.display()));
    }
    Ok(Reply::new(ExitStatus::Success, value, text))
}
