//! The review's answer: its counts, its JSON and its text.

use super::model::ModelReport;
use super::{ReviewCounts, ReviewRequest, Reviewed};
use crate::common::ReviewTarget;
use koas_review_schema::change_id::ChangeId;
use koas_review_workspace::{paths, ReviewOutcome};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;

/// The command's answer before the views pass: all but the report's path
/// and the lines that follow it.
pub(super) struct Answer {
    value: Value,
    text: String,
    counts: ReviewCounts,
    summary: String,
}

impl Answer {
    /// The reply, with the report the views pass wrote (if any) and the
    /// files the review left.
    pub(super) fn with_report(
        mut self,
        request: &ReviewRequest,
        target: &ReviewTarget,
        report: Option<PathBuf>,
        warnings: Vec<String>,
    ) -> Reviewed {
        let ws = target.root();
        if let Some(map) = self.value.as_object_mut() {
            map.insert("report".into(), json!(report));
        }
        let t = &mut self.text;
        if let Some(report) = &report {
            let _ = writeln!(t, "report:    {}", report.display());
        }
        let _ = writeln!(t, "annotated: {}", ws.join(paths::REVIEWED_DOC).display());
        let _ = writeln!(t, "edited:    {}", ws.join(paths::EDITED_DOC).display());
        if request.in_place {
            let _ = writeln!(t, "replaced:  {}", target.doc_path.display());
        }
        Reviewed {
            counts: self.counts,
            summary: self.summary,
            report,
            warnings,
            value: self.value,
            text: self.text,
        }
    }
}

/// What a `--rebase` recorded before the review: the changes of kind
/// external, and the lines of DOC whose hand edits could not be carried
/// over (they touched lines the review changed since DOC was written).
#[derive(Clone, Copy)]
pub(super) struct Rebase<'a> {
    pub(super) ids: &'a [ChangeId],
    pub(super) overlaps: &'a [String],
}

pub(super) fn answer(
    request: &ReviewRequest,
    target: &ReviewTarget,
    out: &ReviewOutcome,
    no_ops: bool,
    model: Option<ModelReport>,
    rebase: Rebase<'_>,
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
    let guards = koas_report::markdown::guard_counts(&out.batch.log_records(""));
    let rejected = out.batch.rejected.len();
    let known = &out.batch.known;
    let summary = summary_of(request, out, no_ops, applied.len());
    let mut value = if request.whole_json {
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
            map.insert("in_place".into(), json!(request.in_place));
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
    let text = text_of(
        request,
        target,
        out,
        no_ops,
        model.as_ref(),
        rebase,
        &summary,
        &guards,
    )?;
    let counts = ReviewCounts {
        applied: applied.len(),
        flagged,
        rejected,
        known: known.len(),
    };
    Ok(Answer {
        value,
        text,
        counts,
        summary,
    })
}

/// The answer's one line: the ops and what became of them.
fn summary_of(
    request: &ReviewRequest,
    out: &ReviewOutcome,
    no_ops: bool,
    applied: usize,
) -> String {
    let flagged = out.batch.applied.len() - applied;
    let rejected = out.batch.rejected.len();
    let known = &out.batch.known;
    if no_ops {
        format!(
            "{}: deterministic stages only, {} changes",
            if request.no_llm {
                "--no-llm and no ops"
            } else {
                "no model and no ops"
            },
            applied
        )
    } else {
        let mut summary = format!(
            "{} ops: {} applied, {flagged} flagged, {rejected} rejected",
            out.batch.applied.len() + rejected + known.len(),
            applied
        );
        if !known.is_empty() {
            summary.push_str(&format!(", {} already in the ledger", known.len()));
        }
        summary
    }
}

/// The answer in words: the summary line, what the rebase and the guards
/// did, the model's work, what was recorded, and a hint when no change
/// came of it.
#[allow(clippy::too_many_arguments)]
fn text_of(
    request: &ReviewRequest,
    target: &ReviewTarget,
    out: &ReviewOutcome,
    no_ops: bool,
    model: Option<&ModelReport>,
    rebase: Rebase<'_>,
    summary: &str,
    guards: &std::collections::BTreeMap<&str, usize>,
) -> Result<String, std::fmt::Error> {
    let mut text = String::new();
    let t = &mut text;
    let (rebased, ws) = (rebase.ids, target.root());
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
    if let Some(model) = model {
        model_lines(t, model)?;
    }
    outcome_lines(t, out)?;
    if no_ops && request.no_llm {
        writeln!(
            t,
            "  note:      --no-llm: no model was asked; the deterministic stages ran (drop --no-llm to have the configured model propose changes, or give edit ops with --ops FILE)"
        )?;
    } else if no_ops {
        writeln!(
            t,
            "  hint:      no model is configured: add an [llm] table to koas.toml next to the document (backend, endpoint, model; README \"Review with a local model\"), check it with `koas llm ping`, or give your own edit ops with --ops FILE"
        )?;
    } else if let Some(model) = model.filter(|m| {
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
    Ok(text)
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
            koas_edit::known::describe(known)
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
    let counts = koas_edit::query::count(&out.entries);
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
