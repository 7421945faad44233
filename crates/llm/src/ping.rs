//! `koas llm ping`: is the endpoint up, and which models does it offer?

use crate::backend::build_backend;
use crate::config::{BackendKind, LlmConfig};
use crate::error::{LlmError, TransportErrorKind};
use crate::secret::{redact, ApiKey};
use crate::sovereignty::check_sovereignty;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// What a ping found, printed by `koas llm ping`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PingReport {
    /// Wire protocol of the backend pinged.
    pub backend: BackendKind,
    /// Endpoint base URL, without a trailing `/`.
    pub endpoint: String,
    /// Round-trip time of the model listing.
    pub latency_ms: u64,
    /// Model ids the server lists, in its order.
    pub models: Vec<String>,
    /// Each configured role's model and whether the server lists it.
    pub configured: BTreeMap<String, (String, bool)>,
}

/// Checks sovereignty, then lists the endpoint's models (Ollama
/// `/api/tags`, OpenAI `/v1/models`, Anthropic `/v1/models`) in one
/// attempt bounded by `ping_timeout_secs` (default 5 s): a ping answers
/// "is it up?", so a hung server is reported quickly, not after the long
/// timeout a generation needs.
pub fn ping(config: &LlmConfig) -> Result<PingReport, LlmError> {
    config.validate()?;
    check_sovereignty(config)?;
    let mut bounded = config.clone();
    bounded.timeout_secs = config.ping_timeout_secs;
    bounded.connect_timeout_secs = config.connect_timeout_secs.min(config.ping_timeout_secs);
    let backend = build_backend(&bounded)?;
    let key = config.api_key_env().and_then(|v| ApiKey::from_env(&v));
    let started = Instant::now();
    let models = backend.list_models().map_err(|e| {
        let message = redact(key.as_ref(), &e.message);
        match e.kind {
            TransportErrorKind::Sovereignty => LlmError::Sovereignty(message),
            TransportErrorKind::Timeout => LlmError::DeadlineExceeded {
                endpoint: config.endpoint(),
                what: "ping".to_string(),
                secs: config.ping_timeout_secs,
                setting: "ping_timeout_secs, --deadline".to_string(),
                attempts: 1,
                last_error: message,
            },
            _ => LlmError::TransportFailure {
                endpoint: config.endpoint(),
                attempts: 1,
                last_error: message,
            },
        }
    })?;
    let configured = config
        .role_models()
        .into_iter()
        .map(|(role, model)| {
            let present = models.contains(&model);
            (role, (model, present))
        })
        .collect();
    Ok(PingReport {
        backend: config.backend,
        endpoint: config.endpoint(),
        latency_ms: started.elapsed().as_millis() as u64,
        models,
        configured,
    })
}
