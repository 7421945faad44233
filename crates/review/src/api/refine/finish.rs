//! The end of a refinement: the best state returned, the outcome written,
//! the views refreshed.

use super::steps::{active_changes, revert};
use super::{RefineRequest, Refined, Runner};
use crate::api::session::stopped_by;
use crate::api::ApiError;
use crate::common::ReviewTarget;
use crate::passes::{self, Control, RunFailure};
use anyhow::Context as _;
use koas_orchestrator::embed::HostOptions;
use koas_orchestrator::pipeline::Pipeline;
use koas_refine::machine::{succeeded, LoopState, Stop};
use koas_review_schema::refine::{RefinePlan, RefineStatus, RefineSummary};
use koas_review_schema::review::ReviewModelRun;
use koas_review_workspace::{paths, PreparedRun};
use std::path::Path;

/// The end of a run: the state returned (full-auto's best one), the
/// summary and plan written, the views refreshed, DOC replaced when asked.
pub(super) fn finish(
    runner: &mut Runner<'_>,
    request: &RefineRequest,
    target: &ReviewTarget,
    mut run: PreparedRun<'_>,
    machine: &mut LoopState,
    stop: Stop,
) -> Result<Refined, ApiError> {
    let now = active_changes(&run);
    let current = koas_kernel_api::hash::sha256(run.current_text());
    let ending = machine.choose_best(stop.status, &now, &current);
    revert(&mut run, &ending.revert, "koas refine: best iteration")?;
    runner.emit(machine);
    let changes = active_changes(&run)
        .difference(&runner.earlier)
        .map(|i| i.to_string())
        .collect();
    let summary = machine.summary(&stop, ending.best, changes);
    runner.emit(machine);
    write_outcome(target.root(), &summary, machine.plan_of(ending.best))?;
    machine.complete(&summary);
    runner.emit(machine);
    let ok = succeeded(summary.status);
    // The report and the annotated document show the ledger as refined,
    // as after `koas review`; a plan changes nothing, so it keeps them.
    let mut report = None;
    if summary.status != RefineStatus::Planned {
        let refreshed = refresh_views(
            runner.global,
            runner.control,
            target,
            &runner.passes.whole,
            &run,
            &runner.passes.llm,
            &summary,
        );
        match refreshed {
            Ok(views) => report = views.report,
            Err(failure) => {
                let say = |message: &str| {
                    format!(
                        "{message} (the changes are recorded, but the report and annotated document could not be refreshed: `koas report {}` retries; DOC was not replaced)",
                        target.doc_name
                    )
                };
                return Err(stopped_by(failure, say, true));
            }
        }
    }
    if request.in_place && ok && summary.status != RefineStatus::Planned {
        run.replace_in_place(&target.doc_path)
            .with_context(|| format!("replacing {}", target.doc_path.display()))?;
    }
    drop(run);
    Ok(Refined { summary, report })
}

/// `refine/summary.json`, `refine/plan.json` (the returned state's plan)
/// and, for an escalation, `refine/ESCALATION.md`.
fn write_outcome(
    root: &Path,
    summary: &RefineSummary,
    plan: Option<&RefinePlan>,
) -> anyhow::Result<()> {
    std::fs::write(
        root.join("refine/summary.json"),
        serde_json::to_vec_pretty(summary)?,
    )
    .context("writing refine/summary.json")?;
    if let Some(plan) = plan {
        std::fs::write(
            root.join("refine/plan.json"),
            serde_json::to_vec_pretty(plan)?,
        )
        .context("writing refine/plan.json")?;
    }
    if summary.status == RefineStatus::Escalated {
        std::fs::write(
            root.join("refine/ESCALATION.md"),
            escalation_report(summary),
        )
        .context("writing refine/ESCALATION.md")?;
    }
    Ok(())
}

/// The view pass of `koas review` (annotated document, report) on the
/// refined ledger: with the refinement pipeline's view kernels when it
/// has them, else with the built-in reviewer pipeline's. The report's
/// model table counts refine's calls and tokens; its notice gives the
/// verdict.
fn refresh_views(
    global: &HostOptions,
    control: &Control,
    target: &ReviewTarget,
    pipeline: &Pipeline,
    run: &PreparedRun<'_>,
    llm: &passes::HostLlm,
    summary: &RefineSummary,
) -> Result<passes::Views, RunFailure> {
    let mut views = if pipeline.has(passes::REPORT) {
        pipeline.clone()
    } else {
        let raw = target.workspace.path(paths::RAW_DOC);
        let file = target
            .pipeline_file(None)
            .map_err(|e| RunFailure::Kernel(format!("{e:#}")))?;
        let mut views = passes::load(
            file.as_deref(),
            target.root(),
            vec![("doc".to_owned(), raw)],
        )
        .map_err(|e| RunFailure::Kernel(format!("{e:#}")))?;
        // The report keeps the project's other kernels' findings.
        target
            .project
            .apply(&mut views)
            .map_err(|e| RunFailure::Kernel(format!("{e:#}")))?;
        views
    };
    let (discovery, _) = crate::project::discover(global, &mut views, &target.project)
        .map_err(|e| RunFailure::Kernel(format!("{e:#}")))?;
    let (backend, models) = llm.models();
    let model = ReviewModelRun {
        backend,
        models,
        calls: summary.tokens.calls - summary.tokens.cached_calls.min(summary.tokens.calls),
        cached_calls: summary.tokens.cached_calls,
        tokens: summary.tokens.total(),
        ..ReviewModelRun::default()
    };
    let notice = format!(
        "Refined by `koas refine` ({}): {} ({}), score {:.3} at iteration {}; changes kept: {}. Details: refine/summary.json{}.",
        summary.mode,
        summary.status.as_str(),
        summary.stop_reason,
        summary.best_score,
        summary.best_iteration,
        if summary.changes.is_empty() {
            "none".to_owned()
        } else {
            summary.changes.join(", ")
        },
        if summary.status == RefineStatus::Escalated {
            ", refine/ESCALATION.md"
        } else {
            ""
        }
    );
    passes::run_views_with_model(
        global,
        control,
        &views,
        &discovery,
        run,
        Some(notice),
        Some(model),
        &target.project,
    )
}

fn escalation_report(summary: &RefineSummary) -> String {
    let mut out = format!(
        "# Refinement escalated\n\nThe document did not reach the semi-auto target (score {:.3}; stopped: {}).\nA person should decide on what follows.\n\n## Changes made (revert any with `koas revert DOC RVW-NNNN`)\n\n",
        summary.best_score, summary.stop_reason
    );
    if summary.changes.is_empty() {
        out.push_str("None.\n");
    }
    for c in &summary.changes {
        out.push_str(&format!("- {c}\n"));
    }
    out.push_str("\n## Open issues\n\n");
    if summary.unresolved_issues.is_empty() {
        out.push_str("None reported.\n");
    }
    for i in &summary.unresolved_issues {
        out.push_str(&format!(
            "- `{}` {} [{} {}] {}: {}\n",
            i.id,
            i.section_id,
            i.severity.as_str(),
            i.criterion,
            i.description,
            koas_refine::arbiter::instruction_of(i)
        ));
    }
    if !summary.locked_sections.is_empty() {
        out.push_str(&format!(
            "\n## Locked sections\n\n{}\n",
            summary.locked_sections.join(", ")
        ));
    }
    out.push_str(
        "\n## How to continue\n\n\
- `koas refine DOC --mode semi-auto --accept J1-2,J2-1`: fix only these issues (IDs above, or any of refine/plan.json, the filtered ones included), without asking the judges again; the fixes are verified, then the run goes on (add `--max-iterations 1` to stop once the judges scored the result).\n\
- `koas refine DOC --mode semi-auto --apply-plan [PLAN]`: fix every task of refine/plan.json, or of a copy you edited (remove tasks, reword their instructions).\n\
- `koas revert DOC RVW-NNNN` or `koas revert DOC --all`: undo changes.\n",
    );
    out
}
