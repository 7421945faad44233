//! Connecting the host's LLM service (`koas-llm`) to kernels: reading the
//! pipeline's `[llm]` table, building the service for a run, answering
//! kernels' `llm_complete` calls, and the identity that joins LLM kernels'
//! cache keys.

use crate::host::LlmHandler;
use koas_kernel_api::LlmRequest;
use koas_llm::{LlmConfig, LlmService};
use serde_json::{json, Map, Value};
use std::path::Path;

/// Command-line overrides of the `[llm]` table.
#[derive(Debug, Clone, Default)]
pub struct LlmOverrides {
    /// `--llm-backend`: replaces the table's `backend`; `None` keeps it.
    pub backend: Option<String>,
    /// `--llm-endpoint`: replaces the table's `endpoint`; `None` keeps it.
    pub endpoint: Option<String>,
    /// `--llm-model`: replaces the table's `model`; `None` keeps it.
    pub model: Option<String>,
    /// `--no-strict-sovereign`: sets `strict_sovereign = false`, allowing
    /// endpoints that are not local; `false` keeps the table's value.
    pub no_strict_sovereign: bool,
}

impl LlmOverrides {
    fn is_empty(&self) -> bool {
        self.backend.is_none()
            && self.endpoint.is_none()
            && self.model.is_none()
            && !self.no_strict_sovereign
    }
}

/// An `[llm]` table that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{origin}: [llm] {message}")]
pub struct LlmSetupError {
    /// The pipeline file (or the flags) the table came from.
    pub origin: String,
    /// What is wrong with the table, e.g. an unknown key or a bad value.
    pub message: String,
}

/// The LLM config in effect: the pipeline's `[llm]` table with the
/// command-line overrides applied, as JSON (for the run record) and parsed.
/// `None` when neither gives an LLM.
pub fn resolve_config(
    table: Option<&Value>,
    overrides: &LlmOverrides,
    origin: &Path,
) -> Result<Option<(Value, LlmConfig)>, LlmSetupError> {
    if table.is_none() && overrides.is_empty() {
        return Ok(None);
    }
    let err = |message: String| LlmSetupError {
        origin: origin.display().to_string(),
        message,
    };
    let mut map: Map<String, Value> = match table {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(err("must be a table".into())),
    };
    if let Some(b) = &overrides.backend {
        map.insert("backend".into(), json!(b));
    }
    if let Some(e) = &overrides.endpoint {
        map.insert("endpoint".into(), json!(e));
    }
    if let Some(m) = &overrides.model {
        map.insert("model".into(), json!(m));
    }
    if overrides.no_strict_sovereign {
        map.insert("strict_sovereign".into(), json!(false));
    }
    let value = Value::Object(map);
    let config = LlmConfig::from_json(value.clone()).map_err(|e| err(e.to_string()))?;
    Ok(Some((value, config)))
}

/// Model identity and sampling parameters: what can change an LLM
/// kernel's output, hence part of its cache key. The endpoint is not: the
/// same model served elsewhere answers the same.
pub fn identity(config: &LlmConfig) -> Value {
    json!({
        "backend": config.backend.as_str(),
        "models": config.role_models(),
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "context_window": config.context_window,
    })
}

/// The LLM service answering kernels' requests during one run.
pub struct ServiceHandler {
    service: LlmService,
}

impl ServiceHandler {
    /// Wraps a built service; the handler then answers every kernel's
    /// `llm_complete` call of the run through it.
    pub fn new(service: LlmService) -> ServiceHandler {
        ServiceHandler { service }
    }

    /// The wrapped service (for its session metadata and exchange log).
    pub fn service(&self) -> &LlmService {
        &self.service
    }
}

impl LlmHandler for ServiceHandler {
    fn complete(&self, _kernel: &str, request: &LlmRequest) -> Result<Value, String> {
        let response = self.service.complete(request).map_err(|e| e.to_string())?;
        serde_json::to_value(response).map_err(|e| format!("cannot encode the LLM answer: {e}"))
    }

    fn session_metadata(&self) -> Option<Value> {
        serde_json::to_value(self.service.session_metadata()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_table_and_no_flags_means_no_llm() {
        assert!(
            resolve_config(None, &LlmOverrides::default(), Path::new("p.toml"))
                .expect("ok")
                .is_none()
        );
    }

    #[test]
    fn flags_override_the_table_and_errors_name_the_file() {
        let table = json!({"backend": "openai", "endpoint": "http://127.0.0.1:1", "model": "m"});
        let o = LlmOverrides {
            model: Some("other".into()),
            no_strict_sovereign: true,
            ..LlmOverrides::default()
        };
        let (value, config) = resolve_config(Some(&table), &o, Path::new("p.toml"))
            .expect("valid")
            .expect("some");
        assert_eq!(value["model"], "other");
        assert!(!config.strict_sovereign);
        let bad = json!({"backend": "openai", "temprature": 0.1});
        let e = resolve_config(Some(&bad), &LlmOverrides::default(), Path::new("p.toml"))
            .expect_err("unknown key");
        let msg = e.to_string();
        assert!(
            msg.contains("p.toml") && msg.contains("temprature"),
            "{msg}"
        );
    }

    #[test]
    fn identity_ignores_the_endpoint_but_not_the_model() {
        let a = LlmConfig::new(koas_llm::BackendKind::Openai, "http://127.0.0.1:1", "m");
        let b = LlmConfig::new(koas_llm::BackendKind::Openai, "http://127.0.0.1:2", "m");
        let c = LlmConfig::new(koas_llm::BackendKind::Openai, "http://127.0.0.1:1", "n");
        assert_eq!(identity(&a), identity(&b));
        assert_ne!(identity(&a), identity(&c));
    }
}
