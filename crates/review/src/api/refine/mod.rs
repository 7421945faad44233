//! `refine`: targeted refinement of a document, every change through the
//! review workspace's ledger.
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
//! to `refine/events.jsonl` as they happen, and to the caller's sink; the
//! run's summary to `refine/summary.json`.
//!
//! What the loop decides lives in [`koas_refine::machine`] (a state
//! machine over plain data, tested there); this module runs the passes it
//! asks for and commits and reverts through the ledger.

mod finish;
mod steps;

use super::session::Sink;
use super::{ApiError, Session, Told};
use crate::common::{LlmFlags, ReviewTarget};
use crate::passes::{self, Control, RunFailure, RunInputs, APPLY};
use anyhow::{bail, Context as _};
use finish::finish;
use koas_orchestrator::discovery::Discovery;
use koas_orchestrator::embed::HostOptions;
use koas_orchestrator::pipeline::Pipeline;
use koas_refine::control::{Limits, Mode};
use koas_refine::machine::{LoopState, Settings};
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::refine::{RefineEvent, RefinePlan, RefineRouting, RefineSummary};
use koas_review_workspace::{paths, PreparedRun, RunKind};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;
use steps::{active_changes, refine_loop, PassRecords};

/// The built-in refinement pipeline.
const BUILT_IN: &str = include_str!("../../../../../configs/refine.toml");
/// How it is named in messages.
const BUILT_IN_NAME: &str = "<built-in refinement pipeline (configs/refine.toml)>";
/// The patch prompt as shipped: the instructions a whole-document rewrite
/// would carry too, for the token comparison.
const REWRITE_INSTRUCTIONS: &str = include_str!("../../../../../prompts/refine_patch.tera");

const JUDGE: &str = "refine_judge";
const ARBITER: &str = "refine_arbiter";
const ROUTER: &str = "refine_router";
const FIX: &str = "refine_fix";
const VERIFY: &str = "refine_verify";

/// What a refinement is asked: `koas refine DOC`'s flags, as a library
/// takes them.
#[derive(Debug, Clone)]
pub struct RefineRequest {
    /// `full-auto` (best effort) or `semi-auto` (escalates to a person).
    pub mode: String,
    /// Rounds of fixes at most.
    pub max_iterations: Option<u32>,
    /// Model tokens at most (default: one that follows the document).
    pub max_tokens: Option<u64>,
    /// Seconds at most.
    pub timeout: Option<u64>,
    /// The judges (model roles), 1 to 3.
    pub judges: Vec<String>,
    /// Assess and plan only: write refine/plan.json and change nothing.
    pub plan_only: bool,
    /// Fix the tasks of a stored plan as a person decided (`Some(None)`:
    /// the workspace's refine/plan.json).
    pub apply_plan: Option<Option<PathBuf>>,
    /// With the stored plan: fix only these issues.
    pub accept: Vec<String>,
    /// When the run ends with a document, replace DOC with it.
    pub in_place: bool,
    /// A pipeline file instead of the built-in refinement pipeline.
    pub pipeline: Option<PathBuf>,
    /// The model, over the `[llm]` tables.
    pub llm: LlmFlags,
}

impl Default for RefineRequest {
    fn default() -> Self {
        RefineRequest {
            mode: "full-auto".to_owned(),
            max_iterations: None,
            max_tokens: None,
            timeout: None,
            judges: Vec::new(),
            plan_only: false,
            apply_plan: None,
            accept: Vec::new(),
            in_place: false,
            pipeline: None,
            llm: LlmFlags::default(),
        }
    }
}

/// A refinement that ran to its end (accepted, escalated, planned…).
#[derive(Debug, Clone)]
pub struct Refined {
    /// What `refine/summary.json` holds.
    pub summary: RefineSummary,
    /// The report the view pass wrote (none for a plan).
    pub report: Option<PathBuf>,
}

impl Refined {
    /// The run reached a document to keep (accepted, accepted with a
    /// warning, best effort, a plan): `koas refine` exits 0.
    pub fn succeeded(&self) -> bool {
        koas_refine::machine::succeeded(self.summary.status)
    }
}

impl Session<'_> {
    /// Refines the document: rounds of judging, fixing and verifying until
    /// the mode's target or a limit; the session's sink is told each step.
    pub fn refine(&self, request: &RefineRequest) -> Result<Refined, ApiError> {
        refine(self, request)
    }
}

/// Appends events to `refine/events.jsonl` as they happen and tells the
/// caller's sink.
struct Events {
    file: std::fs::File,
    sink: Option<Sink>,
}

impl Events {
    fn open(root: &Path, sink: Option<Sink>) -> anyhow::Result<Events> {
        let dir = root.join("refine");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("events.jsonl");
        let file =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(Events { file, sink })
    }

    fn emit(&mut self, event: RefineEvent) {
        if let Ok(mut line) = serde_json::to_string(&event) {
            line.push('\n');
            // Events are for watching a run; losing one must not stop it.
            let _ = self.file.write_all(line.as_bytes());
            let _ = self.file.flush();
        }
        self.say(Told::Event(&event));
    }

    fn say(&self, told: Told<'_>) {
        if let Some(sink) = &self.sink {
            sink(told);
        }
    }
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
struct Runner<'g> {
    global: &'g HostOptions,
    control: &'g Control,
    passes: Passes,
    records: PassRecords,
    events: Events,
    started: Instant,
    /// The changes active before this run (an earlier review's): not
    /// refine's, not listed as its changes.
    earlier: BTreeSet<ChangeId>,
}

impl Runner<'_> {
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
        let (_, result) = passes::run_pass(
            self.global,
            self.control,
            pipeline,
            &self.passes.discovery,
            inputs,
        )?;
        // A record is for replaying the run later; missing one must not
        // stop the run.
        if let Some(warning) = self.records.keep(label) {
            self.events
                .say(Told::Warning(&format!("koas: warning: {warning}")));
        }
        match result {
            Ok(outcome) => Ok(outcome),
            Err(RunFailure::Kernel(message)) => bail!("{message}"),
            Err(RunFailure::Interrupted) => bail!("interrupted"),
        }
    }
}

/// The mode and limits of the request.
fn settings_of(request: &RefineRequest) -> anyhow::Result<Settings> {
    let Some(mode) = Mode::parse(&request.mode) else {
        bail!("--mode {}: use `full-auto` or `semi-auto`", request.mode);
    };
    if request.judges.len() > 3 {
        bail!("--judges: give 1 to 3 judges, not {}", request.judges.len());
    }
    let mut limits = Limits::default();
    if let Some(n) = request.max_iterations {
        limits.max_iterations = n;
    }
    if let Some(n) = request.max_tokens {
        limits.max_tokens = n;
    }
    if let Some(n) = request.timeout {
        limits.timeout_secs = n;
    }
    Ok(Settings {
        mode,
        limits,
        plan_only: request.plan_only,
        rewrite_instructions: REWRITE_INSTRUCTIONS.to_owned(),
    })
}

/// The refinement pipeline and its model, checked, cut into passes.
fn passes_of(
    global: &HostOptions,
    request: &RefineRequest,
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
        request.pipeline.as_deref(),
        BUILT_IN,
        BUILT_IN_NAME,
        target.workspace.root(),
        vec![("doc".to_owned(), doc_input)],
    )?;
    for k in [JUDGE, ARBITER, ROUTER, FIX, APPLY, VERIFY] {
        pipeline.require(k, "koas refine runs")?;
    }
    if !request.judges.is_empty() {
        pipeline.set_config(JUDGE, "judges", json!(request.judges));
    }
    let Some(llm) = passes::review_llm(
        &pipeline,
        &target.doc_path,
        &request.llm,
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

fn refine(session: &Session<'_>, request: &RefineRequest) -> Result<Refined, ApiError> {
    let (global, target) = (session.global, session.target());
    let settings = settings_of(request)?;
    let mut run = target.begin_run(RunKind::Review)?;
    let passes = passes_of(global, request, target)?;
    let pending = decision_of(request, target, &run)?;
    let mut settings = settings;
    budget(
        request,
        &passes,
        run.current_text(),
        &mut settings,
        pending.is_some(),
        &|told| session.tell(told),
    )?;
    let mut runner = Runner {
        global,
        passes,
        control: session.control(),
        events: Events::open(target.root(), session.sink())?,
        records: PassRecords::new(target.root())?,
        started: Instant::now(),
        earlier: active_changes(&run),
    };
    let mut machine = LoopState::new(settings);
    let stop = refine_loop(&mut runner, &mut run, &mut machine, pending)?;
    finish(&mut runner, request, target, run, &mut machine, stop)
}

/// The run's token budget, said before anything is asked: `--max-tokens`,
/// else one that follows the document (see [`koas_refine::control::estimate`]).
/// A budget that cannot cover one assessment stops the run here, with
/// nothing asked (unless a decided plan is fixed without judging first).
fn budget(
    request: &RefineRequest,
    passes: &Passes,
    text: &str,
    settings: &mut Settings,
    decided: bool,
    tell: &dyn Fn(Told<'_>),
) -> Result<(), ApiError> {
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
    let given = request.max_tokens.is_some();
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
        return Err(ApiError::Refused { reason: message });
    }
    {
        let origin = if given {
            "--max-tokens"
        } else {
            "the default for this document"
        };
        tell(Told::Info(&format!(
            "koas refine: budget {budget} tokens ({origin}); {assessment}; at most {} round(s) of fixes",
            settings.limits.max_iterations
        )));
    }
    Ok(())
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
    request: &RefineRequest,
    target: &ReviewTarget,
    run: &PreparedRun<'_>,
) -> anyhow::Result<Option<Decided>> {
    if request.apply_plan.is_none() && request.accept.is_empty() {
        return Ok(None);
    }
    let path = match request.apply_plan.clone().flatten() {
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
    let accepted = (!request.accept.is_empty()).then_some(request.accept.as_slice());
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
