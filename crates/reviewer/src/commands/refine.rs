//! `koas refine DOC`: targeted refinement of a document, every change
//! through the review workspace's ledger.
//!
//! Under the workspace lock, each iteration runs three passes of the
//! refinement pipeline (built in: `configs/refine.toml`):
//!
//! 1. **assess**: Stage 1 and 2, the judges, the arbiter, the router, on
//!    the current document. A locked criterion that regressed reverts the
//!    previous iteration's changes; the stopping conditions are checked.
//! 2. **fix**: the same kernels (answered from the cache) and the patcher
//!    and section-expander, whose ops `md_apply_ops` applies as a model's;
//!    the outcome is committed (IDs, patches, ledger).
//! 3. **verify**: the free checks and the delta judge on every change;
//!    a change that fails is reverted through the ledger.
//!
//! Full-auto ends on the best iteration (later changes reverted);
//! semi-auto escalates to a person when the target is not met. Events go
//! to `refine/events.jsonl` as they happen, the run's summary to
//! `refine/summary.json`.
//!
//! What the loop decides lives in [`koas_refine::machine`] (a state
//! machine over plain data, tested there); this module runs the passes it
//! asks for, commits and reverts through the ledger, and prints.

use crate::common::LlmFlags;
use crate::common::{
    actor, clock, on_workspace, print_json, review_exit_codes, ReviewTarget, WorkspaceArgs, REFUSED,
};
use crate::passes::{self, RunFailure, RunInputs, APPLY};
use anyhow::{bail, Context as _};
use clap::Args;
use koas_orchestrator::discovery::Discovery;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_orchestrator::engine::Provided;
use koas_orchestrator::outln;
use koas_orchestrator::pipeline::Pipeline;
use koas_refine::control::{Limits, Mode};
use koas_refine::fix::section_of_rationale;
use koas_refine::machine::{
    succeeded, AppliedFix, Decision, Event, Fixed, Judged, LoopState, Settings, Step, Stop,
};
use koas_review::revert::{plan_reverts, RevertRequest};
use koas_review_schema::apply::{ApplyOptions, ApplyOutcome};
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::names;
use koas_review_schema::refine::{
    RefineChange, RefineEvent, RefineOps, RefinePlan, RefineRouting, RefineStatus, RefineSummary,
    RefineVerdicts, RefineVerification, TokenUse,
};
use koas_review_schema::review::ReviewModelRun;
use koas_review_workspace::{paths, CommitContext, PreparedRun, RunKind};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The built-in refinement pipeline.
const BUILT_IN: &str = include_str!("../../../../configs/refine.toml");
/// How it is named in messages.
const BUILT_IN_NAME: &str = "<built-in refinement pipeline (configs/refine.toml)>";
/// The patch prompt as shipped: the instructions a whole-document rewrite
/// would carry too, for the token comparison.
const REWRITE_INSTRUCTIONS: &str = include_str!("../../../../prompts/refine_patch.tera");

const JUDGE: &str = "refine_judge";
const ARBITER: &str = "refine_arbiter";
const ROUTER: &str = "refine_router";
const FIX: &str = "refine_fix";
const VERIFY: &str = "refine_verify";

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

pub fn execute(global: &HostOptions, args: RefineArgs) -> anyhow::Result<ExitStatus> {
    if super::set::is_set(&args.target, &args.more) {
        let result = refine_set(global, &args);
        return crate::common::json_errors(args.target.json, None, result);
    }
    on_workspace(&args.target, |target| refine(global, &args, target))
}

/// `koas refine DOC DOC… | DIR`: each document refined as `koas refine
/// DOC` would; the table shows what its `refine/summary.json` says.
fn refine_set(global: &HostOptions, args: &RefineArgs) -> anyhow::Result<ExitStatus> {
    if args.target.workspace.is_some() {
        anyhow::bail!(
            "--workspace names one document's workspace: with several documents (or a folder) each document gets its own next to it"
        );
    }
    let one = |global: &HostOptions, _control: &crate::passes::Control, doc: &Path| {
        let mut one = args.clone();
        one.target.doc = doc.to_path_buf();
        one.more.clear();
        one.silent = true;
        let target = ReviewTarget::locate(&one.target)?;
        let status = refine(global, &one, &target)?;
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

/// Appends events to `refine/events.jsonl` as they happen.
struct Events {
    file: std::fs::File,
    quiet: bool,
}

impl Events {
    fn open(root: &Path, quiet: bool) -> anyhow::Result<Events> {
        let dir = root.join("refine");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("events.jsonl");
        let file =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(Events { file, quiet })
    }

    fn emit(&mut self, event: RefineEvent) {
        if let Ok(mut line) = serde_json::to_string(&event) {
            line.push('\n');
            // Events are for watching a run; losing one must not stop it.
            let _ = self.file.write_all(line.as_bytes());
            let _ = self.file.flush();
        }
        if !self.quiet {
            if let Some(text) = progress_line(&event) {
                eprintln!("refine: {text}");
            }
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

/// Changes of the ledger still in effect.
fn active_changes(run: &PreparedRun<'_>) -> BTreeSet<ChangeId> {
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

fn commit_context() -> (koas_review_schema::ledger::Actor, ApplyOptions) {
    (actor(), ApplyOptions::default())
}

/// Reverts `ids` through the ledger (latest first).
fn revert(run: &mut PreparedRun<'_>, ids: &[ChangeId], reason: &str) -> anyhow::Result<()> {
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
struct PassRecords {
    root: PathBuf,
    next: usize,
}

impl PassRecords {
    fn new(root: &Path) -> anyhow::Result<PassRecords> {
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

    fn keep(&mut self, label: &str) {
        let from = self
            .root
            .join(koas_orchestrator::run_record::RUN_RECORD_FILE);
        let to = self
            .root
            .join(format!("refine/runs/{:03}-{label}.json", self.next));
        self.next += 1;
        // A record is for replaying the run later; missing one must not
        // stop the run.
        if let Err(e) = std::fs::copy(&from, &to) {
            eprintln!("koas: warning: could not keep {}: {e}", to.display());
        }
    }
}

fn pass(
    global: &HostOptions,
    pipeline: &Pipeline,
    discovery: &Discovery,
    inputs: RunInputs,
    records: &mut PassRecords,
    label: &str,
) -> anyhow::Result<koas_orchestrator::engine::RunOutcome> {
    // The command line's control: Ctrl-C stops the pass.
    let control = passes::Control::ctrl_c();
    let (_, result) = passes::run_pass(global, &control, pipeline, discovery, inputs)?;
    records.keep(label);
    match result {
        Ok(outcome) => Ok(outcome),
        Err(RunFailure::Kernel(message)) => bail!("{message}"),
        Err(RunFailure::Interrupted) => bail!("interrupted"),
    }
}

/// What every pass is given: the current document (as the host's
/// artifact), the model, and `doc`, the text of the pipeline's `doc`
/// source as the command holds it (the engine does not read it again).
fn base_inputs(
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

/// The refinement pipeline, cut into what each pass runs.
struct Passes {
    /// The whole pipeline (its view kernels refresh the report).
    whole: Pipeline,
    discovery: Discovery,
    llm: passes::HostLlm,
    assess: Pipeline,
    fix: Pipeline,
    /// A decided plan is fixed without the judges, the arbiter or the
    /// router.
    fix_decided: Pipeline,
    verify: Pipeline,
    /// DOC as read, when the pipeline's `doc` source is DOC (a first
    /// review); `None` when it is the workspace's current document, whose
    /// text every commit keeps in the run.
    original: Option<String>,
}

impl Passes {
    /// The text of the pipeline's `doc` source now, read once.
    fn doc_text<'a>(&'a self, run: &'a PreparedRun<'_>) -> &'a str {
        self.original
            .as_deref()
            .unwrap_or_else(|| run.current_text())
    }
}

/// The passes of a round.
#[derive(Clone, Copy)]
enum Which {
    Assess,
    Fix,
    FixDecided,
    Verify,
}

/// What runs the passes the loop asks for and tells what happens.
struct Host<'g> {
    global: &'g HostOptions,
    passes: Passes,
    records: PassRecords,
    events: Events,
    started: Instant,
    /// The changes active before this run (an earlier review's): not
    /// refine's, not listed as its changes.
    earlier: BTreeSet<ChangeId>,
}

impl Host<'_> {
    /// Emits the events the loop's steps left, in order.
    fn emit(&mut self, machine: &mut LoopState) {
        for event in machine.take_events() {
            self.events.emit(event);
        }
    }

    /// Runs the pass `which`, recorded as `label`.
    fn pass(
        &mut self,
        which: Which,
        inputs: RunInputs,
        label: &str,
    ) -> anyhow::Result<koas_orchestrator::engine::RunOutcome> {
        let pipeline = match which {
            Which::Assess => &self.passes.assess,
            Which::Fix => &self.passes.fix,
            Which::FixDecided => &self.passes.fix_decided,
            Which::Verify => &self.passes.verify,
        };
        pass(
            self.global,
            pipeline,
            &self.passes.discovery,
            inputs,
            &mut self.records,
            label,
        )
    }
}

/// The mode and limits of the command line.
fn settings_of(args: &RefineArgs) -> anyhow::Result<Settings> {
    let Some(mode) = Mode::parse(&args.mode) else {
        bail!("--mode {}: use `full-auto` or `semi-auto`", args.mode);
    };
    if args.judges.len() > 3 {
        bail!("--judges: give 1 to 3 judges, not {}", args.judges.len());
    }
    let mut limits = Limits::default();
    if let Some(n) = args.max_iterations {
        limits.max_iterations = n;
    }
    if let Some(n) = args.max_tokens {
        limits.max_tokens = n;
    }
    if let Some(n) = args.timeout {
        limits.timeout_secs = n;
    }
    Ok(Settings {
        mode,
        limits,
        plan_only: args.plan_only,
        rewrite_instructions: REWRITE_INSTRUCTIONS.to_owned(),
    })
}

/// The refinement pipeline and its model, checked, cut into passes.
fn passes_of(
    global: &HostOptions,
    args: &RefineArgs,
    target: &ReviewTarget,
) -> anyhow::Result<Passes> {
    // Stage 1 describes the review's current document (the edit engine
    // addresses its lines), as for `koas review`.
    let doc_input = target.current_doc_path();
    // The text of that file, read once: the workspace's current document
    // (every commit rewrites the file with it), or DOC as read.
    let original =
        (doc_input != target.workspace.path(paths::EDITED_DOC)).then(|| target.text.clone());
    let mut pipeline = passes::load_built_in(
        args.pipeline.as_deref(),
        BUILT_IN,
        BUILT_IN_NAME,
        target.workspace.root(),
        vec![("doc".to_owned(), doc_input)],
    )?;
    for k in [JUDGE, ARBITER, ROUTER, FIX, APPLY, VERIFY] {
        pipeline.require(k, "koas refine runs")?;
    }
    if !args.judges.is_empty() {
        pipeline.set_config(JUDGE, "judges", json!(args.judges));
    }
    let Some(llm) = passes::review_llm(
        &pipeline,
        &target.doc_path,
        &args.llm,
        None,
        false,
        global.quiet,
    )?
    else {
        bail!("koas refine needs a model: an [llm] table in koas.toml, or --llm-backend/--llm-endpoint/--llm-model");
    };
    let (discovery, _) = crate::project::discover(global, &mut pipeline, &target.project)?;
    Ok(Passes {
        discovery,
        llm,
        assess: pipeline.subset(|k| k != FIX && k != APPLY && k != VERIFY),
        fix: pipeline.subset(|k| k != VERIFY),
        fix_decided: pipeline.subset(|k| k != JUDGE && k != ARBITER && k != ROUTER && k != VERIFY),
        verify: pipeline.subset(|k| k == VERIFY),
        whole: pipeline,
        original,
    })
}

fn refine(
    global: &HostOptions,
    args: &RefineArgs,
    target: &ReviewTarget,
) -> anyhow::Result<ExitStatus> {
    let settings = settings_of(args)?;
    let mut run = target.begin_run(RunKind::Review)?;
    let passes = passes_of(global, args, target)?;
    let pending = decision_of(args, target, &run)?;
    let mut settings = settings;
    if let ControlFlow::Break(exit) = budget(
        args,
        &passes,
        run.current_text(),
        &mut settings,
        global.quiet,
        pending.is_some(),
    )? {
        return Ok(exit);
    }
    let mut host = Host {
        global,
        passes,
        events: Events::open(target.root(), global.quiet)?,
        records: PassRecords::new(target.root())?,
        started: Instant::now(),
        earlier: active_changes(&run),
    };
    let mut machine = LoopState::new(settings);
    let stop = match refine_loop(&mut host, &mut run, &mut machine, pending)? {
        ControlFlow::Continue(stop) => stop,
        ControlFlow::Break(exit) => return Ok(exit),
    };
    finish(&mut host, args, target, run, &mut machine, stop)
}

/// The run's token budget, said before anything is asked: `--max-tokens`,
/// else one that follows the document (see [`koas_refine::control::estimate`]).
/// A budget that cannot cover one assessment stops the run here, with
/// nothing asked (unless a decided plan is fixed without judging first).
fn budget(
    args: &RefineArgs,
    passes: &Passes,
    text: &str,
    settings: &mut Settings,
    quiet: bool,
    decided: bool,
) -> anyhow::Result<ControlFlow<ExitStatus>> {
    let judges = passes
        .whole
        .config
        .get(JUDGE)
        .and_then(|c| c.get("judges"))
        .and_then(Value::as_array)
        .map_or(1, Vec::len);
    let template = koas_orchestrator::embed::prompts_folder(passes.whole.prompts.as_deref())
        .ok()
        .and_then(|p| p.load("refine_judge").ok())
        .map_or(1_500, |t| t.text().len());
    let estimate =
        koas_refine::control::estimate(text, judges, template, settings.limits.max_iterations);
    let given = args.max_tokens.is_some();
    if !given {
        settings.limits.max_tokens = estimate.default_budget;
    }
    let budget = settings.limits.max_tokens;
    let assessment = format!(
        "one assessment ≈ {} tokens ({} sections × {} judge(s))",
        estimate.assessment, estimate.sections, estimate.judges
    );
    if budget < estimate.assessment && !decided {
        let message = format!(
            "the token budget ({budget}, --max-tokens) cannot cover one assessment of the document: {assessment}; nothing was asked. Give --max-tokens {} or more (or leave it out: the default follows the document)",
            estimate.default_budget.max(estimate.assessment)
        );
        eprintln!("error: {message}");
        if args.target.json {
            print_json(&json!({"status": "refused", "error": message}))?;
        }
        return Ok(ControlFlow::Break(REFUSED));
    }
    if !quiet {
        let origin = if given {
            "--max-tokens"
        } else {
            "the default for this document"
        };
        eprintln!(
            "koas refine: budget {budget} tokens ({origin}); {assessment}; at most {} round(s) of fixes",
            settings.limits.max_iterations
        );
    }
    Ok(ControlFlow::Continue(()))
}

/// The loop: the machine says what to do next ([`Step`]), this runs it
/// and tells the machine what came of it, until it stops (or a pass
/// fails: `Break` with the exit status).
fn refine_loop(
    host: &mut Host<'_>,
    run: &mut PreparedRun<'_>,
    machine: &mut LoopState,
    pending: Option<Decided>,
) -> anyhow::Result<ControlFlow<ExitStatus, Stop>> {
    let decision = pending.as_ref().map(|d| Decision {
        document: run.current_text(),
        stored: &d.stored,
        plan: d.plan.clone(),
        routing: d.routing.clone(),
        active: active_changes(run),
    });
    let mut step = machine.next(Event::Start(decision))?;
    loop {
        host.emit(machine);
        // What the fixes addressed, borrowed by the event that tells them.
        let doc_before: String;
        let event = match step {
            Step::Stop(stop) => return Ok(ControlFlow::Continue(stop)),
            Step::Assess => {
                let (tokens, plan, routing) = match assess(host, run, machine)? {
                    ControlFlow::Continue(found) => found,
                    ControlFlow::Break(exit) => return Ok(ControlFlow::Break(exit)),
                };
                Event::Assessed {
                    judged: Judged {
                        document: run.current_text(),
                        tokens,
                        plan,
                        routing,
                        active: active_changes(run),
                    },
                    elapsed_secs: host.started.elapsed().as_secs(),
                }
            }
            Step::Revert { changes, why } => {
                let sections = sections_of_changes(run, &changes);
                revert(run, &changes, why.reason())?;
                Event::Reverted { sections }
            }
            Step::Fix { decided, routing } => {
                doc_before = run.current_text().to_owned();
                match fix(host, run, machine, decided, &routing)? {
                    ControlFlow::Continue((tokens, applied)) => Event::Fixed(Fixed {
                        document_before: &doc_before,
                        tokens,
                        applied,
                    }),
                    ControlFlow::Break(exit) => return Ok(ControlFlow::Break(exit)),
                }
            }
            Step::Verify(changes) => match verify(host, machine, &changes)? {
                ControlFlow::Continue(verification) => Event::Verified(verification),
                ControlFlow::Break(exit) => return Ok(ControlFlow::Break(exit)),
            },
        };
        step = machine.next(event)?;
    }
}

/// The assess pass (Stage 1–2, the judges, the arbiter, the router) on
/// the current document: the judges' tokens, the plan and its routing.
fn assess(
    host: &mut Host<'_>,
    run: &PreparedRun<'_>,
    machine: &LoopState,
) -> anyhow::Result<ControlFlow<ExitStatus, (TokenUse, RefinePlan, RefineRouting)>> {
    let mut inputs = base_inputs(run, &host.passes.llm, host.passes.doc_text(run))?;
    inputs.provided.insert(
        names::REFINE_STATE.to_owned(),
        Provided::from(serde_json::to_value(machine.refine_state())?),
    );
    let label = format!("{}-assess", machine.iteration());
    let outcome = match host.pass(Which::Assess, inputs, &label) {
        Ok(o) => o,
        Err(e) => {
            return failed(e, "the changes recorded so far stay in the ledger")
                .map(ControlFlow::Break)
        }
    };
    let verdicts: RefineVerdicts =
        passes::parse_output(&outcome.record, JUDGE, names::REFINE_VERDICTS)?;
    let plan: RefinePlan = passes::parse_output(&outcome.record, ARBITER, names::REFINE_PLAN)?;
    let routing: RefineRouting =
        passes::parse_output(&outcome.record, ROUTER, names::REFINE_ROUTING)?;
    // A judge whose answer could not be used, even asked again, is
    // named: its section was not scored by it.
    for verdict in &verdicts.verdicts {
        for (section, why) in &verdict.unreadable {
            eprintln!(
                "koas refine: judge {:?} gave no usable answer on section {section}: {why}",
                verdict.judge
            );
        }
    }
    Ok(ControlFlow::Continue((verdicts.tokens, plan, routing)))
}

/// The fix pass (the patcher and expander, `md_apply_ops`), its outcome
/// committed to the ledger: the fixers' tokens and the fixes recorded.
fn fix(
    host: &mut Host<'_>,
    run: &mut PreparedRun<'_>,
    machine: &LoopState,
    decided: bool,
    routing: &RefineRouting,
) -> anyhow::Result<ControlFlow<ExitStatus, (TokenUse, Vec<AppliedFix>)>> {
    let mut inputs = base_inputs(run, &host.passes.llm, host.passes.doc_text(run))?;
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
    let outcome = match host.pass(which, inputs, &label) {
        Ok(o) => o,
        Err(e) => {
            return failed(e, "the changes recorded so far stay in the ledger")
                .map(ControlFlow::Break)
        }
    };
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
    if !host.global.quiet {
        for r in &committed.batch.rejected {
            eprintln!(
                "refine:   a fix was refused by the apply engine: {} {}",
                r.rejection.class.as_str(),
                r.rejection.reason
            );
        }
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
    Ok(ControlFlow::Continue((ops.tokens, applied)))
}

/// The verify pass (free checks, the delta judge) on the round's changes:
/// the verifier's verdicts.
fn verify(
    host: &mut Host<'_>,
    machine: &LoopState,
    changes: &[RefineChange],
) -> anyhow::Result<ControlFlow<ExitStatus, RefineVerification>> {
    let mut inputs = RunInputs {
        llm: Some(host.passes.llm.clone()),
        ..RunInputs::default()
    };
    inputs.provided.insert(
        names::REFINE_CHANGES.to_owned(),
        Provided::from(serde_json::to_value(changes)?),
    );
    let label = format!("{}-verify", machine.iteration());
    let outcome = match host.pass(Which::Verify, inputs, &label) {
        Ok(o) => o,
        Err(e) => {
            return failed(e, "the unverified changes stay in the ledger").map(ControlFlow::Break)
        }
    };
    Ok(ControlFlow::Continue(passes::parse_output(
        &outcome.record,
        VERIFY,
        names::REFINE_VERIFICATION,
    )?))
}

/// The end of a run: the state returned (full-auto's best one), the
/// summary and plan written, the views refreshed, DOC replaced when asked.
fn finish(
    host: &mut Host<'_>,
    args: &RefineArgs,
    target: &ReviewTarget,
    mut run: PreparedRun<'_>,
    machine: &mut LoopState,
    stop: Stop,
) -> anyhow::Result<ExitStatus> {
    let now = active_changes(&run);
    let current = koas_kernel_api::hash::sha256(run.current_text());
    let ending = machine.choose_best(stop.status, &now, &current);
    revert(&mut run, &ending.revert, "koas refine: best iteration")?;
    host.emit(machine);
    let changes = active_changes(&run)
        .difference(&host.earlier)
        .map(|i| i.to_string())
        .collect();
    let summary = machine.summary(&stop, ending.best, changes);
    host.emit(machine);
    write_outcome(target.root(), &summary, machine.plan_of(ending.best))?;
    machine.complete(&summary);
    host.emit(machine);
    let ok = succeeded(summary.status);
    // The report and the annotated document show the ledger as refined,
    // as after `koas review`; a plan changes nothing, so it keeps them.
    let mut report = None;
    if summary.status != RefineStatus::Planned {
        let refreshed = refresh_views(
            host.global,
            target,
            &host.passes.whole,
            &run,
            &host.passes.llm,
            &summary,
        );
        match refreshed {
            Ok(views) => report = views.report,
            Err(failure) => {
                eprintln!(
                    "koas: the changes are recorded, but the report and annotated document could not be refreshed (`koas report {}` retries)",
                    target.doc_name
                );
                drop(run);
                print_summary(args, target, &summary, None)?;
                return Ok(match failure {
                    RunFailure::Kernel(message) => {
                        eprintln!("error: {message}\n  (DOC was not replaced)");
                        REFUSED
                    }
                    RunFailure::Interrupted => {
                        eprintln!("koas: interrupted (DOC was not replaced)");
                        ExitStatus::Interrupted
                    }
                });
            }
        }
    }
    if args.in_place && ok && summary.status != RefineStatus::Planned {
        run.replace_in_place(&target.doc_path)
            .with_context(|| format!("replacing {}", target.doc_path.display()))?;
    }
    drop(run);
    print_summary(args, target, &summary, report.as_deref())?;
    Ok(if ok { ExitStatus::Success } else { REFUSED })
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
        &passes::Control::ctrl_c(),
        &views,
        &discovery,
        run,
        Some(notice),
        Some(model),
        &target.project,
    )
}

/// A plan a person decided on, ready for the fixers.
struct Decided {
    /// The plan as stored: the scores of the document it was made for.
    stored: RefinePlan,
    /// The tasks to fix.
    plan: RefinePlan,
    /// Their routing.
    routing: RefineRouting,
}

/// The plan of `--apply-plan`/`--accept`, checked against the current
/// document before anything is asked or changed.
fn decision_of(
    args: &RefineArgs,
    target: &ReviewTarget,
    run: &PreparedRun<'_>,
) -> anyhow::Result<Option<Decided>> {
    if args.apply_plan.is_none() && args.accept.is_empty() {
        return Ok(None);
    }
    let path = match args.apply_plan.clone().flatten() {
        Some(p) => p,
        None => target.root().join("refine/plan.json"),
    };
    let bytes = std::fs::read(&path).with_context(|| {
        format!(
            "cannot read the plan {} (a semi-auto run that escalated, or `koas refine DOC --plan-only`, writes refine/plan.json)",
            path.display()
        )
    })?;
    let stored: RefinePlan = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a refinement plan", path.display()))?;
    let sections = koas_refine::sections::sections_of(run.current_text());
    let accepted = (!args.accept.is_empty()).then_some(args.accept.as_slice());
    let current = koas_kernel_api::hash::sha256(run.current_text());
    let plan = koas_refine::decision::decided_plan(&stored, accepted, &sections, &current)
        .with_context(|| format!("the plan {}", path.display()))?;
    let routing = koas_refine::router::route_tasks(&plan);
    Ok(Some(Decided {
        stored,
        plan,
        routing,
    }))
}

fn failed(e: anyhow::Error, consequence: &str) -> anyhow::Result<ExitStatus> {
    if e.to_string() == "interrupted" {
        eprintln!("koas: interrupted ({consequence})");
        return Ok(ExitStatus::Interrupted);
    }
    eprintln!("error: {e}\n  ({consequence})");
    Ok(REFUSED)
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

fn saving(summary: &RefineSummary) -> Option<f64> {
    (summary.full_rewrite_tokens > 0).then(|| {
        100.0 * (1.0 - summary.fix_side_tokens as f64 / summary.full_rewrite_tokens as f64)
    })
}

fn print_summary(
    args: &RefineArgs,
    target: &ReviewTarget,
    s: &RefineSummary,
    report: Option<&Path>,
) -> anyhow::Result<()> {
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
