//! Session metadata for the run record: everything needed to tell later
//! which model, parameters, canonicalizer and budgets produced a run's
//! answers, and why the session stopped early if it did.

use crate::config::BackendKind;
use crate::error::AbortReason;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The canonicalizer's identity for the session: if either hash differs
/// between two runs, their extracted answers may differ too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanonicalizerIdentity {
    /// `sha256:` of the canonicalizer's source.
    pub source_hash: String,
    /// `sha256:` of the self-test's output.
    pub self_test_hash: String,
}

/// Call counters of the session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallCounts {
    /// Requests answered by the backend.
    pub backend: u64,
    /// Requests answered from the response cache.
    pub cache: u64,
    /// Requests answered from the exchange log being replayed.
    pub replay: u64,
    /// Requests that ended in TRANSPORT_FAILURE.
    pub transport_failures: u64,
    /// Requests refused by a budget.
    pub budget_refused: u64,
    /// Requests that stayed empty after retries.
    pub empty_responses: u64,
    /// Answers whose token counts were estimated.
    pub estimated_usage: u64,
}

/// What the run record stores about the LLM session. Contains no secret:
/// only the *name* of the API-key variable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMetadata {
    /// Session id written into every exchange-log line.
    pub session_id: String,
    /// `live` or `replay`.
    pub mode: String,
    /// Wire protocol of the backend (`ollama`, `openai`, `anthropic`).
    pub backend: BackendKind,
    /// Endpoint base URL (the first, when there are several).
    pub endpoint: String,
    /// Every endpoint with its slots, in config order.
    #[serde(default)]
    pub endpoints: Vec<crate::config::EndpointConfig>,
    /// Exact model id per role.
    pub models: BTreeMap<String, String>,
    /// The model's advertised context window in tokens, as configured (a
    /// session constant, never probed).
    pub context_window: u32,
    /// Most tokens a call may generate, frozen for the whole session.
    pub max_tokens: u32,
    /// Temperature of requests that set none.
    pub temperature: f64,
    /// Whether answers were streamed.
    pub stream: bool,
    /// Requests in flight per endpoint.
    pub max_in_flight: usize,
    /// Per-call token budget; `None` when disabled.
    pub budget_per_call: Option<u64>,
    /// Per-run token budget; `None` when disabled.
    pub budget_per_run: Option<u64>,
    /// Whether strict sovereignty (local endpoints only) was on.
    pub strict_sovereign: bool,
    /// Name of the API-key environment variable, if one was used.
    pub api_key_env: Option<String>,
    /// Hashes of the canonicalizer's source and self-test output.
    pub canonicalizer: CanonicalizerIdentity,
    /// Tokens used (prompt + completion, every attempt).
    pub tokens_used: u64,
    /// Prompt tokens of the server's answers (the sum of the exchange
    /// log's `prompt_tokens` over this session's `backend` lines).
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Of `prompt_tokens`, those the server said it reused from its prompt
    /// cache (the sum of the exchange log's `reused_prompt_tokens`).
    /// Absent when no answer said: unknown is not 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_prompt_tokens: Option<u64>,
    /// How requests were answered or refused.
    pub calls: CallCounts,
    /// Why the session stopped early, if it did
    /// (`SESSION_BUDGET_EXHAUSTED`, `TRANSPORT_FAILURE`).
    pub abort_reason: Option<AbortReason>,
    /// Path of the exchange log.
    pub exchange_log: String,
}
