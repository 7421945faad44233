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

/// How many times one document makes the same level skip (level 3 to 6,
/// say) before it is taken for its convention rather than a slip: a
/// template that puts its questions at level 6 under level-3 headings.
pub const CONVENTION_REPEATS: usize = 3;

/// How many headings of one title at one level make it a recurring slot
/// of the document's layout ("Further information" after each answer).
const RECURRING_TITLES: usize = 2;

/// Parses `accept_level_skips` entries (`"3-6"`): the (from, to) level
/// pairs never reported. The error names the entry.
pub fn accepted_skips(entries: &[String]) -> Result<Vec<(u8, u8)>, String> {
    entries
        .iter()
        .map(|e| {
            let pair = e.split_once('-').and_then(|(a, b)| {
                let (a, b) = (a.trim().parse::<u8>().ok()?, b.trim().parse::<u8>().ok()?);
                ((1..=6).contains(&a) && (1..=6).contains(&b) && b > a + 1).then_some((a, b))
            });
            pair.ok_or_else(|| {
                format!("{e:?} is not a level skip: write \"FROM-TO\" with levels 1 to 6, TO at least FROM + 2 (\"3-6\")")
            })
        })
        .collect()
}

/// Reports empty headings only (level checks turned off).
pub fn detect_empty(doc: &Document<'_>, out: &mut Vec<Finding>) {
    for s in &doc.stage1.sections.sections {
        if s.style == HeadingStyle::Atx && s.title.trim().is_empty() {
            out.push(empty_heading(doc, s));
        }
    }
}

/// Reports level skips and empty headings. A skip of a level pair in
/// `accepted` is never reported; a pair the document skips
/// [`CONVENTION_REPEATS`] times or more is its convention: said once, as
/// info, with the count and the lines, and never fixed.
pub fn detect(doc: &Document<'_>, accepted: &[(u8, u8)], out: &mut Vec<Finding>) {
    detect_empty(doc, out);
    let sections = &doc.stage1.sections.sections;
    let repeats = skip_repeats(sections, accepted);
    report_conventions(sections, &repeats, out);
    let (skips, edits) = skips_and_moves(doc, accepted, &repeats, out);
    report_skips(skips, edits, out);
}

/// The lines of each skipped level pair not in `accepted`, by pair.
type Repeats = std::collections::BTreeMap<(u8, u8), Vec<u32>>;

/// The skips of `sections` not in `accepted`, by level pair.
fn skip_repeats(sections: &[SectionEntry], accepted: &[(u8, u8)]) -> Repeats {
    let mut repeats = Repeats::new();
    for pair in sections.windows(2) {
        let (prev, cur) = (pair[0].level, pair[1].level);
        if cur > prev + 1 && !accepted.contains(&(prev, cur)) {
            repeats
                .entry((prev, cur))
                .or_default()
                .push(pair[1].line_start);
        }
    }
    repeats
}

/// Whether the document skips `pair` often enough for it to be its
/// convention.
fn is_convention(repeats: &Repeats, pair: &(u8, u8)) -> bool {
    repeats
        .get(pair)
        .is_some_and(|l| l.len() >= CONVENTION_REPEATS)
}

/// Reports each conventional skip once, as info, with its count and lines.
fn report_conventions(sections: &[SectionEntry], repeats: &Repeats, out: &mut Vec<Finding>) {
    for (&(prev, cur), lines) in repeats.iter().filter(|(p, _)| is_convention(repeats, p)) {
        let Some(first) = sections.iter().find(|s| s.line_start == lines[0]) else {
            continue;
        };
        let shown: Vec<String> = lines.iter().take(12).map(u32::to_string).collect();
        let more = if lines.len() > 12 { ", …" } else { "" };
        let mut finding = Finding::new(
            FindingKind::HeadingLevelSkip,
            KERNEL,
            first.line_start,
            first.heading_line_end,
            format!(
                "Level-{cur} headings follow level-{prev} headings {} times (lines {}{more}): level {} is skipped each time, which reads as the document's convention. If it is, accept it in koas.toml: [numbering] accept_level_skips = [\"{prev}-{cur}\"]",
                lines.len(),
                shown.join(", "),
                prev + 1
            ),
            &format!("{} {}", "#".repeat(usize::from(cur)), first.title),
        );
        finding.severity = koas_review_schema::findings::Severity::Info;
        out.push(finding);
    }
}

/// The document's conventions. A skip that is not a repeated pair may
/// still follow one: it starts from, or lands on, a level a repeated pair
/// uses (a design template's level-5 "Prerequisite testing updates"
/// under level 3, beside its level-6 questions), or it lands on a
/// recurring sub-heading (the same title at the same level twice or
/// more: an FAQ's "Further information" after every answer). Said as
/// info, never fixed.
struct Conventions<'r> {
    repeats: &'r Repeats,
    /// The conventional skip pairs.
    pairs: Vec<(u8, u8)>,
    /// How many times each (level, lowercased title) heading occurs.
    recurring: std::collections::HashMap<(u8, String), usize>,
}

impl<'r> Conventions<'r> {
    fn new(sections: &[SectionEntry], repeats: &'r Repeats) -> Conventions<'r> {
        let mut recurring: std::collections::HashMap<(u8, String), usize> = Default::default();
        for s in sections {
            *recurring
                .entry((s.level, s.title.trim().to_lowercase()))
                .or_default() += 1;
        }
        let pairs = repeats
            .keys()
            .filter(|p| is_convention(repeats, p))
            .copied()
            .collect();
        Conventions {
            repeats,
            pairs,
            recurring,
        }
    }

    /// Why the skip to heading `i` follows the document's convention, if
    /// it does.
    fn reason(&self, sections: &[SectionEntry], i: usize) -> Option<String> {
        let (prev, cur) = (sections[i - 1].level, sections[i].level);
        if let Some(&(a, b)) = self.pairs.iter().find(|&&(a, b)| a == prev || b == cur) {
            return Some(format!(
                "the document skips from level {a} to level {b} {} times",
                self.repeats.get(&(a, b)).map_or(0, Vec::len)
            ));
        }
        let title = sections[i].title.trim().to_lowercase();
        let times = self.recurring.get(&(cur, title)).copied().unwrap_or(0);
        (times >= RECURRING_TITLES).then(|| {
            format!(
                "“{}” is a level-{cur} heading {times} times in the document",
                sections[i].title.trim()
            )
        })
    }
}

/// One entry per reported or deliberate skip: its finding (`None` for a
/// deliberate one, reported here as info) and the heading moves of its fix.
fn skips_and_moves(
    doc: &Document<'_>,
    accepted: &[(u8, u8)],
    repeats: &Repeats,
    out: &mut Vec<Finding>,
) -> (Vec<Option<Finding>>, Vec<Vec<FixEdit>>) {
    let sections = &doc.stage1.sections.sections;
    let levels = outline_levels(sections);
    let pair_of = |i: usize| (sections[i - 1].level, sections[i].level);
    let conventions = Conventions::new(sections, repeats);
    // A deliberate skip's sub-headings move with nothing.
    let mut skips: Vec<Option<Finding>> = Vec::new();
    let mut edits: Vec<Vec<FixEdit>> = Vec::new();
    for (i, cur) in sections.iter().enumerate() {
        let skipped = i > 0 && cur.level > sections[i - 1].level + 1;
        let reported =
            skipped && !accepted.contains(&pair_of(i)) && !is_convention(repeats, &pair_of(i));
        let deliberate = if reported {
            conventions.reason(sections, i)
        } else {
            None
        };
        if let Some(reason) = deliberate {
            let prev = &sections[i - 1];
            let mut finding = Finding::new(
                FindingKind::HeadingLevelSkip,
                KERNEL,
                cur.line_start,
                cur.heading_line_end,
                format!(
                    "This level-{} heading follows a level-{} heading (line {}): level {} is skipped, as the document's convention seems to be ({reason}); not fixed",
                    cur.level,
                    prev.level,
                    prev.line_start,
                    prev.level + 1
                ),
                &format!("{} {}", "#".repeat(usize::from(cur.level)), cur.title),
            );
            finding.severity = koas_review_schema::findings::Severity::Info;
            out.push(finding);
            skips.push(None);
            edits.push(Vec::new());
        } else if reported {
            let prev = &sections[i - 1];
            let hashes = "#".repeat(usize::from(cur.level));
            skips.push(Some(
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
            ));
            edits.push(Vec::new());
        } else if skipped {
            skips.push(None);
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
    (skips, edits)
}

/// Reports each skip, with the fix that moves its heading and
/// sub-headings when the skip's own heading moves.
fn report_skips(skips: Vec<Option<Finding>>, edits: Vec<Vec<FixEdit>>, out: &mut Vec<Finding>) {
    for (finding, edits) in skips.into_iter().zip(edits) {
        let Some(finding) = finding else {
            continue;
        };
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
        scan_accepting(text, &[])
    }

    fn scan_accepting(text: &str, accepted: &[(u8, u8)]) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let mut out = Vec::new();
        detect(&doc, accepted, &mut out);
        out
    }

    /// A design-proposal template: questions at level 6 under level-3
    /// headings, `n` times, and one accidental 2 → 4 skip.
    fn template(n: usize) -> String {
        let mut text = String::from("# Proposal\n\n## Design\n\n#### Slip\n\n");
        for i in 1..=n {
            text.push_str(&format!(
                "### Part {i}\n\n###### Question {i}?\n\nAnswer.\n\n"
            ));
        }
        text
    }

    /// Regression (issue 31, false pattern 4): a level pair skipped again
    /// and again is the document's convention: said once, as info, with
    /// the count and the lines, and never fixed; an isolated skip in the
    /// same document stays a warning with its fix.
    #[test]
    fn a_skip_repeated_by_a_template_is_said_once_and_never_fixed() {
        let out = scan(&template(5));
        assert_eq!(out.len(), 2, "{out:?}");
        let convention = out
            .iter()
            .find(|f| f.message.contains("times"))
            .expect("the convention finding");
        assert_eq!(
            convention.severity,
            koas_review_schema::findings::Severity::Info
        );
        assert!(convention.fix.is_none());
        assert!(
            convention.message.starts_with(
                "Level-6 headings follow level-3 headings 5 times (lines 9, 15, 21, 27, 33): level 4 is skipped each time"
            ) && convention.message.contains("accept_level_skips = [\"3-6\"]"),
            "{}",
            convention.message
        );
        let slip = out.iter().find(|f| f.line == 5).expect("the slip");
        assert_eq!(
            slip.severity,
            koas_review_schema::findings::Severity::Warning
        );
        let fix = slip.fix.as_ref().expect("the slip is fixed");
        assert_eq!(fix.edits.len(), 1, "the template's headings do not move");
        // Twice is not yet a convention: each is its own warning.
        let out = scan(&template(2));
        assert_eq!(out.len(), 3, "{out:?}");
        assert!(out
            .iter()
            .all(|f| f.severity == koas_review_schema::findings::Severity::Warning));
        // Accepted in koas.toml: nothing is said of that pair.
        let out = scan_accepting(&template(5), &[(3, 6)]);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].line, 5);
    }

    /// Regression (issue 31, false pattern 4, on held-out documents): a
    /// design template's single level-5 slot under level 3, next to its
    /// level-6 questions, and an FAQ's recurring "Further information"
    /// were warnings each.
    #[test]
    fn skips_that_follow_the_documents_convention_are_info() {
        let mut kep = template(4);
        kep.push_str("### Test Plan\n\n##### Prerequisite testing updates\n\nNone.\n");
        let out = scan(&kep);
        let slot = out
            .iter()
            .find(|f| f.message.contains("level-5"))
            .expect("the slot");
        assert_eq!(slot.severity, koas_review_schema::findings::Severity::Info);
        assert!(slot.fix.is_none());
        assert!(
            slot.message.contains("from level 3 to level 6 4 times"),
            "{}",
            slot.message
        );
        // The unrelated 2 → 4 slip stays a warning.
        assert!(out
            .iter()
            .any(|f| f.line == 5 && f.severity == koas_review_schema::findings::Severity::Warning));
        let faq = "# FAQ\n\n## Why?\n\n#### Further information\n\n## How?\n\n### Detail\n\n#### Further information\n\n## When?\n\n#### Further information\n";
        let out = scan(faq);
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(out.iter().all(
            |f| f.severity == koas_review_schema::findings::Severity::Info
                && f.message
                    .contains("“Further information” is a level-4 heading 3 times")
        ));
        let twice =
            "# FAQ\n\n## Why?\n\n#### Further information\n\n## How?\n\n#### Further information\n";
        assert!(scan(twice)
            .iter()
            .all(|f| f.severity == koas_review_schema::findings::Severity::Info));
        let distinct = "# API\n\n## Examples\n\n#### Example: logger\n\n#### Example: thunk\n";
        let out = scan(distinct);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(
            out[0].severity,
            koas_review_schema::findings::Severity::Warning
        );
    }

    #[test]
    fn accepted_skips_parse_and_name_a_bad_entry() {
        assert_eq!(
            accepted_skips(&["3-6".into(), " 1 - 3 ".into()]),
            Ok(vec![(3, 6), (1, 3)])
        );
        for bad in ["3-4", "6-3", "0-2", "3to6", "3-9"] {
            let e = accepted_skips(&[bad.to_owned()]).expect_err(bad);
            assert!(e.contains(bad), "{e}");
        }
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
