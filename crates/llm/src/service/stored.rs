//! Answers without a call: refused, from the response cache, or replayed from
//! an earlier run's log.

use super::*;

impl LlmService {
    pub(super) fn refuse(
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

    pub(super) fn answer_from_cache(
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

    pub(super) fn answer_from_replay(
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
    pub(super) fn answer_stored(
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
