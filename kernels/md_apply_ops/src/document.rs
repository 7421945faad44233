//! The document a batch is applied to, and its Stage 1 views.
//!
//! In a review workspace the host gives the current document
//! (`review_doc`) and the workspace state (`review_state`); in a plain
//! pipeline run the batch is applied to the original (`doc_raw`). Stage 1
//! runs on the original, so when the current document differs, its
//! protected regions and sections are recomputed here with the same code
//! as `md_protected_regions` and `md_structure` (the regions used to
//! validate ops are always those of the document the ops are applied to).

use std::collections::BTreeSet;

use koas_edit::known::LedgerEffects;
use koas_kernel_api::{Inputs, KernelError};
use koas_md::stage1::{protected_spans_for, section_index_for};
use koas_review_schema::change_id::{ChangeId, IdAllocator};
use koas_review_schema::names;
use koas_review_schema::review::ReviewState;
use koas_review_schema::stage1::{ProtectedSpans, SectionIndex};
use serde_json::Value;

/// The document the ops address, with what validating them needs.
pub struct TargetDocument {
    pub text: String,
    /// Its name in patch headers.
    pub doc_name: String,
    pub regions: ProtectedSpans,
    pub sections: SectionIndex,
    /// True when Stage 1's artifacts described another document and were
    /// recomputed.
    pub recomputed: bool,
    /// Change IDs already in the ledger.
    pub ledger_ids: BTreeSet<ChangeId>,
    /// The first ID to allocate.
    pub first_id: ChangeId,
    /// What the ledger already holds, by effect: not recorded again.
    pub known: LedgerEffects,
}

fn invalid(message: String) -> KernelError {
    KernelError::invalid_input(message)
}

fn file_name_of(path: &str) -> Option<String> {
    std::path::Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
}

/// Reads the target document and its views from the kernel's inputs.
pub fn target_document(
    inputs: &Inputs,
    configured_name: &str,
) -> Result<TargetDocument, KernelError> {
    let state: Option<ReviewState> = inputs.parse_optional(names::REVIEW_STATE)?;
    let review_doc: Option<String> = inputs.parse_optional(names::REVIEW_DOC)?;
    let text = match (&review_doc, &state) {
        (Some(text), Some(_)) => text.clone(),
        (None, None) => inputs.source_text(names::DOC_RAW)?.to_owned(),
        (Some(_), None) => {
            return Err(invalid(format!(
                "`{}` was given without `{}`",
                names::REVIEW_DOC,
                names::REVIEW_STATE
            )))
        }
        (None, Some(_)) => {
            return Err(invalid(format!(
                "`{}` was given without `{}`",
                names::REVIEW_STATE,
                names::REVIEW_DOC
            )))
        }
    };
    let stats_name = inputs
        .get(names::FILE_STATS)
        .and_then(|s| s.get("path"))
        .and_then(Value::as_str)
        .and_then(file_name_of);
    let doc_name = match &state {
        Some(state) => state.doc_name.clone(),
        None if !configured_name.is_empty() => configured_name.to_owned(),
        None => stats_name.unwrap_or_else(|| "doc.md".to_owned()),
    };
    let (regions, recomputed) = protected_spans_for(&text, inputs.parse(names::PROTECTED_SPANS)?);
    let sections = section_index_for(&text, inputs.parse(names::SECTION_INDEX)?);
    let (ledger_ids, first_id, known) = match state {
        Some(state) => (
            state.ledger_ids,
            state.next_id,
            LedgerEffects {
                reverted: state.reverted,
                applied: state.applied,
                flags: state.flags,
            },
        ),
        None => (
            BTreeSet::new(),
            IdAllocator::after(std::iter::empty())
                .map_err(|e| KernelError::failed(e.to_string()))?
                .peek(),
            LedgerEffects::default(),
        ),
    };
    Ok(TargetDocument {
        text,
        doc_name,
        regions,
        sections,
        recomputed,
        ledger_ids,
        first_id,
        known,
    })
}
