//! Heading checks: level continuity (a heading may go down only one level
//! at a time: H2 then H4 skips H3; the first heading may have any level)
//! and empty headings (`##` with no text, as document converters leave).
//!
//! Both have a certain fix. A skip is closed by renumbering the levels the
//! way an outline reads them: each heading one level below its parent, its
//! own sub-headings moving with it (H2, H4, H5 becomes H2, H3, H4). An empty
//! heading line is removed, with one of the blank lines around it.

use super::KERNEL;
use crate::document::Document;
use koas_review_schema::findings::{Finding, FindingKind, Fix, FixEdit};
use koas_review_schema::stage1::{HeadingStyle, SectionEntry};

/// The level each heading gets once no level is skipped: one below the
/// nearest previous heading of a lower original level (the first heading,
/// and any heading with no such parent, keep theirs).
fn outline_levels(sections: &[SectionEntry]) -> Vec<u8> {
    let mut stack: Vec<(u8, u8)> = Vec::new();
    let mut out = Vec::with_capacity(sections.len());
    for s in sections {
        while stack.last().is_some_and(|&(orig, _)| orig >= s.level) {
            stack.pop();
        }
        let new = match stack.last() {
            Some(&(_, parent)) => (parent + 1).min(s.level),
            None => s.level,
        };
        stack.push((s.level, new));
        out.push(new);
    }
    out
}

/// `line` with its ATX marker set to `level` hashes, or `None` when it is
/// not an ATX heading line.
fn with_level(line: &str, level: u8) -> Option<String> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[indent..];
    let hashes = rest.len() - rest.trim_start_matches('#').len();
    if indent > 3 || hashes == 0 || hashes > 6 {
        return None;
    }
    Some(format!(
        "{}{}{}",
        &line[..indent],
        "#".repeat(usize::from(level)),
        &rest[hashes..]
    ))
}

/// Reports level skips and empty headings.
pub fn detect(doc: &Document<'_>, check_levels: bool, out: &mut Vec<Finding>) {
    let sections = &doc.stage1.sections.sections;
    for s in sections {
        if s.style == HeadingStyle::Atx && s.title.trim().is_empty() {
            out.push(empty_heading(doc, s));
        }
    }
    if !check_levels {
        return;
    }
    let levels = outline_levels(sections);
    let mut skips: Vec<Finding> = Vec::new();
    let mut edits: Vec<Vec<FixEdit>> = Vec::new();
    for (i, cur) in sections.iter().enumerate() {
        let skipped = i > 0 && cur.level > sections[i - 1].level + 1;
        if skipped {
            let prev = &sections[i - 1];
            let hashes = "#".repeat(usize::from(cur.level));
            skips.push(
                Finding::new(
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
                ),
            );
            edits.push(Vec::new());
        }
        // A heading whose level moves belongs to the last skip before it:
        // the skip itself or one of its sub-headings.
        if levels[i] != cur.level {
            let line = doc.line(cur.line_start);
            if let (Some(list), Some(after)) = (edits.last_mut(), with_level(line, levels[i])) {
                list.push(FixEdit {
                    line: cur.line_start,
                    before: line.to_string(),
                    after: Some(after),
                });
            }
        }
    }
    for (finding, edits) in skips.into_iter().zip(edits) {
        let fixes_itself = edits.first().is_some_and(|e| e.line == finding.line);
        out.push(if fixes_itself {
            let moved = edits.len() - 1;
            let description = if moved == 0 {
                "raise the heading one level per step".to_string()
            } else {
                format!("raise the heading and its {moved} sub-heading(s)")
            };
            finding.with_fix(Fix { description, edits })
        } else {
            finding
        });
    }
}

/// The finding for an empty ATX heading, with the fix that removes it.
fn empty_heading(doc: &Document<'_>, s: &SectionEntry) -> Finding {
    let line = s.line_start;
    let blank = |l: u32| l >= 1 && l <= doc.line_count() && doc.index.is_blank(l);
    let mut edits = vec![FixEdit {
        line,
        before: doc.line(line).to_string(),
        after: None,
    }];
    // Keep one blank line where the heading stood, not two.
    if blank(line + 1) && (line == 1 || blank(line - 1)) {
        edits.push(FixEdit {
            line: line + 1,
            before: doc.line(line + 1).to_string(),
            after: None,
        });
    }
    Finding::new(
        FindingKind::EmptyHeading,
        KERNEL,
        line,
        line,
        "This heading has no text: it shows as an empty line in the outline and tables of contents; remove it or give it a title",
        doc.line(line),
    )
    .with_fix(Fix {
        description: "remove the empty heading".into(),
        edits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;

    fn scan(text: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let mut out = Vec::new();
        detect(&doc, true, &mut out);
        out
    }

    #[test]
    fn skips_down_are_reported_and_jumps_up_are_not() {
        let out = scan("## A\n\n#### B\n\n##### C\n\n# D\n\n### E\n\nF\n===\n");
        let lines: Vec<u32> = out.iter().map(|f| f.line).collect();
        assert_eq!(lines, [3, 9]);
        assert!(out[0].message.contains("level 3 is skipped"));
    }

    #[test]
    fn the_fix_moves_the_heading_and_its_sub_headings() {
        let out = scan("## A\n\n#### B\n\n##### C\n\n#### D\n\n## E\n\n#### F\n");
        let fix = out[0].fix.as_ref().expect("a fix");
        let after: Vec<(u32, &str)> = fix
            .edits
            .iter()
            .map(|e| (e.line, e.after.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(after, [(3, "### B"), (5, "#### C"), (7, "### D")]);
        let second = out[1].fix.as_ref().expect("a fix");
        assert_eq!(second.edits.len(), 1);
        assert_eq!(second.edits[0].after.as_deref(), Some("### F"));
        assert_eq!(outline_levels(&[]), Vec::<u8>::new());
    }

    #[test]
    fn empty_headings_are_reported_with_a_removal() {
        let out = scan("# T\n\ntext\n\n##\n\nmore\n\n### \nx\n");
        let empty: Vec<&Finding> = out
            .iter()
            .filter(|f| f.kind == FindingKind::EmptyHeading)
            .collect();
        assert_eq!(empty.len(), 2, "{out:?}");
        assert_eq!(empty[0].line, 5);
        let lines: Vec<u32> = empty[0]
            .fix
            .as_ref()
            .map(|f| f.edits.iter().map(|e| e.line).collect())
            .unwrap_or_default();
        assert_eq!(lines, [5, 6], "the heading and one blank line");
        let lines: Vec<u32> = empty[1]
            .fix
            .as_ref()
            .map(|f| f.edits.iter().map(|e| e.line).collect())
            .unwrap_or_default();
        assert_eq!(lines, [9]);
        assert!(scan("# T\n\n#hashtag is text\n").is_empty());
    }
}
