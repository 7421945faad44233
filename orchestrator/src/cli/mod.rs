//! The runtime's generic commands (`run`, `kernels`, `graph`, `cache`,
//! `replay`, `llm`) and what every command family shares: the global
//! flags, kernel discovery with warnings, the Ctrl-C flag and
//! [`ExitStatus`].
//!
//! Each command is a clap `Args` (or `Subcommand`) type and an `execute`
//! function; the `koas` binary assembles them with its host's own command
//! families into one command line.

pub mod cache;
pub mod graph;
pub mod interrupt;
pub mod kernels;
pub mod llm;
pub mod replay;
pub mod run;

use crate::discovery::{
    discover_isolated, executable_search_paths, split_path_list, Discovery, SearchOrigin,
    SearchPath,
};
use crate::limits::{Isolation, LimitOverrides, Limits};
use crate::pipeline::Pipeline;
use std::path::PathBuf;

/// How a command ended, as scripts see it: the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0: the command did what was asked.
    Success,
    /// 1: the command ran and its answer is "no": a kernel failed, a
    /// finding reached `--fail-on`, a revert or dismissal was refused, a
    /// replay or a calibration differed, `koas grep` matched nothing,
    /// `koas kernels` found no kernel.
    Failure,
    /// 2: usage, pipeline, config or I/O error; nothing was run.
    Error,
    /// 130: interrupted with Ctrl-C; finished work is kept.
    Interrupted,
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Error => 2,
            ExitStatus::Interrupted => 130,
        }
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(status: ExitStatus) -> Self {
        std::process::ExitCode::from(status.code())
    }
}

/// Flags that apply to every subcommand.
#[derive(Debug, Clone, Default)]
pub struct Global {
    /// `--kernel-path`: searched before `KOAS_KERNEL_PATH`.
    pub kernel_paths: Vec<PathBuf>,
    /// `--verbose`: show kernels' informational log lines and summaries.
    pub verbose: bool,
    /// `-vv`: also show kernels' debug log lines.
    pub debug: bool,
    /// `--quiet`: no progress lines.
    pub quiet: bool,
    /// `--in-process`: run kernels inside koas instead of worker
    /// processes.
    pub in_process: bool,
    /// `--kernel-timeout`, `--kernel-memory`, `--kernel-output`.
    pub limits: LimitOverrides,
}

impl Global {
    /// Where kernels run: inside koas with `--in-process` or a pipeline's
    /// `isolation = "none"`, else in worker processes of this executable.
    pub fn isolation(&self, pipeline: Option<&Pipeline>) -> Isolation {
        if self.in_process || pipeline.is_some_and(|p| p.in_process) {
            Isolation::InProcess
        } else {
            Isolation::current_exe()
        }
    }

    /// The limits of a run of `pipeline`: its `[limits]` with the flags
    /// over them.
    pub fn limits(&self, pipeline: &Pipeline) -> Limits {
        Limits {
            flags: self.limits,
            ..pipeline.limits.clone()
        }
    }

    /// The progress reporter of a command that runs `total` kernels:
    /// silent with `--quiet`, else a bar or lines on stderr, with
    /// summaries at `-v` and debug lines at `-vv`.
    pub fn reporter(&self, total: u64) -> crate::report::Reporter {
        if self.quiet {
            crate::report::Reporter::quiet()
        } else {
            crate::report::Reporter::for_stderr(total, self.verbose).with_debug(self.debug)
        }
    }

    /// Finds the kernels `pipeline` may use (see [`search_paths`]) as
    /// `--in-process` and the pipeline's `isolation` say, and prints every
    /// problem to stderr (unless `--quiet`).
    pub fn discover(&self, pipeline: Option<&Pipeline>) -> Discovery {
        let paths = pipeline.map(|p| p.kernel_paths.as_slice()).unwrap_or(&[]);
        let memory = match pipeline {
            Some(p) => self.limits(p).general().memory_mb,
            None => {
                Limits {
                    flags: self.limits,
                    ..Limits::default()
                }
                .general()
                .memory_mb
            }
        };
        discover_isolated(
            &search_paths(self, paths),
            &self.isolation(pipeline),
            memory,
        )
    }
}

/// The search path in the documented order: flags, `KOAS_KERNEL_PATH`,
/// the pipeline's `kernel_paths`, the executable's folder.
pub fn search_paths(global: &Global, pipeline_paths: &[PathBuf]) -> Vec<SearchPath> {
    let mut out: Vec<SearchPath> = global
        .kernel_paths
        .iter()
        .map(|p| SearchPath {
            path: p.clone(),
            origin: SearchOrigin::Flag,
        })
        .collect();
    if let Ok(v) = std::env::var("KOAS_KERNEL_PATH") {
        out.extend(split_path_list(&v).into_iter().map(|p| SearchPath {
            path: p,
            origin: SearchOrigin::Env,
        }));
    }
    out.extend(pipeline_paths.iter().map(|p| SearchPath {
        path: p.clone(),
        origin: SearchOrigin::Pipeline,
    }));
    out.extend(executable_search_paths());
    out
}

/// Discovers the kernels of `pipeline` ([`Global::discover`]) and prints
/// every problem to stderr.
pub fn discover_and_warn(global: &Global, pipeline: &Pipeline) -> Discovery {
    let d = global.discover(Some(pipeline));
    if !global.quiet {
        for p in &d.problems {
            eprintln!("warning: {p}");
        }
    }
    // A renamed plugin is a likely mistake but not a problem of this run:
    // `koas kernels` always lists it, a run only with -v.
    if global.verbose {
        for i in &d.ignored {
            eprintln!("note: {i}");
        }
    }
    d
}

/// Prints an error chain the way users read it: the error, then each
/// cause that its message does not already contain.
pub fn print_error(err: &anyhow::Error) {
    eprintln!("error: {}", error_chain(err, "\n  caused by: "));
}

/// An error and its causes on one string, `separator` between them;
/// causes whose text the message already holds are left out (errors that
/// embed their source would otherwise be printed twice).
pub fn error_chain(err: &anyhow::Error, separator: &str) -> String {
    let mut text = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(separator);
            text.push_str(&cause);
        }
    }
    text
}

/// True when `err` comes from writing to a closed stdout (`koas … | head`):
/// the reader has all it wanted, so the command ends normally.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `println!` that returns the write error instead of panicking, so that a
/// closed stdout ends the command cleanly (see [`is_broken_pipe`]).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        writeln!(::std::io::stdout().lock(), $($arg)*)
    }};
}

/// `print!` that returns the write error instead of panicking.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let mut stdout = ::std::io::stdout().lock();
        write!(stdout, $($arg)*).and_then(|()| stdout.flush())
    }};
}
