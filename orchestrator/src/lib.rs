//! # koas — the kernel runtime
//!
//! This library is the engine behind the `koas` command. It
//!
//! 1. **discovers** kernel plugins on disk ([`discovery`], [`loader`]),
//!    reporting every library it cannot use instead of stopping at the
//!    first;
//! 2. reads a **pipeline file** ([`pipeline`]) and checks it against the
//!    kernels' declared specs ([`prepare`]);
//! 3. builds the **DAG** from the artifacts kernels declare ([`dag`]);
//! 4. **runs** it ([`engine`]): independent kernels in parallel, each output
//!    stored by content hash in the workspace's **cache** ([`cache`]) so a
//!    kernel whose inputs, config and binary did not change is never run
//!    twice, and a failing kernel only stops what depends on it;
//! 5. records what happened in `run.json` ([`run_record`]).
//!
//! Kernels are pure: the host does every side effect on their behalf
//! ([`host`], [`workspace`]). They run in worker processes ([`worker`]),
//! so a kernel that crashes, hangs or floods the host is a failed kernel,
//! within the limits of [`limits`].
//!
//! Programs embed the runtime through [`embed`] (host options, discovery
//! with warnings, the LLM service, prompts, Ctrl-C, exit statuses); the
//! `koas` binary's generic commands are one such host.

#![deny(missing_docs)]

pub mod cache;
pub mod dag;
pub mod describe_cache;
pub mod described;
pub mod discovery;
pub mod embed;
pub mod engine;
pub mod fsio;
pub mod graph;
pub mod guarded_read;
pub mod host;
pub mod limits;
pub mod llm_host;
pub mod loader;
pub mod lock;
pub mod memory;
pub mod pipeline;
pub mod prepare;
pub mod progress;
pub mod run_record;
pub mod worker;
pub mod workspace;
