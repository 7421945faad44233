//! # koas-review — the review API and its command line
//!
//! What a reviewer does to a Markdown document, on top of the generic
//! runtime (`koas-orchestrator`) and the reviewer kernels, as a library
//! ([`api`]: a `Session` with typed requests and outcomes) and as the
//! command line over it ([`commands`]):
//!
//! - `check`: Stage 1 + Stage 2 in-process, a linter for editors and CI;
//! - `review`, `refine`, `revert`, `dismiss`: the reviewer pipeline in
//!   passes over the review workspace, every change committed by the host
//!   under the lock;
//! - `report`, `show`, `grep`, `status`: views of a review workspace.
//!
//! The runtime knows nothing of these; the `koas` binary puts the command
//! line beside the runtime's generic commands, and `koas mcp` and `koas
//! lsp` are the API's other front ends.

pub mod api;
pub mod changed;
pub mod commands;
mod common;
mod html_report;
pub mod input;
mod kernel_findings;
pub mod links;
mod outputs;
mod passes;

pub use common::{first_line, workspace_of, LlmFlags, Reply, ReviewTarget, WorkspaceArgs};
pub use passes::Control;
pub mod project;
