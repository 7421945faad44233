//! # koas-kernel-api — write a koas kernel in safe Rust
//!
//! A *kernel* is a small, separately compiled plugin that the `koas` runtime
//! discovers on disk, places in a DAG from the artifacts it declares, runs
//! (in parallel with its independent siblings) and caches by content hash.
//! This crate is the **only** dependency a kernel author needs.
//!
//! ## Why a C ABI with a JSON payload
//!
//! Rust has no stable ABI: two crates compiled by different compiler
//! versions cannot safely exchange `Vec`, `String` or trait objects. koas
//! therefore crosses the plugin boundary with a handful of `#[repr(C)]`
//! structs (see [`abi`]) carrying UTF-8 JSON bytes. A plugin built with one
//! toolchain keeps working with a `koas` built with another, as long as both
//! speak the same [`abi::ABI_VERSION`]. All the `unsafe` code of that
//! boundary lives in this crate (and in the host's loader); a kernel author
//! implements one safe trait and calls one macro.
//!
//! ## Why kernels are pure
//!
//! A kernel receives its resolved config and its input artifacts (JSON
//! values) and returns output artifacts. It does not read files, open
//! sockets or keep state between runs. That is what lets the host cache
//! every output by the hash of everything that can change it, skip work when
//! nothing changed, and replay a run. The few side effects a kernel may need
//! go through the [`Context`]: logging, progress, a cancellation check,
//! writing files *inside the run's workspace*, and asking the host to
//! complete an LLM prompt.
//!
//! ## A complete kernel
//!
//! ```
//! use koas_kernel_api::prelude::*;
//! use serde::Deserialize;
//!
//! /// Counts the words of a text document.
//! #[derive(Default)]
//! pub struct WordCount;
//!
//! #[derive(Deserialize)]
//! struct Config {
//!     min_len: usize,
//! }
//!
//! impl Kernel for WordCount {
//!     fn spec(&self) -> KernelSpec {
//!         KernelSpec::new("word_count", "1.0.0")
//!             .stage("S1")
//!             .description("Counts the words of the document")
//!             .input("doc")
//!             .output("word_count")
//!             .output_file("word_report", "stage1/word_count.json")
//!             .default_config(serde_json::json!({ "min_len": 1 }))
//!     }
//!
//!     fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
//!         let config: Config = config.parse()?;
//!         let doc = inputs.source_text("doc")?;
//!         ctx.info(&format!("counting words of {} bytes", doc.len()));
//!         let words = doc
//!             .split_whitespace()
//!             .filter(|w| w.chars().count() >= config.min_len)
//!             .count();
//!         Ok(KernelOutput::new()
//!             .artifact("word_count", words)
//!             .artifact("word_report", serde_json::json!({ "words": words }))
//!             .summary(format!("{words} words")))
//!     }
//! }
//!
//! koas_kernel_api::export_kernel!(WordCount);
//!
//! // Test it without building or loading a plugin:
//! # fn main() {
//! use koas_kernel_api::testing::TestHarness;
//! let out = TestHarness::new()
//!     .source_text("doc", "one two three")
//!     .run(&WordCount)
//!     .expect("kernel succeeds");
//! assert_eq!(out.value("word_count"), 3);
//! # }
//! ```
//!
//! Build it as a `cdylib` whose library name starts with `koas_kernel_`
//! (for example a package named `koas-kernel-word-count`): the runtime only
//! loads files named like `libkoas_kernel_*.so`, `libkoas_kernel_*.dylib` or
//! `koas_kernel_*.dll`.
//!
//! ## What the ABI promises
//!
//! * The entry symbol is always [`abi::ENTRY_SYMBOL`] and the first field of
//!   the table it returns is always the ABI version, so a host can refuse a
//!   plugin of another version without touching anything else.
//! * Within one ABI version, fields are only ever appended to the JSON
//!   payloads; unknown fields are ignored on both sides.
//! * A panic inside a kernel never unwinds across the boundary: it becomes
//!   an error result with the panic message.
//! * Buffers are freed by the side that allocated them.

#![deny(missing_docs)]

pub mod abi;
mod canonical;
pub mod config;
mod context;
mod error;
#[doc(hidden)]
pub mod export;
pub mod findings;
pub mod hash;
mod inputs;
mod llm;
mod output;
pub mod protocol;
mod spec;
pub mod suggest;
pub mod terminal;
pub mod testing;

pub use context::{Context, Host, LlmStream, LogLevel, Ticket};
pub use error::{ErrorKind, KernelError};
pub use inputs::{Inputs, KernelConfig, PromptTemplate, SourceFile};
pub use llm::{LlmRequest, LlmResponse, NO_BACKEND};
pub use output::{ArtifactJson, KernelOutput, MAX_SUMMARY_CHARS};
pub use spec::{
    FindingKindSpec, InputSpec, KernelSpec, OutputSpec, LLM_INPUT, PREVIOUS_INPUT, PROMPTS_INPUT,
};

/// The result a kernel's [`Kernel::run`] returns.
pub type KernelResult = Result<KernelOutput, KernelError>;

/// Everything a kernel author usually needs, in one import.
pub mod prelude {
    pub use crate::findings::{FindingsOutput, KernelFinding, Severity};
    pub use crate::{
        Context, ErrorKind, Inputs, Kernel, KernelConfig, KernelError, KernelOutput, KernelResult,
        KernelSpec, LlmRequest, LlmResponse, LogLevel,
    };
}

/// A koas kernel: a declared contract ([`Kernel::spec`]) and a pure
/// computation ([`Kernel::run`]).
///
/// Implementations must be `Send + Sync`: the host may run several kernels
/// of one library at the same time on different threads.
pub trait Kernel: Send + Sync {
    /// Describes the kernel: its name, version, stage, the artifacts it
    /// reads and writes, whether it is deterministic or uses an LLM, and its
    /// default config.
    ///
    /// The host calls this once when it loads the plugin. It must be cheap
    /// and must always return the same value.
    fn spec(&self) -> KernelSpec;

    /// Computes the kernel's output artifacts from its resolved config and
    /// its input artifacts.
    ///
    /// `config` is the kernel's default config with the pipeline's values
    /// merged over it; the host has already checked that every key exists
    /// in the defaults and has the same JSON type. `inputs` holds one JSON
    /// value per available input artifact.
    ///
    /// Return every output artifact declared in [`Kernel::spec`]; the host
    /// reports a missing one as an error of the kernel.
    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult;
}
