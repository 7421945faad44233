//! The JSON artifacts of Stage 3, shared by the four Stage 3 kernels and
//! the `koas` review commands (pure: no I/O).
//!
//! | artifact | producer | shape |
//! |----------|----------|-------|
//! | `apply_outcome` | `md_apply_ops` | [`ApplyOutcome`] |
//! | `edited_doc` | `md_apply_ops` | JSON string: the document after the batch |
//! | `revert_outcome` | `md_revert` | [`RevertOutcome`] |
//! | `annotated_doc` | `md_inline_notes_inject` | JSON string |
//! | `review_report` | `md_review_report_assemble` | JSON string (Markdown) |
//! | `review_doc` | host | JSON string: the workspace's current document |
//! | `ledger` | host | JSON array of [`LedgerEntry`] |
//! | `review_state` | host | [`ReviewState`] |
//! | `review_meta` | host | [`ReportContext`] |
//!
//! The host-provided artifacts exist only when a `koas review`, `koas
//! revert` or `koas report` command runs the kernels on a review workspace.
//! In a plain `koas run` they are absent: the kernels then work on the
//! original document (`doc_raw`) with an empty ledger, and the views show
//! the batch of `md_apply_ops` as a *preview* ([`preview_entries`]) that no
//! ledger records.
//!
//! It also reads the Stage 1 and Stage 2 artifacts it needs
//! (`protected_spans`, `section_index`, `issues`, `numbering_findings`) as
//! documented in `docs/artifacts.md`, keeping only the fields it uses, so
//! this crate does not depend on the Stage 1/2 crates.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::apply::{ApplyLogRecord, ApplyOptions, BatchOutcome};
use crate::change_id::ChangeId;
use crate::clock::Clock;
use crate::ledger::{Actor, LedgerEntry};
use crate::protected::{InlineSpan, ProtectedRange, ProtectedRegions};
use crate::record::{entry_for_applied, RunContext};
use crate::report::{Finding, ReportMeta, Section};
use crate::revert::RevertPlan;
use crate::text::{is_blank, LineBuf};
use koas_kernel_api::hash::{same_hash, sha256};

/// Artifact names.
pub mod names {
    /// `md_apply_ops`'s batch result.
    pub const APPLY_OUTCOME: &str = "apply_outcome";
    /// `md_apply_ops`'s edited document.
    pub const EDITED_DOC: &str = "edited_doc";
    /// `md_revert`'s plan.
    pub const REVERT_OUTCOME: &str = "revert_outcome";
    /// `md_revert`'s document after the reverts.
    pub const REVERTED_DOC: &str = "reverted_doc";
    /// `md_inline_notes_inject`'s annotated document.
    pub const ANNOTATED_DOC: &str = "annotated_doc";
    /// `md_inline_notes_inject`'s placed notes.
    pub const INLINE_NOTES: &str = "inline_notes";
    /// `md_review_report_assemble`'s report.
    pub const REVIEW_REPORT: &str = "review_report";
    /// Host: the workspace's current document.
    pub const REVIEW_DOC: &str = "review_doc";
    /// Host: the ledger entries.
    pub const LEDGER: &str = "ledger";
    /// Host: IDs and names of the workspace.
    pub const REVIEW_STATE: &str = "review_state";
    /// Host: report metadata and the last run's apply log.
    pub const REVIEW_META: &str = "review_meta";
    /// Source: an ops file (`--ops`, `--input ops=…`).
    pub const OPS: &str = "ops";
    /// A future LLM planner's ops.
    pub const EDIT_PLAN: &str = "edit_plan";
}

/// `apply_outcome`: what `md_apply_ops` computed. The host commits it
/// (after replaying it) with [`crate::workspace::PreparedRun::commit_review`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyOutcome {
    /// Document file name used in patch headers.
    pub doc_name: String,
    /// The options the batch ran with.
    pub options: ApplyOptions,
    /// The protected regions of the document the ops were applied to.
    pub protected: ProtectedRegions,
    /// The batch: applied ops with patches, rejections, final text.
    pub batch: BatchOutcome,
}

/// `revert_outcome`: what `md_revert` planned. The host commits it with
/// [`crate::workspace::PreparedRun::commit_revert`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevertOutcome {
    /// Document file name used in patch headers.
    pub doc_name: String,
    /// The changes asked for, as given (before ordering).
    pub requested: Vec<ChangeId>,
    /// The reverts, latest change first, and the final text (no revert
    /// and the current text when refused).
    pub plan: RevertPlan,
    /// Why the request was refused (nothing may then be written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// `review_state`: what the host knows about the workspace that a pure
/// kernel needs to plan a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewState {
    /// Document file name (patch headers, ledger `doc`).
    pub doc_name: String,
    /// The first change ID the batch allocates (after every ID the
    /// workspace ever used: ledger, patch files, apply log, torn tails).
    pub next_id: ChangeId,
    /// Change IDs in the ledger.
    pub ledger_ids: BTreeSet<ChangeId>,
    /// `sha256:` of the original document.
    pub original_hash: String,
}

/// `review_meta`: the report's run metadata and the last run's apply log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportContext {
    /// Metadata shown at the top of the report.
    pub meta: ReportMeta,
    /// Apply log records of the last review run (its rejections are
    /// listed).
    #[serde(default)]
    pub apply_log: Vec<ApplyLogRecord>,
}

// ---------------------------------------------------------------------
// Stage 1 and Stage 2 artifacts, read for what Stage 3 needs.

#[derive(Debug, Clone, Deserialize)]
struct SpanBlock {
    kind: String,
    line_start: usize,
    line_end: usize,
}

#[derive(Debug, Clone, Deserialize)]
struct SpanInline {
    kind: String,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    byte_start: usize,
    byte_end: usize,
}

/// The `protected_spans` artifact of `md_protected_regions`.
#[derive(Debug, Clone, Deserialize)]
pub struct Stage1Spans {
    /// `sha256:` of the document the spans were found in.
    pub doc_hash: String,
    #[serde(default)]
    blocks: Vec<SpanBlock>,
    #[serde(default)]
    inlines: Vec<SpanInline>,
}

impl Stage1Spans {
    /// True when the spans were computed on `text`.
    pub fn describes(&self, text: &str) -> bool {
        same_hash(&self.doc_hash, &sha256(text))
    }

    /// As the engine's protected regions. Stage 1's inline `end_column`
    /// is the column of the last character; the engine's `col_end` is
    /// the column just past it.
    pub fn to_regions(&self) -> ProtectedRegions {
        ProtectedRegions {
            blocks: self
                .blocks
                .iter()
                .map(|b| ProtectedRange {
                    kind: b.kind.clone(),
                    line_start: b.line_start,
                    line_end: b.line_end,
                })
                .collect(),
            inline: self
                .inlines
                .iter()
                .map(|s| InlineSpan {
                    kind: s.kind.clone(),
                    line_start: s.line,
                    col_start: s.column,
                    line_end: s.end_line,
                    col_end: s.end_column + 1,
                    start_byte: s.byte_start,
                    end_byte: s.byte_end,
                })
                .collect(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
struct IndexedSection {
    id: String,
    title: String,
    #[serde(default)]
    anchor: String,
    line_start: usize,
    #[serde(default)]
    heading_line_end: Option<usize>,
    line_end: usize,
}

/// The `section_index` artifact of `md_structure`.
#[derive(Debug, Clone, Deserialize)]
pub struct Stage1Sections {
    /// `sha256:` of the document the sections were found in.
    pub doc_hash: String,
    #[serde(default)]
    sections: Vec<IndexedSection>,
}

impl Stage1Sections {
    /// True when the sections were computed on `text`.
    pub fn describes(&self, text: &str) -> bool {
        same_hash(&self.doc_hash, &sha256(text))
    }

    /// As the report's sections.
    pub fn to_sections(&self) -> Vec<Section> {
        self.sections
            .iter()
            .map(|s| Section {
                id: s.id.clone(),
                title: s.title.clone(),
                line_start: s.line_start,
                line_end: s.line_end,
            })
            .collect()
    }

    /// The scope of 1-based `line` of `doc` (the document the sections
    /// describe): the innermost section's anchor, and a node path
    /// `<section id>.p<N>` where N counts the blocks (paragraphs, lists,
    /// tables… separated by blank lines) of the section's own text up to
    /// `line`; just the section ID on its heading; `None` before the first
    /// heading.
    pub fn scope_of(&self, doc: &LineBuf, line: usize) -> Option<(String, String)> {
        let section = self
            .sections
            .iter()
            .filter(|s| s.line_start <= line && line <= s.line_end)
            .max_by_key(|s| s.line_start)?;
        let heading_end = section.heading_line_end.unwrap_or(section.line_start);
        if line <= heading_end {
            return Some((section.anchor.clone(), section.id.clone()));
        }
        let blank = |l: usize| doc.content(l - 1).map_or(true, is_blank);
        let mut blocks = 0;
        for l in heading_end + 1..=line {
            if !blank(l) && (l == heading_end + 1 || blank(l - 1)) {
                blocks += 1;
            }
        }
        Some((
            section.anchor.clone(),
            format!("{}.p{}", section.id, blocks.max(1)),
        ))
    }
}

/// Fills `target.anchor` and `target.node_path` of ops that lack them,
/// from the sections of the document the ops address (`doc`). Values the
/// op already has are kept; ops that are not objects, or whose target
/// line cannot be read, are left alone (the engine rejects them).
pub fn fill_scope(ops: &mut [serde_json::Value], sections: &Stage1Sections, doc: &LineBuf) {
    for op in ops {
        let Some(target) = op.get_mut("target").and_then(|t| t.as_object_mut()) else {
            continue;
        };
        let Some(line) = target
            .get("line_start")
            .and_then(serde_json::Value::as_u64)
            .and_then(|l| usize::try_from(l).ok())
            .filter(|&l| l >= 1 && l <= doc.len())
        else {
            continue;
        };
        let Some((anchor, node_path)) = sections.scope_of(doc, line) else {
            continue;
        };
        for (key, value) in [("anchor", anchor), ("node_path", node_path)] {
            let missing = target
                .get(key)
                .map_or(true, |v| v.is_null() || v.as_str() == Some(""));
            if missing {
                target.insert(key.to_owned(), serde_json::Value::String(value));
            }
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
struct Stage2Finding {
    kind: String,
    line: usize,
    #[serde(default)]
    line_end: Option<usize>,
    #[serde(default)]
    severity: String,
    #[serde(default)]
    message: String,
}

/// The `issues` (`md_consistency_scan`) or `numbering_findings`
/// (`md_numbering_control`) artifact.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Stage2Findings {
    #[serde(default)]
    findings: Vec<Stage2Finding>,
}

impl Stage2Findings {
    /// As the report's findings. Stage 2 severities become the review
    /// vocabulary: `info` → `minor`, `warning` → `attention`, `error` →
    /// `critical` (any other value is kept).
    pub fn to_findings(&self) -> Vec<Finding> {
        self.findings
            .iter()
            .map(|f| Finding {
                kind: f.kind.clone(),
                line: f.line,
                line_end: f.line_end.unwrap_or(f.line).max(f.line),
                severity: match f.severity.as_str() {
                    "info" => "minor".to_owned(),
                    "warning" => "attention".to_owned(),
                    "error" => "critical".to_owned(),
                    other => other.to_owned(),
                },
                message: f.message.clone(),
            })
            .collect()
    }
}

// ---------------------------------------------------------------------
// Previews.

/// The timestamp preview entries carry: they were never recorded.
pub const PREVIEW_TIMESTAMP: &str = "preview (not recorded)";

struct PreviewClock;

impl Clock for PreviewClock {
    fn now(&self) -> String {
        PREVIEW_TIMESTAMP.to_owned()
    }
}

/// Ledger entries an apply outcome *would* record, for views of a plain
/// pipeline run (no workspace, no ledger). Their timestamp is
/// [`PREVIEW_TIMESTAMP`] and their run ID `preview`.
pub fn preview_entries(outcome: &ApplyOutcome, actor: &Actor) -> Vec<LedgerEntry> {
    let run = RunContext {
        doc_name: &outcome.doc_name,
        actor,
        run_id: "preview",
        clock: &PreviewClock,
    };
    outcome
        .batch
        .applied
        .iter()
        .map(|a| entry_for_applied(a, run))
        .collect()
}

/// Where a view's document and ledger come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewSource {
    /// A review workspace: the host's current document and ledger.
    Workspace,
    /// A plain pipeline run: `md_apply_ops`'s batch, not recorded.
    Preview,
    /// Neither: the original document, no change.
    Original,
}

/// The document and ledger a view (annotated document, report) shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewView {
    /// Where they come from.
    pub source: ViewSource,
    /// The document.
    pub text: String,
    /// Its ledger entries, in order.
    pub entries: Vec<LedgerEntry>,
}

impl ReviewView {
    /// Picks the view: the workspace's `review_doc` + `ledger` when the host
    /// gave both, else the preview of `apply_outcome`, else the original
    /// document with no entries. `review_doc` without `ledger` (or the
    /// reverse) is an error naming the missing one.
    pub fn resolve(
        review_doc: Option<String>,
        ledger: Option<Vec<LedgerEntry>>,
        outcome: Option<&ApplyOutcome>,
        original: &str,
        preview_actor: &Actor,
    ) -> Result<ReviewView, String> {
        match (review_doc, ledger) {
            (Some(text), Some(entries)) => Ok(ReviewView {
                source: ViewSource::Workspace,
                text,
                entries,
            }),
            (Some(_), None) => Err(format!(
                "`{}` was given without `{}`",
                names::REVIEW_DOC,
                names::LEDGER
            )),
            (None, Some(_)) => Err(format!(
                "`{}` was given without `{}`",
                names::LEDGER,
                names::REVIEW_DOC
            )),
            (None, None) => Ok(match outcome {
                Some(outcome) => ReviewView {
                    source: ViewSource::Preview,
                    text: outcome.batch.final_text.clone(),
                    entries: preview_entries(outcome, preview_actor),
                },
                None => ReviewView {
                    source: ViewSource::Original,
                    text: original.to_owned(),
                    entries: Vec::new(),
                },
            }),
        }
    }
}

#[cfg(test)]
mod tests;
