//! The runtime as a library, for the programs that embed it (*hosts*):
//! the `koas` command line, the command families built on the runtime, an
//! MCP server.
//!
//! A host says how kernels run ([`HostOptions`]: quiet or verbose,
//! isolation, limits, where kernels are searched), finds them
//! ([`discover_and_warn`]), sets up the model ([`llm_service`], from a
//! resolved [`koas_llm::LlmConfig`]; the settings a person overrides are
//! [`LlmOverrides`]), finds the prompt templates ([`prompts_folder`]),
//! watches Ctrl-C ([`interrupt`]) and tells how a command ended
//! ([`ExitStatus`]). It then prepares and runs pipelines with
//! [`crate::prepare`] and [`crate::engine`].
//!
//! Nothing here parses a command line: the generic commands
//! ([`crate::cli`]) use this module like any other host, so no host goes
//! through another host's command module.

mod edge;
mod flags;
pub mod interrupt;
mod run;

pub use edge::{is_broken_pipe, print_error};
pub use flags::LlmFlags;
pub use run::{run, Control, HostLlm, RunFailure, RunInputs};

/// The folder the runtime caches plugin descriptions in (a host that
/// confines file access must allow it).
pub use crate::describe_cache::cache_dir;
pub use crate::llm_host::LlmOverrides;
/// What a host sees of a run while it goes: progress lines and their
/// observer.
pub use crate::progress::{Observer, Progress};
/// The one sanitiser for text from elsewhere on its way to a terminal or
/// a log (hosts that do not link the kernel API use it from here).
pub use koas_kernel_api::terminal::{escape_controls, escape_controls_keep_lines};

use crate::discovery::{
    discover_isolated, executable_search_paths, split_path_list, Discovery, SearchOrigin,
    SearchPath,
};
use crate::host::SharedLlm;
use crate::limits::{Isolation, LimitOverrides, Limits};
use crate::llm_host::ServiceHandler;
use crate::pipeline::Pipeline;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// Why a host could not set a run up.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The LLM service could not be built from its configuration (the
    /// message names where it came from; its cause says what is wrong,
    /// as error chains print it).
    #[error("LLM service for {}", origin.display())]
    LlmService {
        /// Where the configuration came from (a pipeline or project file,
        /// or a flag), named in the message.
        origin: PathBuf,
        /// What the service refused (boxed: it is large, and every
        /// result of this module would carry its size).
        #[source]
        source: Box<koas_llm::LlmError>,
    },
    /// A prompts folder was named but does not exist.
    #[error("prompts folder {} does not exist", .0.display())]
    NoPromptsFolder(PathBuf),
    /// The `[llm]` settings could not be read or resolved.
    #[error(transparent)]
    LlmSetup(#[from] crate::llm_host::LlmSetupError),
    /// The pipeline's kernels could not be put together into a run.
    #[error(transparent)]
    Prepare(#[from] crate::prepare::PrepareError),
    /// A run of the pipeline could not start or be recorded.
    #[error("pipeline {}", pipeline.display())]
    Run {
        /// The pipeline, named in the message.
        pipeline: PathBuf,
        /// Why (boxed, as for [`HostError::LlmService`]).
        #[source]
        source: Box<crate::engine::RunError>,
    },
}

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

/// What a host says about every run it starts: where kernels are
/// searched, how much is shown, where kernels run and their limits. The
/// command line fills it from its global flags.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// Folders searched for kernels before `KOAS_KERNEL_PATH`
    /// (`--kernel-path`).
    pub kernel_paths: Vec<PathBuf>,
    /// Show kernels' informational log lines and summaries (`--verbose`).
    pub verbose: bool,
    /// Also show kernels' debug log lines (`-vv`).
    pub debug: bool,
    /// No progress lines and no discovery warnings (`--quiet`).
    pub quiet: bool,
    /// Run kernels inside this process instead of worker processes
    /// (`--in-process`).
    pub in_process: bool,
    /// Per-kernel limits over every pipeline's `[limits]`
    /// (`--kernel-timeout`, `--kernel-memory`, `--kernel-output`).
    pub limits: LimitOverrides,
}

impl HostOptions {
    /// Where kernels run: inside this process with
    /// [`HostOptions::in_process`] or a pipeline's `isolation = "none"`,
    /// else in worker processes of this executable.
    pub fn isolation(&self, pipeline: Option<&Pipeline>) -> Isolation {
        if self.in_process || pipeline.is_some_and(|p| p.in_process) {
            Isolation::InProcess
        } else {
            Isolation::current_exe()
        }
    }

    /// The limits of a run of `pipeline`: its `[limits]` with the host's
    /// over them.
    pub fn limits(&self, pipeline: &Pipeline) -> Limits {
        Limits {
            flags: self.limits,
            ..pipeline.limits.clone()
        }
    }

    /// The progress reporter of a command that runs `total` kernels:
    /// silent when quiet, else a bar or lines on stderr, with summaries
    /// when verbose and debug lines with `debug`.
    pub fn reporter(&self, total: u64) -> crate::progress::Reporter {
        if self.quiet {
            crate::progress::Reporter::quiet()
        } else {
            crate::progress::Reporter::for_stderr(total, self.verbose).with_debug(self.debug)
        }
    }

    /// Finds the kernels `pipeline` may use (see [`search_paths`]) as
    /// [`HostOptions::in_process`] and the pipeline's `isolation` say;
    /// the problems are returned, not printed (see [`discover_and_warn`]).
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

/// The search path in the documented order: the host's folders,
/// `KOAS_KERNEL_PATH`, the pipeline's `kernel_paths`, the executable's
/// folder.
pub fn search_paths(options: &HostOptions, pipeline_paths: &[PathBuf]) -> Vec<SearchPath> {
    let mut out: Vec<SearchPath> = options
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

/// Discovers the kernels of `pipeline` ([`HostOptions::discover`]) and
/// prints every problem to stderr (unless quiet).
pub fn discover_and_warn(options: &HostOptions, pipeline: &Pipeline) -> Discovery {
    let d = options.discover(Some(pipeline));
    if !options.quiet {
        for p in &d.problems {
            eprintln!("warning: {p}");
        }
    }
    // A renamed plugin is a likely mistake but not a problem of this run:
    // `koas kernels` always lists it, a run only with -v.
    if options.verbose {
        for i in &d.ignored {
            eprintln!("note: {i}");
        }
    }
    d
}

/// The LLM service of a run in `workspace` (its exchange log and response
/// cache live there), with progress on stderr unless `quiet`; `origin`
/// (the file or flag the configuration came from) names it in errors.
/// Ctrl-C ([`interrupt`]) cuts the model's answers in flight.
pub fn llm_service(
    config: koas_llm::LlmConfig,
    workspace: &Path,
    origin: &Path,
    quiet: bool,
) -> Result<SharedLlm, HostError> {
    let progress: Box<dyn koas_llm::ProgressSink> = if quiet {
        Box::new(koas_llm::NoProgress)
    } else {
        koas_llm::auto_progress()
    };
    let failed = |source| HostError::LlmService {
        origin: origin.to_path_buf(),
        source: Box::new(source),
    };
    let pool = shared_pool(&config).map_err(failed)?;
    // The process's Ctrl-C flag: an interrupt cuts the model's answers in
    // flight instead of waiting minutes for a slow local model.
    let service = koas_llm::LlmService::builder(config, workspace)
        .progress(progress)
        .cancel_flag(interrupt::install())
        .pool(pool)
        .build()
        .map_err(failed)?;
    Ok(Arc::new(ServiceHandler::new(service)))
}

/// The load of every endpoint pool in use in the process, for a progress
/// display over several runs.
pub fn pool_loads() -> Vec<koas_llm::EndpointLoad> {
    let Some(pools) = POOLS.get() else {
        return Vec::new();
    };
    let pools = pools.lock().unwrap_or_else(|p| p.into_inner());
    pools
        .values()
        .filter_map(Weak::upgrade)
        .flat_map(|pool| pool.load())
        .collect()
}

type Pools = Mutex<HashMap<String, Weak<koas_llm::EndpointPool>>>;

/// The live endpoint pools, by the configuration they were built from.
static POOLS: OnceLock<Pools> = OnceLock::new();

/// The endpoint pool of `config`, shared by every LLM service of the
/// process built from the same configuration while one of them lives: the
/// runs of one command (one per input file, or several passes over one
/// file, or an MCP server's concurrent calls) then share the servers'
/// slots instead of each taking them all.
pub fn shared_pool(
    config: &koas_llm::LlmConfig,
) -> Result<Arc<koas_llm::EndpointPool>, koas_llm::LlmError> {
    // The whole configuration is the key: a pool's backends are built
    // from it (timeouts, keys, context window), not only from its URLs.
    let key = serde_json::to_string(config)
        .map_err(|e| koas_llm::LlmError::Config(format!("cannot key the endpoint pool: {e}")))?;
    let mut pools = POOLS
        .get_or_init(Pools::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    pools.retain(|_, pool| pool.strong_count() > 0);
    if let Some(pool) = pools.get(&key).and_then(Weak::upgrade) {
        return Ok(pool);
    }
    let pool = Arc::new(koas_llm::EndpointPool::from_config(config)?);
    pools.insert(key, Arc::downgrade(&pool));
    if let Some(held) = HELD.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        held.push(pool.clone());
    }
    Ok(pool)
}

/// Pools kept alive while a [`PoolHold`] lives, though no service uses
/// them for a while.
static HELD: Mutex<Option<Vec<Arc<koas_llm::EndpointPool>>>> = Mutex::new(None);

/// Keeps every endpoint pool made while it lives, until it drops: the
/// runs of a command that come one after the other (the documents of a
/// folder) then share one pool, its endpoints' health and its counts,
/// instead of each building its own.
pub struct PoolHold(());

/// Holds the pools made from now until the returned guard drops.
pub fn hold_pools() -> PoolHold {
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    if held.is_none() {
        *held = Some(Vec::new());
    }
    PoolHold(())
}

impl Drop for PoolHold {
    fn drop(&mut self) {
        *HELD.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// The prompt templates of a run: `dir` when given (it must exist: a
/// misspelt folder would silently fall back to the built-in templates),
/// else the folder koas finds for itself.
pub fn prompts_folder(dir: Option<&Path>) -> Result<koas_llm::Prompts, HostError> {
    if let Some(dir) = dir {
        if !dir.is_dir() {
            return Err(HostError::NoPromptsFolder(dir.to_path_buf()));
        }
    }
    Ok(koas_llm::Prompts::locate(dir))
}

/// An error and its causes on one string, `separator` between them;
/// causes whose text the message already holds are left out (errors that
/// embed their source would otherwise be printed twice).
pub fn error_chain(err: &anyhow::Error, separator: &str) -> String {
    // A cause may quote a server, a plugin or a document: each is shown
    // with its control characters escaped (the separator is ours).
    let mut text = escape_controls_keep_lines(&err.to_string()).into_owned();
    for cause in err.chain().skip(1) {
        let cause = escape_controls_keep_lines(&cause.to_string()).into_owned();
        if !text.contains(&cause) {
            text.push_str(separator);
            text.push_str(&cause);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_prompts_folder_must_exist() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("nope");
        let err = prompts_folder(Some(&missing)).expect_err("missing folder");
        assert_eq!(
            err.to_string(),
            format!("prompts folder {} does not exist", missing.display())
        );
        assert!(prompts_folder(Some(dir.path())).is_ok());
    }

    #[test]
    fn exit_statuses_are_the_documented_codes() {
        let codes: Vec<u8> = [
            ExitStatus::Success,
            ExitStatus::Failure,
            ExitStatus::Error,
            ExitStatus::Interrupted,
        ]
        .map(ExitStatus::code)
        .to_vec();
        assert_eq!(codes, [0, 1, 2, 130]);
    }

    #[test]
    fn an_error_chain_leaves_out_causes_the_message_holds() {
        let err = anyhow::anyhow!("inner").context("outer: inner");
        assert_eq!(error_chain(&err, "; "), "outer: inner");
        let err = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_chain(&err, "; "), "outer; inner");
    }
}
