//! The name of every reviewer artifact, as kernels declare them in their
//! specs and as pipeline files, the host and other kernels refer to them.
//! Each constant says who produces the artifact and what it holds.

// Sources (pipeline `[inputs]`).

/// Source: the Markdown document under review.
pub const DOC: &str = "doc";
/// Source: an ops file (`koas review --ops`, `--input ops=…`): a JSON
/// array of edit ops, or an object holding an `ops` array.
pub const OPS: &str = "ops";

// Stage 1.

/// `md_inventory`: the document's exact text, snapshot write-once
/// (`stage1/doc.raw.md`).
pub const DOC_RAW: &str = "doc_raw";
/// `md_inventory`: [`crate::stage1::FileStats`].
pub const FILE_STATS: &str = "file_stats";
/// `md_inventory`: the document's `sha256:` hash (a JSON string).
pub const DOC_HASH: &str = "doc_hash";
/// `md_structure`: [`crate::stage1::HeadingTree`].
pub const HEADING_TREE: &str = "heading_tree";
/// `md_structure`: [`crate::stage1::SectionIndex`].
pub const SECTION_INDEX: &str = "section_index";
/// `md_structure`: [`crate::stage1::AnchorMap`].
pub const ANCHOR_MAP: &str = "anchor_map";
/// `md_protected_regions`: [`crate::stage1::ProtectedSpans`].
pub const PROTECTED_SPANS: &str = "protected_spans";
/// `md_protected_regions`: [`crate::stage1::ProtectedSummary`].
pub const PROTECTED_SUMMARY: &str = "protected_summary";
/// `md_chunk`: [`crate::stage1::ChunkPlan`].
pub const CHUNKS: &str = "chunks";

// Stage 2.

/// `md_consistency_scan`: [`crate::findings::FindingsArtifact`].
pub const ISSUES: &str = "issues";
/// `md_numbering_control`: [`crate::findings::FindingsArtifact`].
pub const NUMBERING_FINDINGS: &str = "numbering_findings";
/// `md_language_check`: [`crate::findings::FindingsArtifact`] (spelling,
/// grammar and typography).
pub const LANGUAGE_FINDINGS: &str = "language_findings";
/// `md_numbering_control`: a JSON array of [`crate::numbering::RenumberOp`].
pub const RENUMBER_OPS: &str = "renumber_ops";
/// `md_fingerprint_chunk`: [`crate::fingerprint::ChunkFingerprints`].
pub const CHUNK_FINGERPRINTS: &str = "chunk_fingerprints";
/// `md_edit_plan` (or `md_pyramid` alone): [`crate::pyramid::Pyramid`].
pub const PYRAMID: &str = "pyramid";
/// `md_edit_plan` (or `md_pyramid` alone): the pyramid as Markdown for
/// people (a JSON string).
pub const PYRAMID_MD: &str = "pyramid_md";
/// `md_edit_plan` (or `md_pyramid` alone): [`crate::pyramid::Glossary`].
pub const GLOSSARY: &str = "glossary";
/// `md_edit_plan`: [`crate::edit_plan::EditPlan`], the LLM planner's
/// edit ops and per-chunk status.
pub const EDIT_PLAN: &str = "edit_plan";

// Stage 3.

/// `md_apply_ops`: [`crate::apply::ApplyOutcome`].
pub const APPLY_OUTCOME: &str = "apply_outcome";
/// `md_apply_ops`: the document after the batch (a JSON string).
pub const EDITED_DOC: &str = "edited_doc";
/// `md_revert`: [`crate::revert::RevertOutcome`].
pub const REVERT_OUTCOME: &str = "revert_outcome";
/// `md_revert`: the document after the reverts (a JSON string).
pub const REVERTED_DOC: &str = "reverted_doc";
/// `md_inline_notes_inject`: the annotated document (a JSON string).
pub const ANNOTATED_DOC: &str = "annotated_doc";
/// `md_inline_notes_inject`: [`crate::notes::InlineNotes`].
pub const INLINE_NOTES: &str = "inline_notes";
/// `md_review_report_assemble`: the review report (a JSON string holding
/// Markdown).
pub const REVIEW_REPORT: &str = "review_report";

// Provided by the host when a review command runs the kernels on a
// review workspace (absent in a plain `koas run`).

/// Host: the workspace's current document (a JSON string).
pub const REVIEW_DOC: &str = "review_doc";
/// Host: the ledger entries, a JSON array of
/// [`crate::ledger::LedgerEntry`].
pub const LEDGER: &str = "ledger";
/// Host: [`crate::review::ReviewState`].
pub const REVIEW_STATE: &str = "review_state";
/// Host: [`crate::review::ReportContext`].
pub const REVIEW_META: &str = "review_meta";

// Targeted refinement (`koas refine`).

/// `refine_judge`: [`crate::refine::RefineVerdicts`].
pub const REFINE_VERDICTS: &str = "refine_verdicts";
/// `refine_arbiter`: [`crate::refine::RefinePlan`].
pub const REFINE_PLAN: &str = "refine_plan";
/// `refine_router`: [`crate::refine::RefineRouting`].
pub const REFINE_ROUTING: &str = "refine_routing";
/// `refine_fix`: [`crate::refine::RefineOps`], read by `md_apply_ops` as
/// a model's ops.
pub const REFINE_OPS: &str = "refine_ops";
/// `refine_verify`: [`crate::refine::RefineVerification`].
pub const REFINE_VERIFICATION: &str = "refine_verification";
/// Host (`koas refine`): [`crate::refine::RefineState`].
pub const REFINE_STATE: &str = "refine_state";
/// Host (`koas refine`): a JSON array of [`crate::refine::RefineChange`].
pub const REFINE_CHANGES: &str = "refine_changes";

/// The document source and every artifact of the built-in Stage 1 and the
/// deterministic Stage 2 kernels: what any kernel run after them may read,
/// and what the test fixtures of `koas-kernel-test` give.
pub const STAGE_1_AND_2: &[&str] = &[
    DOC,
    DOC_RAW,
    DOC_HASH,
    FILE_STATS,
    HEADING_TREE,
    SECTION_INDEX,
    ANCHOR_MAP,
    PROTECTED_SPANS,
    PROTECTED_SUMMARY,
    CHUNKS,
    ISSUES,
    NUMBERING_FINDINGS,
    LANGUAGE_FINDINGS,
    RENUMBER_OPS,
    CHUNK_FINGERPRINTS,
];

/// Every name above, for checks that a kernel spec or a pipeline names a
/// known artifact.
pub const ALL: &[&str] = &[
    DOC,
    OPS,
    DOC_RAW,
    FILE_STATS,
    DOC_HASH,
    HEADING_TREE,
    SECTION_INDEX,
    ANCHOR_MAP,
    PROTECTED_SPANS,
    PROTECTED_SUMMARY,
    CHUNKS,
    ISSUES,
    NUMBERING_FINDINGS,
    LANGUAGE_FINDINGS,
    RENUMBER_OPS,
    CHUNK_FINGERPRINTS,
    PYRAMID,
    PYRAMID_MD,
    GLOSSARY,
    EDIT_PLAN,
    APPLY_OUTCOME,
    EDITED_DOC,
    REVERT_OUTCOME,
    REVERTED_DOC,
    ANNOTATED_DOC,
    INLINE_NOTES,
    REVIEW_REPORT,
    REVIEW_DOC,
    LEDGER,
    REVIEW_STATE,
    REVIEW_META,
    REFINE_VERDICTS,
    REFINE_PLAN,
    REFINE_ROUTING,
    REFINE_OPS,
    REFINE_VERIFICATION,
    REFINE_STATE,
    REFINE_CHANGES,
];

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_distinct_snake_case() {
        let mut seen = std::collections::BTreeSet::new();
        for name in super::ALL {
            assert!(seen.insert(*name), "{name} listed twice");
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{name}"
            );
        }
    }
}
