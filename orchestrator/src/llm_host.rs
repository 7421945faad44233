//! Connecting the host's LLM service (`koas-llm`) to kernels: reading the
//! `[llm]` tables (the project's `koas.toml`, then the pipeline's, then
//! the command line), building the service for a run, answering kernels'
//! `llm_complete` calls, and the identity that joins LLM kernels' cache
//! keys.

use crate::host::LlmHandler;
use koas_kernel_api::LlmRequest;
use koas_llm::{LlmConfig, LlmService};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// The project file whose `[llm]` table gives the model a person sets
/// once for every command (its other tables belong to other commands).
pub const PROJECT_FILE: &str = "koas.toml";

/// Command-line overrides of the `[llm]` table.
#[derive(Debug, Clone, Default)]
pub struct LlmOverrides {
    /// `--llm-backend`: replaces the table's `backend`; `None` keeps it.
    pub backend: Option<String>,
    /// `--llm-endpoint`, once per endpoint (`URL` or `URL#slots=N`):
    /// replaces the table's `endpoint` and `endpoints`; empty keeps them.
    pub endpoints: Vec<String>,
    /// `--llm-model`: replaces the table's `model`; `None` keeps it.
    pub model: Option<String>,
    /// `--no-strict-sovereign`: sets `strict_sovereign = false`, allowing
    /// endpoints that are not local; `false` keeps the table's value.
    pub no_strict_sovereign: bool,
    /// `--llm-max-in-flight`: replaces the table's `max_in_flight`.
    pub max_in_flight: Option<usize>,
}

impl LlmOverrides {
    fn is_empty(&self) -> bool {
        self.backend.is_none()
            && self.endpoints.is_empty()
            && self.model.is_none()
            && !self.no_strict_sovereign
            && self.max_in_flight.is_none()
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

/// One `[llm]` table and the file it comes from.
#[derive(Debug, Clone)]
pub struct LlmLayer {
    /// The file, named in errors.
    pub origin: PathBuf,
    /// The table as JSON.
    pub table: Value,
}

/// The nearest `koas.toml` in `start` or a folder above it (a relative
/// `start` is taken from the current folder).
pub fn find_project_file(start: &Path) -> Option<PathBuf> {
    let start = if start.is_absolute() {
        start.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(start)
    };
    start
        .ancestors()
        .map(|d| d.join(PROJECT_FILE))
        .find(|candidate| candidate.is_file())
}

/// The `[llm]` table of the project file found from `start`, if any. A
/// file that cannot be read or parsed is an error naming it: a person
/// who set a model there expects it used, not silently ignored.
pub fn project_layer(start: &Path) -> Result<Option<LlmLayer>, LlmSetupError> {
    let Some(path) = find_project_file(start) else {
        return Ok(None);
    };
    let err = |message: String| LlmSetupError {
        origin: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(&path).map_err(|e| err(format!("cannot read: {e}")))?;
    let doc: toml::Table = toml::from_str(&text).map_err(|e| err(e.to_string()))?;
    let Some(table) = doc.get("llm") else {
        return Ok(None);
    };
    let table = serde_json::to_value(table).map_err(|e| err(e.to_string()))?;
    Ok(Some(LlmLayer {
        origin: path,
        table,
    }))
}

/// The LLM config in effect: the `layers` (lowest precedence first, each
/// key of a later table replacing the same key of an earlier one) with
/// the command-line overrides on top, as JSON (for the run record) and
/// parsed. `None` when none gives an LLM. Each table is checked on its
/// own first, so that a misspelt key is reported with the file it is in.
pub fn resolve_config(
    layers: &[LlmLayer],
    overrides: &LlmOverrides,
) -> Result<Option<(Value, LlmConfig)>, LlmSetupError> {
    if layers.is_empty() && overrides.is_empty() {
        return Ok(None);
    }
    let mut map: Map<String, Value> = Map::new();
    for layer in layers {
        let err = |message: String| LlmSetupError {
            origin: layer.origin.display().to_string(),
            message,
        };
        let Value::Object(m) = &layer.table else {
            return Err(err("must be a table".into()));
        };
        serde_json::from_value::<LlmConfig>(layer.table.clone()).map_err(|e| err(e.to_string()))?;
        let sets = |key: &str| m.get(key).is_some_and(|v| !v.is_null());
        if sets("endpoint") && sets("endpoints") {
            return Err(err(
                "set either `endpoint` (one server) or `endpoints` (several), not both".into(),
            ));
        }
        // A table that names its servers replaces the servers of the
        // tables before it, in either form.
        if sets("endpoint") || sets("endpoints") {
            map.remove("endpoint");
            map.remove("endpoints");
        }
        map.extend(m.clone());
    }
    let origin = match (layers.last(), overrides.is_empty()) {
        (Some(last), true) => last.origin.display().to_string(),
        (Some(last), false) => format!("{} and the command line", last.origin.display()),
        (None, _) => "the command line".to_string(),
    };
    let err = |message: String| LlmSetupError {
        origin: origin.clone(),
        message,
    };
    if let Some(b) = &overrides.backend {
        map.insert("backend".into(), json!(b));
    }
    if !overrides.endpoints.is_empty() {
        let specs = overrides
            .endpoints
            .iter()
            .map(|flag| endpoint_flag(flag))
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        map.remove("endpoint");
        map.remove("endpoints");
        match specs.as_slice() {
            // One plain URL is the `endpoint` key, as before.
            [(url, None)] => map.insert("endpoint".into(), json!(url)),
            _ => map.insert(
                "endpoints".into(),
                specs
                    .iter()
                    .map(|(url, slots)| match slots {
                        Some(n) => json!({"url": url, "max_in_flight": n}),
                        None => json!(url),
                    })
                    .collect(),
            ),
        };
    }
    if let Some(m) = &overrides.model {
        map.insert("model".into(), json!(m));
    }
    if overrides.no_strict_sovereign {
        map.insert("strict_sovereign".into(), json!(false));
    }
    if let Some(n) = overrides.max_in_flight {
        map.insert("max_in_flight".into(), json!(n));
    }
    let value = Value::Object(map);
    let config = LlmConfig::from_json(value.clone()).map_err(|e| err(e.to_string()))?;
    Ok(Some((value, config)))
}

/// One `--llm-endpoint` value: `URL`, or `URL#slots=N` for an endpoint
/// with N requests in flight. A URL fragment is never sent to a server,
/// so `#` cannot be part of an endpoint.
fn endpoint_flag(flag: &str) -> Result<(String, Option<usize>), String> {
    let Some((url, suffix)) = flag.rsplit_once('#') else {
        return Ok((flag.to_string(), None));
    };
    let slots = suffix
        .strip_prefix("slots=")
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| *n >= 1)
        .ok_or_else(|| {
            format!("--llm-endpoint {flag:?}: expected URL or URL#slots=N with N at least 1")
        })?;
    Ok((url.to_string(), Some(slots)))
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

    fn complete_many(&self, _kernel: &str, requests: &[LlmRequest]) -> Vec<Result<Value, String>> {
        self.service
            .complete_many(requests)
            .into_iter()
            .map(|answer| {
                let response = answer.map_err(|e| e.to_string())?;
                serde_json::to_value(response)
                    .map_err(|e| format!("cannot encode the LLM answer: {e}"))
            })
            .collect()
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
        assert!(resolve_config(&[], &LlmOverrides::default())
            .expect("ok")
            .is_none());
    }

    #[test]
    fn flags_override_the_table_and_errors_name_the_file() {
        let table = json!({"backend": "openai", "endpoint": "http://127.0.0.1:1", "model": "m"});
        let o = LlmOverrides {
            model: Some("other".into()),
            no_strict_sovereign: true,
            ..LlmOverrides::default()
        };
        let (value, config) = resolve_config(&[layer("p.toml", table)], &o)
            .expect("valid")
            .expect("some");
        assert_eq!(value["model"], "other");
        assert!(!config.strict_sovereign);
        let bad = json!({"backend": "openai", "temprature": 0.1});
        let e = resolve_config(&[layer("p.toml", bad)], &LlmOverrides::default())
            .expect_err("unknown key");
        let msg = e.to_string();
        assert!(
            msg.contains("p.toml") && msg.contains("temprature"),
            "{msg}"
        );
    }

    fn layer(origin: &str, table: Value) -> LlmLayer {
        LlmLayer {
            origin: PathBuf::from(origin),
            table,
        }
    }

    #[test]
    fn later_tables_replace_keys_of_earlier_ones_and_errors_name_their_file() {
        let project = json!({"backend": "openai", "model": "small", "max_in_flight": 4});
        let pipeline = json!({"model": "big"});
        let (value, config) = resolve_config(
            &[
                layer("koas.toml", project.clone()),
                layer("p.toml", pipeline),
            ],
            &LlmOverrides {
                max_in_flight: Some(8),
                ..LlmOverrides::default()
            },
        )
        .expect("valid")
        .expect("some");
        assert_eq!(value["model"], "big");
        assert_eq!(value["backend"], "openai");
        assert_eq!(config.max_in_flight, 8);
        let e = resolve_config(
            &[
                layer("/proj/koas.toml", json!({"modle": "x"})),
                layer("p.toml", json!({"model": "big"})),
            ],
            &LlmOverrides::default(),
        )
        .expect_err("misspelt key");
        assert!(e.to_string().contains("/proj/koas.toml"), "{e}");
        assert!(e.to_string().contains("modle"), "{e}");
    }

    #[test]
    fn the_project_file_is_found_upward_and_only_its_llm_table_is_read() {
        let dir = tempfile::tempdir().expect("tmp");
        let nested = dir.path().join("a/b");
        std::fs::create_dir_all(&nested).expect("mkdir");
        assert!(project_layer(&nested).expect("none").is_none());
        std::fs::write(
            dir.path().join(PROJECT_FILE),
            "[check]\nfail_on = \"error\"\n[llm]\nbackend = \"openai\"\nmax_in_flight = 3\n",
        )
        .expect("write");
        let layer = project_layer(&nested).expect("read").expect("found");
        assert_eq!(layer.origin, dir.path().join(PROJECT_FILE));
        assert_eq!(
            layer.table,
            json!({"backend": "openai", "max_in_flight": 3})
        );
        std::fs::write(dir.path().join(PROJECT_FILE), "[llm\n").expect("write");
        let e = project_layer(&nested).expect_err("malformed");
        assert!(e.to_string().contains("koas.toml"), "{e}");
    }

    #[test]
    fn repeated_endpoint_flags_replace_the_tables_servers() {
        let table = json!({"backend": "openai", "endpoint": "http://127.0.0.1:1", "model": "m"});
        let o = LlmOverrides {
            endpoints: vec![
                "http://127.0.0.1:2/v1".into(),
                "http://127.0.0.1:3/v1#slots=5".into(),
            ],
            ..LlmOverrides::default()
        };
        let (value, config) = resolve_config(&[layer("p.toml", table.clone())], &o)
            .expect("valid")
            .expect("some");
        assert!(value.get("endpoint").is_none(), "{value}");
        let e = config.endpoints();
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].slots, e[1].slots), (2, 5));
        assert_eq!(config.total_slots(), 7);
        // One plain URL stays the `endpoint` key.
        let o = LlmOverrides {
            endpoints: vec!["http://127.0.0.1:2".into()],
            ..LlmOverrides::default()
        };
        let (value, _) = resolve_config(&[layer("p.toml", table.clone())], &o)
            .expect("valid")
            .expect("some");
        assert_eq!(value["endpoint"], "http://127.0.0.1:2");
        let bad = LlmOverrides {
            endpoints: vec!["http://127.0.0.1:2#slots=0".into()],
            ..LlmOverrides::default()
        };
        let e = resolve_config(&[layer("p.toml", table)], &bad).expect_err("bad slots");
        assert!(e.to_string().contains("URL#slots=N"), "{e}");
    }

    #[test]
    fn a_later_table_replaces_the_servers_and_one_table_may_not_set_both() {
        let project = json!({"backend": "openai", "endpoint": "http://127.0.0.1:1", "model": "m"});
        let pipeline = json!({"endpoints": ["http://127.0.0.1:2", "http://127.0.0.1:3"]});
        let (_, config) = resolve_config(
            &[layer("koas.toml", project), layer("p.toml", pipeline)],
            &LlmOverrides::default(),
        )
        .expect("valid")
        .expect("some");
        assert_eq!(config.endpoints().len(), 2);
        let both = json!({"endpoint": "http://127.0.0.1:1", "endpoints": ["http://127.0.0.1:2"]});
        let e =
            resolve_config(&[layer("p.toml", both)], &LlmOverrides::default()).expect_err("both");
        assert!(
            e.to_string().contains("p.toml") && e.to_string().contains("not both"),
            "{e}"
        );
    }

    #[test]
    fn identity_ignores_the_endpoints() {
        let a = LlmConfig::new(koas_llm::BackendKind::Openai, "http://127.0.0.1:1", "m");
        let mut b = a.clone();
        b.endpoint = None;
        b.endpoints = vec![
            koas_llm::EndpointSpec::Url("http://127.0.0.1:2".into()),
            koas_llm::EndpointSpec::Url("http://127.0.0.1:3".into()),
        ];
        assert_eq!(identity(&a), identity(&b));
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
