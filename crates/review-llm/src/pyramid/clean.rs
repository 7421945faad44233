//! Turning a model's answer into a summary, and the summary a section
//! gets when the model gives nothing usable.
//!
//! Small local models wrap a summary in chat: "Sure! Here is a summary of
//! the section:", "I hope this helps." Those sentences are addressed to
//! whoever asked, not to a reader of the document, so they are cut; an
//! answer that is nothing but such sentences is no summary at all.

use crate::estimate_tokens;

/// Openers a model puts before the summary, lowercase.
const OPENERS: &[&str] = &[
    "sure",
    "certainly",
    "of course",
    "absolutely",
    "okay",
    "ok,",
    "here is",
    "here's",
    "here are",
    "below is",
    "the following is",
    "this is a summary",
    "summary:",
    "résumé :",
    "résumé:",
    "voici",
    "bien sûr",
    "certainement",
    "d'accord",
];

/// Closers a model puts after the summary, lowercase.
const CLOSERS: &[&str] = &[
    "i hope this helps",
    "hope this helps",
    "let me know",
    "feel free",
    "if you need",
    "if you have any",
    "is there anything",
    "n'hésitez pas",
    "j'espère que",
    "si vous avez",
    "as an ai",
    "en tant qu'ia",
    "en tant qu'intelligence artificielle",
];

/// Splits text into sentences, keeping their end punctuation.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        current.push(c);
        let ends =
            matches!(c, '.' | '!' | '?' | '…') && chars.peek().map_or(true, |n| n.is_whitespace());
        if ends || c == '\n' {
            let s = current.trim().to_owned();
            if !s.is_empty() {
                out.push(s);
            }
            current.clear();
        }
    }
    let s = current.trim().to_owned();
    if !s.is_empty() {
        out.push(s);
    }
    out
}

fn is_chatter(sentence: &str, list: &[&str]) -> bool {
    let lower = sentence
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    list.iter().any(|p| lower.starts_with(p))
}

/// The summary in a model's `answer`: chat openers and closers cut,
/// Markdown headings and emphasis markers dropped, whitespace collapsed,
/// cut at a sentence boundary to about `max_tokens`. `None` when nothing
/// is left.
pub fn clean_summary(answer: &str, max_tokens: u32) -> Option<String> {
    let mut kept: Vec<String> = Vec::new();
    let mut started = false;
    for line in answer.lines() {
        let line = line.trim();
        // A heading or a label line ("## Summary", "**Résumé**") is framing.
        if line.starts_with('#') || (line.starts_with("**") && line.ends_with("**")) {
            continue;
        }
        for sentence in sentences(line) {
            if !started && is_chatter(&sentence, OPENERS) && sentence.ends_with(':') {
                continue;
            }
            if !started && is_chatter(&sentence, OPENERS) && estimate_tokens(&sentence) < 12 {
                continue;
            }
            if is_chatter(&sentence, CLOSERS) {
                continue;
            }
            started = true;
            kept.push(sentence.replace("**", "").replace("__", ""));
        }
    }
    let text = truncate_sentences(&kept, max_tokens);
    let text = text.trim().trim_matches('"').trim();
    (!text.is_empty() && text.chars().any(char::is_alphanumeric)).then(|| text.to_owned())
}

/// Sentences joined by spaces until about `max_tokens` (at least one).
fn truncate_sentences(sentences: &[String], max_tokens: u32) -> String {
    let mut out = String::new();
    for s in sentences {
        let candidate = if out.is_empty() {
            s.clone()
        } else {
            format!("{out} {s}")
        };
        if !out.is_empty() && estimate_tokens(&candidate) > max_tokens {
            break;
        }
        out = candidate;
    }
    if estimate_tokens(&out) > max_tokens.saturating_mul(2) {
        // One endless sentence: cut it at a word.
        let limit = usize::try_from(max_tokens)
            .unwrap_or(usize::MAX)
            .saturating_mul(4);
        let mut cut: String = out.chars().take(limit).collect();
        if let Some(space) = cut.rfind(' ') {
            cut.truncate(space);
        }
        cut.push('…');
        return cut;
    }
    out
}

/// The summary a section gets without a model: its first sentences of
/// prose (headings, code, tables, HTML and front matter skipped), up to
/// about `max_tokens`. Empty when the section has no prose.
pub fn first_sentences(text: &str, max_tokens: u32) -> String {
    let mut prose = Vec::new();
    let mut in_fence = false;
    let mut fence = "";
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if i == 0 && (t == "---" || t == "+++") {
            in_fence = true;
            fence = t;
            continue;
        }
        if in_fence {
            if t.starts_with(fence) {
                in_fence = false;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = true;
            fence = if t.starts_with("```") { "```" } else { "~~~" };
            continue;
        }
        if t.is_empty()
            || t.starts_with('#')
            || t.starts_with('|')
            || t.starts_with('<')
            || t.starts_with("$$")
            || t.chars().all(|c| matches!(c, '-' | '=' | '*' | '_' | ' '))
        {
            continue;
        }
        let t = t.trim_start_matches(['-', '*', '+', '>', ' ']).trim();
        prose.extend(sentences(t));
        if estimate_tokens(&prose.join(" ")) > max_tokens {
            break;
        }
    }
    truncate_sentences(&prose, max_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_around_the_summary_is_cut() {
        let answer = "Sure! Here is a summary of the section:\n\nThe section defines the retention period of audit logs. Logs are kept 12 months.\n\nI hope this helps!";
        assert_eq!(
            clean_summary(answer, 100).as_deref(),
            Some(
                "The section defines the retention period of audit logs. Logs are kept 12 months."
            )
        );
        let fr = "Voici le résumé :\n**Résumé**\nLa section fixe la durée de conservation des journaux. N'hésitez pas à me demander.";
        assert_eq!(
            clean_summary(fr, 100).as_deref(),
            Some("La section fixe la durée de conservation des journaux.")
        );
    }

    #[test]
    fn nothing_but_chatter_or_blank_is_no_summary() {
        assert_eq!(clean_summary("", 100), None);
        assert_eq!(clean_summary("   \n\n  ", 100), None);
        assert_eq!(clean_summary("Sure, here is the summary:", 100), None);
        assert_eq!(clean_summary("Certainly! I hope this helps.", 100), None);
        assert_eq!(clean_summary("---\n***", 100), None);
    }

    #[test]
    fn long_answers_are_cut_at_a_sentence() {
        let answer = "One short sentence here. ".repeat(50);
        let out = clean_summary(&answer, 20).expect("summary");
        assert!(estimate_tokens(&out) <= 20, "{out}");
        assert!(out.ends_with('.'));
        let endless = "word ".repeat(500);
        let out = clean_summary(&endless, 10).expect("summary");
        assert!(out.ends_with('…') && estimate_tokens(&out) <= 20, "{out}");
    }

    #[test]
    fn first_sentences_skip_everything_but_prose() {
        let text = "## Retention\n\n```sh\nrm -rf /\n```\n\n| a | b |\n|---|---|\n\nLogs are kept 12 months. They are then deleted. A third sentence follows.\n";
        assert_eq!(
            first_sentences(text, 12),
            "Logs are kept 12 months. They are then deleted."
        );
        assert_eq!(first_sentences("```\ncode only\n```\n", 50), "");
    }
}
