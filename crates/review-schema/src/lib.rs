//! # koas-review-schema — the reviewer's artifacts
//!
//! Every artifact the reviewer kernels exchange, as serde types, and every
//! artifact name ([`names`]). The kernels, the edit engine, the review
//! workspace and the review commands all read and write these types and
//! nothing else, so an artifact's shape is defined once. A third-party
//! kernel that reads, say, `protected_spans` depends on this crate:
//!
//! ```
//! use koas_review_schema::names;
//! use koas_review_schema::stage1::ProtectedSpans;
//!
//! let json = serde_json::json!({
//!     "doc_hash": "sha256:00", "line_count": 3,
//!     "blocks": [{"kind": "code_fence", "line_start": 1, "line_end": 3,
//!                 "byte_start": 0, "byte_end": 12, "content_hash": "sha256:01",
//!                 "info": "rust"}],
//!     "inlines": []
//! });
//! let spans: ProtectedSpans = serde_json::from_value(json).unwrap();
//! assert_eq!(names::PROTECTED_SPANS, "protected_spans");
//! assert!(spans.overlaps_lines(2, 2));
//! ```
//!
//! | module | artifacts |
//! |--------|-----------|
//! | [`stage1`] | `file_stats`, `heading_tree`, `section_index`, `anchor_map`, `protected_spans`, `protected_summary`, `chunks` |
//! | [`findings`] | `issues`, `numbering_findings` |
//! | [`numbering`] | `renumber_ops` |
//! | [`fingerprint`] | `chunk_fingerprints` |
//! | [`pyramid`] | `pyramid`, `glossary` |
//! | [`edit_op`], [`change_id`] | edit ops (`ops`) and their IDs |
//! | [`edit_plan`] | `edit_plan`: the LLM planner's ops and per-chunk status |
//! | [`apply`], [`rejection`] | `apply_outcome`, apply log records |
//! | [`revert`] | `revert_outcome` |
//! | [`ledger`] | `ledger` entries |
//! | [`notes`] | `inline_notes` |
//! | [`review`] | `review_state`, `review_meta` |
//! | [`refine`] | `refine_verdicts`, `refine_plan`, `refine_routing`, `refine_ops`, `refine_verification`, `refine_state`, `refine_changes` |
//!
//! Types only ever grow: a field added later gets `#[serde(default)]` so
//! that artifacts written before still read.

#![deny(missing_docs)]

pub mod apply;
pub mod change_id;
pub mod edit_op;
pub mod edit_plan;
pub mod findings;
pub mod fingerprint;
pub mod ledger;
pub mod names;
pub mod notes;
pub mod numbering;
pub mod pyramid;
pub mod refine;
pub mod rejection;
pub mod revert;
pub mod review;
pub mod stage1;
