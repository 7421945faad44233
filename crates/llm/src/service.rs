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

mod builder;
mod call;
mod stored;
pub use builder::LlmServiceBuilder;

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

impl Attempt {
    /// `reply` with its token counts: the backend's, else estimated
    /// (`estimated_prompt` for the prompt).
    fn of(reply: BackendReply, estimated_prompt: u64) -> Attempt {
        let prompt_tokens = reply.prompt_tokens.unwrap_or(estimated_prompt);
        let completion_tokens = reply
            .completion_tokens
            .unwrap_or_else(|| estimate_tokens(&reply.text));
        let estimated = reply.prompt_tokens.is_none() || reply.completion_tokens.is_none();
        Attempt {
            reply,
            prompt_tokens,
            completion_tokens,
            estimated,
        }
    }
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
            if nudge > 0 && !self.wait_before_nudge(options) {
                break;
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
            let call = self.backend_call(&r, temperature, options);
            match self.call_with_retries(pool, &call, options.deadline.as_ref()) {
                Ok(Answered {
                    reply,
                    retries: n,
                    endpoint,
                }) => {
                    retries += n;
                    answered_by = endpoint;
                    let attempt = Attempt::of(reply, estimated_prompt);
                    let tokens = attempt.prompt_tokens + attempt.completion_tokens;
                    self.budget.settle(reservation, tokens);
                    spent += tokens;
                    let empty = attempt.reply.text.trim().is_empty();
                    last = Some(attempt);
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

    /// Waits before asking again after an empty answer. `false` when the
    /// deadline leaves no room for another try: the empty answer stands.
    fn wait_before_nudge(&self, options: RunOptions) -> bool {
        let wait = {
            let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
            wait_in(self.config.empty_retry_wait_ms, &mut rng)
        };
        if options.deadline.is_some_and(|d| d.crossed_by(wait)) {
            return false;
        }
        self.progress
            .note("empty answer; retrying with a higher temperature");
        std::thread::sleep(wait);
        true
    }

    /// The backend call of resolved request `r` at `temperature`.
    fn backend_call(&self, r: &Resolved, temperature: f64, options: RunOptions) -> BackendCall {
        BackendCall {
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
        }
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
