//! `koas show DOC RVW-0034 [--patch]`: one ledger entry in detail.

use crate::common::{on_workspace, review_exit_codes, Reply, ReviewTarget, WorkspaceArgs, REFUSED};
use anyhow::Context as _;
use clap::Args;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
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

impl ShowArgs {
    /// `koas show DOC ID`.
    pub fn new(target: WorkspaceArgs, id: impl Into<String>) -> ShowArgs {
        ShowArgs {
            target,
            id: id.into(),
            patch: false,
        }
    }
}

pub fn execute(_global: &HostOptions, args: ShowArgs) -> anyhow::Result<ExitStatus> {
    on_workspace(&args.target, |target| {
        show(&args, target)?.print(args.target.json)
    })
}

/// `koas show` as a library call: the answer is returned, not printed.
pub fn run(args: &ShowArgs) -> anyhow::Result<Reply> {
    show(args, &ReviewTarget::locate(&args.target)?)
}

fn show(args: &ShowArgs, target: &ReviewTarget) -> anyhow::Result<Reply> {
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
        eprintln!("error: {message}");
        return Ok(Reply::new(
            REFUSED,
            json!({"status": "not_found", "error": message, "workspace": target.root()}),
            String::new(),
        ));
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
    let mut text = render_details(entry, reverted_by, patch.as_deref());
    if let Some(blocked) = &blocked {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "not revertible: its lines were edited outside koas afterwards ({}); its inverse patch no longer applies\n",
            blocked.by
        ));
    }
    Ok(Reply::new(
        ExitStatus::Success,
        json!({
            "status": "completed",
            "summary": entry.summary,
            "not_revertible": blocked.as_ref().map(|b| format!("its lines were edited outside koas afterwards ({})", b.by)),
            "workspace": target.root(),
            "change": entry,
            "reverted_by": reverted_by.map(|e| e.id),
            "patch": patch,
        }),
        text,
    ))
}
