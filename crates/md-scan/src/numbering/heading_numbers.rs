//! Numbered headings: a run of sibling heading numbers that jumps (5, 6,
//! 11) or repeats (6, 6); headings labelled with a word and a number
//! ("Step 3", "Étape 2", "Article 12") checked the same way; and references
//! in the text to a labelled number no heading carries ("see step 5" when
//! the steps are 1 to 4).
//!
//! Precision first, because documents number things on purpose in many
//! ways: siblings are headings of one level under one parent (numbering
//! restarts under each parent), a run is only judged when every other step
//! in it is +1 (so versions, years and hand-picked numbers, which never
//! step regularly, stay silent), and it must hold three headings, or two
//! when it starts at 0 or 1. A run that goes backwards is a restart, not a
//! mistake. A labelled family needs two headings and must start at 0 or 1
//! ("Vue 2" and "Vue 3" are product versions, not steps); a reference to
//! it is the label followed by a number in the text, except where the text
//! itself labels something with that number ("Step 5: clean up" in a list).

use super::KERNEL;
use crate::document::Document;
use crate::evidence::around;
use koas_review_schema::findings::{Finding, FindingKind, Severity};
use koas_review_schema::stage1::{NumberingKind, SectionEntry};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The number (1 to 3 digits) at the start of `text`, and the rest.
/// Parsed by hand: a Unicode regex costs more to compile than `koas
/// check` spends on a small document.
fn leading_digits(text: &str) -> Option<(u32, &str)> {
    let end = text
        .char_indices()
        .find(|&(_, c)| !c.is_ascii_digit())
        .map_or(text.len(), |(i, _)| i);
    if end == 0 || end > 3 {
        return None;
    }
    Some((text[..end].parse().ok()?, &text[end..]))
}

/// A title that starts with a bare number and a capitalised word
/// (`5 Security Considerations`), which Stage 1 does not take for a number
/// (`2024 Roadmap` would be one too; runs of them must step by 1).
fn bare_number(title: &str) -> Option<u32> {
    let (value, rest) = leading_digits(title.trim_start())?;
    let after = rest.trim_start();
    (after.len() < rest.len() && after.starts_with(char::is_uppercase)).then_some(value)
}

/// Label words that name a version, a product or a caption, not a part of
/// this document (captions have their own checks).
const NOT_LABELS: &[&str] = &[
    "figure",
    "fig",
    "table",
    "tableau",
    "equation",
    "équation",
    "eq",
    "version",
    "release",
    "rfc",
    "iso",
    "python",
    "java",
    "level",
    "niveau",
    "tier",
    "top",
    "node",
    "php",
    "http",
    "ios",
    "android",
    "windows",
    "macos",
    "ubuntu",
    "debian",
    "fedora",
    "vue",
    "react",
    "angular",
    "jdk",
    "api",
];

/// One numbered heading of a run.
#[derive(Debug, Clone)]
struct Numbered {
    line: u32,
    value: u32,
    /// The number as written (`6.`, `2.4`, `Step 6`).
    label: String,
}

/// Which run a heading belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum RunKey {
    /// Stage 1 numbering: level, scheme, the parts before the last, and
    /// the parent section for single-part numbers (they restart under
    /// each parent).
    Numbered(u8, u8, Vec<u32>, Option<String>),
    /// A bare leading number (`5 Title`), per level and parent.
    Bare(u8, Option<String>),
    /// A labelled heading, per word, level and parent.
    Labelled(String, u8, Option<String>),
}

fn kind_code(kind: NumberingKind) -> u8 {
    match kind {
        NumberingKind::Arabic => 0,
        NumberingKind::Roman => 1,
        NumberingKind::Letter => 2,
    }
}

/// The labelled form of a title (`Step 3: Deploy`, `Étape 2 —`,
/// `**Case 4**(…)`): its word (lower case), number and label as written.
fn labelled(title: &str) -> Option<(String, u32, String)> {
    let start = title.trim_start().trim_start_matches(['*', '_']);
    let word_end = start
        .char_indices()
        .find(|&(_, c)| !(c.is_alphabetic() || matches!(c, '\'' | '’' | '-')))
        .map_or(start.len(), |(i, _)| i);
    let word = &start[..word_end];
    if word.chars().count() < 3 || !word.starts_with(char::is_alphabetic) {
        return None;
    }
    let rest = &start[word_end..];
    let gap = rest.trim_start();
    if gap.len() == rest.len() {
        return None;
    }
    let (value, after) = leading_digits(gap)?;
    // "Bitswap 1.2.0", "Python 3,12", "Scenario 1.a": a version or a
    // sub-number, not a label.
    if after.starts_with(['.', ',']) && after[1..].starts_with(|c: char| c.is_alphanumeric()) {
        return None;
    }
    let next = after.trim_start_matches(['*', '_']).trim_start();
    // The number must end the label: "Step 3: Deploy", "Étape 2 —",
    // "Case 4(…)", "Step 3" alone; "Stage 3 edit engine" names a topic,
    // which two sections may share.
    let delimited = next.is_empty() || next.starts_with([':', '.', ')', '(', '-', '–', '—']);
    if !delimited {
        return None;
    }
    let number = &gap[..gap.len() - after.len()];
    let lower = word.to_lowercase();
    if NOT_LABELS.contains(&lower.as_str()) {
        return None;
    }
    Some((lower, value, format!("{word} {number}")))
}

/// Every heading's run key and number.
fn runs(sections: &[SectionEntry]) -> BTreeMap<RunKey, Vec<Numbered>> {
    let mut runs: BTreeMap<RunKey, Vec<Numbered>> = BTreeMap::new();
    for s in sections {
        let entry = if let Some(n) = &s.numbering {
            let Some((&last, prefix)) = n.parts.split_last() else {
                continue;
            };
            // "### 1.18" alone is a release, not a section number.
            if n.rest.trim().is_empty() {
                continue;
            }
            // A lone I, V or X also reads as a letter ("H.", "I.", "J.").
            if n.kind == NumberingKind::Roman && n.label.len() == 1 {
                if let Some(c) = n.label.chars().next() {
                    let letter = u32::from(c.to_ascii_uppercase()) - u32::from('A') + 1;
                    runs.entry(RunKey::Numbered(
                        s.level,
                        kind_code(NumberingKind::Letter),
                        Vec::new(),
                        s.parent.clone(),
                    ))
                    .or_default()
                    .push(Numbered {
                        line: s.line_start,
                        value: letter,
                        label: n.raw.clone(),
                    });
                }
            }
            let parent = (n.parts.len() == 1).then(|| s.parent.clone()).flatten();
            (
                RunKey::Numbered(s.level, kind_code(n.kind), prefix.to_vec(), parent),
                last,
                n.raw.clone(),
            )
        } else if let Some((word, value, label)) = labelled(&s.title) {
            (
                RunKey::Labelled(word, s.level, s.parent.clone()),
                value,
                label,
            )
        } else if let Some(value) = bare_number(&s.title) {
            (
                RunKey::Bare(s.level, s.parent.clone()),
                value,
                value.to_string(),
            )
        } else {
            continue;
        };
        let (key, value, label) = entry;
        runs.entry(key).or_default().push(Numbered {
            line: s.line_start,
            value,
            label,
        });
    }
    runs
}

/// What a run numbers, whatever its level: the scheme and the prefix, or
/// the label word.
fn family(key: &RunKey) -> (u8, &str, &[u32]) {
    match key {
        RunKey::Numbered(_, kind, prefix, _) => (*kind, "", prefix),
        RunKey::Bare(_, _) => (8, "", &[]),
        RunKey::Labelled(word, _, _) => (9, word, &[]),
    }
}

fn level_of(key: &RunKey) -> u8 {
    match key {
        RunKey::Numbered(level, ..) | RunKey::Bare(level, _) | RunKey::Labelled(_, level, _) => {
            *level
        }
    }
}

/// A number of a family ([`family`] and the number): where it stands is
/// looked up by it.
type Placement<'a> = (u8, &'a str, &'a [u32], u32);

/// Where each number stands: its level and line.
type Placed<'a> = HashMap<Placement<'a>, (u8, u32)>;

/// Reports the one irregular step of each otherwise regular run.
fn check_runs(doc: &Document<'_>, runs: &BTreeMap<RunKey, Vec<Numbered>>, out: &mut Vec<Finding>) {
    let (placed, prefixes) = placements(runs);
    for (key, run) in runs {
        let starts_low = run.first().is_some_and(|h| h.value <= 1);
        if run.len() < 3 && !(run.len() == 2 && starts_low) {
            continue;
        }
        let irregular: Vec<usize> = (1..run.len())
            .filter(|&i| run[i].value != run[i - 1].value + 1)
            .collect();
        let [i] = irregular.as_slice() else {
            continue;
        };
        let (before, here) = (&run[i - 1], &run[*i]);
        let title = doc.line(here.line);
        // Two labelled headings may share a number on purpose (two
        // sections about "Phase 2"); a repeated section number may not.
        let labelled_run = matches!(key, RunKey::Labelled(..));
        let finding = if here.value == before.value && labelled_run {
            continue;
        } else if here.value == before.value {
            Finding::new(
                FindingKind::NumberingDuplicate,
                KERNEL,
                here.line,
                here.line,
                format!(
                    "Heading number {} is used twice: line {} carries it too",
                    here.label, before.line
                ),
                &around(title, 0, title.len()),
            )
        } else if here.value > before.value + 1 {
            let (kind, word, prefix) = family(key);
            let gap = before.value + 1..here.value;
            let implied = gap.clone().all(|m| {
                let mut number = prefix.to_vec();
                number.push(m);
                kind < 8 && prefixes.contains(&number)
            });
            let hidden = hidden_heading(doc, before, here);
            if implied && hidden.is_none() {
                continue;
            }
            let moved: Vec<String> = gap
                .clone()
                .filter_map(|m| {
                    placed.get(&(kind, word, prefix, m)).map(|(level, line)| {
                        format!("{m} is a level-{level} heading (line {line})")
                    })
                })
                .collect();
            let missing = if !moved.is_empty() {
                format!("{}, not level {}", moved.join(", "), level_of(key))
            } else if here.value == before.value + 2 {
                format!("{} is missing", before.value + 1)
            } else {
                format!("{}–{} are missing", before.value + 1, here.value - 1)
            };
            let why = hidden.map_or(String::new(), |l| {
                let start = (1..l)
                    .rev()
                    .take_while(|&k| doc.block_kind(k).is_some())
                    .last()
                    .unwrap_or(l);
                format!(
                    " (line {l} holds it, inside the block that starts at line {start} and is not closed before it, so it does not render as a heading)"
                )
            });
            Finding::new(
                FindingKind::NumberingGap,
                KERNEL,
                here.line,
                here.line,
                format!(
                    "Heading {} comes after {} (line {}): {missing}{why}",
                    here.label, before.label, before.line
                ),
                &around(title, 0, title.len()),
            )
        } else {
            // Backwards: numbering restarts, which documents do on purpose.
            continue;
        };
        out.push(finding);
    }
}

/// Where else each number stands: at another level (its level and line),
/// or as the prefix of deeper numbers ("4.1" and "4.2" without a "4.").
fn placements<'r>(runs: &'r BTreeMap<RunKey, Vec<Numbered>>) -> (Placed<'r>, HashSet<Vec<u32>>) {
    let mut placed: Placed<'r> = HashMap::new();
    let mut prefixes: HashSet<Vec<u32>> = HashSet::new();
    for (key, run) in runs {
        let (kind, word, prefix) = family(key);
        for h in run {
            placed
                .entry((kind, word, prefix, h.value))
                .or_insert((level_of(key), h.line));
        }
        if let RunKey::Numbered(_, _, prefix, _) = key {
            for k in 0..prefix.len() {
                prefixes.insert(prefix[..=k].to_vec());
            }
        }
    }
    (placed, prefixes)
}

/// The line of the heading missing between `before` and `here` when it is
/// there, swallowed by a block left open above it (an HTML `<pre>` without
/// its `</pre>`).
fn hidden_heading(doc: &Document<'_>, before: &Numbered, here: &Numbered) -> Option<u32> {
    (before.line + 1..here.line).find(|&l| {
        doc.block_kind(l).is_some() && {
            let t = doc.line(l).trim_start();
            let hashes = t.len() - t.trim_start_matches('#').len();
            (1..=6).contains(&hashes)
                && t[hashes..]
                    .trim_start()
                    .starts_with(&(before.value + 1).to_string())
        }
    })
}

/// The references in `prose` to a family's label: the word (whole, any
/// case) then spaces then 1 to 3 digits ending the word: `(start, end,
/// word in lower case, number)`. Scanned by hand, since the label words
/// are only known per document and a Unicode-aware regex built for each
/// one costs more than the scan.
fn label_references<V>(
    prose: &str,
    families: &HashMap<&str, V>,
) -> Vec<(usize, usize, String, u32)> {
    let mut found = Vec::new();
    // Every reference ends in ASCII digits: most prose lines have none,
    // and reading their words one character at a time is the cost.
    if !prose.bytes().any(|b| b.is_ascii_digit()) {
        return found;
    }
    let mut chars = prose.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if !c.is_alphabetic() {
            continue;
        }
        let mut end = start + c.len_utf8();
        while let Some(&(i, c)) = chars.peek() {
            if !(c.is_alphabetic() || c == '-') {
                break;
            }
            end = i + c.len_utf8();
            chars.next();
        }
        // The number first: most words are not followed by one, and
        // lowercasing every word of the document costs more.
        let rest = &prose[end..];
        let digits = rest.trim_start();
        if digits.len() == rest.len() {
            continue;
        }
        let Some((value, after)) = leading_digits(digits) else {
            continue;
        };
        if after.starts_with(char::is_alphanumeric) {
            continue;
        }
        let word = prose[start..end].to_lowercase();
        if !families.contains_key(word.as_str()) {
            continue;
        }
        found.push((start, prose.len() - after.len(), word, value));
    }
    found
}

/// Reports references ("see step 5", "l'étape 5") to a number that no
/// heading of a labelled family carries.
fn check_labelled_references(
    doc: &Document<'_>,
    runs: &BTreeMap<RunKey, Vec<Numbered>>,
    out: &mut Vec<Finding>,
) {
    // word -> (numbers carried, how the headings write the word)
    let mut families: HashMap<&str, (HashSet<u32>, usize)> = HashMap::new();
    for (key, run) in runs {
        if let RunKey::Labelled(word, _, _) = key {
            let family = families.entry(word.as_str()).or_default();
            family.0.extend(run.iter().map(|h| h.value));
            family.1 += run.len();
        }
    }
    families
        .retain(|_, (numbers, count)| *count >= 2 && numbers.iter().min().is_some_and(|&m| m <= 1));
    if families.is_empty() {
        return;
    }
    // A line that labels something itself ("Step 5: clean up" as a list
    // item) carries its number, even though no heading does.
    let mut carried: HashMap<String, HashSet<u32>> = HashMap::new();
    let mut candidates = Vec::new();
    for line in 1..=doc.line_count() {
        if doc.is_heading(line) {
            continue;
        }
        let Some(prose) = doc.prose(line) else {
            continue;
        };
        for (start, end, word, value) in label_references(prose, &families) {
            let after = &prose[end..];
            // "Step 2.1", "étape 3,5": a sub-number or a decimal.
            if after.starts_with(['.', ',']) && after[1..].starts_with(|c: char| c.is_ascii_digit())
            {
                continue;
            }
            let lead = prose[..start].trim_start_matches(|c: char| {
                c.is_whitespace() || "-*+>_#0123456789.)".contains(c)
            });
            let labels_line = lead.is_empty()
                && after
                    .trim_start_matches(['*', '_'])
                    .trim_start()
                    .starts_with([':', '.', ')', '-', '–', '—']);
            if labels_line {
                carried.entry(word).or_default().insert(value);
                continue;
            }
            // "step 3 of the install guide", "l'article 5 du règlement".
            if after.split_whitespace().next().is_some_and(|w| {
                matches!(w, "of" | "de" | "du" | "des" | "in") || w.starts_with("d'")
            }) {
                continue;
            }
            candidates.push((line, start, end, word, value));
        }
    }
    let mut reported: HashSet<(u32, String, u32)> = HashSet::new();
    for (line, start, end, word, value) in candidates {
        let Some((numbers, _)) = families.get(word.as_str()) else {
            continue;
        };
        if numbers.contains(&value) || carried.get(&word).is_some_and(|c| c.contains(&value)) {
            continue;
        }
        if !reported.insert((line, word.clone(), value)) {
            continue;
        }
        let mut known: Vec<u32> = numbers.iter().copied().collect();
        known.sort_unstable();
        let known: Vec<String> = known.iter().map(u32::to_string).collect();
        let text = &doc.line(line)[start..end];
        let mut finding = Finding::new(
            FindingKind::MissingTarget,
            KERNEL,
            line,
            line,
            format!(
                "“{text}” refers to a number no heading carries (the headings number {word} {})",
                known.join(", ")
            ),
            &around(doc.line(line), start, end),
        )
        .at_column(doc.column(line, start));
        // A heading may be planned but not written yet ("a future Phase
        // 3"): a number past the last one is info; one inside the range
        // names a heading that should be there, a warning.
        let past_the_end = numbers.iter().max().is_some_and(|&m| value > m);
        finding.severity = if past_the_end {
            Severity::Info
        } else {
            Severity::Warning
        };
        out.push(finding);
    }
}

/// Runs both heading-number checks.
pub fn detect(doc: &Document<'_>, out: &mut Vec<Finding>) {
    let runs = runs(&doc.stage1.sections.sections);
    if runs.is_empty() {
        return;
    }
    check_runs(doc, &runs, out);
    check_labelled_references(doc, &runs, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;

    fn scan(text: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let mut out = Vec::new();
        detect(&doc, &mut out);
        out
    }

    /// Regression (issue 31): numbered headings that jump (…, 5, 6, 11)
    /// were not reported.
    #[test]
    fn a_jump_in_numbered_headings_is_a_gap() {
        let text =
            "# Guide\n\n## 4. Un\n\n## 5. Deux\n\n## 6. Trois\n\n## 11. Quatre\n\n## 12. Cinq\n";
        let found = scan(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, FindingKind::NumberingGap);
        assert_eq!(found[0].line, 9);
        assert!(
            found[0].message.contains("7–10 are missing"),
            "{}",
            found[0].message
        );
        let sub = "# T\n\n## 2. A\n\n### 2.1 a\n\n### 2.2 b\n\n### 2.4 c\n";
        let found = scan(sub);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("3 is missing"));
        let dup = "# T\n\n## 1. A\n\n## 2. B\n\n## 2. C\n\n## 3. D\n";
        let found = scan(dup);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, FindingKind::NumberingDuplicate);
        let bare = "# RFC\n\n## 1 Introduction\n\n## 2 Terms\n\n## 4 Security\n";
        assert_eq!(scan(bare).len(), 1);
    }

    /// A gap made by a block left open: the message says where the
    /// missing heading is.
    #[test]
    fn a_heading_swallowed_by_an_open_block_is_named() {
        let text =
            "# T\n\n## 1. A\n\n## 2. B\n\n<pre>\ndiagram\n\n## 3. C\n\n### 3.1 c\n</pre>\n\n### 3.2 d\n\n## 4. D\n";
        let found = scan(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0]
                .message
                .contains("line 10 holds it, inside the block that starts at line 7"),
            "{}",
            found[0].message
        );
    }

    /// Regression (issue 31, on held-out documents): a number at another
    /// level is said as such; one implied by its sub-numbers ("4.1", "4.2"
    /// without "4.") is not missing; release headings ("### 1.18"), a
    /// sub-label ("Scenario 1.a") and a letter run through "I." are not
    /// gaps or repeats.
    #[test]
    fn numbers_placed_elsewhere_or_implied_are_not_missing() {
        let moved = "# A\n\n# 3. C\n\n# 4. D\n\n## 5. E\n\n# 6. F\n";
        let found = scan(moved);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0]
                .message
                .contains("5 is a level-2 heading (line 7), not level 1"),
            "{}",
            found[0].message
        );
        for text in [
            "# T\n\n##### 2. a\n\n##### 3. b\n\n##### 4.1. c\n\n##### 4.2 d\n\n##### 5. e\n",
            "# History\n\n### 1.14\n\n### 1.16\n\n### 1.18\n",
            "# T\n\n#### Scenario 1\n\n#### Scenario 1.a\n\n#### Scenario 2\n",
            "# T\n\n### G. g\n\n### H. h\n\n### I. i\n\n### J. j\n",
            "# T\n\n## Case 1: a\n\n## Case 2(b)\n\n- [Case 2(b)](#case-2b)\n",
        ] {
            assert!(scan(text).is_empty(), "{text}: {:?}", scan(text));
        }
    }

    #[test]
    fn restarts_versions_and_irregular_numbers_are_quiet() {
        for text in [
            // Restart under each parent.
            "# T\n\n## A\n\n### 1. x\n\n### 2. y\n\n## B\n\n### 1. x\n\n### 2. y\n",
            // Numbering that restarts on purpose.
            "# T\n\n## 1. a\n\n## 2. b\n\n## 1. c\n\n## 2. d\n",
            // Versions never step by one.
            "# Changes\n\n## 1.4.0\n\n## 1.3.2\n\n## 1.3.0\n",
            "# T\n\n## 2 GB\n\n## 4 GB\n\n## 8 GB\n",
            // Two numbers that do not start at 1.
            "# T\n\n## 3. a\n\n## 5. b\n",
            // A topic, not a label; and a labelled number used twice.
            "# Decisions\n\n## Stage 1 kernels\n\n## Stage 2 kernels\n\n## Stage 3 engine\n\n## Stage 3 commands\n",
            "# Plan\n\n## Phase 1: a\n\n## Phase 2: b\n\n## Phase 2: c\n",
            // Versions are not labels.
            "# Bitswap\n\n## Bitswap 1.0.0\n\n## Bitswap 1.1.0\n\n## Bitswap 1.2.0\n",
            "# T\n\n## Vue 2\n\n## Vue 3\n\nMigrate from Vue 2 to Vue 4 later.\n",
        ] {
            assert!(scan(text).is_empty(), "{text}: {:?}", scan(text));
        }
    }

    /// Regression (issue 31): a reference to a numbered item that no
    /// heading carries was missed.
    #[test]
    fn references_to_a_labelled_number_no_heading_carries() {
        let en = "# Install\n\n## Step 1: Download\n\nThen go to step 2.\n\n## Step 2: Configure\n\nOnce done, skip to step 4.\n\n## Step 3: Run\n";
        let found = scan(en);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, FindingKind::MissingTarget);
        assert_eq!(found[0].line, 9);
        assert!(
            found[0].message.contains("step 1, 2, 3"),
            "{}",
            found[0].message
        );
        // Past the last step it may be planned ("a future Phase 3"): info.
        assert_eq!(found[0].severity, Severity::Info);
        // Inside the range, a step that should be there: a warning.
        let inside = "# Install\n\n## Step 1: a\n\nSee step 2.\n\n## Step 3: c\n";
        let found = scan(inside);
        let reference = found
            .iter()
            .find(|f| f.kind == FindingKind::MissingTarget)
            .expect("the reference");
        assert_eq!(reference.severity, Severity::Warning);
        let fr = "# Procédure\n\n## Étape 1 : préparer\n\n## Étape 2 : installer\n\nReprenez à l'étape 3 en cas d'échec.\n";
        assert_eq!(scan(fr).len(), 1);
    }

    #[test]
    fn labels_the_text_defines_and_other_documents_are_quiet() {
        for text in [
            "# Install\n\n## Step 1: a\n\n## Step 2: b\n\n- Step 3: clean up\n\nAfter step 3, stop.\n",
            "# Install\n\n## Step 1: a\n\n## Step 2: b\n\nSee step 5 of the upstream guide.\n",
            "# Install\n\n## Step 1: a\n\n## Step 2: b\n\nSee step 2.3 below.\n",
            // One labelled heading is not a family.
            "# T\n\n## Article 1\n\nVoir l'article 7.\n",
        ] {
            assert!(scan(text).is_empty(), "{text}: {:?}", scan(text));
        }
    }
}
