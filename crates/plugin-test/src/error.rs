//! Why a plugin could not be run.

use std::path::PathBuf;

/// Why [`crate::PluginHarness`] did not get a kernel's outputs. The
/// kernel's own failure ([`PluginError::Failed`]) carries the runtime's
/// message: the one `koas run` prints and records in `run.json`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// No `koas` executable to start worker processes of.
    #[error("no koas executable to run kernels in worker processes: {0}")]
    NoKoas(String),
    /// The plugin library does not exist.
    #[error("plugin library {} does not exist{hint}", path.display())]
    NoLibrary {
        /// The path given.
        path: PathBuf,
        /// How to build it, when known.
        hint: String,
    },
    /// Discovery skipped the library or one of its kernels (a wrong ABI,
    /// no entry symbol, a failing describe), as `koas kernels` reports it.
    #[error("{0}")]
    Discovery(String),
    /// The library exports no kernel of that name.
    #[error("{} exports no kernel `{name}` (it exports: {})", library.display(), if available.is_empty() { "none".to_owned() } else { available.join(", ") })]
    NoKernel {
        /// The name asked for.
        name: String,
        /// The library.
        library: PathBuf,
        /// The kernels it exports.
        available: Vec<String>,
    },
    /// The config given is refused by the kernel's defaults.
    #[error("kernel `{kernel}`: config {message}")]
    Config {
        /// The kernel.
        kernel: String,
        /// Which key, and why (as `koas run` says it).
        message: String,
    },
    /// A required input was not given.
    #[error("kernel `{kernel}` requires input `{artifact}`, which was not given (given: {})", if given.is_empty() { "none".to_owned() } else { given.join(", ") })]
    MissingInput {
        /// The kernel.
        kernel: String,
        /// The artifact it requires.
        artifact: String,
        /// The inputs given.
        given: Vec<String>,
    },
    /// The run could not start (a workspace, an input's name).
    #[error("cannot run kernel `{kernel}`: {message}")]
    Run {
        /// The kernel.
        kernel: String,
        /// Why.
        message: String,
    },
    /// The kernel failed: returned an error, panicked, crashed its worker,
    /// returned a malformed or incomplete answer.
    #[error("kernel `{kernel}` ({}) failed: {message}", library.display())]
    Failed {
        /// The kernel.
        kernel: String,
        /// Its library.
        library: PathBuf,
        /// The runtime's message, as `run.json` records it.
        message: String,
    },
}
