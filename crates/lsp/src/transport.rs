//! The LSP base protocol: `Content-Length` framed JSON-RPC messages.
//!
//! Written here rather than taken from `lsp-server`, whose reader thread
//! ends at the first frame that is not valid JSON: a language server must
//! answer a malformed message with a JSON-RPC error and stay up.
//!
//! Framing is read as bytes, never decoded as UTF-8 as a whole (one bad
//! byte must not end the server), with every header line and the number
//! of header lines bounded, and nothing of a bad header echoed beyond a
//! short escaped excerpt. A frame's start is found by looking for the next
//! `Content-Length:` (or `Content-Type:`) header anywhere in the stream:
//! after a bad frame (a refused length, a body longer than announced,
//! junk between messages) the reader skips to the next header, so each
//! bad frame costs at most its own message.

use serde_json::{json, Value};
use std::io::{self, BufRead, Write};

/// The largest message body accepted (a 1 MB document sent whole, escaped,
/// fits many times over).
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// The longest header line accepted, line ending included.
pub const MAX_HEADER_LINE: usize = 8 * 1024;

/// The most header lines one message may have (LSP defines two).
pub const MAX_HEADER_LINES: usize = 32;

/// How much of a bad header a refusal quotes.
const EXCERPT: usize = 40;

/// JSON-RPC error codes the server answers with.
pub mod codes {
    /// The body is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// JSON, but not a JSON-RPC request or notification.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The parameters do not have the method's shape.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed while answering.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// A request before `initialize`.
    pub const SERVER_NOT_INITIALIZED: i64 = -32002;
    /// The request was cancelled by the client.
    pub const REQUEST_CANCELLED: i64 = -32800;
    /// The document changed while the request was being answered.
    pub const CONTENT_MODIFIED: i64 = -32801;
}

/// One message read from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: it gets exactly one response.
    Request {
        /// Its id (a number or a string).
        id: Value,
        /// The method.
        method: String,
        /// The parameters (`null` when absent).
        params: Value,
    },
    /// A notification: no response.
    Notification {
        /// The method.
        method: String,
        /// The parameters (`null` when absent).
        params: Value,
    },
    /// A response to a request the server sent.
    Response {
        /// The id of the server's request.
        id: Value,
        /// The result, or `None` for an error response.
        result: Option<Value>,
    },
    /// Something that is not a valid message: answered with `code`.
    Malformed {
        /// The request's id when it could be read (else `null`).
        id: Value,
        /// The JSON-RPC error code.
        code: i64,
        /// What was wrong.
        message: String,
    },
}

/// The header names a frame may start with, lowercase.
const FRAME_STARTS: [&[u8]; 2] = [b"content-length:", b"content-type:"];

/// Consumes the input up to and including the next header name that
/// starts a frame (`Content-Length:` or `Content-Type:`, any case), which
/// it returns; `None` at the end of the input. What came before it (blank
/// lines between messages, the rest of a refused frame) is skipped and,
/// when it is more than blank lines, logged. Memory stays bounded however
/// much is skipped.
fn skip_to_frame(input: &mut impl BufRead) -> io::Result<Option<&'static [u8]>> {
    // Both names start with "content-" and have no other 'c' before their
    // ':', so a mismatch restarts a match at 0, or at 1 on a 'c'.
    let mut matched = [0usize; 2];
    let mut consumed: u64 = 0;
    // Where the first byte other than a line ending or a space was.
    let mut first_junk: Option<u64> = None;
    let mut junk: Vec<u8> = Vec::new();
    let log = |skipped: u64, junk: &[u8], what: &str| {
        eprintln!(
            "koas lsp: skipped {skipped} bytes that are not a message {what}: {}",
            excerpt(junk)
        );
    };
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            if first_junk.is_some() {
                log(consumed, &junk, "at the end of the input");
            }
            return Ok(None);
        }
        let mut found = None;
        let mut used = 0;
        // Outside a match, jump to the next 'c' (a long refused body or
        // header line is skipped at memchr's speed, not byte by byte).
        if matched == [0, 0] {
            let skip = memchr::memchr2(b'c', b'C', buf).unwrap_or(buf.len());
            if first_junk.is_none() {
                if let Some(i) = buf[..skip].iter().position(|b| !b.is_ascii_whitespace()) {
                    first_junk = Some(consumed + i as u64);
                }
            }
            if let Some(first) = first_junk {
                let from = first.saturating_sub(consumed) as usize;
                let room = EXCERPT.saturating_sub(junk.len());
                let upto = skip.min(from.saturating_add(room));
                if from < upto {
                    junk.extend_from_slice(&buf[from..upto]);
                }
            }
            used = skip;
        }
        for &byte in &buf[used..] {
            used += 1;
            if first_junk.is_none() && !byte.is_ascii_whitespace() {
                first_junk = Some(consumed + used as u64 - 1);
            }
            if first_junk.is_some() && junk.len() < EXCERPT {
                junk.push(byte);
            }
            let lower = byte.to_ascii_lowercase();
            for (m, name) in matched.iter_mut().zip(FRAME_STARTS) {
                *m = if lower == name[*m] {
                    *m + 1
                } else {
                    usize::from(lower == name[0])
                };
                if *m == name.len() {
                    found = Some(name);
                }
            }
            if found.is_some() {
                break;
            }
        }
        input.consume(used);
        consumed += used as u64;
        if let Some(name) = found {
            let start = consumed - name.len() as u64;
            if let Some(first) = first_junk.filter(|&f| f < start) {
                junk.truncate((start - first).min(EXCERPT as u64) as usize);
                log(start, &junk, "before the next header");
            }
            return Ok(Some(name));
        }
    }
}

/// One header line, read with a bound.
enum HeaderLine {
    /// The input ended first.
    End,
    /// The line without its ending.
    Whole(Vec<u8>),
    /// Longer than `limit`: reading stopped there (the rest is left in the
    /// input, where the next frame's search skips it).
    TooLong(Vec<u8>),
}

/// Reads up to the next `\n`, at most `limit` bytes.
fn read_line_bounded(input: &mut impl BufRead, limit: usize) -> io::Result<HeaderLine> {
    let mut line = Vec::new();
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(HeaderLine::End);
        }
        let room = limit.saturating_sub(line.len());
        let window = &buf[..buf.len().min(room + 1)];
        if let Some(i) = window.iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&window[..i]);
            input.consume(i + 1);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(HeaderLine::Whole(line));
        }
        let take = window.len().min(room);
        line.extend_from_slice(&window[..take]);
        input.consume(take);
        if line.len() >= limit {
            return Ok(HeaderLine::TooLong(line));
        }
    }
}

/// The start of `bytes`, escaped, for a message: never more than a few
/// dozen characters, whatever was sent.
pub fn excerpt(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(EXCERPT)];
    // Byte by byte: what is not printable ASCII shows as `\xNN`, so
    // neither a terminal escape nor a byte that is not UTF-8 passes.
    let text: String = shown
        .iter()
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect();
    if bytes.len() > EXCERPT {
        format!("\"{text}\"… ({} bytes)", bytes.len())
    } else {
        format!("\"{text}\"")
    }
}

/// What a `Content-Length` value says.
enum Length {
    /// A length the server reads.
    Ok(usize),
    /// Over [`MAX_BODY`] (the number, when it fits a `u64`).
    TooLarge(Option<u64>),
    /// Not a decimal number (negative, empty, other bytes).
    Garbage,
}

fn parse_length(value: &[u8]) -> Length {
    let value = value.trim_ascii();
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return Length::Garbage;
    }
    // All ASCII digits: the parse fails only on overflow.
    let n = std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    match n {
        Some(n) if n <= MAX_BODY as u64 => Length::Ok(n as usize),
        n => Length::TooLarge(n),
    }
}

/// A frame refused before its body: the error the client is answered
/// with. Its body (if any) is not read: the next read skips it.
fn refused(code: i64, message: String) -> io::Result<Option<Incoming>> {
    Ok(Some(Incoming::Malformed {
        id: Value::Null,
        code,
        message,
    }))
}

/// Reads the next message; `Ok(None)` at the end of the input.
///
/// A frame whose headers are wrong (a header line over
/// [`MAX_HEADER_LINE`], more than [`MAX_HEADER_LINES`], a length that is
/// not a number or is over [`MAX_BODY`]) is answered as [`Incoming::Malformed`]
/// without its body being read or stored; the next call resumes at the
/// next frame's header.
pub fn read_message(input: &mut impl BufRead) -> io::Result<Option<Incoming>> {
    let Some(first) = skip_to_frame(input)? else {
        return Ok(None);
    };
    let mut length: Option<usize> = None;
    let mut bad_header: Option<String> = None;
    let mut lines = 0;
    // The first line's name was consumed by the search: read its value.
    let mut pending_name: Option<&[u8]> = Some(first);
    loop {
        let limit = MAX_HEADER_LINE.saturating_sub(pending_name.map_or(0, <[u8]>::len));
        let line = match read_line_bounded(input, limit)? {
            HeaderLine::End => return Ok(None),
            HeaderLine::TooLong(start) => {
                let mut shown = pending_name.unwrap_or_default().to_vec();
                shown.extend_from_slice(&start);
                return refused(
                    codes::PARSE_ERROR,
                    format!(
                        "header line over {MAX_HEADER_LINE} bytes refused: {}",
                        excerpt(&shown)
                    ),
                );
            }
            HeaderLine::Whole(line) => line,
        };
        lines += 1;
        if lines > MAX_HEADER_LINES {
            return refused(
                codes::PARSE_ERROR,
                format!("more than {MAX_HEADER_LINES} header lines refused"),
            );
        }
        let (name, value): (Vec<u8>, &[u8]) = match pending_name.take() {
            Some(name) => (name[..name.len() - 1].to_vec(), &line[..]),
            None => {
                if line.is_empty() {
                    break;
                }
                match line.iter().position(|&b| b == b':') {
                    Some(i) => (line[..i].to_vec(), &line[i + 1..]),
                    None => {
                        bad_header = Some(format!("header line without ':': {}", excerpt(&line)));
                        continue;
                    }
                }
            }
        };
        if name.trim_ascii().eq_ignore_ascii_case(b"content-length") {
            match parse_length(value) {
                Length::Ok(n) => length = Some(n),
                Length::TooLarge(n) => {
                    let size = n.map_or_else(|| "over 2^64".to_string(), |n| n.to_string());
                    return refused(
                        codes::INVALID_REQUEST,
                        format!("message of {size} bytes refused (at most {MAX_BODY})"),
                    );
                }
                Length::Garbage => {
                    return refused(
                        codes::PARSE_ERROR,
                        format!("Content-Length is not a number: {}", excerpt(value)),
                    );
                }
            }
        }
    }
    let Some(length) = length else {
        return refused(
            codes::PARSE_ERROR,
            bad_header.unwrap_or_else(|| "no Content-Length header".into()),
        );
    };
    let mut body = vec![0u8; length];
    input.read_exact(&mut body)?;
    Ok(Some(classify(&body)))
}

/// Reads one body as a JSON-RPC message.
pub fn classify(body: &[u8]) -> Incoming {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return Incoming::Malformed {
                id: Value::Null,
                code: codes::PARSE_ERROR,
                message: format!("not JSON: {e}"),
            }
        }
    };
    let Some(object) = value.as_object() else {
        return Incoming::Malformed {
            id: Value::Null,
            code: codes::INVALID_REQUEST,
            message: "a message must be a JSON object (batches are not used by LSP)".into(),
        };
    };
    let id = object.get("id").cloned();
    let id_ok = matches!(&id, None | Some(Value::Number(_) | Value::String(_)));
    let shown_id = if id_ok {
        id.clone().unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return Incoming::Malformed {
            id: shown_id,
            code: codes::INVALID_REQUEST,
            message: "\"jsonrpc\" must be \"2.0\"".into(),
        };
    }
    if !id_ok {
        return Incoming::Malformed {
            id: Value::Null,
            code: codes::INVALID_REQUEST,
            message: "\"id\" must be a number or a string".into(),
        };
    }
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    if !matches!(params, Value::Null | Value::Object(_) | Value::Array(_)) {
        return Incoming::Malformed {
            id: shown_id,
            code: codes::INVALID_REQUEST,
            message: "\"params\" must be an object or an array".into(),
        };
    }
    match (object.get("method"), id) {
        (Some(Value::String(method)), Some(id)) => Incoming::Request {
            id,
            method: method.clone(),
            params,
        },
        (Some(Value::String(method)), None) => Incoming::Notification {
            method: method.clone(),
            params,
        },
        (Some(_), _) => Incoming::Malformed {
            id: shown_id,
            code: codes::INVALID_REQUEST,
            message: "\"method\" must be a string".into(),
        },
        (None, Some(id)) if object.contains_key("result") || object.contains_key("error") => {
            Incoming::Response {
                id,
                result: object.get("result").cloned(),
            }
        }
        (None, _) => Incoming::Malformed {
            id: shown_id,
            code: codes::INVALID_REQUEST,
            message: "no \"method\"".into(),
        },
    }
}

/// Writes one message with its header and flushes.
pub fn write_message(output: &mut impl Write, message: &Value) -> io::Result<()> {
    let body = serde_json::to_vec(message)?;
    write!(output, "Content-Length: {}\r\n\r\n", body.len())?;
    output.write_all(&body)?;
    output.flush()
}

/// A success response.
pub fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response.
pub fn error_response(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A notification from the server.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// A request from the server.
pub fn request(id: &Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn frame(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    fn read_all(bytes: &[u8]) -> Vec<Incoming> {
        let mut input = std::io::BufReader::new(bytes);
        let mut out = Vec::new();
        while let Some(m) = read_message(&mut input).expect("reads") {
            out.push(m);
        }
        out
    }

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        let mut bytes = frame(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#);
        bytes.extend(frame(r#"{"jsonrpc":"2.0","method":"initialized"}"#));
        bytes.extend(frame(r#"{"jsonrpc":"2.0","id":"s1","result":null}"#));
        let got = read_all(&bytes);
        assert!(matches!(&got[0], Incoming::Request { method, .. } if method == "initialize"));
        assert!(matches!(
            &got[1],
            Incoming::Notification {
                params: Value::Null,
                ..
            }
        ));
        assert!(matches!(
            &got[2],
            Incoming::Response {
                result: Some(Value::Null),
                ..
            }
        ));
    }

    fn request_frame(id: u64) -> Vec<u8> {
        frame(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"textDocument/hover","params":{{}}}}"#
        ))
    }

    /// The ids of the requests read, and the (code, message) of each refusal.
    fn outcome(got: &[Incoming]) -> (Vec<Value>, Vec<(i64, String)>) {
        let mut ids = Vec::new();
        let mut refusals = Vec::new();
        for m in got {
            match m {
                Incoming::Request { id, .. } => ids.push(id.clone()),
                Incoming::Malformed { code, message, .. } => {
                    refusals.push((*code, message.clone()))
                }
                _ => {}
            }
        }
        (ids, refusals)
    }

    fn five_ids() -> Vec<Value> {
        (1..=5).map(|i| json!(i)).collect()
    }

    fn five_requests() -> Vec<u8> {
        (1..=5).flat_map(request_frame).collect()
    }

    #[test]
    fn a_header_byte_that_is_not_utf8_refuses_its_frame_only() {
        let mut bytes = b"Content-Length: 10\xff\r\n\r\n{\"a\":1}xyz".to_vec();
        bytes.extend(five_requests());
        let (ids, refusals) = outcome(&read_all(&bytes));
        assert_eq!(ids, five_ids());
        assert_eq!(refusals.len(), 1, "{refusals:?}");
        assert_eq!(refusals[0].0, codes::PARSE_ERROR);
        assert!(refusals[0].1.ends_with(r#"" 10\xff""#), "{refusals:?}");
    }

    #[test]
    fn a_huge_header_line_is_refused_and_not_echoed() {
        let huge = "a".repeat(5 << 20);
        // Too long as the first line, and as a later line of a frame.
        let mut bytes = format!("Content-Type: {huge}\r\n\r\n").into_bytes();
        bytes.extend(request_frame(1));
        bytes.extend(format!("Content-Length: 2\r\nX-Pad: {huge}\r\n\r\n{{}}").into_bytes());
        bytes.extend(request_frame(2));
        let (ids, refusals) = outcome(&read_all(&bytes));
        assert_eq!(ids, [json!(1), json!(2)]);
        assert_eq!(refusals.len(), 2, "{refusals:?}");
        for (code, message) in &refusals {
            assert_eq!(*code, codes::PARSE_ERROR);
            assert!(message.len() < 200, "echoed: {} bytes", message.len());
            assert!(message.contains("over 8192 bytes"), "{message}");
        }
    }

    #[test]
    fn too_many_header_lines_are_refused() {
        let mut bytes = b"Content-Length: 2\r\n".to_vec();
        for i in 0..MAX_HEADER_LINES {
            bytes.extend(format!("X-{i}: y\r\n").into_bytes());
        }
        bytes.extend(b"\r\n{}");
        bytes.extend(request_frame(1));
        let (ids, refusals) = outcome(&read_all(&bytes));
        assert_eq!(ids, [json!(1)]);
        assert_eq!(refusals.len(), 1, "{refusals:?}");
        assert!(refusals[0].1.contains("header lines"), "{refusals:?}");
    }

    /// An input that fails the test if more than `limit` bytes are read
    /// from it: the refused body must not be read.
    struct Bounded<'a> {
        data: &'a [u8],
        read: usize,
        limit: usize,
    }

    impl Read for Bounded<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.data.len() - self.read).min(64);
            buf[..n].copy_from_slice(&self.data[self.read..self.read + n]);
            self.read += n;
            assert!(self.read <= self.limit, "read {} bytes", self.read);
            Ok(n)
        }
    }

    #[test]
    fn an_oversized_length_is_refused_without_reading_the_body() {
        let mut bytes = b"Content-Length: 99999999999\r\n\r\n".to_vec();
        bytes.extend(request_frame(1));
        let mut over_u64 = b"Content-Length: 999999999999999999999999\r\n\r\n".to_vec();
        over_u64.extend(request_frame(2));
        for (bytes, id) in [(bytes, 1), (over_u64, 2)] {
            let len = bytes.len();
            let mut input = std::io::BufReader::with_capacity(
                64,
                Bounded {
                    data: &bytes,
                    read: 0,
                    limit: len,
                },
            );
            let refusal = read_message(&mut input).expect("reads");
            assert!(
                matches!(&refusal, Some(Incoming::Malformed { code, message, .. })
                    if *code == codes::INVALID_REQUEST && message.contains("refused")),
                "{refusal:?}"
            );
            // Only the header was read to refuse it.
            assert!(input.get_ref().read < 64 + 64, "{}", input.get_ref().read);
            let next = read_message(&mut input).expect("reads");
            assert!(
                matches!(&next, Some(Incoming::Request { id: got, .. }) if *got == json!(id)),
                "{next:?}"
            );
        }
    }

    #[test]
    fn a_negative_length_then_five_requests_all_read() {
        let mut bytes = b"Content-Length: -5\r\n\r\n".to_vec();
        bytes.extend(five_requests());
        let (ids, refusals) = outcome(&read_all(&bytes));
        assert_eq!(ids, five_ids());
        assert_eq!(refusals.len(), 1, "{refusals:?}");
        assert_eq!(refusals[0].0, codes::PARSE_ERROR);
    }

    #[test]
    fn a_body_longer_than_announced_then_five_requests_all_read() {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"x","params":{{"pad":"{}"}}}}"#,
            "p".repeat(60)
        );
        let mut bytes = format!("Content-Length: {}\r\n\r\n{body}", body.len() - 40).into_bytes();
        bytes.extend(five_requests());
        let (ids, refusals) = outcome(&read_all(&bytes));
        assert_eq!(ids, five_ids());
        assert_eq!(refusals.len(), 1, "{refusals:?}");
        assert_eq!(refusals[0].0, codes::PARSE_ERROR);
    }

    #[test]
    fn content_type_first_and_blank_lines_between_messages() {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#;
        let bytes = format!(
            "\r\n\r\ncontent-type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (ids, refusals) = outcome(&read_all(bytes.as_bytes()));
        assert_eq!((ids, refusals), (vec![json!(1)], vec![]));
    }

    #[test]
    fn malformed_messages_get_their_error_code_and_reading_goes_on() {
        let mut bytes = frame("{not json");
        bytes.extend(frame(r#"[1,2]"#));
        bytes.extend(frame(r#"{"jsonrpc":"1.0","id":7,"method":"x"}"#));
        bytes.extend(frame(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#));
        bytes.extend(frame(r#"{"jsonrpc":"2.0","id":8}"#));
        bytes.extend(b"Content-Length: pigs\r\n\r\n");
        bytes.extend(frame(r#"{"jsonrpc":"2.0","method":"exit"}"#));
        let got = read_all(&bytes);
        let codes: Vec<i64> = got
            .iter()
            .filter_map(|m| match m {
                Incoming::Malformed { code, .. } => Some(*code),
                _ => None,
            })
            .collect();
        assert_eq!(
            codes,
            [
                codes::PARSE_ERROR,
                codes::INVALID_REQUEST,
                codes::INVALID_REQUEST,
                codes::INVALID_REQUEST,
                codes::INVALID_REQUEST,
                codes::PARSE_ERROR
            ]
        );
        assert!(matches!(&got[2], Incoming::Malformed { id, .. } if *id == json!(7)));
        assert!(
            matches!(got.last(), Some(Incoming::Notification { method, .. }) if method == "exit")
        );
    }
}
