//! The planner's loop: chunks in batches, each a small state machine
//! (worker, retries and policies, tutor, regeneration) that yields one
//! request per round.

use std::collections::{BTreeMap, HashSet};

use crate::ladder::{extract_edit_ops, ExtractionMethod, LadderOutcome};
use koas_kernel_api::hash::sha256_of_parts;
use koas_review_schema::change_id::IdAllocator;
use koas_review_schema::edit_op::Action;
use koas_review_schema::edit_plan::{
    AdaptiveEscalation, ChunkStatus, ChunkVerdict, DroppedProposal, EditPlan, EditPlanStats,
    EditPlanStatus,
};
use koas_review_schema::findings::Finding;
use koas_review_schema::fingerprint::ChunkFingerprint;
use koas_review_schema::stage1::ProtectedSpans;
use serde::Serialize;
use serde_json::json;

use super::breaker::CircuitBreaker;
use super::group::{group, group_id, heading_level, Unit};
use super::mask::{
    apply_recipe, block_prefix, markdown_strip, mask_math, mask_math_in, mask_protected,
    token_delta, Density, Masked, Placeholder, PROTECTED,
};
use super::split::{split, Piece};
use super::target::{finish, note_message, place, DocLines, PieceView, Placed, Placement};
use super::verdict::{parse_verdict, TutorVerdict};
use super::{
    ChunkDone, EditModel, ModelAnswer, ModelError, ModelRequest, ModelRole, PlanError, PlanInput,
    PlanOptions, Planned,
};
use crate::context::{assemble, compute_tier, ContextInput, PartKind, Summaries, Tier};
use crate::estimate_tokens;
use crate::prompt::render;
use crate::pyramid::Template;

/// Where the structured answer ends.
pub const END_MARKER: &str = "END_EDIT_OPS";
/// The headings of a review prompt's parts (`review.tera`): an answer
/// that writes one has begun copying its prompt (a small model echoes
/// "Text to review (6 lines; …)" and numbers lines to its cap), so what
/// it had to say is before it.
pub const ECHOES: [&str; 7] = [
    "Text to review (",
    "Document abstract:",
    "Terms the document defines:",
    "Summary of this section:",
    "Summary of the subsection:",
    "Neighbouring sections:",
    "Problems an automatic check found in this part:",
];

/// Characters after which a worker answer written as prose instead of
/// ops ends at its next sentence end: a few sentences are what the ladder
/// can salvage of it (a point a person should look at), and a small model
/// otherwise writes on to its cap.
pub const PROSE_ANSWER_CHARS: u32 = 400;

/// Where a structured answer's ops list begins.
pub const BEGIN_MARKER: &str = "BEGIN_EDIT_OPS";

#[derive(Serialize)]
struct PromptValues<'a> {
    language: &'a str,
    language_code: &'a str,
    chunk_id: &'a str,
    tier: u8,
    numbered_lines: String,
    line_count: usize,
    #[serde(rename = "abstract")]
    abstract_: String,
    section: String,
    subsection: String,
    siblings: String,
    findings: String,
    glossary: String,
    has_placeholders: bool,
    reason: &'a str,
    proposals: String,
}

/// The shown text with each line numbered as in the piece: a line that
/// stands for several (a masked block) moves the next number on, so that
/// the numbers match the document's lines and the findings'.
fn numbered(text: &str, masked: &Masked) -> (String, usize) {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut numbers = Vec::with_capacity(lines.len());
    let mut n = 1;
    for l in &lines {
        numbers.push(n);
        n += 1 + masked.hidden_lines(l);
    }
    let last = numbers.last().copied().unwrap_or(1);
    let width = last.to_string().len();
    (
        lines
            .iter()
            .zip(&numbers)
            .map(|(l, i)| format!("{i:>width$} | {l}"))
            .collect::<Vec<_>>()
            .join("\n"),
        n - 1,
    )
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Worker,
    Regenerate(String),
    Tutor,
    Done,
}

/// A chunk asked about in a request with others, and where it is.
struct Member {
    chunk_id: String,
    anchor: String,
    line_start: u32,
    line_end: u32,
}

struct Job<'a> {
    piece: Piece,
    /// The chunks of a request that covers several (empty for one).
    members: Vec<Member>,
    parent: String,
    section_id: String,
    anchor: String,
    text: String,
    findings: Vec<Finding>,
    fingerprint: Option<&'a ChunkFingerprint>,
    base: Masked,
    masked: Masked,
    /// The text the model sees after policy D, and its unmasked form.
    stripped: Option<(String, String)>,
    tier: Tier,
    plain: bool,
    key: String,
    step: Step,
    temperature: Option<f64>,
    empty_retries: u32,
    tried: [bool; 4],
    attempts: u32,
    status: ChunkStatus,
    raw: Vec<(String, String)>,
    proposals: Vec<Placed>,
    result: Vec<Placed>,
    dropped: Vec<DroppedProposal>,
    masks: Vec<(String, String)>,
    exemplar: Option<serde_json::Value>,
    recipe_degenerate_after: Option<bool>,
    /// The requests already sent for this chunk (prompt hash, temperature,
    /// token cap): a retry must differ from all of them, or it would get
    /// the same answer from the cache.
    asked: Vec<(String, Option<f64>, u32)>,
}

/// Plans the document. `on_chunk` is called for every finished chunk in
/// chunk order, as soon as it and every chunk before it are done.
///
/// Up to `options.in_flight` requests are kept at the model for the whole
/// run: a chunk's follow-up (a retry, the tutor, a regeneration) is sent
/// as soon as its answer is read, and the next chunk as soon as a request
/// ends. Which prompt a chunk gets depends on the circuit breaker over
/// the chunks at least `in_flight` places before it, never on which
/// answers happened to arrive first (see [`Lagged`]).
pub fn plan(
    input: &PlanInput<'_>,
    options: &PlanOptions,
    model: &dyn EditModel,
    on_chunk: &mut dyn FnMut(&ChunkDone),
) -> Result<Planned, PlanError> {
    let summaries = Summaries::finished(input.pyramid);
    let mut planner = Planner::new(input, options, model)?;
    loop {
        planner.pump(summaries, on_chunk)?;
        if planner.is_done() {
            return planner.finish();
        }
        if !planner.waiting() {
            continue;
        }
        match model.next() {
            Some((ticket, answer)) => planner.answer(ticket, answer, summaries)?,
            None => planner.lost(),
        }
    }
}

/// A plan being made, one step at a time, for a caller that reads the
/// model's answers itself: one that also sends other requests on the same
/// stream (the pyramid's) hands this one the answers to its tickets
/// ([`Planner::owns`]), and the summaries made so far: a chunk's request
/// waits until every summary its prompt reads is made.
pub struct Planner<'p, 'a> {
    input: &'p PlanInput<'a>,
    options: &'p PlanOptions,
    model: &'p dyn EditModel,
    doc: DocLines<'a>,
    index: Vec<(u32, u32, String)>,
    jobs: Vec<Job<'a>>,
    flow: Flow<'a>,
}

impl<'p, 'a> Planner<'p, 'a> {
    /// Cuts the document into requests; nothing is sent before
    /// [`Planner::pump`].
    pub fn new(
        input: &'p PlanInput<'a>,
        options: &'p PlanOptions,
        model: &'p dyn EditModel,
    ) -> Result<Planner<'p, 'a>, PlanError> {
        let doc = DocLines::new(input.doc);
        let jobs = jobs_of(input, options, &doc)?;
        let index = jobs
            .iter()
            .map(|j| (j.piece.line_start, j.piece.line_end, j.piece.id.clone()))
            .collect();
        let flow = Flow {
            previous: input.previous.filter(|_| !options.rebuild),
            window: options.in_flight.max(1),
            next: 0,
            recorded: 0,
            sent: std::collections::HashMap::new(),
            parked: Vec::new(),
            asking: Asking::new(options),
            lagged: Lagged::new(options),
        };
        Ok(Planner {
            input,
            options,
            model,
            doc,
            index,
            jobs,
            flow,
        })
    }

    /// Sends what is ready (follow-ups that waited for a summary first,
    /// then the next chunks), records the chunks done, and, once a fatal
    /// error leaves nothing in flight, skips the rest.
    pub fn pump(
        &mut self,
        summaries: Summaries<'_>,
        on_chunk: &mut dyn FnMut(&ChunkDone),
    ) -> Result<(), PlanError> {
        self.with_wave(summaries, |flow, jobs, ctx| {
            flow.start_chunks(jobs, ctx)?;
            flow.record_done(jobs, on_chunk);
            if flow.sent.is_empty() {
                if let Some(reason) = flow.asking.fatal.clone() {
                    // Nothing is in flight and nothing more will be asked.
                    for i in std::mem::take(&mut flow.parked) {
                        skip(&mut jobs[i], &reason);
                    }
                    for job in &mut jobs[flow.next..] {
                        if job.step != Step::Done {
                            skip(job, &reason);
                        }
                    }
                    flow.next = jobs.len();
                    flow.record_done(jobs, on_chunk);
                }
            }
            Ok(())
        })
    }

    /// Runs `f` on the traffic, the requests and what reading and
    /// sending them needs.
    fn with_wave<R>(
        &mut self,
        summaries: Summaries<'_>,
        f: impl FnOnce(&mut Flow<'a>, &mut [Job<'a>], &Wave<'_, 'a>) -> R,
    ) -> R {
        let Planner {
            input,
            options,
            model,
            doc,
            index,
            jobs,
            flow,
        } = self;
        let index: Vec<(u32, u32, &str)> = index
            .iter()
            .map(|(a, b, id)| (*a, *b, id.as_str()))
            .collect();
        let ctx = Wave {
            input,
            options,
            model: *model,
            doc,
            index: &index,
            summaries,
        };
        f(flow, jobs, &ctx)
    }

    /// Whether `ticket` is one of this plan's requests still out.
    pub fn owns(&self, ticket: u64) -> bool {
        self.flow.sent.contains_key(&ticket)
    }

    /// Whether requests are out.
    pub fn waiting(&self) -> bool {
        !self.flow.sent.is_empty()
    }

    /// Every chunk is done and handed to `on_chunk`.
    pub fn is_done(&self) -> bool {
        self.flow.sent.is_empty()
            && self.flow.parked.is_empty()
            && self.flow.next >= self.jobs.len()
            && self.flow.recorded >= self.jobs.len()
    }

    /// Reads the answer to one of this plan's tickets and sends the
    /// chunk's follow-up, or parks it until the summaries it reads are
    /// made.
    pub fn answer(
        &mut self,
        ticket: u64,
        answer: Result<ModelAnswer, ModelError>,
        summaries: Summaries<'_>,
    ) -> Result<(), PlanError> {
        self.with_wave(summaries, |flow, jobs, ctx| {
            flow.take_answer(jobs, ticket, answer, ctx)
        })
    }

    /// The model lost track of the requests out: none will be answered.
    pub fn lost(&mut self) {
        let lost: Vec<usize> = self.flow.sent.drain().map(|(_, i)| i).collect();
        for i in lost {
            skip(&mut self.jobs[i], "the model service lost the request");
        }
    }

    /// The finished plan.
    pub fn finish(self) -> Result<Planned, PlanError> {
        finish_plan(self.jobs, self.input, self.options, self.flow.asking)
    }
}

/// The planner's traffic: which chunk is next, which requests are out.
struct Flow<'p> {
    previous: Option<&'p EditPlan>,
    /// The most requests kept at the model.
    window: usize,
    /// The first chunk not yet started.
    next: usize,
    /// The chunks before this one are recorded and handed to `on_chunk`.
    recorded: usize,
    /// Requests out, by ticket: the chunk each is for.
    sent: std::collections::HashMap<u64, usize>,
    /// Chunks whose follow-up waits for a summary (a second ask with
    /// more context), in the order they were read.
    parked: Vec<usize>,
    asking: Asking,
    lagged: Lagged,
}

impl Flow<'_> {
    /// Sends parked follow-ups whose summaries are made, then starts
    /// chunks while there is room and their prompt is decided: the
    /// circuit breaker's decision and every summary it reads.
    fn start_chunks(&mut self, jobs: &mut [Job<'_>], ctx: &Wave<'_, '_>) -> Result<(), PlanError> {
        let mut k = 0;
        while k < self.parked.len() && self.sent.len() < self.window {
            let i = self.parked[k];
            if self.asking.fatal.is_none() && ctx.summaries.ready(&jobs[i].section_id, jobs[i].tier)
            {
                self.parked.remove(k);
                self.send(jobs, i, ctx)?;
            } else {
                k += 1;
            }
        }
        while self.sent.len() < self.window && self.next < jobs.len() {
            if self.asking.fatal.is_some() {
                return Ok(());
            }
            let i = self.next;
            if jobs[i].step == Step::Done {
                // Nothing the model may change: never asked.
                self.next += 1;
                continue;
            }
            if !ctx.summaries.ready(&jobs[i].section_id, jobs[i].tier) {
                // Its prompt reads a summary not made yet; the chunks
                // after it wait too, so that the breaker's horizon holds.
                return Ok(());
            }
            if jobs[i].key.is_empty() {
                let first = prompt(
                    &jobs[i],
                    ctx.input,
                    ctx.summaries,
                    ctx.options,
                    &ctx.options.templates.review,
                    "",
                )?;
                let key = incremental_key(&jobs[i], ctx.options, &first);
                jobs[i].status.incremental_key.clone_from(&key);
                jobs[i].key = key;
            }
            if reuse(&mut jobs[i], self.previous) {
                self.next += 1;
                continue;
            }
            let horizon = (i + 1).saturating_sub(self.window);
            let Some(decision) = self.lagged.decide(jobs, horizon) else {
                // An answer still out could change this chunk's prompt.
                return Ok(());
            };
            self.next += 1;
            let job = &mut jobs[i];
            if decision.give_up {
                skip(job, GAVE_UP);
                continue;
            }
            job.plain = decision.plain;
            if job.plain {
                job.status.prompt = "review_plain".to_owned();
            }
            self.send(jobs, i, ctx)?;
        }
        Ok(())
    }

    /// Sends chunk `i`'s next request.
    fn send(
        &mut self,
        jobs: &mut [Job<'_>],
        i: usize,
        ctx: &Wave<'_, '_>,
    ) -> Result<(), PlanError> {
        let job = &mut jobs[i];
        let mut next = request(job, ctx.input, ctx.summaries, ctx.options)?;
        differ_from_earlier(job, &mut next);
        let ticket = ctx.model.submit(next);
        self.sent.insert(ticket, i);
        Ok(())
    }

    /// Records, in chunk order, every chunk done with all before it done.
    fn record_done(&mut self, jobs: &mut [Job<'_>], on_chunk: &mut dyn FnMut(&ChunkDone)) {
        while self.recorded < self.next && jobs[self.recorded].step == Step::Done {
            let job = &mut jobs[self.recorded];
            self.asking.record(job);
            job.status.ops = u32::try_from(job.result.len()).unwrap_or(u32::MAX);
            job.status.ops_dropped = u32::try_from(job.dropped.len()).unwrap_or(u32::MAX);
            on_chunk(&ChunkDone {
                status: job.status.clone(),
                raw: std::mem::take(&mut job.raw),
                masks: std::mem::take(&mut job.masks),
                exemplar: job.exemplar.take(),
            });
            self.recorded += 1;
        }
    }

    /// Reads one answer and sends the chunk's follow-up (or parks it).
    fn take_answer(
        &mut self,
        jobs: &mut [Job<'_>],
        ticket: u64,
        answer: Result<ModelAnswer, ModelError>,
        ctx: &Wave<'_, '_>,
    ) -> Result<(), PlanError> {
        let Some(i) = self.sent.remove(&ticket) else {
            return Ok(());
        };
        let job = &mut jobs[i];
        if let Ok(a) = &answer {
            job.status.latency_ms += a.elapsed_ms;
        }
        self.asking.stop_on_fatal(&answer);
        advance(job, answer, ctx.input, ctx.options, ctx.doc, ctx.index)?;
        if job.step == Step::Done {
            return Ok(());
        }
        match self.asking.fatal.clone() {
            Some(reason) => skip(job, &reason),
            None if ctx.summaries.ready(&job.section_id, job.tier) => self.send(jobs, i, ctx)?,
            None => self.parked.push(i),
        }
        Ok(())
    }
}

/// The circuit breakers as they stood after the chunks before a horizon,
/// which decide the prompt of a chunk `in_flight` places later. While some
/// of those chunks are still being answered, the decision is taken if
/// their answers cannot change it (every one read or every one unreadable
/// gives the same), else the chunk waits: so the prompts, and the plan,
/// never depend on the order in which answers arrive.
struct Lagged {
    breakers: Breakers,
    /// The chunks before this one are recorded.
    upto: usize,
}

/// The prompt a chunk gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decision {
    plain: bool,
    give_up: bool,
}

/// The two judgements of the answers: unreadable answers to the review
/// prompt (the chunks after get the plain-text prompt), and to the
/// plain-text one too (the model is no longer asked).
#[derive(Clone)]
struct Breakers {
    breaker: CircuitBreaker,
    give_up: CircuitBreaker,
}

/// Which breaker a record tripped, if one did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tripped {
    Neither,
    Breaker,
    GiveUp,
}

impl Breakers {
    fn new(options: &PlanOptions) -> Breakers {
        Breakers {
            breaker: CircuitBreaker::new(options.breaker_window, options.breaker_threshold),
            give_up: CircuitBreaker::new(options.breaker_window, options.breaker_threshold),
        }
    }

    /// Records one chunk's outcome in the breaker of its prompt (`None`:
    /// it gave no record).
    fn record(&mut self, outcome: Option<(bool, bool)>) -> Tripped {
        match outcome {
            Some((true, parsed)) if self.give_up.record(parsed) => Tripped::GiveUp,
            Some((false, parsed)) if self.breaker.record(parsed) => Tripped::Breaker,
            _ => Tripped::Neither,
        }
    }

    fn decision(&self) -> Decision {
        Decision {
            plain: self.breaker.tripped(),
            give_up: self.give_up.tripped(),
        }
    }
}

impl Lagged {
    fn new(options: &PlanOptions) -> Lagged {
        Lagged {
            breakers: Breakers::new(options),
            upto: 0,
        }
    }

    /// The decision after the chunks before `horizon`, if their answers
    /// so far settle it.
    fn decide(&mut self, jobs: &[Job<'_>], horizon: usize) -> Option<Decision> {
        while self.upto < horizon && jobs[self.upto].step == Step::Done {
            self.breakers.record(outcome(&jobs[self.upto]));
            self.upto += 1;
        }
        if self.upto >= horizon {
            return Some(self.breakers.decision());
        }
        let [best, worst] = [true, false].map(|parsed| {
            let mut breakers = self.breakers.clone();
            for job in &jobs[self.upto..horizon] {
                let known = (job.step == Step::Done).then(|| outcome(job));
                breakers.record(known.unwrap_or(Some((job.plain, parsed))));
            }
            breakers.decision()
        });
        (best == worst).then_some(best)
    }
}

/// What a finished chunk tells the breakers: its prompt and whether its
/// answer was read; `None` for a chunk reused or skipped.
fn outcome(job: &Job<'_>) -> Option<(bool, bool)> {
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
fn jobs_of<'a>(
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
fn job_of<'a>(
    input: &PlanInput<'a>,
    options: &PlanOptions,
    doc: &DocLines<'_>,
    blocks: &[(u32, u32, &'static str)],
    units: &[(Unit, usize)],
) -> Result<Job<'a>, PlanError> {
    let members: Vec<Member> = if units.len() > 1 {
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
    };
    let (first, c) = &units[0];
    let last = &units[units.len() - 1].0;
    let chunk = &input.chunks.chunks[*c];
    let piece = Piece {
        id: group_id(&first.piece.id, units.len()),
        line_start: first.piece.line_start,
        line_end: last.piece.line_end,
    };
    // A request over several chunks takes the first fingerprint that
    // calls for a content recipe: the recipe applies to the whole text.
    let fingerprints: Vec<&ChunkFingerprint> = units
        .iter()
        .filter_map(|(_, c)| {
            let id = &input.chunks.chunks[*c].chunk_id;
            input
                .fingerprints
                .and_then(|f| f.fingerprints.iter().find(|p| &p.chunk_id == id))
        })
        .collect();
    let fingerprint = fingerprints
        .iter()
        .find(|f| f.triggers_recipe)
        .or(fingerprints.first())
        .copied();
    let text = doc.text(piece.line_start, piece.line_end);
    let findings: Vec<Finding> = input
        .findings
        .iter()
        .filter(|f| f.line >= piece.line_start && f.line <= piece.line_end)
        .map(|f| {
            // Chunk-relative lines: the prompt (and so the
            // incremental key) must not change when text above
            // the chunk moves it.
            let mut f = f.clone();
            f.line = f.line - piece.line_start + 1;
            f.line_end = f.line_end.saturating_sub(piece.line_start) + 1;
            f
        })
        .collect();
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

/// `true` when every line shown is blank or a protected block's
/// placeholder.
fn only_protected(m: &Masked) -> bool {
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
fn protected_runs(spans: Option<&ProtectedSpans>) -> Vec<(u32, u32, &'static str)> {
    spans
        .map(|s| s.labelled_blocks(|b| block_prefix(b.kind)))
        .unwrap_or_default()
}

/// The blocks of `blocks` within lines `start..=end`, clipped to them, as
/// lines 0-based from `start` (a piece's text).
fn runs_within(
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
fn shown_lines<'d>(doc: &DocLines<'d>, blocks: &[(u32, u32, &'static str)]) -> Vec<&'d str> {
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

/// What the batches learn about the model as they go.
struct Asking {
    /// The breakers over every chunk recorded so far: their trips are
    /// warned about (a model that cannot answer either prompt is stopped
    /// early, not asked every chunk to the end of the budget).
    breakers: Breakers,
    warnings: Vec<String>,
    /// The service error after which asking again is pointless, if any.
    fatal: Option<String>,
    /// Why the model is no longer asked, if so (that error, or the model
    /// giving no usable answer with either prompt).
    stopped: Option<String>,
}

/// Why a chunk is not asked once the model gave no usable answer to most
/// chunks with either prompt.
const GAVE_UP: &str =
    "the model gave no usable answer to most chunks with either prompt, so the review stopped asking it";

impl Asking {
    fn new(options: &PlanOptions) -> Asking {
        Asking {
            breakers: Breakers::new(options),
            warnings: Vec::new(),
            fatal: None,
            stopped: None,
        }
    }

    /// A fatal answer stops every request after it.
    fn stop_on_fatal(&mut self, answer: &Result<ModelAnswer, ModelError>) {
        if let Err(e) = answer {
            if e.fatal && self.fatal.is_none() {
                self.warnings.push(format!(
                    "stopped asking the model ({}); the chunks not reviewed are recorded as skipped and asked again next run",
                    e.message
                ));
                self.fatal = Some(e.message.clone());
                self.stopped = Some(e.message.clone());
            }
        }
    }

    /// Records a finished chunk's answer in the breaker of its prompt.
    fn record(&mut self, job: &Job<'_>) {
        match self.breakers.record(outcome(job)) {
            Tripped::GiveUp if self.stopped.is_none() => {
                let why = format!(
                    "the model gave no usable answer to most chunks with either prompt, the plain-text one too (up to chunk {}), so the review stopped asking it",
                    job.piece.id
                );
                self.warnings.push(format!(
                    "stopped asking the model ({why}); the chunks not reviewed are recorded as skipped and asked again next run"
                ));
                self.stopped = Some(why);
            }
            Tripped::Breaker => self.warnings.push(format!(
                "circuit breaker tripped after chunk {}: most recent answers were unreadable, the remaining chunks get the plain-text prompt",
                job.piece.id
            )),
            _ => {}
        }
    }
}

/// What reading and sending requests needs.
struct Wave<'w, 'a> {
    input: &'w PlanInput<'a>,
    options: &'w PlanOptions,
    model: &'w dyn EditModel,
    doc: &'w DocLines<'a>,
    index: &'w [(u32, u32, &'w str)],
    /// The summaries made so far.
    summaries: Summaries<'w>,
}

/// The plan once every chunk is done: IDs in chunk order, duplicates
/// dropped, the statistics.
fn finish_plan(
    mut jobs: Vec<Job<'_>>,
    input: &PlanInput<'_>,
    options: &PlanOptions,
    asking: Asking,
) -> Result<Planned, PlanError> {
    let mut allocator = IdAllocator::after(input.used_ids.iter().copied())?;
    let mut ops = Vec::new();
    let mut dropped = Vec::new();
    let mut seen: HashSet<(Action, usize, usize, Option<String>, String)> = HashSet::new();
    let mut stats = EditPlanStats {
        circuit_breaker_tripped: asking.breakers.breaker.tripped(),
        ..EditPlanStats::default()
    };
    let mut chunks = Vec::new();
    for job in &mut jobs {
        to_member_chunks(job);
        job.result
            .sort_by_key(|p| (p.op.target.line_start, p.op.target.line_end));
        let mut kept = 0u32;
        for placed in &job.result {
            let o = &placed.op;
            let key = (
                o.action,
                o.target.line_start,
                o.target.line_end,
                o.before_text.clone(),
                o.after_text.clone(),
            );
            if !seen.insert(key) {
                dropped.push(DroppedProposal {
                    chunk_id: job.piece.id.clone(),
                    action: o.action.as_str().to_owned(),
                    before_text: o.before_text.clone(),
                    reason: "duplicate".to_owned(),
                    detail: "the same op was proposed in another chunk".to_owned(),
                });
                continue;
            }
            if placed.downgraded {
                stats.downgraded += 1;
            }
            ops.push(finish(placed, allocator.allocate()?));
            kept += 1;
        }
        job.status.ops = kept;
        dropped.append(&mut job.dropped);
        count(&mut stats, job);
        // Timings stay in `status.jsonl`: the plan holds only what the
        // answers decide, so a replay of the run reproduces it byte for
        // byte.
        chunks.push(ChunkStatus {
            latency_ms: 0,
            t_request_ms: 0,
            ..job.status.clone()
        });
    }
    stats.ops = u32::try_from(ops.len()).unwrap_or(u32::MAX);
    stats.dropped = u32::try_from(dropped.len()).unwrap_or(u32::MAX);
    Ok(Planned {
        plan: EditPlan {
            doc_hash: input.doc_hash.to_owned(),
            status: if asking.stopped.is_some() {
                EditPlanStatus::Partial
            } else {
                EditPlanStatus::Complete
            },
            reason: asking.stopped,
            language: options.language.code().to_owned(),
            model: options.model.clone(),
            ops,
            chunks,
            dropped,
            stats,
        },
        warnings: asking.warnings,
    })
}

/// An op of a request over several chunks belongs to the chunk that
/// holds its first line.
fn to_member_chunks(job: &mut Job<'_>) {
    for placed in &mut job.result {
        let line = u32::try_from(placed.op.target.line_start).unwrap_or(u32::MAX);
        if let Some(m) = job
            .members
            .iter()
            .find(|m| m.line_start <= line && line <= m.line_end)
        {
            placed.op.target.chunk_id = m.chunk_id.clone();
            placed.op.target.anchor = m.anchor.clone();
        }
    }
}

/// Adds a finished request (its ops already counted) to the statistics.
fn count(stats: &mut EditPlanStats, job: &Job<'_>) {
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

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// What turns a model's answer into a chunk's result (the extraction
/// ladder, placement, the drop rules). Bumped when they change, so a chunk
/// result of an older rule is not reused; the model's answers themselves
/// stay in the answer cache and are read again at no cost.
const RESULT_RULES: &str = "koas-edit-plan-v3";

/// The key of everything a chunk's result depends on.
fn incremental_key(job: &Job, options: &PlanOptions, first_prompt: &str) -> String {
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
fn reuse(job: &mut Job, previous: Option<&koas_review_schema::edit_plan::EditPlan>) -> bool {
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

fn skip(job: &mut Job, reason: &str) {
    job.step = Step::Done;
    job.status.verdict = ChunkVerdict::Skipped;
    job.status.error = Some(reason.to_owned());
    job.result.clear();
    job.proposals.clear();
}

/// The prompt of the job's current step rendered from `template`.
fn prompt(
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

fn proposals_json(job: &Job) -> String {
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

fn request(
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
fn answer_cap(job: &Job, options: &PlanOptions) -> u32 {
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
const ANSWER_OVERHEAD: u32 = 192;
/// The smallest cap: a few ops with short quotes.
const MIN_ANSWER_TOKENS: u32 = 256;

/// A request identical to one already sent for the chunk would be answered
/// from the cache with the same unusable answer: it is nudged warmer, and
/// the escalation says so.
fn differ_from_earlier(job: &mut Job, next: &mut ModelRequest) {
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
fn degenerate(
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
fn repeats_a_sentence(text: &str) -> bool {
    let mut seen = HashSet::new();
    text.split_inclusive(['.', '!', '?', '\n'])
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| s.chars().filter(|c| !c.is_whitespace()).count() >= 20)
        .any(|s| !seen.insert(s))
}

/// Asks the chunk again at temperature `to`, recorded as a `retry`.
fn warmer(job: &mut Job, to: f64, why: &str) {
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

fn escalate(job: &mut Job, policy: &str, from: String, to: String, reason: String) {
    job.status.adaptive_escalation.push(AdaptiveEscalation {
        policy: policy.to_owned(),
        from,
        to,
        reason,
    });
    job.status.retries += 1;
}

fn advance(
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
    if proposed == 0
        && step == Step::Worker
        && !job.findings.is_empty()
        && !job.tried[1]
        && job.tier < Tier::Full
        && compute_tier(
            estimate_tokens(&job.masked.text),
            options.context_budget,
            job.tier.up(),
        ) != Tier::Skeleton
    {
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

/// Places every proposal of a ladder outcome; the dropped ones are
/// recorded on the job.
fn place_all(
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

fn on_degenerate(job: &mut Job, why: &str, options: &PlanOptions) -> Result<(), PlanError> {
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
fn is_base(p: &Placeholder) -> bool {
    p.transform == "math_mask" || p.transform == PROTECTED
}

fn write_recipe_masks(job: &mut Job, recipe: &Masked, delta: i64, triggers: &str) {
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

fn tutor_failed(job: &mut Job, why: &str) {
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

fn on_tutor(
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
