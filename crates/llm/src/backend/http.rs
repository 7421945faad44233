//! HTTP over ureq: one agent per service, a deadline on each attempt,
//! bounded bodies, and errors mapped to [`TransportError`].
//!
//! Two rules keep requests where the policy allows them:
//!
//! * every connection's addresses come from the sovereignty resolver,
//!   which checks what a name resolves to and hands over exactly the
//!   addresses it checked;
//! * redirects are never followed. A request body (the prompt) and an API
//!   key would go to a host nobody configured; a 3xx answer is an error
//!   naming its `Location`, not retried.
//!
//! A 2xx answer that is not what the backend speaks — an HTML page, an
//! `{"error": …}` object, plain text — is reported with the server's own
//! words (truncated), instead of as a stream that ended early.

use super::CancelFlag;
use crate::config::LlmConfig;
use crate::error::{TransportError, TransportErrorKind};
use crate::sovereignty::{CheckedResolver, Refusal};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::time::{Duration, Instant};
use url::Url;

/// How much of a server's message an error quotes.
const QUOTE_CHARS: usize = 300;
/// How much of an HTML page is read to find its title.
const HTML_PREFIX_BYTES: usize = 64 * 1024;

/// The shared HTTP client of a backend.
#[derive(Clone)]
pub(crate) struct HttpClient {
    agent: ureq::Agent,
    resolver: CheckedResolver,
    timeout: Duration,
    max_bytes: usize,
    endpoint: String,
}

impl HttpClient {
    /// The client of `config`, resolving names with the system resolver.
    pub(crate) fn new(config: &LlmConfig) -> Self {
        Self::with_resolver(config, CheckedResolver::new(config))
    }

    /// The client of `config`, connecting where `resolver` says.
    pub(crate) fn with_resolver(config: &LlmConfig, resolver: CheckedResolver) -> Self {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(config.connect_timeout())
            .max_idle_connections_per_host(config.max_in_flight.max(1))
            .redirects(0)
            .resolver(resolver.clone())
            .build();
        HttpClient {
            agent,
            resolver,
            timeout: config.timeout(),
            max_bytes: config.max_response_bytes,
            endpoint: config.endpoint(),
        }
    }

    /// The base URL, without a trailing `/`.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// `endpoint` + `path`; `path` starts with `/`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{}", self.endpoint, path)
    }

    /// This attempt's deadline: the per-attempt timeout, cut to what is
    /// left of the caller's overall deadline.
    fn attempt_timeout(&self, deadline: Option<Instant>) -> Result<Duration, TransportError> {
        let Some(at) = deadline else {
            return Ok(self.timeout);
        };
        let left = at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(TransportError::new(
                TransportErrorKind::Timeout,
                "the overall deadline passed before the attempt started",
            )
            .fatal());
        }
        Ok(left.min(self.timeout))
    }

    /// POSTs a JSON body; returns a line reader over the response body.
    /// The attempt's deadline (the per-attempt timeout, or less when
    /// `deadline` comes first) covers connecting, sending and reading.
    pub(crate) fn post(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &Value,
        deadline: Option<Instant>,
        cancel: Option<&CancelFlag>,
    ) -> Result<LineReader, TransportError> {
        let mut request = self
            .agent
            .post(url)
            .timeout(self.attempt_timeout(deadline)?)
            .set("content-type", "application/json");
        for (name, value) in headers {
            request = request.set(name, value);
        }
        let response = request
            .send_string(&body.to_string())
            .map_err(|e| map_ureq_error(url, e))?;
        self.accept(url, response, cancel)
    }

    /// GETs and parses a JSON document, within the attempt deadline and the
    /// response size limit.
    pub(crate) fn get_json(
        &self,
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<Value, TransportError> {
        let mut request = self.agent.get(url).timeout(self.timeout);
        for (name, value) in headers {
            request = request.set(name, value);
        }
        let response = request.call().map_err(|e| map_ureq_error(url, e))?;
        self.accept(url, response, None)?.read_json(url)
    }

    /// The body of a 2xx answer; a redirect or an HTML page is an error.
    fn accept(
        &self,
        url: &str,
        response: ureq::Response,
        cancel: Option<&CancelFlag>,
    ) -> Result<LineReader, TransportError> {
        let status = response.status();
        if (300..400).contains(&status) {
            return Err(self.redirect_error(url, status, response.header("location")));
        }
        let html = response
            .content_type()
            .to_ascii_lowercase()
            .contains("html");
        let body = response.into_reader();
        let body: Box<dyn Read + Send + Sync> = match cancel {
            Some(flag) => Box::new(CancelReader {
                inner: body,
                flag: flag.clone(),
            }),
            None => body,
        };
        let mut reader = LineReader::new(body, self.max_bytes);
        if html {
            let page = reader.read_snippet(HTML_PREFIX_BYTES);
            return Err(html_error(url, &page));
        }
        Ok(reader)
    }

    fn redirect_error(&self, url: &str, status: u16, location: Option<&str>) -> TransportError {
        let location = location.map(quote).unwrap_or_default();
        let target = Url::parse(url)
            .ok()
            .and_then(|base| base.join(&location).ok());
        let shown = target
            .as_ref()
            .map(Url::to_string)
            .unwrap_or_else(|| location.clone());
        let refused = match &target {
            Some(t) if self.resolver.refuses(t) => {
                "; strict sovereignty refuses that host in any case"
            }
            _ => "",
        };
        let mut err = TransportError::new(
            TransportErrorKind::Http,
            if location.is_empty() {
                format!("{url} answered HTTP {status} (a redirect without a Location); koas does not follow redirects")
            } else {
                format!(
                    "{url} answered HTTP {status} redirecting to {shown}; koas does not follow \
                     redirects (configure that endpoint if you trust it){refused}"
                )
            },
        )
        .fatal();
        err.status = Some(status);
        err
    }
}

/// Reads a response body line by line, within a byte limit, mapping I/O
/// failures (deadline included) to transport errors.
pub(crate) struct LineReader {
    inner: BufReader<Box<dyn Read + Send + Sync>>,
    remaining: usize,
    limit: usize,
    peeked: Option<String>,
}

impl LineReader {
    fn new(reader: Box<dyn Read + Send + Sync>, limit: usize) -> Self {
        LineReader {
            inner: BufReader::new(reader),
            remaining: limit,
            limit,
            peeked: None,
        }
    }

    /// The next line without its line ending; `None` at the end of the body.
    pub(crate) fn next_line(&mut self) -> Result<Option<String>, TransportError> {
        if let Some(line) = self.peeked.take() {
            return Ok(Some(line));
        }
        let mut buf = Vec::new();
        let read = (&mut self.inner)
            .take(self.remaining as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(map_io_error)?;
        if read == 0 {
            return Ok(None);
        }
        if read > self.remaining {
            return Err(TransportError::new(
                TransportErrorKind::Protocol,
                format!(
                    "the answer is longer than max_response_bytes ({})",
                    self.limit
                ),
            ));
        }
        self.remaining -= read;
        let line = String::from_utf8_lossy(&buf);
        Ok(Some(line.trim_end_matches(['\n', '\r']).to_string()))
    }

    /// The first line that is not blank, left unread (blank lines before
    /// it are skipped); `None` for an empty body.
    fn peek_line(&mut self) -> Result<Option<&str>, TransportError> {
        if self.peeked.is_none() {
            loop {
                match self.next_line()? {
                    None => break,
                    Some(line) if line.trim().is_empty() => continue,
                    Some(line) => {
                        self.peeked = Some(line);
                        break;
                    }
                }
            }
        }
        Ok(self.peeked.as_deref())
    }

    /// Whether the body starts like server-sent events (or is empty, which
    /// the stream reader reports as a stream that ended early).
    pub(crate) fn starts_like_sse(&mut self) -> Result<bool, TransportError> {
        Ok(match self.peek_line()? {
            None => true,
            Some(line) => is_sse_line(line),
        })
    }

    /// Whether the body starts like JSON lines (or is empty).
    pub(crate) fn starts_like_json_lines(&mut self) -> Result<bool, TransportError> {
        Ok(match self.peek_line()? {
            None => true,
            Some(line) => line.trim_start().starts_with('{'),
        })
    }

    /// The whole remaining body, each line ending in `\n` (`\r\n` becomes
    /// `\n`).
    pub(crate) fn read_to_end(&mut self) -> Result<String, TransportError> {
        let mut out = String::new();
        while let Some(line) = self.next_line()? {
            out.push_str(&line);
            out.push('\n');
        }
        Ok(out)
    }

    /// The whole remaining body as one JSON answer (see [`parse_answer`]).
    pub(crate) fn read_json(&mut self, url: &str) -> Result<Value, TransportError> {
        let text = self.read_to_end()?;
        parse_answer(url, &text)
    }

    /// Up to `max` bytes of what is left, for an error message: a read
    /// error or the deadline ends it early with what was read.
    fn read_snippet(&mut self, max: usize) -> String {
        let mut out = self.peeked.take().unwrap_or_default();
        let mut buf = Vec::new();
        let _ = (&mut self.inner)
            .take(max.saturating_sub(out.len()) as u64)
            .read_to_end(&mut buf);
        out.push_str(&String::from_utf8_lossy(&buf));
        out
    }
}

/// Whether `line` is a server-sent-events line: a comment or a known
/// field.
fn is_sse_line(line: &str) -> bool {
    line.starts_with(':')
        || ["data", "event", "id", "retry", "error"]
            .iter()
            .any(|field| {
                line.strip_prefix(field)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
            })
}

/// Parses a whole (non-streamed) answer: an HTML page, an error object
/// or text that is not JSON become errors that quote the server.
pub(crate) fn parse_answer(url: &str, text: &str) -> Result<Value, TransportError> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err(TransportError::new(
            TransportErrorKind::Protocol,
            format!("{url} answered with an empty body"),
        ));
    }
    if trimmed.starts_with('<') {
        return Err(html_error(url, text));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        TransportError::new(
            TransportErrorKind::Protocol,
            format!(
                "{url} answered with malformed JSON ({e}); the answer begins: {}",
                quote(trimmed)
            ),
        )
    })?;
    match server_error(&value) {
        Some(err) => Err(err.at(url)),
        None => Ok(value),
    }
}

/// The error a server reported inside a successful answer, in the shapes
/// of the three APIs: Ollama `{"error": "text"}`, OpenAI
/// `{"error": {"message", "type", "code"}}`, Anthropic
/// `{"type": "error", "error": {"type", "message"}}`. Retried only when
/// the server says it is overloaded, rate-limited or failing inside.
pub(crate) fn server_error(value: &Value) -> Option<TransportError> {
    let error = value.get("error").filter(|e| !e.is_null())?;
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let (kind, message) = match error {
        Value::Object(fields) => (
            fields.get("type").or_else(|| fields.get("code")).map(text),
            fields
                .get("message")
                .map(text)
                .unwrap_or_else(|| error.to_string()),
        ),
        other => (None, text(other)),
    };
    let said = match &kind {
        Some(kind) => format!("{kind}: {message}"),
        None => message,
    };
    let lower = said.to_ascii_lowercase();
    let transient = [
        "overloaded",
        "rate_limit",
        "rate limit",
        "server_error",
        "api_error",
        "busy",
        "unavailable",
    ]
    .iter()
    .any(|w| lower.contains(w));
    let mut err = TransportError::new(
        TransportErrorKind::Protocol,
        format!("the server answered with an error: {}", quote(&said)),
    );
    err.retryable = transient;
    Some(err)
}

impl TransportError {
    /// Prefixes the message with the URL that answered.
    fn at(mut self, url: &str) -> Self {
        self.message = format!("{url}: {}", self.message);
        self
    }
}

/// An HTML page where an API answer was expected: quotes its title (or
/// its first words). Not retried: the endpoint is most likely not a model
/// server's API (a web UI, a proxy's login page).
fn html_error(url: &str, page: &str) -> TransportError {
    let lower = page.to_ascii_lowercase();
    let title = lower
        .find("<title")
        .and_then(|start| Some(start + lower[start..].find('>')? + 1))
        .and_then(|from| Some(&page[from..from + lower[from..].find("</title")?]));
    let words = match title {
        Some(t) if !t.trim().is_empty() => t.to_string(),
        _ => strip_tags(page),
    };
    TransportError::new(
        TransportErrorKind::Protocol,
        format!(
            "{url} answered with an HTML page, not an API answer: {} (is the endpoint the \
             model server's API?)",
            quote(&words)
        ),
    )
    .fatal()
}

fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Server-provided text fit for an error message: whitespace collapsed,
/// control characters shown escaped, at most [`QUOTE_CHARS`] characters.
fn quote(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let collapsed = koas_kernel_api::terminal::escape_controls(&joined).into_owned();
    let mut out: String = collapsed.chars().take(QUOTE_CHARS).collect();
    if collapsed.chars().count() > QUOTE_CHARS {
        out.push('…');
    }
    out
}

/// The body of an answer that stops with [`Cancelled`] once its flag is
/// set; checked before every read, so a streamed answer stops at the next
/// token.
struct CancelReader {
    inner: Box<dyn Read + Send + Sync>,
    flag: CancelFlag,
}

/// The I/O error a [`CancelReader`] ends with.
#[derive(Debug)]
struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cancelled (interrupted)")
    }
}

impl std::error::Error for Cancelled {}

impl Read for CancelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.flag.is_set() {
            return Err(std::io::Error::other(Cancelled));
        }
        self.inner.read(buf)
    }
}

fn map_io_error(e: std::io::Error) -> TransportError {
    use std::io::ErrorKind;
    if e.get_ref().is_some_and(|inner| inner.is::<Cancelled>()) {
        return TransportError::new(
            TransportErrorKind::Io,
            "the attempt was cancelled (interrupted) while reading the answer",
        )
        .fatal();
    }
    match e.kind() {
        ErrorKind::TimedOut | ErrorKind::WouldBlock => TransportError::new(
            TransportErrorKind::Timeout,
            format!("the attempt's deadline passed while reading the answer ({e})"),
        ),
        _ => TransportError::new(
            TransportErrorKind::Io,
            format!("reading the answer failed: {e}"),
        ),
    }
}

fn map_ureq_error(url: &str, e: ureq::Error) -> TransportError {
    match e {
        ureq::Error::Status(status, response) => {
            let mut body = String::new();
            let _ = response.into_reader().take(4096).read_to_string(&mut body);
            let mut err = TransportError::http(status, &body);
            err.message = format!("{url}: {}", err.message);
            err
        }
        ureq::Error::Transport(t) => {
            let io = std::error::Error::source(&t).and_then(|s| s.downcast_ref::<std::io::Error>());
            if let Some(refusal) = io
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<Refusal>())
            {
                return TransportError::new(
                    TransportErrorKind::Sovereignty,
                    format!("{url}: {refusal}"),
                );
            }
            let text = t.to_string();
            let timed_out = io.is_some_and(|io| {
                matches!(
                    io.kind(),
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
                )
            }) || text.contains("timed out");
            let kind = if timed_out {
                TransportErrorKind::Timeout
            } else {
                match t.kind() {
                    ureq::ErrorKind::ConnectionFailed | ureq::ErrorKind::Dns => {
                        TransportErrorKind::Connect
                    }
                    ureq::ErrorKind::InvalidUrl
                    | ureq::ErrorKind::UnknownScheme
                    | ureq::ErrorKind::InsecureRequestHttpsOnly
                    | ureq::ErrorKind::InvalidProxyUrl => TransportErrorKind::Request,
                    ureq::ErrorKind::BadStatus | ureq::ErrorKind::BadHeader => {
                        TransportErrorKind::Protocol
                    }
                    _ => TransportErrorKind::Io,
                }
            };
            TransportError::new(kind, text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Backend, OpenAiBackend};
    use crate::config::BackendKind;
    use crate::sovereignty::Lookup;
    use std::io::{BufRead, Write};
    use std::net::{SocketAddr, TcpListener};
    use std::sync::Arc;

    #[test]
    fn an_html_page_is_reported_with_its_title_and_not_retried() {
        let page = "<!DOCTYPE html>\n<html><head><title>Sign in \u{2013} Corp Proxy</title></head><body>x</body></html>";
        let err = parse_answer("http://127.0.0.1:1/v1/models", page).unwrap_err();
        assert!(
            err.message.contains("Sign in \u{2013} Corp Proxy"),
            "{}",
            err.message
        );
        assert!(err.message.contains("HTML page"), "{}", err.message);
        assert!(!err.retryable);
        let untitled = html_error("u", "<html><body><h1>502 Bad   Gateway</h1></body></html>");
        assert!(
            untitled.message.contains("502 Bad Gateway"),
            "{}",
            untitled.message
        );
    }

    #[test]
    fn error_objects_of_the_three_apis_carry_the_servers_message() {
        for (body, said, retried) in [
            (
                r#"{"error": "model 'qwen' not found, try pulling it first"}"#,
                "model 'qwen' not found",
                false,
            ),
            (
                r#"{"error": {"message": "The model `m` does not exist", "type": "invalid_request_error", "code": "model_not_found"}}"#,
                "invalid_request_error: The model `m` does not exist",
                false,
            ),
            (
                r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
                "overloaded_error: Overloaded",
                true,
            ),
            (
                r#"{"error": "server busy, please try again"}"#,
                "server busy",
                true,
            ),
        ] {
            let err = parse_answer("http://127.0.0.1:1/x", body).unwrap_err();
            assert!(err.message.contains(said), "{}", err.message);
            assert!(
                err.message.starts_with("http://127.0.0.1:1/x: "),
                "{}",
                err.message
            );
            assert_eq!(err.retryable, retried, "{body}");
        }
        assert!(server_error(&serde_json::json!({"error": null, "ok": 1})).is_none());
    }

    #[test]
    fn text_that_is_not_json_is_quoted_escaped_and_long_text_cut() {
        let err = parse_answer("u", "upstream\u{7} exploded\n\n").unwrap_err();
        assert!(
            err.message
                .contains("the answer begins: upstream\\u{7} exploded"),
            "{}",
            err.message
        );
        assert!(err.retryable, "malformed wire data is retried");
        let long = "z".repeat(5000);
        let q = quote(&long);
        assert_eq!(q.chars().count(), QUOTE_CHARS + 1);
        assert!(parse_answer("u", " \n")
            .unwrap_err()
            .message
            .contains("empty body"));
    }

    #[test]
    fn sse_lines_are_told_from_other_text() {
        for line in [
            "data: {}",
            "data:{}",
            "event: ping",
            ": keep-alive",
            "id: 7",
            "retry: 10",
            "data",
            "error: {\"code\": 500}",
        ] {
            assert!(is_sse_line(line), "{line}");
        }
        for line in [
            "{\"error\": 1}",
            "<html>",
            "database: x",
            "Internal Server Error",
        ] {
            assert!(!is_sse_line(line), "{line}");
        }
    }

    /// One loopback connection answered with a model list; returns the
    /// port and a handle giving the request line received.
    fn one_shot_models_server() -> (u16, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let handle = std::thread::spawn(move || {
            let (stream, _) = listener.accept().expect("accept");
            let mut reader = std::io::BufReader::new(stream.try_clone().expect("clone"));
            let mut first = String::new();
            reader.read_line(&mut first).expect("request line");
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok() && line != "\r\n" && !line.is_empty() {
                line.clear();
            }
            let body = r#"{"data": [{"id": "m"}]}"#;
            let mut out = stream;
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            first
        });
        (port, handle)
    }

    fn client_with_dns(endpoint: &str, local_hosts: &[&str], answer: SocketAddr) -> HttpClient {
        let mut config = LlmConfig::new(BackendKind::Openai, endpoint, "m");
        config.local_hosts = local_hosts.iter().map(|h| h.to_string()).collect();
        config.timeout_secs = 5.0;
        let lookup: Lookup = Arc::new(move |_: &str| Ok(vec![answer]));
        HttpClient::with_resolver(&config, CheckedResolver::with_lookup(&config, lookup))
    }

    #[test]
    fn the_connection_goes_to_the_addresses_that_were_checked() {
        // `gpu-box.lan` exists in no DNS: the request can only arrive if the
        // connection used the resolver's checked answer.
        let (port, server) = one_shot_models_server();
        let endpoint = format!("http://gpu-box.lan:{port}");
        let client = client_with_dns(&endpoint, &["gpu-box.lan"], ([127, 0, 0, 1], port).into());
        let models = OpenAiBackend::new(client, None)
            .list_models()
            .expect("listed");
        assert_eq!(models, vec!["m"]);
        assert!(server.join().expect("server").starts_with("GET /v1/models"));
    }

    #[test]
    fn a_listed_name_resolving_to_a_public_address_is_never_contacted() {
        // 203.0.113.7 is a documentation address: the refusal comes before
        // any connection attempt, so nothing is sent anywhere.
        let client = client_with_dns(
            "http://gpu-box.lan:11434",
            &["gpu-box.lan"],
            ([203, 0, 113, 7], 11434).into(),
        );
        let err = OpenAiBackend::new(client, None).list_models().unwrap_err();
        assert_eq!(err.kind, TransportErrorKind::Sovereignty, "{}", err.message);
        assert!(!err.retryable);
        assert!(err.message.contains("203.0.113.7"), "{}", err.message);
        assert!(err.message.contains("gpu-box.lan"), "{}", err.message);
    }

    #[test]
    fn a_refused_resolution_stops_the_service_with_sovereignty() {
        let client = client_with_dns(
            "http://gpu-box.lan:11434",
            &["gpu-box.lan"],
            ([203, 0, 113, 7], 11434).into(),
        );
        let mut config = LlmConfig::new(BackendKind::Openai, "http://gpu-box.lan:11434", "m");
        config.local_hosts = vec!["gpu-box.lan".into()];
        let dir = tempfile::tempdir().expect("tempdir");
        let service = crate::LlmService::builder(config, dir.path())
            .backend(Arc::new(OpenAiBackend::new(client, None)))
            .cache_dir(None)
            .build()
            .expect("service");
        let request = koas_kernel_api::LlmRequest::new("edit", "p");
        let err = service.complete(&request).unwrap_err();
        assert_eq!(err.code(), "SOVEREIGNTY", "{err}");
        assert!(err.to_string().contains("203.0.113.7"), "{err}");
        assert_eq!(
            service.session_metadata().abort_reason,
            Some(crate::AbortReason::Sovereignty)
        );
        assert_eq!(
            service.complete(&request).unwrap_err().code(),
            "SESSION_ABORTED"
        );
    }
}
