//! `koas review DOC [--ops FILE]`: run the reviewer pipeline on a document
//! in its review workspace and record the changes.
//!
//! Under the workspace lock: Stage 1, Stage 2 and `md_apply_ops` run in a
//! planning pass; the batch it planned is replayed, checked and committed
//! (patches, fsynced ledger, `stage3/doc.edited.md`, apply log); the view
//! pass writes `stage3/doc.REVIEWED.md` and the report; `--in-place`
//! replaces DOC last, only when everything succeeded.

use crate::common::{
    actor, clock, command_line, on_workspace, print_json, review_exit_codes, ReviewTarget,
    WorkspaceArgs, REFUSED,
};
use crate::pipeline::{
    self as passes, PassFailure, PassInputs, APPLY, EDIT_PLAN, PYRAMID, REVERT, VIEWS,
};
use anyhow::Context as _;
use clap::Args;
use koas_orchestrator::cli::run::LlmFlags;
use koas_orchestrator::cli::{ExitStatus, Global};
use koas_orchestrator::outln;
use koas_review::edit_op::parse_ops_file;
use koas_review_schema::apply::ApplyOutcome;
use koas_review_schema::names;
use koas_review_schema::review::ReviewState;
use koas_review_workspace::{paths, BeginRequest, CommitContext, ReviewOutcome, RunKind};
use serde_json::{json, Value};
use std::path::PathBuf;

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

Workspace (.review/<stem>_<hash12>/ next to DOC unless -w): stage1/, stage2/,
stage3/doc.edited.md, stage3/doc.REVIEWED.md, stage3/apply_log.jsonl,
review/ledger.jsonl, review/patches/RVW-NNNN.patch (+ .inverse.patch),
review/REVIEW_<stem>.md.

", review_exit_codes!()))]
pub struct ReviewArgs {
    #[command(flatten)]
    pub target: WorkspaceArgs,

    /// Edit ops to apply (JSON, the §6 EditOp schema).
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

pub fn execute(global: &Global, args: ReviewArgs) -> anyhow::Result<ExitStatus> {
    let _progress = passes::Progress::start(global);
    on_workspace(&args.target, |target| review(global, &args, target))
}

fn review(global: &Global, args: &ReviewArgs, target: &ReviewTarget) -> anyhow::Result<ExitStatus> {
    // The ops file is checked before anything is locked or written.
    if let Some(ops) = &args.ops {
        // Like the document: a FIFO or a device would hang or fill memory.
        let limit = crate::input::max_doc_bytes(args.target.max_doc_size.as_deref())?;
        let shown = format!("the ops file {}", ops.display());
        let bytes = crate::input::read_document_bytes(ops, &shown, limit, false)?;
        let text = String::from_utf8(bytes)
            .with_context(|| format!("the ops file {} is not UTF-8 text", ops.display()))?;
        parse_ops_file(&text).with_context(|| format!("ops file {}", ops.display()))?;
    }
    target.prepare_writes()?;
    let command = command_line();
    let workspace = &target.workspace;
    let mut run = workspace
        .begin(BeginRequest {
            doc_name: &target.doc_name,
            document: Some(&target.text),
            kind: RunKind::Review,
            command: &command,
            clock: clock(),
        })
        .with_context(|| format!("review workspace {}", workspace.root().display()))?;
    // Stage 1 and 2 describe the original document.
    let doc_input = if target.is_original()? {
        target.doc_path.clone()
    } else {
        workspace.path(paths::RAW_DOC)
    };
    let mut inputs = vec![("doc".to_owned(), doc_input)];
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
    let planning = passes::subset(&pipeline, |k| k != REVERT && !VIEWS.contains(&k));
    let state = ReviewState {
        doc_name: run.meta().doc_name.clone(),
        next_id: run.next_id(),
        ledger_ids: run.ledger_ids(),
        original_hash: run.meta().original_hash.clone(),
    };
    let mut pass = PassInputs::default();
    pass.provided.insert(
        names::REVIEW_DOC.to_owned(),
        Value::String(run.current_text().to_owned()),
    );
    pass.provided.insert(
        names::REVIEW_STATE.to_owned(),
        serde_json::to_value(&state)?,
    );
    pass.host_written.insert(names::EDITED_DOC.to_owned());
    let has_llm = llm.is_some();
    pass.llm = llm;
    pass.previous_fallback = passes::earlier_outputs(workspace.root(), &[PYRAMID, EDIT_PLAN]);
    let started = std::time::Instant::now();
    let (_, result) = passes::run_pass(global, &planning, &discovery, pass)?;
    let planned = match result {
        Ok(outcome) => outcome,
        Err(failure) => return Ok(report_failure(failure, "nothing was recorded")),
    };
    let outcome: ApplyOutcome = passes::parse_output(&planned.record, APPLY, names::APPLY_OUTCOME)?;
    // What the model's kernels did, shown when a model was configured.
    let model = has_llm.then(|| ModelReport::of(&planned.record, started.elapsed()));
    if passes::interrupted() {
        eprintln!("koas: interrupted before the changes were recorded; nothing was recorded");
        return Ok(ExitStatus::Interrupted);
    }

    // Commit: replayed and checked, then written in the crash-safe order.
    let options = outcome.options.clone();
    let committed = run
        .commit_review(
            outcome.batch,
            outcome.protected,
            &CommitContext {
                actor: &actor(),
                clock: clock(),
                options: &options,
            },
        )
        .with_context(|| format!("recording the review in {}", workspace.root().display()))?;

    // Views.
    let no_ops = args.ops.is_none() && !has_llm;
    let notice = no_ops.then(|| {
        "No model is configured and no ops were given: the deterministic stages ran and no change was made. Configure a model (an [llm] table in koas.toml, or --llm-backend/--llm-endpoint/--llm-model) or give edit ops with `koas review DOC --ops FILE`.".to_owned()
    });
    let views = match passes::run_views(global, &pipeline, &discovery, &run, notice) {
        Ok(views) => views,
        Err(failure) => {
            eprintln!(
                "koas: the changes are recorded, but the report and annotated document could not be refreshed"
            );
            return Ok(report_failure(failure, "DOC was not replaced"));
        }
    };
    if args.in_place {
        run.replace_in_place(&target.doc_path)
            .with_context(|| format!("replacing {}", target.doc_path.display()))?;
    }
    let report = views.report.clone();
    drop(run);
    print_outcome(args, target, &committed, report, no_ops, model)?;
    Ok(ExitStatus::Success)
}

fn report_failure(failure: PassFailure, consequence: &str) -> ExitStatus {
    match failure {
        PassFailure::Kernel(message) => {
            eprintln!("error: {message}\n  ({consequence})");
            REFUSED
        }
        PassFailure::Interrupted => {
            eprintln!("koas: interrupted ({consequence})");
            ExitStatus::Interrupted
        }
    }
}

fn print_outcome(
    args: &ReviewArgs,
    target: &ReviewTarget,
    out: &ReviewOutcome,
    report: Option<PathBuf>,
    no_ops: bool,
    model: Option<ModelReport>,
) -> anyhow::Result<()> {
    let ws = target.root();
    let applied: Vec<String> = out
        .batch
        .applied
        .iter()
        .filter(|a| a.change.is_some())
        .map(|a| a.op.id.to_string())
        .collect();
    let flagged = out.batch.applied.len() - applied.len();
    // Every guard firing, applied or rejected op alike.
    let mut guards: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for fix in out
        .batch
        .applied
        .iter()
        .flat_map(|a| &a.fixes)
        .chain(out.batch.rejected.iter().flat_map(|r| &r.fixes))
    {
        if fix.name().ends_with("_GUARD") {
            *guards.entry(fix.name()).or_default() += 1;
        }
    }
    let rejected = out.batch.rejected.len();
    let summary = if no_ops {
        "no model and no ops: deterministic stages only, 0 changes".to_owned()
    } else {
        format!(
            "{} ops: {} applied, {flagged} flagged, {rejected} rejected",
            out.batch.applied.len() + rejected,
            applied.len()
        )
    };
    if args.target.json {
        let mut value = out.summary_json();
        if let Some(map) = value.as_object_mut() {
            map.insert("summary".into(), json!(summary));
            map.insert("workspace".into(), json!(ws));
            map.insert("document".into(), json!(target.doc_path));
            map.insert("report".into(), json!(report));
            map.insert("annotated".into(), json!(ws.join(paths::REVIEWED_DOC)));
            map.insert("edited".into(), json!(ws.join(paths::EDITED_DOC)));
            map.insert("in_place".into(), json!(args.in_place));
            map.insert("guards".into(), json!(guards));
            if let Some(model) = &model {
                map.insert("model".into(), serde_json::to_value(model)?);
            }
        }
        return print_json(&value);
    }
    outln!("koas review: {}: {summary}", target.doc_name)?;
    if !guards.is_empty() {
        let list: Vec<String> = guards.iter().map(|(g, n)| format!("{g} {n}")).collect();
        outln!(
            "  guards:    {} fired ({}): those changes need attention or became flags",
            guards.values().sum::<usize>(),
            list.join(", ")
        )?;
    }
    if let Some(model) = &model {
        if let Some(p) = &model.pyramid {
            outln!("  pyramid:   {p}")?;
        }
        if let Some(p) = &model.edit_plan {
            outln!("  edit plan: {p}")?;
        }
        outln!(
            "  model:     {} calls ({} answered from the cache), {} tokens, {:.1} s",
            model.calls,
            model.cached_calls,
            model.tokens,
            model.seconds
        )?;
        if let Some(reason) = &model.stopped {
            outln!("  the model was stopped early: {reason}")?;
        }
    }
    if let Some(recovery) = &out.recovery {
        let ids: Vec<String> = recovery
            .rolled_forward
            .iter()
            .map(|i| i.to_string())
            .collect();
        outln!(
            "  recovered: the document was brought up to date with the ledger ({})",
            ids.join(", ")
        )?;
    }
    if let Some(holder) = &out.took_over {
        outln!("  took over a stale lock of {holder}")?;
    }
    match (applied.first(), applied.last()) {
        (Some(first), Some(last)) if first != last => outln!("  changes: {first} … {last}")?,
        (Some(first), _) => outln!("  change:  {first}")?,
        _ => {}
    }
    for r in &out.batch.rejected {
        outln!(
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
        outln!("  {attention} of them need attention (alert notes in the annotated document)")?;
    }
    outln!("workspace: {}", ws.display())?;
    if let Some(report) = report {
        outln!("report:    {}", report.display())?;
    }
    outln!("annotated: {}", ws.join(paths::REVIEWED_DOC).display())?;
    outln!("edited:    {}", ws.join(paths::EDITED_DOC).display())?;
    if args.in_place {
        outln!("replaced:  {}", target.doc_path.display())?;
    }
    Ok(())
}

/// What the model did during a review, for the summary.
#[derive(Debug, serde::Serialize)]
struct ModelReport {
    /// `md_pyramid`'s one-line summary.
    pyramid: Option<String>,
    /// `md_edit_plan`'s one-line summary.
    edit_plan: Option<String>,
    /// Requests sent to the server.
    calls: u64,
    /// Requests answered from the response cache.
    cached_calls: u64,
    /// Tokens used (prompt and completion).
    tokens: u64,
    /// Why the service stopped asking, if it did (budget spent, server gone).
    stopped: Option<String>,
    /// Wall time of the planning pass.
    seconds: f64,
}

impl ModelReport {
    fn of(record: &koas_orchestrator::run_record::RunRecord, took: std::time::Duration) -> Self {
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
        ModelReport {
            pyramid: summary(PYRAMID),
            edit_plan: summary(EDIT_PLAN),
            calls: number("/calls/backend"),
            cached_calls: number("/calls/cache"),
            tokens: number("/tokens_used"),
            stopped: session
                .and_then(|s| s.get("abort_reason"))
                .filter(|r| !r.is_null())
                .map(|r| match r.as_str() {
                    Some(s) => s.to_owned(),
                    None => r.to_string(),
                }),
            seconds: took.as_secs_f64(),
        }
    }
}
