//! # koas-md — shared Markdown analysis for the koas reviewer kernels
//!
//! The Stage 1 reviewer kernels (`md_inventory`, `md_structure`,
//! `md_protected_regions`, `md_chunk`) are thin plugin wrappers over this
//! library, so that their logic can be tested and benchmarked in-process.
//!
//! [`model`] holds the serde types of every Stage 1 artifact: it is the
//! contract the Stage 2 and Stage 3 kernels deserialize.

#![deny(missing_docs)]

pub mod model;
pub mod tokens;

pub use tokens::estimate_tokens;
pub mod front_matter;
pub mod line_index;
pub mod scan;

pub use line_index::LineIndex;
pub mod error;
pub mod inventory;
pub mod numbering;
pub mod slug;
pub mod structure;

pub use error::MdError;
pub mod chunk;
pub mod protected;
pub mod stage1;
pub mod summary;
