//! What the user sees while a pipeline runs: a progress bar on a terminal,
//! plain lines otherwise (CI logs, pipes).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use koas_kernel_api::terminal::{escape_controls, escape_controls_keep_lines};
use koas_kernel_api::LogLevel;
use std::collections::BTreeSet;
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

impl Progress<'_> {
    /// The step as one short line ("extract: 3/7", "extract: cached"),
    /// what a host forwards to its client as a progress message.
    pub fn message(&self) -> String {
        match self {
            Progress::Started { kernel } => format!("{kernel}: started"),
            Progress::Step {
                kernel,
                done,
                total,
            } => format!("{kernel}: {done}/{total}"),
            Progress::Finished { kernel, shown } => format!(
                "{kernel}: {}",
                match shown {
                    Shown::Ran => "done",
                    Shown::Cached => "cached",
                    Shown::Failed => "failed",
                    Shown::Skipped => "skipped",
                    Shown::Cancelled => "cancelled",
                }
            ),
        }
    }
}

/// Receives every [`Progress`] step of a run, from the kernel threads
/// (an embedding program, such as a protocol server, relays them).
pub type Observer = std::sync::Arc<dyn Fn(&Progress<'_>) + Send + Sync>;

/// Reports progress to stderr; shared by the kernel threads (lines are
/// written whole, never interleaved).
///
/// One reporter may serve several engine runs of one command (a host's
/// command may run its pipeline in passes): each kernel counts once on the
/// bar ([`Reporter::plan`]), and a kernel already reported is not reported
/// again when a later pass only takes it from the cache.
pub struct Reporter {
    mode: Mode,
    verbose: bool,
    debug: bool,
    lock: Mutex<()>,
    observer: Option<Observer>,
    /// Kernels counted in the bar's length.
    planned: Mutex<BTreeSet<String>>,
    /// Kernels already reported finished.
    finished: Mutex<BTreeSet<String>>,
    /// Kernels running now, shown on the bar.
    running: Mutex<Vec<String>>,
}

impl Reporter {
    /// A reporter that prints nothing (tests, `--quiet`).
    pub fn quiet() -> Reporter {
        Reporter::with_mode(Mode::Quiet, false)
    }

    fn with_mode(mode: Mode, verbose: bool) -> Reporter {
        Reporter {
            mode,
            verbose,
            debug: false,
            lock: Mutex::new(()),
            observer: None,
            planned: Mutex::new(BTreeSet::new()),
            finished: Mutex::new(BTreeSet::new()),
            running: Mutex::new(Vec::new()),
        }
    }

    /// Also shows kernels' debug log lines (`-vv`).
    pub fn with_debug(mut self, debug: bool) -> Reporter {
        self.debug = debug;
        self
    }

    /// Adds the kernels of a coming run to the bar's length; kernels
    /// already planned by an earlier run of the same command count once.
    pub fn plan<'a>(&self, kernels: impl IntoIterator<Item = &'a String>) {
        let Ok(mut planned) = self.planned.lock() else {
            return;
        };
        let new = kernels
            .into_iter()
            .filter(|k| planned.insert((*k).clone()))
            .count();
        if let Mode::Bar(bar) = &self.mode {
            bar.inc_length(new as u64);
        }
    }

    /// A progress bar when stderr is a terminal, plain lines otherwise.
    pub fn for_stderr(total: u64, verbose: bool) -> Reporter {
        let mode = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            // The kernel names go on a line of their own under the bar,
            // whole: a name cut at the terminal's edge says nothing.
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} kernels\n  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(120));
            Mode::Bar(bar)
        } else {
            Mode::Plain
        };
        Reporter::with_mode(mode, verbose)
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

    /// Shows the running kernels on the bar.
    fn show_running(&self, bar: &ProgressBar) {
        if let Ok(running) = self.running.lock() {
            bar.set_message(if running.is_empty() {
                String::new()
            } else {
                format!("running {}", running.join(", "))
            });
        }
    }

    fn line(&self, text: &str) {
        // Every line may carry a name or a message from elsewhere (a
        // kernel's name, a server's error): the last guard before the
        // terminal.
        let text = escape_controls_keep_lines(text);
        let text = text.as_ref();
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
            if let Ok(mut running) = self.running.lock() {
                running.push(kernel.to_owned());
            }
            self.show_running(bar);
        } else if self.verbose {
            self.line(&format!("koas: {kernel}: started"));
        }
    }

    /// A kernel finished (or was skipped). Its summary (`detail`) is shown
    /// with `--verbose`, its error always.
    pub fn kernel_finished(&self, kernel: &str, shown: Shown, millis: f64, detail: &str) {
        self.observe(Progress::Finished { kernel, shown });
        if let Mode::Bar(bar) = &self.mode {
            if let Ok(mut running) = self.running.lock() {
                running.retain(|k| k != kernel);
            }
            self.show_running(bar);
        }
        let first = self
            .finished
            .lock()
            .map(|mut f| f.insert(kernel.to_owned()))
            .unwrap_or(true);
        if !first && !matches!(shown, Shown::Failed | Shown::Cancelled) {
            // Reported by an earlier pass of the same command (a later
            // pass may run it again on another input, e.g. to describe
            // an edited version of it); only a failure is news.
            return;
        }
        // Why a kernel failed or did not run is for everyone; what a
        // kernel that ran found (its summary) is a detail for -v.
        let detail = match shown {
            Shown::Failed | Shown::Skipped | Shown::Cancelled => detail,
            Shown::Ran | Shown::Cached if self.verbose => detail,
            Shown::Ran | Shown::Cached => "",
        };
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
            // A plugin wrote the summary: shown, never obeyed by the terminal.
            format!(" — {}", escape_controls(detail))
        };
        self.line(&format!("koas: {kernel}: {what}{detail}"));
        if let Mode::Bar(bar) = &self.mode {
            if first {
                bar.inc(1);
            }
        }
    }

    /// A kernel logged a line.
    pub fn kernel_log(&self, kernel: &str, level: LogLevel, message: &str) {
        if level >= LogLevel::Warn
            || (self.verbose && level >= LogLevel::Info)
            || (self.debug && level >= LogLevel::Debug)
        {
            // A plugin wrote the message: one line, escapes shown.
            self.line(&format!(
                "koas: {kernel}: {}: {}",
                level_name(level),
                escape_controls(message)
            ));
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
