//! Which summaries a pyramid is made of, and what each is made from.
//!
//! Sections at depth 1, 2 and 3 of the heading tree are the nodes of
//! levels 1, 2 and 3 (fewer with `levels` < 4); the text before the first
//! heading is the section `S0`; level 0 is the document abstract. A
//! document whose only top-level heading holds everything (a title `#`
//! over `##` sections, the usual shape) has that heading as its title: its
//! introduction feeds the abstract and its subsections are level 1, so
//! level 1 is not one summary of the whole document. A
//! section with children, above the deepest level, is summarized from its
//! children's summaries and its own introduction; any other section is a
//! leaf, summarized from all its text, deeper headings included. A leaf
//! too long for one request is summarized chunk by chunk first (its
//! parts), then from the parts' summaries.

use koas_md::LineIndex;
use koas_review_schema::pyramid::ABSTRACT_NODE_ID;
use koas_review_schema::stage1::{
    BlockKind, ChunkPlan, LineNo, ProtectedSpan, ProtectedSpans, SectionEntry, SectionIndex,
    PREAMBLE_SECTION_ID,
};

use crate::estimate_tokens;

/// The most levels a pyramid has (abstract + 3 section levels).
pub const MAX_LEVELS: u8 = 4;

/// What a node's summary is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The node's own text.
    Text(String),
    /// The summaries of these parts (one per chunk of the node), each made
    /// from its own text first.
    Parts(Vec<PartSource>),
    /// The summaries of the node's children, after its own introduction
    /// (the text between its heading and its first child; may be empty).
    Children {
        /// The introduction text.
        intro: String,
    },
}

/// A chunk of a long leaf, summarized on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartSource {
    /// The chunk's ID.
    pub chunk_id: String,
    /// The chunk's own lines.
    pub text: String,
}

/// One node to summarize.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanNode {
    /// Section ID, `S0` (preamble) or `DOC` (the abstract).
    pub node_id: String,
    /// 0 (abstract) to 3.
    pub level: u8,
    /// Heading text (the document title for the abstract).
    pub heading: String,
    /// The section's anchor (empty for `S0` and `DOC`).
    pub anchor: String,
    /// First line covered (1-based; 0 for an empty document).
    pub line_start: LineNo,
    /// Last line covered (inclusive).
    pub line_end: LineNo,
    /// `sha256:` of the covered lines.
    pub content_hash: String,
    /// Children's node IDs in document order (for [`Source::Children`]).
    pub children: Vec<String>,
    /// What the summary is made from.
    pub source: Source,
}

/// How to cut a document into pyramid nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanOptions {
    /// Levels to build, 1 (abstract only) to 4.
    pub levels: u8,
    /// A leaf larger than this (estimated tokens) is summarized from its
    /// chunks: what fits in one request with the instructions and room
    /// for the answer.
    pub max_input_tokens: u32,
}

/// A plan that cannot be made: the inputs describe different documents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// `levels` outside 1–4.
    #[error("pyramid_levels must be between 1 and {MAX_LEVELS}, not {0}")]
    Levels(u8),
    /// The section index counts other lines than the document has.
    #[error("`section_index` describes a document of {index} lines, the document has {doc}")]
    LineCount {
        /// Lines the index counts.
        index: LineNo,
        /// Lines the document has.
        doc: LineNo,
    },
}

/// The nodes of the pyramid of `text`, deepest level first (the order
/// they are built in), document order within a level.
pub fn plan(
    text: &str,
    sections: &SectionIndex,
    chunks: &ChunkPlan,
    doc_title: &str,
    spans: Option<&ProtectedSpans>,
    options: PlanOptions,
) -> Result<Vec<PlanNode>, PlanError> {
    if !(1..=MAX_LEVELS).contains(&options.levels) {
        return Err(PlanError::Levels(options.levels));
    }
    let index = LineIndex::new(text);
    let line_count = index.line_count();
    if sections.line_count != line_count {
        return Err(PlanError::LineCount {
            index: sections.line_count,
            doc: line_count,
        });
    }
    let mut nodes = Vec::new();
    let cut = Cut {
        hidden: hidden_blocks(spans),
        index: &index,
        chunks,
        options,
    };
    let (doc_start, doc_end) = if line_count == 0 {
        (0, 0)
    } else {
        (1, line_count)
    };
    if options.levels == 1 {
        nodes.push(cut.leaf(ABSTRACT_NODE_ID, 0, doc_title, "", doc_start, doc_end));
        return Ok(nodes);
    }
    let top_level: Vec<&SectionEntry> = sections.sections.iter().filter(|s| s.depth == 1).collect();
    let mut top = Vec::new();
    // Text before the first heading, when it says something.
    let first_heading = sections
        .sections
        .first()
        .map_or(line_count + 1, |s| s.line_start);
    // A preamble of front matter alone says nothing a summary could.
    let has_preamble = first_heading > 1 && cut.shows_prose(1, first_heading - 1);
    let title = match top_level.as_slice() {
        [only] if !has_preamble && !only.children.is_empty() => Some(*only),
        _ => None,
    };
    let mut abstract_intro = String::new();
    let mut abstract_heading = doc_title.to_owned();
    if has_preamble {
        let node = cut.leaf(PREAMBLE_SECTION_ID, 1, "", "", 1, first_heading - 1);
        top.push(node.node_id.clone());
        nodes.push(node);
    }
    if let Some(title) = title {
        // Depth 2 becomes level 1.
        let max_depth = u32::from(options.levels);
        abstract_heading = title.title.clone();
        abstract_intro = cut
            .text(title.heading_line_end + 1, title.body_line_end)
            .trim()
            .to_owned();
        for child in title
            .children
            .iter()
            .filter_map(|id| sections.sections.iter().find(|s| &s.id == id))
        {
            top.push(child.id.clone());
            cut.section(child, sections, max_depth, 1, &mut nodes);
        }
    } else {
        let max_depth = u32::from(options.levels - 1);
        for section in top_level {
            top.push(section.id.clone());
            cut.section(section, sections, max_depth, 0, &mut nodes);
        }
    }
    nodes.push(PlanNode {
        node_id: ABSTRACT_NODE_ID.to_owned(),
        level: 0,
        heading: abstract_heading,
        anchor: String::new(),
        line_start: doc_start,
        line_end: doc_end,
        content_hash: index.line_hash(doc_start.max(1), doc_end),
        children: top,
        source: Source::Children {
            intro: abstract_intro,
        },
    });
    // Deepest first: a node is built after everything it is made from.
    nodes.sort_by(|a, b| b.level.cmp(&a.level).then(a.line_start.cmp(&b.line_start)));
    Ok(nodes)
}

/// What a block hidden from summary prompts is called there; `None` for
/// a block shown as it is.
fn shown_as(block: &ProtectedSpan) -> Option<String> {
    match block.kind {
        BlockKind::CodeFence => {
            // The fence's language, when it names one plainly.
            let language = block
                .info
                .as_deref()
                .and_then(|i| i.split_whitespace().next())
                .filter(|l| {
                    l.len() <= 20
                        && l.chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '#'))
                });
            Some(match language {
                Some(l) => format!("{l} code block"),
                None => "code block".to_owned(),
            })
        }
        BlockKind::IndentedCode => Some("code block".to_owned()),
        BlockKind::YamlFrontMatter | BlockKind::TomlFrontMatter => Some("front matter".to_owned()),
        _ => None,
    }
}

/// The blocks summary prompts hide: first and last line and what each
/// is called, in order and disjoint (see
/// [`ProtectedSpans::labelled_blocks`]).
fn hidden_blocks(spans: Option<&ProtectedSpans>) -> Vec<(LineNo, LineNo, String)> {
    spans
        .map(|s| s.labelled_blocks(shown_as))
        .unwrap_or_default()
}

struct Cut<'a, 'b> {
    hidden: Vec<(LineNo, LineNo, String)>,
    index: &'a LineIndex<'b>,
    chunks: &'a ChunkPlan,
    options: PlanOptions,
}

impl Cut<'_, '_> {
    /// `true` when lines `start..=end` show more than blank lines and
    /// hidden blocks.
    fn shows_prose(&self, start: LineNo, end: LineNo) -> bool {
        self.text(start, end)
            .lines()
            .any(|l| !(l.trim().is_empty() || l.starts_with('[') && l.ends_with(", not shown]")))
    }

    /// Lines `start..=end` as a summary prompt shows them: each code
    /// block and front matter as one line that says what it is. A summary
    /// says what a section establishes; code is what costs a prompt most
    /// tokens and tells the model least (tables, which hold figures, and
    /// HTML, which may hold prose, stay).
    fn text(&self, start: LineNo, end: LineNo) -> String {
        if start == 0 || end < start {
            return String::new();
        }
        let mut out = String::new();
        let mut next = start;
        let first = self.hidden.partition_point(|h| h.1 < start);
        for (line_start, line_end, what) in self.hidden[first..].iter().take_while(|h| h.0 <= end) {
            let (a, z) = ((*line_start).max(start), (*line_end).min(end));
            if a > next {
                out.push_str(self.index.lines_text(next, a - 1));
                out.push('\n');
            }
            let lines = z - a + 1;
            let unit = if lines == 1 { "line" } else { "lines" };
            out.push_str(&format!("[{what}, {lines} {unit}, not shown]\n"));
            next = z + 1;
        }
        if next <= end {
            out.push_str(self.index.lines_text(next, end));
        } else {
            out.pop();
        }
        out
    }

    fn hash(&self, start: LineNo, end: LineNo) -> String {
        if start == 0 || end < start {
            return koas_kernel_api::hash::sha256("");
        }
        self.index.line_hash(start, end)
    }

    /// A node summarized from its text, or from its chunks when too long.
    fn leaf(
        &self,
        node_id: &str,
        level: u8,
        heading: &str,
        anchor: &str,
        start: LineNo,
        end: LineNo,
    ) -> PlanNode {
        let text = self.text(start, end);
        let source = if estimate_tokens(&text) > self.options.max_input_tokens {
            let parts: Vec<PartSource> = self
                .chunks
                .chunks
                .iter()
                .filter(|c| start <= c.line_start && c.line_end <= end)
                .map(|c| PartSource {
                    chunk_id: c.chunk_id.clone(),
                    text: self.text(c.line_start, c.line_end),
                })
                .filter(|p| !p.text.trim().is_empty())
                .collect();
            if parts.len() > 1 {
                Source::Parts(parts)
            } else {
                // One unsplittable chunk: the model sees what fits.
                Source::Text(text)
            }
        } else {
            Source::Text(text)
        };
        PlanNode {
            node_id: node_id.to_owned(),
            level,
            heading: heading.to_owned(),
            anchor: anchor.to_owned(),
            line_start: start,
            line_end: end,
            content_hash: self.hash(start, end),
            children: Vec::new(),
            source,
        }
    }

    /// Plans `section` and what is below it; `offset` is subtracted from
    /// heading depths (1 under a document title).
    fn section(
        &self,
        section: &SectionEntry,
        all: &SectionIndex,
        max_depth: u32,
        offset: u32,
        nodes: &mut Vec<PlanNode>,
    ) {
        let level = u8::try_from(section.depth.saturating_sub(offset)).unwrap_or(MAX_LEVELS - 1);
        if section.children.is_empty() || section.depth >= max_depth {
            nodes.push(self.leaf(
                &section.id,
                level,
                &section.title,
                &section.anchor,
                section.line_start,
                section.line_end,
            ));
            return;
        }
        let intro = self
            .text(section.heading_line_end + 1, section.body_line_end)
            .trim()
            .to_owned();
        let mut children = Vec::new();
        for child in section
            .children
            .iter()
            .filter_map(|id| all.sections.iter().find(|s| &s.id == id))
        {
            children.push(child.id.clone());
            self.section(child, all, max_depth, offset, nodes);
        }
        nodes.push(PlanNode {
            node_id: section.id.clone(),
            level,
            heading: section.title.clone(),
            anchor: section.anchor.clone(),
            line_start: section.line_start,
            line_end: section.line_end,
            content_hash: self.hash(section.line_start, section.line_end),
            children,
            source: Source::Children { intro },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_md::stage1;
    use koas_review_schema::stage1::ChunkConfig;

    fn plan_of(text: &str, levels: u8, max_input_tokens: u32) -> Vec<PlanNode> {
        let s = stage1::run("doc.md", text, ChunkConfig::default()).expect("stage 1");
        plan(
            text,
            &s.structure.sections,
            &s.chunks,
            "Doc",
            Some(&s.spans),
            PlanOptions {
                levels,
                max_input_tokens,
            },
        )
        .expect("plan")
    }

    #[test]
    fn summaries_see_a_line_for_each_code_block_and_front_matter() {
        let text = "---\ntitle: T\n---\n\n# A\n\nRun it:\n\n```go\nfmt.Println(1)\nfmt.Println(2)\n```\n\n    indented\n\n| a |\n|---|\n| 1 |\n\nDone.\n";
        let nodes = plan_of(text, 4, 10_000);
        // Front matter alone is no preamble worth a summary.
        assert!(nodes.iter().all(|n| n.node_id != "S0"), "{nodes:?}");
        let leaf = nodes.iter().find(|n| n.heading == "A").expect("A");
        let Source::Text(shown) = &leaf.source else {
            panic!("a leaf: {leaf:?}");
        };
        assert_eq!(
            shown,
            "# A\n\nRun it:\n\n[go code block, 4 lines, not shown]\n\n[code block, 1 line, not shown]\n\n| a |\n|---|\n| 1 |\n\nDone."
        );
        // Without the spans, the model sees everything.
        let s = stage1::run("doc.md", text, ChunkConfig::default()).expect("stage 1");
        let all = plan(
            text,
            &s.structure.sections,
            &s.chunks,
            "Doc",
            None,
            PlanOptions {
                levels: 4,
                max_input_tokens: 10_000,
            },
        )
        .expect("plan");
        assert!(all
            .iter()
            .any(|n| matches!(&n.source, Source::Text(t) if t.contains("fmt.Println(2)"))));
        assert!(all.iter().any(|n| n.node_id == "S0"));
    }

    #[test]
    fn regression_an_inverted_or_nested_span_hides_nothing_it_should_not() {
        // Spans a host or a person may hand in: ending before they start
        // (the shown line's count once underflowed), or inside another.
        let text = "# A\n\nOne.\n\n```\ncode\n```\n\nTwo.\n";
        let s = stage1::run("doc.md", text, ChunkConfig::default()).expect("stage 1");
        let mut spans = s.spans.clone();
        let mut inverted = spans.blocks[0].clone();
        (inverted.line_start, inverted.line_end) = (9, 3);
        let mut nested = spans.blocks[0].clone();
        (nested.line_start, nested.line_end) = (6, 6);
        spans.blocks.extend([nested, inverted]);
        let nodes = plan(
            text,
            &s.structure.sections,
            &s.chunks,
            "Doc",
            Some(&spans),
            PlanOptions {
                levels: 4,
                max_input_tokens: 10_000,
            },
        )
        .expect("plan");
        let shown: Vec<&str> = nodes
            .iter()
            .filter_map(|n| match &n.source {
                Source::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            shown,
            ["# A\n\nOne.\n\n[code block, 3 lines, not shown]\n\nTwo."]
        );
    }

    fn ids(nodes: &[PlanNode], level: u8) -> Vec<&str> {
        nodes
            .iter()
            .filter(|n| n.level == level)
            .map(|n| n.node_id.as_str())
            .collect()
    }

    const DOC: &str = "Intro text before any heading.\n\n# A\n\nA intro.\n\n## A.1\n\nText a1.\n\n### A.1.1\n\nDeep.\n\n#### A.1.1.1\n\nDeeper.\n\n## A.2\n\nText a2.\n\n# B\n\nText b.\n";

    #[test]
    fn levels_follow_the_heading_tree_and_deeper_headings_fold() {
        let nodes = plan_of(DOC, 4, 10_000);
        assert_eq!(ids(&nodes, 0), ["DOC"]);
        assert_eq!(ids(&nodes, 1), ["S0", "S1", "S2"]);
        assert_eq!(ids(&nodes, 2), ["S1.1", "S1.2"]);
        assert_eq!(ids(&nodes, 3), ["S1.1.1"]);
        let deep = nodes
            .iter()
            .find(|n| n.node_id == "S1.1.1")
            .expect("S1.1.1");
        match &deep.source {
            Source::Text(t) => assert!(t.contains("Deeper."), "the H4 is folded in: {t}"),
            other => panic!("{other:?}"),
        }
        let a = nodes.iter().find(|n| n.node_id == "S1").expect("S1");
        assert_eq!(a.children, ["S1.1", "S1.2"]);
        assert_eq!(
            a.source,
            Source::Children {
                intro: "A intro.".into()
            }
        );
        // Built deepest first.
        let levels: Vec<u8> = nodes.iter().map(|n| n.level).collect();
        assert!(levels.windows(2).all(|w| w[0] >= w[1]), "{levels:?}");
    }

    #[test]
    fn a_single_title_heading_is_the_document_and_its_sections_are_level_one() {
        let text = "# Audit\n\nThis audit covers two controls.\n\n## One\n\nFirst.\n\n### One.a\n\nDetail.\n\n#### Deep\n\nDeeper.\n\n## Two\n\nSecond.\n";
        let nodes = plan_of(text, 4, 10_000);
        assert_eq!(ids(&nodes, 1), ["S1.1", "S1.2"]);
        assert_eq!(ids(&nodes, 2), ["S1.1.1"]);
        assert_eq!(ids(&nodes, 3), ["S1.1.1.1"]);
        assert!(
            !nodes.iter().any(|n| n.node_id == "S1"),
            "the title is no node"
        );
        let doc = nodes.iter().find(|n| n.node_id == "DOC").expect("DOC");
        assert_eq!(doc.heading, "Audit");
        assert_eq!(doc.children, ["S1.1", "S1.2"]);
        assert_eq!(
            doc.source,
            Source::Children {
                intro: "This audit covers two controls.".into()
            }
        );
        // With two levels the title's sections are the leaves.
        let two = plan_of(text, 2, 10_000);
        assert_eq!(ids(&two, 1), ["S1.1", "S1.2"]);
        assert!(two
            .iter()
            .filter(|n| n.level == 1)
            .all(|n| matches!(n.source, Source::Text(_))));
        // Text before the title keeps the title an ordinary section.
        let with_preamble = plan_of(&format!("Preface.\n\n{text}"), 4, 10_000);
        assert_eq!(ids(&with_preamble, 1), ["S0", "S1"]);
    }

    #[test]
    fn fewer_levels_make_shallower_leaves() {
        let nodes = plan_of(DOC, 2, 10_000);
        assert_eq!(ids(&nodes, 1), ["S0", "S1", "S2"]);
        assert!(ids(&nodes, 2).is_empty());
        let one = plan_of(DOC, 1, 10_000);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].node_id, "DOC");
    }

    #[test]
    fn no_heading_one_giant_section_and_empty_documents() {
        let nodes = plan_of("Just prose.\nMore prose.\n", 4, 10_000);
        assert_eq!(ids(&nodes, 1), ["S0"]);
        assert_eq!(ids(&nodes, 0), ["DOC"]);
        let mut giant = String::from("# Only\n\n");
        for i in 0..400 {
            giant.push_str(&format!(
                "Paragraph {i} says something about the system and its limits.\n\n"
            ));
        }
        let nodes = plan_of(&giant, 4, 500);
        let only = nodes.iter().find(|n| n.node_id == "S1").expect("S1");
        match &only.source {
            Source::Parts(parts) => assert!(parts.len() > 1),
            other => panic!("a long leaf is summarized by parts: {other:?}"),
        }
        let empty = plan_of("", 4, 10_000);
        assert_eq!(empty.len(), 1);
        assert_eq!((empty[0].line_start, empty[0].line_end), (0, 0));
    }

    #[test]
    fn five_hundred_sections_give_one_node_each() {
        let mut doc = String::new();
        for i in 0..500 {
            doc.push_str(&format!("## Section {i}\n\nBody {i}.\n\n"));
        }
        let nodes = plan_of(&doc, 4, 10_000);
        assert_eq!(ids(&nodes, 1).len(), 500);
        assert_eq!(nodes.len(), 501);
    }

    #[test]
    fn wrong_levels_and_mismatched_index_are_errors() {
        let s = stage1::run("doc.md", DOC, ChunkConfig::default()).expect("stage 1");
        let options = PlanOptions {
            levels: 5,
            max_input_tokens: 100,
        };
        assert_eq!(
            plan(DOC, &s.structure.sections, &s.chunks, "D", None, options),
            Err(PlanError::Levels(5))
        );
        let options = PlanOptions {
            levels: 4,
            max_input_tokens: 100,
        };
        assert!(matches!(
            plan(
                "other\n",
                &s.structure.sections,
                &s.chunks,
                "D",
                None,
                options
            ),
            Err(PlanError::LineCount { .. })
        ));
    }
}
