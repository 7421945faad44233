//! `koas show DOC RVW-0034 [--patch]`: one ledger entry in detail.

use crate::api::{entry_id, ApiError, Session};
use crate::common::{on_workspace, review_exit_codes, Reply, ReviewTarget, WorkspaceArgs, REFUSED};
use crate::passes::Control;
use clap::Args;
use koas_edit::query::render_details;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use serde_json::json;

#[derive(Debug, Args)]
#[command(after_help = concat!("\
Shows: ID, timestamp, action, kind, severity, silent flag, rationale, scope,
hashes, patches, whether and by what it was reverted; with --patch, the
forward unified diff (it applies with `git apply` to the document state the
change was made on).

Examples:
  koas show spec.md RVW-0034
  koas show spec.md REVERT-RVW-0034 --patch
  koas show spec.md RVW-0034 --json

", review_exit_codes!()))]
pub struct ShowArgs {
    #[command(flatten)]
    pub target: WorkspaceArgs,

    /// The entry: RVW-NNNN, or REVERT-RVW-NNNN for a revert.
    #[arg(value_name = "ID")]
    pub id: String,

    /// Also print the forward patch.
    #[arg(long)]
    pub patch: bool,
}

pub fn execute(global: &HostOptions, args: ShowArgs) -> anyhow::Result<ExitStatus> {
    on_workspace(&args.target, |target| {
        show(global, &args, target)?.print(args.target.json)
    })
}

fn show(global: &HostOptions, args: &ShowArgs, target: &ReviewTarget) -> anyhow::Result<Reply> {
    let control = Control::ctrl_c();
    let session = Session::on(global, &control, target);
    let shown = entry_id(&args.id).and_then(|id| session.show(id, args.patch));
    let shown = match shown {
        Ok(shown) => shown,
        Err(ApiError::NotFound { message }) => {
            eprintln!("error: {message}");
            return Ok(Reply::new(
                REFUSED,
                json!({"status": "not_found", "error": message, "workspace": target.root()}),
                String::new(),
            ));
        }
        Err(e) => return super::stopped(e, target.root()),
    };
    let mut text = render_details(
        &shown.entry,
        shown.reverted_by.as_ref(),
        shown.patch.as_deref(),
    );
    if let Some(why) = &shown.not_revertible {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "not revertible: {why}; its inverse patch no longer applies\n"
        ));
    }
    Ok(Reply::new(
        ExitStatus::Success,
        shown.to_json(target.root()),
        text,
    ))
}
