//! The stdio framing in front of the protocol library: every line a
//! client sends gets an answer or a log line, never silence.
//!
//! The MCP library drops what it cannot read: a line of 16 MiB or more,
//! a line that is not JSON, a request whose parameters do not fit its
//! method (which it then takes for an unknown method). A client waiting
//! for that answer waits for its own timeout. So the server reads stdin
//! itself, line by line, and answers those lines with the JSON-RPC error
//! they deserve (`-32700` parse error, `-32600` invalid request, `-32602`
//! invalid params), logging each on stderr; every other line goes to the
//! library unchanged. Both write to stdout through one writer, a whole
//! line at a time, so an answer never cuts another.

use rmcp::model::{CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The longest line read (the protocol library's own limit, less one
/// byte so that every line passed on fits it).
pub const MAX_LINE: usize = 16 * 1024 * 1024 - 1;

/// How much of an oversized line is kept to find its `id`.
const ID_PREFIX: usize = 4096;

/// What to do with one line from the client.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Hand it to the protocol library.
    Forward,
    /// Nothing to answer (an empty line).
    Skip,
    /// Answer this error response (and log why).
    Answer {
        /// The JSON-RPC response.
        response: Value,
        /// The stderr line.
        log: String,
    },
}

/// Request methods of the protocol: a request of one of these whose
/// parameters do not fit has invalid parameters, not an unknown method.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "logging/setLevel",
    "completion/complete",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
];

fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    })
}

/// Judges one complete line (without its newline).
pub fn judge(line: &[u8]) -> Verdict {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Verdict::Answer {
                response: error_response(Value::Null, -32700, &format!("Parse error: {e}")),
                log: format!(
                    "a line of {} bytes is not JSON ({e}): answered -32700",
                    line.len()
                ),
            }
        }
    };
    let Some(object) = value.as_object() else {
        return Verdict::Answer {
            response: error_response(
                Value::Null,
                -32600,
                "Invalid Request: a message must be a JSON object (batches are not supported)",
            ),
            log: "a message that is not a JSON object: answered -32600".to_owned(),
        };
    };
    let id = object.get("id").cloned();
    let method = object.get("method").and_then(Value::as_str);
    let (Some(id), Some(method)) = (id, method) else {
        // A notification or a response: the library reads or ignores it;
        // neither may be answered.
        return Verdict::Forward;
    };
    if !(id.is_string() || id.is_i64() || id.is_u64()) {
        return Verdict::Answer {
            response: error_response(
                Value::Null,
                -32600,
                "Invalid Request: id must be a string or an integer",
            ),
            log: format!("a {method} request with the id {id}: answered -32600"),
        };
    }
    let invalid = |why: String| Verdict::Answer {
        response: error_response(id.clone(), -32602, &format!("Invalid params: {why}")),
        log: format!("{method} request {id}: invalid params ({why}): answered -32602"),
    };
    match serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
        Ok(JsonRpcMessage::Request(request)) => {
            // The library takes a known method whose parameters do not
            // fit for a custom one, and would answer "method not found".
            if let ClientRequest::CustomRequest(_) = request.request {
                if KNOWN_METHODS.contains(&method) {
                    return invalid(params_error(method, object.get("params")));
                }
            }
            Verdict::Forward
        }
        Ok(_) => Verdict::Forward,
        Err(e) if KNOWN_METHODS.contains(&method) => invalid(e.to_string()),
        Err(e) => Verdict::Answer {
            response: error_response(id.clone(), -32600, &format!("Invalid Request: {e}")),
            log: format!("{method} request {id}: not a JSON-RPC request ({e}): answered -32600"),
        },
    }
}

/// Why `params` do not fit `method`, as precisely as can be said.
fn params_error(method: &str, params: Option<&Value>) -> String {
    let params = params.cloned().unwrap_or(Value::Null);
    let specific = match method {
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params).err(),
        _ => None,
    };
    match specific {
        Some(e) => format!("{method}: {e}"),
        None => format!("the parameters do not fit {method}"),
    }
}

/// The answer to a line longer than [`MAX_LINE`] (`prefix`: its first
/// bytes, where its `id` is looked for).
pub fn oversized(prefix: &[u8], length: usize) -> Verdict {
    let id = id_in_prefix(prefix).unwrap_or(Value::Null);
    Verdict::Answer {
        response: error_response(
            id.clone(),
            -32600,
            &format!(
                "Invalid Request: a message of {length} bytes or more is over the limit of {} bytes (16 MiB); nothing of it was read",
                MAX_LINE
            ),
        ),
        log: format!("dropped a message of {length} bytes or more (over 16 MiB), id {id}: answered -32600"),
    }
}

/// The `"id"` of a truncated JSON-RPC message, when it comes early (most
/// clients write `jsonrpc`, `id`, `method` first).
fn id_in_prefix(prefix: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(prefix);
    let at = text.find("\"id\"")?;
    let rest = text[at + 4..].trim_start().strip_prefix(':')?.trim_start();
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    match stream.next() {
        Some(Ok(v)) if v.is_string() || v.is_i64() || v.is_u64() => Some(v),
        _ => None,
    }
}

/// One line from the client: its bytes, or how long it was when it was
/// too long to keep.
enum Line {
    Whole(Vec<u8>),
    TooLong { prefix: Vec<u8>, length: usize },
}

/// Reads one line without ever holding more than [`MAX_LINE`] bytes of
/// it; `None` at the end of the input.
async fn read_line<R: AsyncBufRead + Unpin>(input: &mut R) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut length = 0usize;
    let mut too_long = false;
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            // The end: a last line without a newline still counts.
            return Ok(match (length, too_long) {
                (0, _) => None,
                (_, false) => Some(Line::Whole(line)),
                (_, true) => Some(Line::TooLong {
                    prefix: line,
                    length,
                }),
            });
        }
        let (chunk, done) = match buffer.iter().position(|&b| b == b'\n') {
            Some(at) => (&buffer[..at], Some(at + 1)),
            None => (buffer, None),
        };
        length += chunk.len();
        if !too_long {
            if length > MAX_LINE {
                too_long = true;
                let keep = ID_PREFIX.saturating_sub(line.len()).min(chunk.len());
                line.extend_from_slice(&chunk[..keep]);
                line.truncate(ID_PREFIX);
                line.shrink_to_fit();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = done.unwrap_or(buffer.len());
        input.consume(consumed);
        if done.is_some() {
            return Ok(Some(if too_long {
                Line::TooLong {
                    prefix: line,
                    length,
                }
            } else {
                Line::Whole(line)
            }));
        }
    }
}

/// Reads the client's lines from `input` until it ends: forwards the good
/// ones to `library` (a line each), sends the answers of the others to
/// `answers`.
pub async fn read_client<R, W>(
    mut input: R,
    mut library: W,
    answers: mpsc::UnboundedSender<Vec<u8>>,
) where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        let line = match read_line(&mut input).await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                eprintln!("koas mcp: cannot read stdin: {e}");
                break;
            }
        };
        let verdict = match &line {
            Line::Whole(bytes) => judge(bytes),
            Line::TooLong { prefix, length } => oversized(prefix, *length),
        };
        match (verdict, line) {
            (Verdict::Forward, Line::Whole(mut bytes)) => {
                bytes.push(b'\n');
                if library.write_all(&bytes).await.is_err() || library.flush().await.is_err() {
                    break;
                }
            }
            (Verdict::Answer { response, log }, _) => {
                // The log quotes the client's method and id.
                eprintln!(
                    "koas mcp: {}",
                    koas_orchestrator::embed::escape_controls(&log)
                );
                let mut bytes = response.to_string().into_bytes();
                bytes.push(b'\n');
                if answers.send(bytes).is_err() {
                    break;
                }
            }
            _ => {}
        }
    }
    // The library sees the end of the input and stops.
    let _ = library.shutdown().await;
}

/// Reads the library's output a line at a time and sends each whole line
/// to `out`, so that an answer of [`read_client`] never lands inside one.
pub async fn read_library<R>(mut output: R, out: mpsc::UnboundedSender<Vec<u8>>)
where
    R: AsyncBufRead + Unpin,
{
    loop {
        let mut line = Vec::new();
        match output.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if out.send(line).is_err() {
                    break;
                }
            }
        }
    }
}

/// Writes every line it receives to `stdout`, flushing after each.
pub async fn write_lines<W: AsyncWrite + Unpin>(
    mut stdout: W,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(line) = lines.recv().await {
        if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer_of(v: Verdict) -> Value {
        match v {
            Verdict::Answer { response, .. } => response,
            other => panic!("expected an answer, got {other:?}"),
        }
    }

    #[test]
    fn a_line_that_is_not_json_is_a_parse_error() {
        let r = answer_of(judge(b"{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\""));
        assert_eq!(r["error"]["code"], -32700);
        assert_eq!(r["id"], Value::Null);
    }

    #[test]
    fn a_tool_call_with_a_wrong_name_type_is_invalid_params_with_its_id() {
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5}}"#;
        let r = answer_of(judge(line));
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert_eq!(r["id"], 7);
        assert!(
            r["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("tools/call")),
            "{r}"
        );
    }

    #[test]
    fn good_messages_and_unknown_methods_go_to_the_library() {
        for line in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_md","arguments":{"doc_path":"a.md"}}}"#[..],
            br#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            // An unknown method: the library answers -32601 itself.
            br#"{"jsonrpc":"2.0","id":2,"method":"no/such"}"#,
        ] {
            assert_eq!(judge(line), Verdict::Forward, "{}", String::from_utf8_lossy(line));
        }
        assert_eq!(judge(b"  \r"), Verdict::Skip);
    }

    #[test]
    fn arrays_and_bad_ids_are_invalid_requests() {
        assert_eq!(answer_of(judge(b"[1,2]"))["error"]["code"], -32600);
        let r = answer_of(judge(br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#));
        assert_eq!(r["error"]["code"], -32600);
    }

    #[test]
    fn an_oversized_line_is_answered_with_the_id_of_its_beginning() {
        let r = answer_of(oversized(
            br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"#,
            MAX_LINE + 1,
        ));
        assert_eq!(r["id"], 42);
        assert_eq!(r["error"]["code"], -32600);
        let r = answer_of(oversized(b"xxxxxxxx", MAX_LINE + 1));
        assert_eq!(r["id"], Value::Null);
    }

    #[tokio::test]
    async fn lines_are_split_and_an_oversized_one_is_not_kept() {
        let mut input = Vec::new();
        input.extend_from_slice(b"{\"a\":1}\n");
        input.extend_from_slice(b"{\"id\":9,");
        input.extend(std::iter::repeat(b'x').take(MAX_LINE + 10));
        input.extend_from_slice(b"\nlast");
        let mut reader = tokio::io::BufReader::with_capacity(1 << 16, &input[..]);
        assert!(
            matches!(read_line(&mut reader).await, Ok(Some(Line::Whole(l))) if l == b"{\"a\":1}")
        );
        match read_line(&mut reader).await {
            Ok(Some(Line::TooLong { prefix, length })) => {
                assert_eq!(length, MAX_LINE + 18);
                assert!(prefix.len() <= ID_PREFIX);
                assert_eq!(id_in_prefix(&prefix), Some(json!(9)));
            }
            _ => panic!("expected a line too long"),
        }
        assert!(matches!(read_line(&mut reader).await, Ok(Some(Line::Whole(l))) if l == b"last"));
        assert!(matches!(read_line(&mut reader).await, Ok(None)));
    }
}
