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

mod answer;
mod jobs;
mod request;
mod reuse;
use answer::{advance, warmer};
use jobs::{jobs_of, outcome};
use request::{answer_cap, degenerate, differ_from_earlier, prompt, request};
use reuse::{count, incremental_key, pretty, reuse, skip};

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
