//! # koas-md — shared Markdown analysis for the koas reviewer kernels
//!
//! The Stage 1 reviewer kernels (`md_inventory`, `md_structure`,
//! `md_protected_regions`, `md_chunk`) are thin plugin wrappers over this
//! library, so that their logic can be tested and benchmarked in-process.
//!
//! The Stage 1 artifacts it computes are the serde types of
//! `koas_review_schema::stage1`.

#![deny(missing_docs)]

pub mod tokens;

pub use tokens::estimate_tokens;
pub mod front_matter;
pub mod line_index;
pub mod scan;
pub mod shape;

pub use line_index::LineIndex;
pub mod error;
pub mod inventory;
pub mod numbering;
pub mod slug;
pub mod structure;

pub use error::MdError;
pub mod chunk;
pub mod plugin;
pub mod protected;
pub mod stage1;
pub mod summary;
