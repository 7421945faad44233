//! The loop's steps: the passes it asks for, run, and their outcomes
//! committed or reverted through the ledger.

use super::Decided;
use super::{Runner, Which, ARBITER, FIX, JUDGE, ROUTER, VERIFY};
use crate::api::ApiError;
use crate::api::Told;
use crate::common::{actor, clock, REFUSED};
use crate::passes::{self, RunInputs, APPLY};
use anyhow::Context as _;
use koas_edit::revert::{plan_reverts, RevertRequest};
use koas_orchestrator::embed::ExitStatus;
use koas_orchestrator::engine::Provided;
use koas_refine::fix::section_of_rationale;
use koas_refine::machine::{AppliedFix, Decision, Event, Fixed, Judged, LoopState, Step, Stop};
use koas_review_schema::apply::{ApplyOptions, ApplyOutcome};
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::names;
use koas_review_schema::refine::{
    RefineChange, RefineOps, RefinePlan, RefineRouting, RefineVerdicts, RefineVerification,
    TokenUse,
};
use koas_review_workspace::{CommitContext, PreparedRun};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Changes of the ledger still in effect.
pub(super) fn active_changes(run: &PreparedRun<'_>) -> BTreeSet<ChangeId> {
    let mut active = BTreeSet::new();
    for e in run.entries() {
        match e.id {
            EntryId::Change(id) if !e.patch_forward.is_empty() => {
                active.insert(id);
            }
            EntryId::Revert(id) => {
                active.remove(&id);
            }
            _ => {}
        }
    }
    active
}

pub(super) fn commit_context() -> (koas_review_schema::ledger::Actor, ApplyOptions) {
    (actor(), ApplyOptions::default())
}

/// Reverts `ids` through the ledger (latest first).
pub(super) fn revert(
    run: &mut PreparedRun<'_>,
    ids: &[ChangeId],
    reason: &str,
) -> anyhow::Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let workspace = run.workspace();
    let read = |p: &str| workspace.read_patch(p).map_err(|e| e.to_string());
    let plan = plan_reverts(RevertRequest {
        doc_name: &run.meta().doc_name.clone(),
        current_text: run.current_text(),
        entries: run.entries(),
        ids,
        read_patch: &read,
    })
    .with_context(|| format!("planning the revert of {ids:?}"))?;
    let (actor, options) = commit_context();
    run.commit_revert(
        plan,
        reason,
        &CommitContext {
            actor: &actor,
            clock: clock(),
            options: &options,
        },
    )
    .context("recording a revert")?;
    Ok(())
}

/// The run records of a refinement's passes, kept as
/// `refine/runs/NNN-<pass>.json`: the workspace's `run.json` holds only
/// the last pass, and `koas replay WORKSPACE --record refine/runs/…`
/// replays any of them.
pub(super) struct PassRecords {
    root: PathBuf,
    next: usize,
}

impl PassRecords {
    pub(super) fn new(root: &Path) -> anyhow::Result<PassRecords> {
        let dir = root.join("refine/runs");
        // A new run's records replace the previous run's.
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(PassRecords {
            root: root.to_path_buf(),
            next: 0,
        })
    }

    /// Keeps the last pass's record; a warning when it cannot.
    pub(super) fn keep(&mut self, label: &str) -> Option<String> {
        let from = self
            .root
            .join(koas_orchestrator::run_record::RUN_RECORD_FILE);
        let to = self
            .root
            .join(format!("refine/runs/{:03}-{label}.json", self.next));
        self.next += 1;
        std::fs::copy(&from, &to)
            .err()
            .map(|e| format!("could not keep {}: {e}", to.display()))
    }
}

/// What every pass is given: the current document (as the host's
/// artifact), the model, and `doc`, the text of the pipeline's `doc`
/// source as the command holds it (the engine does not read it again).
pub(super) fn base_inputs(
    run: &PreparedRun<'_>,
    llm: &passes::HostLlm,
    doc: &str,
) -> anyhow::Result<RunInputs> {
    let mut inputs = RunInputs::default();
    inputs
        .sources
        .insert("doc".to_owned(), std::sync::Arc::from(doc.as_bytes()));
    inputs.provided.insert(
        names::REVIEW_DOC.to_owned(),
        Provided::from(Value::String(run.current_text().to_owned())),
    );
    inputs.llm = Some(llm.clone());
    Ok(inputs)
}

/// The loop: the machine says what to do next ([`Step`]), this runs it
/// and tells the machine what came of it, until it stops (or a pass
/// fails).
pub(super) fn refine_loop(
    runner: &mut Runner<'_>,
    run: &mut PreparedRun<'_>,
    machine: &mut LoopState,
    pending: Option<Decided>,
) -> Result<Stop, ApiError> {
    let decision = pending.as_ref().map(|d| Decision {
        document: run.current_text(),
        stored: &d.stored,
        plan: d.plan.clone(),
        routing: d.routing.clone(),
        active: active_changes(run),
    });
    let mut step = machine
        .next(Event::Start(decision))
        .map_err(anyhow::Error::from)?;
    loop {
        runner.emit(machine);
        // What the fixes addressed, borrowed by the event that tells them.
        let doc_before: String;
        let event = match step {
            Step::Stop(stop) => return Ok(stop),
            Step::Assess => {
                let (tokens, plan, routing) = assess(runner, run, machine)?;
                Event::Assessed {
                    judged: Judged {
                        document: run.current_text(),
                        tokens,
                        plan,
                        routing,
                        active: active_changes(run),
                    },
                    elapsed_secs: runner.started.elapsed().as_secs(),
                }
            }
            Step::Revert { changes, why } => {
                let sections = sections_of_changes(run, &changes);
                revert(run, &changes, why.reason())?;
                Event::Reverted { sections }
            }
            Step::Fix { decided, routing } => {
                doc_before = run.current_text().to_owned();
                let (tokens, applied) = fix(runner, run, machine, decided, &routing)?;
                Event::Fixed(Fixed {
                    document_before: &doc_before,
                    tokens,
                    applied,
                })
            }
            Step::Verify(changes) => Event::Verified(verify(runner, machine, &changes)?),
        };
        step = machine.next(event).map_err(anyhow::Error::from)?;
    }
}

/// The assess pass (Stage 1–2, the judges, the arbiter, the router) on
/// the current document: the judges' tokens, the plan and its routing.
fn assess(
    runner: &mut Runner<'_>,
    run: &PreparedRun<'_>,
    machine: &LoopState,
) -> Result<(TokenUse, RefinePlan, RefineRouting), ApiError> {
    let mut inputs = base_inputs(run, &runner.passes.llm, runner.passes.doc_text(run))?;
    inputs.provided.insert(
        names::REFINE_STATE.to_owned(),
        Provided::from(serde_json::to_value(machine.refine_state())?),
    );
    let label = format!("{}-assess", machine.iteration());
    let outcome = runner
        .pass(Which::Assess, inputs, &label)
        .map_err(|e| failed(e, "the changes recorded so far stay in the ledger"))?;
    let verdicts: RefineVerdicts =
        passes::parse_output(&outcome.record, JUDGE, names::REFINE_VERDICTS)?;
    let plan: RefinePlan = passes::parse_output(&outcome.record, ARBITER, names::REFINE_PLAN)?;
    let routing: RefineRouting =
        passes::parse_output(&outcome.record, ROUTER, names::REFINE_ROUTING)?;
    // A judge whose answer could not be used, even asked again, is
    // named: its section was not scored by it.
    for verdict in &verdicts.verdicts {
        for (section, why) in &verdict.unreadable {
            runner.events.say(Told::Warning(&format!(
                "koas refine: judge {:?} gave no usable answer on section {section}: {why}",
                verdict.judge
            )));
        }
    }
    Ok((verdicts.tokens, plan, routing))
}

/// The fix pass (the patcher and expander, `md_apply_ops`), its outcome
/// committed to the ledger: the fixers' tokens and the fixes recorded.
fn fix(
    runner: &mut Runner<'_>,
    run: &mut PreparedRun<'_>,
    machine: &LoopState,
    decided: bool,
    routing: &RefineRouting,
) -> Result<(TokenUse, Vec<AppliedFix>), ApiError> {
    let mut inputs = base_inputs(run, &runner.passes.llm, runner.passes.doc_text(run))?;
    if decided {
        inputs.provided.insert(
            names::REFINE_ROUTING.to_owned(),
            Provided::from(serde_json::to_value(routing)?),
        );
    } else {
        inputs.provided.insert(
            names::REFINE_STATE.to_owned(),
            Provided::from(serde_json::to_value(machine.refine_state())?),
        );
    }
    let review_state = run.review_state();
    inputs.provided.insert(
        names::REVIEW_STATE.to_owned(),
        Provided::from(serde_json::to_value(&review_state)?),
    );
    inputs.host_written.insert(names::EDITED_DOC.to_owned());
    let label = format!("{}-fix", machine.iteration());
    let which = if decided {
        Which::FixDecided
    } else {
        Which::Fix
    };
    let outcome = runner
        .pass(which, inputs, &label)
        .map_err(|e| failed(e, "the changes recorded so far stay in the ledger"))?;
    let ops: RefineOps = passes::parse_output(&outcome.record, FIX, names::REFINE_OPS)?;
    let applied: ApplyOutcome = passes::parse_output(&outcome.record, APPLY, names::APPLY_OUTCOME)?;
    let (actor, options) = commit_context();
    let committed = run
        .commit_review(
            applied.batch,
            applied.protected,
            &CommitContext {
                actor: &actor,
                clock: clock(),
                options: &options,
            },
        )
        .with_context(|| {
            format!(
                "recording the fixes in {}",
                run.workspace().root().display()
            )
        })?;
    for r in &committed.batch.rejected {
        runner.events.say(Told::Info(&format!(
            "refine:   a fix was refused by the apply engine: {} {}",
            r.rejection.class.as_str(),
            r.rejection.reason
        )));
    }
    let applied = committed
        .batch
        .applied
        .iter()
        .filter_map(|a| {
            let change = a.change.as_ref()?;
            Some(AppliedFix {
                change_id: a.op.id,
                rationale: a.op.rationale.clone(),
                before_text: a.op.before_text.clone(),
                after_text: a.op.after_text.clone(),
                lines: (change.old.len(), change.new.len()),
            })
        })
        .collect();
    Ok((ops.tokens, applied))
}

/// The verify pass (free checks, the delta judge) on the round's changes:
/// the verifier's verdicts.
fn verify(
    runner: &mut Runner<'_>,
    machine: &LoopState,
    changes: &[RefineChange],
) -> Result<RefineVerification, ApiError> {
    let mut inputs = RunInputs {
        llm: Some(runner.passes.llm.clone()),
        ..RunInputs::default()
    };
    inputs.provided.insert(
        names::REFINE_CHANGES.to_owned(),
        Provided::from(serde_json::to_value(changes)?),
    );
    let label = format!("{}-verify", machine.iteration());
    let outcome = runner
        .pass(Which::Verify, inputs, &label)
        .map_err(|e| failed(e, "the unverified changes stay in the ledger"))?;
    Ok(passes::parse_output(
        &outcome.record,
        VERIFY,
        names::REFINE_VERIFICATION,
    )?)
}

/// A pass that failed, as the API's error: `consequence` says what stays.
fn failed(e: anyhow::Error, consequence: &str) -> ApiError {
    if e.to_string() == "interrupted" {
        return ApiError::Stopped {
            status: ExitStatus::Interrupted,
            message: format!("interrupted ({consequence})"),
            partial: true,
        };
    }
    ApiError::Stopped {
        status: REFUSED,
        message: format!("{e:#} ({consequence})"),
        partial: true,
    }
}

/// The sections of the changes `ids`, from their ledger rationale.
fn sections_of_changes(run: &PreparedRun<'_>, ids: &[ChangeId]) -> Vec<String> {
    let mut out = Vec::new();
    for e in run.entries() {
        let EntryId::Change(id) = e.id else { continue };
        if !ids.contains(&id) {
            continue;
        }
        if let Some(s) = section_of_rationale(&e.rationale) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}
