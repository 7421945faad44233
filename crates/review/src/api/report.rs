//! The review report (`REVIEW_<stem>.md`, and the HTML page when asked)
//! and the annotated document, rewritten from the ledger as it stands.

use super::session::{ApiError, Session};
use crate::passes;
use koas_edit::query::{count, Counts};
use koas_review_workspace::{paths, RunKind};
use serde_json::{json, Value};
use std::path::PathBuf;

/// The HTML page, besides the Markdown report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HtmlPage {
    /// Where: else next to the Markdown report, as `REVIEW_<stem>.html`.
    pub dest: Option<PathBuf>,
    /// Also the engine's names (guards, section IDs, kernels).
    pub details: bool,
    /// The workspace as the commands the page shows should name it
    /// (`-w DIR`), when the person named one.
    pub workspace_arg: Option<String>,
}

/// What to write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportRequest {
    /// The pipeline file, instead of the one the review was made with.
    pub pipeline: Option<PathBuf>,
    /// The HTML page too.
    pub html: Option<HtmlPage>,
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// The Markdown report.
    pub report: PathBuf,
    /// The annotated document.
    pub annotated: PathBuf,
    /// The HTML page, when asked.
    pub html: Option<PathBuf>,
    /// The ledger's counts, as every view says them.
    pub counts: Counts,
}

impl Reported {
    /// The answer's JSON form (`koas report --json`, the MCP tool).
    pub fn to_json(&self, workspace: &std::path::Path) -> Value {
        let mut value = json!({
            "status": "completed",
            "summary": self.counts.sentence(),
            "workspace": workspace,
            "report": self.report,
            "annotated": self.annotated,
            "counts": self.counts,
        });
        if let Some(page) = &self.html {
            value["html"] = json!(page);
        }
        value
    }
}

impl Session<'_> {
    /// Rewrites the report and the annotated document (under the lock,
    /// so they show one state of the ledger).
    pub fn report(&self, request: &ReportRequest) -> Result<Reported, ApiError> {
        let target = self.target();
        target.require_workspace()?;
        let run = target.begin_run(RunKind::Review)?;
        let (pipeline, discovery) =
            passes::workspace_pipeline(self.global, target, request.pipeline.as_deref())?;
        pipeline
            .require(passes::REPORT, "renders the report")
            .map_err(anyhow::Error::from)?;
        let views = self.views(&pipeline, &discovery, &run, str::to_owned, false)?;
        let counts = count(run.entries());
        let html = match &request.html {
            Some(page) => Some(crate::html_report::write_page(
                &run,
                views.report.as_deref(),
                views.data.as_ref(),
                page.dest.as_deref(),
                &target.doc_path.to_string_lossy(),
                page.workspace_arg.as_deref(),
                page.details,
            )?),
            None => None,
        };
        drop(run);
        let report = views
            .report
            .ok_or_else(|| anyhow::anyhow!("the pipeline produced no report"))?;
        Ok(Reported {
            report,
            annotated: target.root().join(paths::REVIEWED_DOC),
            html,
            counts,
        })
    }
}
