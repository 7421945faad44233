//! The pyramid and the edit plan over one model stream, with no stage
//! between them.
//!
//! Built one after the other, the edit plan's first request waited for
//! the pyramid's last summary (the abstract), while the pyramid's top
//! levels, a few summaries each waiting on the one before, left most of
//! the server's slots idle. Here both are driven by one loop: the
//! pyramid's requests go out as soon as what they summarize is made, and
//! a chunk's request as soon as every summary its prompt reads is made
//! (its section's at the default tier; the abstract, the last one, only
//! for a second ask with more context or a large-context model). Each
//! prompt is rendered from finished summaries only, so the plan is the
//! same whatever order the answers arrive in.

use std::cell::Cell;

use koas_review_schema::pyramid::Pyramid;

use crate::context::Summaries;
use crate::edit_plan::{
    ChunkDone, EditModel, ModelAnswer, ModelError, PlanError, PlanInput, PlanOptions, Planned,
    Planner,
};
use crate::pyramid::{
    BuildError, BuildOptions, Building, Built, PlanNode, Summarizer, SummaryError,
};

/// What the pyramid is built from.
#[derive(Debug, Clone, Copy)]
pub struct PyramidInput<'a> {
    /// Its nodes ([`crate::pyramid::plan`]).
    pub plan: &'a [PlanNode],
    /// The document's `sha256:` hash.
    pub doc_hash: &'a str,
    /// The previous pyramid, whose unchanged summaries are reused.
    pub previous: Option<&'a Pyramid>,
    /// How to build it.
    pub options: &'a BuildOptions,
}

/// Why the pyramid and the plan could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JointError {
    /// The pyramid's prompt could not be rendered.
    #[error(transparent)]
    Pyramid(#[from] BuildError),
    /// The plan could not be made.
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// Builds the pyramid and plans the document together. Summaries are
/// submitted through `summarizer` and edit requests through `model`, on
/// the same stream: every answer is read with `model.next()` and handed
/// to whichever asked. `input.pyramid` is not read (the pyramid is the
/// one being built). `on_chunk` is called as in [`crate::edit_plan::plan`];
/// `progress(done, total)` counts summaries and chunks together.
pub fn build_and_plan(
    pyramid: PyramidInput<'_>,
    input: &PlanInput<'_>,
    options: &PlanOptions,
    model: &dyn EditModel,
    summarizer: &dyn Summarizer,
    on_chunk: &mut dyn FnMut(&ChunkDone),
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(Built, Planned), JointError> {
    let mut building = Building::new(
        pyramid.plan,
        pyramid.doc_hash,
        pyramid.previous,
        pyramid.options,
        summarizer,
    );
    let mut planner = Planner::new(input, options, model)?;
    let chunks = input.chunks.chunks.len() as u64;
    let chunks_done = Cell::new(0u64);
    // Progress is reported once per round, for both.
    let mut on_summary = |_: u32, _: u32| {};
    let mut on_chunk = |done: &ChunkDone| {
        chunks_done.set(chunks_done.get() + done.status.members.len().max(1) as u64);
        on_chunk(done);
    };
    loop {
        building.pump(&mut on_summary)?;
        planner.pump(summaries(&building), &mut on_chunk)?;
        let (s_done, s_total) = building.counts();
        progress(
            u64::from(s_done) + chunks_done.get().min(chunks),
            u64::from(s_total) + chunks,
        );
        if building.is_done() && planner.is_done() {
            break;
        }
        if !building.waiting() && !planner.waiting() {
            // Nothing out: what was made readied more (a reused summary,
            // a reused chunk); pump again.
            continue;
        }
        match model.next() {
            Some((ticket, answer)) if building.owns(ticket) => {
                building.answer(ticket, summary_answer(answer), &mut on_summary);
            }
            Some((ticket, answer)) => planner.answer(ticket, answer, summaries(&building))?,
            None => {
                building.lost(&mut on_summary);
                planner.lost();
            }
        }
    }
    Ok((building.finish(), planner.finish()?))
}

/// The summaries made so far and those still to come.
fn summaries<'b>(building: &'b Building<'_>) -> Summaries<'b> {
    Summaries {
        pyramid: Some(building.made()),
        pending: building.pending(),
    }
}

/// An edit model's answer as the pyramid reads its own: the text, or
/// the error with whether asking again is pointless.
pub fn summary_answer(answer: Result<ModelAnswer, ModelError>) -> Result<String, SummaryError> {
    answer.map(|a| a.text).map_err(|e| SummaryError {
        message: e.message,
        fatal: e.fatal,
    })
}

#[cfg(test)]
mod tests;
