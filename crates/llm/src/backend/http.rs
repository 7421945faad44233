//! HTTP over ureq: one agent per service, a deadline on each attempt,
//! bounded bodies, and errors mapped to [`TransportError`].

use crate::config::LlmConfig;
use crate::error::{TransportError, TransportErrorKind};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::time::Duration;

/// The shared HTTP client of a backend.
#[derive(Clone)]
pub(crate) struct HttpClient {
    agent: ureq::Agent,
    timeout: Duration,
    max_bytes: usize,
    endpoint: String,
}

impl HttpClient {
    pub(crate) fn new(config: &LlmConfig) -> Self {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(config.connect_timeout())
            .max_idle_connections_per_host(config.max_in_flight.max(1))
            .build();
        HttpClient {
            agent,
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

    /// POSTs a JSON body; returns a line reader over the response body.
    /// The attempt's deadline covers connecting, sending and reading.
    pub(crate) fn post(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> Result<LineReader, TransportError> {
        let mut request = self
            .agent
            .post(url)
            .timeout(self.timeout)
            .set("content-type", "application/json");
        for (name, value) in headers {
            request = request.set(name, value);
        }
        let response = request
            .send_string(&body.to_string())
            .map_err(|e| map_ureq_error(url, e))?;
        Ok(LineReader::new(response.into_reader(), self.max_bytes))
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
        let mut reader = LineReader::new(response.into_reader(), self.max_bytes);
        let text = reader.read_to_end()?;
        serde_json::from_str(&text).map_err(|e| {
            TransportError::new(
                TransportErrorKind::Protocol,
                format!("{url} answered with malformed JSON: {e}"),
            )
        })
    }
}

/// Reads a response body line by line, within a byte limit, mapping I/O
/// failures (deadline included) to transport errors.
pub(crate) struct LineReader {
    inner: BufReader<Box<dyn Read + Send + Sync>>,
    remaining: usize,
    limit: usize,
}

impl LineReader {
    fn new(reader: Box<dyn Read + Send + Sync>, limit: usize) -> Self {
        LineReader {
            inner: BufReader::new(reader),
            remaining: limit,
            limit,
        }
    }

    /// The next line without its line ending; `None` at the end of the body.
    pub(crate) fn next_line(&mut self) -> Result<Option<String>, TransportError> {
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
}

fn map_io_error(e: std::io::Error) -> TransportError {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::TimedOut | ErrorKind::WouldBlock => TransportError::new(
            TransportErrorKind::Timeout,
            format!("the per-attempt deadline passed while reading the answer ({e})"),
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
            let text = t.to_string();
            let timed_out = std::error::Error::source(&t)
                .and_then(|s| s.downcast_ref::<std::io::Error>())
                .is_some_and(|io| {
                    matches!(
                        io.kind(),
                        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
                    )
                })
                || text.contains("timed out");
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
