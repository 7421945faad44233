//! `koas show DOC RVW-0034 [--patch]`: one ledger entry in detail.

use crate::common::{
    on_workspace, print_json, review_exit_codes, ReviewTarget, WorkspaceArgs, REFUSED,
};
use anyhow::Context as _;
use clap::Args;
use koas_orchestrator::cli::{ExitStatus, Global};
use koas_orchestrator::{out, outln};
use koas_review::query::render_details;
use koas_review_schema::change_id::EntryId;
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

pub fn execute(_global: &Global, args: ShowArgs) -> anyhow::Result<ExitStatus> {
    on_workspace(&args.target, |target| show(&args, target))
}

fn show(args: &ShowArgs, target: &ReviewTarget) -> anyhow::Result<ExitStatus> {
    target.require_workspace()?;
    let id = EntryId::parse(args.id.trim()).with_context(|| {
        format!(
            "'{}' is not a change ID (expected RVW-NNNN or REVERT-RVW-NNNN)",
            args.id
        )
    })?;
    let ledger = target
        .workspace
        .ledger()
        .with_context(|| format!("review workspace {}", target.root().display()))?;
    let Some(entry) = ledger.find(id) else {
        let message = format!(
            "{id} is not in the ledger of {} ({} entries); `koas grep {}` lists them",
            target.root().display(),
            ledger.entries().len(),
            target.doc_path.display()
        );
        if args.target.json {
            print_json(
                &json!({"status": "not_found", "error": message, "workspace": target.root()}),
            )?;
        }
        eprintln!("error: {message}");
        return Ok(REFUSED);
    };
    let reverted_by = match id {
        EntryId::Change(change) => ledger.revert_of(change),
        EntryId::Revert(_) => None,
    };
    let patch = if args.patch && !entry.patch_forward.is_empty() {
        Some(match &entry.patch_text {
            Some(copy) => copy.forward.clone(),
            None => target.workspace.read_patch(&entry.patch_forward)?,
        })
    } else {
        None
    };
    let blocked = match id {
        EntryId::Change(change) if reverted_by.is_none() => {
            koas_review_workspace::not_revertible(ledger.entries())
                .into_iter()
                .find(|b| b.id == change)
        }
        _ => None,
    };
    if args.target.json {
        print_json(&json!({
            "status": "completed",
            "summary": entry.summary,
            "not_revertible": blocked.as_ref().map(|b| format!("its lines were edited outside koas afterwards ({})", b.by)),
            "workspace": target.root(),
            "change": entry,
            "reverted_by": reverted_by.map(|e| e.id),
            "patch": patch,
        }))?;
    } else {
        out!("{}", render_details(entry, reverted_by, patch.as_deref()))?;
        if let Some(blocked) = &blocked {
            outln!(
                "not revertible: its lines were edited outside koas afterwards ({}); its inverse patch no longer applies",
                blocked.by
            )?;
        }
    }
    Ok(ExitStatus::Success)
}
