//! A job's prompt and model request, and the tests for a degenerate answer.

use super::*;

/// The prompt of the job's current step rendered from `template`.
pub(super) fn prompt(
    job: &Job,
    input: &PlanInput<'_>,
    summaries: Summaries<'_>,
    options: &PlanOptions,
    template: &Template,
    reason: &str,
) -> Result<String, PlanError> {
    let shown = match &job.stripped {
        Some((stripped, _)) => stripped.as_str(),
        None => job.masked.text.as_str(),
    };
    let context = assemble(&ContextInput {
        chunk: shown,
        section_id: &job.section_id,
        instructions: &template.text,
        pyramid: summaries.pyramid,
        findings: &job.findings,
        glossary: input.glossary,
        budget: options.context_budget,
        tier: job.tier,
    });
    let part = |k: PartKind| context.text(k).unwrap_or_default().to_owned();
    let (numbered_lines, line_count) = numbered(shown, &job.masked);
    let proposals = if job.step == Step::Tutor {
        proposals_json(job)
    } else {
        String::new()
    };
    let (numbered_lines, line_count) = if job.step == Step::Tutor {
        // The tutor judges the real text.
        numbered(&job.text, &Masked::default())
    } else {
        (numbered_lines, line_count)
    };
    let values = PromptValues {
        language: options.language.name(),
        language_code: options.language.code(),
        chunk_id: &job.piece.id,
        tier: job.tier.number(),
        numbered_lines,
        line_count,
        abstract_: part(PartKind::Abstract),
        section: part(PartKind::Section),
        subsection: part(PartKind::Subsection),
        siblings: part(PartKind::Siblings),
        findings: part(PartKind::Findings),
        glossary: part(PartKind::Glossary),
        has_placeholders: !job.masked.mapping.is_empty(),
        reason,
        proposals,
    };
    Ok(render(&template.name, &template.text, &values)?)
}

pub(super) fn proposals_json(job: &Job) -> String {
    let items: Vec<serde_json::Value> = job
        .proposals
        .iter()
        .map(|p| {
            let o = &p.op;
            json!({
                "action": o.action.as_str(),
                "line": o.target.line_start as i64 - i64::from(job.piece.line_start) + 1,
                "before_text": o.before_text,
                "after_text": o.after_text,
                "kind": o.kind,
                "severity": o.severity,
                "rationale": o.rationale,
            })
        })
        .collect();
    serde_json::to_string_pretty(&items).unwrap_or_default()
}

pub(super) fn request(
    job: &Job,
    input: &PlanInput<'_>,
    summaries: Summaries<'_>,
    options: &PlanOptions,
) -> Result<ModelRequest, PlanError> {
    let t = &options.templates;
    let (role, text) = match &job.step {
        Step::Tutor => (
            ModelRole::Tutor,
            prompt(job, input, summaries, options, &t.tutor_validate, "")?,
        ),
        Step::Regenerate(reason) => (
            ModelRole::Worker,
            prompt(job, input, summaries, options, &t.regenerate, reason)?,
        ),
        _ => {
            let template = if job.plain {
                &t.review_plain
            } else {
                &t.review
            };
            (
                ModelRole::Worker,
                prompt(job, input, summaries, options, template, "")?,
            )
        }
    };
    let structured = role == ModelRole::Worker && !job.plain;
    // Headings the prompt holds and the document's text does not: an
    // op may quote the document, never the prompt's framing.
    let echoes = match role {
        ModelRole::Worker => ECHOES
            .iter()
            .filter(|e| text.contains(**e) && !job.text.contains(**e))
            .map(|e| (*e).to_owned())
            .collect(),
        ModelRole::Tutor => Vec::new(),
    };
    Ok(ModelRequest {
        chunk_id: job.piece.id.clone(),
        role,
        prompt: text,
        temperature: job.temperature,
        max_tokens: answer_cap(job, options),
        stop_marker: structured.then(|| END_MARKER.to_owned()),
        // The ops list closed is the whole answer: a model that never
        // writes the end marker does not run on to the cap.
        complete_after: structured.then(|| BEGIN_MARKER.to_owned()),
        echoes,
        prose_until: structured.then_some(PROSE_ANSWER_CHARS),
    })
}

/// The most tokens an answer about this chunk may take: ops quote the
/// chunk's text (before and after), so about twice its size plus room
/// for the fields, within the configured ceiling. A 60-token section does
/// not need a 1,024-token answer.
pub(super) fn answer_cap(job: &Job, options: &PlanOptions) -> u32 {
    let chunk = estimate_tokens(&job.masked.text);
    chunk
        .saturating_mul(2)
        .saturating_add(ANSWER_OVERHEAD)
        .clamp(
            MIN_ANSWER_TOKENS.min(options.max_tokens),
            options.max_tokens,
        )
}

/// Room for an answer's fields beyond the quoted text.
pub(super) const ANSWER_OVERHEAD: u32 = 192;
/// The smallest cap: a few ops with short quotes.
pub(super) const MIN_ANSWER_TOKENS: u32 = 256;

/// A request identical to one already sent for the chunk would be answered
/// from the cache with the same unusable answer: it is nudged warmer, and
/// the escalation says so.
pub(super) fn differ_from_earlier(job: &mut Job, next: &mut ModelRequest) {
    let hash = sha256_of_parts([next.prompt.as_str()]);
    let same = |job: &Job, t: Option<f64>| {
        job.asked
            .iter()
            .any(|(h, at, cap)| *h == hash && *at == t && *cap == next.max_tokens)
    };
    if same(job, next.temperature) {
        let from = next.temperature;
        let mut to = from.unwrap_or(0.0);
        while same(job, Some(to)) || Some(to) == from {
            to = ((to + 0.15) * 100.0).round() / 100.0;
        }
        next.temperature = Some(to);
        warmer(job, to, "the same request again would get the same answer");
    }
    job.asked.push((hash, next.temperature, next.max_tokens));
}

/// Why a worker answer is unusable, if it is.
pub(super) fn degenerate(
    answer: &ModelAnswer,
    ladder: &LadderOutcome,
    max_tokens: u32,
) -> Option<&'static str> {
    match ladder.method {
        ExtractionMethod::EmptyResponse if answer.completion_tokens == 0 => Some("empty_response"),
        ExtractionMethod::EmptyResponse => Some("decoded_empty_saturated"),
        ExtractionMethod::Failed => Some("unparseable"),
        ExtractionMethod::FreeformSalvage
            if answer.completion_tokens >= u64::from(max_tokens)
                && !answer.stopped_at_marker
                && !ladder.no_changes =>
        {
            Some("token_budget_burnt")
        }
        // Prose now ends at a sentence end past a few hundred characters
        // (the host's prose rule): a loop shows as a sentence written
        // again, where before it ran on to the cap.
        ExtractionMethod::FreeformSalvage
            if !answer.stopped_at_marker
                && !ladder.no_changes
                && repeats_a_sentence(&answer.text) =>
        {
            Some("repeated_sentence")
        }
        _ => None,
    }
}

/// Whether `text` writes one sentence (20 non-blank characters or more,
/// whitespace collapsed) twice.
pub(super) fn repeats_a_sentence(text: &str) -> bool {
    let mut seen = HashSet::new();
    text.split_inclusive(['.', '!', '?', '\n'])
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| s.chars().filter(|c| !c.is_whitespace()).count() >= 20)
        .any(|s| !seen.insert(s))
}
