//! What the user sees while a pipeline runs: a progress bar on a terminal,
//! plain lines otherwise (CI logs, pipes).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use koas_kernel_api::LogLevel;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

/// The lowercase name of a log level.
pub fn level_name(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Debug => "debug",
        LogLevel::Info => "info",
        LogLevel::Warn => "warn",
        LogLevel::Error => "error",
    }
}

/// How a kernel ended, for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// Executed and succeeded; the line shows its duration.
    Ran,
    /// Taken from the cache.
    Cached,
    /// Returned an error or panicked; the line shows the error.
    Failed,
    /// Skipped because an upstream kernel failed.
    Skipped,
    /// Stopped by cancellation.
    Cancelled,
}

enum Mode {
    Quiet,
    Plain,
    Bar(ProgressBar),
}

/// One step of a run, as an [`Observer`] sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress<'a> {
    /// A kernel started executing.
    Started {
        /// The kernel.
        kernel: &'a str,
    },
    /// A kernel reported `done` of `total` steps.
    Step {
        /// The kernel.
        kernel: &'a str,
        /// Steps done.
        done: u64,
        /// Steps in all.
        total: u64,
    },
    /// A kernel finished (ran, was cached, failed, was skipped or
    /// cancelled).
    Finished {
        /// The kernel.
        kernel: &'a str,
        /// How it ended.
        shown: Shown,
    },
}

/// Receives every [`Progress`] step of a run, from the kernel threads
/// (an embedding program, such as a protocol server, relays them).
pub type Observer = std::sync::Arc<dyn Fn(&Progress<'_>) + Send + Sync>;

/// Reports progress to stderr; shared by the kernel threads (lines are
/// written whole, never interleaved).
pub struct Reporter {
    mode: Mode,
    verbose: bool,
    lock: Mutex<()>,
    observer: Option<Observer>,
}

impl Reporter {
    /// A reporter that prints nothing (tests, `--quiet`).
    pub fn quiet() -> Reporter {
        Reporter {
            mode: Mode::Quiet,
            verbose: false,
            lock: Mutex::new(()),
            observer: None,
        }
    }

    /// A progress bar when stderr is a terminal, plain lines otherwise.
    pub fn for_stderr(total: u64, verbose: bool) -> Reporter {
        let mode = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} kernels {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(120));
            Mode::Bar(bar)
        } else {
            Mode::Plain
        };
        Reporter {
            mode,
            verbose,
            lock: Mutex::new(()),
            observer: None,
        }
    }

    /// The same reporter, also telling `observer` every step.
    pub fn with_observer(mut self, observer: Observer) -> Reporter {
        self.observer = Some(observer);
        self
    }

    fn observe(&self, step: Progress<'_>) {
        if let Some(observer) = &self.observer {
            observer(&step);
        }
    }

    fn line(&self, text: &str) {
        match &self.mode {
            Mode::Quiet => {}
            Mode::Plain => {
                let _guard = self.lock.lock();
                let _ = writeln!(std::io::stderr(), "{text}");
            }
            Mode::Bar(bar) => bar.println(text),
        }
    }

    /// A kernel started executing: shown on the bar, or as a line with
    /// `--verbose`.
    pub fn kernel_started(&self, kernel: &str) {
        self.observe(Progress::Started { kernel });
        if let Mode::Bar(bar) = &self.mode {
            bar.set_message(format!("running {kernel}"));
        } else if self.verbose {
            self.line(&format!("koas: {kernel}: started"));
        }
    }

    /// A kernel finished (or was skipped).
    pub fn kernel_finished(&self, kernel: &str, shown: Shown, millis: f64, detail: &str) {
        self.observe(Progress::Finished { kernel, shown });
        let what = match shown {
            Shown::Ran => format!("ok ({millis:.1} ms)"),
            Shown::Cached => "cached".to_string(),
            Shown::Failed => "FAILED".to_string(),
            Shown::Skipped => "skipped".to_string(),
            Shown::Cancelled => "cancelled".to_string(),
        };
        let detail = if detail.is_empty() {
            String::new()
        } else {
            format!(" — {detail}")
        };
        self.line(&format!("koas: {kernel}: {what}{detail}"));
        if let Mode::Bar(bar) = &self.mode {
            bar.inc(1);
        }
    }

    /// A kernel logged a line.
    pub fn kernel_log(&self, kernel: &str, level: LogLevel, message: &str) {
        if level >= LogLevel::Warn || (self.verbose && level >= LogLevel::Info) {
            self.line(&format!("koas: {kernel}: {}: {message}", level_name(level)));
        }
    }

    /// A kernel reported `done` of `total` steps: shown on the bar, or as a
    /// line with `--verbose`.
    pub fn kernel_progress(&self, kernel: &str, done: u64, total: u64) {
        self.observe(Progress::Step {
            kernel,
            done,
            total,
        });
        match &self.mode {
            Mode::Bar(bar) => bar.set_message(format!("{kernel} {done}/{total}")),
            Mode::Plain if self.verbose => self.line(&format!("koas: {kernel}: {done}/{total}")),
            _ => {}
        }
    }

    /// A message from the runtime itself.
    pub fn note(&self, message: &str) {
        self.line(&format!("koas: {message}"));
    }

    /// Removes the progress bar, leaving the lines printed above it; does
    /// nothing without a bar.
    pub fn finish(&self) {
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}
