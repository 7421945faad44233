//! The service's builder: options a host sets before the first call.

use super::*;

/// Builds an [`LlmService`] with non-default parts.
pub struct LlmServiceBuilder {
    pub(super) config: LlmConfig,
    pub(super) workspace: PathBuf,
    pub(super) exchange_log: Option<PathBuf>,
    pub(super) cache_dir: Option<Option<PathBuf>>,
    pub(super) replay: Option<ReplaySource>,
    pub(super) backend: Option<Arc<dyn Backend>>,
    pub(super) pool: Option<Arc<EndpointPool>>,
    pub(super) progress: Option<Box<dyn ProgressSink>>,
    pub(super) session_id: Option<String>,
    pub(super) cancel: Option<CancelFlag>,
}

impl LlmServiceBuilder {
    /// Writes the exchange log to `path` instead of
    /// `<workspace>/llm/exchanges.jsonl`.
    pub fn exchange_log(mut self, path: impl Into<PathBuf>) -> Self {
        self.exchange_log = Some(path.into());
        self
    }

    /// Uses `dir` as the response cache, or no cache with `None`.
    pub fn cache_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.cache_dir = Some(dir);
        self
    }

    /// Answers from an exchange log instead of a backend: no network, no
    /// sovereignty check, no response cache. The replay run's own log
    /// defaults to `<workspace>/llm/replay-exchanges.jsonl`.
    pub fn replay(mut self, source: ReplaySource) -> Self {
        self.replay = Some(source);
        self
    }

    /// Uses this backend instead of the one the config names: a pool of
    /// one endpoint with the config's `max_in_flight` slots (the
    /// sovereignty check still applies to the config).
    pub fn backend(mut self, backend: Arc<dyn Backend>) -> Self {
        self.backend = Some(backend);
        self
    }

    /// Sends requests through `pool`, shared with other services (one per
    /// workspace, say) that drive the same servers: their requests share
    /// its slots, and an endpoint one of them finds down is out of
    /// rotation for all. Without it (and without [`Self::backend`]) the
    /// service builds its own pool from the config's endpoints. The
    /// sovereignty check still applies to the config.
    pub fn pool(mut self, pool: Arc<EndpointPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Reports progress to `sink` (default: nothing).
    pub fn progress(mut self, sink: Box<dyn ProgressSink>) -> Self {
        self.progress = Some(sink);
        self
    }

    /// Stops the session when `flag` is set (the process's Ctrl-C flag):
    /// no request starts after it, and an answer being read is cut at its
    /// next token, so an interrupt does not wait for a slow model.
    pub fn cancel_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(CancelFlag(flag));
        self
    }

    /// Sets the session id written into every exchange-log line.
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// Validates the config, runs the canonicalizer self-test, checks
    /// sovereignty (live mode), reads the API key from the environment and
    /// opens the exchange log.
    pub fn build(self) -> Result<LlmService, LlmError> {
        let config = self.config;
        config.validate()?;
        let report = koas_extract::self_test()
            .map_err(|e| LlmError::Config(format!("canonicalizer self-test failed: {e}")))?;
        let replaying = self.replay.is_some();
        let (pool, key) = if replaying {
            (None, None)
        } else {
            check_sovereignty(&config)?;
            let pool = match (self.pool, self.backend) {
                (Some(pool), _) => pool,
                (None, Some(b)) => {
                    Arc::new(EndpointPool::from_backends(vec![(b, config.max_in_flight)]))
                }
                (None, None) => Arc::new(EndpointPool::from_config(&config)?),
            };
            let key = config.api_key_env().and_then(|v| ApiKey::from_env(&v));
            (Some(pool), key)
        };
        let mut wanted_models: Vec<String> = config.role_models().into_values().collect();
        wanted_models.sort();
        wanted_models.dedup();
        let default_log = if replaying {
            REPLAY_EXCHANGE_LOG
        } else {
            EXCHANGE_LOG
        };
        let log_path = self
            .exchange_log
            .unwrap_or_else(|| self.workspace.join(default_log));
        let cache = match self.cache_dir {
            _ if replaying || !config.response_cache => None,
            Some(dir) => dir.map(ResponseCache::new),
            None => Some(ResponseCache::new(self.workspace.join(CACHE_DIR))),
        };
        Ok(LlmService {
            wanted_models,
            budget: Budget::new(config.budget_per_call, config.budget_per_run),
            log: ExchangeLog::open(&log_path)?,
            cache,
            progress: self.progress.unwrap_or_else(|| Box::new(NoProgress)),
            canonicalizer: CanonicalizerIdentity {
                source_hash: report.source_hash,
                self_test_hash: report.output_hash,
            },
            session_id: self.session_id.unwrap_or_else(new_session_id),
            counts: Mutex::new(CallCounts::default()),
            prompts: Mutex::new((0, None)),
            abort: Mutex::new(None),
            abort_told: std::sync::atomic::AtomicBool::new(false),
            cancel: self.cancel,
            rng: Mutex::new(fastrand::Rng::new()),
            pool,
            replay: self.replay,
            key,
            config,
        })
    }
}
