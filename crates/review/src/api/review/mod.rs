//! `review`: the reviewer pipeline on a document in its review
//! workspace, its changes recorded.
//!
//! Under the workspace lock: Stage 1, Stage 2 and `md_apply_ops` run in a
//! planning pass; the batch it planned is replayed, checked and committed
//! (patches, fsynced ledger, `stage3/doc.edited.md`, apply log); the view
//! pass writes `stage3/doc.REVIEWED.md` and the report; `in_place`
//! replaces the document last, only when everything succeeded.

mod answer;
mod model;
mod plan;

use super::session::stopped_by;
use super::{ApiError, Session};
use crate::common::{actor, clock, command_line, LlmFlags, ReviewTarget};
use crate::passes;
use answer::{answer, Rebase};
use anyhow::Context as _;
use koas_edit::edit_op::parse_ops_file;
use koas_review_schema::apply::{ApplyOptions, ApplyOutcome};
use koas_review_schema::review::ReviewModelRun;
use koas_review_workspace::{
    BeginRequest, CommitContext, Follow, PreparedRun, ReviewOutcome, RunKind,
};
use plan::{plan, Setup};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// What a review is asked: `koas review DOC`'s flags, as a library takes
/// them. `ReviewRequest::default()` is `koas review DOC` with none.
#[derive(Debug, Clone, Default)]
pub struct ReviewRequest {
    /// Edit ops to apply instead of the model's plan (a JSON file: an
    /// array of edit ops, or an object with an "ops" array).
    pub ops: Option<PathBuf>,
    /// Refuse every op that touches a protected region.
    pub strict: bool,
    /// When the review succeeded, replace the document with the edited one.
    pub in_place: bool,
    /// Record the document's hand edits since its last review as changes
    /// of kind `external` and continue on the document as it is.
    pub rebase: bool,
    /// A pipeline file instead of the built-in reviewer pipeline
    /// (`built-in` goes back to it); remembered by the workspace.
    pub pipeline: Option<PathBuf>,
    /// The model, over the `[llm]` tables of koas.toml and the pipeline.
    pub llm: LlmFlags,
    /// Use no model even if one is configured.
    pub no_llm: bool,
    /// Review the chunks without the document summary (the pyramid).
    pub skip_pyramid: bool,
    /// Do not apply the certain fixes of the checks.
    pub no_check_fixes: bool,
    /// A second model that checks each chunk's ops.
    pub tutor_model: Option<String>,
    /// The JSON answer holds every op's apply log record, applied ID and
    /// note. Without it the JSON holds counts: text output needs no more,
    /// and the JSON of a 100,000-op review is a tree of a quarter of a GB.
    pub whole_json: bool,
}

/// What a review recorded, counted as `koas review` tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReviewCounts {
    /// Changes applied (each with an ID, patches and a ledger line).
    pub applied: usize,
    /// Ops recorded as flags (an ID and a note, the text unchanged).
    pub flagged: usize,
    /// Ops refused, each with its reason in the apply log.
    pub rejected: usize,
    /// Ops whose effect the ledger already holds: not recorded again.
    pub known: usize,
}

/// A review that completed: what it recorded and wrote.
#[derive(Debug, Clone)]
pub struct Reviewed {
    /// What was recorded.
    pub counts: ReviewCounts,
    /// One line: the ops and what became of them.
    pub summary: String,
    /// The report the view pass wrote.
    pub report: Option<PathBuf>,
    /// What went wrong after everything was recorded and written (a mark
    /// that could not be cleared), for a person.
    pub warnings: Vec<String>,
    value: Value,
    text: String,
}

impl Reviewed {
    /// The JSON answer (`koas review --json`, the MCP tool): `status`,
    /// `summary`, `workspace`, the counts, the model's work, the files.
    pub fn to_json(&self) -> Value {
        self.value.clone()
    }

    /// The answer in words, as `koas review` prints it: the summary, what
    /// the model did, what was recorded, the files.
    pub fn to_text(&self) -> &str {
        &self.text
    }
}

impl Session<'_> {
    /// Reviews the document: plans the changes (the checks' certain fixes,
    /// then the model's ops or the request's), records them, and writes
    /// the report and the annotated document.
    pub fn review(&self, request: &ReviewRequest) -> Result<Reviewed, ApiError> {
        review(self, request)
    }
}

fn review(session: &Session<'_>, request: &ReviewRequest) -> Result<Reviewed, ApiError> {
    let (global, control, target) = (session.global, session.control(), session.target());
    let ops = read_ops(request, target.max_doc_bytes)?;
    target.prepare_writes()?;
    let mut run = begin(request, target)?;
    let setup = Setup::of(global, request, target)?;
    let planned = match plan(global, control, &setup, &run, ops)? {
        Ok(planned) => planned,
        Err(failure) => return Err(failure.into_error(run.rebased())),
    };
    let committed = commit(request, target, &mut run, planned.fixes, planned.outcome)?;
    if request.pipeline.is_some() {
        // The review was made with it: later commands use the same kernels.
        target
            .workspace
            .remember_pipeline(setup.file.as_deref())
            .map_err(anyhow::Error::from)?;
    }

    // What the command answers is taken from the commit now and the
    // commit dropped: on a large review its batch, ledger entries and log
    // records are hundreds of MB that the views pass does not need.
    let no_ops = request.ops.is_none() && setup.llm.is_none();
    // Without a model or ops the only changes are the checks' certain
    // fixes (a misspelling the document spells right elsewhere, a
    // heading-level skip): said so, not "no change".
    let fixed = committed.entries.iter().filter(|e| !e.is_revert).count();
    let run_model = planned
        .model
        .as_ref()
        .map(|m| model_run_for_report(target, &m.run));
    let rebase = Rebase {
        ids: run.rebased(),
        overlaps: run.rebase_overlaps(),
    };
    let answered = answer(request, target, &committed, no_ops, planned.model, rebase)?;
    drop(committed);

    let notice = no_ops.then(|| no_ops_notice(request.no_llm, fixed));
    let views = match passes::run_views_with_model(
        global,
        control,
        &setup.pipeline,
        &setup.discovery,
        &run,
        notice,
        run_model,
        &target.project,
    ) {
        Ok(views) => views,
        Err(failure) => {
            let say = |message: &str| {
                format!("{message} (the changes are recorded, but the report and annotated document could not be refreshed; DOC was not replaced)")
            };
            return Err(stopped_by(failure, say, true));
        }
    };
    let mut warnings = Vec::new();
    if request.in_place {
        if let Err(e) = run.replace_in_place(&target.doc_path) {
            return Err(target.not_written(e).into());
        }
        if let Err(e) = target.workspace.end_in_place() {
            warnings.push(format!(
                "{} was replaced, but: {e}",
                target.doc_path.display()
            ));
        }
    }
    drop(run);
    // Older document versions' artifacts are no longer needed: keep the
    // workspace a small multiple of the document however many reviews.
    control.collect_caches(global);
    Ok(answered.with_report(request, target, views.report, warnings))
}

/// The model run the report shows: the work behind the review. A run the
/// cache answered whole (no request at all) shows the last run that asked
/// the model, so an unchanged re-run keeps its report.
fn model_run_for_report(target: &ReviewTarget, run: &ReviewModelRun) -> ReviewModelRun {
    let asked = run.calls + run.cached_calls > 0 || run.stopped.is_some();
    match target.workspace.last_model_run() {
        // The same kernels' results (their summaries are kept with them
        // in the cache): the same model work.
        Some(last)
            if !asked
                && last.models == run.models
                && last.pyramid == run.pyramid
                && last.edit_plan == run.edit_plan =>
        {
            last
        }
        _ => {
            target.workspace.remember_model_run(run);
            run.clone()
        }
    }
}

/// The report's notice for a review with no model and no ops: the only
/// changes are the checks' certain fixes (`fixed` of them; a misspelling
/// the document spells right elsewhere, a heading-level skip), said so,
/// not "no change".
fn no_ops_notice(no_llm: bool, fixed: usize) -> String {
    let made = if fixed == 0 {
        "no change was made".to_owned()
    } else {
        format!("only the checks' certain fixes were applied ({fixed})")
    };
    if no_llm {
        format!("The model was not asked (--no-llm) and no ops were given: the deterministic stages ran and {made}.")
    } else {
        format!("No model is configured and no ops were given: the deterministic stages ran and {made}. Configure a model (an [llm] table in koas.toml, or --llm-backend/--llm-endpoint/--llm-model) or give edit ops with `koas review DOC --ops FILE`.")
    }
}

/// The ops file, checked before anything is locked or written, and
/// handed to the engine as read (a FIFO swapped in later is not read).
fn read_ops(request: &ReviewRequest, limit: u64) -> anyhow::Result<Option<Arc<[u8]>>> {
    let Some(ops) = &request.ops else {
        return Ok(None);
    };
    // Like the document: a FIFO or a device would hang or fill memory.
    let shown = format!("the ops file {}", ops.display());
    let bytes = crate::input::read_document_bytes(ops, &shown, limit, false)?;
    let text = String::from_utf8(bytes)
        .with_context(|| format!("the ops file {} is not UTF-8 text", ops.display()))?;
    parse_ops_file(&text).with_context(|| format!("ops file {}", ops.display()))?;
    Ok(Some(Arc::from(text.into_bytes())))
}

/// The review's run in its workspace, locked, following the document
/// (`--rebase` records hand edits first).
fn begin<'w>(request: &ReviewRequest, target: &'w ReviewTarget) -> anyhow::Result<PreparedRun<'w>> {
    let command = command_line();
    target
        .workspace
        .begin_following(
            BeginRequest {
                doc_name: &target.doc_name,
                document: Some(&target.text),
                kind: RunKind::Review,
                command: &command,
                clock: clock(),
            },
            &Follow {
                rebase: request.rebase,
                actor: &actor(),
                options: &ApplyOptions::default(),
            },
        )
        .map_err(|e| target.explain(e))
}

/// Records the planned changes: replayed and checked, then written in the
/// crash-safe order; the certain fixes first, the text the model's ops
/// address after.
fn commit(
    request: &ReviewRequest,
    target: &ReviewTarget,
    run: &mut PreparedRun<'_>,
    fixes: Option<ApplyOutcome>,
    outcome: ApplyOutcome,
) -> anyhow::Result<ReviewOutcome> {
    let workspace = &target.workspace;
    // An --in-place run marks its write as pending before it records
    // anything: killed or refused by a full disk after the ledger is
    // saved, `koas status` can tell the document is behind by that.
    // A run that does not write DOC clears an old mark.
    let marked = if request.in_place {
        workspace.begin_in_place(&target.doc_path, clock())
    } else {
        workspace.end_in_place()
    };
    marked.with_context(|| format!("review workspace {}", workspace.root().display()))?;
    let options = outcome.options.clone();
    let context = CommitContext {
        actor: &actor(),
        clock: clock(),
        options: &options,
    };
    let recording = || format!("recording the review in {}", workspace.root().display());
    let fixed = match fixes.filter(|f| {
        let b = &f.batch;
        !(b.applied.is_empty() && b.rejected.is_empty() && b.known.is_empty())
    }) {
        Some(f) => Some(
            run.commit_review(f.batch, f.protected, &context)
                .with_context(recording)?,
        ),
        None => None,
    };
    let committed = run
        .commit_review(outcome.batch, outcome.protected, &context)
        .with_context(recording)?;
    let committed = match fixed {
        Some(fixed) => fixed.then(committed),
        None => committed,
    };
    // A review without --in-place that recorded changes keeps them in the
    // workspace: DOC falls behind, and a later revert no longer writes it
    // either. One that recorded nothing leaves DOC as it was.
    if !request.in_place && !committed.entries.is_empty() {
        workspace
            .stop_writing_doc()
            .with_context(|| format!("review workspace {}", workspace.root().display()))?;
    }
    Ok(committed)
}
