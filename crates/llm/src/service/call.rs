//! One request at the backend: retries, backoff, transport failures, and an
//! answer's bookkeeping.

use super::*;

impl LlmService {
    /// A backend's answer: logged, counted, kept in the response cache
    /// and returned with the tokens the call spent in all.
    pub(super) fn answered(
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
    pub(super) fn call_with_retries(
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
    pub(super) fn sleep_backoff(
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
    pub(super) fn transport_failure(
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
}
