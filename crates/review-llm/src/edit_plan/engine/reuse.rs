//! Statistics, and the reuse of an unchanged chunk's previous result.

use super::*;

/// Adds a finished request (its ops already counted) to the statistics.
pub(super) fn count(stats: &mut EditPlanStats, job: &Job<'_>) {
    let s = &job.status;
    stats.chunks += u32::try_from(s.members.len().max(1)).unwrap_or(u32::MAX);
    stats.requests += 1;
    if s.reused {
        stats.reused += u32::try_from(s.members.len().max(1)).unwrap_or(u32::MAX);
    }
    if !s.reused {
        stats.worker_calls += s.worker_calls;
        stats.tutor_calls += s.tutor_calls;
        stats.completion_tokens += s.completion_tokens;
    }
    stats.ops_proposed += s.ops_proposed;
    stats.parse_success += u32::from(s.parse_success);
    stats.degenerate += u32::from(s.degenerate);
    if !s.recipe.is_empty() {
        stats.recipe_applied += 1;
        if job.recipe_degenerate_after == Some(false) {
            stats.recipe_recovered += 1;
        }
    }
    *stats.methods.entry(s.method.clone()).or_default() += 1;
    *stats
        .verdicts
        .entry(s.verdict.as_str().to_owned())
        .or_default() += 1;
    for e in &s.adaptive_escalation {
        *stats.escalations.entry(e.policy.clone()).or_default() += 1;
    }
}

pub(super) fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// What turns a model's answer into a chunk's result (the extraction
/// ladder, placement, the drop rules). Bumped when they change, so a chunk
/// result of an older rule is not reused; the model's answers themselves
/// stay in the answer cache and are read again at no cost.
pub(super) const RESULT_RULES: &str = "koas-edit-plan-v3";

/// The key of everything a chunk's result depends on.
pub(super) fn incremental_key(job: &Job, options: &PlanOptions, first_prompt: &str) -> String {
    let t = &options.templates;
    let settings = json!({
        "tutor": options.tutor_model,
        "max_edit_chunk_tokens": options.max_edit_chunk_tokens,
        "max_tokens": options.max_tokens,
        "empty_retries": options.empty_retries,
        "recipes": options.recipes,
        "md_strip": options.md_strip,
        "triggers": job.fingerprint.map(|f| (f.triggers_recipe, f.triggers.clone())),
    })
    .to_string();
    sha256_of_parts([
        RESULT_RULES,
        "\0",
        options.model.as_str(),
        "\0",
        t.review.hash.as_str(),
        t.review_plain.hash.as_str(),
        t.regenerate.hash.as_str(),
        t.tutor_validate.hash.as_str(),
        "\0",
        settings.as_str(),
        "\0",
        job.text.as_str(),
        "\0",
        first_prompt,
    ])
}

/// Takes the chunk's result from the previous plan when its key matches.
pub(super) fn reuse(
    job: &mut Job,
    previous: Option<&koas_review_schema::edit_plan::EditPlan>,
) -> bool {
    let Some(previous) = previous else {
        return false;
    };
    let Some(old) = previous.chunks.iter().find(|c| {
        c.chunk_id == job.piece.id
            && c.incremental_key == job.key
            && c.verdict != ChunkVerdict::Skipped
            && c.error.is_none()
    }) else {
        return false;
    };
    let shift = i64::from(job.piece.line_start) - i64::from(old.line_start);
    let moved = |line: usize| usize::try_from(line as i64 + shift).unwrap_or(line);
    let ours = |id: &str| id == job.piece.id || job.members.iter().any(|m| m.chunk_id == id);
    for op in previous.ops.iter().filter(|o| ours(&o.target.chunk_id)) {
        let mut op = op.clone();
        op.target.line_start = moved(op.target.line_start);
        op.target.line_end = moved(op.target.line_end);
        let note = note_message(&op);
        job.result.push(Placed {
            op,
            note,
            downgraded: false,
        });
    }
    job.dropped.extend(
        previous
            .dropped
            .iter()
            .filter(|d| d.chunk_id == job.piece.id)
            .cloned(),
    );
    let mut status = old.clone();
    status.line_start = job.piece.line_start;
    status.line_end = job.piece.line_end;
    status.reused = true;
    status.latency_ms = 0;
    status.t_request_ms = 0;
    job.status = status;
    job.masks.clear();
    job.step = Step::Done;
    true
}

pub(super) fn skip(job: &mut Job, reason: &str) {
    job.step = Step::Done;
    job.status.verdict = ChunkVerdict::Skipped;
    job.status.error = Some(reason.to_owned());
    job.result.clear();
    job.proposals.clear();
}
