//! `koas llm ping`: is the endpoint up, and which models does it offer?
//! With several endpoints: is each up, and do they serve the same models?

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
///
/// With several endpoints this pings the first; [`ping_endpoints`] pings
/// them all.
pub fn ping(config: &LlmConfig) -> Result<PingReport, LlmError> {
    config.validate()?;
    check_sovereignty(config)?;
    let first = config.endpoints().remove(0);
    let config = &config.for_endpoint(&first);
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

/// One endpoint's ping among several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointPing {
    /// Endpoint base URL.
    pub endpoint: String,
    /// What it answered, when it did.
    pub report: Option<PingReport>,
    /// Why it did not, when it did not.
    pub error: Option<String>,
}

/// Every endpoint's ping, and whether they agree on the models.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingAll {
    /// One entry per endpoint, in config order.
    pub endpoints: Vec<EndpointPing>,
    /// Whether the endpoints that answered serve the same models (by the
    /// rule of [`crate::model_disagreement`]).
    pub agree: bool,
    /// How they disagree, when they do.
    pub disagreement: Option<String>,
    /// Whether every endpoint answered.
    pub all_up: bool,
}

/// Pings every endpoint of `config` (at once, each within
/// `ping_timeout_secs`) and checks that those that answered serve the
/// same models. A config error or a sovereignty refusal is an error; an
/// endpoint that does not answer is reported in its entry.
pub fn ping_endpoints(config: &LlmConfig) -> Result<PingAll, LlmError> {
    config.validate()?;
    check_sovereignty(config)?;
    let results: Vec<(String, Result<PingReport, LlmError>)> = std::thread::scope(|s| {
        let handles: Vec<_> = config
            .endpoints()
            .into_iter()
            .map(|e| {
                let one = config.for_endpoint(&e);
                (e.url, s.spawn(move || ping(&one)))
            })
            .collect();
        handles
            .into_iter()
            .map(|(url, h)| {
                let result = h
                    .join()
                    .unwrap_or_else(|_| Err(LlmError::Io("the ping thread stopped".to_string())));
                (url, result)
            })
            .collect()
    });
    let listings: Vec<(String, Vec<String>)> = results
        .iter()
        .filter_map(|(url, r)| Some((url.clone(), r.as_ref().ok()?.models.clone())))
        .collect();
    let wanted: Vec<String> = config.role_models().into_values().collect();
    let disagreement = crate::pool::model_disagreement(&listings, &wanted);
    let all_up = results.iter().all(|(_, r)| r.is_ok());
    Ok(PingAll {
        agree: disagreement.is_none(),
        disagreement,
        all_up,
        endpoints: results
            .into_iter()
            .map(|(endpoint, r)| match r {
                Ok(report) => EndpointPing {
                    endpoint,
                    report: Some(report),
                    error: None,
                },
                Err(e) => EndpointPing {
                    endpoint,
                    report: None,
                    error: Some(e.to_string()),
                },
            })
            .collect(),
    })
}
