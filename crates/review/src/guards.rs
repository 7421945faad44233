//! Content guards: deterministic checks, in the apply path, that keep a
//! careless model (or a careless ops file) from harming a document
//! *silently*. Whatever an op's origin, it passes them:
//!
//! - `TOKEN_GUARD`: a number, a URL or link target, an inline code span,
//!   an identifier-like token (`snake_case`, `camelCase`, `RFC7230`,
//!   `DINUM`) or a quoted string that the op removes, adds or changes. The
//!   op is kept but needs attention, with a WARNING note naming what
//!   changed (refused under `--strict`).
//! - `LANGUAGE_GUARD`: text written in another language than the
//!   document's (French ↔ English): downgraded to `flag_only`, so a person
//!   sees the proposal and nothing is written.
//! - `REWRITE_GUARD`: a `typo`, `spelling` or `grammar` op whose new text
//!   shares too little with the old one: that is a rewrite, so the kind
//!   becomes `style` and the op needs attention.
//!
//! The blank-line guard and the CAUTION note of a deletion live in
//! [`crate::normalize`].

use crate::lang::{self, Language};
use koas_review_schema::apply::Fix;
use koas_review_schema::edit_op::{Action, Alert, EditOp, ReviewNote};
use std::collections::BTreeMap;

/// What the guards know about the document as a whole.
#[derive(Debug, Clone, Copy)]
pub struct GuardContext {
    /// The document's language.
    pub language: Language,
}

impl GuardContext {
    /// The context of `text`, the document the ops apply to.
    pub fn of(text: &str) -> GuardContext {
        GuardContext {
            language: lang::detect(text),
        }
    }
}

/// The tokens an op may not change silently, by class.
fn protected_tokens(text: &str) -> BTreeMap<&'static str, Vec<String>> {
    let mut out: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut rest = text.to_owned();
    // Inline code, URLs and quoted strings first, then masked out so the
    // numbers and identifiers inside them are not counted twice.
    for (class, open, close) in [
        ("inline code", "`", "`"),
        ("quoted string", "\"", "\""),
        ("quoted string", "«", "»"),
        ("quoted string", "“", "”"),
        ("link target", "](", ")"),
    ] {
        let mut kept = String::with_capacity(rest.len());
        let mut s = rest.as_str();
        while let Some(start) = s.find(open) {
            let after = &s[start + open.len()..];
            let Some(end) = after.find(close) else { break };
            let inner = &after[..end];
            // A fence's run of backticks, or a pair across lines, is no
            // inline span (the structure check judges fences).
            if inner.contains('\n') || inner.trim().is_empty() {
                kept.push_str(&s[..start + open.len()]);
                s = after;
                continue;
            }
            out.entry(class).or_default().push(inner.to_owned());
            kept.push_str(&s[..start]);
            kept.push(' ');
            s = &after[end + close.len()..];
        }
        kept.push_str(s);
        rest = kept;
    }
    for word in rest.split_whitespace() {
        if word.starts_with("http://") || word.starts_with("https://") || word.starts_with("www.") {
            out.entry("URL")
                .or_default()
                .push(word.trim_end_matches(['.', ',', ';', ')', ':']).to_owned());
            continue;
        }
        let token = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
        if token.is_empty() {
            continue;
        }
        if token.chars().any(|c| c.is_ascii_digit()) {
            // Numbers, dates, versions, references: digits and what binds them.
            out.entry("number").or_default().push(token.to_owned());
        } else if is_identifier(token) {
            out.entry("identifier").or_default().push(token.to_owned());
        }
    }
    for list in out.values_mut() {
        list.sort();
    }
    out
}

/// `snake_case`, `camelCase`, `CONST_CASE`, `dotted.name`, or an acronym
/// of two capitals or more.
fn is_identifier(token: &str) -> bool {
    let letters: Vec<char> = token.chars().filter(|c| c.is_alphabetic()).collect();
    if token.contains('_') || (token.contains('.') && !token.ends_with('.')) {
        return true;
    }
    if letters.len() >= 2 && letters.iter().all(|c| c.is_uppercase()) {
        return true;
    }
    // An upper-case letter after a lower-case one: camelCase.
    token
        .chars()
        .zip(token.chars().skip(1))
        .any(|(a, b)| a.is_lowercase() && b.is_uppercase())
}

/// What changed between the protected tokens of `before` and `after`.
fn token_changes(before: &str, after: &str) -> Vec<String> {
    let (b, a) = (protected_tokens(before), protected_tokens(after));
    let mut changes = Vec::new();
    let empty = Vec::new();
    let classes: std::collections::BTreeSet<&str> = b.keys().chain(a.keys()).copied().collect();
    for class in classes {
        let (old, new) = (
            b.get(class).unwrap_or(&empty),
            a.get(class).unwrap_or(&empty),
        );
        if old == new {
            continue;
        }
        let removed: Vec<&String> = old.iter().filter(|t| !new.contains(t)).collect();
        let added: Vec<&String> = new.iter().filter(|t| !old.contains(t)).collect();
        let show = |v: &[&String]| {
            v.iter()
                .take(3)
                .map(|t| format!("'{t}'"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        changes.push(match (removed.is_empty(), added.is_empty()) {
            (false, false) => format!("{class} {} → {}", show(&removed), show(&added)),
            (false, true) => format!("{class} {} removed", show(&removed)),
            (true, false) => format!("{class} {} added", show(&added)),
            // Same tokens, another count: one was duplicated or dropped.
            (true, true) => format!("{class} repeated differently"),
        });
    }
    changes
}

/// Similarity of two texts: 2 × common units in order / total (1.0 for
/// equal texts, 0.0 for nothing in common). Units are characters, so that
/// a one-word typo fix ("insufisant" → "insuffisant") scores high; words
/// for long texts, to bound the work.
fn similarity(a: &str, b: &str) -> f64 {
    let (ca, cb) = (a.chars().count(), b.chars().count());
    if ca.saturating_mul(cb) <= 4_000_000 {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        lcs_ratio(&a, &b)
    } else {
        let a: Vec<&str> = a.split_whitespace().collect();
        let b: Vec<&str> = b.split_whitespace().collect();
        lcs_ratio(&a, &b)
    }
}

fn lcs_ratio<T: PartialEq>(a: &[T], b: &[T]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    // Longest common subsequence, two rows.
    let mut prev = vec![0usize; b.len() + 1];
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            row[j + 1] = if x == y {
                prev[j] + 1
            } else {
                row[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut row);
    }
    2.0 * prev[b.len()] as f64 / (a.len() + b.len()) as f64
}

/// The least similarity a small correction keeps with its text.
fn min_similarity(kind: &str) -> Option<f64> {
    match kind {
        "typo" | "spelling" | "orthographe" => Some(0.7),
        "grammar" | "grammaire" => Some(0.6),
        _ => None,
    }
}

fn warn(op: &mut EditOp, reason: &str) {
    op.needs_attention = true;
    op.silent = false;
    // The note's alert follows the severity: a guarded change is at least
    // worth a warning.
    if matches!(op.severity.as_str(), "" | "minor" | "info") {
        op.severity = "attention".into();
    }
    let line = format!("REVIEWER: {} — {reason}", op.id);
    match &mut op.review_note {
        Some(note) => {
            note.alert = Alert::Warning;
            if !note.text.contains(reason) {
                note.text.push_str(&format!(" ({reason})"));
            }
        }
        None => {
            op.review_note = Some(ReviewNote {
                alert: Alert::Warning,
                text: line,
            });
        }
    }
}

/// Runs the content guards on `op` (whose `before` is the text it
/// replaces: its `before_text`, or its target's text). Each guard that
/// fires changes the op as its description says and is returned.
pub fn run(op: &mut EditOp, before: &str, ctx: &GuardContext) -> Vec<Fix> {
    let mut fired = Vec::new();
    if !matches!(op.action, Action::Replace | Action::Insert) {
        return fired;
    }
    let after = op.after_text.clone();
    if let Some(other) = lang::detect_confident(&after) {
        let before_lang = lang::detect_confident(before);
        // Judged against the text it replaces when that says something,
        // else against the document.
        let expected = before_lang.unwrap_or(ctx.language);
        if other != expected {
            let reason = format!(
                "the new text is in {}, the document in {}: shown for a decision, not applied",
                other.name(),
                expected.name()
            );
            op.action = Action::FlagOnly;
            warn(op, &reason);
            fired.push(Fix::ContentGuard {
                guard: "LANGUAGE_GUARD".into(),
                reason,
            });
            return fired;
        }
    }
    let changes = token_changes(before, &after);
    if !changes.is_empty() {
        let reason = format!("changes {}", changes.join("; "));
        warn(op, &reason);
        fired.push(Fix::ContentGuard {
            guard: "TOKEN_GUARD".into(),
            reason,
        });
    }
    if op.action == Action::Replace {
        if let Some(min) = min_similarity(&op.kind.to_lowercase()) {
            let similarity = similarity(before, &after);
            if similarity < min {
                let reason = format!(
                    "a {} op that rewrites {:.0}% of its text is a rewrite (kind set to style)",
                    op.kind,
                    (1.0 - similarity) * 100.0
                );
                op.kind = "style".into();
                warn(op, &reason);
                fired.push(Fix::ContentGuard {
                    guard: "REWRITE_GUARD".into(),
                    reason,
                });
            }
        }
    }
    fired
}

/// True when `fix` is a guard whose op `--strict` refuses (a changed
/// number, URL, code span, identifier or quotation).
pub fn refused_when_strict(fix: &Fix) -> bool {
    matches!(fix, Fix::ContentGuard { guard, .. } if guard == "TOKEN_GUARD")
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::change_id::ChangeId;
    use koas_review_schema::edit_op::Target;

    fn op(kind: &str, after: &str) -> EditOp {
        EditOp {
            id: ChangeId::new(7).expect("id"),
            source_id: None,
            action: Action::Replace,
            target: Target {
                line_start: 3,
                line_end: 3,
                ..Target::default()
            },
            before_hash: None,
            before_text: None,
            after_text: after.into(),
            needs_attention: false,
            kind: kind.into(),
            severity: "minor".into(),
            silent: true,
            review_note: None,
            rationale: String::new(),
            summary: None,
        }
    }

    fn names(fixes: &[Fix]) -> Vec<String> {
        fixes
            .iter()
            .map(|f| match f {
                Fix::ContentGuard { guard, .. } => guard.clone(),
                other => other.name().to_owned(),
            })
            .collect()
    }

    const EN: GuardContext = GuardContext {
        language: Language::English,
    };

    #[test]
    fn a_plain_typo_fix_passes_untouched() {
        let mut o = op("typo", "The policy applies to every record.");
        let fixes = run(&mut o, "The policy aplies to every record.", &EN);
        assert!(fixes.is_empty(), "{fixes:?}");
        assert!(!o.needs_attention && o.silent);
    }

    #[test]
    fn numbers_urls_code_identifiers_and_quotes_are_never_changed_silently() {
        let cases = [
            (
                "Records are kept 10 years.",
                "Records are kept 12 years.",
                "number '10' → '12'",
            ),
            (
                "See https://a.example/x for details.",
                "See https://b.example/x for details.",
                "URL",
            ),
            (
                "Read [the guide](guide.md#setup) first.",
                "Read [the guide](guide.md#install) first.",
                "link target",
            ),
            (
                "Set `max_in_flight` to four.",
                "Set `max_inflight` to four.",
                "inline code",
            ),
            (
                "The DINUM receives logs.",
                "The DNUM receives logs.",
                "identifier 'DINUM' → 'DNUM'",
            ),
            (
                "It says \"never\" here.",
                "It says \"rarely\" here.",
                "quoted string",
            ),
            (
                "Signed on 2024-03-01 by the team.",
                "Signed on 2024-03-10 by the team.",
                "number",
            ),
        ];
        for (before, after, expect) in cases {
            let mut o = op("typo", after);
            let fixes = run(&mut o, before, &EN);
            assert_eq!(names(&fixes), ["TOKEN_GUARD"], "{before} → {after}");
            let reason = match &fixes[0] {
                Fix::ContentGuard { reason, .. } => reason.clone(),
                _ => String::new(),
            };
            assert!(reason.contains(expect), "{reason} should contain {expect}");
            assert!(o.needs_attention && !o.silent);
            assert_eq!(o.severity, "attention");
            let note = o.review_note.clone().expect("a note");
            assert_eq!(note.alert, Alert::Warning);
            assert!(
                note.text.starts_with("REVIEWER: RVW-0007 — changes"),
                "{}",
                note.text
            );
            assert!(refused_when_strict(&fixes[0]));
        }
    }

    #[test]
    fn text_in_another_language_becomes_a_flag() {
        let mut o = op(
            "grammar",
            "Les contrôles sont en place pour la plateforme de paiement.",
        );
        let fixes = run(
            &mut o,
            "The controls are in place for the payment platform.",
            &EN,
        );
        assert_eq!(names(&fixes), ["LANGUAGE_GUARD"]);
        assert_eq!(o.action, Action::FlagOnly);
        assert!(o.needs_attention);
        // A French document, a French fix: nothing to say.
        let fr = GuardContext {
            language: Language::French,
        };
        let mut ok = op("grammar", "Les contrôles sont en place pour la plateforme.");
        assert!(run(
            &mut ok,
            "Les contrôle sont en place pour la plateforme.",
            &fr
        )
        .is_empty());
    }

    #[test]
    fn a_typo_that_rewrites_the_sentence_is_a_style_change_needing_attention() {
        let mut o = op("typo", "Payment data must be archived by the operator.");
        let fixes = run(&mut o, "The policy aplies to every payment record.", &EN);
        assert_eq!(names(&fixes), ["REWRITE_GUARD"]);
        assert_eq!(o.kind, "style");
        assert!(o.needs_attention);
        // A style op may rewrite: no guard.
        let mut s = op("style", "Payment data must be archived by the operator.");
        assert!(run(&mut s, "The policy aplies to every payment record.", &EN).is_empty());
    }

    #[test]
    fn tokens_inside_code_are_counted_once() {
        let t = protected_tokens("Run `cargo test -j 2` then retry 3 times.");
        assert_eq!(t["inline code"], ["cargo test -j 2"]);
        assert_eq!(t["number"], ["3"]);
    }

    #[test]
    fn similarity_is_symmetric_and_bounded() {
        assert_eq!(similarity("abc", "abc"), 1.0);
        assert_eq!(similarity("abc", "xyz"), 0.0);
        let s = similarity("abcd", "axcd");
        assert!((s - 0.75).abs() < 1e-9, "{s}");
        assert_eq!(similarity("ab", "ba"), similarity("ba", "ab"));
        assert!(similarity("insufisant", "insuffisant") > 0.9);
        assert!(similarity("lenght", "length") > 0.8);
    }
}
