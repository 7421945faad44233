//! `koas review DOC [--ops FILE]`: run the reviewer pipeline on a document
//! in its review workspace and record the changes.
//!
//! Under the workspace lock: Stage 1, Stage 2 and `md_apply_ops` run in a
//! planning pass; the batch it planned is replayed, checked and committed
//! (patches, fsynced ledger, `stage3/doc.edited.md`, apply log); the view
//! pass writes `stage3/doc.REVIEWED.md` and the report; `--in-place`
//! replaces DOC last, only when everything succeeded.

use crate::api::{ReviewRequest, Reviewed, Session};
use crate::common::{
    on_workspace, review_exit_codes, LlmFlags, Reply, ReviewTarget, WorkspaceArgs,
};
use crate::passes::Control;
use clap::Args;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Args)]
#[command(after_help = concat!("\
Examples:
  koas review spec.md                       # with the model of koas.toml's [llm]; else findings only
  koas review spec.md --llm-backend openai --llm-endpoint http://127.0.0.1:8080 --llm-model m --llm-max-in-flight 4
  koas review spec.md --no-llm              # deterministic stages only: findings, no change
  koas review spec.md --ops ops.json        # apply edit ops (the EditOp schema; missing fields get defaults)
  koas review spec.md --ops ops.json --strict --in-place
  koas review spec.md -w /tmp/ws --json

Where ops come from: the model (md_edit_plan summarizes the document and
reviews every chunk, each with the summaries of its section as context, as
soon as they are written), or --ops (a JSON array of
edit ops, or an object with an \"ops\" array), which replaces the model's
plan. Ops address the lines of the workspace's current document (the
original on a first review). Every op is normalized and validated; rejected
ops are listed with their reason and in stage3/apply_log.jsonl, and the rest
are applied.

An op is judged by what it does, not by its kind: only a small change inside
words that keeps the Markdown structure and every negation, modal,
quantifier, comparison and direction word is silent; any other change needs
attention, with a note saying what changed. A model's change of the
structure is refused unless its kind declares it (heading, list, table,
structure); invisible and direction characters are refused. --strict refuses
structure, meaning and token changes too. An op whose effect is already in
the ledger (applied, reverted, a flag open or dismissed) is not recorded
again; give a person's op \"again\": true to make a reverted change again.

A document edited by hand since its last review: with no change recorded
yet the review simply continues on the new text; otherwise koas stops and
names the command that continues (--rebase). Either way the hand edits are
recorded as changes of kind `external` and the ledger is kept.

Workspace (.review/<stem>_<hash12>/ next to DOC unless -w, named after DOC's
file name, so it follows DOC across edits): stage1/, stage2/,
stage3/doc.edited.md, stage3/doc.REVIEWED.md, stage3/apply_log.jsonl,
review/ledger.jsonl, review/patches/RVW-NNNN.patch (+ .inverse.patch),
review/REVIEW_<stem>.md.

", review_exit_codes!()))]
pub struct ReviewArgs {
    #[command(flatten)]
    pub target: WorkspaceArgs,

    /// More documents (or folders) to review in the same command: each in
    /// its own workspace, all sharing the model servers' slots. A folder
    /// gives its *.md and *.markdown files, walked as ripgrep walks one:
    /// symbolic links are not followed, hidden entries are skipped, and so
    /// is what .ignore, .gitignore (inside a Git repository) or Git's
    /// global excludes ignore. Every entry not reviewed (a subfolder that
    /// cannot be read, a name that is not UTF-8, a link) is listed with its
    /// reason and counted in the final line.
    #[arg(value_name = "DOC", num_args = 0..)]
    pub more: Vec<PathBuf>,

    /// With several documents (or a folder), review at most N of them at
    /// once [default: 4]; their model requests share one pool, which is
    /// what keeps the servers busy.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(usize))]
    pub jobs: Option<usize>,

    /// Edit ops to apply (JSON: an array of edit ops, or an object with an "ops" array; the fields are in docs/artifacts.md).
    #[arg(long, value_name = "FILE")]
    pub ops: Option<PathBuf>,

    /// Refuse every op that touches a protected region (code, tables,
    /// math, front matter, HTML, inline code…); without it such an op is
    /// applied only if it needs attention and carries a review note.
    #[arg(long)]
    pub strict: bool,

    /// When the review succeeded, replace DOC (atomically) with the edited
    /// document.
    #[arg(long)]
    pub in_place: bool,

    // `[inputs]` is help text, not a doc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// DOC was edited outside koas since its last review: record the
    /// difference from the review's current document as changes of kind
    /// `external` and continue the review on DOC as it is now (the ledger
    /// is kept; changes whose lines were edited can no longer be reverted
    /// on their own).
    #[arg(long)]
    pub rebase: bool,

    /// Use this pipeline file instead of the built-in reviewer pipeline
    /// (configs/reviewer.toml); its [inputs] doc is replaced by DOC. The
    /// review remembers it: later reviews, reports, reverts and dismissals
    /// of DOC use it without the flag (`--pipeline built-in` goes back).
    #[arg(long, value_name = "FILE")]
    pub pipeline: Option<PathBuf>,

    /// The model, overriding the [llm] table of koas.toml (found upward
    /// from DOC) and of the pipeline.
    #[command(flatten)]
    pub llm: LlmFlags,

    /// Use no model even if one is configured: the LLM kernels write
    /// empty results marked skipped, the deterministic stages run.
    #[arg(long)]
    pub no_llm: bool,

    /// Do not build the document summary (the pyramid): chunks are reviewed
    /// without it.
    #[arg(long)]
    pub skip_pyramid: bool,

    /// Do not apply the certain fixes of the checks (those `koas check
    /// --fix` applies: a renamed anchor, a heading-level skip, an extra
    /// empty table cell, an empty heading).
    #[arg(long)]
    pub no_check_fixes: bool,

    /// A second model that checks each chunk's ops: it accepts, corrects
    /// or rejects them (a rejected chunk is asked once more, carefully).
    #[arg(long, value_name = "MODEL")]
    pub tutor_model: Option<String>,
}

impl ReviewArgs {
    /// The request these flags make; `whole_json`: the JSON answer holds
    /// every op (`--json`), not only counts.
    pub fn request(&self, whole_json: bool) -> ReviewRequest {
        ReviewRequest {
            ops: self.ops.clone(),
            strict: self.strict,
            in_place: self.in_place,
            rebase: self.rebase,
            pipeline: self.pipeline.clone(),
            llm: self.llm.clone(),
            no_llm: self.no_llm,
            skip_pyramid: self.skip_pyramid,
            no_check_fixes: self.no_check_fixes,
            tutor_model: self.tutor_model.clone(),
            whole_json,
        }
    }
}

pub fn execute(global: &HostOptions, args: ReviewArgs) -> anyhow::Result<ExitStatus> {
    if super::set::is_set(&args.target, &args.more) {
        let result = review_set(global, &args);
        return crate::common::json_errors(args.target.json, None, result);
    }
    on_workspace(&args.target, |target| {
        let control = Control::ctrl_c();
        let request = args.request(args.target.json);
        reply(
            Session::on(global, &control, target).review(&request),
            target,
        )?
        .print(args.target.json)
    })
}

/// The command's answer: the review's, or how it stopped.
fn reply(
    reviewed: Result<Reviewed, crate::api::ApiError>,
    target: &ReviewTarget,
) -> anyhow::Result<Reply> {
    match reviewed {
        Ok(reviewed) => {
            for w in &reviewed.warnings {
                eprintln!("koas: {w}");
            }
            Ok(Reply::new(
                ExitStatus::Success,
                reviewed.to_json(),
                reviewed.to_text().to_owned(),
            ))
        }
        Err(e) => super::stopped(e, target.root()),
    }
}

/// `koas review DOC DOC… | DIR`: each document reviewed as `koas review
/// DOC` would, its answer kept with counts, not every op.
fn review_set(global: &HostOptions, args: &ReviewArgs) -> anyhow::Result<ExitStatus> {
    if args.target.workspace.is_some() || args.ops.is_some() {
        anyhow::bail!(
            "--workspace and --ops name one document's review: with several documents (or a folder) each document gets its own workspace next to it; review them one by one to use these flags"
        );
    }
    let one = |global: &HostOptions, control: &Control, doc: &Path| {
        let mut one = args.clone();
        one.target.doc = doc.to_path_buf();
        one.more.clear();
        let target = ReviewTarget::locate(&one.target)?;
        let reply = reply(
            Session::on(global, control, &target).review(&one.request(false)),
            &target,
        )?;
        Ok((reply.status, reply.json))
    };
    let command = super::set::SetCommand {
        name: "review",
        done: "reviewed",
        columns: &[
            ("chunks", "/chunks"),
            ("applied", "/total_changes"),
            ("flagged", "/flags"),
            ("rejected", "/rejected"),
            ("calls", "/model/calls"),
            ("tokens", "/model/tokens"),
        ],
        one: &one,
    };
    super::set::execute(global, &args.target, &args.more, args.jobs, &command)
}
