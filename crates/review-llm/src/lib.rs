//! # koas-review-llm — the reviewer's LLM edge, pure
//!
//! What the two LLM kernels of the reviewer (`md_pyramid`, `md_edit_plan`)
//! compute around their model calls, without I/O, so it can be tested
//! with scripted answers:
//!
//! - [`pyramid`]: the document summary at up to four levels, built bottom
//!   up, each node reused when what it is made from did not change;
//! - [`glossary`]: the terms a document defines, found without a model;
//! - [`context`]: what a reviewer of one chunk is shown, in priority order,
//!   within a token budget;
//! - [`lang`]: the document's language (French or English);
//! - [`prompt`]: rendering the prompt templates the host hands a kernel;
//! - [`ladder`]: the edit-op format ([`ladder::RawEditOp`]) and the
//!   six-level extraction ladder that reads it from whatever format a
//!   model chose;
//! - [`edit_plan`]: the edit planner: chunk by chunk, a model's proposals
//!   read, placed on the real lines, filtered and given IDs;
//! - [`joint`]: the pyramid and the edit plan driven together over one
//!   model stream, each chunk asked as soon as the summaries it reads are
//!   made.
//!
//! Model calls go through [`pyramid::Summarizer`] and
//! [`edit_plan::EditModel`], which the kernels
//! implement with the host's LLM service and tests with a script.

#![deny(missing_docs)]

pub mod context;
pub mod edit_plan;
pub mod glossary;
pub mod joint;
pub mod ladder;
pub use koas_edit::lang;
pub mod prompt;
pub mod pyramid;

pub use koas_md::estimate_tokens;
