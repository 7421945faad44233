//! # koas-review — the review API and its command line
//!
//! The commands a reviewer runs on a Markdown document, on top of the
//! generic runtime (`koas-orchestrator`) and the reviewer kernels:
//!
//! - `check`: Stage 1 + Stage 2 in-process, a linter for editors and CI;
//! - `review`, `revert`: the reviewer pipeline in passes over the review
//!   workspace, every change committed by the host under the lock;
//! - `report`, `show`, `grep`, `status`: views of a review workspace.
//!
//! The runtime knows nothing of these commands; the `koas` binary puts
//! them beside the runtime's generic ones.

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
