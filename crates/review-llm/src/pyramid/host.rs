//! What a kernel that builds the pyramid with the host's model service
//! needs besides the build: the request it sends for a summary, the
//! document's title and the model a summary is made by. Shared by the
//! kernels that build it.

use koas_kernel_api::LlmRequest;
use koas_review_schema::stage1::SectionIndex;

use super::build::SummaryRequest;

/// The model role summaries are asked of (`pyramid_model`).
pub const ROLE: &str = "pyramid";

/// The host request for `r`.
pub fn request(r: &SummaryRequest) -> LlmRequest {
    // Room for the summary and a little chatter to cut; the answer ends at
    // the first sentence end once it is about as long as asked (a token
    // is about four characters), or at a sentence written twice.
    let request = LlmRequest::new(ROLE, r.prompt.clone())
        .max_tokens(r.max_tokens.saturating_mul(2).max(64))
        .prose_until(r.max_tokens.saturating_mul(3));
    // A retry is nudged away from the boilerplate of the first answer.
    if r.retry {
        request.temperature(0.3)
    } else {
        request
    }
}

/// The document's name, the root's heading when it has no single
/// top-level title: the configured one, else the file name of the text
/// read, else its only top-level heading, else "document".
pub fn title(configured: &str, read_name: Option<String>, sections: &SectionIndex) -> String {
    Some(configured.trim().to_owned())
        .filter(|t| !t.is_empty())
        .or(read_name)
        .or_else(|| {
            let top: Vec<_> = sections.sections.iter().filter(|s| s.depth == 1).collect();
            (top.len() == 1).then(|| top[0].title.clone())
        })
        .unwrap_or_else(|| "document".to_owned())
}

/// The model the host will ask for summaries, from the model identity it
/// hands the kernel, so that a summary made by another model is not
/// reused.
pub fn model(identity: Option<&serde_json::Value>) -> String {
    identity
        .map(|identity| {
            identity
                .pointer(&format!("/models/{ROLE}"))
                .or_else(|| identity.pointer("/models/default"))
                .and_then(|m| m.as_str())
                .map(str::to_owned)
                .unwrap_or_else(|| koas_kernel_api::hash::canonical_json(identity))
        })
        .unwrap_or_default()
}
