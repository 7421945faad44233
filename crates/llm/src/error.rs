//! Errors of the LLM host service.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What went wrong with one HTTP attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportErrorKind {
    /// The connection could not be made (refused, DNS, TLS).
    Connect,
    /// The attempt ran past its deadline.
    Timeout,
    /// The server answered with an error status.
    Http,
    /// The server's answer did not follow the backend's wire format.
    Protocol,
    /// Reading or writing the connection failed.
    Io,
    /// The request itself is invalid (bad URL, unsupported scheme).
    Request,
    /// Strict sovereignty refused the connection: the host or an address
    /// it resolves to is not local. Never retried.
    Sovereignty,
}

/// A failed HTTP attempt. Retried when [`TransportError::retryable`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TransportError {
    /// What kind of failure it was; `retryable` says whether to try again.
    pub kind: TransportErrorKind,
    /// The HTTP status, for [`TransportErrorKind::Http`].
    pub status: Option<u16>,
    /// A description naming what failed.
    pub message: String,
    /// Whether another attempt may succeed (connection failures, timeouts,
    /// 5xx, 408 and 429 are retried; other 4xx are not).
    pub retryable: bool,
    /// Text streamed before the failure, kept for the exchange log.
    pub partial_text: Option<String>,
}

impl TransportError {
    /// A new error of `kind`; retryable unless the request itself is
    /// invalid or sovereignty refused it.
    pub fn new(kind: TransportErrorKind, message: impl Into<String>) -> Self {
        let retryable = !matches!(
            kind,
            TransportErrorKind::Request | TransportErrorKind::Sovereignty
        );
        TransportError {
            kind,
            status: None,
            message: message.into(),
            retryable,
            partial_text: None,
        }
    }

    /// An error status from the server.
    pub fn http(status: u16, body: &str) -> Self {
        let retryable = status >= 500 || status == 408 || status == 429;
        // The server wrote the body: its control characters are shown
        // escaped, never sent raw to a terminal or a log.
        let snippet: String = body.chars().take(300).collect();
        let snippet = koas_kernel_api::terminal::escape_controls(snippet.trim()).into_owned();
        TransportError {
            kind: TransportErrorKind::Http,
            status: Some(status),
            message: format!("HTTP {status}: {snippet}"),
            retryable,
            partial_text: None,
        }
    }

    /// The same error, not retried.
    pub fn fatal(mut self) -> Self {
        self.retryable = false;
        self
    }

    /// Attaches text received before the failure.
    pub fn with_partial(mut self, partial: &str) -> Self {
        if !partial.is_empty() {
            self.partial_text = Some(partial.to_string());
        }
        self
    }
}

/// Why a session-level stop happened; recorded in the run record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AbortReason {
    /// The next call would exceed the per-run token budget; the session stops
    /// at once rather than finish work past its ceiling.
    SessionBudgetExhausted,
    /// A request failed after all transport retries (with
    /// `abort_on_transport_failure`): retrying without end would hide an
    /// unreliable server and skew which work gets done.
    TransportFailure,
    /// Strict sovereignty refused a connection (the endpoint's name
    /// resolved to an address that is not local): every later call would
    /// go to the same place.
    Sovereignty,
    /// The person running koas pressed Ctrl-C (or the run was cancelled):
    /// no new request starts and the ones in flight are cut.
    Cancelled,
    /// The configured endpoints do not serve the same model: answers
    /// would depend on which endpoint happened to take a request.
    ModelMismatch,
}

impl fmt::Display for AbortReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AbortReason::SessionBudgetExhausted => "SESSION_BUDGET_EXHAUSTED",
            AbortReason::TransportFailure => "TRANSPORT_FAILURE",
            AbortReason::Sovereignty => "SOVEREIGNTY",
            AbortReason::Cancelled => "CANCELLED",
            AbortReason::ModelMismatch => "MODEL_MISMATCH",
        })
    }
}

/// An error of the LLM service. [`LlmError::code`] gives a stable code.
///
/// No variant ever carries an API key: keys are read from the environment
/// into a redacting wrapper, and every server-provided message is passed
/// through redaction before it is stored here.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The configuration is invalid: an unknown key, a value out of range or
    /// of the wrong type.
    #[error("LLM config: {0}")]
    Config(String),
    /// Strict sovereignty refused the backend or endpoint.
    #[error("SOVEREIGNTY: {0}")]
    Sovereignty(String),
    /// The API key's environment variable is not set.
    #[error("the {backend} backend needs an API key in the environment variable {var}, which is not set")]
    MissingApiKey {
        /// The backend needing the key (e.g. `anthropic`).
        backend: String,
        /// The variable's name (never its value).
        var: String,
    },
    /// All transport attempts of one request failed.
    #[error("TRANSPORT_FAILURE: {endpoint} failed after {attempts} attempt(s): {last_error}")]
    TransportFailure {
        /// The endpoint base URL called.
        endpoint: String,
        /// Attempts made (1 + retries).
        attempts: u32,
        /// The last attempt's error, redacted.
        last_error: String,
    },
    /// The server answered this request with a client error that the
    /// request itself caused (HTTP 400, 413 or 422: a prompt longer than
    /// the server's context, a payload it refuses). Other requests may
    /// succeed, so the session goes on.
    #[error("REQUEST_REJECTED: {endpoint} refused the request (HTTP {status}): {last_error}")]
    RequestRejected {
        /// The endpoint base URL called.
        endpoint: String,
        /// The HTTP status.
        status: u16,
        /// The server's error, redacted.
        last_error: String,
    },
    /// An overall deadline (of a calibration, say) passed before the
    /// request was answered; the attempt in progress was cut and no retry
    /// was started.
    #[error("DEADLINE_EXCEEDED: {endpoint}: {what} did not finish within its deadline of {secs} s ({setting}); {attempts} attempt(s), last error: {last_error}")]
    DeadlineExceeded {
        /// The endpoint base URL called.
        endpoint: String,
        /// What the deadline bounds, e.g. `calibration`.
        what: String,
        /// The deadline, in seconds.
        secs: f64,
        /// The config key and flag that set it.
        setting: String,
        /// Attempts made before the deadline passed.
        attempts: u32,
        /// The last attempt's error, redacted.
        last_error: String,
    },
    /// The prompt alone exceeds the per-call token budget, so no answer could
    /// fit; the call is not made (the session goes on).
    #[error("CALL_BUDGET_EXCEEDED: the prompt needs about {estimated} tokens, over the per-call budget of {budget}")]
    CallBudgetExceeded {
        /// Estimated prompt tokens (system + user prompt: UTF-8 bytes / 4,
        /// rounded up).
        estimated: u64,
        /// The per-call budget, in tokens.
        budget: u64,
    },
    /// The per-run token budget is exhausted; no further calls are made.
    #[error("SESSION_BUDGET_EXHAUSTED: {used} tokens used, {needed} more could be needed, per-run budget is {budget}")]
    SessionBudgetExhausted {
        /// Tokens really used by the run so far.
        used: u64,
        /// The worst case of the refused call.
        needed: u64,
        /// The per-run budget, in tokens.
        budget: u64,
    },
    /// An earlier failure aborted the session.
    #[error("the LLM session was aborted earlier ({reason}); no further calls are made")]
    SessionAborted {
        /// The failure that aborted it, also recorded in the session metadata.
        reason: AbortReason,
    },
    /// Replay has no logged answer for this request.
    #[error("REPLAY_MISS: the exchange log has no answer for input {input_hash} with model {model} (key {cache_key})")]
    ReplayMiss {
        /// The request's input hash (`sha256:` of system + user prompt).
        input_hash: String,
        /// The exact model id the request resolved to.
        model: String,
        /// The cache key replay looked up (input hash + model + parameters).
        cache_key: String,
    },
    /// The exchange log being replayed is unreadable or inconsistent.
    #[error("REPLAY_LOG: {0}")]
    ReplayLog(String),
    /// Calibration found drifting or unextractable answers.
    #[error("CALIBRATION_FAILED: {0}")]
    CalibrationFailed(String),
    /// The endpoints do not serve the same model (checked before the first
    /// request is sent); fatal for the session.
    #[error("MODEL_MISMATCH: the endpoints do not serve the same model: {0}")]
    ModelMismatch(String),
    /// A request names a role with no configured model.
    #[error("no model is configured for the LLM role {0:?}")]
    UnknownRole(String),
    /// A workspace file (log, cache) could not be written.
    #[error("LLM workspace I/O: {0}")]
    Io(String),
}

impl LlmError {
    /// The stable code recorded in logs and run records.
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::Config(_) => "CONFIG",
            LlmError::Sovereignty(_) => "SOVEREIGNTY",
            LlmError::MissingApiKey { .. } => "MISSING_API_KEY",
            LlmError::TransportFailure { .. } => "TRANSPORT_FAILURE",
            LlmError::RequestRejected { .. } => "REQUEST_REJECTED",
            LlmError::DeadlineExceeded { .. } => "DEADLINE_EXCEEDED",
            LlmError::CallBudgetExceeded { .. } => "CALL_BUDGET_EXCEEDED",
            LlmError::SessionBudgetExhausted { .. } => "SESSION_BUDGET_EXHAUSTED",
            LlmError::SessionAborted { .. } => "SESSION_ABORTED",
            LlmError::ReplayMiss { .. } => "REPLAY_MISS",
            LlmError::ReplayLog(_) => "REPLAY_LOG",
            LlmError::CalibrationFailed(_) => "CALIBRATION_FAILED",
            LlmError::ModelMismatch(_) => "MODEL_MISMATCH",
            LlmError::UnknownRole(_) => "UNKNOWN_ROLE",
            LlmError::Io(_) => "IO",
        }
    }
}

impl From<std::io::Error> for LlmError {
    fn from(e: std::io::Error) -> Self {
        LlmError::Io(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_error_body_is_shown_escaped() {
        let err = TransportError::http(500, "\u{1b}]0;PWNED\u{7}\u{1b}[2J\rkoas: run OK\n");
        assert_eq!(
            err.message,
            "HTTP 500: \\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\\rkoas: run OK"
        );
        assert!(err.retryable);
    }
}
