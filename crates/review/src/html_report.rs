//! `koas report DOC --html`: the data of the view pass and the workspace
//! gathered for [`koas_report::html`], and the page written to disk.
//!
//! The page shows what the Markdown report shows, so it is built from the
//! same data: the report kernel's `review_meta`, the section index and the
//! Stage 2 findings the view pass computed on the current document, and
//! the ledger, here with its patch text (the view pass leaves it out) so
//! each change gets its before / after lines.

use anyhow::Context as _;
use koas_orchestrator::discovery::Discovery;
use koas_orchestrator::pipeline::Pipeline;
use koas_orchestrator::run_record::RunRecord;
use koas_report::html::{render_html, HtmlInput, HtmlLimits};
use koas_report::markdown::ReportInput;
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::findings::{Finding, FindingsArtifact};
use koas_review_schema::ledger::{LedgerEntry, PatchText};
use koas_review_schema::names;
use koas_review_schema::review::ReportContext;
use koas_review_schema::stage1::{SectionEntry, SectionIndex};
use koas_review_workspace::PreparedRun;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::outputs::output;

/// What the view pass computed that the HTML page shows beside the ledger.
#[derive(Debug, Clone)]
pub struct ViewData {
    /// The report's metadata, the last run's apply log and model, the
    /// original's findings.
    pub context: ReportContext,
    /// Sections of the current document.
    pub sections: Vec<SectionEntry>,
    /// Stage 2 findings of the current document.
    pub findings: Vec<Finding>,
    /// Findings of the pipeline's other kernels, by kernel.
    pub kernel_findings: Vec<koas_review_schema::findings::KernelFindings>,
}

/// The kernels of `pipeline` that declare `artifact` as an output.
fn producers<'p>(
    pipeline: &'p Pipeline,
    discovery: &'p Discovery,
    artifact: &'p str,
) -> impl Iterator<Item = &'p String> + 'p {
    pipeline.kernels.iter().filter(move |k| {
        discovery
            .kernels
            .get(*k)
            .is_some_and(|l| l.spec.outputs.iter().any(|o| o.artifact == artifact))
    })
}

impl ViewData {
    /// Reads the view pass's outputs back from the cache: the section index
    /// and the findings the report kernel was given.
    pub fn collect(
        record: &RunRecord,
        pipeline: &Pipeline,
        discovery: &Discovery,
        context: ReportContext,
        current_text: &str,
        kernel_findings: Vec<koas_review_schema::findings::KernelFindings>,
    ) -> anyhow::Result<ViewData> {
        let index = producers(pipeline, discovery, names::SECTION_INDEX)
            .find_map(|k| output(record, k, names::SECTION_INDEX).ok())
            .context("the view pass produced no section index")?;
        let index: SectionIndex =
            serde_json::from_value(index).context("the section index has an unexpected shape")?;
        let sections = koas_md::stage1::section_index_for(current_text, index).sections;
        let mut findings = Vec::new();
        for artifact in [
            names::ISSUES,
            names::NUMBERING_FINDINGS,
            names::LANGUAGE_FINDINGS,
        ] {
            for kernel in producers(pipeline, discovery, artifact) {
                if let Ok(value) = output(record, kernel, artifact) {
                    let found: FindingsArtifact =
                        serde_json::from_value(value).with_context(|| {
                            format!("`{artifact}` of kernel `{kernel}` has an unexpected shape")
                        })?;
                    findings.extend(found.findings);
                }
            }
        }
        Ok(ViewData {
            context,
            sections,
            findings,
            kernel_findings,
        })
    }
}

/// Where the page goes: `path` when given (relative to the current
/// directory), else next to the Markdown report, `REVIEW_<stem>.html`.
pub fn html_path(markdown_report: &Path, path: Option<&Path>) -> PathBuf {
    match path {
        Some(path) => path.to_path_buf(),
        None => markdown_report.with_extension("html"),
    }
}

/// Renders the page of `run`'s ledger with the view pass's `data`.
/// `doc_arg` and `workspace_arg` name the document and the workspace in
/// the commands the page shows, as they were given.
pub fn render(
    run: &PreparedRun<'_>,
    data: &ViewData,
    doc_arg: &str,
    workspace_arg: Option<&str>,
    details: bool,
) -> anyhow::Result<String> {
    let workspace = run.workspace();
    // A ledger written before entries carried their patch text: read the
    // patch files.
    let entries: Vec<LedgerEntry> = run
        .entries()
        .iter()
        .map(|e| -> anyhow::Result<LedgerEntry> {
            let mut e = e.clone();
            if e.patch_text.is_none() && !e.patch_forward.is_empty() {
                let forward = workspace
                    .read_patch(&e.patch_forward)
                    .with_context(|| format!("the patch of {}", e.id))?;
                e.patch_text = Some(PatchText {
                    forward,
                    inverse: String::new(),
                });
            }
            Ok(e)
        })
        .collect::<anyhow::Result<_>>()?;
    let not_revertible: BTreeMap<ChangeId, EntryId> =
        koas_review_workspace::not_revertible(&entries)
            .into_iter()
            .map(|b| (b.id, b.by))
            .collect();
    let context = &data.context;
    Ok(render_html(HtmlInput {
        report: ReportInput {
            meta: &context.meta,
            entries: &entries,
            sections: &data.sections,
            findings: &data.findings,
            earlier_findings: &context.earlier_findings,
            apply_log: &context.apply_log,
            model: context.model.as_ref(),
        },
        current_text: run.current_text(),
        not_revertible: &not_revertible,
        doc_arg,
        workspace_arg,
        limits: HtmlLimits::default(),
        kernel_findings: &data.kernel_findings,
        details,
    }))
}

/// Writes `page` to `path` whole: a temporary file beside it, then a
/// rename, so a reader never sees half a page.
pub fn write(path: &Path, page: &str) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the folder {}", dir.display()))?;
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&tmp, page).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::Error::new(e).context(format!(
            "cannot write the HTML report to {}",
            path.display()
        ))
    })
}

/// `koas report --html [PATH]`: renders the page from what the view pass
/// produced (the Markdown `report`'s path and the page's `data`) and
/// `run`'s ledger, writes it to `dest` (else next to the Markdown report)
/// and returns where.
pub fn write_page(
    run: &PreparedRun<'_>,
    report: Option<&Path>,
    data: Option<&anyhow::Result<ViewData>>,
    dest: Option<&Path>,
    doc_arg: &str,
    workspace_arg: Option<&str>,
    details: bool,
) -> anyhow::Result<PathBuf> {
    let markdown = report.context("the pipeline produced no report")?;
    let data = match data {
        Some(Ok(data)) => data,
        Some(Err(e)) => anyhow::bail!("cannot build the HTML report: {e:#}"),
        None => anyhow::bail!("cannot build the HTML report: the view pass gave no data"),
    };
    let page = render(run, data, doc_arg, workspace_arg, details)?;
    let path = html_path(markdown, dest);
    write(&path, &page)?;
    Ok(path)
}
