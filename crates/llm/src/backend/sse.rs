//! Server-sent events (`text/event-stream`), as OpenAI and Anthropic
//! stream them.

use super::http::{server_error, LineReader};
use crate::error::{TransportError, TransportErrorKind};
use serde_json::{json, Value};

/// One event with data, complete at the blank line that ends it (or at
/// the end of the stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Reads the next event; `None` at the end of the stream. Comment lines
/// (`:`) and unknown fields are ignored; an event without data is skipped.
/// An `error:` field (llama.cpp's server reports a failure mid-stream that
/// way) is an error carrying the server's message.
pub(crate) fn next_event(reader: &mut LineReader) -> Result<Option<SseEvent>, TransportError> {
    let mut event: Option<String> = None;
    let mut data: Option<String> = None;
    loop {
        let Some(line) = reader.next_line()? else {
            return Ok(data.map(|data| SseEvent { event, data }));
        };
        if line.is_empty() {
            if let Some(data) = data.take() {
                return Ok(Some(SseEvent { event, data }));
            }
            event = None;
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "event" => event = Some(value.to_string()),
            "error" => return Err(error_field(value)),
            "data" => match data.as_mut() {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_string()),
            },
            _ => {}
        }
    }
}

/// The error of an `error:` field: a JSON error object (with or without
/// the `{"error": …}` wrapper) or plain text.
fn error_field(value: &str) -> TransportError {
    let wrapped = match serde_json::from_str::<Value>(value) {
        Ok(v) if v.get("error").is_some() => v,
        Ok(v) => json!({ "error": v }),
        Err(_) => json!({ "error": value }),
    };
    server_error(&wrapped).unwrap_or_else(|| {
        TransportError::new(
            TransportErrorKind::Protocol,
            "the server sent an empty error event",
        )
    })
}
