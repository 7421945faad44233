//! `koas revert DOC RVW-0001 [...]` / `koas revert DOC --all`: undo
//! recorded changes — the command line's front end of
//! [`crate::api::Session::revert`] (a refusal exits 1 with nothing
//! touched).

use crate::api::{ApiError, RevertChanges, RevertRequest, Reverted, Session};
use crate::common::{review_exit_codes, Reply, ReviewTarget, WorkspaceArgs, REFUSED};
use crate::passes::Control;
use clap::Args;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use serde_json::json;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(after_help = concat!("\
Examples:
  koas revert spec.md RVW-0034              # one change
  koas revert spec.md RVW-0034 RVW-0035     # several: latest first, all or nothing
  koas revert spec.md --all                 # every change still active
  koas revert spec.md RVW-0002 --reason \"wrong term\" --json

A change can be reverted once; a revert cannot be reverted (make a new change
instead). If a later change touched the same lines, revert that one first; if
the document no longer holds what the change wrote, the revert is refused and
nothing is touched.

After an --in-place review the review writes DOC: a revert replaces DOC too
(while DOC is the review's current version), as with --in-place. A review
without --in-place that records a change ends that.

", review_exit_codes!()))]
pub struct RevertArgs {
    #[command(flatten)]
    pub target: WorkspaceArgs,

    /// Changes to revert (RVW-NNNN), any order.
    #[arg(
        value_name = "ID",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub ids: Vec<String>,

    /// Revert every change that is still active.
    #[arg(long)]
    pub all: bool,

    /// Why (stored as the revert entries' rationale).
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub reason: String,

    /// When the revert succeeded, replace DOC (atomically) with the
    /// resulting document.
    #[arg(long)]
    pub in_place: bool,

    /// Use this pipeline file instead of the built-in reviewer pipeline.
    /// Default: the pipeline the review was made with (`koas review
    /// --pipeline`), else the built-in one; `built-in` forces the latter.
    #[arg(long, value_name = "FILE")]
    pub pipeline: Option<PathBuf>,
}

impl super::OnWorkspace for RevertArgs {
    fn target(&self) -> &WorkspaceArgs {
        &self.target
    }
}

pub fn execute(global: &HostOptions, args: RevertArgs) -> anyhow::Result<ExitStatus> {
    super::execute_on(global, &args, revert)
}

fn revert(
    global: &HostOptions,
    control: &Control,
    args: &RevertArgs,
    target: &ReviewTarget,
) -> anyhow::Result<Reply> {
    let request = RevertRequest {
        changes: if args.all {
            RevertChanges::All
        } else {
            RevertChanges::Listed(args.ids.clone())
        },
        reason: args.reason.clone(),
        in_place: args.in_place,
        pipeline: args.pipeline.clone(),
    };
    let root = target.root().to_path_buf();
    match Session::on(global, control, target).revert(&request) {
        Ok(reverted) => answer(target, &reverted),
        Err(ApiError::Refused { reason }) => {
            eprintln!("error: revert refused: {reason}\n  (nothing was changed)");
            Ok(Reply::new(
                REFUSED,
                json!({
                    "status": "refused",
                    "error": reason,
                    "workspace": root,
                    "total_reverted": 0,
                }),
                String::new(),
            ))
        }
        Err(e) => super::stopped(e, &root),
    }
}

/// The command's answer: the reverts, one line each, and what was written.
fn answer(target: &ReviewTarget, reverted: &Reverted) -> anyhow::Result<Reply> {
    for w in &reverted.warnings {
        eprintln!("koas: {w}");
    }
    let value = reverted.to_json(target.root());
    if reverted.run.is_none() {
        return Ok(Reply::new(
            ExitStatus::Success,
            value,
            format!("koas revert: {}: nothing to revert\n", target.doc_name),
        ));
    }
    let pairs = reverted.pairs();
    let mut t = String::new();
    writeln!(
        t,
        "koas revert: {}: {} changes reverted, latest first",
        target.doc_name,
        pairs.len()
    )?;
    for (reverted, by) in &pairs {
        writeln!(t, "  {reverted} reverted by {by}")?;
    }
    writeln!(t, "workspace: {}", target.root().display())?;
    if let Some(report) = &reverted.written.report {
        writeln!(t, "report:    {}", report.display())?;
    }
    match reverted.written.doc_replaced {
        Some(true) => writeln!(
            t,
            "replaced:  {} (its review writes it: the last review was --in-place)",
            target.doc_path.display()
        )?,
        Some(false) => writeln!(t, "replaced:  {}", target.doc_path.display())?,
        None => {}
    }
    Ok(Reply::new(ExitStatus::Success, value, t))
}
