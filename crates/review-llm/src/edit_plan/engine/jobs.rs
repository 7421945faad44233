//! The planner's jobs: one per unit of chunks, with the lines it shows the
//! model.

use super::*;

/// What a finished chunk tells the breakers: its prompt and whether its
/// answer was read; `None` for a chunk reused or skipped.
pub(super) fn outcome(job: &Job<'_>) -> Option<(bool, bool)> {
    if job.status.reused || job.status.verdict == ChunkVerdict::Skipped || job.attempts == 0 {
        return None;
    }
    Some((
        job.plain,
        job.status.parse_success && !job.status.degenerate,
    ))
}

/// Every request to make, in document order: the pieces of the chunks,
/// small adjacent ones grouped into one request.
pub(super) fn jobs_of<'a>(
    input: &PlanInput<'a>,
    options: &PlanOptions,
    doc: &DocLines<'_>,
) -> Result<Vec<Job<'a>>, PlanError> {
    // Every piece to ask about, in document order, with the chunk it
    // comes from.
    let mut units: Vec<(Unit, usize)> = Vec::new();
    // The blocks shown as placeholders, once for the document; requests
    // are sized by what the model is shown.
    let blocks = if options.show_protected {
        Vec::new()
    } else {
        protected_runs(input.spans)
    };
    let shown = DocLines {
        lines: shown_lines(doc, &blocks),
    };
    for (c, chunk) in input.chunks.chunks.iter().enumerate() {
        let pieces = split(
            &chunk.chunk_id,
            &shown.lines,
            chunk.line_start,
            chunk.line_end,
            options.max_edit_chunk_tokens,
            input.spans,
        );
        let whole = pieces.len() == 1 && !chunk.oversized;
        for piece in pieces {
            let at = |l: u32| doc.lines.get((l as usize).wrapping_sub(1)).copied();
            let heading = at(piece.line_start)
                .and_then(|first| heading_level(first, at(piece.line_start + 1)));
            units.push((
                Unit {
                    piece,
                    whole,
                    heading,
                },
                c,
            ));
        }
    }
    let plain_units: Vec<Unit> = units.iter().map(|(u, _)| u.clone()).collect();
    let groups = group(&plain_units, options.target_request_tokens, &|a, b| {
        shown.text(a, b)
    });
    groups
        .into_iter()
        .map(|range| job_of(input, options, doc, &blocks, &units[range]))
        .collect()
}

/// The request over `units` (one piece, or adjacent chunks grouped);
/// `blocks` are the document's blocks shown as placeholders.
pub(super) fn job_of<'a>(
    input: &PlanInput<'a>,
    options: &PlanOptions,
    doc: &DocLines<'_>,
    blocks: &[(u32, u32, &'static str)],
    units: &[(Unit, usize)],
) -> Result<Job<'a>, PlanError> {
    let members = members_of(input, units);
    let (first, c) = &units[0];
    let last = &units[units.len() - 1].0;
    let chunk = &input.chunks.chunks[*c];
    let piece = Piece {
        id: group_id(&first.piece.id, units.len()),
        line_start: first.piece.line_start,
        line_end: last.piece.line_end,
    };
    let fingerprint = fingerprint_of(input, units);
    let text = doc.text(piece.line_start, piece.line_end);
    let findings = findings_within(input, &piece);
    let base = if blocks.is_empty() {
        mask_math(&text)
    } else {
        let runs = runs_within(blocks, piece.line_start, piece.line_end);
        mask_math_in(mask_protected(&text, &runs))
    };
    let tier = compute_tier(
        estimate_tokens(&base.text),
        options.context_budget,
        options.default_tier,
    );
    let mut job = Job {
        status: ChunkStatus {
            chunk_id: piece.id.clone(),
            parent_chunk_id: chunk.chunk_id.clone(),
            members: members.iter().map(|m| m.chunk_id.clone()).collect(),
            line_start: piece.line_start,
            line_end: piece.line_end,
            method: "none".to_owned(),
            tier: tier.number(),
            prompt: "review".to_owned(),
            ..ChunkStatus::default()
        },
        piece,
        members,
        parent: chunk.chunk_id.clone(),
        section_id: chunk.section_id.clone(),
        anchor: chunk.anchor.clone(),
        text,
        findings,
        fingerprint,
        masked: base.clone(),
        base,
        stripped: None,
        tier,
        plain: false,
        key: String::new(),
        step: Step::Worker,
        temperature: None,
        empty_retries: 0,
        tried: [false; 4],
        attempts: 0,
        raw: Vec::new(),
        proposals: Vec::new(),
        result: Vec::new(),
        dropped: Vec::new(),
        masks: Vec::new(),
        exemplar: None,
        recipe_degenerate_after: None,
        asked: Vec::new(),
    };
    // The key holds the first prompt, rendered once the summaries it
    // reads are made (`Flow::start_chunks`).
    if only_protected(&job.base) {
        // Protected blocks and blank lines only: any proposal would be
        // dropped, so the request is not made.
        job.step = Step::Done;
        job.status.verdict = ChunkVerdict::Empty;
    }
    for (transform, file) in [("math_mask", "MATH"), (PROTECTED, "PROTECTED")] {
        let made: Vec<&Placeholder> = job
            .base
            .mapping
            .iter()
            .filter(|p| p.transform == transform)
            .collect();
        if !made.is_empty() {
            job.masks.push((
                format!("{}_{file}.json", job.piece.id),
                pretty(&json!(made)),
            ));
        }
    }
    Ok(job)
}

/// The chunks of a request over several (none for a single chunk).
fn members_of(input: &PlanInput<'_>, units: &[(Unit, usize)]) -> Vec<Member> {
    if units.len() > 1 {
        units
            .iter()
            .map(|(u, c)| Member {
                chunk_id: u.piece.id.clone(),
                anchor: input.chunks.chunks[*c].anchor.clone(),
                line_start: u.piece.line_start,
                line_end: u.piece.line_end,
            })
            .collect()
    } else {
        Vec::new()
    }
}

/// A request's fingerprint. A request over several chunks takes the first
/// fingerprint that calls for a content recipe: the recipe applies to the
/// whole text.
fn fingerprint_of<'a>(
    input: &PlanInput<'a>,
    units: &[(Unit, usize)],
) -> Option<&'a ChunkFingerprint> {
    let fingerprints: Vec<&'a ChunkFingerprint> = units
        .iter()
        .filter_map(|(_, c)| {
            let id = &input.chunks.chunks[*c].chunk_id;
            input
                .fingerprints
                .and_then(|f| f.fingerprints.iter().find(|p| &p.chunk_id == id))
        })
        .collect();
    fingerprints
        .iter()
        .find(|f| f.triggers_recipe)
        .or(fingerprints.first())
        .copied()
}

/// The findings on the piece's lines, with chunk-relative lines: the
/// prompt (and so the incremental key) must not change when text above
/// the chunk moves it.
fn findings_within(input: &PlanInput<'_>, piece: &Piece) -> Vec<Finding> {
    input
        .findings
        .iter()
        .filter(|f| f.line >= piece.line_start && f.line <= piece.line_end)
        .map(|f| {
            let mut f = f.clone();
            f.line = f.line - piece.line_start + 1;
            f.line_end = f.line_end.saturating_sub(piece.line_start) + 1;
            f
        })
        .collect()
}

/// `true` when every line shown is blank or a protected block's
/// placeholder.
pub(super) fn only_protected(m: &Masked) -> bool {
    m.mapping.iter().any(|p| p.transform == PROTECTED)
        && m.text.split('\n').all(|l| {
            let l = l.trim();
            l.is_empty()
                || m.mapping
                    .iter()
                    .any(|p| p.transform == PROTECTED && p.token == l)
        })
}

/// The document's protected blocks a prompt shows as placeholders: each
/// block's first and last line and placeholder name, in order and
/// disjoint (see [`ProtectedSpans::labelled_blocks`]).
pub(super) fn protected_runs(spans: Option<&ProtectedSpans>) -> Vec<(u32, u32, &'static str)> {
    spans
        .map(|s| s.labelled_blocks(|b| block_prefix(b.kind)))
        .unwrap_or_default()
}

/// The blocks of `blocks` within lines `start..=end`, clipped to them, as
/// lines 0-based from `start` (a piece's text).
pub(super) fn runs_within(
    blocks: &[(u32, u32, &'static str)],
    start: u32,
    end: u32,
) -> Vec<(usize, usize, &'static str)> {
    let first = blocks.partition_point(|b| b.1 < start);
    blocks[first..]
        .iter()
        .take_while(|b| b.0 <= end)
        .map(|&(a, z, prefix)| {
            let (a, z) = (a.max(start), z.min(end));
            ((a - start) as usize, (z - start) as usize, prefix)
        })
        .collect()
}

/// The document's lines as a prompt shows them, for sizing requests: a
/// block shown as a placeholder counts as one short line.
pub(super) fn shown_lines<'d>(
    doc: &DocLines<'d>,
    blocks: &[(u32, u32, &'static str)],
) -> Vec<&'d str> {
    let mut lines = doc.lines.clone();
    for &(a, z, _) in blocks {
        let lo = (a.max(1) - 1) as usize;
        if let Some(run) = lines.get_mut(lo..(z as usize).min(doc.lines.len())) {
            for (k, line) in run.iter_mut().enumerate() {
                *line = if k == 0 { "[[BLOCK_0]]" } else { "" };
            }
        }
    }
    lines
}
