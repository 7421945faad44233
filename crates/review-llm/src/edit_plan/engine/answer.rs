//! An answer's outcome: placing its ops, or the next step after a degenerate
//! answer or a tutor's verdict.

use super::*;

/// Asks the chunk again at temperature `to`, recorded as a `retry`.
pub(super) fn warmer(job: &mut Job, to: f64, why: &str) {
    let from = job.temperature;
    job.temperature = Some(to);
    escalate(
        job,
        "retry",
        from.map_or("temperature=configured".to_owned(), |t| {
            format!("temperature={t:.2}")
        }),
        format!("temperature={to:.2}"),
        why.to_owned(),
    );
}

pub(super) fn escalate(job: &mut Job, policy: &str, from: String, to: String, reason: String) {
    job.status.adaptive_escalation.push(AdaptiveEscalation {
        policy: policy.to_owned(),
        from,
        to,
        reason,
    });
    job.status.retries += 1;
}

pub(super) fn advance(
    job: &mut Job,
    answer: Result<ModelAnswer, ModelError>,
    input: &PlanInput<'_>,
    options: &PlanOptions,
    doc: &DocLines<'_>,
    index: &[(u32, u32, &str)],
) -> Result<(), PlanError> {
    let step = job.step.clone();
    if step == Step::Tutor {
        job.status.tutor_calls += 1;
    } else {
        job.status.worker_calls += 1;
    }
    let answer = match answer {
        Ok(a) => a,
        Err(e) => {
            if step == Step::Tutor {
                tutor_failed(job, &e.message);
                job.status.error = Some(e.message);
            } else {
                skip(job, &e.message);
            }
            return Ok(());
        }
    };
    job.status.t_request_ms += answer.elapsed_ms;
    job.status.completion_tokens += answer.completion_tokens;
    job.attempts += 1;
    let name = match (&step, job.attempts) {
        (Step::Tutor, _) => format!("{}.tutor.raw.txt", job.piece.id),
        (_, 1) => format!("{}.raw.txt", job.piece.id),
        (_, n) => format!("{}.attempt{n}.raw.txt", job.piece.id),
    };
    job.raw.push((name, answer.text.clone()));
    if step == Step::Tutor {
        return on_tutor(job, &answer.text, input, options, doc, index);
    }
    let ladder = extract_edit_ops(&answer.text);
    job.status.method = ladder.method.as_str().to_owned();
    job.status.parse_success = ladder.method.succeeded();
    job.status.stopped_at_marker = answer.stopped_at_marker;
    if let Some(why) = degenerate(&answer, &ladder, answer_cap(job, options)) {
        if let Step::Regenerate(_) = step {
            job.status.verdict = ChunkVerdict::Rejected;
            job.step = Step::Done;
            return Ok(());
        }
        if job.recipe_degenerate_after.is_some() {
            job.recipe_degenerate_after = Some(true);
        }
        return on_degenerate(job, why, options);
    }
    if job.recipe_degenerate_after.is_some() {
        job.recipe_degenerate_after = Some(false);
    }
    job.status.degenerate = false;
    // Policy B: nothing proposed where the checks found something. Ops
    // refused for a wrong type were proposed: they are dropped like ops
    // placement refuses, not asked again.
    let proposed = ladder.ops.len() + ladder.rejected_items.len();
    if proposed == 0 && step == Step::Worker && policy_b(job, options) {
        return Ok(());
    }
    job.status.ops_proposed += u32::try_from(proposed).unwrap_or(u32::MAX);
    let placed = place_all(job, &ladder, None, input, options, doc, index);
    match step {
        Step::Regenerate(_) => {
            job.result = placed;
            job.status.verdict = ChunkVerdict::Regenerated;
            job.step = Step::Done;
        }
        _ if options.tutor_model.is_some() && !placed.is_empty() => {
            job.proposals = placed;
            job.step = Step::Tutor;
        }
        _ => {
            job.status.verdict = if proposed == 0 {
                ChunkVerdict::Empty
            } else if placed.is_empty() {
                ChunkVerdict::Filtered
            } else {
                ChunkVerdict::SingleModel
            };
            job.result = placed;
            job.step = Step::Done;
        }
    }
    Ok(())
}

/// Policy B for an answer that proposed nothing where the checks found
/// something: the chunk is asked again with more context, once. `true`
/// when it is.
fn policy_b(job: &mut Job, options: &PlanOptions) -> bool {
    let more_context = !job.findings.is_empty()
        && !job.tried[1]
        && job.tier < Tier::Full
        && compute_tier(
            estimate_tokens(&job.masked.text),
            options.context_budget,
            job.tier.up(),
        ) != Tier::Skeleton;
    if !more_context {
        return false;
    }
    job.tried[1] = true;
    let from = job.tier;
    job.tier = job.tier.up();
    job.status.tier = job.tier.number();
    escalate(
        job,
        "B",
        format!("tier={}", from.number()),
        format!("tier={}", job.tier.number()),
        format!(
            "no op proposed but {} finding(s) in the chunk",
            job.findings.len()
        ),
    );
    true
}

/// Places every proposal of a ladder outcome; the dropped ones are
/// recorded on the job.
pub(super) fn place_all(
    job: &mut Job,
    ladder: &LadderOutcome,
    masked: Option<&Masked>,
    input: &PlanInput<'_>,
    options: &PlanOptions,
    doc: &DocLines<'_>,
    index: &[(u32, u32, &str)],
) -> Vec<Placed> {
    let view = PieceView {
        id: &job.piece.id,
        anchor: &job.anchor,
        line_start: job.piece.line_start,
        line_end: job.piece.line_end,
        text: &job.text,
        projection: job.stripped.as_ref().map(|(_, p)| p.as_str()),
    };
    let masked = masked.unwrap_or(&job.masked);
    // Ops the ladder refused (a field of the wrong type) are proposals
    // too: recorded, never lost without a trace.
    for item in &ladder.rejected_items {
        job.dropped.push(DroppedProposal {
            chunk_id: job.piece.id.clone(),
            action: item.action.clone().unwrap_or_default(),
            before_text: item
                .before_text
                .as_deref()
                .map(|b| masked.unmask(b))
                .filter(|b| !b.is_empty()),
            reason: "wrong_type".to_owned(),
            detail: masked.unmask(&format!(
                "{} (item {} of the answer's list)",
                item.reason, item.index
            )),
        });
    }
    let mut placed = Vec::new();
    for raw in &ladder.ops {
        match place(raw, masked, &view, doc, index, input.spans, &options.policy) {
            Placement::Op(p) => placed.push(*p),
            Placement::Dropped(d) => job.dropped.push(d),
        }
    }
    placed
}

pub(super) fn on_degenerate(
    job: &mut Job,
    why: &str,
    options: &PlanOptions,
) -> Result<(), PlanError> {
    job.status.degenerate = true;
    // Empty answers: ask again, warmer.
    if why == "empty_response" && job.empty_retries < options.empty_retries {
        job.empty_retries += 1;
        warmer(job, f64::from(10 + 5 * job.empty_retries) / 100.0, why);
        return Ok(());
    }
    // Policy A: less context.
    if job.tier > Tier::Skeleton && !job.tried[0] {
        job.tried[0] = true;
        let from = job.tier;
        job.tier = Tier::Skeleton;
        job.status.tier = 0;
        escalate(
            job,
            "A",
            format!("tier={}", from.number()),
            "tier=0".to_owned(),
            why.to_owned(),
        );
        return Ok(());
    }
    // Policy C: a content recipe, when the fingerprint explains it.
    if !job.tried[2] && options.recipes.enabled {
        job.tried[2] = true;
        if let Some(fp) = job.fingerprint.filter(|f| f.triggers_recipe) {
            let recipe = apply_recipe(&job.base, &options.recipes);
            if !recipe.transforms.is_empty() {
                let triggers = fp.triggers.join(", ");
                let delta = token_delta(&job.masked.text, &recipe.text);
                job.status.recipe = recipe.transforms.clone();
                write_recipe_masks(job, &recipe, delta, &triggers);
                job.masked = recipe;
                job.recipe_degenerate_after = Some(true);
                escalate(
                    job,
                    "C",
                    "recipe=none".to_owned(),
                    format!("recipe={}", job.status.recipe.join("+")),
                    format!("{why}; fingerprint triggers: {triggers}"),
                );
                return Ok(());
            }
        }
    }
    // Policy D: strip the markdown left after the recipe.
    if job.tried[2] && !job.status.recipe.is_empty() && !job.tried[3] && options.md_strip {
        job.tried[3] = true;
        let density = Density::of(&job.masked.text);
        if density.exceeded() {
            let stripped = markdown_strip(&job.masked.text);
            let projection = job.masked.unmask(&stripped);
            job.masks
                .push((format!("{}_MDSTRIP_0.txt", job.piece.id), stripped.clone()));
            job.masks.push((
                format!("{}_MDSTRIP_0.recipe.json", job.piece.id),
                pretty(&json!({"density": density, "token_delta": token_delta(&job.masked.text, &stripped)})),
            ));
            job.stripped = Some((stripped, projection));
            job.status.recipe.push("markdown_strip".to_owned());
            escalate(
                job,
                "D",
                "markdown".to_owned(),
                "plain_text".to_owned(),
                format!("{why} after the content recipe; markdown density {density:?}"),
            );
            return Ok(());
        }
    }
    // Nothing left to try.
    job.status.verdict = ChunkVerdict::Degenerate;
    job.exemplar = Some(json!({
        "chunk_id": job.piece.id,
        "parent_chunk_id": job.parent,
        "lines": [job.piece.line_start, job.piece.line_end],
        "text": job.text,
        "fingerprint": job.fingerprint,
        "tier_history": job.status.adaptive_escalation,
        "extraction_method": job.status.method,
        "reason": why,
        "recipes": job.status.recipe,
    }));
    job.step = Step::Done;
    Ok(())
}

/// A placeholder every prompt of the chunk has (math, protected blocks),
/// not one of the content recipe's.
pub(super) fn is_base(p: &Placeholder) -> bool {
    p.transform == "math_mask" || p.transform == PROTECTED
}

pub(super) fn write_recipe_masks(job: &mut Job, recipe: &Masked, delta: i64, triggers: &str) {
    let id = job.piece.id.clone();
    let mut emoji = BTreeMap::new();
    let mut synonyms = BTreeMap::new();
    for p in recipe.mapping.iter().filter(|p| !is_base(p)) {
        let file = match p.transform.as_str() {
            "emoji_mask" => {
                emoji.insert(p.token.clone(), p.original.clone());
                continue;
            }
            "synonym_map" => {
                synonyms.insert(p.token.clone(), p.original.clone());
                continue;
            }
            _ => {
                let name = p.token.trim_matches(['[', ']']);
                // QUOTE_BLOCK_0 → QUOTE_0, as the seed names them.
                let short = name.replacen("_BLOCK", "", 1);
                format!("{id}_{short}.md")
            }
        };
        job.masks.push((file, p.original.clone()));
    }
    if !emoji.is_empty() {
        job.masks
            .push((format!("{id}_EMOJI.json"), pretty(&json!(emoji))));
    }
    if !synonyms.is_empty() {
        job.masks
            .push((format!("{id}_SYNONYMS.json"), pretty(&json!(synonyms))));
    }
    let keys: Vec<&str> = recipe
        .mapping
        .iter()
        .filter(|p| !is_base(p))
        .map(|p| p.token.as_str())
        .collect();
    job.masks.push((
        format!("{id}_recipe.json"),
        pretty(&json!({
            "chunk_id": id,
            "triggers": triggers,
            "transforms": recipe.transforms,
            "mapping_keys": keys,
            "token_delta": delta,
        })),
    ));
}

pub(super) fn tutor_failed(job: &mut Job, why: &str) {
    for p in job.proposals.drain(..) {
        job.dropped.push(DroppedProposal {
            chunk_id: job.piece.id.clone(),
            action: p.op.action.as_str().to_owned(),
            before_text: p.op.before_text.clone(),
            reason: "tutor_failed".to_owned(),
            detail: why.to_owned(),
        });
    }
    job.result.clear();
    job.status.verdict = ChunkVerdict::TutorFailed;
    job.status.verdict_reason = Some(why.to_owned());
    job.step = Step::Done;
}

pub(super) fn on_tutor(
    job: &mut Job,
    text: &str,
    input: &PlanInput<'_>,
    options: &PlanOptions,
    doc: &DocLines<'_>,
    index: &[(u32, u32, &str)],
) -> Result<(), PlanError> {
    match parse_verdict(text) {
        None => {
            tutor_failed(job, "the tutor gave no VERDICT line");
        }
        Some(TutorVerdict::Accepted { reason }) => {
            job.result = std::mem::take(&mut job.proposals);
            job.status.verdict = ChunkVerdict::Accepted;
            job.status.verdict_reason = Some(reason).filter(|r| !r.is_empty());
            job.step = Step::Done;
        }
        Some(TutorVerdict::Corrected { reason, correction }) => {
            let ladder = extract_edit_ops(&correction);
            if !ladder.method.succeeded() {
                tutor_failed(job, "the tutor's correction could not be read");
                return Ok(());
            }
            // The tutor saw the real text: nothing to unmask.
            let plain = Masked::default();
            let placed = place_all(job, &ladder, Some(&plain), input, options, doc, index);
            job.proposals.clear();
            job.result = placed;
            job.status.verdict = ChunkVerdict::Corrected;
            job.status.verdict_reason = Some(reason).filter(|r| !r.is_empty());
            job.step = Step::Done;
        }
        Some(TutorVerdict::Rejected { reason }) => {
            for p in job.proposals.drain(..) {
                job.dropped.push(DroppedProposal {
                    chunk_id: job.piece.id.clone(),
                    action: p.op.action.as_str().to_owned(),
                    before_text: p.op.before_text.clone(),
                    reason: "tutor_rejected".to_owned(),
                    detail: reason.clone(),
                });
            }
            job.status.verdict = ChunkVerdict::Rejected;
            job.status.verdict_reason = Some(reason.clone()).filter(|r| !r.is_empty());
            job.status.retries += 1;
            job.step = Step::Regenerate(reason);
        }
    }
    Ok(())
}
