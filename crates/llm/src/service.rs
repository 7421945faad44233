//! The LLM host service: what the runtime calls when a kernel calls
//! `ctx.llm_complete(&LlmRequest)`.

use crate::backend::{Backend, BackendCall, BackendReply, CancelFlag};
use crate::budget::Budget;
use crate::cache::{CachedAnswer, ResponseCache};
use crate::config::LlmConfig;
use crate::error::{AbortReason, LlmError, TransportError, TransportErrorKind};
use crate::exchange::{Exchange, ExchangeLog, ExchangeOutcome, ExchangeSource, Extraction};
use crate::keys::{cache_key, input_hash, Params};
use crate::metadata::{CallCounts, CanonicalizerIdentity, SessionMetadata};
use crate::pool::{AcquireError, EndpointPool};
use crate::progress::{NoProgress, ProgressSink};
use crate::replay::ReplaySource;
use crate::retry::{wait_in, Backoff};
use crate::secret::{redact, ApiKey};
use crate::sovereignty::check_sovereignty;
use crate::tokens::estimate_tokens;
use koas_extract::normalize_text;
use koas_kernel_api::{LlmRequest, LlmResponse};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The exchange log's path inside a workspace.
pub const EXCHANGE_LOG: &str = "llm/exchanges.jsonl";
/// The replay run's exchange log inside a workspace.
pub const REPLAY_EXCHANGE_LOG: &str = "llm/replay-exchanges.jsonl";
/// The response cache folder inside a workspace.
pub const CACHE_DIR: &str = ".koas/llm-cache";

/// Per-request options the service sets for its own purposes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunOptions {
    pub purpose: &'static str,
    pub use_cache: bool,
    pub empty_retries: u32,
    /// A deadline over this request and others (a whole calibration).
    pub deadline: Option<Deadline>,
}

/// An overall deadline over several requests: every attempt is cut at
/// it, and no retry or wait starts that would end after it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    /// When it passes.
    pub at: Instant,
    /// Its length in seconds, for the error message.
    pub secs: f64,
    /// What it bounds, e.g. `calibration`.
    pub what: &'static str,
    /// The config key and flag that set it.
    pub setting: &'static str,
}

impl Deadline {
    /// Whether something lasting `wait` from now would end after it.
    fn crossed_by(&self, wait: Duration) -> bool {
        Instant::now() + wait >= self.at
    }
}

/// How a logical call failed: the last attempt's error, the retries made,
/// whether the overall deadline ended it, and the endpoint last tried.
struct Failed {
    error: TransportError,
    retries: u32,
    deadline_hit: bool,
    endpoint: String,
}

/// Why a logical call ended without an answer.
enum CallError {
    /// Its attempts failed.
    Transport(Failed),
    /// It was refused before any attempt (the endpoints disagree on the
    /// model).
    Refused(LlmError),
}

/// A logical call's answer: the reply, the transport retries it took and
/// the endpoint that answered.
struct Answered {
    reply: BackendReply,
    retries: u32,
    endpoint: String,
}

/// The LLM host service. Thread-safe: share it (`&LlmService` or `Arc`)
/// between the threads of all kernels; the endpoint pool's slots make
/// callers wait for a free one.
pub struct LlmService {
    config: LlmConfig,
    pool: Option<Arc<EndpointPool>>,
    /// The configured models, which every endpoint must serve.
    wanted_models: Vec<String>,
    replay: Option<ReplaySource>,
    key: Option<ApiKey>,
    budget: Budget,
    log: ExchangeLog,
    cache: Option<ResponseCache>,
    progress: Box<dyn ProgressSink>,
    canonicalizer: CanonicalizerIdentity,
    session_id: String,
    counts: Mutex<CallCounts>,
    /// Prompt tokens of the server's answers, and what it said it reused
    /// of them (`None` until an answer says).
    prompts: Mutex<(u64, Option<u64>)>,
    abort: Mutex<Option<AbortReason>>,
    /// Whether the error that aborted the session was told: calls in
    /// flight at that moment fail with the same error, and the ones after
    /// it with [`LlmError::SessionAborted`]; neither is told again.
    abort_told: std::sync::atomic::AtomicBool,
    rng: Mutex<fastrand::Rng>,
    cancel: Option<CancelFlag>,
}

/// Builds an [`LlmService`] with non-default parts.
pub struct LlmServiceBuilder {
    config: LlmConfig,
    workspace: PathBuf,
    exchange_log: Option<PathBuf>,
    cache_dir: Option<Option<PathBuf>>,
    replay: Option<ReplaySource>,
    backend: Option<Arc<dyn Backend>>,
    pool: Option<Arc<EndpointPool>>,
    progress: Option<Box<dyn ProgressSink>>,
    session_id: Option<String>,
    cancel: Option<CancelFlag>,
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

fn new_session_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let seed = format!("{nanos}:{}:{}", std::process::id(), fastrand::u64(..));
    blake3::hash(seed.as_bytes()).to_hex()[..16].to_string()
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A request with its model and parameters chosen.
struct Resolved {
    role: String,
    model: String,
    system: Option<String>,
    prompt: String,
    params: Params,
    input_hash: String,
    cache_key: String,
}

/// What the attempts of one call spent: the temperatures tried, the
/// tokens and the transport retries.
struct Spent {
    temperatures: Vec<f64>,
    tokens: u64,
    retries: u32,
    /// The endpoint that gave the answer used.
    endpoint: String,
}

/// The answer of the last backend attempt, with its token accounting.
struct Attempt {
    reply: BackendReply,
    prompt_tokens: u64,
    completion_tokens: u64,
    estimated: bool,
}

impl LlmService {
    /// A live service for `config` whose exchange log and response cache
    /// live in `workspace` (`llm/exchanges.jsonl`, `.koas/llm-cache/`).
    pub fn new(config: LlmConfig, workspace: &Path) -> Result<LlmService, LlmError> {
        Self::builder(config, workspace).build()
    }

    /// A replaying service: answers come from `source`, never the network.
    pub fn replay(
        config: LlmConfig,
        workspace: &Path,
        source: ReplaySource,
    ) -> Result<LlmService, LlmError> {
        Self::builder(config, workspace).replay(source).build()
    }

    /// A builder for non-default parts.
    pub fn builder(config: LlmConfig, workspace: &Path) -> LlmServiceBuilder {
        LlmServiceBuilder {
            config,
            workspace: workspace.to_path_buf(),
            exchange_log: None,
            cache_dir: None,
            replay: None,
            backend: None,
            pool: None,
            progress: None,
            session_id: None,
            cancel: None,
        }
    }

    /// The config the service was built with.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// The exchange log's path: `llm/exchanges.jsonl` in the workspace, or
    /// `llm/replay-exchanges.jsonl` when replaying, unless the builder chose
    /// another.
    pub fn exchange_log_path(&self) -> &Path {
        self.log.path()
    }

    /// Why the session stopped, if it did.
    pub fn abort_reason(&self) -> Option<AbortReason> {
        *self.abort.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Prompt tokens of the server's answers this session (the exchange
    /// log's `prompt_tokens` of its `backend` lines), and the sum of what
    /// the server said it reused of them (`reused_prompt_tokens`); `None`
    /// when no answer said: an unknown reuse is not a reuse of 0.
    pub fn prompt_totals(&self) -> (u64, Option<u64>) {
        self.prompts.lock().map(|p| *p).unwrap_or((0, None))
    }

    /// Completes one request: replay, cache, budgets, the per-endpoint
    /// bound, transport retries and empty-response retries, then one
    /// exchange-log line. Malformed model output is a successful result
    /// (the kernel reads its own answer format); an empty answer after the
    /// retries is returned as empty text.
    pub fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        self.run(
            request,
            RunOptions {
                purpose: "kernel",
                use_cache: true,
                empty_retries: self.config.empty_retries,
                deadline: None,
            },
        )
    }

    /// Completes many requests at once, keeping every slot of every
    /// endpoint busy (the pool's total slots); results are in request
    /// order.
    pub fn complete_many(&self, requests: &[LlmRequest]) -> Vec<Result<LlmResponse, LlmError>> {
        let slots: Vec<Mutex<Option<Result<LlmResponse, LlmError>>>> =
            requests.iter().map(|_| Mutex::new(None)).collect();
        let next = AtomicUsize::new(0);
        let workers = self.total_slots().min(requests.len()).max(1);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(request) = requests.get(i) else {
                        break;
                    };
                    let result = self.complete(request);
                    if let Ok(mut slot) = slots[i].lock() {
                        *slot = Some(result);
                    }
                });
            }
        });
        slots
            .into_iter()
            .map(|slot| {
                slot.into_inner()
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| Err(LlmError::Io("a worker thread stopped".to_string())))
            })
            .collect()
    }

    /// Requests the service keeps in flight at most: the slots of all its
    /// endpoints (of the shared pool when it has one).
    pub fn total_slots(&self) -> usize {
        match &self.pool {
            Some(pool) => pool.total_slots(),
            None => self.config.total_slots(),
        }
    }

    /// The endpoints requests go to, with their slots.
    pub fn endpoints(&self) -> Vec<crate::config::EndpointConfig> {
        match &self.pool {
            Some(pool) => pool.endpoints(),
            None => self.config.endpoints(),
        }
    }

    /// The pool the service sends requests through (`None` when
    /// replaying), to share with other services.
    pub fn endpoint_pool(&self) -> Option<&Arc<EndpointPool>> {
        self.pool.as_ref()
    }

    /// The session metadata for the run record.
    pub fn session_metadata(&self) -> SessionMetadata {
        SessionMetadata {
            session_id: self.session_id.clone(),
            mode: if self.replay.is_some() {
                "replay"
            } else {
                "live"
            }
            .to_string(),
            backend: self.config.backend,
            endpoint: self
                .endpoints()
                .first()
                .map(|e| e.url.clone())
                .unwrap_or_else(|| self.config.endpoint()),
            endpoints: self.endpoints(),
            models: self.config.role_models(),
            context_window: self.config.context_window,
            max_tokens: self.config.max_tokens,
            temperature: self.config.temperature,
            stream: self.config.stream,
            max_in_flight: self.config.max_in_flight,
            budget_per_call: self.budget.per_call(),
            budget_per_run: self.budget.per_run(),
            strict_sovereign: self.config.strict_sovereign,
            api_key_env: self.key.as_ref().map(|k| k.var().to_string()),
            canonicalizer: self.canonicalizer.clone(),
            tokens_used: self.budget.used(),
            prompt_tokens: self.prompt_totals().0,
            reused_prompt_tokens: self.prompt_totals().1,
            calls: self.counts.lock().map(|c| c.clone()).unwrap_or_default(),
            abort_reason: self.abort_reason(),
            exchange_log: self.log.path().display().to_string(),
        }
    }

    pub(crate) fn run(
        &self,
        request: &LlmRequest,
        options: RunOptions,
    ) -> Result<LlmResponse, LlmError> {
        self.progress.request_started();
        let result = self.run_inner(request, options);
        let spent = result.as_ref().map(|(_, spent)| *spent).unwrap_or(0);
        self.progress.request_finished(spent, result.is_ok());
        if let Err(e) = &result {
            if self.worth_telling(e) {
                self.progress.note(&e.to_string());
            }
        }
        result.map(|(response, _)| response)
    }

    /// False for an error already told: a call refused because the session
    /// was aborted, or the aborting error met again by a call that was in
    /// flight when it happened. A run of many calls would otherwise
    /// print the same cause once per call.
    fn worth_telling(&self, e: &LlmError) -> bool {
        match (e, self.abort_reason()) {
            (LlmError::SessionAborted { .. }, _) => false,
            (_, Some(reason)) if reason.to_string() == e.code() => !self
                .abort_told
                .swap(true, std::sync::atomic::Ordering::SeqCst),
            _ => true,
        }
    }

    fn resolve(&self, request: &LlmRequest) -> Result<Resolved, LlmError> {
        let model = self.config.model_for(&request.role)?;
        let params = Params {
            temperature: request.temperature.unwrap_or(self.config.temperature),
            max_tokens: capped_max_tokens(request.max_tokens, self.config.max_tokens),
            stop_markers: request.stop_markers.clone(),
            complete_after: request.complete_after.clone(),
            prose_until: request.prose_until,
        };
        let input_hash = input_hash(request.system.as_deref(), &request.prompt);
        let cache_key = cache_key(&input_hash, &model, &params);
        Ok(Resolved {
            role: request.role.clone(),
            model,
            system: request.system.clone(),
            prompt: request.prompt.clone(),
            params,
            input_hash,
            cache_key,
        })
    }

    fn count(&self, f: impl FnOnce(&mut CallCounts)) {
        if let Ok(mut c) = self.counts.lock() {
            f(&mut c);
        }
    }

    /// One attempt. With a cancel flag it runs on its own thread and is
    /// abandoned when the flag is set: a server that has not sent a byte
    /// yet (a long prompt, a model being loaded, a non-streamed answer)
    /// would otherwise hold Ctrl-C up to `timeout_secs`. The abandoned
    /// thread ends with its socket's timeout, or with the process.
    fn attempt(
        &self,
        backend: &Arc<dyn Backend>,
        call: &BackendCall,
    ) -> Result<BackendReply, TransportError> {
        let Some(flag) = &self.cancel else {
            return backend.complete(call);
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let worker_backend = backend.clone();
        let worker_call = call.clone();
        std::thread::spawn(move || {
            let _ = tx.send(worker_backend.complete(&worker_call));
        });
        let poll = Duration::from_millis(100);
        loop {
            match rx.recv_timeout(poll) {
                Ok(result) => return result,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(TransportError::new(
                        TransportErrorKind::Io,
                        "the attempt's thread stopped without an answer",
                    ))
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if flag.is_set() => {
                    // A streamed answer stops at its next token on its own
                    // (keeping the partial text); give it that moment.
                    return rx
                        .recv_timeout(Duration::from_millis(500))
                        .unwrap_or_else(|_| {
                            Err(TransportError::new(
                                TransportErrorKind::Io,
                                "cancelled (interrupted) while waiting for the answer",
                            )
                            .fatal())
                        });
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// True once the cancel flag (Ctrl-C) is set.
    fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(CancelFlag::is_set)
    }

    fn set_abort(&self, reason: AbortReason) {
        let mut abort = self.abort.lock().unwrap_or_else(|p| p.into_inner());
        if abort.is_none() {
            *abort = Some(reason);
            // A mismatch's own error says all, with what to do, once.
            if reason != AbortReason::ModelMismatch {
                self.progress.note(&format!("session aborted: {reason}"));
            }
        }
    }

    fn entry(
        &self,
        r: &Resolved,
        purpose: &str,
        source: ExchangeSource,
        outcome: ExchangeOutcome,
    ) -> Exchange {
        Exchange {
            seq: 0,
            session_id: self.session_id.clone(),
            unix_ms: unix_ms(),
            purpose: purpose.to_string(),
            role: r.role.clone(),
            source,
            outcome,
            input_hash: r.input_hash.clone(),
            cache_key: r.cache_key.clone(),
            backend: self.config.backend,
            endpoint: self.endpoint_of_record(),
            model: r.model.clone(),
            served_model: None,
            params: r.params.clone(),
            temperatures: Vec::new(),
            stream: self.config.stream,
            raw_text: String::new(),
            canonical_text: String::new(),
            extraction: Extraction::of(""),
            prompt_tokens: 0,
            completion_tokens: 0,
            total_tokens_spent: 0,
            tokens_estimated: false,
            over_call_budget: false,
            latency_ms: 0,
            retries: 0,
            empty_retries: 0,
            stopped_at_marker: false,
            finish_reason: None,
            ended_by: None,
            reused_prompt_tokens: None,
            error: None,
        }
    }

    /// The endpoint a line names when no endpoint answered (a cache hit,
    /// a replay, a refusal): the first one.
    fn endpoint_of_record(&self) -> String {
        match &self.pool {
            Some(pool) => pool.first_url().to_string(),
            None => self.config.endpoint(),
        }
    }

    fn with_text(mut entry: Exchange, raw: &str) -> Exchange {
        entry.canonical_text = normalize_text(raw);
        entry.extraction = Extraction::of(raw);
        entry.raw_text = raw.to_string();
        entry
    }

    fn write(&self, mut entry: Exchange, started: Instant) -> Result<(), LlmError> {
        entry.latency_ms = started.elapsed().as_millis() as u64;
        self.log.append(&mut entry)
    }

    fn run_inner(
        &self,
        request: &LlmRequest,
        options: RunOptions,
    ) -> Result<(LlmResponse, u64), LlmError> {
        let started = Instant::now();
        let r = self.resolve(request)?;
        if let Some(replay) = &self.replay {
            return self.answer_from_replay(replay, &r, options, started);
        }
        if self.cancelled() {
            self.set_abort(AbortReason::Cancelled);
        }
        if let Some(reason) = self.abort_reason() {
            return Err(LlmError::SessionAborted { reason });
        }
        if options.use_cache {
            if let Some(hit) = self.cache.as_ref().and_then(|c| c.get(&r.cache_key)) {
                return self.answer_from_cache(hit, &r, options, started);
            }
        }
        let estimated_prompt =
            estimate_tokens(r.system.as_deref().unwrap_or("")) + estimate_tokens(&r.prompt);
        if let Err(e) = self.budget.check_call(estimated_prompt) {
            return Err(self.refuse(&r, options, started, e));
        }
        let pool = self
            .pool
            .as_ref()
            .ok_or_else(|| LlmError::Config("no backend is configured".to_string()))?;
        let mut temperatures = Vec::new();
        let mut spent = 0;
        let mut retries = 0;
        let mut last: Option<Attempt> = None;
        let mut answered_by = String::new();
        for nudge in 0..=options.empty_retries {
            if nudge > 0 {
                let wait = {
                    let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
                    wait_in(self.config.empty_retry_wait_ms, &mut rng)
                };
                // The empty answer stands when the deadline leaves no room
                // for another try.
                if options.deadline.is_some_and(|d| d.crossed_by(wait)) {
                    break;
                }
                self.progress
                    .note("empty answer; retrying with a higher temperature");
                std::thread::sleep(wait);
            }
            let temperature =
                r.params.temperature + self.config.empty_retry_temperature_step * f64::from(nudge);
            temperatures.push(temperature);
            let worst = estimated_prompt + u64::from(r.params.max_tokens);
            let reservation = match self.budget.reserve(worst) {
                Ok(res) => res,
                Err(e) => {
                    self.set_abort(AbortReason::SessionBudgetExhausted);
                    return Err(self.refuse(&r, options, started, e));
                }
            };
            let call = BackendCall {
                model: r.model.clone(),
                system: r.system.clone(),
                prompt: r.prompt.clone(),
                temperature,
                max_tokens: r.params.max_tokens,
                stop_markers: r.params.stop_markers.clone(),
                complete_after: r.params.complete_after.clone(),
                prose_until: r.params.prose_until,
                stream: self.config.stream,
                deadline: options.deadline.map(|d| d.at),
                cancel: self.cancel.clone(),
            };
            match self.call_with_retries(pool, &call, options.deadline.as_ref()) {
                Ok(Answered {
                    reply,
                    retries: n,
                    endpoint,
                }) => {
                    retries += n;
                    answered_by = endpoint;
                    let prompt_tokens = reply.prompt_tokens.unwrap_or(estimated_prompt);
                    let completion_tokens = reply
                        .completion_tokens
                        .unwrap_or_else(|| estimate_tokens(&reply.text));
                    let estimated =
                        reply.prompt_tokens.is_none() || reply.completion_tokens.is_none();
                    self.budget
                        .settle(reservation, prompt_tokens + completion_tokens);
                    spent += prompt_tokens + completion_tokens;
                    let empty = reply.text.trim().is_empty();
                    last = Some(Attempt {
                        reply,
                        prompt_tokens,
                        completion_tokens,
                        estimated,
                    });
                    if !empty {
                        break;
                    }
                }
                Err(CallError::Transport(mut failed)) => {
                    failed.retries += retries;
                    self.budget.release(reservation);
                    return Err(self.transport_failure(&r, options, started, failed, temperatures));
                }
                Err(CallError::Refused(e)) => {
                    self.budget.release(reservation);
                    self.set_abort(AbortReason::ModelMismatch);
                    return Err(e);
                }
            }
        }
        let attempt = last.ok_or_else(|| LlmError::Io("no attempt was made".to_string()))?;
        self.answered(
            &r,
            options,
            started,
            attempt,
            Spent {
                temperatures,
                tokens: spent,
                retries,
                endpoint: answered_by,
            },
        )
    }

    /// A backend's answer: logged, counted, kept in the response cache
    /// and returned with the tokens the call spent in all.
    fn answered(
        &self,
        r: &Resolved,
        options: RunOptions,
        started: Instant,
        attempt: Attempt,
        spent: Spent,
    ) -> Result<(LlmResponse, u64), LlmError> {
        let Spent {
            temperatures,
            tokens: spent,
            retries,
            endpoint,
        } = spent;
        let text = redact(self.key.as_ref(), &attempt.reply.text);
        let empty = text.trim().is_empty();
        let outcome = if empty {
            ExchangeOutcome::EmptyResponse
        } else {
            ExchangeOutcome::Ok
        };
        let mut entry = Self::with_text(
            self.entry(r, options.purpose, ExchangeSource::Backend, outcome),
            &text,
        );
        entry.endpoint = endpoint;
        entry.served_model = attempt.reply.model.clone().filter(|m| *m != r.model);
        entry.temperatures = temperatures;
        entry.prompt_tokens = attempt.prompt_tokens;
        entry.completion_tokens = attempt.completion_tokens;
        entry.total_tokens_spent = spent;
        entry.tokens_estimated = attempt.estimated;
        entry.over_call_budget = self
            .budget
            .over_call_budget(attempt.prompt_tokens + attempt.completion_tokens);
        entry.retries = retries;
        entry.empty_retries = entry.temperatures.len().saturating_sub(1) as u32;
        entry.stopped_at_marker = attempt.reply.stopped_at_marker;
        entry.finish_reason = attempt.reply.finish_reason.clone();
        entry.ended_by = Some(ended_by(&attempt.reply).to_owned());
        // What the server says it reused is hostile input: kept only when
        // it is at most the prompt's tokens, which it must report too (a
        // wrong count would end up in the log and the run's figures).
        let reused = attempt
            .reply
            .reused_prompt_tokens
            .filter(|&n| attempt.reply.prompt_tokens.is_some_and(|p| n <= p));
        entry.reused_prompt_tokens = reused;
        self.write(entry, started)?;
        if let Ok(mut prompts) = self.prompts.lock() {
            prompts.0 += attempt.prompt_tokens;
            if let Some(reused) = reused {
                prompts.1 = Some(prompts.1.unwrap_or(0) + reused);
            }
        }
        self.count(|c| {
            c.backend += 1;
            c.empty_responses += u64::from(empty);
            c.estimated_usage += u64::from(attempt.estimated);
        });
        if options.use_cache {
            if let Some(cache) = &self.cache {
                let stored = cache.put(&CachedAnswer {
                    key: r.cache_key.clone(),
                    input_hash: r.input_hash.clone(),
                    model: r.model.clone(),
                    params: r.params.clone(),
                    text: text.clone(),
                    prompt_tokens: attempt.prompt_tokens,
                    completion_tokens: attempt.completion_tokens,
                    tokens_estimated: attempt.estimated,
                    stopped_at_marker: attempt.reply.stopped_at_marker,
                });
                if let Err(e) = stored {
                    self.progress
                        .note(&format!("response cache write failed: {e}"));
                }
            }
        }
        let response = make_response(ResponseParts {
            text,
            model: attempt.reply.model.unwrap_or_else(|| r.model.clone()),
            prompt_tokens: attempt.prompt_tokens,
            completion_tokens: attempt.completion_tokens,
            tokens_estimated: attempt.estimated,
            cached: false,
            stopped_at_marker: attempt.reply.stopped_at_marker,
        })?;
        Ok((response, spent))
    }

    /// One logical call: attempts until success, a non-retryable error,
    /// `max_retries` retries or the overall deadline, with backoff between
    /// attempts. Each attempt holds a slot of the endpoint the pool picks.
    /// An attempt that fails at its endpoint (connection, timeout, 5xx, a
    /// broken answer) takes that endpoint out of rotation and moves at once
    /// to another endpoint in rotation, without spending a retry; only
    /// when every endpoint was tried or is out does a failure spend a retry
    /// and its backoff, as with one endpoint.
    fn call_with_retries(
        &self,
        pool: &EndpointPool,
        call: &BackendCall,
        deadline: Option<&Deadline>,
    ) -> Result<Answered, CallError> {
        let backoff = Backoff::from_config(&self.config);
        let mut retry = 0;
        // Endpoints that failed this request since the last retry spent:
        // each gets one attempt per round, so a round always ends.
        let mut tried: Vec<usize> = Vec::new();
        let failed = |error, retries, deadline_hit, endpoint: &str| {
            CallError::Transport(Failed {
                error,
                retries,
                deadline_hit,
                endpoint: endpoint.to_string(),
            })
        };
        loop {
            // Before anything is sent (and again when an endpoint not yet
            // listed comes into rotation).
            pool.check_models(&self.wanted_models)
                .map_err(CallError::Refused)?;
            let lease = match pool.acquire(&tried, self.cancel.as_ref()) {
                Ok(lease) => Some(lease),
                Err(AcquireError::Cancelled) => None,
                Err(AcquireError::Unlisted(e)) => {
                    // Nobody could be listed: a failed attempt, under the
                    // usual retry rules.
                    if e.retryable && retry < self.config.max_retries && !self.cancelled() {
                        self.sleep_backoff(&backoff, retry, deadline, pool.first_url(), &e)
                            .map_err(|e| failed(e, retry, true, pool.first_url()))?;
                        retry += 1;
                        continue;
                    }
                    return Err(failed(e, retry, false, pool.first_url()));
                }
            };
            let Some(lease) = lease.filter(|_| !self.cancelled()) else {
                return Err(failed(
                    TransportError::new(
                        TransportErrorKind::Io,
                        "cancelled (interrupted) before the attempt started",
                    )
                    .fatal(),
                    retry,
                    false,
                    pool.first_url(),
                ));
            };
            let url = lease.url().to_string();
            let result = self.attempt(lease.backend(), call);
            let e = match result {
                Ok(reply) => {
                    pool.succeeded(lease.index());
                    return Ok(Answered {
                        reply,
                        retries: retry,
                        endpoint: url,
                    });
                }
                Err(e) => e,
            };
            // A timeout at (or a hair before: socket timers round) the
            // overall deadline is the deadline's doing, not the endpoint's.
            if e.kind == TransportErrorKind::Timeout
                && deadline.is_some_and(|d| d.crossed_by(Duration::from_millis(250)))
            {
                return Err(failed(e, retry, true, &url));
            }
            // Retryable errors are the endpoint's (it refused, timed out,
            // failed inside or broke its answer); a request the server
            // rejected (400/413/422), a refusal or a cancel are not.
            if e.retryable && !self.cancelled() {
                pool.failed(lease.index(), &e);
                tried.push(lease.index());
                drop(lease);
                if pool.healthy_except(&tried) {
                    self.progress.note(&format!(
                        "attempt on {url} failed ({}); {url} is out of rotation for a while, \
                         asking another endpoint",
                        redact(self.key.as_ref(), &e.message),
                    ));
                    continue;
                }
            }
            tried.clear();
            if e.retryable && retry < self.config.max_retries && !self.cancelled() {
                self.sleep_backoff(&backoff, retry, deadline, &url, &e)
                    .map_err(|e| failed(e, retry, true, &url))?;
                retry += 1;
            } else {
                return Err(failed(e, retry, false, &url));
            }
        }
    }

    /// Waits the backoff before retry `retry` after `error` on `url`; the
    /// error back when the overall deadline would pass first.
    fn sleep_backoff(
        &self,
        backoff: &Backoff,
        retry: u32,
        deadline: Option<&Deadline>,
        url: &str,
        error: &TransportError,
    ) -> Result<(), TransportError> {
        let delay = {
            let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
            backoff.delay(retry, &mut rng)
        };
        if deadline.is_some_and(|d| d.crossed_by(delay)) {
            return Err(error.clone());
        }
        self.progress.note(&format!(
            "attempt {} on {url} failed ({}); retrying in {} ms",
            retry + 1,
            redact(self.key.as_ref(), &error.message),
            delay.as_millis()
        ));
        std::thread::sleep(delay);
        Ok(())
    }

    /// Logs a failed call and returns its error: `SOVEREIGNTY` when the
    /// connection was refused (the session stops: every later call would
    /// go to the same place), `DEADLINE_EXCEEDED` when the overall deadline
    /// ended it, `TRANSPORT_FAILURE` otherwise.
    fn transport_failure(
        &self,
        r: &Resolved,
        options: RunOptions,
        started: Instant,
        failed: Failed,
        temperatures: Vec<f64>,
    ) -> LlmError {
        let Failed {
            error,
            retries,
            deadline_hit,
            endpoint,
        } = failed;
        let last_error = redact(self.key.as_ref(), &error.message);
        // A client error the request itself caused (too long for the
        // server's context, say) is this request's failure, not the
        // server's: the session goes on.
        let rejected = match error.status {
            Some(status @ (400 | 413 | 422)) if error.kind == TransportErrorKind::Http => {
                Some(status)
            }
            _ => None,
        };
        // A call cut by a cancel did not fail at the server: it is logged
        // as cancelled, and the session stops for that reason alone.
        let cancelled = self.cancelled();
        let failure = if cancelled {
            self.set_abort(AbortReason::Cancelled);
            LlmError::SessionAborted {
                reason: AbortReason::Cancelled,
            }
        } else if error.kind == TransportErrorKind::Sovereignty {
            self.set_abort(AbortReason::Sovereignty);
            LlmError::Sovereignty(last_error)
        } else if let Some(status) = rejected {
            LlmError::RequestRejected {
                endpoint: endpoint.clone(),
                status,
                last_error,
            }
        } else {
            if self.config.abort_on_transport_failure {
                self.set_abort(AbortReason::TransportFailure);
            }
            match options.deadline.filter(|_| deadline_hit) {
                Some(d) => LlmError::DeadlineExceeded {
                    endpoint: endpoint.clone(),
                    what: d.what.to_string(),
                    secs: d.secs,
                    setting: d.setting.to_string(),
                    attempts: retries + 1,
                    last_error,
                },
                None => LlmError::TransportFailure {
                    endpoint: endpoint.clone(),
                    attempts: retries + 1,
                    last_error,
                },
            }
        };
        let partial = redact(
            self.key.as_ref(),
            error.partial_text.as_deref().unwrap_or(""),
        );
        let mut entry = Self::with_text(
            self.entry(
                r,
                options.purpose,
                ExchangeSource::Backend,
                match cancelled {
                    true => ExchangeOutcome::Cancelled,
                    false => ExchangeOutcome::TransportFailure,
                },
            ),
            &partial,
        );
        entry.endpoint = endpoint;
        entry.temperatures = temperatures;
        entry.retries = retries;
        entry.error = Some(failure.to_string());
        if !cancelled {
            self.count(|c| c.transport_failures += 1);
        }
        match self.write(entry, started) {
            Ok(()) => failure,
            Err(e) => e,
        }
    }

    fn refuse(
        &self,
        r: &Resolved,
        options: RunOptions,
        started: Instant,
        error: LlmError,
    ) -> LlmError {
        let mut entry = self.entry(
            r,
            options.purpose,
            ExchangeSource::None,
            ExchangeOutcome::BudgetRefused,
        );
        entry.error = Some(error.to_string());
        self.count(|c| c.budget_refused += 1);
        match self.write(entry, started) {
            Ok(()) => error,
            Err(e) => e,
        }
    }

    fn answer_from_cache(
        &self,
        hit: CachedAnswer,
        r: &Resolved,
        options: RunOptions,
        started: Instant,
    ) -> Result<(LlmResponse, u64), LlmError> {
        let parts = ResponseParts {
            text: hit.text,
            model: hit.model,
            prompt_tokens: hit.prompt_tokens,
            completion_tokens: hit.completion_tokens,
            tokens_estimated: hit.tokens_estimated,
            cached: true,
            stopped_at_marker: hit.stopped_at_marker,
        };
        self.answer_stored(r, options, started, ExchangeSource::Cache, parts)
    }

    fn answer_from_replay(
        &self,
        replay: &ReplaySource,
        r: &Resolved,
        options: RunOptions,
        started: Instant,
    ) -> Result<(LlmResponse, u64), LlmError> {
        let answer = replay
            .answer(&r.cache_key)
            .ok_or_else(|| LlmError::ReplayMiss {
                input_hash: r.input_hash.clone(),
                model: r.model.clone(),
                cache_key: r.cache_key.clone(),
            })?;
        let parts = ResponseParts {
            text: answer.text,
            model: answer.model,
            prompt_tokens: answer.prompt_tokens,
            completion_tokens: answer.completion_tokens,
            tokens_estimated: answer.tokens_estimated,
            // As the original run saw it, so a replayed kernel's output
            // (a count of cached answers) is the original's.
            cached: answer.cached,
            stopped_at_marker: answer.stopped_at_marker,
        };
        self.answer_stored(r, options, started, ExchangeSource::Replay, parts)
    }

    /// An answer that was not asked of a model now (from the cache or a
    /// replay): logged as an exchange of that `source`, counted, returned;
    /// it costs no time against the budgets (the `0`).
    fn answer_stored(
        &self,
        r: &Resolved,
        options: RunOptions,
        started: Instant,
        source: ExchangeSource,
        parts: ResponseParts,
    ) -> Result<(LlmResponse, u64), LlmError> {
        let outcome = if parts.text.trim().is_empty() {
            ExchangeOutcome::EmptyResponse
        } else {
            ExchangeOutcome::Ok
        };
        let mut entry =
            Self::with_text(self.entry(r, options.purpose, source, outcome), &parts.text);
        entry.prompt_tokens = parts.prompt_tokens;
        entry.completion_tokens = parts.completion_tokens;
        entry.tokens_estimated = parts.tokens_estimated;
        entry.stopped_at_marker = parts.stopped_at_marker;
        self.write(entry, started)?;
        self.count(|c| match source {
            ExchangeSource::Replay => c.replay += 1,
            _ => c.cache += 1,
        });
        Ok((make_response(parts)?, 0))
    }
}

struct ResponseParts {
    text: String,
    model: String,
    prompt_tokens: u64,
    completion_tokens: u64,
    tokens_estimated: bool,
    cached: bool,
    stopped_at_marker: bool,
}

/// Builds the kernel-api response. `LlmResponse` is `#[non_exhaustive]`,
/// so it is built through its serde form (the form that crosses the
/// plugin boundary anyway).
fn make_response(p: ResponseParts) -> Result<LlmResponse, LlmError> {
    serde_json::from_value(serde_json::json!({
        "text": p.text,
        "model": p.model,
        "prompt_tokens": p.prompt_tokens,
        "completion_tokens": p.completion_tokens,
        "tokens_estimated": p.tokens_estimated,
        "cached": p.cached,
        "stopped_at_marker": p.stopped_at_marker,
    }))
    .map_err(|e| LlmError::Io(format!("building the LLM response: {e}")))
}

/// A request's `max_tokens`: its own, but never above the session's (the
/// configured `max_tokens` is a ceiling every kernel's request stays
/// under, so a user can bound the generation of every call); the
/// session's when the request sets none.
fn capped_max_tokens(requested: Option<u32>, session: u32) -> u32 {
    requested.map_or(session, |asked| asked.min(session))
}

/// Why an answer ended, as the exchange log says it: cut by the host
/// (`marker`, `complete`, `repetition`, `enough`), or by the server (`length` at the
/// token cap, `end` when the model stopped, or the server's own reason).
fn ended_by(reply: &crate::backend::BackendReply) -> &str {
    if let Some(reason) = reply.stop_reason {
        return reason.as_str();
    }
    match reply.finish_reason.as_deref() {
        Some("length" | "max_tokens") => "length",
        Some("stop" | "end_turn" | "stop_sequence") | None => "end",
        Some(other) => other,
    }
}
