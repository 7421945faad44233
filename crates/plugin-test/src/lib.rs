//! # koas-plugin-test — run a built kernel plugin as koas runs it
//!
//! [`PluginHarness`] finds a built plugin library with koas's discovery
//! and runs one of its kernels with koas's engine in a worker process of
//! the `koas` executable ([`locate_koas`]: `$KOAS_BIN`, else `koas` on
//! `PATH`), so a test sees what `koas run` would: the outputs, summary and
//! warnings, or the error as `run.json` records it (a panic, a crashed
//! worker, a missing output). It knows nothing of what the kernel reads:
//! inputs are named JSON values ([`Artifacts`]); `koas-kernel-test` gives
//! the reviewer's Markdown fixtures on top of it.

#![deny(missing_docs)]

mod error;
mod harness;

pub use error::PluginError;
pub use harness::{
    built_plugin, locate_koas, PluginHarness, PluginOutput, PluginRun, KOAS_BIN_ENV,
};

/// Artifacts by name, as a kernel receives them.
pub type Artifacts = std::collections::BTreeMap<String, serde_json::Value>;
