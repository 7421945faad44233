//! `koas refine DOC`: targeted refinement of a document, every change
//! through the review workspace's ledger (the loop is the review API's
//! [`Session::refine`]); this module holds its flags and prints.

use crate::api::{ApiError, RefineRequest, Refined, Session, Sink, Told};
use crate::common::LlmFlags;
use crate::common::{
    on_workspace, print_json, review_exit_codes, ReviewTarget, WorkspaceArgs, REFUSED,
};
use crate::passes::Control;
use clap::Args;
use koas_kernel_api::terminal::escape_controls_keep_lines;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_orchestrator::outln;
use koas_review_schema::refine::{RefineEvent, RefineStatus, RefineSummary};
use koas_review_workspace::paths;
use serde_json::json;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Args)]
#[command(after_help = concat!("\
Examples:
  koas refine spec.md                          # full-auto with the model of koas.toml's [llm]
  koas refine docs/ --jobs 4                   # every Markdown file under docs/, a table at the end
  koas refine spec.md --mode semi-auto         # stops with `escalated` when the target is not met
  koas refine spec.md --plan-only              # judges, arbiter and router only: writes refine/plan.json
  koas refine spec.md --judges a,b,c --max-iterations 2 --max-tokens 8000
  koas refine spec.md --llm-backend openai --llm-endpoint http://127.0.0.1:8080 --llm-model m

Judges score every section on consistency, structure, clarity, completeness,
terminology and tone (0-1) and report issues; the arbiter keeps what they
agree on (Krippendorff's alpha), the router sends each section to the patcher
(surgical edit) or the section-expander (rewrite of its prose), the fixes are
applied as edit ops (never inside code, tables, math, HTML or front matter),
recorded in the ledger (RVW-NNNN, `koas revert`), verified, and the loop goes
on until the score meets the mode's target or a limit stops it.

Status: accepted, accepted_warning, best_effort (exit 0); escalated,
full_regenerate, no_assessment (exit 1). Workspace: as `koas review`, plus
refine/events.jsonl, refine/summary.json, refine/plan.json, refine/ESCALATION.md.

", review_exit_codes!()))]
pub struct RefineArgs {
    #[command(flatten)]
    pub target: WorkspaceArgs,

    /// More documents (or folders) to refine in the same command: each in
    /// its own workspace, all sharing the model servers' slots.
    #[arg(value_name = "DOC", num_args = 0..)]
    pub more: Vec<PathBuf>,

    /// With several documents (or a folder), refine at most N of them at
    /// once [default: 4].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(usize))]
    pub jobs: Option<usize>,

    /// Print nothing at the end (a document of a set: the set prints one
    /// table).
    #[arg(skip)]
    pub silent: bool,

    /// `full-auto` (best effort) or `semi-auto` (escalates to a person).
    #[arg(long, default_value = "full-auto", value_name = "MODE")]
    pub mode: String,

    /// Rounds of fixes at most.
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,

    /// Model tokens (prompt and completion) at most for the run. Default:
    /// one that follows the document (one assessment by the judges, then
    /// rounds of fixes), printed before anything is asked; a budget under
    /// one assessment stops the run before judging.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,

    /// Seconds at most for the run.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,

    /// The judges (model roles), comma-separated, 1 to 3.
    #[arg(long, value_delimiter = ',', value_name = "ROLES")]
    pub judges: Vec<String>,

    /// Assess and plan only: write refine/plan.json and change nothing.
    #[arg(long)]
    pub plan_only: bool,

    /// After an escalation: fix the tasks of a stored plan as a person
    /// decided (PLAN, or the workspace's refine/plan.json), without asking
    /// the judges; the fixes are verified, then the run goes on as usual
    /// (`--max-iterations 1`: the judges score the result and the run
    /// stops).
    #[arg(long, value_name = "PLAN", num_args = 0..=1, conflicts_with = "plan_only")]
    pub apply_plan: Option<Option<PathBuf>>,

    /// With the stored plan (implies --apply-plan): fix only these issues,
    /// by the IDs refine/ESCALATION.md lists (`J1-2,J2-1`), issues the
    /// arbiter filtered out and issues of locked sections included.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "ISSUE_IDS",
        conflicts_with = "plan_only"
    )]
    pub accept: Vec<String>,

    /// When the run ends with a document (accepted or best effort),
    /// replace DOC (atomically) with it.
    #[arg(long)]
    pub in_place: bool,

    /// Use this pipeline file instead of the built-in refinement pipeline
    /// (configs/refine.toml).
    #[arg(long, value_name = "FILE")]
    pub pipeline: Option<PathBuf>,

    /// The model, overriding the [llm] table of koas.toml (found upward
    /// from DOC) and of the pipeline.
    #[command(flatten)]
    pub llm: LlmFlags,
}

impl RefineArgs {
    /// The request these flags make.
    pub fn request(&self) -> RefineRequest {
        RefineRequest {
            mode: self.mode.clone(),
            max_iterations: self.max_iterations,
            max_tokens: self.max_tokens,
            timeout: self.timeout,
            judges: self.judges.clone(),
            plan_only: self.plan_only,
            apply_plan: self.apply_plan.clone(),
            accept: self.accept.clone(),
            in_place: self.in_place,
            pipeline: self.pipeline.clone(),
            llm: self.llm.clone(),
        }
    }
}

pub fn execute(global: &HostOptions, args: RefineArgs) -> anyhow::Result<ExitStatus> {
    if super::set::is_set(&args.target, &args.more) {
        let result = refine_set(global, &args);
        return crate::common::json_errors(args.target.json, None, result);
    }
    on_workspace(&args.target, |target| {
        refine(global, &Control::ctrl_c(), &args, target)
    })
}

/// `koas refine DOC DOC… | DIR`: each document refined as `koas refine
/// DOC` would; the table shows what its `refine/summary.json` says.
fn refine_set(global: &HostOptions, args: &RefineArgs) -> anyhow::Result<ExitStatus> {
    if args.target.workspace.is_some() {
        anyhow::bail!(
            "--workspace names one document's workspace: with several documents (or a folder) each document gets its own next to it"
        );
    }
    let one = |global: &HostOptions, control: &Control, doc: &Path| {
        let mut one = args.clone();
        one.target.doc = doc.to_path_buf();
        one.more.clear();
        one.silent = true;
        let target = ReviewTarget::locate(&one.target)?;
        let status = refine(global, control, &one, &target)?;
        let ws = target.root();
        let summary = std::fs::read(ws.join("refine/summary.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        let mut value = match summary {
            Some(s) => {
                let line = format!(
                    "{}, best score {:.2}",
                    s["status"].as_str().unwrap_or("?"),
                    s["best_score"].as_f64().unwrap_or(0.0)
                );
                let mut s = s;
                if let Some(map) = s.as_object_mut() {
                    map.insert("summary".into(), json!(line));
                }
                s
            }
            None => json!({"error": "the refinement wrote no refine/summary.json"}),
        };
        if let Some(map) = value.as_object_mut() {
            map.insert("workspace".into(), json!(ws));
        }
        Ok((status, value))
    };
    let command = super::set::SetCommand {
        name: "refine",
        done: "refined",
        columns: &[
            ("rounds", "/iterations"),
            ("changes", "/changes"),
            ("calls", "/tokens/calls"),
            ("prompt", "/tokens/prompt_tokens"),
            ("answer", "/tokens/completion_tokens"),
        ],
        one: &one,
    };
    super::set::execute(global, &args.target, &args.more, args.jobs, &command)
}

/// `koas refine DOC` on its located workspace: the loop run through the
/// API, its steps told on stderr, its summary printed.
fn refine(
    global: &HostOptions,
    control: &Control,
    args: &RefineArgs,
    target: &ReviewTarget,
) -> anyhow::Result<ExitStatus> {
    let quiet = global.quiet;
    // The kernels' steps are the progress display's (the control's); the
    // loop's events and lines go to stderr, escaped: they quote the
    // document's sections and the models' answers.
    let shown = |line: &str| escape_controls_keep_lines(line).into_owned();
    let told: Sink = std::sync::Arc::new(move |told: Told<'_>| match told {
        Told::Event(event) if !quiet => {
            if let Some(text) = progress_line(event) {
                eprintln!("refine: {}", shown(&text));
            }
        }
        Told::Info(line) if !quiet => eprintln!("{}", shown(line)),
        Told::Warning(line) => eprintln!("{}", shown(line)),
        _ => {}
    });
    let refined = Session::on(global, control, target)
        .told(told)
        .refine(&args.request());
    match refined {
        Ok(refined) => {
            print_summary(args, target, &refined)?;
            Ok(if refined.succeeded() {
                ExitStatus::Success
            } else {
                REFUSED
            })
        }
        Err(ApiError::Refused { reason }) => {
            eprintln!("error: {reason}");
            if args.target.json {
                print_json(&json!({"status": "refused", "error": reason}))?;
            }
            Ok(REFUSED)
        }
        Err(e) => {
            let reply = super::stopped(e, target.root())?;
            if args.target.json && !args.silent {
                print_json(&reply.json)?;
            }
            Ok(reply.status)
        }
    }
}

fn progress_line(event: &RefineEvent) -> Option<String> {
    Some(match event {
        RefineEvent::ArbiterConsolidation {
            iteration,
            alpha,
            score,
            kept,
            target_sections,
            ..
        } => format!(
            "iteration {iteration}: score {score:.3}, α {}, {kept} issues, sections to fix: {}",
            alpha.map_or("n/a".to_owned(), |a| format!("{a:.3}")),
            if target_sections.is_empty() {
                "none".to_owned()
            } else {
                target_sections.join(", ")
            }
        ),
        RefineEvent::PatchApplied {
            section_id,
            change_id,
            task_type,
            ..
        } => format!("  {change_id} {} {section_id}", task_type.as_str()),
        RefineEvent::VerificationResult {
            change_id,
            passed: false,
            reason,
            ..
        } => format!(
            "  {change_id} reverted: {}",
            reason.as_deref().unwrap_or("failed verification")
        ),
        RefineEvent::QualityLockTriggered { regressions, .. } => format!(
            "  quality lock: {} regressed; the iteration's changes are reverted",
            regressions
                .iter()
                .map(|(c, a, b)| format!("{c} {a:.2}→{b:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        RefineEvent::SectionLocked { section_id, reason } => {
            format!("  {section_id} locked: {reason}")
        }
        RefineEvent::RefinementComplete {
            final_score,
            status,
        } => format!("done: {} (score {final_score:.3})", status.as_str()),
        _ => return None,
    })
}

fn saving(summary: &RefineSummary) -> Option<f64> {
    (summary.full_rewrite_tokens > 0).then(|| {
        100.0 * (1.0 - summary.fix_side_tokens as f64 / summary.full_rewrite_tokens as f64)
    })
}

/// The run's summary: JSON with `--json`, else its lines in words.
fn print_summary(
    args: &RefineArgs,
    target: &ReviewTarget,
    refined: &Refined,
) -> anyhow::Result<()> {
    // Long because it is the summary's lines in the order they print, each
    // one condition and one `outln!`: cut, the order would be scattered.
    let (s, report) = (&refined.summary, refined.report.as_deref());
    if args.silent {
        return Ok(());
    }
    let ws = target.root();
    if args.target.json {
        let mut value = serde_json::to_value(s)?;
        if let Some(map) = value.as_object_mut() {
            map.insert("workspace".into(), json!(ws));
            let edited = ws.join(paths::EDITED_DOC);
            map.insert("edited".into(), json!(edited.is_file().then_some(edited)));
            map.insert("saving_percent".into(), json!(saving(s)));
            map.insert("report".into(), json!(report));
            map.insert("annotated".into(), json!(ws.join(paths::REVIEWED_DOC)));
        }
        return print_json(&value);
    }
    if s.status == RefineStatus::NoAssessment {
        // No judge answered usably: there is no score to show.
        outln!(
            "koas refine: {}: {} ({}): no score, nothing was changed",
            target.doc_name,
            s.status.as_str(),
            s.stop_reason
        )?;
        outln!(
            "  hint: the judges' answers held no usable JSON verdict (they are in {}); a larger instruction model, or `koas llm calibrate`, tells whether the model can answer in JSON",
            ws.join("llm/exchanges.jsonl").display()
        )?;
    } else {
        outln!(
            "koas refine: {}: {} ({}), score {:.3} at iteration {}, {}",
            target.doc_name,
            s.status.as_str(),
            s.stop_reason,
            s.best_score,
            s.best_iteration,
            match s.quality_status {
                koas_review_schema::refine::QualityStatus::Good => "good",
                koas_review_schema::refine::QualityStatus::Acceptable => "acceptable",
                koas_review_schema::refine::QualityStatus::BelowStandard => "below standard",
            }
        )?;
    }
    for i in &s.iterations {
        outln!(
            "  iteration {}: score {:.3}, {} issues, {} changes ({} reverted), tokens: judges {}, fixes {}, delta judge {}",
            i.iteration,
            i.score,
            i.issues,
            i.applied.len(),
            i.reverted.len(),
            i.judge_tokens.total(),
            i.fix_tokens.total(),
            i.verify_tokens.total()
        )?;
    }
    if s.full_rewrite_tokens > 0 {
        outln!(
            "  tokens: {} in all ({} calls, {} from the cache); fixes and verification {} vs ~{} to rewrite the whole document{}",
            s.tokens.total(),
            s.tokens.calls,
            s.tokens.cached_calls,
            s.fix_side_tokens,
            s.full_rewrite_tokens,
            saving(s).map_or(String::new(), |p| format!(" ({p:.0}% saved)"))
        )?;
    } else {
        outln!(
            "  tokens: {} in all ({} calls, {} from the cache); nothing was fixed",
            s.tokens.total(),
            s.tokens.calls,
            s.tokens.cached_calls
        )?;
    }
    if !s.changes.is_empty() {
        outln!("  changes kept: {}", s.changes.join(", "))?;
    }
    if !s.locked_sections.is_empty() {
        outln!("  locked sections: {}", s.locked_sections.join(", "))?;
    }
    for h in &s.improvement_hints {
        outln!("  hint: {h}")?;
    }
    outln!("workspace: {}", ws.display())?;
    if let Some(report) = report {
        outln!("report:    {}", report.display())?;
    }
    // The workspace's copy exists once a change was recorded.
    let edited = ws.join(paths::EDITED_DOC);
    if edited.is_file() {
        outln!("edited:    {}", edited.display())?;
    }
    if s.status == RefineStatus::Escalated {
        outln!("escalated: {}", ws.join("refine/ESCALATION.md").display())?;
    }
    Ok(())
}
