//! Renumbering proposals (`renumber_ops`): for each figure, table or
//! equation sequence that has a gap, a duplicate or an inversion, the
//! captions renumbered 1, 2, 3… in document order. Each operation lists the
//! lines whose references use the old number, for a person (or a later
//! kernel) to update with it; nothing is applied here.

use super::captions::{Caption, CaptionKind, TargetRef};
use koas_review_schema::numbering::RenumberOp;
use std::collections::BTreeMap;

/// Proposes renumbering for every sequence that is not 1, 2, 3….
pub fn propose(captions: &[Caption], refs: &[TargetRef]) -> Vec<RenumberOp> {
    let mut sequences: BTreeMap<(CaptionKind, Option<u32>), Vec<&Caption>> = BTreeMap::new();
    for c in captions {
        sequences.entry((c.kind, c.number.0)).or_default().push(c);
    }
    let mut ops = Vec::new();
    for ((kind, prefix), seq) in sequences {
        let in_order = seq
            .iter()
            .enumerate()
            .all(|(i, c)| c.number.1 as usize == i + 1);
        if in_order {
            continue;
        }
        for (i, c) in seq.iter().enumerate() {
            let new = (i + 1) as u32;
            if c.number.1 == new {
                continue;
            }
            let number = match prefix {
                Some(p) => format!("{p}.{new}"),
                None => new.to_string(),
            };
            ops.push(RenumberOp {
                target: kind.name().to_string(),
                line: c.line,
                from: c.label.clone(),
                to: format!("{} {number}", c.word),
                references: refs
                    .iter()
                    .filter(|r| r.kind == kind && r.number == c.number)
                    .map(|r| r.line)
                    .collect(),
            });
        }
    }
    ops.sort_by_key(|o| o.line);
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::NumberingConfig;
    use crate::document::test_support::stage1;
    use crate::document::Document;
    use crate::numbering::CaptionScan;

    #[test]
    fn renumbers_gapped_sequences_and_lists_references() {
        let text = "# T\n\nSee Figure 3.\n\nFigure 1: a\n\nFigure 3: b\n\nTable 1: c\n";
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let (captions, refs) = CaptionScan::new(&NumberingConfig::default())
            .expect("ok")
            .collect(&doc);
        let ops = propose(&captions, &refs);
        assert_eq!(
            ops,
            [RenumberOp {
                target: "figure".into(),
                line: 7,
                from: "Figure 3".into(),
                to: "Figure 2".into(),
                references: vec![3],
            }]
        );
    }
}
