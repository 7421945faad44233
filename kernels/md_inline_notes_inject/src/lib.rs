//! # md_inline_notes_inject — Stage 3 reviewer kernel
//!
//! Builds the annotated document (`stage3/doc.REVIEWED.md`): the edited
//! document with a GitHub alert block after each change that needs
//! attention and is not reverted,
//!
//! ```markdown
//! > [!WARNING]
//! > REVIEWER: RVW-0034 — 'bandwidth' replaced with 'throughput'.
//! ```
//!
//! with the alert type mapped from the severity (`severity_alert_map`).
//! Blocks go at the end of the Markdown block holding the change, never
//! inside a protected region.
//!
//! A pure view: in a review workspace the host gives the current document
//! (`review_doc`) and the ledger (`ledger`); in a plain `koas run` it shows
//! `md_apply_ops`'s batch as a preview; with neither, the original. The
//! placement logic is [`koas_edit::notes`]; this crate is the glue.

use std::collections::BTreeMap;

use koas_edit::artifacts::ReviewView;
use koas_edit::notes::annotate;
use koas_kernel_api::prelude::*;
use koas_md::stage1::protected_spans_for;
use koas_review_schema::apply::ApplyOutcome;
use koas_review_schema::edit_op::{Alert, ReviewPolicy};
use koas_review_schema::ledger::Actor;
use koas_review_schema::names;
use koas_review_schema::notes::InlineNotes;
use serde::{Deserialize, Serialize};

/// `[config.md_inline_notes_inject]`: the review policy (silent tier,
/// severity → alert).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotesConfig {
    /// Kinds whose changes are silent unless they need attention.
    pub silent_allowlist: Vec<String>,
    /// Severity → GitHub alert type.
    pub severity_alert_map: BTreeMap<String, Alert>,
}

impl Default for NotesConfig {
    fn default() -> Self {
        let policy = ReviewPolicy::default();
        NotesConfig {
            silent_allowlist: policy.silent_allowlist,
            severity_alert_map: policy.severity_alert_map,
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct MdInlineNotesInject;

impl Kernel for MdInlineNotesInject {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("md_inline_notes_inject", "0.1.0")
            .stage("S3")
            .description(
                "Inserts a GitHub alert block (REVIEWER: RVW-NNNN — …) after each change that needs attention",
            )
            .input(names::DOC_RAW)
            .input(names::PROTECTED_SPANS)
            .optional_input(names::APPLY_OUTCOME)
            .optional_input(names::REVIEW_DOC)
            .optional_input(names::LEDGER)
            .output_file(names::ANNOTATED_DOC, "stage3/doc.REVIEWED.md")
            .output_file(names::INLINE_NOTES, "stage3/inline_notes.json")
            .default_config(serde_json::to_value(NotesConfig::default()).unwrap_or_default())
    }

    fn run(&self, _ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let config: NotesConfig = config.parse()?;
        let policy = ReviewPolicy {
            silent_allowlist: config.silent_allowlist,
            severity_alert_map: config.severity_alert_map,
        };
        let outcome: Option<ApplyOutcome> = inputs.parse_optional(names::APPLY_OUTCOME)?;
        let actor = Actor {
            tool: format!("koas md_inline_notes_inject {}", env!("CARGO_PKG_VERSION")),
            operator: "pipeline (preview)".to_owned(),
        };
        let view = ReviewView::resolve(
            inputs.parse_optional(names::REVIEW_DOC)?,
            inputs.parse_optional(names::LEDGER)?,
            outcome.as_ref(),
            inputs.source_text(names::DOC_RAW)?,
            &actor,
        )
        .map_err(KernelError::invalid_input)?;
        let (regions, _) = protected_spans_for(&view.text, inputs.parse(names::PROTECTED_SPANS)?);
        let annotated = annotate(&view.text, &view.entries, &regions, &policy);
        let summary = if annotated.notes.is_empty() {
            "no change needs attention: the annotated document is the edited document".to_owned()
        } else {
            let mut by_alert: BTreeMap<&str, usize> = BTreeMap::new();
            for note in &annotated.notes {
                *by_alert.entry(note.alert.as_str()).or_insert(0) += 1;
            }
            let parts: Vec<String> = by_alert.iter().map(|(a, n)| format!("{n} {a}")).collect();
            format!("{} notes ({})", annotated.notes.len(), parts.join(", "))
        };
        Ok(KernelOutput::new()
            .artifact(names::ANNOTATED_DOC, &annotated.text)
            .artifact(
                names::INLINE_NOTES,
                InlineNotes {
                    source: view.source,
                    notes: annotated.notes,
                },
            )
            .summary(summary))
    }
}

koas_kernel_api::export_kernel!(MdInlineNotesInject);
