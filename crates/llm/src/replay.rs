//! Replay: answer requests from an exchange log, with no network. A replay
//! checks the whole chain (logging, parsing, canonicalization, the
//! kernels' use of the answers), not just that kernels are deterministic.
//!
//! Loading the log re-runs the canonicalizer on every logged raw text and
//! compares the result with the logged canonical text and extraction
//! verdict, so canonicalizer drift or log corruption is reported before
//! anything is replayed. Requests are matched by cache key (input
//! hash, model and parameters); identical requests are answered in log
//! order, the last answer repeating. A request with no logged answer is an
//! error ([`LlmError::ReplayMiss`]), never a network call.

use crate::error::LlmError;
use crate::exchange::{read_exchanges, Exchange, ExchangeOutcome, Extraction};
use koas_extract::normalize_text;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

/// A logged answer served by replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayAnswer {
    /// The raw text (kernels receive raw text, as in the original run).
    pub text: String,
    /// The model id that answered.
    pub model: String,
    /// Prompt tokens as logged (they count as 0 against the budgets).
    pub prompt_tokens: u64,
    /// Completion tokens as logged (they count as 0 against the budgets).
    pub completion_tokens: u64,
    /// Whether the counts were estimated.
    pub tokens_estimated: bool,
    /// Whether generation ended at a stop marker.
    pub stopped_at_marker: bool,
    /// Whether the original run had it from its response cache (a kernel
    /// that counts cached answers sees the same count in the replay).
    pub cached: bool,
}

/// Answers from an exchange log.
#[derive(Debug)]
pub struct ReplaySource {
    answers: Mutex<HashMap<String, (Vec<ReplayAnswer>, usize)>>,
    entries: usize,
}

impl ReplaySource {
    /// Loads every answered entry (`ok` or `empty_response`) of the log at
    /// `path`, after verifying each entry's canonicalization.
    pub fn from_exchange_log(path: &Path) -> Result<ReplaySource, LlmError> {
        Self::from_entries(read_exchanges(path)?, None)
    }

    /// Like [`ReplaySource::from_exchange_log`], keeping only the entries
    /// of one session.
    pub fn from_exchange_log_session(
        path: &Path,
        session_id: &str,
    ) -> Result<ReplaySource, LlmError> {
        Self::from_entries(read_exchanges(path)?, Some(session_id))
    }

    /// Builds a source from entries already read.
    pub fn from_entries(
        entries: Vec<Exchange>,
        session: Option<&str>,
    ) -> Result<ReplaySource, LlmError> {
        let mut answers: HashMap<String, (Vec<ReplayAnswer>, usize)> = HashMap::new();
        let mut count = 0;
        for e in entries {
            if session.is_some_and(|s| s != e.session_id) {
                continue;
            }
            if !matches!(
                e.outcome,
                ExchangeOutcome::Ok | ExchangeOutcome::EmptyResponse
            ) {
                continue;
            }
            verify(&e)?;
            count += 1;
            answers
                .entry(e.cache_key.clone())
                .or_default()
                .0
                .push(ReplayAnswer {
                    text: e.raw_text,
                    model: e.served_model.unwrap_or(e.model),
                    prompt_tokens: e.prompt_tokens,
                    completion_tokens: e.completion_tokens,
                    tokens_estimated: e.tokens_estimated,
                    stopped_at_marker: e.stopped_at_marker,
                    cached: e.source != crate::exchange::ExchangeSource::Backend,
                });
        }
        Ok(ReplaySource {
            answers: Mutex::new(answers),
            entries: count,
        })
    }

    /// How many answers were loaded.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// `true` when no answer was loaded.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The next logged answer for `cache_key`, if any.
    pub fn answer(&self, cache_key: &str) -> Option<ReplayAnswer> {
        let mut map = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        let (list, next) = map.get_mut(cache_key)?;
        let i = (*next).min(list.len().checked_sub(1)?);
        *next += 1;
        list.get(i).cloned()
    }
}

/// Checks that the logged canonical text and extraction verdict are what
/// this build's canonicalizer produces from the logged raw text.
fn verify(e: &Exchange) -> Result<(), LlmError> {
    if normalize_text(&e.raw_text) != e.canonical_text {
        return Err(LlmError::ReplayLog(format!(
            "entry {}: the logged canonical text is not normalize_text(raw_text) — canonicalizer drift or log corruption",
            e.seq
        )));
    }
    let now = Extraction::of(&e.raw_text);
    if now != e.extraction {
        return Err(LlmError::ReplayLog(format!(
            "entry {}: extraction drift: logged {}, now {}",
            e.seq, e.extraction.canonical_status, now.canonical_status
        )));
    }
    Ok(())
}
