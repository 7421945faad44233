//! Content guards: deterministic checks, in the apply path, that judge an
//! op by what it does, not by what it says it is, so that a careless model
//! (or a careless ops file) cannot harm a document *silently*. Whatever an
//! op's origin, it passes them:
//!
//! - `LANGUAGE_GUARD`: text written in another language than the
//!   document's (French ↔ English): downgraded to `flag_only`, so a person
//!   sees the proposal and nothing is written.
//! - `STRUCTURE_GUARD`: the Markdown structure of the blocks around the
//!   change differs ([`koas_md::shape`]: a heading removed or its level
//!   changed, a list item's marker removed, a table created or broken, an
//!   HTML element or a code fence left open, emphasis or links changed).
//!   A model's op that changes the block structure is refused
//!   (`REJECT_STRUCTURE`) unless its kind declares that purpose
//!   (`heading`, `list`, `table`, `structure`…), and one that leaves
//!   something open is always refused; otherwise the op needs attention,
//!   with a WARNING note naming what changed.
//! - `TOKEN_GUARD`: a number, a URL or link target, an inline code span,
//!   an identifier-like token (`snake_case`, `camelCase`, `RFC7230`,
//!   `DINUM`) or a quoted string that the op removes, adds or changes. The
//!   op needs attention, with a WARNING note naming what changed.
//! - `MEANING_GUARD`: a polarity word added, removed or swapped (negation,
//!   modal, quantifier, comparison, direction; [`crate::lexicon`]): the op
//!   needs attention, with a note such as "negation removed: 'not'".
//! - `REWRITE_GUARD`: an op that claims a small change (`typo`, `grammar`,
//!   `punctuation`…) or would be silent, but replaces, adds or removes
//!   other words ([`EditClass::Rewrite`]): kind `style`, needs attention.
//! - `KIND_GUARD`: an op that claims less than it does but stays a small
//!   change (a `typo` that swaps an article is `grammar`): its kind is
//!   corrected to what it does; it stays silent when that kind is.
//!
//! Under `--strict`, `STRUCTURE_GUARD`, `TOKEN_GUARD` and `MEANING_GUARD`
//! refuse the op (`REJECT_GUARD`) instead.
//!
//! The blank-line guard and the CAUTION note of a deletion live in
//! [`crate::normalize`]; invisible characters are refused by
//! [`crate::validate`].

use crate::effect::{edit_class, lexicons_for, polarity_changes, EditClass};
use crate::lang::{self, Language};
use koas_md::shape::{Area, ShapeChange};
use koas_review_schema::apply::{Fix, OpOrigin};
use koas_review_schema::edit_op::{Action, Alert, EditOp, ReviewNote, ReviewPolicy};
use koas_review_schema::rejection::RejectClass;
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

/// What the guards see of one op, besides the op itself.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// The text the op replaces: its `before_text`, or its target's text
    /// (empty for an insert).
    pub before: &'a str,
    /// The whole lines the op changes, before and after (the lines that
    /// differ, each side joined), so that the words around the change are
    /// compared too; `None` for an op that changes no line.
    pub lines: Option<(&'a str, &'a str)>,
    /// How the change alters the Markdown structure of the blocks around
    /// it ([`crate::effect::structure_changes`]).
    pub structure: &'a [ShapeChange],
    /// Who proposed the op.
    pub origin: OpOrigin,
    /// `--strict`.
    pub strict: bool,
    /// The silent tier, for a corrected kind.
    pub policy: &'a ReviewPolicy,
}

/// What the guards decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Guarded {
    /// Each guard that fired, in order; the op was changed as each says.
    pub fixes: Vec<Fix>,
    /// The op must be refused: its class and why (the op's label is added
    /// by the caller).
    pub refused: Option<(RejectClass, String)>,
}

impl Guarded {
    fn fire(&mut self, guard: &str, reason: String) {
        self.fixes.push(Fix::ContentGuard {
            guard: guard.into(),
            reason,
        });
    }

    fn refuse(mut self, class: RejectClass, guard: &str, reason: String) -> Guarded {
        self.fire(guard, reason.clone());
        self.refused = Some((class, reason));
        self
    }
}

/// The structure areas an op kind declares as its purpose: an op whose
/// kind is `heading` may change a heading, one whose kind is `structure`
/// or `formatting` any part of the structure.
pub fn declared_areas(kind: &str) -> &'static [Area] {
    const ALL: &[Area] = &[
        Area::Heading,
        Area::List,
        Area::Table,
        Area::Quote,
        Area::Code,
        Area::Html,
        Area::Rule,
        Area::Footnote,
        Area::Nesting,
        Area::Image,
        Area::Paragraph,
        Area::Emphasis,
        Area::Link,
        Area::Span,
        Area::Break,
    ];
    match kind.trim().to_lowercase().as_str() {
        "structure" | "markdown" | "formatting" | "format" | "layout" | "mise en forme" => ALL,
        "heading" | "headings" | "title" | "titre" | "titres" | "numbering" | "numérotation" => {
            &[Area::Heading]
        }
        "list" | "lists" | "liste" | "listes" => &[Area::List, Area::Nesting],
        "table" | "tables" | "tableau" | "tableaux" => &[Area::Table],
        "html" => &[Area::Html],
        "code" => &[Area::Code],
        "quote" | "citation" => &[Area::Quote],
        "image" | "images" => &[Area::Image],
        "footnote" | "footnotes" | "note" => &[Area::Footnote],
        "rule" => &[Area::Rule],
        // The checks' certain fixes of headings (`heading_level_skip`…).
        k if k.starts_with("heading") => &[Area::Heading],
        _ => &[],
    }
}

fn describe_all(changes: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut text = changes
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if changes.len() > SHOWN {
        text.push_str(&format!("; and {} more", changes.len() - SHOWN));
    }
    text
}

/// The reason a `--strict` refusal gives.
fn strict_reason(reason: &str) -> String {
    format!("{reason}; --strict refuses such a change (without it, it is applied with a warning)")
}

/// Runs the content guards on `op`. Each guard that fires changes the op
/// as the module documentation says and is returned; a refusal ends the
/// run.
pub fn run(op: &mut EditOp, seen: &Seen<'_>, ctx: &GuardContext) -> Guarded {
    let mut out = Guarded::default();
    if op.action == Action::FlagOnly {
        return out;
    }
    let after = op.after_text.clone();
    if language_guard(op, &after, seen.before, ctx, &mut out) {
        return out;
    }
    if let Some(refused) = structure_guard(op, seen, &mut out) {
        return refused;
    }
    if op.action == Action::Delete {
        // A deletion needs attention and a CAUTION note already; its
        // words are gone by definition.
        return out;
    }
    word_guards(op, seen, ctx, &after, out)
}

/// The language guard: new text in another language than the text it
/// replaces (or the document) is flagged only. `true` when it fired.
fn language_guard(
    op: &mut EditOp,
    after: &str,
    before: &str,
    ctx: &GuardContext,
    out: &mut Guarded,
) -> bool {
    if matches!(op.action, Action::Replace | Action::Insert) {
        if let Some(other) = lang::detect_confident(after) {
            // Judged against the text it replaces when that says
            // something, else against the document.
            let expected = lang::detect_confident(before).unwrap_or(ctx.language);
            if other != expected {
                let reason = format!(
                    "the new text is in {}, the document in {}: shown for a decision, not applied",
                    other.name(),
                    expected.name()
                );
                op.action = Action::FlagOnly;
                warn(op, &reason);
                out.fire("LANGUAGE_GUARD", reason);
                return true;
            }
        }
    }
    false
}

/// The structure guard. `Some` with the refusal when it refuses the op.
fn structure_guard(op: &mut EditOp, seen: &Seen<'_>, out: &mut Guarded) -> Option<Guarded> {
    // An insertion or a deletion adds or removes paragraphs, and the
    // formatting inside them, by what it is: only what it does to the
    // block structure counts.
    let structure: Vec<&ShapeChange> = seen
        .structure
        .iter()
        .filter(|c| op.action == Action::Replace || c.area.is_block())
        .collect();
    if !structure.is_empty() {
        let what: Vec<String> = structure.iter().map(|c| c.what.clone()).collect();
        let reason = format!("changes the structure: {}", describe_all(&what));
        if seen.origin == OpOrigin::Model {
            if let Some(open) = structure.iter().find(|c| c.leaves_open) {
                return Some(std::mem::take(out).refuse(
                    RejectClass::Structure,
                    "STRUCTURE_GUARD",
                    format!(
                        "{}: a model's change never leaves an element, a comment or a fence open (a fix closes what it opens)",
                        open.what
                    ),
                ));
            }
            let allowed = declared_areas(&op.kind);
            let undeclared: Vec<&&ShapeChange> = structure
                .iter()
                .filter(|c| c.area.is_block() && !allowed.contains(&c.area))
                .collect();
            if let Some(first) = undeclared.first() {
                return Some(std::mem::take(out).refuse(
                    RejectClass::Structure,
                    "STRUCTURE_GUARD",
                    format!(
                        "{}: a model's change of kind '{}' may not change the document's structure (a change whose kind declares it, such as 'heading', 'list', 'table' or 'structure', is applied with a note)",
                        first.what, op.kind
                    ),
                ));
            }
        }
        if seen.strict {
            return Some(std::mem::take(out).refuse(
                RejectClass::Guard,
                "STRUCTURE_GUARD",
                strict_reason(&reason),
            ));
        }
        // A "typo" that changes the structure is not a typo.
        let reason = if EditClass::claimed_by(&op.kind).is_some() {
            let corrected = format!("{reason}; declared '{}', kind set to structure", op.kind);
            op.kind = "structure".into();
            corrected
        } else {
            reason
        };
        warn(op, &reason);
        out.fire("STRUCTURE_GUARD", reason);
    }
    None
}

/// The guards on the op's words: tokens, meaning, kind.
fn word_guards(
    op: &mut EditOp,
    seen: &Seen<'_>,
    ctx: &GuardContext,
    after: &str,
    mut out: Guarded,
) -> Guarded {
    let before = seen.before;
    let changes = token_changes(before, after);
    if !changes.is_empty() {
        let reason = format!("changes {}", changes.join("; "));
        if seen.strict {
            return out.refuse(RejectClass::Guard, "TOKEN_GUARD", strict_reason(&reason));
        }
        warn(op, &reason);
        out.fire("TOKEN_GUARD", reason);
    }

    let (old_lines, new_lines) = seen.lines.unwrap_or((before, after));
    let lexicons = lexicons_for(ctx.language, old_lines);
    // New text inserted says what it says: its polarity words matter when
    // the insertion would otherwise be silent.
    let polarity = if op.action == Action::Insert && !op.silent {
        Vec::new()
    } else {
        polarity_changes(old_lines, new_lines, &lexicons)
    };
    if !polarity.is_empty() {
        let described: Vec<String> = polarity.iter().map(|p| p.describe()).collect();
        let reason = format!("changes the meaning: {}", describe_all(&described));
        if seen.strict {
            return out.refuse(RejectClass::Guard, "MEANING_GUARD", strict_reason(&reason));
        }
        warn(op, &reason);
        out.fire("MEANING_GUARD", reason);
    }

    let claimed = EditClass::claimed_by(&op.kind);
    if claimed.is_some() || op.silent {
        let effect = edit_class(old_lines, new_lines, &lexicons);
        if effect == EditClass::Rewrite {
            let reason = format!(
                "declared '{}' but it replaces, adds or removes other words: a rewrite, kind set to style",
                op.kind
            );
            op.kind = EditClass::Rewrite.kind().into();
            warn(op, &reason);
            out.fire("REWRITE_GUARD", reason);
        } else if claimed.is_some_and(|c| effect > c) {
            let reason = format!(
                "declared '{}' but it is a {} change: kind corrected",
                op.kind,
                effect.kind()
            );
            op.kind = effect.kind().into();
            if op.silent && !seen.policy.is_silent_kind(&op.kind) {
                warn(op, &reason);
            }
            out.fire("KIND_GUARD", reason);
        }
    }
    out
}

#[cfg(test)]
mod tests;
