//! The `pyramid` and `glossary` artifacts (`md_edit_plan`, or `md_pyramid` alone): a summary of
//! the document at up to four levels (abstract, sections, subsections,
//! leaf sections), each node remembering what it was built from so a
//! re-run asks the model again only where the document changed; and the
//! terms the document defines.

use serde::{Deserialize, Serialize};

use crate::stage1::LineNo;

/// The node ID of the document abstract (level 0).
pub const ABSTRACT_NODE_ID: &str = "DOC";

/// Whether the pyramid was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PyramidStatus {
    /// Every node has a summary (from the model or a marked fallback).
    #[default]
    Built,
    /// No summary was made: no model configured, `--no-llm` or
    /// `--skip-pyramid`. Kernels reading the pyramid run without it.
    Skipped,
}

/// The `pyramid` artifact (`stage2/pyramid.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Pyramid {
    /// `sha256:` of the document summarized.
    pub doc_hash: String,
    /// Built or skipped.
    pub status: PyramidStatus,
    /// Why it was skipped (`None` when built).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_reason: Option<String>,
    /// The language the summaries are written in (`fr`, `en`, …).
    #[serde(default)]
    pub language: String,
    /// How many levels were built (1 = abstract only … 4 = down to
    /// level-3 sections).
    #[serde(default)]
    pub levels: u8,
    /// The model that wrote the summaries (empty when skipped).
    #[serde(default)]
    pub model: String,
    /// The nodes, level 0 first, then in document order within a level.
    #[serde(default)]
    pub nodes: Vec<PyramidNode>,
    /// What building this pyramid cost.
    #[serde(default)]
    pub stats: PyramidStats,
}

impl Pyramid {
    /// One line on the pyramid for the user: nodes, levels, language,
    /// summaries asked, reused and fallen back on, and the glossary's
    /// size; or why it was skipped.
    pub fn summary_line(&self, glossary_terms: usize) -> String {
        if self.status == PyramidStatus::Skipped {
            return format!(
                "pyramid skipped: {}",
                self.skipped_reason.as_deref().unwrap_or("skipped")
            );
        }
        let s = &self.stats;
        format!(
            "{} nodes in {} levels ({}): {} asked of the model, {} reused, {} fallbacks; {} glossary terms",
            self.nodes.len(),
            self.levels,
            self.language,
            s.requested,
            s.reused,
            s.fallbacks,
            glossary_terms
        )
    }

    /// How many summaries could not be asked of the model (server gone,
    /// budget spent): the next run asks them again.
    pub fn unanswered(&self) -> u32 {
        self.nodes
            .iter()
            .map(|n| {
                u32::from(n.unanswered)
                    + n.parts.iter().map(|p| u32::from(p.unanswered)).sum::<u32>()
            })
            .sum()
    }

    /// The node with `node_id`.
    pub fn node(&self, node_id: &str) -> Option<&PyramidNode> {
        self.nodes.iter().find(|n| n.node_id == node_id)
    }

    /// The document abstract (level 0), when built.
    pub fn abstract_node(&self) -> Option<&PyramidNode> {
        self.node(ABSTRACT_NODE_ID)
    }
}

/// One summary of the pyramid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PyramidNode {
    /// The section ID (`S2.3`), `S0` for the text before the first
    /// heading, or [`ABSTRACT_NODE_ID`] for the abstract.
    pub node_id: String,
    /// 0 = document abstract, 1 = top-level section, 2 = subsection,
    /// 3 = sub-subsection (deeper headings are folded into it).
    pub level: u8,
    /// The section's heading text (the document title for the abstract).
    pub heading: String,
    /// The section's anchor (empty for the abstract and the preamble).
    pub anchor: String,
    /// `sha256:` of the document lines the node covers.
    pub content_hash: String,
    /// `sha256:` of everything the summary was made from: the source text
    /// or the children's summaries, the prompt template, the model, the
    /// language and the length limit. A re-run reuses a summary whose
    /// input hash is unchanged instead of asking the model again.
    pub input_hash: String,
    /// The summary.
    pub summary: String,
    /// The node IDs of the nodes summarized into this one, in document
    /// order (empty for a leaf).
    #[serde(default)]
    pub children: Vec<String>,
    /// Estimated tokens of the summary.
    pub token_count: u32,
    /// First line covered (1-based; 0 for an empty document).
    pub line_start: LineNo,
    /// Last line covered (inclusive).
    pub line_end: LineNo,
    /// `true` when the model gave nothing usable and the summary is the
    /// section's first sentences instead.
    #[serde(default)]
    pub fallback: bool,
    /// `true` when the fallback is there because the model could not be
    /// asked (the server failed, the run's budget was spent), not because
    /// it answered badly: the next run asks for this summary again instead
    /// of reusing it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unanswered: bool,
    /// For a section too long for one request: the summaries of its parts
    /// (one per chunk), which its own summary was made from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<SummaryPart>,
}

/// A part of a long section, summarized on its own first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryPart {
    /// The chunk the part is.
    pub chunk_id: String,
    /// `sha256:` of what the part's summary was made from (see
    /// [`PyramidNode::input_hash`]).
    pub input_hash: String,
    /// The part's summary.
    pub summary: String,
    /// `true` when it is a first-sentences fallback.
    #[serde(default)]
    pub fallback: bool,
    /// `true` when the model could not be asked for it (see
    /// [`PyramidNode::unanswered`]): asked again on the next run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unanswered: bool,
}

/// What building a pyramid cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PyramidStats {
    /// Summaries (nodes and parts) in the pyramid.
    pub summaries: u32,
    /// Summaries asked of the model in this run.
    pub requested: u32,
    /// Summaries taken unchanged from the previous pyramid.
    pub reused: u32,
    /// Summaries replaced by a first-sentences fallback.
    pub fallbacks: u32,
}

/// The `glossary` artifact: terms the document defines, or uses in a
/// fixed sense, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Glossary {
    /// `sha256:` of the document.
    pub doc_hash: String,
    /// The terms, in the order the document defines them.
    pub terms: Vec<GlossaryTerm>,
}

/// One defined term.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlossaryTerm {
    /// The term as the document writes it (`Service Level Objective`,
    /// `SLO`).
    pub term: String,
    /// Its definition, or the expansion of an acronym.
    pub definition: String,
    /// The section that defines it (`S0` before the first heading).
    pub section_id: String,
    /// The line of the definition.
    pub line: LineNo,
}
