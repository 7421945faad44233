//! `koas check` output formats: compiler-style text, JSON, SARIF 2.1.0 and
//! GitHub workflow annotations.

mod github;
mod human;
mod json;
mod sarif;

pub use github::render_github;
pub use human::{render_human, summary_line};
pub use json::render_json;
pub use sarif::{path_to_uri, render_sarif, SARIF_SCHEMA_URI};

use koas_review_schema::findings::Finding;

/// The findings of one checked file.
#[derive(Debug, Clone, Copy)]
pub struct FileFindings<'a> {
    /// The file's path as given on the command line.
    pub path: &'a str,
    /// Its findings, sorted by line, then kind.
    pub findings: &'a [Finding],
    /// The findings its suppression comments silence: not reported, but
    /// listed as suppressed where the format can say so (SARIF).
    pub suppressed: &'a [Finding],
}
