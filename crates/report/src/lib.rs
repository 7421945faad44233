//! # koas-report — the review report, rendered
//!
//! What a person reads of a review: the `REVIEW_<stem>.md` report, the
//! audit record with the run's metadata, the changes by section, the
//! checks on them and the findings ([`markdown`]), and the same review as
//! one self-contained HTML page with side-by-side diffs, callouts and
//! filters ([`html`]). Both read the ledger and the run's context (the
//! types of `koas-review-schema`, read through `koas-edit`'s queries);
//! neither touches the disk or the document.
//!
//! The kernel `md_review_report_assemble` and `koas report` are thin glue
//! over this crate.

#![deny(missing_docs)]

pub mod html;
pub mod markdown;
