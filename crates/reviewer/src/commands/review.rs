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
    self, Control, PassFailure, PassInputs, APPLY, EDIT_PLAN, PYRAMID, REVERT, VIEWS,
};
use anyhow::Context as _;
use clap::Args;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_orchestrator::engine::Provided;
use koas_review::edit_op::parse_ops_file;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::apply::ApplyOutcome;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_plan::{ChunkVerdict, EditPlan, EditPlanStatus};
use koas_review_schema::names;
use koas_review_schema::review::{ReviewModelRun, ReviewState};
use koas_review_workspace::{paths, BeginRequest, CommitContext, Follow, ReviewOutcome, RunKind};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, Args)]
#[command(after_help = concat!("\
Examples:
  koas review spec.md                       # with the model of koas.toml's [llm]; else findings only
  koas review spec.md --llm-backend openai --llm-endpoint http://127.0.0.1:8080 --llm-model m --llm-max-in-flight 4
  koas review spec.md --no-llm              # deterministic stages only: findings, no change
  koas review spec.md --ops ops.json        # apply edit ops (the EditOp schema; missing fields get defaults)
  koas review spec.md --ops ops.json --strict --in-place
  koas review spec.md -w /tmp/ws --json

Where ops come from: the model (md_edit_plan reviews every chunk, with the
document's summary from md_pyramid as context), or --ops (a JSON array of
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
    /// (configs/reviewer.toml); its [inputs] doc is replaced by DOC.
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

    /// Do not build the document summary (md_pyramid).
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
        }
    }
}

pub fn execute(global: &HostOptions, args: ReviewArgs) -> anyhow::Result<ExitStatus> {
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
    // The ops file is checked before anything is locked or written, and
    // handed to the engine as read (a FIFO swapped in later is not read).
    let mut ops_bytes: Option<Arc<[u8]>> = None;
    if let Some(ops) = &args.ops {
        // Like the document: a FIFO or a device would hang or fill memory.
        let limit = crate::input::max_doc_bytes(args.target.max_doc_size.as_deref())?;
        let shown = format!("the ops file {}", ops.display());
        let bytes = crate::input::read_document_bytes(ops, &shown, limit, false)?;
        let text = String::from_utf8(bytes)
            .with_context(|| format!("the ops file {} is not UTF-8 text", ops.display()))?;
        parse_ops_file(&text).with_context(|| format!("ops file {}", ops.display()))?;
        ops_bytes = Some(Arc::from(text.into_bytes()));
    }
    target.prepare_writes()?;
    let command = command_line();
    let workspace = &target.workspace;
    let mut run = workspace
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
        .map_err(|e| target.explain(e))?;
    // Stage 1 and 2 describe the document the ops address: the current
    // one. Its text is handed to the engine (see `pass_inputs`) under the
    // path of the file that holds it, so it keys as that file would.
    let mut inputs = vec![("doc".to_owned(), target.current_doc_path())];
    if let Some(ops) = &args.ops {
        inputs.push((names::OPS.to_owned(), ops.clone()));
    }
    let mut pipeline = passes::load(args.pipeline.as_deref(), workspace.root(), inputs)?;
    target.project.apply(&mut pipeline)?;
    passes::require(&pipeline, APPLY, "applies the ops")?;
    passes::set_config(&mut pipeline, APPLY, "strict", Value::Bool(args.strict));
    // The certain fixes of the checks (`koas check --fix`) are changes
    // like any other: IDs, patches, ledger lines.
    passes::set_config(
        &mut pipeline,
        APPLY,
        "check_fixes",
        Value::Bool(!args.no_check_fixes),
    );
    let skip_pyramid = if args.no_llm {
        Some("--no-llm")
    } else if args.skip_pyramid {
        Some("--skip-pyramid")
    } else {
        None
    };
    // After a first review the text read is the workspace's copy: the
    // pyramid is still about the user's document (and an unchanged
    // document's root keeps its input, so it is not asked again).
    passes::set_config(&mut pipeline, PYRAMID, "title", json!(target.doc_name));
    if let Some(reason) = skip_pyramid {
        passes::set_config(&mut pipeline, PYRAMID, "skip", Value::Bool(true));
        passes::set_config(&mut pipeline, PYRAMID, "skip_reason", json!(reason));
    }
    let llm = passes::review_llm(
        &pipeline,
        &target.doc_path,
        &args.llm,
        args.tutor_model.as_deref(),
        args.no_llm,
        global.quiet,
    )?;
    // Ops from a file replace the model's plan.
    let skip_plan = if args.no_llm {
        Some("--no-llm")
    } else if args.ops.is_some() {
        Some("--ops given")
    } else {
        None
    };
    if let Some(reason) = skip_plan {
        passes::set_config(&mut pipeline, EDIT_PLAN, "skip", Value::Bool(true));
        passes::set_config(&mut pipeline, EDIT_PLAN, "skip_reason", json!(reason));
    }
    if let Some(llm) = &llm {
        if let Some(tutor) = &llm.tutor_model {
            passes::set_config(&mut pipeline, EDIT_PLAN, "tutor_model", json!(tutor));
        }
        // One batch keeps every slot of the server busy.
        passes::set_config(
            &mut pipeline,
            EDIT_PLAN,
            "batch_size",
            json!(llm.max_in_flight.max(8)),
        );
    }
    let discovery = passes::discover(global, &pipeline);

    // Planning pass.
    let mut planning = passes::subset(&pipeline, |k| k != REVERT && !VIEWS.contains(&k));
    // What the ledger already holds, by effect: nothing is recorded twice.
    let effects = koas_review::known::ledger_effects(run.entries(), |path| {
        std::fs::read_to_string(workspace.path(path)).ok()
    });
    let mut state = ReviewState {
        doc_name: run.meta().doc_name.clone(),
        next_id: run.next_id(),
        ledger_ids: run.ledger_ids(),
        original_hash: run.meta().original_hash.clone(),
        reverted: effects.reverted,
        applied: effects.applied,
        flags: effects.flags,
    };
    // A planning pass that failed: told, and nothing is recorded.
    let nothing_recorded =
        |failure| report_failure(failure, "nothing was recorded", workspace.root(), false);
    // The certain fixes of the checks go first, in a pass of their own,
    // and the model reads the text they leave: otherwise a re-run would
    // find the fixed lines new and ask the model about them again.
    let mut fixes: Option<ApplyOutcome> = None;
    let mut text = run.current_text().to_owned();
    if llm.is_some()
        && skip_plan.is_none()
        && !args.no_check_fixes
        && passes::has(&planning, EDIT_PLAN)
    {
        let outcome = match certain_fixes(global, control, &planning, &discovery, &text, &state)? {
            Ok(outcome) => outcome,
            Err(failure) => return Ok(nothing_recorded(failure)),
        };
        text = outcome.batch.final_text.clone();
        state.next_id = outcome.batch.next_id;
        state
            .ledger_ids
            .extend(outcome.batch.applied.iter().map(|a| a.op.id));
        // The model's pass reads the fixed text as the document, handed
        // as bytes under the current document's path (kernels that keep
        // their previous results find them by kernel, not by path: a
        // re-run that reads the same text asks nothing).
        passes::set_config(&mut planning, APPLY, "check_fixes", Value::Bool(false));
        fixes = Some(outcome);
    }
    let mut pass = pass_inputs(&text, &state)?;
    if let Some(ops) = ops_bytes {
        pass.sources.insert(names::OPS.to_owned(), ops);
    }
    let has_llm = llm.is_some();
    let described = llm.as_ref().map(|l| (l.models(), l.endpoint.clone()));
    pass.llm = llm;
    let started = std::time::Instant::now();
    let (_, result) = passes::run_pass(global, control, &planning, &discovery, pass)?;
    let planned = match result {
        Ok(outcome) => outcome,
        Err(failure) => return Ok(nothing_recorded(failure)),
    };
    let outcome: ApplyOutcome = passes::parse_output(&planned.record, APPLY, names::APPLY_OUTCOME)?;
    // What the model's kernels did, shown when a model was configured.
    let model = described.map(|(models, endpoint)| {
        ModelReport::of(&planned.record, started.elapsed(), models, endpoint)
    });
    if control.interrupted() {
        let message = "interrupted before the changes were recorded; nothing was recorded";
        eprintln!("koas: {message}");
        return Ok(Reply::failed(
            ExitStatus::Interrupted,
            message,
            workspace.root(),
        ));
    }
    // A server that stopped answering is a failed review, not a smaller
    // one: nothing is recorded, and the next run asks only the chunks
    // that got no answer (the others are in the previous plan and the
    // response cache).
    if let Some(failure) = model
        .as_ref()
        .filter(|_| skip_plan.is_none())
        .and_then(|m| m.unreachable())
    {
        let consequence = "nothing was recorded: the document and the ledger are unchanged";
        eprintln!("error: {failure}\n  ({consequence})");
        return Ok(Reply::failed(
            REFUSED,
            &format!("{failure} ({consequence})"),
            workspace.root(),
        ));
    }

    // An --in-place run marks its write as pending before it records
    // anything: killed or refused by a full disk after the ledger is
    // saved, `koas status` can tell the document is behind by that.
    // A run that does not write DOC clears an old mark.
    if args.in_place {
        workspace
            .begin_in_place(&target.doc_path, clock())
            .with_context(|| format!("review workspace {}", workspace.root().display()))?;
    } else {
        workspace
            .end_in_place()
            .with_context(|| format!("review workspace {}", workspace.root().display()))?;
    }

    // Commit: replayed and checked, then written in the crash-safe order;
    // the certain fixes first, the text the model's ops address after.
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

    // What the command answers is taken from the commit now and the
    // commit dropped: on a large review its batch, ledger entries and log
    // records are hundreds of MB that the views pass does not need.
    let no_ops = args.ops.is_none() && !has_llm;
    let rebased = run.rebased().to_vec();
    let run_model = model.as_ref().map(|m| m.run.clone());
    let answered = answer(args, target, &committed, no_ops, model, &rebased, wanted)?;
    drop(committed);

    // Views.
    let notice = no_ops.then(|| {
        "No model is configured and no ops were given: the deterministic stages ran and no change was made. Configure a model (an [llm] table in koas.toml, or --llm-backend/--llm-endpoint/--llm-model) or give edit ops with `koas review DOC --ops FILE`.".to_owned()
    });
    let views = match passes::run_views_with_model(
        global, control, &pipeline, &discovery, &run, notice, run_model,
    ) {
        Ok(views) => views,
        Err(failure) => {
            eprintln!(
                "koas: the changes are recorded, but the report and annotated document could not be refreshed"
            );
            return Ok(report_failure(
                failure,
                "DOC was not replaced",
                workspace.root(),
                true,
            ));
        }
    };
    if args.in_place {
        if let Err(e) = run.replace_in_place(&target.doc_path) {
            return Err(target.not_written(e));
        }
        if let Err(e) = workspace.end_in_place() {
            eprintln!("koas: {} was replaced, but: {e}", target.doc_path.display());
        }
    }
    let report = views.report.clone();
    drop(run);
    // Older document versions' artifacts are no longer needed: keep the
    // workspace a small multiple of the document however many reviews.
    control.collect_caches(global);
    Ok(answered.with_report(args, target, report))
}

/// What a planning pass is given: the text the ops address, as the
/// pipeline's `doc` source (read once, by the command, with its guards)
/// and as the host's artifact, and the review state.
fn pass_inputs(text: &str, state: &ReviewState) -> anyhow::Result<PassInputs> {
    let mut pass = PassInputs::default();
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
    planning: &koas_orchestrator::pipeline::Pipeline,
    discovery: &koas_orchestrator::discovery::Discovery,
    text: &str,
    state: &ReviewState,
) -> anyhow::Result<Result<ApplyOutcome, PassFailure>> {
    // Without the model's kernels at all: a skipped run would become the
    // "previous" result they reuse from, and the model's pass would find
    // nothing to reuse.
    let first = passes::subset(planning, |k| k != PYRAMID && k != EDIT_PLAN);
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
    failure: PassFailure,
    consequence: &str,
    workspace: &Path,
    recorded: bool,
) -> Reply {
    let mut reply = match failure {
        PassFailure::Kernel(message) => {
            eprintln!("error: {message}\n  ({consequence})");
            Reply::failed(REFUSED, &format!("{message} ({consequence})"), workspace)
        }
        PassFailure::Interrupted => {
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

fn answer(
    args: &ReviewArgs,
    target: &ReviewTarget,
    out: &ReviewOutcome,
    no_ops: bool,
    model: Option<ModelReport>,
    rebased: &[ChangeId],
    wanted: Wanted,
) -> anyhow::Result<Answer> {
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
        "no model and no ops: deterministic stages only, 0 changes".to_owned()
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
        json!({"status": "completed", "run_id": out.run_id})
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
            if let Some(model) = &model {
                map.insert("model".into(), serde_json::to_value(model)?);
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
        let run = &model.run;
        if let Some(p) = &run.pyramid {
            writeln!(t, "  pyramid:   {p}")?;
        }
        if let Some(p) = &run.edit_plan {
            writeln!(t, "  edit plan: {p}")?;
        }
        let mut names: Vec<&str> = run.models.values().map(String::as_str).collect();
        names.sort_unstable();
        names.dedup();
        writeln!(
            t,
            "  model:     {} ({}): {} calls ({} answered from the cache), {} tokens, {:.1} s",
            names.join(", "),
            run.backend,
            run.calls,
            run.cached_calls,
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
    }
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
    match (applied.first(), applied.last()) {
        (Some(first), Some(last)) if first != last => writeln!(t, "  changes: {first} … {last}")?,
        (Some(first), _) => writeln!(t, "  change:  {first}")?,
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
    let attention = out
        .batch
        .applied
        .iter()
        .filter(|a| a.op.needs_attention)
        .count();
    if attention > 0 {
        writeln!(
            t,
            "  {attention} of them need attention (alert notes in the annotated document)"
        )?;
    }
    writeln!(t, "workspace: {}", ws.display())?;
    Ok(Answer { value, text })
}

/// What the model did during a review, for the summary and the report.
#[derive(Debug, serde::Serialize)]
struct ModelReport {
    /// What the report shows too.
    #[serde(flatten)]
    run: ReviewModelRun,
    /// Wall time of the planning pass.
    seconds: f64,
    /// The server's base URL (for the error when it stopped answering).
    #[serde(skip)]
    endpoint: String,
    /// Why the edit plan stopped, verbatim (it names the endpoint).
    #[serde(skip)]
    plan_reason: Option<String>,
    /// Chunks of the plan.
    #[serde(skip)]
    chunks: usize,
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
                pyramid: summary(PYRAMID),
                edit_plan: summary(EDIT_PLAN),
                calls: number("/calls/backend"),
                cached_calls: number("/calls/cache"),
                tokens: number("/tokens_used"),
                stopped,
                chunks_not_reviewed: skipped as u64,
            },
            seconds: took.as_secs_f64(),
            endpoint,
            plan_reason,
            chunks: plan.as_ref().map_or(0, |p| p.chunks.len()),
        }
    }

    /// The error to report when the model server could not be reached
    /// (it stopped answering, or strict sovereignty refused it); `None`
    /// when the model answered, or only a budget stopped it.
    fn unreachable(&self) -> Option<String> {
        let stopped = self.run.stopped.as_deref()?;
        let reason = self.plan_reason.as_deref().unwrap_or(stopped);
        let failed = ["TRANSPORT_FAILURE", "SOVEREIGNTY", "DEADLINE_EXCEEDED"]
            .iter()
            .any(|code| stopped.contains(code) || reason.contains(code));
        if !failed {
            return None;
        }
        let reviewed = self
            .chunks
            .saturating_sub(self.run.chunks_not_reviewed as usize);
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
