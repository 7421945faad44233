//! What to run and how, and what a run returns.

use crate::host::SharedLlm;
use crate::limits::{Isolation, Limits};
use crate::run_record::{CacheUse, KernelStatus, RunRecord};
use crate::workspace::WorkspaceError;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// An artifact the host provides (see [`RunOptions::provided`]).
#[derive(Debug, Clone)]
pub enum Provided {
    /// A JSON value.
    Value(Arc<Value>),
    /// The same as canonical JSON text, never held as a `Value`: the form
    /// for large host state, which a tree would hold at several times its
    /// size. Both forms of one value give the same artifact hash.
    Canonical(Arc<CanonicalJson>),
}

impl From<Value> for Provided {
    fn from(value: Value) -> Provided {
        Provided::Value(Arc::new(value))
    }
}

/// JSON text in the canonical form of [`koas_kernel_api::hash::canonical_bytes`]
/// (keys sorted, no whitespace), built without holding the whole value as
/// a tree.
#[derive(Debug)]
pub struct CanonicalJson(Box<serde_json::value::RawValue>);

impl CanonicalJson {
    /// The canonical JSON of one serializable value.
    pub fn of<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<CanonicalJson> {
        CanonicalJson::from_bytes(koas_kernel_api::hash::to_canonical_vec(value)?)
    }

    /// Any JSON text in canonical form: a plugin's output is hashed and
    /// stored as its value, however the plugin wrote it.
    pub fn canonicalize(text: &[u8]) -> serde_json::Result<CanonicalJson> {
        CanonicalJson::from_bytes(koas_kernel_api::hash::canonicalize(text)?)
    }

    /// Bytes the host stored in canonical form (a cache blob), as they are.
    pub(crate) fn stored(bytes: Vec<u8>) -> serde_json::Result<CanonicalJson> {
        CanonicalJson::from_bytes(bytes)
    }

    /// The canonical JSON of an array of `items`, each turned into a
    /// value, changed by `edit` (e.g. to leave a field out), written, and
    /// dropped before the next: only one item is ever a tree.
    pub fn array<T: serde::Serialize>(
        items: impl IntoIterator<Item = T>,
        edit: impl Fn(&mut Value),
    ) -> serde_json::Result<CanonicalJson> {
        let mut bytes = vec![b'['];
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                bytes.push(b',');
            }
            let mut value = serde_json::to_value(item)?;
            edit(&mut value);
            bytes.extend(koas_kernel_api::hash::canonical_bytes(&value));
        }
        bytes.push(b']');
        CanonicalJson::from_bytes(bytes)
    }

    /// The canonical JSON of an object whose members are already
    /// canonical (keys sorted here), so a large member (an array built by
    /// [`CanonicalJson::array`]) never becomes a tree.
    pub fn object(
        members: impl IntoIterator<Item = (String, CanonicalJson)>,
    ) -> serde_json::Result<CanonicalJson> {
        let mut members: Vec<(String, CanonicalJson)> = members.into_iter().collect();
        members.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut bytes = vec![b'{'];
        for (i, (key, value)) in members.iter().enumerate() {
            if i > 0 {
                bytes.push(b',');
            }
            serde_json::to_writer(&mut bytes, key)?;
            bytes.push(b':');
            bytes.extend_from_slice(value.bytes());
        }
        bytes.push(b'}');
        CanonicalJson::from_bytes(bytes)
    }

    fn from_bytes(bytes: Vec<u8>) -> serde_json::Result<CanonicalJson> {
        let text = String::from_utf8(bytes).map_err(serde::ser::Error::custom)?;
        serde_json::value::RawValue::from_string(text).map(CanonicalJson)
    }

    /// The canonical JSON text.
    pub fn bytes(&self) -> &[u8] {
        self.0.get().as_bytes()
    }

    /// The text as a raw JSON value, written as it is by `serde_json`.
    pub fn raw(&self) -> &serde_json::value::RawValue {
        &self.0
    }
}

/// Which part of the pipeline to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunTarget {
    /// Every kernel of the pipeline.
    All,
    /// The named kernel and everything it depends on.
    Until(String),
    /// Like `Until`, and the named kernel's outputs are returned.
    Kernel(String),
}

impl RunTarget {
    pub(crate) fn name(&self) -> Option<&str> {
        match self {
            RunTarget::All => None,
            RunTarget::Until(n) | RunTarget::Kernel(n) => Some(n),
        }
    }
}

/// How to run a prepared pipeline; [`RunOptions::new`] gives the defaults.
#[derive(Clone)]
pub struct RunOptions {
    /// Kernels running at once, at most.
    pub jobs: usize,
    /// `false` for `--no-cache`: every kernel executes (results are still
    /// stored, refreshing the cache).
    pub use_cache: bool,
    /// Which kernels to run (`--kernel`/`--until`, else all).
    pub target: RunTarget,
    /// Set to stop the run (Ctrl-C).
    pub cancel: Arc<AtomicBool>,
    /// The LLM service; `None` makes every kernel's LLM request fail with
    /// "no LLM backend configured".
    pub llm: Option<SharedLlm>,
    /// Model identity and sampling parameters, added to LLM kernels' keys.
    pub llm_identity: Option<Value>,
    /// The LLM config in effect, recorded in the run record for replay.
    pub llm_config: Option<Value>,
    /// Artifacts the host provides in memory, by name: state it computed
    /// or read itself (e.g. under a lock) rather than a file. They are
    /// given to every kernel that declares an input of that name, and are
    /// part of those kernels' cache keys like any input. Because the DAG
    /// is built before the run, kernels must declare such inputs optional.
    /// A provided artifact may not share its name with a pipeline
    /// `[inputs]` entry or a kernel output. Shared, not copied: a host's
    /// record of 100,000 entries is hundreds of megabytes as a `Value`,
    /// and tens as [`CanonicalJson`].
    pub provided: BTreeMap<String, Provided>,
    /// The contents of `[inputs]` entries the host already read, by
    /// artifact name: used instead of reading the file the entry names
    /// (a host that checked a document's size and kind reads it once).
    /// The entry's path still names the source: it is hashed and described
    /// exactly as if the engine had read these bytes from that path, so
    /// cache keys, the kernels' inputs and the run record are the same.
    /// A name the pipeline has no `[inputs]` entry for is refused.
    pub source_contents: BTreeMap<String, Arc<[u8]>>,
    /// The most bytes an `[inputs]` file the engine reads itself may hold
    /// (default [`crate::guarded_read::DEFAULT_MAX_READ_BYTES`]): a larger
    /// one, or one that is not a regular file (a FIFO, a device, a
    /// socket, a folder), is refused before the run starts.
    pub max_source_bytes: u64,
    /// Output artifacts whose declared files the engine must not write
    /// (neither after a run nor when restoring a cache hit): the host
    /// writes them itself, e.g. in a crash-safe order after committing its
    /// own records. Their values are still returned and cached.
    pub host_written: BTreeSet<String>,
    /// Where kernels run: worker processes (the default) or this process.
    pub isolation: Isolation,
    /// Time, memory and output limits per kernel.
    pub limits: Limits,
    /// The host's own workspace files, as `(path, what)` (a folder ends
    /// with `/`): besides the runtime's files
    /// ([`crate::workspace::RUNTIME_FILES`]), no kernel may write or
    /// declare them.
    pub reserved: Vec<(String, String)>,
    /// Where kernels' prompt templates are read from (`--prompts`, the
    /// pipeline's `prompts` key, else [`koas_llm::Prompts::locate`]).
    pub prompts: koas_llm::Prompts,
    /// The previous outputs to hand incremental kernels instead of those
    /// the workspace remembers (a replay hands the recorded ones): kernel
    /// → artifact → value.
    pub previous: Option<BTreeMap<String, BTreeMap<String, Value>>>,
    /// Previous outputs for incremental kernels that have none in this
    /// workspace (the workspace of an earlier version of the same
    /// document): kernel → artifact → value.
    pub previous_fallback: BTreeMap<String, BTreeMap<String, Value>>,
}

impl RunOptions {
    /// Default options: all kernels, cache on, no LLM, kernels in worker
    /// processes of this executable ([`Isolation::current_exe`]) with the
    /// default limits.
    pub fn new(jobs: usize) -> RunOptions {
        RunOptions {
            jobs: jobs.max(1),
            use_cache: true,
            target: RunTarget::All,
            cancel: Arc::new(AtomicBool::new(false)),
            llm: None,
            llm_identity: None,
            llm_config: None,
            provided: BTreeMap::new(),
            source_contents: BTreeMap::new(),
            max_source_bytes: crate::guarded_read::DEFAULT_MAX_READ_BYTES,
            host_written: BTreeSet::new(),
            isolation: Isolation::current_exe(),
            limits: Limits::default(),
            reserved: Vec::new(),
            prompts: koas_llm::Prompts::locate(None),
            previous: None,
            previous_fallback: BTreeMap::new(),
        }
    }
}

/// A run that could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// `--kernel`/`--until` names a kernel that is not in the pipeline.
    #[error("kernel `{0}` is not in the pipeline (its kernels: {1})")]
    UnknownTarget(String, String),
    /// A source file cannot be read.
    #[error("input `{name}`: cannot read {path}: {message}")]
    Input {
        /// The artifact name of the `[inputs]` entry.
        name: String,
        /// The file the entry names, as resolved.
        path: PathBuf,
        /// The operating system's error, or why the file cannot be described.
        message: String,
    },
    /// The host gave the contents of a source the pipeline does not have.
    #[error("the host gave the contents of input `{0}`, but the pipeline has no [inputs] entry of that name")]
    UnknownSource(String),
    /// The workspace cannot be created or written.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// The thread pool cannot be built.
    #[error("cannot start worker threads: {0}")]
    Threads(String),
    /// A kernel declares a workspace path its host keeps for itself.
    #[error("{0}")]
    Reserved(String),
    /// A provided artifact has the name of a source or a kernel output.
    #[error("artifact `{name}` is provided by the host but is also {other}")]
    ProvidedConflict {
        /// The name of the provided artifact.
        name: String,
        /// Its other producer, in words (``an output of kernel `x` ``, or the
        /// pipeline's `[inputs]`).
        other: String,
    },
    /// A source differs from the one the workspace was made from, and a
    /// write-once file of it is already there.
    #[error(transparent)]
    Sources(#[from] Box<super::SourceConflict>),
}

/// The outputs of the kernel asked for with [`RunTarget::Kernel`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct TargetOutput {
    /// The kernel's name, as given to [`RunTarget::Kernel`].
    pub kernel: String,
    /// Its version, from its spec.
    pub version: String,
    /// How it ended; `skipped` also when it never got to run.
    pub status: KernelStatus,
    /// Whether its outputs came from the cache.
    pub cache: CacheUse,
    /// The one-line summary it returned; empty unless it succeeded.
    pub summary: String,
    /// The warnings it returned with its outputs.
    pub warnings: Vec<String>,
    /// Its error if it failed, or why it was skipped.
    pub error: Option<String>,
    /// Its output artifacts by name; empty unless it succeeded.
    pub outputs: BTreeMap<String, Value>,
}

/// What a run that got to schedule kernels produced, failed kernels
/// included (a failure is in the record, not an `Err`).
#[derive(Debug)]
pub struct RunOutcome {
    /// The run record (also written to `run.json`).
    pub record: RunRecord,
    /// The target kernel's outputs, for [`RunTarget::Kernel`].
    pub target_output: Option<TargetOutput>,
}
