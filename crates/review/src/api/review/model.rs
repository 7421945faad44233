//! What the model did during a review, read from the planning pass's
//! run record.

use crate::passes::{self, EDIT_PLAN, PYRAMID};
use koas_review_schema::edit_plan::{ChunkVerdict, EditPlan, EditPlanStatus};
use koas_review_schema::names;
use koas_review_schema::pyramid::{Glossary, Pyramid};
use koas_review_schema::review::ReviewModelRun;
use serde_json::Value;
use std::collections::BTreeMap;

/// What the model did during a review, for the summary and the report.
#[derive(Debug, serde::Serialize)]
pub(super) struct ModelReport {
    /// What the report shows too.
    #[serde(flatten)]
    pub(super) run: ReviewModelRun,
    /// Wall time of the planning pass.
    pub(super) seconds: f64,
    /// Prompt tokens of the server's answers.
    #[serde(skip)]
    pub(super) prompt_tokens: u64,
    /// Of those, what the server said it reused from its prompt cache;
    /// `None` when it said nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reused_prompt_tokens: Option<u64>,
    /// The server's base URL (for the error when it stopped answering).
    #[serde(skip)]
    pub(super) endpoint: String,
    /// Why the edit plan stopped, verbatim (it names the endpoint).
    #[serde(skip)]
    pub(super) plan_reason: Option<String>,
    /// Chunks of the plan.
    #[serde(skip)]
    pub(super) chunks: usize,
    /// Ops the model's plan holds, dropped proposals included (0: the
    /// model proposed nothing).
    #[serde(skip)]
    pub(super) proposed: usize,
    /// The pyramid and the edit plan came from the cache: this run did
    /// none of their work, and their figures are an earlier run's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) pyramid_reused: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) edit_plan_reused: bool,
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
    pub(super) fn of(
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
    pub(super) fn unreachable(&self) -> Option<String> {
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
