//! [`RefineModel`] over the host's LLM service, for the kernels.

use std::cell::Cell;

use koas_kernel_api::{Context, LlmRequest, NO_BACKEND};

use crate::{Ask, RefineModel, Reply};

/// The most asks out at the host at once: far more than any server has
/// slots (the host queues the rest), far fewer than the host allows a
/// kernel, whatever the document's size.
const MAX_OUT: usize = 256;

/// The host's LLM service as a [`RefineModel`].
pub struct HostModel<'a> {
    ctx: &'a Context<'a>,
    no_backend: Cell<bool>,
}

impl<'a> HostModel<'a> {
    /// The service of the kernel run `ctx`.
    pub fn new(ctx: &'a Context<'a>) -> Self {
        HostModel {
            ctx,
            no_backend: Cell::new(false),
        }
    }

    /// True once every answer of a batch was "no backend configured".
    pub fn no_backend(&self) -> bool {
        self.no_backend.get()
    }
}

impl RefineModel for HostModel<'_> {
    fn progress(&self, done: usize, total: usize) {
        self.ctx.progress(done as u64, total as u64);
    }

    fn complete_each(&self, asks: Vec<Ask>, on_answer: &mut crate::OnAnswer<'_>) {
        let mut stream = self.ctx.llm_stream();
        let mut index = std::collections::HashMap::new();
        let (mut answered, mut refused) = (0usize, 0usize);
        let mut waiting: std::collections::VecDeque<(usize, Ask)> =
            asks.into_iter().enumerate().collect();
        loop {
            // Follow-ups first (they were pushed to the front), then the
            // asks in order, up to the bound.
            while index.len() < MAX_OUT {
                let Some((i, ask)) = waiting.pop_front() else {
                    break;
                };
                index.insert(stream.submit(&request(&ask)), i);
            }
            let Some((ticket, answer)) = stream.next() else {
                break;
            };
            let Some(i) = index.remove(&ticket) else {
                continue;
            };
            let answer = reply(answer);
            answered += 1;
            refused += usize::from(answer.as_ref().is_err_and(|e| e.contains(NO_BACKEND)));
            if let Some(again) = on_answer(i, answer) {
                waiting.push_front((i, again));
            }
        }
        if answered > 0 && refused == answered {
            self.no_backend.set(true);
        }
    }

    fn complete(&self, asks: &[Ask]) -> Vec<Result<Reply, String>> {
        if self.ctx.is_cancelled() {
            return asks.iter().map(|_| Err("cancelled".to_owned())).collect();
        }
        let requests: Vec<LlmRequest> = asks.iter().map(request).collect();
        let answers = self.ctx.llm_complete_many(&requests);
        if !answers.is_empty()
            && answers
                .iter()
                .all(|a| a.as_ref().is_err_and(|e| e.message.contains(NO_BACKEND)))
        {
            self.no_backend.set(true);
        }
        answers.into_iter().map(reply).collect()
    }
}

fn request(ask: &Ask) -> LlmRequest {
    LlmRequest::new(ask.role.clone(), ask.prompt.clone()).max_tokens(ask.max_tokens)
}

fn reply(
    answer: Result<koas_kernel_api::LlmResponse, koas_kernel_api::KernelError>,
) -> Result<Reply, String> {
    answer
        .map(|r| Reply {
            text: r.text,
            prompt_tokens: r.prompt_tokens,
            completion_tokens: r.completion_tokens,
            cached: r.cached,
        })
        .map_err(|e| e.message)
}

/// The document the kernels work on: the host's current document
/// (`review_doc`) in a refinement workspace, else `doc_raw`.
pub fn current_text(
    inputs: &koas_kernel_api::Inputs,
) -> Result<String, koas_kernel_api::KernelError> {
    use koas_review_schema::names;
    if let Some(text) = inputs.parse_optional::<String>(names::REVIEW_DOC)? {
        return Ok(text);
    }
    Ok(inputs.source_text(names::DOC_RAW)?.to_owned())
}

/// The language name prompts give the model: the configured one, else the
/// one detected in `text`.
pub fn language_name(configured: &str, text: &str) -> &'static str {
    koas_edit::lang::Language::parse(configured)
        .unwrap_or_else(|| koas_edit::lang::detect(text))
        .name()
}
