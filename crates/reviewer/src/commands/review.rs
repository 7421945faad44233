//! `koas review DOC [--ops FILE]`: run the reviewer pipeline on a document
//! in its review workspace and record the changes.
//!
//! Under the workspace lock: Stage 1, Stage 2 and `md_apply_ops` run in a
//! planning pass; the batch it planned is replayed, checked and committed
//! (patches, fsynced ledger, `stage3/doc.edited.md`, apply log); the view
//! pass writes `stage3/doc.REVIEWED.md` and the report; `--in-place`
//! replaces DOC last, only when everything succeeded.

use crate::common::{
    actor, clock, command_line, on_workspace, review_exit_codes, LlmFlags, Reply, ReviewTarget,
    WorkspaceArgs, REFUSED,
};
use crate::passes::{
    self, Control, RunFailure, RunInputs, APPLY, EDIT_PLAN, PYRAMID, REVERT, VIEWS,
};
use anyhow::Context as _;
use clap::Args;
use koas_kernel_api::terminal::escape_controls_keep_lines;
use koas_orchestrator::discovery::Discovery;
use koas_orchestrator::embed::HostLlm;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_orchestrator::engine::Provided;
use koas_orchestrator::pipeline::Pipeline;
use koas_review::edit_op::parse_ops_file;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::apply::ApplyOutcome;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_plan::{ChunkVerdict, EditPlan, EditPlanStatus};
use koas_review_schema::names;
use koas_review_schema::pyramid::{Glossary, Pyramid};
use koas_review_schema::review::{ReviewModelRun, ReviewState};
use koas_review_workspace::{
    paths, BeginRequest, CommitContext, Follow, PreparedRun, ReviewOutcome, RunKind,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// `koas review DOC` with every flag at its default.
    pub fn new(target: WorkspaceArgs) -> ReviewArgs {
        ReviewArgs {
            target,
            ops: None,
            strict: false,
            in_place: false,
            pipeline: None,
            llm: LlmFlags::default(),
            no_llm: false,
            skip_pyramid: false,
            no_check_fixes: false,
            tutor_model: None,
            rebase: false,
            more: Vec::new(),
            jobs: None,
        }
    }
}

pub fn execute(global: &HostOptions, args: ReviewArgs) -> anyhow::Result<ExitStatus> {
    if super::set::is_set(&args.target, &args.more) {
        let result = review_set(global, &args);
        return crate::common::json_errors(args.target.json, None, result);
    }
    on_workspace(&args.target, |target| {
        let answer = Wanted {
            whole_json: args.target.json,
        };
        review(global, &Control::ctrl_c(), &args, target, answer)?.print(args.target.json)
    })
}

/// `koas review` as a library call: the answer is returned, not printed
/// (progress and warnings still go to stderr), and `control` stops and
/// watches the runs.
pub fn run(global: &HostOptions, control: &Control, args: &ReviewArgs) -> anyhow::Result<Reply> {
    let target = ReviewTarget::locate(&args.target)?;
    review(global, control, args, &target, Wanted { whole_json: true })
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
        let reply = review(global, control, &one, &target, Wanted { whole_json: false })?;
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

/// What the caller will read of the answer.
#[derive(Clone, Copy)]
struct Wanted {
    /// The JSON answer with every op's apply log record, applied ID and
    /// note (`--json`, a library call). Text output needs only counts: the
    /// JSON of a 100,000-op review is a tree of a quarter of a GB.
    whole_json: bool,
}

fn review(
    global: &HostOptions,
    control: &Control,
    args: &ReviewArgs,
    target: &ReviewTarget,
    wanted: Wanted,
) -> anyhow::Result<Reply> {
    let ops = read_ops(args)?;
    target.prepare_writes()?;
    let mut run = begin(args, target)?;
    let setup = Setup::of(global, args, target)?;
    let root = target.workspace.root();
    let planned = match plan(global, control, &setup, &run, ops)? {
        Ok(planned) => planned,
        Err(failure) => return Ok(failure.reply(root, run.rebased())),
    };
    let committed = commit(args, target, &mut run, planned.fixes, planned.outcome)?;
    if args.pipeline.is_some() {
        // The review was made with it: later commands use the same kernels.
        target.workspace.remember_pipeline(setup.file.as_deref())?;
    }

    // What the command answers is taken from the commit now and the
    // commit dropped: on a large review its batch, ledger entries and log
    // records are hundreds of MB that the views pass does not need.
    let no_ops = args.ops.is_none() && setup.llm.is_none();
    // Without a model or ops the only changes are the checks' certain
    // fixes (a misspelling the document spells right elsewhere, a
    // heading-level skip): said so, not "no change".
    let fixed = committed.entries.iter().filter(|e| !e.is_revert).count();
    // The report's model section is the work behind the review: a run
    // the cache answered whole (no request at all) shows the last run
    // that asked the model, so an unchanged re-run keeps its report.
    let run_model = planned.model.as_ref().map(|m| {
        let asked = m.run.calls + m.run.cached_calls > 0 || m.run.stopped.is_some();
        match target.workspace.last_model_run() {
            // The same kernels' results (their summaries are kept with
            // them in the cache): the same model work.
            Some(last)
                if !asked
                    && last.models == m.run.models
                    && last.pyramid == m.run.pyramid
                    && last.edit_plan == m.run.edit_plan =>
            {
                last
            }
            _ => {
                target.workspace.remember_model_run(&m.run);
                m.run.clone()
            }
        }
    });
    let rebase = Rebase {
        ids: run.rebased(),
        overlaps: run.rebase_overlaps(),
    };
    let answered = answer(
        args,
        target,
        &committed,
        no_ops,
        planned.model,
        rebase,
        wanted,
    )?;
    drop(committed);

    let notice = no_ops.then(|| {
        let made = if fixed == 0 {
            "no change was made".to_owned()
        } else {
            format!("only the checks' certain fixes were applied ({fixed})")
        };
        if args.no_llm {
            format!("The model was not asked (--no-llm) and no ops were given: the deterministic stages ran and {made}.")
        } else {
            format!("No model is configured and no ops were given: the deterministic stages ran and {made}. Configure a model (an [llm] table in koas.toml, or --llm-backend/--llm-endpoint/--llm-model) or give edit ops with `koas review DOC --ops FILE`.")
        }
    });
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
            eprintln!(
                "koas: the changes are recorded, but the report and annotated document could not be refreshed"
            );
            return Ok(report_failure(failure, "DOC was not replaced", root, true));
        }
    };
    if args.in_place {
        if let Err(e) = run.replace_in_place(&target.doc_path) {
            return Err(target.not_written(e));
        }
        if let Err(e) = target.workspace.end_in_place() {
            eprintln!("koas: {} was replaced, but: {e}", target.doc_path.display());
        }
    }
    drop(run);
    // Older document versions' artifacts are no longer needed: keep the
    // workspace a small multiple of the document however many reviews.
    control.collect_caches(global);
    Ok(answered.with_report(args, target, views.report))
}

/// The ops file, checked before anything is locked or written, and
/// handed to the engine as read (a FIFO swapped in later is not read).
fn read_ops(args: &ReviewArgs) -> anyhow::Result<Option<Arc<[u8]>>> {
    let Some(ops) = &args.ops else {
        return Ok(None);
    };
    // Like the document: a FIFO or a device would hang or fill memory.
    let limit = crate::input::max_doc_bytes(args.target.max_doc_size.as_deref())?;
    let shown = format!("the ops file {}", ops.display());
    let bytes = crate::input::read_document_bytes(ops, &shown, limit, false)?;
    let text = String::from_utf8(bytes)
        .with_context(|| format!("the ops file {} is not UTF-8 text", ops.display()))?;
    parse_ops_file(&text).with_context(|| format!("ops file {}", ops.display()))?;
    Ok(Some(Arc::from(text.into_bytes())))
}

/// The review's run in its workspace, locked, following the document
/// (`--rebase` records hand edits first).
fn begin<'w>(args: &ReviewArgs, target: &'w ReviewTarget) -> anyhow::Result<PreparedRun<'w>> {
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
                rebase: args.rebase,
                actor: &actor(),
                options: &ApplyOptions::default(),
            },
        )
        .map_err(|e| target.explain(e))
}

/// What the flags decide before any kernel runs: the pipeline with the
/// review's settings, the model, the kernels found.
struct Setup {
    /// The `--pipeline` file (absolute), `None` for the built-in one.
    file: Option<std::path::PathBuf>,
    pipeline: Pipeline,
    llm: Option<HostLlm>,
    discovery: Discovery,
    /// Why the model's plan is not asked for (`--no-llm`, `--ops`).
    skip_plan: Option<&'static str>,
    /// The certain fixes of the checks are applied (no
    /// `--no-check-fixes`).
    check_fixes: bool,
}

impl Setup {
    fn of(global: &HostOptions, args: &ReviewArgs, target: &ReviewTarget) -> anyhow::Result<Setup> {
        // Stage 1 and 2 describe the document the ops address: the current
        // one. Its text is handed to the engine (see `pass_inputs`) under
        // the path of the workspace's current document, on a first review
        // too (before the file exists): an unchanged document then keys the
        // same on every run, and a re-run is answered from the cache.
        let current = target.workspace.path(paths::EDITED_DOC);
        let mut inputs = vec![("doc".to_owned(), current)];
        if let Some(ops) = &args.ops {
            inputs.push((names::OPS.to_owned(), ops.clone()));
        }
        let skip_plan = if args.no_llm {
            Some("--no-llm")
        } else if args.ops.is_some() {
            // Ops from a file replace the model's plan.
            Some("--ops given")
        } else {
            None
        };
        let settings = settings(args, target, skip_plan);
        let workspace = target.workspace.root();
        let file = target.pipeline_file(args.pipeline.as_deref())?;
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
            &args.llm,
            args.tutor_model.as_deref(),
            args.no_llm,
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
            check_fixes: !args.no_check_fixes,
        })
    }
}

/// The kernels' settings the review's flags decide: `(kernel, key,
/// value)`, set over the pipeline's own.
fn settings(
    args: &ReviewArgs,
    target: &ReviewTarget,
    skip_plan: Option<&str>,
) -> Vec<(&'static str, &'static str, Value)> {
    let mut out = vec![
        (APPLY, "strict", Value::Bool(args.strict)),
        // The certain fixes of the checks (`koas check --fix`) are
        // changes like any other: IDs, patches, ledger lines.
        (APPLY, "check_fixes", Value::Bool(!args.no_check_fixes)),
        // After a first review the text read is the workspace's copy: the
        // pyramid is still about the user's document (and an unchanged
        // document's root keeps its input, so it is not asked again).
        (EDIT_PLAN, "title", json!(target.doc_name)),
    ];
    let skip_pyramid = if args.no_llm {
        Some("--no-llm")
    } else if args.skip_pyramid {
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
struct Planned {
    /// The certain fixes of the checks, planned first.
    fixes: Option<ApplyOutcome>,
    /// The ops of the model or of the file, on the fixed text.
    outcome: ApplyOutcome,
    /// What the model did, when one was configured.
    model: Option<ModelReport>,
}

/// Why nothing was recorded.
enum NotPlanned {
    /// A planning pass failed or was interrupted.
    Pass(RunFailure),
    /// Ctrl-C came after the passes, before anything was recorded.
    Interrupted,
    /// The model's server stopped answering: a failed review, not a
    /// smaller one.
    Unreachable(String),
}

impl NotPlanned {
    /// The failure, told on stderr and answered. `rebased`: the hand
    /// edits a `--rebase` recorded before the passes (they stay).
    fn reply(self, workspace: &Path, rebased: &[ChangeId]) -> Reply {
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
            NotPlanned::Pass(failure) => report_failure(failure, &nothing, workspace, false),
            NotPlanned::Interrupted => {
                let message = format!("interrupted before the changes were recorded; {nothing}");
                eprintln!("koas: {message}");
                Reply::failed(ExitStatus::Interrupted, &message, workspace)
            }
            NotPlanned::Unreachable(failure) => {
                let consequence = match rebased.is_empty() {
                    true => {
                        "nothing was recorded: the document and the ledger are unchanged".to_owned()
                    }
                    false => nothing,
                };
                // The failure quotes the model's server.
                eprintln!(
                    "error: {}\n  ({consequence})",
                    escape_controls_keep_lines(&failure)
                );
                Reply::failed(REFUSED, &format!("{failure} ({consequence})"), workspace)
            }
        }
    }
}

/// The planning passes: the certain fixes of the checks first (in a pass
/// of their own, so the model reads the text they leave: otherwise a
/// re-run would find the fixed lines new and ask the model about them
/// again), then the model's ops or the file's on that text.
fn plan(
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
    let effects = koas_review::known::ledger_effects(run.entries(), |path| {
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

/// Records the planned changes: replayed and checked, then written in the
/// crash-safe order; the certain fixes first, the text the model's ops
/// address after.
fn commit(
    args: &ReviewArgs,
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
    let marked = if args.in_place {
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
    if !args.in_place && !committed.entries.is_empty() {
        workspace
            .stop_writing_doc()
            .with_context(|| format!("review workspace {}", workspace.root().display()))?;
    }
    Ok(committed)
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

/// A failed pass, told on stderr; `recorded`: the changes were recorded
/// before it failed (a `partial` answer).
fn report_failure(
    failure: RunFailure,
    consequence: &str,
    workspace: &Path,
    recorded: bool,
) -> Reply {
    let mut reply = match failure {
        RunFailure::Kernel(message) => {
            // A plugin or a model's server wrote the message.
            eprintln!(
                "error: {}\n  ({consequence})",
                escape_controls_keep_lines(&message)
            );
            Reply::failed(REFUSED, &format!("{message} ({consequence})"), workspace)
        }
        RunFailure::Interrupted => {
            eprintln!("koas: interrupted ({consequence})");
            Reply::failed(
                ExitStatus::Interrupted,
                &format!("interrupted ({consequence})"),
                workspace,
            )
        }
    };
    if recorded {
        reply.json["status"] = json!("partial");
    }
    reply
}

/// The command's answer before the views pass: all but the report's path
/// and the lines that follow it.
struct Answer {
    value: Value,
    text: String,
}

impl Answer {
    /// The reply, with the report the views pass wrote (if any) and the
    /// files the review left.
    fn with_report(
        mut self,
        args: &ReviewArgs,
        target: &ReviewTarget,
        report: Option<PathBuf>,
    ) -> Reply {
        let ws = target.root();
        if let Some(map) = self.value.as_object_mut() {
            map.insert("report".into(), json!(report));
        }
        let t = &mut self.text;
        if let Some(report) = report {
            let _ = writeln!(t, "report:    {}", report.display());
        }
        let _ = writeln!(t, "annotated: {}", ws.join(paths::REVIEWED_DOC).display());
        let _ = writeln!(t, "edited:    {}", ws.join(paths::EDITED_DOC).display());
        if args.in_place {
            let _ = writeln!(t, "replaced:  {}", target.doc_path.display());
        }
        Reply::new(ExitStatus::Success, self.value, self.text)
    }
}

/// What a `--rebase` recorded before the review: the changes of kind
/// external, and the lines of DOC whose hand edits could not be carried
/// over (they touched lines the review changed since DOC was written).
#[derive(Clone, Copy)]
struct Rebase<'a> {
    ids: &'a [ChangeId],
    overlaps: &'a [String],
}

fn answer(
    args: &ReviewArgs,
    target: &ReviewTarget,
    out: &ReviewOutcome,
    no_ops: bool,
    model: Option<ModelReport>,
    rebase: Rebase<'_>,
    wanted: Wanted,
) -> anyhow::Result<Answer> {
    let rebased = rebase.ids;
    let ws = target.root();
    let applied: Vec<String> = out
        .batch
        .applied
        .iter()
        .filter(|a| a.change.is_some())
        .map(|a| a.op.id.to_string())
        .collect();
    let flagged = out.batch.applied.len() - applied.len();
    // Every guard firing, applied or rejected op alike, counted as the
    // report counts them.
    let guards = koas_review::report::guard_counts(&out.batch.log_records(""));
    let rejected = out.batch.rejected.len();
    let known = &out.batch.known;
    let summary = if no_ops {
        format!(
            "{}: deterministic stages only, {} changes",
            if args.no_llm {
                "--no-llm and no ops"
            } else {
                "no model and no ops"
            },
            applied.len()
        )
    } else {
        let mut summary = format!(
            "{} ops: {} applied, {flagged} flagged, {rejected} rejected",
            out.batch.applied.len() + rejected + known.len(),
            applied.len()
        );
        if !known.is_empty() {
            summary.push_str(&format!(", {} already in the ledger", known.len()));
        }
        summary
    };
    let mut value = if wanted.whole_json {
        out.summary_json()
    } else {
        json!({
            "status": "completed",
            "run_id": out.run_id,
            "total_changes": applied.len(),
            "flags": flagged,
            "rejected": rejected,
        })
    };
    {
        if let Some(map) = value.as_object_mut() {
            map.insert("summary".into(), json!(summary));
            map.insert("workspace".into(), json!(ws));
            map.insert("document".into(), json!(target.doc_path));
            map.insert("annotated".into(), json!(ws.join(paths::REVIEWED_DOC)));
            map.insert("edited".into(), json!(ws.join(paths::EDITED_DOC)));
            map.insert("in_place".into(), json!(args.in_place));
            map.insert("guards".into(), json!(guards));
            map.insert("known".into(), json!(known.len()));
            map.insert(
                "rebased".into(),
                json!(rebased.iter().map(|i| i.to_string()).collect::<Vec<_>>()),
            );
            if !rebase.overlaps.is_empty() {
                map.insert("rebase_overlaps".into(), json!(rebase.overlaps));
            }
            if let Some(model) = &model {
                map.insert("model".into(), serde_json::to_value(model)?);
                map.insert("chunks".into(), json!(model.chunks));
            }
        }
    }
    let mut text = String::new();
    let t = &mut text;
    writeln!(t, "koas review: {}: {summary}", target.doc_name)?;
    if let (Some(first), Some(last)) = (rebased.first(), rebased.last()) {
        let ids = if first == last {
            first.to_string()
        } else {
            format!("{first} … {last}")
        };
        writeln!(
            t,
            "  rebased:   {} changed outside koas since the last review; the hand edits are recorded as {ids} (kind external) and the review continued on the new text",
            target.doc_name
        )?;
    }
    if !rebase.overlaps.is_empty() {
        writeln!(
            t,
            "  overlap:   {name} lines {}: the hand edits there touch lines the review changed or reverted since {name} was last written; they are recorded as {name} has them",
            rebase.overlaps.join(", "),
            name = target.doc_name,
        )?;
    }
    if !guards.is_empty() {
        let list: Vec<String> = guards.iter().map(|(g, n)| format!("{g} {n}")).collect();
        writeln!(
            t,
            "  guards:    {} fired ({}): those changes need attention or became flags",
            guards.values().sum::<usize>(),
            list.join(", ")
        )?;
    }
    if let Some(model) = &model {
        model_lines(t, model)?;
    }
    outcome_lines(t, out)?;
    if no_ops && args.no_llm {
        writeln!(
            t,
            "  note:      --no-llm: no model was asked; the deterministic stages ran (drop --no-llm to have the configured model propose changes, or give edit ops with --ops FILE)"
        )?;
    } else if no_ops {
        writeln!(
            t,
            "  hint:      no model is configured: add an [llm] table to koas.toml next to the document (backend, endpoint, model; README \"Review with a local model\"), check it with `koas llm ping`, or give your own edit ops with --ops FILE"
        )?;
    } else if let Some(model) = model.as_ref().filter(|m| {
        m.run.stopped.is_none() && m.run.calls + m.run.cached_calls > 0 && m.proposed == 0
    }) {
        writeln!(
            t,
            "  hint:      the model proposed no change in {} chunk(s): the document may need none, or the model is too small to follow the edit prompt (its answers are in {}); a larger instruction model, or `koas llm calibrate`, tells which",
            model.chunks,
            ws.join("llm/exchanges.jsonl").display()
        )?;
    }
    writeln!(t, "workspace: {}", ws.display())?;
    Ok(Answer { value, text })
}

/// The summary's lines about the model: what the pyramid and the edit
/// plan did, the calls and tokens, and why it was stopped.
fn model_lines(t: &mut String, model: &ModelReport) -> std::fmt::Result {
    let run = &model.run;
    // A result the cache gave back is an earlier run's work: said so, its
    // figures as they were then.
    let then = |line: &str, reused: bool| {
        if reused {
            format!("reused from an earlier run, nothing redone (then: {line})")
        } else {
            line.to_owned()
        }
    };
    if let Some(p) = &run.pyramid {
        writeln!(t, "  pyramid:   {}", then(p, model.pyramid_reused))?;
    }
    if let Some(p) = &run.edit_plan {
        writeln!(t, "  edit plan: {}", then(p, model.edit_plan_reused))?;
    }
    let mut names: Vec<&str> = run.models.values().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    // Only a server that reports its prompt cache says what it reused.
    let reused = model
        .reused_prompt_tokens
        .map(|r| {
            format!(
                ", {} prompt tokens ({r} reused by the server)",
                model.prompt_tokens
            )
        })
        .unwrap_or_default();
    writeln!(
        t,
        "  model:     {} ({}): {}, {} tokens{reused}, {:.1} s",
        names.join(", "),
        run.backend,
        run.requests_phrase(),
        run.tokens,
        model.seconds
    )?;
    if let Some(reason) = &run.stopped {
        writeln!(
            t,
            "  the model was stopped early ({reason}): {} chunk(s) not reviewed; the next run asks them, not the others",
            run.chunks_not_reviewed
        )?;
    }
    Ok(())
}

/// The summary's lines about what was recorded: a recovery, a lock taken
/// over, the change IDs, known and rejected ops, what needs attention.
fn outcome_lines(t: &mut String, out: &ReviewOutcome) -> std::fmt::Result {
    let known = &out.batch.known;
    if let Some(recovery) = &out.recovery {
        let ids: Vec<String> = recovery
            .rolled_forward
            .iter()
            .map(|i| i.to_string())
            .collect();
        writeln!(
            t,
            "  recovered: the document was brought up to date with the ledger ({})",
            ids.join(", ")
        )?;
    }
    if let Some(holder) = &out.took_over {
        writeln!(t, "  took over a stale lock of {holder}")?;
    }
    // The IDs of what was recorded, changes and flags alike (flags take
    // IDs too): the range the `recorded:` line below counts.
    let ids: Vec<String> = out
        .entries
        .iter()
        .filter(|e| !e.is_revert)
        .map(|e| e.id.to_string())
        .collect();
    match (ids.first(), ids.last()) {
        (Some(first), Some(last)) if first != last => writeln!(t, "  ids:       {first} … {last}")?,
        (Some(first), _) => writeln!(t, "  id:        {first}")?,
        _ => {}
    }
    if !known.is_empty() {
        writeln!(
            t,
            "  known:     {} op(s) whose effect is already in the ledger ({}): not recorded again; a reverted change stays reverted, a dismissed flag dismissed",
            known.len(),
            koas_review::known::describe(known)
        )?;
    }
    for r in &out.batch.rejected {
        writeln!(
            t,
            "  rejected {}: {}",
            r.rejection.class.as_str(),
            r.rejection.reason
        )?;
    }
    // What this run recorded, counted as the report and `koas status`
    // count the ledger.
    let counts = koas_review::query::count(&out.entries);
    if counts.entries > 0 {
        writeln!(
            t,
            "  recorded:  {}{}",
            counts.sentence(),
            if counts.need_attention > 0 {
                " (alert notes in the annotated document)"
            } else {
                ""
            }
        )?;
    }
    Ok(())
}

/// What the model did during a review, for the summary and the report.
#[derive(Debug, serde::Serialize)]
struct ModelReport {
    /// What the report shows too.
    #[serde(flatten)]
    run: ReviewModelRun,
    /// Wall time of the planning pass.
    seconds: f64,
    /// Prompt tokens of the server's answers.
    #[serde(skip)]
    prompt_tokens: u64,
    /// Of those, what the server said it reused from its prompt cache;
    /// `None` when it said nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    reused_prompt_tokens: Option<u64>,
    /// The server's base URL (for the error when it stopped answering).
    #[serde(skip)]
    endpoint: String,
    /// Why the edit plan stopped, verbatim (it names the endpoint).
    #[serde(skip)]
    plan_reason: Option<String>,
    /// Chunks of the plan.
    #[serde(skip)]
    chunks: usize,
    /// Ops the model's plan holds, dropped proposals included (0: the
    /// model proposed nothing).
    #[serde(skip)]
    proposed: usize,
    /// The pyramid and the edit plan came from the cache: this run did
    /// none of their work, and their figures are an earlier run's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pyramid_reused: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    edit_plan_reused: bool,
}

/// The line on the pyramid, read from the pyramid the edit plan's kernel
/// built with it (a pipeline without `md_pyramid`).
fn pyramid_line(record: &koas_orchestrator::run_record::RunRecord) -> Option<String> {
    let kernel = record.kernel(EDIT_PLAN)?;
    if let Some(why) = kernel
        .error
        .clone()
        .or_else(|| kernel.skipped_reason.clone())
    {
        return Some(why);
    }
    let pyramid: Pyramid = passes::parse_output(record, EDIT_PLAN, names::PYRAMID).ok()?;
    let terms = passes::parse_output::<Glossary>(record, EDIT_PLAN, names::GLOSSARY)
        .map_or(0, |g| g.terms.len());
    Some(pyramid.summary_line(terms))
}

/// The line on the plan, read from the plan: the kernel's own line holds
/// the pyramid's too. A plan skipped, or a kernel that failed, keeps the
/// kernel's line.
fn plan_line(
    record: &koas_orchestrator::run_record::RunRecord,
    plan: Option<&EditPlan>,
) -> Option<String> {
    let kernel = record.kernel(EDIT_PLAN)?;
    let plan = plan.filter(|p| p.status != EditPlanStatus::Skipped)?;
    (kernel.error.is_none() && kernel.skipped_reason.is_none()).then(|| plan.summary_line())
}

impl ModelReport {
    fn of(
        record: &koas_orchestrator::run_record::RunRecord,
        took: std::time::Duration,
        (backend, models): (String, BTreeMap<String, String>),
        endpoint: String,
    ) -> Self {
        let summary = |k: &str| {
            record.kernel(k).map(|k| {
                k.error
                    .clone()
                    .or_else(|| k.skipped_reason.clone())
                    .unwrap_or_else(|| k.summary.clone())
            })
        };
        let reused = |k: &str| {
            record
                .kernel(k)
                .is_some_and(|k| k.cache == koas_orchestrator::run_record::CacheUse::Hit)
        };
        let session = record.llm_session.as_ref();
        let number = |pointer: &str| {
            session
                .and_then(|s| s.pointer(pointer))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let plan: Option<EditPlan> = passes::parse_output(record, EDIT_PLAN, names::EDIT_PLAN).ok();
        let plan_reason = plan
            .as_ref()
            .filter(|p| p.status == EditPlanStatus::Partial)
            .and_then(|p| p.reason.clone());
        let skipped = plan.as_ref().map_or(0, |p| {
            p.chunks
                .iter()
                .filter(|c| c.verdict == ChunkVerdict::Skipped)
                .count()
        });
        let aborted = session
            .and_then(|s| s.get("abort_reason"))
            .filter(|r| !r.is_null())
            .map(|r| match r.as_str() {
                Some(s) => s.to_owned(),
                None => r.to_string(),
            });
        // The session's reason names the failure; a plan stopped by an
        // error that did not abort the session names its own.
        let stopped = aborted.or_else(|| {
            plan_reason
                .as_ref()
                .map(|r| r.split(':').next().unwrap_or(r).trim().to_owned())
        });
        ModelReport {
            run: ReviewModelRun {
                backend,
                models,
                pyramid: summary(PYRAMID).or_else(|| pyramid_line(record)),
                edit_plan: plan_line(record, plan.as_ref()).or_else(|| summary(EDIT_PLAN)),
                calls: number("/calls/backend"),
                cached_calls: number("/calls/cache"),
                tokens: number("/tokens_used"),
                stopped,
                chunks_not_reviewed: skipped as u64,
            },
            seconds: took.as_secs_f64(),
            prompt_tokens: number("/prompt_tokens"),
            reused_prompt_tokens: session
                .and_then(|s| s.get("reused_prompt_tokens"))
                .and_then(Value::as_u64),
            endpoint,
            plan_reason,
            chunks: plan.as_ref().map_or(0, |p| p.chunks.len()),
            proposed: plan.as_ref().map_or(0, |p| p.ops.len() + p.dropped.len()),
            // Without `md_pyramid`, the edit plan's kernel builds the
            // pyramid: reused with it.
            pyramid_reused: reused(PYRAMID)
                || (record.kernel(PYRAMID).is_none() && reused(EDIT_PLAN)),
            edit_plan_reused: reused(EDIT_PLAN),
        }
    }

    /// The error to report when the model server could not be reached
    /// (it stopped answering, or strict sovereignty refused it); `None`
    /// when the model answered, or only a budget stopped it.
    fn unreachable(&self) -> Option<String> {
        let stopped = self.run.stopped.as_deref()?;
        let reason = self.plan_reason.as_deref().unwrap_or(stopped);
        let failed = [
            "TRANSPORT_FAILURE",
            "SOVEREIGNTY",
            "DEADLINE_EXCEEDED",
            "MODEL_MISMATCH",
        ]
        .iter()
        .any(|code| stopped.contains(code) || reason.contains(code));
        if !failed {
            return None;
        }
        let reviewed = self
            .chunks
            .saturating_sub(self.run.chunks_not_reviewed as usize);
        // No server is down: the endpoints disagree, and a re-run as it is
        // would stop the same way. Say so once, with what to change.
        if stopped.contains("MODEL_MISMATCH") || reason.contains("MODEL_MISMATCH") {
            let asked = if reviewed == 0 {
                "no chunk was reviewed".to_owned()
            } else {
                format!(
                    "{reviewed} of {} chunk(s) were reviewed before that; their answers are kept",
                    self.chunks
                )
            };
            return Some(format!(
                "the endpoints {} do not serve the same model (MODEL_MISMATCH)\n  {asked}: no server is down; list only endpoints that serve the model (`koas llm ping` shows what each one serves), or name the model they all serve with --llm-model, then run the review again",
                self.endpoint
            ));
        }
        let kept = if reviewed == 0 {
            "no chunk was reviewed before that: run the review again once the server is back"
                .to_owned()
        } else {
            format!(
                "{reviewed} of {} chunk(s) were reviewed before that; their answers are kept (stage2/ops/, the previous plan, the response cache): run the review again once the server is back and only the other chunks are asked",
                self.chunks
            )
        };
        Some(format!(
            "the model server {} failed: {reason}\n  {kept}",
            self.endpoint
        ))
    }
}
