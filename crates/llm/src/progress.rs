//! Progress of LLM requests: an indicatif bar on a terminal (requests
//! done/total, ETA, tokens), plain log lines otherwise.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Receives the service's progress events. Implementations must be cheap
/// and thread-safe.
pub trait ProgressSink: Send + Sync {
    /// A request was submitted (before any wait for a slot).
    fn request_started(&self);
    /// A request finished; `tokens` it spent (0 for cache/replay hits).
    fn request_finished(&self, tokens: u64, ok: bool);
    /// A notable event (retry, budget, abort), as one line.
    fn note(&self, line: &str);
}

/// A sink that discards every event (quiet runs, tests).
#[derive(Debug, Default)]
pub struct NoProgress;

impl ProgressSink for NoProgress {
    fn request_started(&self) {}
    fn request_finished(&self, _: u64, _: bool) {}
    fn note(&self, _: &str) {}
}

/// Counters shared by the sinks.
#[derive(Debug)]
struct Counters {
    started: AtomicU64,
    done: AtomicU64,
    failed: AtomicU64,
    tokens: AtomicU64,
    since: Instant,
}

impl Counters {
    fn new() -> Self {
        Counters {
            started: AtomicU64::new(0),
            done: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            tokens: AtomicU64::new(0),
            since: Instant::now(),
        }
    }

    fn finish(&self, tokens: u64, ok: bool) -> (u64, u64, u64) {
        let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        if !ok {
            self.failed.fetch_add(1, Ordering::SeqCst);
        }
        let tokens = self.tokens.fetch_add(tokens, Ordering::SeqCst) + tokens;
        (done, self.started.load(Ordering::SeqCst), tokens)
    }

    /// Seconds left, from the mean time per finished request so far.
    fn eta_secs(&self, done: u64, total: u64) -> u64 {
        if done == 0 || total <= done {
            return 0;
        }
        let per = self.since.elapsed().as_secs_f64() / done as f64;
        (per * (total - done) as f64).round() as u64
    }
}

/// Writes plain lines to a writer (stderr by default) as requests finish:
/// `llm: 12/40 requests done (1 failed), 34512 tokens, eta 2m10s`, the
/// first one at once, then at most one every [`LogLinesProgress::INTERVAL`]
/// (a log file gets a heartbeat, not a line per request).
pub struct LogLinesProgress {
    counters: Counters,
    out: Mutex<Box<dyn Write + Send>>,
    interval: std::time::Duration,
    /// When the last count line was written; `None` before the first.
    last: Mutex<Option<std::time::Instant>>,
}

impl LogLinesProgress {
    /// The least time between two count lines.
    pub const INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

    /// A sink writing its lines to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Self::with_interval(out, Self::INTERVAL)
    }

    /// A sink writing a count line at most every `interval`.
    pub fn with_interval(out: Box<dyn Write + Send>, interval: std::time::Duration) -> Self {
        LogLinesProgress {
            counters: Counters::new(),
            out: Mutex::new(out),
            interval,
            last: Mutex::new(None),
        }
    }

    /// True when a count line is due now (and notes it as written).
    fn due(&self) -> bool {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::time::Instant::now();
        if last.is_some_and(|at| now.duration_since(at) < self.interval) {
            return false;
        }
        *last = Some(now);
        true
    }

    fn line(&self, text: &str) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

/// Formats a number of seconds for people: `1h02m03s`, `2m10s` or `7s`.
pub fn format_eta(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    if h > 0 {
        format!("{h}h{m:02}m{s:02}s")
    } else if m > 0 {
        format!("{m}m{s:02}s")
    } else {
        format!("{s}s")
    }
}

impl ProgressSink for LogLinesProgress {
    fn request_started(&self) {
        self.counters.started.fetch_add(1, Ordering::SeqCst);
    }

    fn request_finished(&self, tokens: u64, ok: bool) {
        let (done, total, tokens) = self.counters.finish(tokens, ok);
        if !self.due() {
            return;
        }
        let failed = self.counters.failed.load(Ordering::SeqCst);
        let eta = format_eta(self.counters.eta_secs(done, total));
        self.line(&format!(
            "llm: {done}/{total} requests done ({failed} failed), {tokens} tokens, eta {eta}"
        ));
    }

    fn note(&self, line: &str) {
        // A note may quote a server: shown, never obeyed by the terminal.
        self.line(&format!(
            "llm: {}",
            koas_kernel_api::terminal::escape_controls(line)
        ));
    }
}

/// An indicatif progress bar: position = requests done, length = requests
/// submitted so far, ETA, and tokens in the message.
pub struct TerminalProgress {
    counters: Counters,
    bar: indicatif::ProgressBar,
}

impl TerminalProgress {
    /// A bar drawn on stderr.
    pub fn new() -> Self {
        let bar = indicatif::ProgressBar::new(0);
        let style = indicatif::ProgressStyle::with_template(
            "llm {bar:30.cyan/blue} {pos}/{len} requests  eta {eta}  {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        TerminalProgress {
            counters: Counters::new(),
            bar,
        }
    }
}

impl Default for TerminalProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl ProgressSink for TerminalProgress {
    fn request_started(&self) {
        self.counters.started.fetch_add(1, Ordering::SeqCst);
        self.bar.inc_length(1);
    }

    fn request_finished(&self, tokens: u64, ok: bool) {
        let (_, _, tokens) = self.counters.finish(tokens, ok);
        self.bar.inc(1);
        self.bar.set_message(format!("{tokens} tokens"));
    }

    fn note(&self, line: &str) {
        self.bar.println(format!(
            "llm: {}",
            koas_kernel_api::terminal::escape_controls(line)
        ));
    }
}

/// A bar when stderr is a terminal, plain lines on stderr otherwise.
pub fn auto_progress() -> Box<dyn ProgressSink> {
    if std::io::stderr().is_terminal() {
        Box::new(TerminalProgress::new())
    } else {
        Box::new(LogLinesProgress::new(Box::new(std::io::stderr())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn log_lines_are_a_heartbeat_not_a_line_per_request() {
        let buf = Shared::default();
        let p = LogLinesProgress::new(Box::new(buf.clone()));
        for _ in 0..40 {
            p.request_started();
        }
        for _ in 0..40 {
            p.request_finished(3, true);
        }
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "one line within the interval: {lines:?}");
        assert!(
            lines[0].starts_with("llm: 1/40 requests done (0 failed), 3 tokens, eta "),
            "the first line at once: {lines:?}"
        );
    }

    #[test]
    fn log_lines_count_requests_and_tokens() {
        let buf = Shared::default();
        let p = LogLinesProgress::with_interval(Box::new(buf.clone()), std::time::Duration::ZERO);
        p.request_started();
        p.request_started();
        p.request_finished(10, true);
        p.request_finished(5, false);
        p.note("retrying");
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("llm: 1/2 requests done (0 failed), 10 tokens, eta "));
        assert_eq!(
            lines[1],
            "llm: 2/2 requests done (1 failed), 15 tokens, eta 0s"
        );
        assert_eq!(lines[2], "llm: retrying");
    }

    #[test]
    fn eta_formats() {
        assert_eq!(format_eta(7), "7s");
        assert_eq!(format_eta(130), "2m10s");
        assert_eq!(format_eta(3723), "1h02m03s");
    }
}
