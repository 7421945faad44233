//! `koas revert DOC RVW-0001 [...]` / `koas revert DOC --all`: undo
//! recorded changes.
//!
//! Under the workspace lock, `md_revert` plans the reverts (latest change
//! first) on the current document and ledger; a refusal (double revert,
//! revert of a revert, a flag, a conflict detected by content hash) stops
//! here, with exit code 1 and nothing touched. Otherwise the plan is
//! replayed and checked, each revert gets a `REVERT-RVW-NNNN` patch pair
//! and ledger entry, the document is replaced atomically, and the views
//! are refreshed.

use crate::common::{actor, clock, review_exit_codes, Reply, ReviewTarget, WorkspaceArgs, REFUSED};
use crate::passes::{self, Control, RunFailure, RunInputs, REVERT};
use anyhow::Context as _;
use clap::Args;
use koas_orchestrator::discovery::Discovery;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_orchestrator::engine::{CanonicalJson, Provided};
use koas_orchestrator::pipeline::Pipeline;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::names;
use koas_review_schema::revert::RevertOutcome;
use koas_review_workspace::{CommitContext, PreparedRun, RunKind};
use serde_json::{json, Value};
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

impl RevertArgs {
    /// `koas revert DOC ID...`.
    pub fn new(target: WorkspaceArgs, ids: Vec<String>) -> RevertArgs {
        RevertArgs {
            target,
            ids,
            all: false,
            reason: String::new(),
            in_place: false,
            pipeline: None,
        }
    }
}

impl super::OnWorkspace for RevertArgs {
    fn target(&self) -> &WorkspaceArgs {
        &self.target
    }
}

pub fn execute(global: &HostOptions, args: RevertArgs) -> anyhow::Result<ExitStatus> {
    super::execute_on(global, &args, revert)
}

/// `koas revert` as a library call: the answer is returned, not printed.
pub fn run(global: &HostOptions, control: &Control, args: &RevertArgs) -> anyhow::Result<Reply> {
    super::run_on(global, control, args, revert)
}

fn revert(
    global: &HostOptions,
    control: &Control,
    args: &RevertArgs,
    target: &ReviewTarget,
) -> anyhow::Result<Reply> {
    target.require_workspace()?;
    let workspace = &target.workspace;
    let mut run = target.begin_run(RunKind::Revert)?;
    // The views' Stage 1 and 2 describe the original document.
    let (mut pipeline, discovery) =
        passes::workspace_pipeline(global, target, args.pipeline.as_deref())?;
    pipeline.require(REVERT, "plans reverts")?;
    pipeline.set_config(REVERT, "ids", json!(args.ids));
    pipeline.set_config(REVERT, "all", Value::Bool(args.all));

    let outcome = match plan(global, control, &pipeline, &discovery, &run)? {
        Ok(outcome) => outcome,
        Err(failure) => return Ok(not_planned(failure, target.root())),
    };
    if let Some(reason) = &outcome.refused {
        let reason = refusal(reason, args, target, &run);
        drop(run);
        eprintln!("error: revert refused: {reason}\n  (nothing was changed)");
        return Ok(Reply::new(
            REFUSED,
            json!({
                "status": "refused",
                "error": reason,
                "workspace": target.root(),
                "total_reverted": 0,
            }),
            String::new(),
        ));
    }
    if outcome.plan.reverts.is_empty() {
        drop(run);
        return Ok(Reply::new(
            ExitStatus::Success,
            json!({
                "status": "completed",
                "summary": "nothing to revert",
                "workspace": target.root(),
                "total_reverted": 0,
            }),
            format!("koas revert: {}: nothing to revert\n", target.doc_name),
        ));
    }
    if control.interrupted() {
        let message = "interrupted before the reverts were recorded; nothing was changed";
        eprintln!("koas: {message}");
        return Ok(Reply::failed(
            ExitStatus::Interrupted,
            message,
            target.root(),
        ));
    }
    // DOC follows its review when the review writes it (its last review
    // was `--in-place`) and DOC is the review's current version: nothing
    // of the writer's is in DOC that the write would lose.
    let remembered = !args.in_place && workspace.writes_doc() && target.text == run.current_text();
    let in_place = args.in_place || remembered;
    // As in `koas review --in-place`: the write is pending from before
    // the ledger is saved until DOC is replaced.
    if in_place {
        workspace
            .begin_in_place(&target.doc_path, clock())
            .with_context(|| format!("review workspace {}", workspace.root().display()))?;
    }
    let committed = run
        .commit_revert(
            outcome.plan,
            &args.reason,
            &CommitContext {
                actor: &actor(),
                clock: clock(),
                options: &ApplyOptions::default(),
            },
        )
        .with_context(|| format!("recording the reverts in {}", workspace.root().display()))?;
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
        Err(failure) => return Ok(views_failed(failure, target.root())),
    };
    if in_place {
        if let Err(e) = run.replace_in_place(&target.doc_path) {
            return Err(target.not_written(e));
        }
        if let Err(e) = workspace.end_in_place() {
            eprintln!("koas: {} was replaced, but: {e}", target.doc_path.display());
        }
    }
    drop(run);
    control.collect_caches(global);
    let written = in_place.then_some(remembered);
    answer(target, &committed, views.report, written)
}

/// The planning pass: `md_revert` alone, on the current document and
/// ledger.
fn plan(
    global: &HostOptions,
    control: &Control,
    pipeline: &Pipeline,
    discovery: &Discovery,
    run: &PreparedRun<'_>,
) -> anyhow::Result<Result<RevertOutcome, RunFailure>> {
    let planning = pipeline.subset(|k| k == REVERT);
    let state = run.review_state();
    let mut pass = RunInputs::default();
    pass.provided.insert(
        names::REVIEW_DOC.to_owned(),
        Provided::from(Value::String(run.current_text().to_owned())),
    );
    pass.provided.insert(
        names::LEDGER.to_owned(),
        Provided::Canonical(std::sync::Arc::new(CanonicalJson::array(
            run.entries(),
            |_| {},
        )?)),
    );
    pass.provided.insert(
        names::REVIEW_STATE.to_owned(),
        Provided::from(serde_json::to_value(&state)?),
    );
    // A refused request must leave the review state untouched: the plan
    // stays in the cache, no stage3/revert_outcome.json is written.
    pass.host_written.insert(names::REVERTED_DOC.to_owned());
    pass.host_written.insert(names::REVERT_OUTCOME.to_owned());
    let (_, result) = passes::run_pass(global, control, &planning, discovery, pass)?;
    Ok(match result {
        Ok(planned) => Ok(passes::parse_output(
            &planned.record,
            REVERT,
            names::REVERT_OUTCOME,
        )?),
        Err(failure) => Err(failure),
    })
}

/// A planning pass that failed: nothing was reverted.
fn not_planned(failure: RunFailure, workspace: &std::path::Path) -> Reply {
    match failure {
        RunFailure::Kernel(message) => {
            eprintln!("error: {message}\n  (nothing was reverted)");
            Reply::failed(
                REFUSED,
                &format!("{message} (nothing was reverted)"),
                workspace,
            )
        }
        RunFailure::Interrupted => Reply::failed(
            ExitStatus::Interrupted,
            "interrupted (nothing was reverted)",
            workspace,
        ),
    }
}

/// Why the revert was refused, with the requested changes that hand
/// edits made impossible to revert on their own.
fn refusal(
    reason: &str,
    args: &RevertArgs,
    target: &ReviewTarget,
    run: &PreparedRun<'_>,
) -> String {
    let blocked: Vec<String> = koas_review_workspace::not_revertible(run.entries())
        .into_iter()
        .filter(|b| args.all || args.ids.iter().any(|i| i.trim() == b.id.to_string()))
        .map(|b| {
            format!(
                "{} (its lines were edited outside koas, recorded as {})",
                b.id, b.by
            )
        })
        .collect();
    if blocked.is_empty() {
        return reason.to_owned();
    }
    format!(
        "{reason}; not revertible on its own: {} — `koas status {}` lists such changes",
        blocked.join(", "),
        target.doc_path.display()
    )
}

/// The reverts are recorded but the views pass failed.
fn views_failed(failure: RunFailure, workspace: &std::path::Path) -> Reply {
    let stale =
        "the reverts are recorded, but the report and annotated document could not be refreshed";
    eprintln!("koas: {stale}");
    let mut reply = match failure {
        RunFailure::Kernel(message) => {
            eprintln!("error: {message}");
            Reply::failed(REFUSED, &format!("{stale}: {message}"), workspace)
        }
        RunFailure::Interrupted => Reply::failed(
            ExitStatus::Interrupted,
            &format!("{stale}: interrupted"),
            workspace,
        ),
    };
    reply.json["status"] = json!("partial");
    reply
}

/// The command's answer; `written`: DOC was replaced (`Some(true)`: not
/// asked for, because the review writes DOC).
fn answer(
    target: &ReviewTarget,
    committed: &koas_review_workspace::RevertRunOutcome,
    report: Option<PathBuf>,
    written: Option<bool>,
) -> anyhow::Result<Reply> {
    let pairs: Vec<(String, String)> = committed
        .entries
        .iter()
        .map(|e| (e.reverted_id.clone(), e.id.to_string()))
        .collect();
    let mut value = committed.summary_json();
    if let Some(map) = value.as_object_mut() {
        map.insert(
            "summary".into(),
            json!(format!("{} changes reverted", pairs.len())),
        );
        map.insert("workspace".into(), json!(target.root()));
        map.insert("report".into(), json!(report));
        map.insert("in_place".into(), json!(written.is_some()));
    }
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
    if let Some(report) = report {
        writeln!(t, "report:    {}", report.display())?;
    }
    match written {
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
