//! # md_apply_ops — Stage 3 reviewer kernel
//!
//! Normalizes (HASH_RECOMPUTE, NOTE_INJECT, NOTE_ID_FIX, blank-line
//! guard), validates (the six op invariants) and applies a batch of edit
//! ops to a document, with a forward and an inverse unified diff per
//! change, allocating `RVW-NNNN` IDs after every ID the workspace used.
//!
//! The kernel is pure: it **never writes the ledger**. Its result,
//! `apply_outcome` ([`koas_review_schema::apply::ApplyOutcome`]), is committed
//! by the host (`koas review`), which replays and checks it against the
//! workspace before writing patches, ledger, document and apply log in the
//! crash-safe order of the review workspace (`koas-review-workspace`). In a plain `koas run`
//! the outcome and `edited_doc` are written to `stage3/` as a preview.
//!
//! Inputs: `doc_raw`, `protected_spans`, `section_index` (Stage 1);
//! optional `file_stats`; the ops from `ops` (an ops file, `--ops`) and/or
//! `edit_plan` (an ops file is a person's: its ops may change a protected
//! region when flagged for attention with a note; the edit plan is a
//! model's: its ops never do); and, from the host in a review workspace, `review_doc`
//! (the current document the ops address) and `review_state` (document
//! name, next free ID, ledger IDs). The engine itself is
//! [`koas_edit::apply`]; this crate is the plugin glue.

pub mod config;
pub mod document;
pub mod ops;
mod summary;

use koas_edit::apply::{apply_batch, BatchInput};
use koas_edit::artifacts::fill_scope;
use koas_edit::text::LineBuf;
use koas_kernel_api::prelude::*;
use koas_review_schema::apply::ApplyOutcome;
use koas_review_schema::names;

use crate::config::ApplyConfig;

#[derive(Debug, Default, Clone, Copy)]
pub struct MdApplyOps;

impl Kernel for MdApplyOps {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("md_apply_ops", "0.1.0")
            .stage("S3")
            .description(
                "Normalizes, validates and applies edit ops with forward and inverse patches; the host commits the outcome to the ledger",
            )
            .input(names::DOC_RAW)
            .input(names::PROTECTED_SPANS)
            .input(names::SECTION_INDEX)
            .optional_input(names::FILE_STATS)
            .optional_input(names::OPS)
            .optional_input(names::EDIT_PLAN)
            .optional_input(names::REFINE_OPS)
            .optional_input(names::ISSUES)
            .optional_input(names::NUMBERING_FINDINGS)
            .optional_input(names::LANGUAGE_FINDINGS)
            .optional_input(names::REVIEW_DOC)
            .optional_input(names::REVIEW_STATE)
            .output_file(names::APPLY_OUTCOME, "stage3/apply_outcome.json")
            .output_file(names::EDITED_DOC, "stage3/doc.edited.md")
            .default_config(ApplyConfig::default_json())
    }

    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let config: ApplyConfig = config.parse()?;
        let options = config.options();
        let target = document::target_document(inputs, &config.doc_name)?;
        if target.recomputed {
            ctx.debug("the document differs from Stage 1's: protected regions and sections recomputed for it");
        }
        let mut gathered = ops::gather(inputs, config.check_fixes)?;
        fill_scope(
            &mut gathered.ops,
            &target.sections,
            &LineBuf::parse(&target.text),
        );
        ctx.check_cancelled()?;
        let batch = apply_batch(BatchInput {
            doc_name: &target.doc_name,
            text: &target.text,
            ops: &gathered.ops,
            protected: &target.regions,
            ledger_ids: &target.ledger_ids,
            first_id: target.first_id,
            options: &options,
            origins: &gathered.origins,
            known: target.known.known(),
        });
        let summary = summary::describe(&batch, &gathered.sources);
        let warnings = summary::rejection_warnings(&batch);
        let edited = batch.final_text.clone();
        let outcome = ApplyOutcome {
            doc_name: target.doc_name,
            options,
            protected: target.regions,
            batch,
        };
        let mut out = KernelOutput::new()
            .artifact(names::APPLY_OUTCOME, &outcome)
            .artifact(names::EDITED_DOC, edited)
            .summary(summary);
        for warning in warnings {
            out = out.warning(warning);
        }
        Ok(out)
    }
}

koas_kernel_api::export_kernel!(MdApplyOps);
