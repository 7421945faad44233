//! The verifier: free checks of a change first (length, language,
//! structure, readability), then the delta judge, one YES/NO question per
//! issue the change was meant to fix.

use koas_edit::lang::detect_confident;
use koas_review_schema::refine::{
    ChangeVerification, DeltaAnswer, FixAction, RefineChange, RefineVerification,
};
use serde::Serialize;

use crate::sections::sentences;
use crate::{count, Ask, RefineModel};

/// Universal readability figures of a text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Readability {
    /// Words per sentence.
    pub avg_sentence_words: f64,
    /// Characters per word.
    pub avg_word_chars: f64,
    /// Paragraphs per sentence.
    pub paragraph_ratio: f64,
}

/// Longest average sentence before a warning.
pub const MAX_SENTENCE_WORDS: f64 = 25.0;
/// Fewest paragraphs per sentence before a warning.
pub const MIN_PARAGRAPH_RATIO: f64 = 0.08;

/// The readability figures of `text`.
pub fn readability(text: &str) -> Readability {
    let sentences = sentences(text).len().max(1) as f64;
    let words: Vec<&str> = text.split_whitespace().collect();
    let paragraphs = text.split("\n\n").filter(|p| !p.trim().is_empty()).count() as f64;
    Readability {
        avg_sentence_words: words.len() as f64 / sentences,
        avg_word_chars: words.iter().map(|w| w.chars().count()).sum::<usize>() as f64
            / words.len().max(1) as f64,
        paragraph_ratio: paragraphs / sentences,
    }
}

fn headings(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            let t = l.trim_start();
            let hashes = t.chars().take_while(|c| *c == '#').count();
            (1..=6).contains(&hashes) && t[hashes..].starts_with(' ')
        })
        .count()
}

fn list_items(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            let t = l.trim_start();
            t.starts_with("- ")
                || t.starts_with("* ")
                || t.starts_with("+ ")
                || t.split_once(". ")
                    .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
        .count()
}

/// The free checks of one change: failures (the change is reverted) and
/// warnings.
pub fn heuristic_check(change: &RefineChange) -> (Vec<String>, Vec<String>) {
    let mut failures = Vec::new();
    let mut warnings = Vec::new();
    let before = change.before_text.chars().count().max(1) as f64;
    let after = change.after_text.chars().count() as f64;
    let (low, high) = match change.action {
        FixAction::RegenerateSection => (0.3, 3.0),
        _ => (0.5, 2.0),
    };
    let ratio = after / before;
    // A short text may gain or lose a sentence or two whatever the ratio.
    let small = (after - before).abs() <= 200.0;
    if (ratio < low || ratio > high) && !small {
        failures.push(format!(
            "length changed {ratio:.2}× (allowed {low}–{high}×)"
        ));
    }
    if let (Some(a), Some(b)) = (
        detect_confident(&change.before_text),
        detect_confident(&change.after_text),
    ) {
        if a != b {
            failures.push(format!(
                "language changed from {} to {}",
                a.code(),
                b.code()
            ));
        }
    }
    if headings(&change.after_text) != headings(&change.before_text) {
        failures.push("headings added or removed".into());
    }
    if change.after_text.contains("```") || change.after_text.contains("[[KEEP") {
        failures.push("a code fence or a placeholder in prose".into());
    }
    if change.action == FixAction::SurgicalEdit
        && list_items(&change.after_text) != list_items(&change.before_text)
    {
        failures.push("list items added or removed by a surgical edit".into());
    }
    let r = readability(&change.after_text);
    let b = readability(&change.before_text);
    if r.avg_sentence_words > MAX_SENTENCE_WORDS && r.avg_sentence_words > b.avg_sentence_words {
        warnings.push(format!(
            "sentences too long (avg {:.1} words)",
            r.avg_sentence_words
        ));
    }
    if r.paragraph_ratio < MIN_PARAGRAPH_RATIO && sentences(&change.after_text).len() > 12 {
        warnings.push("text is dense: few paragraph breaks".into());
    }
    (failures, warnings)
}

#[derive(Serialize)]
struct DeltaValues<'a> {
    language: &'a str,
    criterion: &'a str,
    description: &'a str,
    fix_instructions: String,
    original_text: &'a str,
    new_text: &'a str,
}

/// Reads a delta judge's answer: YES or NO first (in English or French),
/// then the explanation. `None` when neither starts the answer.
pub fn parse_delta(answer: &str) -> Option<(bool, String)> {
    let t = answer
        .trim()
        .trim_start_matches(|c: char| !c.is_alphanumeric());
    let word: String = t.chars().take_while(|c| c.is_alphabetic()).collect();
    let fixed = match word.to_lowercase().as_str() {
        "yes" | "oui" => true,
        "no" | "non" => false,
        _ => return None,
    };
    let rest = t[word.len()..]
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .trim();
    Some((fixed, rest.to_owned()))
}

/// What the verifier needs.
pub struct VerifyInput<'a> {
    /// The changes to verify.
    pub changes: &'a [RefineChange],
    /// The `refine_delta` template (name, text).
    pub template: (&'a str, &'a str),
    /// The document's language.
    pub language: &'a str,
    /// Longest answer.
    pub max_tokens: u32,
}

/// Verifies every change: the free checks, then (for changes that
/// passed them) one delta question per issue. A change stays when every
/// answer is YES.
pub fn verify_changes(
    model: &dyn RefineModel,
    input: &VerifyInput<'_>,
) -> Result<RefineVerification, koas_review_llm::prompt::RenderError> {
    let mut out = RefineVerification::default();
    let mut asks = Vec::new();
    let mut keys = Vec::new();
    for (c, change) in input.changes.iter().enumerate() {
        let (failures, warnings) = heuristic_check(change);
        let passed = failures.is_empty();
        out.changes.push(ChangeVerification {
            change_id: change.change_id.clone(),
            section_id: change.section_id.clone(),
            reason: (!passed).then(|| failures.join("; ")),
            heuristic_failures: failures,
            warnings,
            delta: Vec::new(),
            passed,
        });
        if !passed {
            continue;
        }
        for issue in &change.issues {
            let values = DeltaValues {
                language: input.language,
                criterion: issue.criterion.as_str(),
                description: &issue.description,
                fix_instructions: crate::arbiter::instruction_of(issue),
                original_text: &change.before_text,
                new_text: &change.after_text,
            };
            asks.push(Ask {
                role: "delta".into(),
                prompt: koas_review_llm::prompt::render(
                    input.template.0,
                    input.template.1,
                    &values,
                )?,
                max_tokens: input.max_tokens,
            });
            keys.push((c, issue.id.clone()));
        }
    }
    let answers = model.complete(&asks);
    for ((c, issue_id), answer) in keys.into_iter().zip(answers) {
        count(&mut out.tokens, &answer);
        let (fixed, explanation) = match &answer {
            Ok(reply) => parse_delta(&reply.text).unwrap_or((
                false,
                format!(
                    "unreadable answer: {}",
                    reply.text.chars().take(80).collect::<String>()
                ),
            )),
            Err(e) => (false, format!("the model failed: {e}")),
        };
        let v = &mut out.changes[c];
        if !fixed && v.passed {
            v.passed = false;
            v.reason = Some(format!(
                "the delta judge says {issue_id} is not fixed: {explanation}"
            ));
        }
        v.delta.push(DeltaAnswer {
            issue_id,
            fixed,
            explanation,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(before: &str, after: &str, action: FixAction) -> RefineChange {
        RefineChange {
            change_id: "RVW-0001".into(),
            section_id: "S1".into(),
            action,
            before_text: before.into(),
            after_text: after.into(),
            issues: vec![],
        }
    }

    #[test]
    fn free_checks_catch_length_language_and_structure() {
        let ok = change(
            "The tool is fast.",
            "The tool is quick.",
            FixAction::SurgicalEdit,
        );
        assert!(heuristic_check(&ok).0.is_empty());
        let long = "The tool is fast. ".repeat(40);
        let grown = change("The tool is fast.", &long, FixAction::SurgicalEdit);
        assert!(heuristic_check(&grown).0[0].contains("length"));
        let gutted = change(&long, "Fast.", FixAction::SurgicalEdit);
        assert!(heuristic_check(&gutted).0[0].contains("length"));
        let trimmed = change(
            "The team, in a way that is not always obvious to people who are new, reviews it.",
            "The team reviews it.",
            FixAction::SurgicalEdit,
        );
        assert!(heuristic_check(&trimmed).0.is_empty());
        let french = change(
            "The records are kept for the period that the policy sets in the archive.",
            "Les documents sont conservés pendant la durée que la politique fixe dans l'archive.",
            FixAction::RegenerateSection,
        );
        assert!(heuristic_check(&french)
            .0
            .iter()
            .any(|f| f.contains("language")));
        let heading = change(
            "Intro text here.",
            "Intro text.\n\n## New part",
            FixAction::RegenerateSection,
        );
        assert!(heuristic_check(&heading)
            .0
            .iter()
            .any(|f| f.contains("headings")));
        let list = change("- a\n- b", "- a", FixAction::SurgicalEdit);
        assert!(heuristic_check(&list).0.iter().any(|f| f.contains("list")));
    }

    #[test]
    fn delta_answers() {
        assert_eq!(
            parse_delta("YES, the number now matches."),
            Some((true, "the number now matches.".into()))
        );
        assert_eq!(
            parse_delta("**No** - still ten years"),
            Some((false, "still ten years".into()))
        );
        assert_eq!(parse_delta("Maybe"), None);
        assert_eq!(parse_delta("Yesterday it was"), None);
    }

    #[test]
    fn readability_figures() {
        let r = readability("One two three. Four five six.\n\nSeven eight.");
        assert!((r.avg_sentence_words - 8.0 / 3.0).abs() < 1e-9);
        assert!((r.paragraph_ratio - 2.0 / 3.0).abs() < 1e-9);
    }
}
