//! Level 6, `freeform_salvage`: prose answers.

use super::op::{EditAction, RawEditOp};
use super::Found;
use regex::Regex;
use std::sync::OnceLock;

/// Answers longer than this are never read as "no changes needed": a long
/// text that contains the phrase usually goes on to describe a change.
const MAX_NO_CHANGE_CHARS: usize = 300;
/// The rationale of a salvaged finding keeps at most this many characters.
const MAX_RATIONALE_CHARS: usize = 2000;

fn no_change_re() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)\b(?:",
            // English
            r"no\s+(?:changes?|edits?|corrections?|modifications?|issues?|problems?|errors?)\s+(?:are\s+|is\s+)?(?:needed|required|necessary|found|to\s+(?:make|suggest|report))",
            r"|nothing\s+to\s+(?:change|correct|fix|edit|report)",
            r"|(?:the\s+)?(?:text|chunk|section|passage|document)\s+(?:looks|is|seems)\s+(?:good|fine|correct|clean)",
            r"|no\s+edits|lgtm",
            // French
            r"|aucune?\s+(?:modifications?|corrections?|changements?|erreurs?|problèmes?)",
            r"|rien\s+à\s+(?:modifier|corriger|changer|signaler)",
            r"|pas\s+de\s+(?:modifications?|corrections?|changements?)",
            r"|(?:le\s+texte|la\s+section|ce\s+passage)\s+(?:est|semble|me\s+semble)\s+correct",
            r")",
        ))
        .ok()
    })
    .as_ref()
}

/// The answer markers of the prompts, which are protocol, not prose.
const MARKERS: &[&str] = &[
    "BEGIN_EDIT_OPS",
    "END_EDIT_OPS",
    "<EDIT_OPS>",
    "</EDIT_OPS>",
];

/// A line that carries no prose: blank, an answer marker, a code fence,
/// a bare number (a line number the model wrote on its own), a mask
/// placeholder (`[MATH_3]`), or nothing but brackets and punctuation
/// (`[]`, `{}`, `---`).
fn is_noise(line: &str) -> bool {
    let t = line.trim();
    let placeholder = t
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split_once('_')
        .is_some_and(|(name, n)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_uppercase())
                && !n.is_empty()
                && n.chars().all(|c| c.is_ascii_digit())
        });
    placeholder
        || t.chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == ')' || c.is_whitespace())
        || MARKERS.iter().any(|m| t.eq_ignore_ascii_case(m))
        || t.strip_prefix("```")
            .is_some_and(|lang| lang.chars().all(|c| c.is_ascii_alphanumeric()))
        || t.chars()
            .all(|c| c.is_whitespace() || "[]{}()<>,;:.-_=*#|`'\"".contains(c))
}

/// "No changes needed" (EN/FR) in a short answer → success with no ops;
/// other prose → one `flag_only` op carrying the prose as rationale; text
/// without any letter → failure. Protocol noise (markers, empty lists,
/// fences) is not prose: an answer made of nothing else says "no changes"
/// (small models repeat `BEGIN_EDIT_OPS` and `[]` until the budget runs
/// out), and it is left out of a salvaged rationale.
pub(crate) fn extract(text: &str) -> Result<Found, String> {
    let prose = text
        .lines()
        .filter(|l| !is_noise(l))
        .collect::<Vec<_>>()
        .join("\n");
    let no_changes = || Found {
        no_changes: true,
        ..Found::ops(Vec::new(), 0)
    };
    if !prose.chars().any(char::is_alphabetic) {
        if text
            .lines()
            .any(|l| MARKERS.iter().any(|m| l.trim().eq_ignore_ascii_case(m)))
        {
            return Ok(no_changes());
        }
        return Err("no prose to salvage".to_string());
    }
    let short = prose.chars().count() <= MAX_NO_CHANGE_CHARS;
    if short && no_change_re().is_some_and(|re| re.is_match(&prose)) {
        return Ok(no_changes());
    }
    let mut op = RawEditOp::new(EditAction::FlagOnly);
    op.rationale = Some(prose.chars().take(MAX_RATIONALE_CHARS).collect());
    Ok(Found::ops(vec![op], 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_compiles() {
        assert!(no_change_re().is_some());
    }

    #[test]
    fn no_change_variants() {
        for text in [
            "No changes needed.",
            "There are no issues found in this chunk.",
            "Nothing to fix here.",
            "The text looks good.",
            "LGTM",
            "Aucune correction nécessaire.",
            "Rien à signaler.",
            "Pas de modification.",
            "Le texte me semble correct.",
        ] {
            let found = extract(text).unwrap();
            assert!(found.no_changes && found.ops.is_empty(), "{text}");
        }
    }

    #[test]
    fn prose_becomes_one_finding() {
        let found = extract("The date in the table disagrees with section 2.").unwrap();
        assert_eq!(found.ops.len(), 1);
        assert_eq!(found.ops[0].action, EditAction::FlagOnly);
        let long = format!(
            "No changes needed, but {}",
            "the figure is wrong. ".repeat(30)
        );
        let found = extract(&long).unwrap();
        assert!(!found.no_changes);
        assert_eq!(
            found.ops[0].rationale.as_ref().map(|r| r.chars().count()),
            Some(long.chars().count().min(2000))
        );
    }

    #[test]
    fn regression_markers_and_empty_lists_are_not_a_finding() {
        let found = extract("BEGIN_EDIT_OPS\n[]\n\nBEGIN_EDIT_OPS\n{}\n```json\n```").unwrap();
        assert!(found.no_changes && found.ops.is_empty());
        // Line numbers and mask placeholders on their own are not prose.
        let found = extract("1\n[MATH_0]\n2\n[MATH_1]\n3.\nBEGIN_EDIT_OPS").unwrap();
        assert!(found.no_changes && found.ops.is_empty());
        // Prose among the noise is kept, without the noise.
        let found =
            extract("BEGIN_EDIT_OPS\n[]\nThe date in section 2 disagrees with the table.\n[]")
                .unwrap();
        assert_eq!(
            found.ops[0].rationale.as_deref(),
            Some("The date in section 2 disagrees with the table.")
        );
    }

    #[test]
    fn letterless_text_fails() {
        assert!(extract("{} [] 42 ---").is_err());
    }
}
