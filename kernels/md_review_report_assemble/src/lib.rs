//! # md_review_report_assemble — Stage 3 reviewer kernel
//!
//! Renders the review report, `REVIEW_<stem>.md`: run metadata (date,
//! tool and kernel versions, document hashes), counts, a change table per
//! section, the full chronological ledger table, the deterministic Stage 2
//! findings of the current document grouped by section, the findings of
//! the original that changes resolved (from `review_meta`), and the
//! rejections of the last run.
//!
//! A pure view. In a review workspace the host gives the current document
//! (`review_doc`), the ledger (`ledger`) and the run metadata with the last
//! run's apply log (`review_meta`), and writes the report to
//! `review/REVIEW_<stem>.md` and `stage3/REVIEW_<stem>.md` itself (a
//! declared file cannot carry the document's name). In a plain `koas run`
//! the report previews `md_apply_ops`'s batch (or shows the original with
//! no change) and is written to `review/REVIEW.md`. The renderer is
//! [`koas_report::markdown`]; this crate is the glue.

use koas_edit::artifacts::ReviewView;
use koas_kernel_api::hash::sha256;
use koas_kernel_api::prelude::*;
use koas_report::markdown::{render_report, ReportInput};
use koas_review_schema::apply::ApplyOutcome;
use koas_review_schema::findings::FindingsArtifact;
use koas_review_schema::ledger::Actor;
use koas_review_schema::names;
use koas_review_schema::review::{ReportContext, ReportMeta, ViewSource};
use koas_review_schema::stage1::SectionIndex;
use serde_json::Value;

#[derive(Debug, Default, Clone, Copy)]
pub struct MdReviewReportAssemble;

const NAME: &str = "md_review_report_assemble";
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The notice of a report made outside a review workspace.
pub const PREVIEW_NOTICE: &str = "Preview from a pipeline run: these changes are not recorded in any ledger and were not applied to the document. Record them with `koas review DOC --ops FILE`.";

/// The notice of a report with no change and no workspace.
pub const ORIGINAL_NOTICE: &str = "No ops were given and no model proposed any: this report lists the deterministic Stage 2 findings and no change. Configure a model or give edit ops with `koas review DOC --ops FILE`.";

fn file_name_of(path: &str) -> Option<String> {
    std::path::Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
}

/// Metadata of a report made without a host (plain pipeline run): a pure
/// kernel has no clock, so the time is left to `run.json`.
fn pipeline_meta(
    inputs: &Inputs,
    view: &ReviewView,
    outcome: Option<&ApplyOutcome>,
    original: &str,
) -> Result<ReportMeta, KernelError> {
    let doc_name = outcome
        .map(|o| o.doc_name.clone())
        .or_else(|| {
            inputs
                .get(names::FILE_STATS)
                .and_then(|s| s.get("path"))
                .and_then(Value::as_str)
                .and_then(file_name_of)
        })
        .unwrap_or_else(|| "doc.md".to_owned());
    let original_hash = match inputs.parse_optional::<String>(names::DOC_HASH)? {
        Some(hash) => hash,
        None => sha256(original),
    };
    Ok(ReportMeta {
        generated_at: "see run.json (pipeline run)".to_owned(),
        tool: "koas run".to_owned(),
        kernels: vec![(NAME.to_owned(), VERSION.to_owned())],
        doc_name,
        original_hash,
        current_hash: sha256(&view.text),
        notice: Some(
            if had_ops(view, outcome) {
                PREVIEW_NOTICE
            } else {
                ORIGINAL_NOTICE
            }
            .to_owned(),
        ),
    })
}

/// True when a pipeline run's preview comes from ops (applied or not).
fn had_ops(view: &ReviewView, outcome: Option<&ApplyOutcome>) -> bool {
    view.source == ViewSource::Preview
        && outcome.is_some_and(|o| !o.batch.applied.is_empty() || !o.batch.rejected.is_empty())
}

impl Kernel for MdReviewReportAssemble {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new(NAME, VERSION)
            .stage("S3")
            .description(
                "Renders REVIEW_<stem>.md: metadata, counts, changes per section, the chronological ledger, Stage 2 findings",
            )
            .input(names::DOC_RAW)
            .input(names::SECTION_INDEX)
            .optional_input(names::DOC_HASH)
            .optional_input(names::FILE_STATS)
            .optional_input(names::ISSUES)
            .optional_input(names::NUMBERING_FINDINGS)
            .optional_input(names::LANGUAGE_FINDINGS)
            .optional_input(names::APPLY_OUTCOME)
            .optional_input(names::REVIEW_DOC)
            .optional_input(names::LEDGER)
            .optional_input(names::REVIEW_META)
            .output_file(names::REVIEW_REPORT, "review/REVIEW.md")
    }

    fn run(&self, _ctx: &Context, _config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let original = inputs.source_text(names::DOC_RAW)?;
        let outcome: Option<ApplyOutcome> = inputs.parse_optional(names::APPLY_OUTCOME)?;
        let actor = Actor {
            tool: format!("koas {NAME} {VERSION}"),
            operator: "pipeline (preview)".to_owned(),
        };
        let view = ReviewView::resolve(
            inputs.parse_optional(names::REVIEW_DOC)?,
            inputs.parse_optional(names::LEDGER)?,
            outcome.as_ref(),
            original,
            &actor,
        )
        .map_err(KernelError::invalid_input)?;
        let context: Option<ReportContext> = inputs.parse_optional(names::REVIEW_META)?;
        let (meta, apply_log, model, earlier_findings) = match context {
            Some(context) => (
                context.meta,
                context.apply_log,
                context.model,
                context.earlier_findings,
            ),
            None => (
                pipeline_meta(inputs, &view, outcome.as_ref(), original)?,
                outcome
                    .as_ref()
                    .map(|o| o.batch.log_records("preview"))
                    .unwrap_or_default(),
                None,
                Vec::new(),
            ),
        };
        // The sections of the text the report shows (Stage 1 describes it
        // in a review workspace; a preview is recomputed).
        let sections = koas_md::stage1::section_index_for(
            &view.text,
            inputs.parse::<SectionIndex>(names::SECTION_INDEX)?,
        )
        .sections;
        let mut findings = Vec::new();
        for artifact in [
            names::ISSUES,
            names::NUMBERING_FINDINGS,
            names::LANGUAGE_FINDINGS,
        ] {
            if let Some(found) = inputs.parse_optional::<FindingsArtifact>(artifact)? {
                findings.extend(found.findings);
            }
        }
        let text = render_report(ReportInput {
            meta: &meta,
            entries: &view.entries,
            sections: &sections,
            findings: &findings,
            earlier_findings: &earlier_findings,
            apply_log: &apply_log,
            model: model.as_ref(),
        });
        let resolved =
            koas_report::markdown::resolved_findings(&view.entries, &earlier_findings, &findings)
                .len();
        let changes = view.entries.iter().filter(|e| !e.is_revert).count();
        let summary = format!(
            "report of {}: {} ledger entries ({changes} changes and flags), {} findings{}{}",
            meta.doc_name,
            view.entries.len(),
            findings.len(),
            if resolved > 0 {
                format!(", {resolved} resolved")
            } else {
                String::new()
            },
            match view.source {
                ViewSource::Workspace => "",
                _ if had_ops(&view, outcome.as_ref()) => " (preview, not recorded)",
                _ => " (no ops)",
            }
        );
        Ok(KernelOutput::new()
            .artifact(names::REVIEW_REPORT, text)
            .summary(summary))
    }
}

koas_kernel_api::export_kernel!(MdReviewReportAssemble);
