//! Test helpers shared by koas crates (a dev-dependency only).
//!
//! - [`corpus`]: the shared corpus in `../shared` beside the repository
//!   checkout (`corpus/real`, `corpus/planted`, `seeds`). Tests that read
//!   it must also pass on a fresh clone without it: the helpers return
//!   `None` after printing a clear `SKIPPED:` line, and the test returns
//!   early.
//! - [`build`]: the one place that builds what end-to-end tests run: the
//!   `koas` binary with the reviewer plugins next to it, and standalone
//!   plugin projects such as the test plugins of `plugins/`.
//! - [`workload`]: deterministic pseudo-random edit ops and the document
//!   and ops the review benchmarks time.
//! - [`git`]: checking patches with `git apply`.
//! - [`model`]: a scripted OpenAI-compatible model on loopback for tests
//!   of LLM kernels.
//! - [`careless`]: what a careless model (harmful edits labelled `typo`)
//!   and a careful one (true typo fixes) answer to a review prompt.
//!
//! This crate depends on no koas crate: they dev-depend on it, and a
//! dependency back would build a second copy of their types.

#![deny(missing_docs)]

pub mod build;
pub mod careless;
pub mod corpus;
pub mod git;
pub mod model;
pub mod workload;

pub use build::{
    build_standalone, cargo_command, koas_bin, target_dir, test_plugin, test_plugin_folder,
    test_plugins_dir,
};
pub use corpus::{
    find_shared, repo_root, shared_dir, shared_documents, shared_files, shared_location,
    shared_seed_000,
};
pub use git::{git_apply, git_apply_check, git_available};
pub use model::{model_phase_ms, request_span, ModelAnswer, ModelRequest, ScriptedModel};
pub use workload::{bench_document, bench_ops, generated_ops, Rng};
