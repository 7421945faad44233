//! The backend trait and its three wire protocols.

mod anthropic;
mod http;
mod ollama;
mod openai;
mod sse;
mod stop;
pub use stop::StopReason;

pub use anthropic::AnthropicBackend;
pub use ollama::OllamaBackend;
pub use openai::OpenAiBackend;

use crate::config::{BackendKind, LlmConfig};
use crate::error::{LlmError, TransportError};
use crate::secret::ApiKey;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A shared "stop now" flag (the process's Ctrl-C flag): an attempt in
/// progress stops reading its answer when it is set.
#[derive(Debug, Clone)]
pub struct CancelFlag(pub Arc<AtomicBool>);

impl CancelFlag {
    /// True once cancellation was asked for.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl PartialEq for CancelFlag {
    /// Two flags are equal when they are the same flag.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// One completion request, fully resolved (model and parameters chosen).
#[derive(Debug, Clone, PartialEq)]
pub struct BackendCall {
    /// Exact model id, sent as is.
    pub model: String,
    /// System prompt; `None` sends no system message.
    pub system: Option<String>,
    /// User prompt, sent as the one user message.
    pub prompt: String,
    /// Sampling temperature of this attempt (empty-answer retries raise it).
    pub temperature: f64,
    /// Most tokens the attempt may generate.
    pub max_tokens: u32,
    /// Markers that end generation early; the text up to and including
    /// the first one found is kept.
    pub stop_markers: Vec<String>,
    /// Markers after which one whole JSON value (array or object) is the
    /// complete answer: generation ends once it is closed.
    pub complete_after: Vec<String>,
    /// A prose answer of about this many characters: it ends at the first
    /// sentence end once it holds them, or before a sentence written
    /// again (see [`StopReason::Enough`]).
    pub prose_until: Option<u32>,
    /// Stream the answer, so a stop marker can end the attempt early.
    pub stream: bool,
    /// The latest moment the attempt may end (the caller's overall
    /// deadline); the attempt is cut then even if its own timeout is
    /// longer. `None`: the per-attempt timeout alone.
    pub deadline: Option<Instant>,
    /// Cuts the attempt when set (Ctrl-C): a slow local model can take
    /// minutes per answer, longer than a person waits for an interrupt.
    pub cancel: Option<CancelFlag>,
}

/// A backend's answer to one attempt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BackendReply {
    /// Generated text (cut after a stop marker if one was found).
    pub text: String,
    /// Prompt tokens reported by the API, if it reported usage.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens reported by the API, if it reported usage.
    pub completion_tokens: Option<u64>,
    /// Generation ended at a stop marker.
    pub stopped_at_marker: bool,
    /// Why the answer was cut short by the host (a marker, a complete
    /// JSON value, repetition), if it was.
    pub stop_reason: Option<StopReason>,
    /// The API's finish/stop reason, if given.
    pub finish_reason: Option<String>,
    /// The model id the API says answered, if given.
    pub model: Option<String>,
    /// Prompt tokens the server says it took from its prompt cache
    /// (llama.cpp's `timings.cache_n`, OpenAI-style
    /// `usage.prompt_tokens_details.cached_tokens`, Anthropic's
    /// `usage.cache_read_input_tokens`), as it said it; `None` when it
    /// said nothing, or something that is not a non-negative integer. The
    /// service keeps it only when the server also reported the prompt's
    /// tokens and it is at most those.
    pub reused_prompt_tokens: Option<u64>,
}

/// A chat-completion backend. Implementations do one HTTP attempt per
/// call, bounded by the configured per-attempt deadline; retries, budgets
/// and logging belong to the service.
pub trait Backend: Send + Sync {
    /// The wire protocol this backend speaks.
    fn kind(&self) -> BackendKind;
    /// The base URL requests go to, without a trailing `/`.
    fn endpoint(&self) -> &str;
    /// One completion attempt, not retried here.
    fn complete(&self, call: &BackendCall) -> Result<BackendReply, TransportError>;
    /// The models the server offers.
    fn list_models(&self) -> Result<Vec<String>, TransportError>;
}

/// Builds the backend of `config`, reading its API key from the
/// environment. Does not check sovereignty (the service does).
pub fn build_backend(config: &LlmConfig) -> Result<Arc<dyn Backend>, LlmError> {
    let key = config.api_key_env().and_then(|var| ApiKey::from_env(&var));
    let client = http::HttpClient::new(config);
    Ok(match config.backend {
        BackendKind::Ollama => Arc::new(OllamaBackend::new(client, config.context_window)),
        // Under strict sovereignty every endpoint is local (llama.cpp,
        // vLLM, LM Studio, Ollama's /v1): asking for per-token timings is
        // safe there, and says what the server reused of an answer cut
        // short.
        BackendKind::Openai => Arc::new(
            OpenAiBackend::new(client, key).with_timings_per_token(config.strict_sovereign),
        ),
        BackendKind::Anthropic => {
            let var = config.api_key_env().unwrap_or_default();
            let key = key.ok_or_else(|| LlmError::MissingApiKey {
                backend: "anthropic".to_string(),
                var,
            })?;
            Arc::new(AnthropicBackend::new(client, key))
        }
    })
}

/// Applies the stop rules of `call` to a complete (non-streamed) text.
pub(crate) fn cut_at_marker(text: &str, call: &BackendCall) -> (String, Option<StopReason>) {
    let mut watch =
        stop::StopWatch::new(&call.stop_markers, &call.complete_after, call.prose_until);
    watch.push(text);
    let reason = watch.reason();
    (watch.into_text(), reason)
}

/// A whole (non-streamed) answer `obj` whose text is `content`: the text
/// cut by the call's stop rules, why it stopped, the model it names. The
/// backend adds what its own protocol says (usage, finish reason).
pub(crate) fn whole_reply(
    content: &str,
    obj: &serde_json::Value,
    call: &BackendCall,
) -> BackendReply {
    let (text, reason) = cut_at_marker(content, call);
    BackendReply {
        text,
        stopped_at_marker: reason == Some(StopReason::Marker),
        stop_reason: reason,
        model: obj
            .get("model")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string),
        ..BackendReply::default()
    }
}

/// The first of `pointers` in `obj` that holds a non-negative integer.
fn first_count(obj: &serde_json::Value, pointers: &[&str]) -> Option<u64> {
    pointers
        .iter()
        .find_map(|p| obj.pointer(p).and_then(serde_json::Value::as_u64))
}

/// A reply that breaks the server's protocol.
fn protocol(message: String) -> TransportError {
    TransportError::new(crate::error::TransportErrorKind::Protocol, message)
}

/// The end of a streamed answer: a stream that closed before the server's
/// end event, and that the watch did not cut, is a protocol error keeping
/// the text so far (`unended` says what was missing); else the reply gets
/// the watch's text and why it stopped.
fn end_stream(
    mut reply: BackendReply,
    watch: stop::StopWatch<'_>,
    ended: bool,
    unended: &str,
) -> Result<BackendReply, TransportError> {
    if !ended && !watch.stopped() {
        return Err(protocol(unended.to_string()).with_partial(watch.text()));
    }
    reply.stopped_at_marker = watch.reason() == Some(stop::StopReason::Marker);
    reply.stop_reason = watch.reason();
    reply.text = watch.into_text();
    Ok(reply)
}
