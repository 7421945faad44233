//! The pyramid: a summary of the document at up to four levels, so that
//! a model reviewing one chunk knows what the rest of the document says.
//!
//! [`plan`] cuts the document into nodes, [`build`] asks for the
//! summaries bottom up (reusing every one whose input did not change),
//! [`render_markdown`] writes the human-readable `pyramid.md`.

mod build;
mod clean;
pub mod host;
mod plan;

pub use build::{
    build, summary_cap, BuildError, BuildOptions, Building, Built, RequestKind, Summarizer,
    SummaryError, SummaryRequest, Template, Templates,
};
pub use clean::{clean_summary, first_sentences};
pub use plan::{plan, PartSource, PlanError, PlanNode, PlanOptions, Source, MAX_LEVELS};

use koas_review_schema::pyramid::{Pyramid, PyramidStatus};

/// `pyramid.md`: the summaries as an outline a person reads, fallbacks
/// marked.
pub fn render_markdown(pyramid: &Pyramid) -> String {
    let mut out = String::from("# Document pyramid\n\n");
    if pyramid.status == PyramidStatus::Skipped {
        out.push_str(&format!(
            "Not built: {}.\n",
            pyramid.skipped_reason.as_deref().unwrap_or("skipped")
        ));
        return out;
    }
    let s = &pyramid.stats;
    out.push_str(&format!(
        "{} levels, language `{}`, model `{}`: {} summaries ({} asked of the model, {} reused, {} fallbacks).\n\n",
        pyramid.levels, pyramid.language, pyramid.model, s.summaries, s.requested, s.reused, s.fallbacks
    ));
    let mut ordered: Vec<&koas_review_schema::pyramid::PyramidNode> =
        pyramid.nodes.iter().collect();
    // Outline order: the abstract, then sections in document order, each
    // under its parent.
    ordered.sort_by(|a, b| {
        (a.level != 0)
            .cmp(&(b.level != 0))
            .then(a.line_start.cmp(&b.line_start))
            .then(a.level.cmp(&b.level))
    });
    for node in ordered {
        let hashes = "#".repeat(usize::from(node.level) + 2);
        let title = if node.heading.is_empty() {
            if node.level == 0 {
                "Abstract".to_owned()
            } else {
                "(before the first heading)".to_owned()
            }
        } else {
            node.heading.clone()
        };
        out.push_str(&format!(
            "{hashes} {} {title}\n\n_lines {}–{}{}_\n\n{}\n\n",
            node.node_id,
            node.line_start,
            node.line_end,
            if node.fallback {
                ", first sentences: the model gave no usable summary"
            } else {
                ""
            },
            if node.summary.is_empty() {
                "(no text)"
            } else {
                &node.summary
            }
        ));
    }
    out
}
