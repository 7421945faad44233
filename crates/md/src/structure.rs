//! The heading tree, flat section index and anchor map of a document.
//!
//! Only structural headings count (see [`crate::scan::Scan::structural_headings`]).
//! Section IDs follow the position in the tree (`S1`, `S1.2`, …); a
//! heading's parent is the nearest previous heading of a lower level.

use crate::line_index::LineIndex;
use crate::numbering;
use crate::scan::Scan;
use crate::slug::Slugger;
use koas_review_schema::stage1::{
    AnchorMap, DuplicateAnchor, HeadingNode, HeadingStyle, HeadingTree, LineRange, SectionEntry,
    SectionIndex,
};
use std::collections::BTreeMap;

/// The three `md_structure` artifacts, built from one parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Structure {
    /// The `heading_tree` artifact: structural headings nested by level.
    pub tree: HeadingTree,
    /// The `section_index` artifact: the same sections as a flat list with
    /// their line ranges.
    pub sections: SectionIndex,
    /// The `anchor_map` artifact: each heading's GitHub-compatible anchor,
    /// unique in the document.
    pub anchors: AnchorMap,
}

/// Builds the structure of an indexed, scanned document. `doc_hash` is
/// copied into the artifacts.
pub fn build(index: &LineIndex<'_>, scan: &Scan, doc_hash: &str) -> Structure {
    let line_count = index.line_count();
    let mut slugger = Slugger::new();
    let mut bases: Vec<String> = Vec::new();
    let mut flat: Vec<SectionEntry> = Vec::new();
    // Indices into `flat` of the open sections, outermost first.
    let mut stack: Vec<usize> = Vec::new();
    let mut root_count = 0u32;
    let mut child_counts: Vec<u32> = Vec::new();

    for h in scan.structural_headings() {
        let line_start = index.line_of(h.range.start);
        let heading_line_end = index.last_line_of(h.range.start, h.range.end);
        while let Some(&top) = stack.last() {
            if flat[top].level >= h.level {
                flat[top].line_end = line_start.saturating_sub(1);
                stack.pop();
            } else {
                break;
            }
        }
        if let Some(prev) = flat.last_mut() {
            prev.body_line_end = line_start.saturating_sub(1);
        }
        let (id, parent, depth) = match stack.last() {
            Some(&p) => {
                child_counts[p] += 1;
                let id = format!("{}.{}", flat[p].id, child_counts[p]);
                (id, Some(p), flat[p].depth + 1)
            }
            None => {
                root_count += 1;
                (format!("S{root_count}"), None, 1)
            }
        };
        let (anchor, base) = slugger.slug(&h.title);
        bases.push(base);
        let me = flat.len();
        if let Some(p) = parent {
            let child_id = id.clone();
            flat[p].children.push(child_id);
        }
        flat.push(SectionEntry {
            id,
            level: h.level,
            depth,
            parent: parent.map(|p| flat[p].id.clone()),
            children: Vec::new(),
            title: h.title.clone(),
            anchor,
            style: if h.setext {
                HeadingStyle::Setext
            } else {
                HeadingStyle::Atx
            },
            line_start,
            heading_line_end,
            body_line_end: line_count,
            line_end: line_count,
            numbering: numbering::detect(&h.title),
        });
        child_counts.push(0);
        stack.push(me);
    }

    let preamble = match flat.first() {
        Some(first) if first.line_start > 1 => Some(LineRange {
            line_start: 1,
            line_end: first.line_start - 1,
        }),
        None if line_count > 0 => Some(LineRange {
            line_start: 1,
            line_end: line_count,
        }),
        _ => None,
    };
    let tree = HeadingTree {
        doc_hash: doc_hash.to_string(),
        line_count,
        heading_count: u32::try_from(flat.len()).unwrap_or(u32::MAX),
        max_depth: flat.iter().map(|s| s.depth).max().unwrap_or(0),
        max_level: flat.iter().map(|s| s.level).max().unwrap_or(0),
        preamble,
        roots: nest(&flat),
    };
    let anchors = anchor_map(&flat, &bases);
    Structure {
        tree,
        sections: SectionIndex {
            doc_hash: doc_hash.to_string(),
            line_count,
            sections: flat,
        },
        anchors,
    }
}

/// Rebuilds the nested tree from the flat list (in document order, each
/// section's children following it).
fn nest(flat: &[SectionEntry]) -> Vec<HeadingNode> {
    // Build bottom-up: walk backwards so that children are complete when
    // their parent is reached; no recursion, whatever the depth.
    let mut built: Vec<Option<HeadingNode>> = vec![None; flat.len()];
    let position: BTreeMap<&str, usize> = flat
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    for i in (0..flat.len()).rev() {
        let s = &flat[i];
        let children = s
            .children
            .iter()
            .filter_map(|c| position.get(c.as_str()))
            .filter_map(|&ci| built[ci].take())
            .collect();
        built[i] = Some(HeadingNode {
            id: s.id.clone(),
            level: s.level,
            title: s.title.clone(),
            anchor: s.anchor.clone(),
            style: s.style,
            line_start: s.line_start,
            heading_line_end: s.heading_line_end,
            body_line_end: s.body_line_end,
            line_end: s.line_end,
            numbering: s.numbering.clone(),
            children,
        });
    }
    flat.iter()
        .zip(built)
        .filter(|(s, _)| s.parent.is_none())
        .filter_map(|(_, node)| node)
        .collect()
}

fn anchor_map(flat: &[SectionEntry], bases: &[String]) -> AnchorMap {
    let mut anchors = BTreeMap::new();
    let mut groups: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (s, base) in flat.iter().zip(bases) {
        anchors.insert(s.anchor.clone(), s.id.clone());
        let entry = groups.entry(base.as_str()).or_default();
        if entry.is_empty() {
            order.push(base.as_str());
        }
        entry.push(s.anchor.clone());
    }
    let duplicates = order
        .into_iter()
        .filter_map(|base| {
            let list = groups.remove(base)?;
            (list.len() > 1).then(|| DuplicateAnchor {
                base: base.to_string(),
                anchors: list,
            })
        })
        .collect();
    AnchorMap {
        anchors,
        duplicates,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{scan, ScanOptions};

    fn structure(text: &str) -> Structure {
        let idx = LineIndex::new(text);
        let s = scan(&idx, ScanOptions::default());
        build(&idx, &s, "sha256:test")
    }

    fn ids(s: &Structure) -> Vec<(String, String, u32, u32)> {
        s.sections
            .sections
            .iter()
            .map(|e| (e.id.clone(), e.anchor.clone(), e.line_start, e.line_end))
            .collect()
    }

    #[test]
    fn ids_follow_tree_position() {
        let text = "# A\n## B\n### C\n## D\n# E\n#### F\n";
        let s = structure(text);
        let got: Vec<(&str, &str, Option<&str>)> = s
            .sections
            .sections
            .iter()
            .map(|e| (e.id.as_str(), e.title.as_str(), e.parent.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("S1", "A", None),
                ("S1.1", "B", Some("S1")),
                ("S1.1.1", "C", Some("S1.1")),
                ("S1.2", "D", Some("S1")),
                ("S2", "E", None),
                ("S2.1", "F", Some("S2")),
            ]
        );
        assert_eq!(s.tree.roots.len(), 2);
        assert_eq!(s.tree.roots[0].children[0].children[0].id, "S1.1.1");
        assert_eq!(s.tree.max_depth, 3);
        assert_eq!(s.tree.max_level, 4);
    }

    #[test]
    fn document_starting_at_h2_and_ranges() {
        let text = "intro\n\n## One\ntext\n### Sub\nmore\n## Two\nend\n";
        let s = structure(text);
        assert_eq!(
            ids(&s),
            vec![
                ("S1".into(), "one".into(), 3, 6),
                ("S1.1".into(), "sub".into(), 5, 6),
                ("S2".into(), "two".into(), 7, 8),
            ]
        );
        assert_eq!(s.sections.sections[0].body_line_end, 4);
        assert_eq!(s.sections.sections[0].children, vec!["S1.1".to_string()]);
        assert_eq!(
            s.tree.preamble,
            Some(LineRange {
                line_start: 1,
                line_end: 2
            })
        );
    }

    #[test]
    fn setext_headings_span_two_lines() {
        let text = "Title\n=====\n\nPart\n----\nbody\n";
        let s = structure(text);
        let e = &s.sections.sections;
        assert_eq!(
            (e[0].line_start, e[0].heading_line_end, e[0].line_end),
            (1, 2, 6)
        );
        assert_eq!(
            (e[1].id.as_str(), e[1].line_start, e[1].heading_line_end),
            ("S1.1", 4, 5)
        );
        assert_eq!(e[1].style, HeadingStyle::Setext);
        assert_eq!(s.tree.preamble, None);
    }

    #[test]
    fn duplicate_anchors_are_recorded() {
        let s = structure("# Examples\n## Examples\n## Other\n## Examples\n");
        assert_eq!(
            s.anchors.anchors.get("examples-2").map(String::as_str),
            Some("S1.3")
        );
        assert_eq!(
            s.anchors.duplicates,
            vec![DuplicateAnchor {
                base: "examples".into(),
                anchors: vec!["examples".into(), "examples-1".into(), "examples-2".into()],
            }]
        );
    }

    #[test]
    fn numbering_is_detected_on_titles() {
        let s = structure("## 2.3. Methods\n## II. Results\n");
        let n = s.sections.sections[0].numbering.clone().expect("numbered");
        assert_eq!((n.label.as_str(), n.rest.as_str()), ("2.3", "Methods"));
        assert_eq!(s.sections.sections[0].anchor, "23-methods");
        assert!(s.sections.sections[1].numbering.is_some());
    }

    #[test]
    fn no_headings_means_a_preamble_only() {
        let s = structure("just text\n");
        assert_eq!(s.tree.heading_count, 0);
        assert_eq!(
            s.tree.preamble,
            Some(LineRange {
                line_start: 1,
                line_end: 1
            })
        );
        let empty = structure("");
        assert_eq!(empty.tree.preamble, None);
        assert_eq!(empty.tree.line_count, 0);
    }
}
