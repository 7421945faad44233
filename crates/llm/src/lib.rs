//! # koas-llm — the LLM host service
//!
//! Kernels never talk to a model. They call `ctx.llm_complete(&LlmRequest)`
//! and the host answers through this crate, which owns everything between
//! the prompt and the text. Keeping all of it on the host side is what
//! makes a run auditable and replayable without a model:
//!
//! * **backends** ([`backend`]): Ollama's native `/api/chat` (NDJSON
//!   stream), any OpenAI-compatible `/v1/chat/completions` (SSE: llama.cpp,
//!   vLLM, LM Studio, Ollama `/v1`) and Anthropic's `/v1/messages` (SSE),
//!   over `ureq` with a deadline per attempt; streaming stops as soon as a
//!   stop marker (e.g. `END_ANSWER`) appears, keeping the text up to it,
//!   once a whole JSON value follows a "complete after" marker, when lines
//!   repeat, and, for a request that asks for prose
//!   (`LlmRequest::prose_until(chars)`), at the first sentence end once
//!   the text holds `chars` characters (`ended_by: "enough"`) or before a
//!   sentence written a second time (`ended_by: "repetition"`); see
//!   [`backend::StopReason`];
//! * **sovereignty** ([`sovereignty`]): strict by default — only loopback
//!   or declared-local endpoints, no Anthropic — unless the user opts out;
//!   the addresses a name resolves to are checked, not only the name, and
//!   redirects are never followed;
//!   API keys only from environment variables, never printable
//!   ([`ApiKey`]);
//! * **failure handling**: at most `max_retries` (3) transport retries with
//!   exponential backoff + jitter, then `TRANSPORT_FAILURE` naming the
//!   endpoint and the last error; empty answers retried with temperature
//!   nudges (0.10 → 0.15 → 0.20); malformed output is a result;
//! * **tokens and budgets** ([`budget`]): usage from the API, estimated
//!   (and flagged) only when absent; a token budget per call and one per
//!   run (exhausting it ends the session with `SESSION_BUDGET_EXHAUSTED`);
//!   several endpoints of one model, dispatched by load with failover
//!   ([`EndpointPool`]);
//! * **exchange log** ([`exchange`]) `llm/exchanges.jsonl`, append-only and
//!   fsynced, with what the server said it reused of each prompt
//!   (`reused_prompt_tokens`: llama.cpp's `timings.cache_n`, OpenAI-style
//!   `cached_tokens`, Anthropic's `cache_read_input_tokens`; absent, not
//!   0, when it said nothing), added up in the session metadata; **response cache** ([`cache`]) keyed by input hash + model +
//!   parameters; **replay** ([`replay`]) from the log with no network;
//! * **calibration** ([`calibrate()`]) and **ping** ([`ping()`]), each within
//!   an overall deadline (`calibrate_deadline_secs`, `ping_timeout_secs`);
//! * **progress** ([`progress`]): an indicatif bar on a terminal, log lines
//!   otherwise.
//!
//! The canonicalizer lives in `koas-extract`, which kernels link directly
//! (with its forgiving readers, to build their own parsers of their own
//! answer formats); this crate records the canonicalizer's verdict on
//! every answer and its hashes in the session metadata. How a kernel reads
//! its answer format is the kernel's business, recorded in its outputs.
//!
//! ## The glue API for the runtime
//!
//! ```no_run
//! use koas_llm::{calibrate, ping, LlmConfig, LlmService, ReplaySource, auto_progress};
//! use koas_kernel_api::LlmRequest;
//! # fn main() -> Result<(), koas_llm::LlmError> {
//! let config = LlmConfig::from_json(serde_json::json!({
//!     "backend": "openai", "endpoint": "http://127.0.0.1:8081", "model": "smollm2-135m"
//! }))?;
//! let workspace = std::path::Path::new(".koas/runs/demo");
//!
//! // `koas llm ping`
//! let report = ping(&config)?;
//! println!("{} models at {}", report.models.len(), report.endpoint);
//!
//! // A run: one service per run, shared by every kernel thread.
//! let service = LlmService::builder(config.clone(), workspace)
//!     .progress(auto_progress())
//!     .build()?;
//! // `koas llm calibrate` (or a preflight step)
//! calibrate(&service)?.require_pass()?;
//! // The host's `llm_complete` callback:
//! let answer = service.complete(&LlmRequest::new("edit", "Fix: teh cat").stop_marker("END_ANSWER"))?;
//! println!("{}", answer.text);
//! // Into the run record:
//! let metadata = serde_json::to_value(service.session_metadata()).expect("serialisable");
//! # let _ = metadata;
//!
//! // `koas replay WORKSPACE`: the same pipeline, answers from the log.
//! let source = ReplaySource::from_exchange_log(&workspace.join("llm/exchanges.jsonl"))?;
//! let replaying = LlmService::replay(config, workspace, source)?;
//! # let _ = replaying;
//! # Ok(())
//! # }
//! ```
//!
//! Errors are [`LlmError`]s with a stable [`LlmError::code`]; the host turns
//! them into the kernel's `Err(String)` with `to_string()`, which never
//! contains an API key.

#![deny(missing_docs)]

pub mod backend;
pub mod budget;
pub mod cache;
mod calibrate;
pub mod config;
mod error;
pub mod exchange;
pub mod keys;
mod metadata;
mod ping;
mod pool;
pub mod progress;
pub mod prompts;
pub mod replay;
mod retry;
mod secret;
mod service;
pub mod sovereignty;
mod tokens;

pub use calibrate::{
    calibrate, calibrate_role, CalibrationReport, CalibrationRun, CALIBRATION_RUNS,
    CALIBRATION_TEMPLATES,
};
pub use config::{BackendKind, EndpointConfig, EndpointSpec, EndpointTable, LlmConfig};
pub use error::{AbortReason, LlmError, TransportError, TransportErrorKind};
pub use exchange::{read_exchanges, Exchange, ExchangeOutcome, ExchangeSource};
pub use metadata::{CallCounts, CanonicalizerIdentity, SessionMetadata};
pub use ping::{ping, ping_endpoints, EndpointPing, PingAll, PingReport};
pub use pool::{model_disagreement, EndpointLoad, EndpointPool};
pub use progress::{auto_progress, LogLinesProgress, NoProgress, ProgressSink, TerminalProgress};
pub use prompts::{Prompts, Template, TemplateSource};
pub use replay::ReplaySource;
pub use retry::Backoff;
pub use secret::ApiKey;
pub use service::{LlmService, LlmServiceBuilder, CACHE_DIR, EXCHANGE_LOG, REPLAY_EXCHANGE_LOG};
pub use tokens::estimate_tokens;
