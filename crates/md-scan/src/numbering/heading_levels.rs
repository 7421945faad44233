//! Heading level continuity: a heading may go down only one level at a
//! time (H2 then H4 skips H3). The first heading may have any level.

use super::KERNEL;
use crate::document::Document;
use koas_review_schema::findings::{Finding, FindingKind};

/// Reports headings more than one level below the previous heading.
pub fn detect(doc: &Document<'_>, out: &mut Vec<Finding>) {
    let sections = &doc.stage1.sections.sections;
    for pair in sections.windows(2) {
        let (prev, cur) = (&pair[0], &pair[1]);
        if cur.level > prev.level + 1 {
            let hashes = "#".repeat(usize::from(cur.level));
            out.push(Finding::new(
                FindingKind::HeadingLevelSkip,
                KERNEL,
                cur.line_start,
                cur.heading_line_end,
                format!(
                    "This level-{} heading follows a level-{} heading (line {}): level {} is skipped, which breaks the outline and tables of contents",
                    cur.level,
                    prev.level,
                    prev.line_start,
                    prev.level + 1
                ),
                &format!("{hashes} {}", cur.title),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;

    #[test]
    fn skips_down_are_reported_and_jumps_up_are_not() {
        let text = "## A\n\n#### B\n\n##### C\n\n# D\n\n### E\n\nF\n===\n";
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let mut out = Vec::new();
        detect(&doc, &mut out);
        let lines: Vec<u32> = out.iter().map(|f| f.line).collect();
        assert_eq!(lines, [3, 9]);
        assert!(out[0].message.contains("level 3 is skipped"));
    }
}
