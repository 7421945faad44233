//! Server-sent events (`text/event-stream`), as OpenAI and Anthropic
//! stream them.

use super::http::LineReader;
use crate::error::TransportError;

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
