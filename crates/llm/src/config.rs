//! `[llm]` configuration: backend, models and sampling, plus the knobs
//! that keep a session reproducible and bounded (frozen generation cap,
//! retries, budgets, sovereignty). Every key has a default; unknown keys
//! are refused, so a typo cannot silently fall back to a default.
//!
#![doc = include_str!("keys.md")]

use crate::error::LlmError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// Which wire protocol the backend speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Ollama's native chat API (`/api/chat`, NDJSON streaming).
    #[default]
    Ollama,
    /// OpenAI-compatible chat completions (`/v1/chat/completions`, SSE).
    #[serde(alias = "openai-compatible", alias = "openai_compatible")]
    Openai,
    /// Anthropic's Messages API (`/v1/messages`, SSE). Not local.
    #[serde(alias = "claude")]
    Anthropic,
}

impl BackendKind {
    /// The name used in logs and metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Ollama => "ollama",
            BackendKind::Openai => "openai",
            BackendKind::Anthropic => "anthropic",
        }
    }

    /// The endpoint used when none is configured.
    pub fn default_endpoint(self) -> &'static str {
        match self {
            BackendKind::Ollama => "http://127.0.0.1:11434",
            BackendKind::Openai => "http://127.0.0.1:8080",
            BackendKind::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The API-key variable used when `api_key_env` is not configured.
    pub fn default_api_key_env(self) -> Option<&'static str> {
        match self {
            BackendKind::Ollama => None,
            BackendKind::Openai => Some("OPENAI_API_KEY"),
            BackendKind::Anthropic => Some("ANTHROPIC_API_KEY"),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of `endpoints`: a base URL, or a table with the URL and the
/// endpoint's own slot count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EndpointSpec {
    /// `"http://127.0.0.1:8081/v1"`: the global `max_in_flight` slots.
    Url(String),
    /// `{ url = "...", max_in_flight = 4 }`.
    Table(EndpointTable),
}

/// The table form of an [`EndpointSpec`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointTable {
    /// Base URL.
    pub url: String,
    /// Requests in flight at once on this endpoint; `None`: the global
    /// `max_in_flight`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<usize>,
}

/// One endpoint in effect: where requests go and how many may be in
/// flight there at once.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EndpointConfig {
    /// Base URL, without a trailing `/`.
    pub url: String,
    /// Requests in flight at once on this endpoint (at least 1 once the
    /// config is validated).
    pub slots: usize,
}

/// The LLM configuration (`[llm]` in a pipeline file). See the module
/// documentation for every key and its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// Wire protocol; also picks the default endpoint and API-key variable.
    pub backend: BackendKind,
    /// Base URL; `None` uses [`BackendKind::default_endpoint`] (unless
    /// `endpoints` is set: the two are exclusive).
    pub endpoint: Option<String>,
    /// Several endpoints serving the same model, as URLs or tables with
    /// their own `max_in_flight`; empty: `endpoint` alone.
    pub endpoints: Vec<EndpointSpec>,
    /// Model for roles without their own.
    pub model: Option<String>,
    /// Model of the `edit` role (worker).
    pub edit_model: Option<String>,
    /// Model of the `pyramid` role.
    pub pyramid_model: Option<String>,
    /// Model of the `tutor` role.
    pub tutor_model: Option<String>,
    /// Models of roles other than `edit`, `pyramid` and `tutor`, by role
    /// name.
    pub models: BTreeMap<String, String>,
    /// Sampling temperature for requests that set none (0 to 2).
    pub temperature: f64,
    /// Most tokens a call may generate; frozen for the session. A ceiling:
    /// a request that asks for more is sent with this many.
    #[serde(alias = "num_predict")]
    pub max_tokens: u32,
    /// Advertised context window of the model (tokens).
    pub context_window: u32,
    /// Per-attempt deadline in seconds, the streamed body included.
    // `chunk_timeout` is the specification's name for this key: kept, so a
    // configuration written from it keeps working.
    #[serde(alias = "timeout", alias = "chunk_timeout")]
    pub timeout_secs: f64,
    /// TCP/TLS connect deadline in seconds.
    pub connect_timeout_secs: f64,
    /// Deadline of a ping (connect and model listing), in seconds.
    pub ping_timeout_secs: f64,
    /// Deadline of a whole calibration (all calls, attempts and waits), in
    /// seconds.
    pub calibrate_deadline_secs: f64,
    /// Transport retries after the first attempt.
    pub max_retries: u32,
    /// Backoff before the first transport retry, in ms; doubled per retry.
    pub backoff_initial_ms: u64,
    /// Cap on the backoff delay, in ms (before jitter).
    pub backoff_max_ms: u64,
    /// Random jitter added to each backoff, as a fraction of it.
    pub backoff_jitter: f64,
    /// Retries of an empty answer.
    pub empty_retries: u32,
    /// Temperature added per empty retry.
    pub empty_retry_temperature_step: f64,
    /// Range of the random wait before an empty retry, in ms.
    pub empty_retry_wait_ms: [u64; 2],
    /// Per-call budget, prompt + completion tokens; 0 disables.
    pub budget_per_call: u64,
    /// Per-run budget, tokens of the whole run; 0 disables.
    pub budget_per_run: u64,
    /// Requests in flight per endpoint (an endpoint's own `max_in_flight`
    /// in `endpoints` replaces it for that endpoint).
    pub max_in_flight: usize,
    /// Stream answers, so generation can stop as soon as a stop marker
    /// appears.
    pub stream: bool,
    /// Refuse non-local endpoints and backends.
    pub strict_sovereign: bool,
    /// Host names or IPs treated as local, hence allowed under strict
    /// sovereignty (loopback always is).
    pub local_hosts: Vec<String>,
    /// Environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Answer repeated requests from `.koas/llm-cache/` (never while
    /// replaying).
    pub response_cache: bool,
    /// Refuse further calls after a transport failure.
    pub abort_on_transport_failure: bool,
    /// Longest accepted answer, in bytes.
    pub max_response_bytes: usize,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            backend: BackendKind::Ollama,
            endpoint: None,
            endpoints: Vec::new(),
            model: None,
            edit_model: None,
            pyramid_model: None,
            tutor_model: None,
            models: BTreeMap::new(),
            temperature: 0.1,
            max_tokens: 2048,
            context_window: 4096,
            timeout_secs: 120.0,
            connect_timeout_secs: 10.0,
            ping_timeout_secs: 5.0,
            calibrate_deadline_secs: 300.0,
            max_retries: 3,
            backoff_initial_ms: 1000,
            backoff_max_ms: 8000,
            backoff_jitter: 0.25,
            empty_retries: 2,
            empty_retry_temperature_step: 0.05,
            empty_retry_wait_ms: [3000, 8000],
            budget_per_call: 6000,
            budget_per_run: 1_000_000,
            max_in_flight: 2,
            stream: true,
            strict_sovereign: true,
            local_hosts: Vec::new(),
            api_key_env: None,
            response_cache: true,
            abort_on_transport_failure: true,
            max_response_bytes: 8 * 1024 * 1024,
        }
    }
}

impl LlmConfig {
    /// A config for `backend` at `endpoint` answering every role with `model`.
    pub fn new(
        backend: BackendKind,
        endpoint: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        LlmConfig {
            backend,
            endpoint: Some(endpoint.into()),
            model: Some(model.into()),
            ..LlmConfig::default()
        }
    }

    /// Reads a config from a JSON value (for example the `[llm]` table of
    /// a pipeline file converted by the host), then validates it.
    pub fn from_json(value: serde_json::Value) -> Result<Self, LlmError> {
        let config: LlmConfig =
            serde_json::from_value(value).map_err(|e| LlmError::Config(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// The endpoint in effect, without a trailing `/`: the first of
    /// [`LlmConfig::endpoints`] when there are several.
    pub fn endpoint(&self) -> String {
        match self.endpoints.first() {
            Some(first) => first.url().trim_end_matches('/').to_string(),
            None => self
                .endpoint
                .as_deref()
                .unwrap_or(self.backend.default_endpoint())
                .trim_end_matches('/')
                .to_string(),
        }
    }

    /// Every endpoint in effect, in config order: `endpoints` when set,
    /// else the one `endpoint`. An endpoint without its own
    /// `max_in_flight` gets the global one.
    pub fn endpoints(&self) -> Vec<EndpointConfig> {
        if self.endpoints.is_empty() {
            return vec![EndpointConfig {
                url: self.endpoint(),
                slots: self.max_in_flight,
            }];
        }
        self.endpoints
            .iter()
            .map(|spec| EndpointConfig {
                url: spec.url().trim_end_matches('/').to_string(),
                slots: spec.slots().unwrap_or(self.max_in_flight),
            })
            .collect()
    }

    /// Requests in flight at once over all endpoints: the sum of their
    /// slots (a host keeps that many outstanding to keep every slot busy).
    pub fn total_slots(&self) -> usize {
        self.endpoints().iter().map(|e| e.slots).sum()
    }

    /// This config reduced to one of its endpoints (what a backend for
    /// that endpoint is built from).
    pub fn for_endpoint(&self, endpoint: &EndpointConfig) -> LlmConfig {
        LlmConfig {
            endpoint: Some(endpoint.url.clone()),
            endpoints: Vec::new(),
            max_in_flight: endpoint.slots,
            ..self.clone()
        }
    }

    /// The API-key variable in effect, if any.
    pub fn api_key_env(&self) -> Option<String> {
        self.api_key_env
            .clone()
            .or_else(|| self.backend.default_api_key_env().map(str::to_string))
    }

    /// The model id for `role`: its own model if configured, else `model`.
    pub fn model_for(&self, role: &str) -> Result<String, LlmError> {
        let own = match role {
            "edit" => self.edit_model.as_ref(),
            "pyramid" => self.pyramid_model.as_ref(),
            "tutor" => self.tutor_model.as_ref(),
            other => self.models.get(other),
        };
        own.or(self.model.as_ref())
            .or(self.edit_model.as_ref().filter(|_| role.is_empty()))
            .cloned()
            .ok_or_else(|| LlmError::UnknownRole(role.to_string()))
    }

    /// Every configured role and its model, for the session metadata.
    pub fn role_models(&self) -> BTreeMap<String, String> {
        let mut out = self.models.clone();
        for (role, model) in [
            ("edit", &self.edit_model),
            ("pyramid", &self.pyramid_model),
            ("tutor", &self.tutor_model),
            ("default", &self.model),
        ] {
            if let Some(m) = model {
                out.insert(role.to_string(), m.clone());
            }
        }
        out
    }

    /// `timeout_secs` as a duration (120 s if it cannot be represented).
    pub fn timeout(&self) -> Duration {
        secs(self.timeout_secs)
    }

    /// `connect_timeout_secs` as a duration (120 s if it cannot be
    /// represented).
    pub fn connect_timeout(&self) -> Duration {
        secs(self.connect_timeout_secs)
    }

    /// `ping_timeout_secs` as a duration (120 s if it cannot be
    /// represented).
    pub fn ping_timeout(&self) -> Duration {
        secs(self.ping_timeout_secs)
    }

    /// `calibrate_deadline_secs` as a duration (120 s if it cannot be
    /// represented).
    pub fn calibrate_deadline(&self) -> Duration {
        secs(self.calibrate_deadline_secs)
    }

    /// Checks value ranges (timeouts, temperature, retries, waits, jitter)
    /// and that the endpoint is an `http(s)` URL.
    pub fn validate(&self) -> Result<(), LlmError> {
        let bad = |m: &str| Err(LlmError::Config(m.to_string()));
        for (key, value) in [
            ("timeout_secs", self.timeout_secs),
            ("connect_timeout_secs", self.connect_timeout_secs),
            ("ping_timeout_secs", self.ping_timeout_secs),
            ("calibrate_deadline_secs", self.calibrate_deadline_secs),
        ] {
            if !(value > 0.0 && value.is_finite()) {
                return Err(LlmError::Config(format!("{key} must be a positive number")));
            }
        }
        if !(0.0..=2.0).contains(&self.temperature) {
            return bad("temperature must be between 0 and 2");
        }
        if self.max_in_flight == 0 {
            return bad("max_in_flight must be at least 1");
        }
        if self.max_tokens == 0 || self.context_window == 0 {
            return bad("max_tokens and context_window must be at least 1");
        }
        if self.max_retries > 10 {
            return bad("max_retries must be at most 10");
        }
        if self.empty_retry_wait_ms[0] > self.empty_retry_wait_ms[1] {
            return bad("empty_retry_wait_ms must be [min, max] with min <= max");
        }
        if !(0.0..=1.0).contains(&self.backoff_jitter) {
            return bad("backoff_jitter must be between 0 and 1");
        }
        if self.endpoint.is_some() && !self.endpoints.is_empty() {
            return bad("set either `endpoint` (one server) or `endpoints` (several), not both");
        }
        let endpoints = self.endpoints();
        for (i, e) in endpoints.iter().enumerate() {
            let endpoint = &e.url;
            let url = url::Url::parse(endpoint)
                .map_err(|err| LlmError::Config(format!("endpoint {endpoint:?}: {err}")))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(LlmError::Config(format!(
                    "endpoint {endpoint:?} must be an http:// or https:// URL"
                )));
            }
            if e.slots == 0 {
                return Err(LlmError::Config(format!(
                    "endpoint {endpoint}: max_in_flight must be at least 1"
                )));
            }
            // The same server twice would get twice its slots and look
            // like two healthy endpoints when it is down.
            if endpoints[..i].iter().any(|earlier| earlier.url == e.url) {
                return Err(LlmError::Config(format!(
                    "endpoint {endpoint} is listed twice in `endpoints`"
                )));
            }
        }
        Ok(())
    }
}

impl EndpointSpec {
    /// The base URL as written.
    pub fn url(&self) -> &str {
        match self {
            EndpointSpec::Url(url) => url,
            EndpointSpec::Table(t) => &t.url,
        }
    }

    /// The endpoint's own slot count, if it sets one.
    pub fn slots(&self) -> Option<usize> {
        match self {
            EndpointSpec::Url(_) => None,
            EndpointSpec::Table(t) => t.max_in_flight,
        }
    }
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::from_secs(120))
}

#[cfg(test)]
mod tests {

    /// The keys of the documented table (`keys.md`): the first column's
    /// names, aliases included, with the default column.
    fn documented() -> Vec<(Vec<String>, String)> {
        include_str!("keys.md")
            .lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| {
                let cells: Vec<&str> = l.split(" | ").collect();
                let names = cells[0]
                    .split('`')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_owned)
                    .collect();
                (names, cells[1].to_owned())
            })
            .collect()
    }

    #[test]
    fn the_key_table_lists_every_key_with_the_default_the_code_uses() {
        let defaults = serde_json::to_value(LlmConfig::default()).unwrap();
        let defaults = defaults.as_object().unwrap();
        let table = documented();
        let named: Vec<&String> = table.iter().flat_map(|(names, _)| names).collect();
        for key in defaults.keys() {
            assert!(named.contains(&key), "`{key}` is missing from keys.md");
        }
        for (names, default) in &table {
            // A row with one key and a literal default: the code agrees.
            let literal = default.trim_matches('`');
            if names.len() == 1 && default.starts_with('`') && !literal.contains('`') {
                let value = &defaults[&names[0]];
                let shown = match value {
                    Value::String(s) => format!("\"{s}\""),
                    other => other.to_string(),
                };
                let same = shown == literal
                    || value
                        .as_f64()
                        .zip(literal.parse::<f64>().ok())
                        .is_some_and(|(a, b)| a == b)
                    || (literal == "{}" && value == &serde_json::json!({}))
                    || (literal == "[]" && value == &serde_json::json!([]))
                    || shown.replace(',', ", ") == literal;
                assert!(
                    same,
                    "`{}`: keys.md says {literal}, the code {shown}",
                    names[0]
                );
            }
            // Every name is a key, or an alias the code accepts.
            for name in names {
                let known = defaults.contains_key(name)
                    || (ALIASES.contains(&name.as_str())
                        && serde_json::from_value::<LlmConfig>(
                            serde_json::json!({ name.as_str(): 1 }),
                        )
                        .is_ok());
                assert!(known, "keys.md names `{name}`, which is no key");
            }
        }
    }

    #[test]
    fn docs_llm_md_shows_the_same_key_table() {
        let docs = include_str!("../../../docs/llm.md");
        let shown = docs
            .split("<!-- keys:begin -->\n")
            .nth(1)
            .and_then(|rest| rest.split("<!-- keys:end -->").next())
            .expect("docs/llm.md marks its key table");
        assert_eq!(
            shown,
            include_str!("keys.md"),
            "docs/llm.md's key table differs from crates/llm/src/keys.md: copy the file between the markers"
        );
    }

    /// Names the table shows as aliases.
    const ALIASES: &[&str] = &["num_predict", "timeout", "chunk_timeout"];

    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn defaults_follow_the_specs() {
        let c = LlmConfig::default();
        assert_eq!(c.backend, BackendKind::Ollama);
        assert_eq!(c.endpoint(), "http://127.0.0.1:11434");
        assert!(c.strict_sovereign);
        assert_eq!(c.max_retries, 3);
        assert_eq!(c.max_tokens, 2048);
        assert_eq!(c.empty_retries, 2);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn claude_is_an_alias_and_aliases_of_keys_work() {
        let c = LlmConfig::from_json(json!({
            "backend": "claude", "num_predict": 512, "timeout": 30, "model": "m"
        }))
        .unwrap();
        assert_eq!(c.backend, BackendKind::Anthropic);
        assert_eq!(c.max_tokens, 512);
        assert_eq!(c.timeout(), Duration::from_secs(30));
        assert_eq!(c.api_key_env().as_deref(), Some("ANTHROPIC_API_KEY"));
        // The specification's name for the timeout.
        let c = LlmConfig::from_json(json!({"chunk_timeout": 300, "model": "m"})).unwrap();
        assert_eq!(c.timeout(), Duration::from_secs(300));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        assert!(LlmConfig::from_json(json!({"api_key": "x"})).is_err());
        assert!(LlmConfig::from_json(json!({"max_in_flight": 0})).is_err());
        assert!(LlmConfig::from_json(json!({"endpoint": "ftp://x"})).is_err());
        assert!(LlmConfig::from_json(json!({"temperature": 9})).is_err());
        let e = LlmConfig::from_json(json!({"calibrate_deadline_secs": 0})).unwrap_err();
        assert!(e.to_string().contains("calibrate_deadline_secs"), "{e}");
        let e = LlmConfig::from_json(json!({"ping_timeout_secs": -1})).unwrap_err();
        assert!(e.to_string().contains("ping_timeout_secs"), "{e}");
    }

    #[test]
    fn ping_and_calibration_have_short_bounded_deadlines_by_default() {
        let c = LlmConfig::default();
        assert_eq!(c.ping_timeout(), Duration::from_secs(5));
        assert_eq!(c.calibrate_deadline(), Duration::from_secs(300));
    }

    #[test]
    fn roles_resolve_to_models() {
        let mut c = LlmConfig::new(BackendKind::Openai, "http://127.0.0.1:1/", "base");
        c.tutor_model = Some("tutor-m".into());
        c.models.insert("judge".into(), "judge-m".into());
        assert_eq!(c.model_for("tutor").unwrap(), "tutor-m");
        assert_eq!(c.model_for("judge").unwrap(), "judge-m");
        assert_eq!(c.model_for("edit").unwrap(), "base");
        assert_eq!(c.endpoint(), "http://127.0.0.1:1");
        c.model = None;
        assert!(matches!(c.model_for("edit"), Err(LlmError::UnknownRole(_))));
    }

    #[test]
    fn endpoints_come_as_urls_or_tables_with_their_own_slots() {
        let c = LlmConfig::from_json(json!({
            "max_in_flight": 3,
            "endpoints": ["http://127.0.0.1:8081/v1/", {"url": "http://127.0.0.1:8082/v1", "max_in_flight": 5}]
        }))
        .unwrap();
        assert_eq!(
            c.endpoints(),
            vec![
                EndpointConfig {
                    url: "http://127.0.0.1:8081/v1".into(),
                    slots: 3
                },
                EndpointConfig {
                    url: "http://127.0.0.1:8082/v1".into(),
                    slots: 5
                },
            ]
        );
        assert_eq!(c.total_slots(), 8);
        assert_eq!(c.endpoint(), "http://127.0.0.1:8081/v1");
        // One `endpoint` is one endpoint with the global slots.
        let one =
            LlmConfig::from_json(json!({"endpoint": "http://127.0.0.1:9/", "max_in_flight": 4}))
                .unwrap();
        assert_eq!(
            one.endpoints(),
            vec![EndpointConfig {
                url: "http://127.0.0.1:9".into(),
                slots: 4
            }]
        );
        assert_eq!(one.total_slots(), 4);
        assert_eq!(LlmConfig::default().endpoints().len(), 1);
    }

    #[test]
    fn endpoint_and_endpoints_together_or_bad_entries_are_refused() {
        let e = LlmConfig::from_json(json!({
            "endpoint": "http://127.0.0.1:1", "endpoints": ["http://127.0.0.1:2"]
        }))
        .unwrap_err();
        assert!(e.to_string().contains("either `endpoint`"), "{e}");
        let e = LlmConfig::from_json(json!({"endpoints": ["http://127.0.0.1:2", "ftp://x"]}))
            .unwrap_err();
        assert!(e.to_string().contains("ftp://x"), "{e}");
        let e = LlmConfig::from_json(
            json!({"endpoints": [{"url": "http://127.0.0.1:2", "max_in_flight": 0}]}),
        )
        .unwrap_err();
        assert!(e.to_string().contains("at least 1"), "{e}");
        let e = LlmConfig::from_json(
            json!({"endpoints": ["http://127.0.0.1:2", "http://127.0.0.1:2/"]}),
        )
        .unwrap_err();
        assert!(e.to_string().contains("twice"), "{e}");
        assert!(LlmConfig::from_json(
            json!({"endpoints": [{"url": "http://127.0.0.1:2", "slots": 2}]})
        )
        .is_err());
    }
}
