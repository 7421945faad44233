//! The review as a library: typed requests in, typed outcomes and errors
//! out, nothing printed.
//!
//! A [`Session`] holds one document's review: where its workspace is, the
//! runtime's options and the run's control (Ctrl-C, cancellation). Each
//! operation takes a request and answers with an outcome or an
//! [`ApiError`]; the front ends — the command line (text and `--json`),
//! `koas mcp` and `koas lsp` — turn those into what their clients read,
//! and none of them builds another front end's arguments or reads another
//! front end's JSON to learn what happened.
//!
//! The operations: [`Session::review`], [`Session::refine`],
//! [`Session::revert`], [`Session::dismiss`], [`Session::show`],
//! [`Session::grep`], [`Session::status`], [`Session::report`], and
//! [`check()`] for a document without a workspace. What they tell while
//! they work goes to the session's one [`Sink`] ([`Session::told`]).

pub mod check;
mod entries;
mod grep;
mod refine;
mod report;
mod revert;
mod review;
mod session;
pub mod status;

pub use check::{check, CheckRequest, CheckedDoc};
pub use entries::{change_id, entry_id, Dismissed, Shown};
pub use grep::{Found, GrepRequest};
pub use refine::{RefineRequest, Refined};
pub use report::{HtmlPage, ReportRequest, Reported};
pub use revert::{RevertChanges, RevertRequest, Reverted};
pub use review::{ReviewCounts, ReviewRequest, Reviewed};
pub use session::{ApiError, Session, Sink, Told, Written};
pub use status::ReviewStatus;
