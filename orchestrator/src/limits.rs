//! How kernels are isolated and what they may use: the `isolation` key and
//! the `[limits]` table of a pipeline file, the `--in-process`,
//! `--kernel-timeout`, `--kernel-memory` and `--kernel-output` flags, and
//! the fixed caps on what a kernel may hand the host.
//!
//! ```toml
//! isolation = "process"     # default; "none" runs kernels inside koas (--in-process)
//! [limits]                  # every kernel of the pipeline
//! timeout = 600             # seconds of the kernel's own work (time spent in host calls does not count)
//! memory = 8192             # MB of address space of its worker process
//! output = 1024             # MB: the most a kernel may return (its answer, serialized)
//! [limits.split]            # one kernel: any of the three keys
//! timeout = 60
//! ```
//!
//! A flag overrides the file for every kernel; `0` means no limit. The
//! timeout and the memory cap need a worker process (they do nothing with
//! `--in-process`); the output cap and the caps below hold in both modes.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Default `timeout`, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;
/// Default `memory`, in MB (RLIMIT_AS of the worker process).
pub const DEFAULT_MEMORY_MB: u64 = 8192;
/// Default `output`, in MB.
pub const DEFAULT_OUTPUT_MB: u64 = 1024;
/// The most warnings kept per kernel run; the rest are counted in one
/// last warning.
pub const MAX_WARNINGS: usize = 100;
/// The longest warning kept, in characters.
pub const MAX_WARNING_CHARS: usize = 2000;
/// The longest log line kept or printed, in characters.
pub const MAX_LOG_LINE_CHARS: usize = 2000;
/// The most log lines printed per kernel run; the rest are counted.
pub const MAX_PRINTED_LOG_LINES: usize = 1000;
/// The longest error message kept, in characters.
pub const MAX_ERROR_CHARS: usize = 8000;
/// How long a kernel may take to stop once the run is cancelled before
/// its worker is killed.
pub const CANCEL_GRACE: Duration = Duration::from_secs(3);
/// How long a plugin library may take to load and describe its kernels
/// in a worker.
pub const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The pipeline keys of this module, with the pipeline's other keys.
pub const LIMIT_KEYS: &[&str] = &["timeout", "memory", "output"];

/// Where kernels run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Isolation {
    /// In worker processes: `program` started in its hidden worker mode
    /// (see [`crate::worker`]), the `koas` executable itself. The default.
    Process {
        /// The executable to start as a worker.
        program: PathBuf,
    },
    /// Inside this process, on its threads (`--in-process`,
    /// `isolation = "none"`): a crash of a kernel is a crash of koas.
    InProcess,
}

impl Isolation {
    /// Worker processes of the running executable, which must be one that
    /// serves [`crate::worker::WORKER_ARG`] (the `koas` binary does). A
    /// program embedding the runtime sets another [`Isolation`].
    pub fn current_exe() -> Isolation {
        match std::env::current_exe() {
            Ok(program) => Isolation::Process { program },
            // Without a path to itself koas cannot start workers.
            Err(_) => Isolation::InProcess,
        }
    }

    /// `"process"` or `"none"`, as in the pipeline file and run.json.
    pub fn name(&self) -> &'static str {
        match self {
            Isolation::Process { .. } => "process",
            Isolation::InProcess => "none",
        }
    }
}

/// Limits of one kernel run; `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelLimits {
    /// Seconds of the kernel's own work (host calls excluded).
    pub timeout_secs: Option<u64>,
    /// MB of address space of the worker process.
    pub memory_mb: Option<u64>,
    /// MB of output: the kernel's whole answer, serialized.
    pub output_mb: Option<u64>,
}

impl Default for KernelLimits {
    fn default() -> Self {
        KernelLimits {
            timeout_secs: Some(DEFAULT_TIMEOUT_SECS),
            memory_mb: Some(DEFAULT_MEMORY_MB),
            output_mb: Some(DEFAULT_OUTPUT_MB),
        }
    }
}

impl KernelLimits {
    /// The timeout as a duration.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_secs.map(Duration::from_secs)
    }

    /// The output cap in bytes (`usize::MAX` without one).
    pub fn output_bytes(&self) -> usize {
        self.output_mb
            .map(|mb| usize::try_from(mb.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX))
            .unwrap_or(usize::MAX)
    }
}

/// Values set by a `[limits]` table (or one kernel's) or by flags: each
/// `Some` replaces what is below it; `Some(0)` means no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitOverrides {
    /// `timeout`, seconds.
    pub timeout_secs: Option<u64>,
    /// `memory`, MB.
    pub memory_mb: Option<u64>,
    /// `output`, MB.
    pub output_mb: Option<u64>,
}

impl LimitOverrides {
    fn apply(&self, to: &mut KernelLimits) {
        let pick = |value: Option<u64>, slot: &mut Option<u64>| {
            if let Some(v) = value {
                *slot = (v != 0).then_some(v);
            }
        };
        pick(self.timeout_secs, &mut to.timeout_secs);
        pick(self.memory_mb, &mut to.memory_mb);
        pick(self.output_mb, &mut to.output_mb);
    }

    /// Reads `timeout`, `memory`, `output` from a table; anything else is
    /// an error naming the key (`where_` is the table, for the message).
    fn from_table(table: &serde_json::Map<String, Value>, where_: &str) -> Result<Self, String> {
        let mut out = LimitOverrides::default();
        for (key, value) in table {
            let slot = match key.as_str() {
                "timeout" => &mut out.timeout_secs,
                "memory" => &mut out.memory_mb,
                "output" => &mut out.output_mb,
                other => {
                    return Err(format!(
                        "unknown key `{where_}.{other}` (known keys: {}, or a table per kernel)",
                        LIMIT_KEYS.join(", ")
                    ))
                }
            };
            *slot = Some(value.as_u64().ok_or_else(|| {
                format!("key `{where_}.{key}`: expected a whole number >= 0 (0: no limit), found {value}")
            })?);
        }
        Ok(out)
    }
}

/// The limits of a run: defaults, the pipeline's `[limits]` table, its
/// `[limits.KERNEL]` tables, then the flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    /// `[limits]`: every kernel.
    pub pipeline: LimitOverrides,
    /// `[limits.KERNEL]`, by kernel name.
    pub kernels: BTreeMap<String, LimitOverrides>,
    /// `--kernel-timeout`, `--kernel-memory`, `--kernel-output`: every
    /// kernel, over the file.
    pub flags: LimitOverrides,
}

impl Limits {
    /// Parses a pipeline's `[limits]` table.
    pub fn from_value(value: &Value) -> Result<Limits, String> {
        let table = value
            .as_object()
            .ok_or_else(|| "key `limits`: expected a table".to_string())?;
        let mut scalars = serde_json::Map::new();
        let mut kernels = BTreeMap::new();
        for (key, value) in table {
            match value.as_object() {
                Some(kernel) => {
                    let where_ = format!("limits.{key}");
                    kernels.insert(key.clone(), LimitOverrides::from_table(kernel, &where_)?);
                }
                None => {
                    scalars.insert(key.clone(), value.clone());
                }
            }
        }
        Ok(Limits {
            pipeline: LimitOverrides::from_table(&scalars, "limits")?,
            kernels,
            flags: LimitOverrides::default(),
        })
    }

    /// The limits of the run as a whole (a worker describing plugins):
    /// the pipeline's `[limits]` and the flags, no kernel's table.
    pub fn general(&self) -> KernelLimits {
        let mut limits = KernelLimits::default();
        self.pipeline.apply(&mut limits);
        self.flags.apply(&mut limits);
        limits
    }

    /// The limits of one kernel's run.
    pub fn for_kernel(&self, kernel: &str) -> KernelLimits {
        let mut limits = KernelLimits::default();
        self.pipeline.apply(&mut limits);
        if let Some(k) = self.kernels.get(kernel) {
            k.apply(&mut limits);
        }
        self.flags.apply(&mut limits);
        limits
    }
}

/// Why an answer of `len` bytes is refused under an output cap of `max`
/// bytes (the same words in a worker and in-process).
pub fn output_limit_message(len: usize, max: usize) -> String {
    let mb = |b: usize| b as f64 / (1024.0 * 1024.0);
    format!(
        "returned {len} bytes ({:.1} MB) of output, over the limit of {:.0} MB (`output` in the pipeline's [limits], --kernel-output)",
        mb(len),
        mb(max)
    )
}

/// Cuts `text` to `max` characters, saying so at the end.
pub fn cut(text: String, max: usize, what: &str) -> String {
    if text.len() <= max || text.chars().count() <= max {
        return text;
    }
    let total = text.chars().count();
    let mut out: String = text.chars().take(max).collect();
    out.push_str(&format!(
        "… [{what} cut: {total} characters, the limit is {max}]"
    ));
    out
}

/// The warnings a kernel returned, capped: at most [`MAX_WARNINGS`], each
/// cut to [`MAX_WARNING_CHARS`], the dropped ones counted in a last one.
pub fn cap_warnings(mut warnings: Vec<String>) -> Vec<String> {
    let dropped = warnings.len().saturating_sub(MAX_WARNINGS);
    warnings.truncate(MAX_WARNINGS);
    let mut out: Vec<String> = warnings
        .into_iter()
        .map(|w| cut(w, MAX_WARNING_CHARS, "warning"))
        .collect();
    if dropped > 0 {
        out.push(format!(
            "{dropped} more warnings were dropped (a kernel run keeps at most {MAX_WARNINGS})"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flags_beat_kernel_tables_beat_the_pipeline_beat_defaults() {
        let mut limits = Limits::from_value(&json!({
            "timeout": 60, "memory": 0,
            "split": {"timeout": 5, "output": 2}
        }))
        .expect("valid");
        let split = limits.for_kernel("split");
        assert_eq!(split.timeout_secs, Some(5));
        assert_eq!(split.memory_mb, None, "0 is no limit");
        assert_eq!(split.output_bytes(), 2 * 1024 * 1024);
        let other = limits.for_kernel("other");
        assert_eq!(other.timeout_secs, Some(60));
        assert_eq!(other.output_mb, Some(DEFAULT_OUTPUT_MB));
        limits.flags.timeout_secs = Some(0);
        assert_eq!(limits.for_kernel("split").timeout_secs, None);
        assert_eq!(Limits::default().for_kernel("x"), KernelLimits::default());
    }

    #[test]
    fn bad_limit_tables_name_the_key() {
        let e = Limits::from_value(&json!({"timout": 3})).expect_err("unknown");
        assert!(e.contains("`limits.timout`"), "{e}");
        let e = Limits::from_value(&json!({"k": {"memory": "lots"}})).expect_err("type");
        assert!(e.contains("`limits.k.memory`"), "{e}");
        let e = Limits::from_value(&json!({"timeout": -1})).expect_err("negative");
        assert!(e.contains("whole number"), "{e}");
    }

    #[test]
    fn caps_say_what_they_cut() {
        assert_eq!(cut("short".into(), 10, "x"), "short");
        let long = cut("é".repeat(30), 10, "warning");
        assert!(long.starts_with(&"é".repeat(10)));
        assert!(long.contains("30 characters, the limit is 10"), "{long}");
        let many = cap_warnings((0..150).map(|i| i.to_string()).collect());
        assert_eq!(many.len(), MAX_WARNINGS + 1);
        assert!(many[MAX_WARNINGS].contains("50 more warnings"));
    }
}
