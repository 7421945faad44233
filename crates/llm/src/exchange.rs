//! The append-only exchange log `llm/exchanges.jsonl`. It is the evidence
//! a replay and an audit rely on, so it keeps the lines of aborted runs
//! too and is never rewritten.
//!
//! One JSON line per request the service answered or refused: what was
//! asked (input hash, backend, endpoint, exact model id, parameters), what
//! came back (raw text, canonicalized text, extraction result), and what it
//! cost (tokens, latency, retries). Lines are written whole and fsynced;
//! the file is never rewritten.

use crate::config::BackendKind;
use crate::error::LlmError;
use crate::keys::Params;
use koas_extract::{extract_json_block, normalize_text};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where an answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExchangeSource {
    /// The model, over the network.
    Backend,
    /// The response cache (an identical earlier request).
    Cache,
    /// An exchange log being replayed.
    Replay,
    /// No answer: refused before any call.
    None,
}

/// How a request ended; only `ok` and `empty_response` lines are replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExchangeOutcome {
    /// Non-empty text came back.
    Ok,
    /// Only empty text came back, after the empty-response retries.
    EmptyResponse,
    /// All transport attempts failed; the line keeps any partial text.
    TransportFailure,
    /// Refused before calling, by the per-call or the per-run token budget.
    BudgetRefused,
    /// Cut by a cancellation (Ctrl-C, or the client's cancel) while it was
    /// in flight; the line keeps any partial text. Not a server failure.
    Cancelled,
}

/// The canonicalizer's verdict on a text, logged with the raw text so a
/// replay can check that it still agrees.
///
/// Only the generic verdict is recorded: how a kernel reads its own answer
/// format from the text is the kernel's business and is recorded in the
/// kernel's own outputs. Logs written before this field set changed carry
/// two more fields (`ladder_method`, `ladder_ops`); they are ignored when
/// read, so those logs still replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extraction {
    /// `OK`, `NO_JSON`, `AMBIGUOUS_MULTI_BLOCK` or `PARSE_ERROR`.
    pub canonical_status: String,
    /// The rejection message, when not `OK`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejection: Option<String>,
    /// The extracted object's canonical JSON, when `OK`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_json: Option<String>,
    /// `sha256:` hash of `canonical_json`, when `OK`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_hash: Option<String>,
}

impl Extraction {
    /// Runs the canonicalizer on `raw`.
    pub fn of(raw: &str) -> Extraction {
        let normalized = normalize_text(raw);
        let (status, rejection, canonical_json, canonical_hash) =
            match extract_json_block(&normalized) {
                Ok(block) => (
                    "OK".to_string(),
                    None,
                    Some(block.canonical),
                    Some(block.hash),
                ),
                Err(r) => (r.code().to_string(), Some(r.to_string()), None, None),
            };
        Extraction {
            canonical_status: status,
            rejection,
            canonical_json,
            canonical_hash,
        }
    }
}

/// One line of the exchange log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// Position in the log (0-based, across sessions).
    pub seq: u64,
    /// Session that wrote the line.
    pub session_id: String,
    /// Wall-clock time, ms since the Unix epoch.
    pub unix_ms: u64,
    /// Why the request was made: `kernel` or `calibration`.
    pub purpose: String,
    /// The model role requested (`edit`, `tutor`…), which picked the model.
    pub role: String,
    /// Where the answer came from.
    pub source: ExchangeSource,
    /// How the request ended.
    pub outcome: ExchangeOutcome,
    /// `sha256:` of system + user prompt.
    pub input_hash: String,
    /// blake3 of input hash + model + parameters.
    pub cache_key: String,
    /// Wire protocol of the backend.
    pub backend: BackendKind,
    /// Endpoint base URL, without a trailing `/`.
    pub endpoint: String,
    /// Exact model id requested (the role's configured model).
    pub model: String,
    /// Model id the server reported, when it differs or is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_model: Option<String>,
    /// Sampling parameters requested (part of the cache key).
    pub params: Params,
    /// Temperatures of each attempt (empty-response nudges included).
    #[serde(default)]
    pub temperatures: Vec<f64>,
    /// Whether the answer was streamed.
    pub stream: bool,
    /// The model's text exactly as received.
    pub raw_text: String,
    /// `normalize_text(raw_text)`: line endings and outer whitespace
    /// normalized, nothing else changed.
    pub canonical_text: String,
    /// The canonicalizer's verdict.
    pub extraction: Extraction,
    /// Prompt tokens of the answer used.
    pub prompt_tokens: u64,
    /// Completion tokens of the answer used.
    pub completion_tokens: u64,
    /// Tokens spent by every attempt of this request (empty retries too).
    pub total_tokens_spent: u64,
    /// The counts were estimated (usage missing).
    pub tokens_estimated: bool,
    /// `prompt_tokens + completion_tokens` exceeded the per-call budget (the
    /// answer is still returned; the kernel decides).
    #[serde(default)]
    pub over_call_budget: bool,
    /// Wall-clock time of the request, waits included.
    pub latency_ms: u64,
    /// Transport retries made after the first attempt.
    pub retries: u32,
    /// Retries made because an answer came back empty.
    pub empty_retries: u32,
    /// Generation ended at a stop marker.
    pub stopped_at_marker: bool,
    /// The finish reason the API reported (e.g. `stop`, `length`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Why the answer ended: `marker`, `complete` (a whole JSON value
    /// after its marker), `repetition` (lines, or a prose answer's
    /// sentence, written again), `enough` (a prose answer long enough at
    /// a sentence end), all cut by the host; `length` (the token cap),
    /// `end` (the model stopped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<String>,
    /// Of `prompt_tokens`, those the server says it reused from its
    /// prompt cache (llama.cpp's `timings.cache_n`, OpenAI-style
    /// `cached_tokens`, Anthropic's `cache_read_input_tokens`). Absent
    /// when the server said nothing (or nothing believable): unknown is
    /// not 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_prompt_tokens: Option<u64>,
    /// Error message (transport failure, budget refusal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An open exchange log; shared by every thread of a run (each line is
/// written under a lock).
#[derive(Debug)]
pub struct ExchangeLog {
    path: PathBuf,
    file: Mutex<(File, u64)>,
}

impl ExchangeLog {
    /// Opens (creating folders and file as needed) the log at `path` for
    /// appending. Numbering continues after the lines already there.
    pub fn open(path: &Path) -> Result<ExchangeLog, LlmError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| LlmError::Io(format!("{}: {e}", dir.display())))?;
        }
        let existing = match File::open(path) {
            Ok(f) => BufReader::new(f).lines().count() as u64,
            Err(_) => 0,
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| LlmError::Io(format!("{}: {e}", path.display())))?;
        Ok(ExchangeLog {
            path: path.to_path_buf(),
            file: Mutex::new((file, existing)),
        })
    }

    /// The log's path, as opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `entry` as one fsynced line, setting its `seq`.
    pub fn append(&self, entry: &mut Exchange) -> Result<(), LlmError> {
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        entry.seq = guard.1;
        let mut line = serde_json::to_string(entry)
            .map_err(|e| LlmError::Io(format!("serialising an exchange: {e}")))?;
        line.push('\n');
        let (file, next) = &mut *guard;
        file.write_all(line.as_bytes())
            .and_then(|_| file.sync_data())
            .map_err(|e| LlmError::Io(format!("{}: {e}", self.path.display())))?;
        *next += 1;
        Ok(())
    }
}

/// Reads every entry of an exchange log, naming the line of any entry that
/// does not parse.
pub fn read_exchanges(path: &Path) -> Result<Vec<Exchange>, LlmError> {
    let file =
        File::open(path).map_err(|e| LlmError::ReplayLog(format!("{}: {e}", path.display())))?;
    let mut out = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| LlmError::ReplayLog(format!("{}: {e}", path.display())))?;
        if line.trim().is_empty() {
            continue;
        }
        let entry: Exchange = serde_json::from_str(&line)
            .map_err(|e| LlmError::ReplayLog(format!("{} line {}: {e}", path.display(), i + 1)))?;
        out.push(entry);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extraction_records_the_canonicalizer_verdict() {
        let e = Extraction::of("x {\"items\": []} y");
        assert_eq!(e.canonical_status, "OK");
        assert_eq!(e.canonical_json.as_deref(), Some("{\"items\":[]}"));
        let e = Extraction::of("{\"a\":1} {\"b\":2}");
        assert_eq!(e.canonical_status, "AMBIGUOUS_MULTI_BLOCK");
        assert!(e.canonical_hash.is_none());
        assert_eq!(Extraction::of("").canonical_status, "NO_JSON");
    }

    #[test]
    fn an_extraction_logged_with_more_fields_still_reads_and_compares() {
        // Logs written before the extraction record was made generic carry
        // the fields of a kernel's own format reader; replay compares what
        // is generic only.
        let old = r#"{"canonical_status":"NO_JSON","rejection":"NO_JSON: the text contains no JSON object","ladder_method":"freeform_salvage","ladder_ops":1}"#;
        let e: Extraction = serde_json::from_str(old).expect("an old record reads");
        assert_eq!(e.canonical_status, "NO_JSON");
        assert_eq!(Extraction::of("Nothing to add."), e);
    }
}
