//! Applying the certain fixes findings carry (`koas check --fix`) and
//! showing them as a unified diff (`--fix --dry-run`).
//!
//! A fix is whole-line edits on the document the finding was made on. It
//! is applied only when every line it touches still reads as the finding
//! saw it and no other fix of the same run touches that line: the first
//! fix (in finding order) wins, the other is left for the next run. Fixes
//! of one line that each change one part of it ("Teh client explians"),
//! parts that do not overlap, are applied together. Line endings (LF or
//! CRLF) and a byte-order mark are kept.

use koas_review_schema::findings::Finding;
use std::collections::HashMap;

/// What applying the fixes of one document did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixOutcome {
    /// The fixed text (the input when nothing applied).
    pub text: String,
    /// Indices (into the findings given) of the fixes applied.
    pub applied: Vec<usize>,
    /// Indices of the fixes left out, each with why.
    pub skipped: Vec<(usize, String)>,
    /// Per original line (0-based) that changed: its new text, or `None`
    /// when removed. Used to render the diff.
    changes: Vec<(usize, Option<String>)>,
    /// The original lines, without their endings.
    original: Vec<String>,
}

/// Splits `text` into lines without endings, with each line's ending.
fn split_lines(text: &str) -> Vec<(&str, &str)> {
    text.split_inclusive('\n')
        .map(|l| {
            let body = l.strip_suffix('\n').unwrap_or(l);
            let body = body.strip_suffix('\r').unwrap_or(body);
            (body, &l[body.len()..])
        })
        .collect()
}

/// The one part of a line a one-line fix changes: bytes `start..end` of
/// the original line become `with`.
#[derive(Debug, Clone)]
struct Part {
    start: usize,
    end: usize,
    with: String,
}

impl Part {
    /// The part `before` → `after` changes (their common start and end
    /// kept, on character boundaries).
    fn of(before: &str, after: &str) -> Part {
        let prefix: usize = before
            .chars()
            .zip(after.chars())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a.len_utf8())
            .sum();
        let suffix: usize = before[prefix..]
            .chars()
            .rev()
            .zip(after[prefix..].chars().rev())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a.len_utf8())
            .sum();
        Part {
            start: prefix,
            end: before.len() - suffix,
            with: after[prefix..after.len() - suffix].to_owned(),
        }
    }

    /// `true` when the two parts neither overlap nor touch.
    fn apart(&self, other: &Part) -> bool {
        self.end < other.start || other.end < self.start
    }

    /// `line` with every part applied.
    fn apply(line: &str, parts: &[Part]) -> String {
        let mut sorted: Vec<&Part> = parts.iter().collect();
        sorted.sort_by_key(|p| p.start);
        let mut out = String::with_capacity(line.len());
        let mut at = 0;
        for p in sorted {
            out.push_str(&line[at..p.start]);
            out.push_str(&p.with);
            at = p.end;
        }
        out.push_str(&line[at..]);
        out
    }
}

/// Applies the fixes of `findings` to `text`.
pub fn apply_fixes(text: &str, findings: &[Finding]) -> FixOutcome {
    let lines = split_lines(text);
    // The finding saw line 1 without its byte-order mark.
    let seen = |i: usize| -> &str {
        let l = lines[i].0;
        if i == 0 {
            l.strip_prefix('\u{feff}').unwrap_or(l)
        } else {
            l
        }
    };
    let mut claimed: HashMap<usize, Option<String>> = HashMap::new();
    // The parts of a line changed by one-line fixes, in the original
    // line's bytes: another such fix of a part apart is merged in.
    let mut parts: HashMap<usize, Vec<Part>> = HashMap::new();
    let mut applied = Vec::new();
    let mut skipped = Vec::new();
    for (i, f) in findings.iter().enumerate() {
        let Some(fix) = &f.fix else { continue };
        if let [e] = fix.edits.as_slice() {
            let idx = (e.line as usize).wrapping_sub(1);
            if let (Some(after), Some(done)) = (&e.after, parts.get_mut(&idx)) {
                if idx < lines.len() && seen(idx) == e.before {
                    let part = Part::of(&e.before, after);
                    if done.iter().all(|d| d.apart(&part)) {
                        done.push(part);
                        claimed.insert(idx, Some(Part::apply(&e.before, done)));
                        applied.push(i);
                        continue;
                    }
                }
            }
        }
        let mut why = None;
        for e in &fix.edits {
            let idx = (e.line as usize).wrapping_sub(1);
            if idx >= lines.len() || seen(idx) != e.before {
                why = Some(format!(
                    "line {} no longer reads as the finding saw it",
                    e.line
                ));
                break;
            }
            if claimed.contains_key(&idx) {
                why = Some(format!("line {} is changed by another fix", e.line));
                break;
            }
        }
        if fix.edits.is_empty() {
            why = Some("the fix changes nothing".to_string());
        }
        match why {
            Some(w) => skipped.push((i, w)),
            None => {
                for e in &fix.edits {
                    claimed.insert(e.line as usize - 1, e.after.clone());
                }
                if let [e] = fix.edits.as_slice() {
                    if let Some(after) = &e.after {
                        parts.insert(e.line as usize - 1, vec![Part::of(&e.before, after)]);
                    }
                }
                applied.push(i);
            }
        }
    }
    let mut out = String::with_capacity(text.len());
    for (idx, (body, ending)) in lines.iter().enumerate() {
        match claimed.get(&idx) {
            None => {
                out.push_str(body);
                out.push_str(ending);
            }
            Some(None) => {}
            Some(Some(new)) => {
                if idx == 0 && body.starts_with('\u{feff}') {
                    out.push('\u{feff}');
                }
                out.push_str(new);
                out.push_str(ending);
            }
        }
    }
    let mut changes: Vec<(usize, Option<String>)> = claimed.into_iter().collect();
    changes.sort_by_key(|c| c.0);
    FixOutcome {
        text: out,
        applied,
        skipped,
        changes,
        original: lines.iter().map(|(b, _)| b.to_string()).collect(),
    }
}

/// The most rounds [`fix_until_stable`] runs: a fix that makes another
/// finding's fix possible (two links to one anchor on one line, a heading
/// raised under one raised before) needs a second round, rarely more.
pub const MAX_ROUNDS: usize = 8;

/// What applying the certain fixes until none is left did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stable {
    /// Every round's changes, as one change of the original text.
    pub outcome: FixOutcome,
    /// How many fixes applied, over all rounds.
    pub applied: usize,
    /// How many rounds applied at least one fix.
    pub rounds: usize,
    /// The findings of the fixed text (of the text given, when no fix
    /// applied).
    pub remaining: Vec<Finding>,
}

/// Applies the certain fixes of `findings` (those of `text`), checks the
/// fixed text with `check`, applies the fixes it then finds, and so on
/// until a round applies none, the text comes back to one already seen,
/// or [`MAX_ROUNDS`] rounds ran: `koas check --fix` and the editor's
/// "fix all" converge in one run. The fixes of one round are those whose
/// lines do not overlap ([`apply_fixes`]); a fix left out because another
/// took its line is found again on the fixed text.
pub fn fix_until_stable<E>(
    text: &str,
    findings: Vec<Finding>,
    mut check: impl FnMut(&str) -> Result<Vec<Finding>, E>,
) -> Result<Stable, E> {
    let mut total = apply_fixes(text, &findings);
    let mut applied = total.applied.len();
    if applied == 0 {
        return Ok(Stable {
            outcome: total,
            applied,
            rounds: 0,
            remaining: findings,
        });
    }
    let mut rounds = 1;
    let mut seen: std::collections::HashSet<String> = [text.to_string()].into();
    loop {
        let remaining = check(&total.text)?;
        if rounds >= MAX_ROUNDS || !seen.insert(total.text.clone()) {
            return Ok(Stable {
                outcome: total,
                applied,
                rounds,
                remaining,
            });
        }
        let next = apply_fixes(&total.text, &remaining);
        if next.applied.is_empty() {
            return Ok(Stable {
                outcome: total,
                applied,
                rounds,
                remaining,
            });
        }
        applied += next.applied.len();
        rounds += 1;
        total = total.then(next);
    }
}

impl FixOutcome {
    /// This change followed by `next` (made on this one's text), as one
    /// change of the original text: fixes replace or remove lines, never
    /// add one, so each line of this text is a line of the original.
    fn then(self, next: FixOutcome) -> FixOutcome {
        let mut changes: HashMap<usize, Option<String>> = self.changes.into_iter().collect();
        // The original line each line of this text comes from.
        let origin: Vec<usize> = (0..self.original.len())
            .filter(|i| !matches!(changes.get(i), Some(None)))
            .collect();
        for (line, change) in next.changes {
            if let Some(&o) = origin.get(line) {
                changes.insert(o, change);
            }
        }
        // A line changed back to what it was is no change.
        changes.retain(|i, c| c.as_deref() != self.original.get(*i).map(String::as_str));
        let mut changes: Vec<(usize, Option<String>)> = changes.into_iter().collect();
        changes.sort_by_key(|c| c.0);
        let mut applied = self.applied;
        applied.extend(next.applied);
        let mut skipped = self.skipped;
        skipped.extend(next.skipped);
        FixOutcome {
            text: next.text,
            applied,
            skipped,
            changes,
            original: self.original,
        }
    }
}

/// Lines of context around each change in [`FixOutcome::diff`].
const CONTEXT: usize = 3;

impl FixOutcome {
    /// The change as a unified diff (`--- a/PATH`, `+++ b/PATH`, hunks
    /// with three lines of context), empty when nothing changed.
    pub fn diff(&self, path: &str) -> String {
        if self.changes.is_empty() {
            return String::new();
        }
        let changed: HashMap<usize, &Option<String>> =
            self.changes.iter().map(|(i, c)| (*i, c)).collect();
        // Group changes whose context windows touch.
        let mut hunks: Vec<(usize, usize)> = Vec::new();
        for &(i, _) in &self.changes {
            let start = i.saturating_sub(CONTEXT);
            let end = (i + CONTEXT).min(self.original.len() - 1);
            match hunks.last_mut() {
                Some(h) if start <= h.1 + 1 => h.1 = end,
                _ => hunks.push((start, end)),
            }
        }
        let mut out = format!("--- a/{path}\n+++ b/{path}\n");
        let mut shift: i64 = 0;
        for (start, end) in hunks {
            let old_len = end - start + 1;
            let removed = (start..=end)
                .filter(|i| matches!(changed.get(i), Some(None)))
                .count();
            let new_len = old_len - removed;
            let new_start = start as i64 + 1 + shift;
            // An empty side is numbered from the line before it.
            let new_start = if new_len == 0 {
                new_start - 1
            } else {
                new_start
            };
            out.push_str(&format!(
                "@@ -{},{} +{},{} @@\n",
                start + 1,
                old_len,
                new_start,
                new_len
            ));
            for i in start..=end {
                let old = &self.original[i];
                match changed.get(&i) {
                    None => out.push_str(&format!(" {old}\n")),
                    Some(None) => out.push_str(&format!("-{old}\n")),
                    Some(Some(new)) => {
                        out.push_str(&format!("-{old}\n"));
                        out.push_str(&format!("+{new}\n"));
                    }
                }
            }
            shift -= removed as i64;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::findings::{Finding, FindingKind, Fix, FixEdit};

    fn finding(line: u32, edits: Vec<(u32, &str, Option<&str>)>) -> Finding {
        Finding::new(FindingKind::HeadingLevelSkip, "k", line, line, "m", "e").with_fix(Fix {
            description: "d".into(),
            edits: edits
                .into_iter()
                .map(|(line, before, after)| FixEdit {
                    line,
                    before: before.into(),
                    after: after.map(str::to_string),
                })
                .collect(),
        })
    }

    #[test]
    fn fixes_that_need_a_second_round_converge_in_one_call() {
        // Two fixes of one line that overlap: the second is found again on
        // the fixed text and applied in the next round.
        let text = "# T\n\nab\nkeep\n##\n\nend\n";
        let first = vec![
            finding(3, vec![(3, "ab", Some("xb"))]),
            finding(3, vec![(3, "ab", Some("ay"))]),
            finding(5, vec![(5, "##", None), (6, "", None)]),
        ];
        let mut rounds_seen = Vec::new();
        let stable = fix_until_stable(text, first, |t: &str| {
            rounds_seen.push(t.to_string());
            // What a check would find on each text.
            Ok::<_, ()>(if t.contains("xb") && !t.contains("xy") {
                vec![finding(3, vec![(3, "xb", Some("xy"))])]
            } else {
                Vec::new()
            })
        })
        .expect("no error");
        assert_eq!(stable.outcome.text, "# T\n\nxy\nkeep\nend\n");
        assert_eq!((stable.applied, stable.rounds), (3, 2));
        assert!(stable.remaining.is_empty());
        // One diff from the original text, the removed lines after the
        // line changed twice counted right.
        let diff = stable.outcome.diff("d.md");
        assert!(diff.contains("-ab\n+xy\n keep\n-##\n-\n end\n"), "{diff}");
        assert!(diff.contains("@@ -1,7 +1,5 @@"), "{diff}");
        // Nothing to fix: no round, the findings given back.
        let none = fix_until_stable("x\n", Vec::new(), |_: &str| Ok::<_, ()>(Vec::new()))
            .expect("no error");
        assert_eq!((none.applied, none.rounds), (0, 0));
    }

    #[test]
    fn a_fix_that_undoes_another_stops_the_rounds() {
        let text = "a\n";
        let stable = fix_until_stable(
            text,
            vec![finding(1, vec![(1, "a", Some("b"))])],
            |t: &str| {
                // Each text's check proposes the other text back.
                let (from, to) = if t == "b\n" { ("b", "a") } else { ("a", "b") };
                Ok::<_, ()>(vec![finding(1, vec![(1, from, Some(to))])])
            },
        )
        .expect("no error");
        // a → b → a: the text seen before ends the rounds, and the change
        // undone is no change.
        assert_eq!(stable.rounds, 2, "{stable:?}");
        assert_eq!(stable.outcome.text, "a\n");
        assert_eq!(stable.outcome.diff("d.md"), "");
    }

    #[test]
    fn fixes_apply_keep_line_endings_and_render_as_a_diff() {
        let text = "\u{feff}# T\r\n\r\n### A\r\n\r\n##\r\n\r\ntext\r\n";
        let findings = [
            finding(3, vec![(3, "### A", Some("## A"))]),
            finding(5, vec![(5, "##", None), (6, "", None)]),
        ];
        let out = apply_fixes(text, &findings);
        assert_eq!(out.applied, [0, 1]);
        assert_eq!(out.text, "\u{feff}# T\r\n\r\n## A\r\n\r\ntext\r\n");
        let diff = out.diff("d.md");
        assert!(
            diff.starts_with("--- a/d.md\n+++ b/d.md\n@@ -1,7 +1,5 @@\n"),
            "{diff}"
        );
        assert!(diff.contains("-### A\n+## A\n"), "{diff}");
        assert!(diff.contains("\n-##\n-\n text\n"), "{diff}");
    }

    #[test]
    fn stale_and_overlapping_fixes_are_skipped() {
        let text = "# T\n\n### A\n";
        let findings = [
            finding(3, vec![(3, "### A", Some("## A"))]),
            finding(3, vec![(3, "### A", None)]),
            finding(1, vec![(1, "# Other", Some("# X"))]),
            finding(9, vec![(9, "", None)]),
        ];
        let out = apply_fixes(text, &findings);
        assert_eq!(out.applied, [0]);
        let skipped: Vec<usize> = out.skipped.iter().map(|s| s.0).collect();
        assert_eq!(skipped, [1, 2, 3]);
        assert_eq!(out.text, "# T\n\n## A\n");
        assert_eq!(apply_fixes(text, &[]).diff("x"), "");
    }

    /// "Teh client explians": two words of one line, each with its
    /// certain fix; before, the second fix waited for another run.
    #[test]
    fn fixes_of_separate_parts_of_one_line_apply_together() {
        let line = "Teh client explians the adresses.";
        let text = format!("# T\n\n{line}\n");
        let findings = [
            finding(
                3,
                vec![(3, line, Some("The client explians the adresses."))],
            ),
            finding(
                3,
                vec![(3, line, Some("Teh client explains the adresses."))],
            ),
            finding(
                3,
                vec![(3, line, Some("Teh client explians the addresses."))],
            ),
            // Overlaps the second: left for the next run.
            finding(3, vec![(3, line, Some("Teh client explain the adresses."))]),
        ];
        let out = apply_fixes(&text, &findings);
        assert_eq!(out.applied, [0, 1, 2]);
        assert_eq!(out.skipped.iter().map(|s| s.0).collect::<Vec<_>>(), [3]);
        assert_eq!(out.text, "# T\n\nThe client explains the addresses.\n");
        assert!(out
            .diff("f")
            .contains("+The client explains the addresses."));
    }

    #[test]
    fn distant_changes_make_separate_hunks_with_shifted_numbers() {
        let text: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let findings = [
            finding(2, vec![(2, "l2", None)]),
            finding(15, vec![(15, "l15", Some("L15"))]),
        ];
        let out = apply_fixes(&text, &findings);
        let diff = out.diff("f");
        assert!(diff.contains("@@ -1,5 +1,4 @@\n"), "{diff}");
        assert!(diff.contains("@@ -12,7 +11,7 @@\n"), "{diff}");
    }
}
