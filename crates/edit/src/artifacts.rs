//! How the Stage 3 kernels and the review commands read the artifacts
//! around them (pure: no I/O): whether Stage 1's artifacts describe the
//! document at hand, the structural scope of an op's target, and the
//! document and ledger a view shows.
//!
//! The host-provided artifacts (`review_doc`, `ledger`, `review_state`,
//! `review_meta`) exist only when a `koas review`, `koas revert` or `koas
//! report` command runs the kernels on a review workspace. In a plain `koas
//! run` they are absent: the kernels then work on the original document
//! (`doc_raw`) with an empty ledger, and the views show the batch of
//! `md_apply_ops` as a *preview* ([`preview_entries`]) that no ledger
//! records.

use koas_kernel_api::hash::{same_hash, sha256};
use koas_review_schema::apply::ApplyOutcome;
use koas_review_schema::ledger::{Actor, LedgerEntry};
use koas_review_schema::names;
use koas_review_schema::review::ViewSource;
use koas_review_schema::stage1::{SectionEntry, SectionIndex};

use crate::clock::Clock;
use crate::record::{entry_for_applied, RunContext};
use crate::text::{is_blank, LineBuf};

/// True when a Stage 1 artifact whose `doc_hash` is `doc_hash` was
/// computed on `text` (Stage 1 runs on the original; the current document
/// of a review may differ).
pub fn describes(doc_hash: &str, text: &str) -> bool {
    same_hash(doc_hash, &sha256(text))
}

/// The innermost section of each line, indexed once (sections nest, so a
/// line is written once per level): looking sections up for many lines
/// does not scan every section for each.
#[derive(Debug, Clone)]
pub struct SectionLookup<'a> {
    sections: &'a [SectionEntry],
    /// 1-based line → index in `sections`.
    of_line: Vec<Option<usize>>,
}

impl<'a> SectionLookup<'a> {
    /// Indexes `sections`.
    pub fn new(sections: &'a [SectionEntry]) -> Self {
        let last = sections
            .iter()
            .map(|s| s.line_end as usize)
            .max()
            .unwrap_or(0);
        let mut order: Vec<usize> = (0..sections.len()).collect();
        // By start, ties in list order: of the sections holding a line, the
        // one starting last wins, and of equal starts the last listed.
        order.sort_by_key(|&i| sections[i].line_start);
        let mut of_line = vec![None; last + 1];
        for i in order {
            let s = &sections[i];
            let end = (s.line_end as usize).min(last);
            for slot in of_line.iter_mut().take(end + 1).skip(s.line_start as usize) {
                *slot = Some(i);
            }
        }
        SectionLookup { sections, of_line }
    }

    /// The innermost section containing 1-based `line`.
    pub fn get(&self, line: usize) -> Option<&'a SectionEntry> {
        let index = (*self.of_line.get(line)?)?;
        self.sections.get(index)
    }
}

/// Scopes of many lines of one document (see [`scope_of`]), with the
/// blocks of the document counted once.
struct Scopes<'a> {
    lookup: SectionLookup<'a>,
    doc: &'a LineBuf,
    /// `starts[l]`: lines `1..=l` that start a block after a blank line
    /// (or at the top).
    starts: Vec<usize>,
}

impl<'a> Scopes<'a> {
    fn new(sections: &'a SectionIndex, doc: &'a LineBuf) -> Self {
        let blank = |l: usize| l == 0 || doc.content(l - 1).map_or(true, is_blank);
        let mut starts = Vec::with_capacity(doc.len() + 1);
        starts.push(0);
        for l in 1..=doc.len() {
            let start = usize::from(!blank(l) && blank(l - 1));
            starts.push(starts[l - 1] + start);
        }
        Scopes {
            lookup: SectionLookup::new(&sections.sections),
            doc,
            starts,
        }
    }

    fn scope(&self, line: usize) -> Option<(String, String)> {
        let section = self.lookup.get(line)?;
        let heading_end = section.heading_line_end as usize;
        if line <= heading_end {
            return Some((section.anchor.clone(), section.id.clone()));
        }
        let blank = |l: usize| self.doc.content(l - 1).map_or(true, is_blank);
        let at = |l: usize| self.starts.get(l).copied().unwrap_or(0);
        // The first line under the heading starts a block even when no
        // blank line separates it from the heading.
        let first = usize::from(!blank(heading_end + 1) && heading_end >= 1 && !blank(heading_end));
        let blocks = at(line) - at(heading_end) + first;
        Some((
            section.anchor.clone(),
            format!("{}.p{}", section.id, blocks.max(1)),
        ))
    }
}

/// The scope of 1-based `line` of `doc` (the document the sections
/// describe): the innermost section's anchor, and a node path
/// `<section id>.p<N>` where N counts the blocks (paragraphs, lists,
/// tables… separated by blank lines) of the section's own text up to
/// `line`; just the section ID on its heading; `None` before the first
/// heading.
pub fn scope_of(sections: &SectionIndex, doc: &LineBuf, line: usize) -> Option<(String, String)> {
    Scopes::new(sections, doc).scope(line)
}

/// Fills `target.anchor` and `target.node_path` of ops that lack them,
/// from the sections of the document the ops address (`doc`). Values the
/// op already has are kept; ops that are not objects, or whose target
/// line cannot be read, are left alone (the engine rejects them).
pub fn fill_scope(ops: &mut [serde_json::Value], sections: &SectionIndex, doc: &LineBuf) {
    let scopes = Scopes::new(sections, doc);
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
        let Some((anchor, node_path)) = scopes.scope(line) else {
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

/// The document and ledger a view (annotated document, report) shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewView {
    /// Where they come from.
    pub source: ViewSource,
    /// The text of that document: the workspace's current one, the
    /// preview's result, or the original.
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
