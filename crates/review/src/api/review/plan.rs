//! The review's planning: what the request decides before any kernel
//! runs, and the passes that plan the changes without recording them.

use super::model::ModelReport;
use super::ReviewRequest;
use crate::api::session::stopped_by;
use crate::api::ApiError;
use crate::common::{ReviewTarget, REFUSED};
use crate::passes::{
    self, Control, RunFailure, RunInputs, APPLY, EDIT_PLAN, PYRAMID, REVERT, VIEWS,
};
use koas_orchestrator::discovery::Discovery;
use koas_orchestrator::embed::{ExitStatus, HostLlm, HostOptions};
use koas_orchestrator::engine::Provided;
use koas_orchestrator::pipeline::Pipeline;
use koas_review_schema::apply::ApplyOutcome;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::names;
use koas_review_schema::review::ReviewState;
use koas_review_workspace::{paths, PreparedRun};
use serde_json::{json, Value};
use std::sync::Arc;

/// What the flags decide before any kernel runs: the pipeline with the
/// review's settings, the model, the kernels found.
pub(super) struct Setup {
    /// The `--pipeline` file (absolute), `None` for the built-in one.
    pub(super) file: Option<std::path::PathBuf>,
    pub(super) pipeline: Pipeline,
    pub(super) llm: Option<HostLlm>,
    pub(super) discovery: Discovery,
    /// Why the model's plan is not asked for (`--no-llm`, `--ops`).
    pub(super) skip_plan: Option<&'static str>,
    /// The certain fixes of the checks are applied (no
    /// `--no-check-fixes`).
    pub(super) check_fixes: bool,
}

impl Setup {
    pub(super) fn of(
        global: &HostOptions,
        request: &ReviewRequest,
        target: &ReviewTarget,
    ) -> anyhow::Result<Setup> {
        // Stage 1 and 2 describe the document the ops address: the current
        // one. Its text is handed to the engine (see `pass_inputs`) under
        // the path of the workspace's current document, on a first review
        // too (before the file exists): an unchanged document then keys the
        // same on every run, and a re-run is answered from the cache.
        let current = target.workspace.path(paths::EDITED_DOC);
        let mut inputs = vec![("doc".to_owned(), current)];
        if let Some(ops) = &request.ops {
            inputs.push((names::OPS.to_owned(), ops.clone()));
        }
        let skip_plan = if request.no_llm {
            Some("--no-llm")
        } else if request.ops.is_some() {
            // Ops from a file replace the model's plan.
            Some("--ops given")
        } else {
            None
        };
        let settings = settings(request, target, skip_plan);
        let workspace = target.workspace.root();
        let file = target.pipeline_file(request.pipeline.as_deref())?;
        let file = file.map(std::path::absolute).transpose()?;
        let mut pipeline = passes::load(file.as_deref(), workspace, inputs)?;
        target.project.apply(&mut pipeline)?;
        pipeline.require(APPLY, "applies the ops")?;
        for (kernel, key, value) in settings {
            pipeline.set_config(kernel, key, value);
        }
        let llm = passes::review_llm(
            &pipeline,
            &target.doc_path,
            &request.llm,
            request.tutor_model.as_deref(),
            request.no_llm,
            global.quiet,
        )?;
        if let Some(llm) = &llm {
            if let Some(tutor) = &llm.tutor_model {
                pipeline.set_config(EDIT_PLAN, "tutor_model", json!(tutor));
            }
            // Half as many requests again as the servers have slots: the
            // extra ones wait at koas, rendered, and take a slot the
            // moment it frees, while the answer that freed it is read.
            let in_flight = llm.max_in_flight + llm.max_in_flight.div_ceil(2);
            pipeline.set_config(EDIT_PLAN, "in_flight", json!(in_flight));
        }
        let (discovery, _) = crate::project::discover(global, &mut pipeline, &target.project)?;
        Ok(Setup {
            file,
            pipeline,
            llm,
            discovery,
            skip_plan,
            check_fixes: !request.no_check_fixes,
        })
    }
}

/// The kernels' settings the review's flags decide: `(kernel, key,
/// value)`, set over the pipeline's own.
fn settings(
    request: &ReviewRequest,
    target: &ReviewTarget,
    skip_plan: Option<&str>,
) -> Vec<(&'static str, &'static str, Value)> {
    let mut out = vec![
        (APPLY, "strict", Value::Bool(request.strict)),
        // The certain fixes of the checks (`koas check --fix`) are
        // changes like any other: IDs, patches, ledger lines.
        (APPLY, "check_fixes", Value::Bool(!request.no_check_fixes)),
        // After a first review the text read is the workspace's copy: the
        // pyramid is still about the user's document (and an unchanged
        // document's root keeps its input, so it is not asked again).
        (EDIT_PLAN, "title", json!(target.doc_name)),
    ];
    let skip_pyramid = if request.no_llm {
        Some("--no-llm")
    } else if request.skip_pyramid {
        Some("--skip-pyramid")
    } else {
        None
    };
    if let Some(reason) = skip_pyramid {
        out.push((EDIT_PLAN, "skip_pyramid", Value::Bool(true)));
        out.push((EDIT_PLAN, "skip_pyramid_reason", json!(reason)));
    }
    if let Some(reason) = skip_plan {
        out.push((EDIT_PLAN, "skip", Value::Bool(true)));
        out.push((EDIT_PLAN, "skip_reason", json!(reason)));
    }
    out
}

/// What the planning passes produced, not yet recorded.
pub(super) struct Planned {
    /// The certain fixes of the checks, planned first.
    pub(super) fixes: Option<ApplyOutcome>,
    /// The ops of the model or of the file, on the fixed text.
    pub(super) outcome: ApplyOutcome,
    /// What the model did, when one was configured.
    pub(super) model: Option<ModelReport>,
}

/// Why nothing was recorded.
pub(super) enum NotPlanned {
    /// A planning pass failed or was interrupted.
    Pass(RunFailure),
    /// Ctrl-C came after the passes, before anything was recorded.
    Interrupted,
    /// The model's server stopped answering: a failed review, not a
    /// smaller one.
    Unreachable(String),
}

impl NotPlanned {
    /// The failure as the API's error. `rebased`: the hand edits a
    /// `--rebase` recorded before the passes (they stay).
    pub(super) fn into_error(self, rebased: &[ChangeId]) -> ApiError {
        let nothing = match (rebased.first(), rebased.last()) {
            (Some(first), Some(last)) if first != last => format!(
                "only the hand edits were recorded ({first} … {last}, kind external); no review change was recorded"
            ),
            (Some(first), _) => format!(
                "only the hand edits were recorded ({first}, kind external); no review change was recorded"
            ),
            _ => "nothing was recorded".to_owned(),
        };
        match self {
            NotPlanned::Pass(failure) => {
                stopped_by(failure, |message| format!("{message} ({nothing})"), false)
            }
            NotPlanned::Interrupted => ApiError::Stopped {
                status: ExitStatus::Interrupted,
                message: format!("interrupted before the changes were recorded; {nothing}"),
                partial: false,
            },
            NotPlanned::Unreachable(failure) => {
                let consequence = match rebased.is_empty() {
                    true => {
                        "nothing was recorded: the document and the ledger are unchanged".to_owned()
                    }
                    false => nothing,
                };
                ApiError::Stopped {
                    status: REFUSED,
                    message: format!("{failure} ({consequence})"),
                    partial: false,
                }
            }
        }
    }
}

/// The planning passes: the certain fixes of the checks first (in a pass
/// of their own, so the model reads the text they leave: otherwise a
/// re-run would find the fixed lines new and ask the model about them
/// again), then the model's ops or the file's on that text.
pub(super) fn plan(
    global: &HostOptions,
    control: &Control,
    setup: &Setup,
    run: &PreparedRun<'_>,
    ops: Option<Arc<[u8]>>,
) -> anyhow::Result<Result<Planned, NotPlanned>> {
    let mut planning = setup
        .pipeline
        .subset(|k| k != REVERT && !VIEWS.contains(&k));
    // What the ledger already holds, by effect: nothing is recorded twice.
    let workspace = run.workspace();
    let effects = koas_edit::known::ledger_effects(run.entries(), |path| {
        std::fs::read_to_string(workspace.path(path)).ok()
    });
    let mut state = ReviewState {
        reverted: effects.reverted,
        applied: effects.applied,
        flags: effects.flags,
        ..run.review_state()
    };
    let mut fixes: Option<ApplyOutcome> = None;
    let mut text = run.current_text().to_owned();
    let fixes_first = setup.llm.is_some()
        && setup.skip_plan.is_none()
        && planning.has(EDIT_PLAN)
        && setup.check_fixes;
    if fixes_first {
        let fixed =
            match certain_fixes(global, control, &planning, &setup.discovery, &text, &state)? {
                Ok(outcome) => outcome,
                Err(failure) => return Ok(Err(NotPlanned::Pass(failure))),
            };
        text = fixed.batch.final_text.clone();
        state.next_id = fixed.batch.next_id;
        state
            .ledger_ids
            .extend(fixed.batch.applied.iter().map(|a| a.op.id));
        // The model's pass reads the fixed text as the document, handed
        // as bytes under the current document's path (kernels that keep
        // their previous results find them by kernel, not by path: a
        // re-run that reads the same text asks nothing).
        planning.set_config(APPLY, "check_fixes", Value::Bool(false));
        fixes = Some(fixed);
    }
    let mut pass = pass_inputs(&text, &state)?;
    if let Some(ops) = ops {
        pass.sources.insert(names::OPS.to_owned(), ops);
    }
    let described = setup.llm.as_ref().map(|l| (l.models(), l.endpoint.clone()));
    pass.llm = setup.llm.clone();
    let started = std::time::Instant::now();
    let (_, result) = passes::run_pass(global, control, &planning, &setup.discovery, pass)?;
    let planned = match result {
        Ok(outcome) => outcome,
        Err(failure) => return Ok(Err(NotPlanned::Pass(failure))),
    };
    let outcome: ApplyOutcome = passes::parse_output(&planned.record, APPLY, names::APPLY_OUTCOME)?;
    // What the model's kernels did, shown when a model was configured.
    let model = described.map(|(models, endpoint)| {
        ModelReport::of(&planned.record, started.elapsed(), models, endpoint)
    });
    if control.interrupted() {
        return Ok(Err(NotPlanned::Interrupted));
    }
    // A server that stopped answering: nothing is recorded, and the next
    // run asks only the chunks that got no answer (the others are in the
    // previous plan and the response cache).
    if let Some(failure) = model
        .as_ref()
        .filter(|_| setup.skip_plan.is_none())
        .and_then(|m| m.unreachable())
    {
        return Ok(Err(NotPlanned::Unreachable(failure)));
    }
    Ok(Ok(Planned {
        fixes,
        outcome,
        model,
    }))
}

/// What a planning pass is given: the text the ops address, as the
/// pipeline's `doc` source (read once, by the command, with its guards)
/// and as the host's artifact, and the review state.
fn pass_inputs(text: &str, state: &ReviewState) -> anyhow::Result<RunInputs> {
    let mut pass = RunInputs::default();
    pass.sources
        .insert("doc".to_owned(), Arc::from(text.as_bytes()));
    pass.provided.insert(
        names::REVIEW_DOC.to_owned(),
        Provided::from(Value::String(text.to_owned())),
    );
    pass.provided.insert(
        names::REVIEW_STATE.to_owned(),
        Provided::from(serde_json::to_value(state)?),
    );
    pass.host_written.insert(names::EDITED_DOC.to_owned());
    Ok(pass)
}

/// The planning pass without the model: the certain fixes of the checks,
/// planned on `text` and not yet recorded.
fn certain_fixes(
    global: &HostOptions,
    control: &Control,
    planning: &Pipeline,
    discovery: &Discovery,
    text: &str,
    state: &ReviewState,
) -> anyhow::Result<Result<ApplyOutcome, RunFailure>> {
    // Without the model's kernels at all: a skipped run would become the
    // "previous" result they reuse from, and the model's pass would find
    // nothing to reuse.
    let first = planning.subset(|k| k != PYRAMID && k != EDIT_PLAN);
    let (_, result) = passes::run_pass(
        global,
        control,
        &first,
        discovery,
        pass_inputs(text, state)?,
    )?;
    Ok(match result {
        Ok(outcome) => Ok(passes::parse_output(
            &outcome.record,
            APPLY,
            names::APPLY_OUTCOME,
        )?),
        Err(failure) => Err(failure),
    })
}
