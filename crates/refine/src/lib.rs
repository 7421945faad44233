//! # koas-refine — targeted refinement of a Markdown document, pure
//!
//! What the refinement kernels (`refine_judge`, `refine_arbiter`,
//! `refine_router`, `refine_fix`, `refine_verify`) and `koas refine`
//! compute around their model calls, without I/O:
//!
//! - [`sections`]: a document's sections, their prose around protected
//!   blocks, context anchors;
//! - [`judge`]: the judges' prompts and answers (scores 0–1 per
//!   criterion, targeted issues);
//! - [`alpha`]: Krippendorff's alpha;
//! - [`arbiter`]: agreement filtering, clustering, conflict resolution,
//!   one task per section;
//! - [`router`]: surgical edit, section rewrite or full-rewrite verdict,
//!   execution batches;
//! - [`fix`]: the patcher's and section-expander's prompts, and their
//!   answers turned into edit ops that leave protected blocks alone;
//! - [`verify`]: the free checks of a change and the delta judge;
//! - [`control`]: quality locks, oscillation locks, stopping conditions,
//!   best iteration;
//! - [`decision`]: the issues of a stored plan a person chose to fix
//!   after an escalation;
//! - [`machine`]: the loop of `koas refine` as a state machine: assess,
//!   decide, fix, verify, the best state and the summary, each step over
//!   plain data (the host runs the passes and the ledger).
//!
//! Model calls go through [`RefineModel`], which the kernels implement
//! with the host's LLM service and tests with a script.

pub mod alpha;
pub mod arbiter;
pub mod control;
pub mod decision;
pub mod fix;
pub mod host;
pub mod judge;
pub mod machine;
pub mod router;
pub mod sections;
pub mod verify;

use koas_review_schema::refine::TokenUse;

/// One request to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// The model role (a judge's name, `patch`, `expand`, `delta`).
    pub role: String,
    /// The rendered prompt.
    pub prompt: String,
    /// Longest answer.
    pub max_tokens: u32,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    /// The text.
    pub text: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Answered from the host's cache.
    pub cached: bool,
}

/// The follow-up, if any, to an answer of [`RefineModel::complete_each`]:
/// `on_answer(index, answer)` may ask again for the same index.
pub type OnAnswer<'a> = dyn FnMut(usize, Result<Reply, String>) -> Option<Ask> + 'a;

/// The model: a batch at a time, or each answer as it completes.
pub trait RefineModel {
    /// Answers `asks` (concurrently when the host can).
    fn complete(&self, asks: &[Ask]) -> Vec<Result<Reply, String>>;

    /// Answers `asks`, handing each answer to `on_answer` with its index
    /// as soon as it is in; a follow-up `on_answer` returns is asked for
    /// the same index, and its answer comes the same way. The default
    /// asks the batch, then the follow-ups as a second batch; a host that
    /// streams sends a follow-up while the other asks are still answered.
    fn complete_each(&self, asks: Vec<Ask>, on_answer: &mut OnAnswer<'_>) {
        let mut pending: Vec<(usize, Ask)> = asks.into_iter().enumerate().collect();
        while !pending.is_empty() {
            let batch: Vec<Ask> = pending.iter().map(|(_, a)| a.clone()).collect();
            let answers = self.complete(&batch);
            let mut next = Vec::new();
            for ((i, _), answer) in pending.iter().zip(answers) {
                if let Some(again) = on_answer(*i, answer) {
                    next.push((*i, again));
                }
            }
            pending = next;
        }
    }

    /// `done` of `total` steps of a long ask are answered (shown as the
    /// kernel's progress). Nothing by default.
    fn progress(&self, _done: usize, _total: usize) {}
}

/// Adds one answer to a token count.
pub fn count(tokens: &mut TokenUse, answer: &Result<Reply, String>) {
    tokens.calls += 1;
    if let Ok(r) = answer {
        if r.cached {
            tokens.cached_calls += 1;
        } else {
            tokens.prompt_tokens += r.prompt_tokens;
            tokens.completion_tokens += r.completion_tokens;
        }
    }
}

/// Estimated tokens of a text (the reviewer's estimator).
pub fn estimate(text: &str) -> u64 {
    u64::from(koas_md::estimate_tokens(text))
}

/// The first JSON object in a model's answer (inside a code fence or
/// prose), if any parses.
pub fn json_object(text: &str) -> Option<serde_json::Value> {
    let starts: Vec<usize> = text.match_indices('{').map(|(i, _)| i).take(8).collect();
    for start in starts {
        let mut ends: Vec<usize> = text[start..]
            .match_indices('}')
            .map(|(i, _)| start + i + 1)
            .collect();
        ends.reverse();
        for end in ends.into_iter().take(16) {
            if let Ok(v @ serde_json::Value::Object(_)) =
                serde_json::from_str::<serde_json::Value>(&text[start..end])
            {
                return Some(v);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_is_found_in_prose_and_fences() {
        let v =
            super::json_object("Sure!\n```json\n{\"a\": {\"b\": 1}}\n```\nDone.").expect("json");
        assert_eq!(v["a"]["b"], 1);
        assert!(super::json_object("no json here }{").is_none());
    }
}
