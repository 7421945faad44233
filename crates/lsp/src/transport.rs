//! The LSP base protocol: `Content-Length` framed JSON-RPC messages.
//!
//! Written here rather than taken from `lsp-server`, whose reader thread
//! ends at the first frame that is not valid JSON: a language server must
//! answer a malformed message with a JSON-RPC error and stay up.

use serde_json::{json, Value};
use std::io::{self, BufRead, Read, Write};

/// The largest message body accepted (a 1 MB document sent whole, escaped,
/// fits many times over).
pub const MAX_BODY: usize = 64 * 1024 * 1024;

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

/// Reads the next message; `Ok(None)` at the end of the input.
pub fn read_message(input: &mut impl BufRead) -> io::Result<Option<Incoming>> {
    let mut length: Option<usize> = None;
    let mut bad_header: Option<String> = None;
    let mut saw_header = false;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if saw_header {
                break;
            }
            // Blank lines between messages are tolerated.
            continue;
        }
        saw_header = true;
        let Some((name, value)) = line.split_once(':') else {
            bad_header = Some(format!("header line without ':': {line:?}"));
            continue;
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            match value.trim().parse::<usize>() {
                Ok(n) => length = Some(n),
                Err(_) => bad_header = Some(format!("Content-Length is not a number: {value:?}")),
            }
        }
    }
    let Some(length) = length else {
        return Ok(Some(Incoming::Malformed {
            id: Value::Null,
            code: codes::PARSE_ERROR,
            message: bad_header.unwrap_or_else(|| "no Content-Length header".into()),
        }));
    };
    if length > MAX_BODY {
        io::copy(&mut input.take(length as u64), &mut io::sink())?;
        return Ok(Some(Incoming::Malformed {
            id: Value::Null,
            code: codes::INVALID_REQUEST,
            message: format!("message of {length} bytes refused (at most {MAX_BODY})"),
        }));
    }
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
