//! Undo recorded changes.
//!
//! Under the workspace lock, `md_revert` plans the reverts (latest change
//! first) on the current document and ledger; a refusal (double revert,
//! revert of a revert, a flag, a conflict detected by content hash) stops
//! here with nothing touched. Otherwise the plan is replayed and checked,
//! each revert gets a `REVERT-RVW-NNNN` patch pair and ledger entry, the
//! document is replaced atomically, and the views are refreshed.

use super::session::{stopped_by, ApiError, Session, Written};
use crate::common::{actor, clock, ReviewTarget};
use crate::passes::{self, Control, RunFailure, RunInputs, REVERT};
use anyhow::Context as _;
use koas_orchestrator::discovery::Discovery;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_orchestrator::engine::{CanonicalJson, Provided};
use koas_orchestrator::pipeline::Pipeline;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::ledger::LedgerEntry;
use koas_review_schema::names;
use koas_review_schema::revert::RevertOutcome;
use koas_review_workspace::{CommitContext, PreparedRun, RevertRunOutcome, RunKind};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Which changes to revert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevertChanges {
    /// These, as a person wrote them (`RVW-0034`), in any order; one that
    /// names no change of the ledger makes the request refused.
    Listed(Vec<String>),
    /// Every change still active.
    All,
}

/// A request to undo changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevertRequest {
    /// What to revert.
    pub changes: RevertChanges,
    /// Why (the revert entries' rationale).
    pub reason: String,
    /// Replace DOC with the result too.
    pub in_place: bool,
    /// The pipeline file, instead of the one the review was made with.
    pub pipeline: Option<PathBuf>,
}

impl RevertRequest {
    /// Revert `changes`, no reason given, DOC left as it is.
    pub fn new(changes: RevertChanges) -> RevertRequest {
        RevertRequest {
            changes,
            reason: String::new(),
            in_place: false,
            pipeline: None,
        }
    }
}

/// What a revert did.
#[derive(Debug)]
pub struct Reverted {
    /// The revert run as the workspace recorded it (its run ID, its
    /// entries, the repairs made before it); `None`: nothing was left to
    /// revert.
    pub run: Option<RevertRunOutcome>,
    /// What was written besides the ledger.
    pub written: Written,
    /// Things a person should know that did not stop the revert.
    pub warnings: Vec<String>,
}

impl Reverted {
    /// The revert entries, latest change first; each names the change it
    /// reverted (`reverted_id`).
    pub fn entries(&self) -> &[LedgerEntry] {
        self.run.as_ref().map_or(&[], |r| r.entries.as_slice())
    }

    /// (reverted change, the entry that reverted it), in order.
    pub fn pairs(&self) -> Vec<(String, String)> {
        self.entries()
            .iter()
            .map(|e| (e.reverted_id.clone(), e.id.to_string()))
            .collect()
    }

    /// The answer's JSON form (`koas revert --json`, the MCP tool).
    pub fn to_json(&self, workspace: &std::path::Path) -> Value {
        let Some(run) = &self.run else {
            return json!({
                "status": "completed",
                "summary": "nothing to revert",
                "workspace": workspace,
                "total_reverted": 0,
            });
        };
        let mut value = run.summary_json();
        value["summary"] = json!(format!("{} changes reverted", run.entries.len()));
        value["workspace"] = json!(workspace);
        value["report"] = json!(self.written.report);
        value["in_place"] = json!(self.written.doc_replaced.is_some());
        value
    }
}

impl Session<'_> {
    /// Reverts the changes `request` names, all or nothing.
    pub fn revert(&self, request: &RevertRequest) -> Result<Reverted, ApiError> {
        revert(self, request)
    }
}

fn revert(session: &Session<'_>, request: &RevertRequest) -> Result<Reverted, ApiError> {
    let (global, control, target) = (session.global, session.control(), session.target());
    target.require_workspace()?;
    let workspace = &target.workspace;
    let mut run = target.begin_run(RunKind::Revert)?;
    // The views' Stage 1 and 2 describe the original document.
    let (pipeline, discovery) = revert_pipeline(session, request)?;

    let outcome = match plan(global, control, &pipeline, &discovery, &run)? {
        Ok(outcome) => outcome,
        Err(failure) => {
            return Err(stopped_by(
                failure,
                |m| format!("{m} (nothing was reverted)"),
                false,
            ))
        }
    };
    if let Some(reason) = &outcome.refused {
        return Err(ApiError::Refused {
            reason: refusal(reason, &request.changes, target, &run),
        });
    }
    if outcome.plan.reverts.is_empty() {
        return Ok(Reverted {
            run: None,
            written: Written {
                report: None,
                doc_replaced: None,
            },
            warnings: Vec::new(),
        });
    }
    if control.interrupted() {
        return Err(ApiError::Stopped {
            status: ExitStatus::Interrupted,
            message: "interrupted before the reverts were recorded; nothing was changed".into(),
            partial: false,
        });
    }
    // DOC follows its review when the review writes it (its last review
    // was `--in-place`) and DOC is the review's current version: nothing
    // of the writer's is in DOC that the write would lose.
    let remembered =
        !request.in_place && workspace.writes_doc() && target.text == run.current_text();
    let in_place = request.in_place || remembered;
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
            &request.reason,
            &CommitContext {
                actor: &actor(),
                clock: clock(),
                options: &ApplyOptions::default(),
            },
        )
        .with_context(|| format!("recording the reverts in {}", workspace.root().display()))?;
    let views = session.views(&pipeline, &discovery, &run, |m| format!("the reverts are recorded, but the report and annotated document could not be refreshed: {m}"), true)?;
    let mut warnings = Vec::new();
    if in_place {
        if let Err(e) = run.replace_in_place(&target.doc_path) {
            return Err(target.not_written(e).into());
        }
        if let Err(e) = workspace.end_in_place() {
            warnings.push(format!(
                "{} was replaced, but: {e}",
                target.doc_path.display()
            ));
        }
    }
    drop(run);
    control.collect_caches(global);
    Ok(Reverted {
        run: Some(committed),
        written: Written {
            report: views.report,
            doc_replaced: in_place.then_some(remembered),
        },
        warnings,
    })
}

/// The review's pipeline, its `md_revert` told which changes to revert.
fn revert_pipeline(
    session: &Session<'_>,
    request: &RevertRequest,
) -> Result<(Pipeline, Discovery), ApiError> {
    let (mut pipeline, discovery) = passes::workspace_pipeline(
        session.global,
        session.target(),
        request.pipeline.as_deref(),
    )?;
    pipeline
        .require(REVERT, "plans reverts")
        .map_err(anyhow::Error::from)?;
    match &request.changes {
        RevertChanges::Listed(ids) => {
            pipeline.set_config(REVERT, "ids", json!(ids));
            pipeline.set_config(REVERT, "all", Value::Bool(false));
        }
        RevertChanges::All => {
            pipeline.set_config(REVERT, "ids", json!([]));
            pipeline.set_config(REVERT, "all", Value::Bool(true));
        }
    }
    Ok((pipeline, discovery))
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

/// Why the revert was refused, with the requested changes that hand
/// edits made impossible to revert on their own.
fn refusal(
    reason: &str,
    changes: &RevertChanges,
    target: &ReviewTarget,
    run: &PreparedRun<'_>,
) -> String {
    let asked = |id: &str| match changes {
        RevertChanges::All => true,
        RevertChanges::Listed(ids) => ids.iter().any(|i| i.trim() == id),
    };
    let blocked: Vec<String> = koas_review_workspace::not_revertible(run.entries())
        .into_iter()
        .filter(|b| asked(&b.id.to_string()))
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
