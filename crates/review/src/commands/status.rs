//! `koas status DOC [--repair-ledger]`: the state of a document's review
//! workspace — stages completed, counts, whether the document is up to
//! date with its ledger, a torn ledger tail, orphan or damaged patch files,
//! who holds the lock — and the repair of a torn ledger tail.

use crate::api::status::{summary, DocState, FileState};
use crate::api::Session;
use crate::common::{on_workspace, review_exit_codes, Reply, ReviewTarget, WorkspaceArgs};
use crate::passes::Control;
use clap::Args;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_review_workspace::WorkspaceStatus;
use std::fmt::Write as _;

#[derive(Debug, Args)]
#[command(after_help = concat!("\
A crash in the middle of a ledger write can leave a torn last line. It is
reported here and refused by `koas review` and `koas revert` until it is
repaired: --repair-ledger moves the torn bytes to
review/ledger.jsonl.torn-<time> (nothing is deleted) and cuts them from the
ledger. Their change IDs are never reused.

Examples:
  koas status spec.md
  koas status spec.md --json
  koas status spec.md --repair-ledger

", review_exit_codes!()))]
pub struct StatusArgs {
    #[command(flatten)]
    pub target: WorkspaceArgs,

    /// Move a torn ledger tail aside (takes the workspace lock).
    #[arg(long)]
    pub repair_ledger: bool,
}

pub fn execute(global: &HostOptions, args: StatusArgs) -> anyhow::Result<ExitStatus> {
    on_workspace(&args.target, |target| {
        status(global, &args, target)?.print(args.target.json)
    })
}

fn status(global: &HostOptions, args: &StatusArgs, target: &ReviewTarget) -> anyhow::Result<Reply> {
    let control = Control::ctrl_c();
    let state = match Session::on(global, &control, target).status(args.repair_ledger) {
        Ok(state) => state,
        Err(e) => return super::stopped(e, target.root()),
    };
    let value = state.to_json().map_err(anyhow::Error::from)?;
    let mut text = String::new();
    if args.repair_ledger {
        match &state.repaired {
            Some(side) => writeln!(
                text,
                "repaired: the torn ledger tail was moved to {}",
                side.display()
            )?,
            None => writeln!(
                text,
                "repaired: nothing to repair, the ledger has no torn tail"
            )?,
        }
    }
    print_human(
        &mut text,
        target,
        &state.status,
        &state.doc,
        state.changed_outside,
    )?;
    Ok(Reply::new(ExitStatus::Success, value, text))
}

/// The status in words, one labelled line after another.
fn print_human(
    t: &mut String,
    target: &ReviewTarget,
    status: &WorkspaceStatus,
    doc: &DocState,
    changed_outside: bool,
) -> std::fmt::Result {
    // Long because it is the status's lines in the order they print, each
    // one condition and one `writeln!`: cut, the order would be scattered.
    writeln!(t, "workspace: {}", status.workspace.display())?;
    writeln!(
        t,
        "document:  {}",
        status.doc_name.as_deref().unwrap_or(&target.doc_name)
    )?;
    writeln!(
        t,
        "stages:    {}",
        if status.stages_completed.is_empty() {
            "none".to_owned()
        } else {
            status.stages_completed.join(", ")
        }
    )?;
    writeln!(
        t,
        "ledger:    {} entries; {}",
        status.ledger_entries,
        summary(status, doc)
    )?;
    if let Some(hash) = &status.original_hash {
        writeln!(t, "original:  {hash}")?;
    }
    if let Some(hash) = &status.current_hash {
        writeln!(t, "current:   {hash}")?;
    }
    match status.document_state.as_str() {
        "behind_ledger" => writeln!(
            t,
            "note:      the edited document is behind its ledger (a run was interrupted); the next review or revert brings it up to date"
        )?,
        "diverged" => writeln!(
            t,
            "problem:   stage3/doc.edited.md was edited outside koas: it matches no state of the ledger"
        )?,
        _ => {}
    }
    let shown = target.doc_path.display();
    file_line(t, target, doc)?;
    if doc.interrupted {
        writeln!(
            t,
            "problem:   {shown} is {} change(s) behind its review: an `--in-place` review recorded them but did not write {shown} (it was killed, or the write failed); they are in the ledger and in {}; `koas review {shown} --in-place` writes them",
            doc.behind_by,
            status.workspace.join(koas_review_workspace::paths::EDITED_DOC).display()
        )?;
    } else if doc.behind_by > 0 {
        writeln!(
            t,
            "note:      {shown} is {} change(s) behind its review, kept in {} (a review without --in-place); `koas review {shown} --in-place` writes them into {shown}",
            doc.behind_by,
            status.workspace.join(koas_review_workspace::paths::EDITED_DOC).display()
        )?;
    }
    if changed_outside {
        writeln!(
            t,
            "changed:   {} was edited outside koas since its last review; `{}` continues the review on it (the ledger is kept)",
            target.doc_path.display(),
            target.rebase_command()
        )?;
    }
    if !status.not_revertible.is_empty() {
        writeln!(
            t,
            "not revertible: {} change(s) whose lines were edited outside koas afterwards (their inverse patch no longer applies):",
            status.not_revertible.len()
        )?;
        for blocked in &status.not_revertible {
            writeln!(
                t,
                "           {} (lines edited in {})",
                blocked.id, blocked.by
            )?;
        }
    }
    for other in &target.others {
        writeln!(
            t,
            "note:      another review workspace of this document, under a name an earlier koas gave it: {} (open it with -w)",
            other.display()
        )?;
    }
    if let Some(torn) = &status.torn_tail {
        writeln!(
            t,
            "problem:   the ledger ends with a torn line at byte {} ({}); run `koas status {} --repair-ledger`",
            torn.offset,
            torn.reason,
            target.doc_path.display()
        )?;
    }
    if !status.orphan_patches.is_empty() {
        writeln!(
            t,
            "problem:   {} patch files ({} bytes) no ledger entry refers to, left by a run that failed before it saved its ledger; the next review or revert removes them before it writes anything",
            status.orphan_patches.len(),
            status.orphan_patch_bytes
        )?;
    }
    if !status.damaged_patches.is_empty() {
        writeln!(
            t,
            "note:      {} patch files are missing or damaged; the next review or revert rebuilds them from the ledger",
            status.damaged_patches.len()
        )?;
    }
    if !status.stale_temp_files.is_empty() {
        writeln!(
            t,
            "problem:   a killed run left {} temporary file(s) (an interrupted write: a file it was replacing kept its previous version); the next review or revert removes them:",
            status.stale_temp_files.len()
        )?;
        for file in &status.stale_temp_files {
            writeln!(t, "           {file}")?;
        }
    }
    match (&status.locked_by, &status.stale_lock) {
        (Some(holder), _) => writeln!(t, "lock:      held by {holder}"),
        (None, Some(dead)) => writeln!(
            t,
            "lock:      free (a stale record of {dead}: that process is gone; the next run takes the lock over)"
        ),
        (None, None) => writeln!(t, "lock:      free"),
    }
}

/// What DOC is to its review, and the command that brings them together.
fn file_line(t: &mut String, target: &ReviewTarget, doc: &DocState) -> std::fmt::Result {
    let shown = target.doc_path.display();
    let writes = if doc.writes_doc {
        " (reviews and reverts write it: the last review was --in-place)"
    } else {
        ""
    };
    match doc.file {
        FileState::Current => {
            writeln!(t, "file:      {shown} is the review's current version{writes}")
        }
        FileState::Edited => writeln!(
            t,
            "file:      {shown} was edited outside koas since the review last saw it; `{}` records the edits and continues",
            target.rebase_command()
        ),
        FileState::Original => writeln!(
            t,
            "file:      {shown} is the original, {} change(s) behind its review",
            doc.behind_by
        ),
        FileState::Behind if doc.behind_by > 0 => writeln!(
            t,
            "file:      {shown} is {} change(s) behind its review",
            doc.behind_by
        ),
        FileState::Behind => writeln!(
            t,
            "file:      {shown} lacks changes the review recorded since it was last written; `koas review {shown} --in-place` writes them into it"
        ),
    }
}
