//! `check`: the findings `koas check DOC` reports for one document, with
//! no model, no workspace and nothing written.

pub(crate) mod pipeline;

use super::ApiError;
use anyhow::Context as _;
use koas_md_scan::config::find_project_config;
use koas_md_scan::{Checker, ScanOutput};
use koas_orchestrator::embed::HostOptions;
use koas_review_schema::findings::Severity;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What a check is asked: `koas check DOC`'s flags for one document.
#[derive(Debug, Clone, Default)]
pub struct CheckRequest {
    /// The project config to use instead of the `koas.toml` found upward
    /// from the document.
    pub config: Option<PathBuf>,
    /// Use no project config at all: the built-in checks and defaults.
    pub no_config: bool,
    /// Refuse a document larger than this (e.g. `300M`).
    pub max_doc_size: Option<String>,
    /// Look up the document's links to other files inside this folder (a
    /// server's root); `None`: the project's root, as the command does.
    pub root: Option<PathBuf>,
}

/// One document's findings.
#[derive(Debug)]
pub struct CheckedDoc {
    /// The built-in checks' findings (those the project's own kernels
    /// report instead are left out) and warnings.
    pub output: ScanOutput,
    /// The findings of the project's other kernels (`[kernels] run`), as
    /// the JSON items of `koas check --format json`.
    pub others: Vec<Value>,
    /// The severity that fails the check (the project's `check.fail_on`,
    /// else warning).
    pub fail_on: Severity,
}

impl CheckedDoc {
    /// Every finding, the other kernels' included.
    pub fn total(&self) -> usize {
        self.output.findings.len() + self.others.len()
    }

    /// The findings of `severity`.
    pub fn count(&self, severity: Severity) -> usize {
        self.output
            .findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
            + self
                .others
                .iter()
                .filter(|i| other_severity(i) == Some(severity))
                .count()
    }

    /// A finding reaches `fail_on`: `koas check` would exit 1.
    pub fn fails(&self) -> bool {
        self.output
            .findings
            .iter()
            .any(|f| f.severity >= self.fail_on)
            || self
                .others
                .iter()
                .any(|i| other_severity(i).is_some_and(|s| s >= self.fail_on))
    }
}

/// The severity of another kernel's finding, as its JSON item says it.
fn other_severity(item: &Value) -> Option<Severity> {
    item.get("severity")
        .and_then(Value::as_str)
        .and_then(Severity::parse_any)
}

/// Checks `doc` as `koas check DOC` does: read like the command reads it
/// (a regular UTF-8 text file within the size limit), with its project's
/// config and other kernels.
pub fn check(
    global: &HostOptions,
    doc: &Path,
    request: &CheckRequest,
) -> Result<CheckedDoc, ApiError> {
    // The project file, read once: its checks' settings, the severity that
    // fails, its own kernels.
    let path = if request.no_config {
        None
    } else if let Some(explicit) = &request.config {
        Some(explicit.clone())
    } else {
        find_project_config(doc)
    };
    let (project, checker) = match &path {
        Some(path) => crate::project::ProjectFile::load_checked(path)?,
        None if request.no_config => {
            let project = crate::project::ProjectFile::default();
            let checker = Checker::new(&project.config).context("the built-in check config")?;
            (project, checker)
        }
        None => crate::project::ProjectFile::near_checked(doc)?,
    };
    let mut output = check_file(
        doc,
        &checker,
        request.max_doc_size.as_deref(),
        request.root.as_deref(),
    )?;
    let fail_on = project.config.check.fail_on.unwrap_or(Severity::Warning);
    let others = match other_kernels(global, doc, &project)? {
        Some((items, kinds)) => {
            output.forget_kinds(&kinds);
            items
        }
        None => Vec::new(),
    };
    Ok(CheckedDoc {
        output,
        others,
        fail_on,
    })
}

/// Reads a document (`-` is standard input) as UTF-8 text, refusing
/// binary content, anything that is not a regular file, and more than
/// `limit` bytes. `shown` names it in errors.
pub(crate) fn read_document(path: &Path, shown: &str, limit: u64) -> anyhow::Result<String> {
    let bytes = crate::input::read_document_bytes(path, shown, limit, true)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{shown}: not valid UTF-8 (first bad byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    koas_md::inventory::check_text(shown, &text).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(text)
}

/// The findings `koas check DOC` reports for one file, by `checker`: DOC
/// read like the command reads it (a regular UTF-8 text file within the
/// size limit), its links to other files looked up inside `root` (a
/// server's root; `None`: the project's root, as the command does).
/// Nothing is printed or written.
fn check_file(
    doc: &Path,
    checker: &Checker,
    max_doc_size: Option<&str>,
    root: Option<&Path>,
) -> anyhow::Result<ScanOutput> {
    let limit = crate::input::max_doc_bytes(max_doc_size)?;
    let shown = doc.display().to_string();
    let text = read_document(doc, &shown, limit)?;
    let disk = crate::links::Disk::new(limit);
    let around = match root {
        Some(root) => disk.around_in(doc, root),
        None => disk.around(doc),
    };
    let name = doc.file_name().and_then(|n| n.to_str());
    match &around {
        Some(around) => checker.check_linked(&text, name, around),
        None => checker.check(&text),
    }
    .with_context(|| format!("checking {shown}"))
}

/// The findings of the other kernels `koas check DOC` runs for one file
/// (the `[kernels] run` of its `project`): `None` when it names none.
/// Their findings come with the project's `[check]` and the document's
/// suppression comments applied, in the JSON items of `koas check
/// --format json`; with the names of the kinds they declare (for
/// [`ScanOutput::forget_kinds`]).
fn other_kernels(
    global: &HostOptions,
    doc: &Path,
    project: &crate::project::ProjectFile,
) -> anyhow::Result<Option<(Vec<serde_json::Value>, Vec<String>)>> {
    if project.config.kernels.run.is_empty() {
        return Ok(None);
    }
    let others = pipeline::project_findings(global, doc, None, project)?;
    if let Some(e) = others.errors.first() {
        anyhow::bail!("{}: {e}", doc.display());
    }
    let items = pipeline::json_items(&doc.display().to_string(), &others.found);
    Ok(Some((items, others.catalog.other_names())))
}
