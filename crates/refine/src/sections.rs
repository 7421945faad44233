//! A document as refinement sees it: sections (each heading's own body),
//! their prose split around protected blocks, and the context anchors of
//! a section (the end of the one before, the start of the one after).

use koas_md::stage1::{protected_spans_for, section_index_for};
use koas_review_schema::stage1::{ProtectedSpans, SectionIndex, PREAMBLE_SECTION_ID};

/// One section: its heading and its own body, up to the next heading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocSection {
    /// Stage 1 section ID (`S2.1`), `S0` for text before the first heading.
    pub id: String,
    /// Heading text (empty for `S0`).
    pub title: String,
    /// Position among the sections, 0-based.
    pub index: usize,
    /// First body line, 1-based.
    pub body_start: usize,
    /// Last body line, 1-based inclusive (`body_start - 1` when empty).
    pub body_end: usize,
    /// The body's prose runs and protected blocks, in order.
    pub parts: Vec<Part>,
}

/// A piece of a section's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Lines a model may rewrite (blank lines at either end left out;
    /// may be empty).
    Prose(Run),
    /// A protected block (code, table, math, HTML, front matter): shown to
    /// the model as a placeholder it must keep.
    Kept(Run),
}

/// Consecutive lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// First line, 1-based (meaningless when `text` is empty).
    pub line_start: usize,
    /// Last line, 1-based inclusive.
    pub line_end: usize,
    /// The lines joined with `\n`.
    pub text: String,
}

/// The placeholder standing for protected block `n` (1-based).
pub fn placeholder(n: usize) -> String {
    format!("[[KEEP {n}]]")
}

impl DocSection {
    /// The body as a model sees it: prose, and placeholders for the
    /// protected blocks.
    pub fn working_text(&self) -> String {
        let mut out: Vec<String> = Vec::new();
        let mut kept = 0;
        for part in &self.parts {
            match part {
                Part::Prose(run) if !run.text.is_empty() => out.push(run.text.clone()),
                Part::Prose(_) => {}
                Part::Kept(_) => {
                    kept += 1;
                    out.push(placeholder(kept));
                }
            }
        }
        out.join("\n\n")
    }

    /// The body's full text.
    pub fn body_text(&self, lines: &[&str]) -> String {
        if self.body_end < self.body_start {
            return String::new();
        }
        lines[self.body_start - 1..self.body_end.min(lines.len())].join("\n")
    }

    /// The number of protected blocks.
    pub fn kept_count(&self) -> usize {
        self.parts
            .iter()
            .filter(|p| matches!(p, Part::Kept(_)))
            .count()
    }
}

/// The document's lines, as the apply engine counts them.
pub fn doc_lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

fn empty_index() -> SectionIndex {
    SectionIndex {
        doc_hash: String::new(),
        line_count: 0,
        sections: Vec::new(),
    }
}

fn empty_spans() -> ProtectedSpans {
    ProtectedSpans {
        doc_hash: String::new(),
        line_count: 0,
        blocks: Vec::new(),
        inlines: Vec::new(),
    }
}

/// The protected regions of `text`.
pub fn protected_of(text: &str) -> ProtectedSpans {
    protected_spans_for(text, empty_spans()).0
}

/// The sections of `text`, in order. Text before the first heading is
/// section `S0` when it holds anything but blank lines.
pub fn sections_of(text: &str) -> Vec<DocSection> {
    let lines = doc_lines(text);
    let index = section_index_for(text, empty_index());
    let spans = protected_of(text);
    let mut out = Vec::new();
    let first_heading = index
        .sections
        .first()
        .map(|s| s.line_start as usize)
        .unwrap_or(lines.len() + 1);
    if first_heading > 1
        && lines[..first_heading - 1]
            .iter()
            .any(|l| !l.trim().is_empty())
    {
        out.push(build(
            PREAMBLE_SECTION_ID,
            "",
            1,
            first_heading - 1,
            &lines,
            &spans,
        ));
    }
    for s in &index.sections {
        let start = s.heading_line_end as usize + 1;
        let end = s.body_line_end as usize;
        out.push(build(
            &s.id,
            &s.title,
            start,
            end.max(start - 1),
            &lines,
            &spans,
        ));
    }
    for (i, s) in out.iter_mut().enumerate() {
        s.index = i;
    }
    out
}

fn build(
    id: &str,
    title: &str,
    body_start: usize,
    body_end: usize,
    lines: &[&str],
    spans: &ProtectedSpans,
) -> DocSection {
    let mut parts = Vec::new();
    let mut line = body_start;
    let mut prose_start = body_start;
    let flush = |parts: &mut Vec<Part>, from: usize, to: usize| {
        parts.push(Part::Prose(trimmed_run(lines, from, to)));
    };
    while line <= body_end {
        let block = spans
            .block_at_line(line as u32)
            .map(|b| (b.line_start as usize, b.line_end as usize));
        match block {
            Some((_, block_end)) => {
                flush(&mut parts, prose_start, line.saturating_sub(1));
                let end = block_end.min(body_end).max(line);
                parts.push(Part::Kept(Run {
                    line_start: line,
                    line_end: end,
                    text: lines[line - 1..end].join("\n"),
                }));
                line = end + 1;
                prose_start = line;
            }
            None => line += 1,
        }
    }
    flush(&mut parts, prose_start, body_end);
    DocSection {
        id: id.to_owned(),
        title: title.to_owned(),
        index: 0,
        body_start,
        body_end,
        parts,
    }
}

/// Lines `from..=to` without blank lines at either end.
fn trimmed_run(lines: &[&str], from: usize, to: usize) -> Run {
    let mut a = from;
    let mut b = to.min(lines.len());
    while a <= b && a >= 1 && lines[a - 1].trim().is_empty() {
        a += 1;
    }
    while b >= a && b >= 1 && lines[b - 1].trim().is_empty() {
        b -= 1;
    }
    if a > b || a == 0 {
        return Run {
            line_start: from,
            line_end: from.saturating_sub(1),
            text: String::new(),
        };
    }
    Run {
        line_start: a,
        line_end: b,
        text: lines[a - 1..b].join("\n"),
    }
}

/// Sentences of `text` (split after `.`, `!`, `?` followed by a space or
/// the end).
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        current.push(*c);
        let end = matches!(c, '.' | '!' | '?' | '。' | '！' | '？')
            && chars.get(i + 1).map_or(true, |n| n.is_whitespace());
        if end {
            let s = current.split_whitespace().collect::<Vec<_>>().join(" ");
            if !s.is_empty() {
                out.push(s);
            }
            current.clear();
        }
    }
    let s = current.split_whitespace().collect::<Vec<_>>().join(" ");
    if !s.is_empty() {
        out.push(s);
    }
    out
}

/// The last `n` sentences of the prose of `section`.
pub fn ending(section: &DocSection, n: usize) -> String {
    let s = sentences(&prose_of(section));
    s[s.len().saturating_sub(n)..].join(" ")
}

/// The first `n` sentences of the prose of `section`.
pub fn beginning(section: &DocSection, n: usize) -> String {
    sentences(&prose_of(section))
        .into_iter()
        .take(n)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The prose of a section, protected blocks left out.
pub fn prose_of(section: &DocSection) -> String {
    section
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Prose(r) if !r.text.is_empty() => Some(r.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "Intro line.\n\n# Title\n\nFirst para. Second sentence.\n\n```sh\nrm -rf /\n```\n\nAfter code.\n\n## Sub\n\nSub text.\n";

    #[test]
    fn sections_split_prose_around_protected_blocks() {
        let s = sections_of(DOC);
        let ids: Vec<&str> = s.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids[0], "S0");
        assert_eq!(s.len(), 3, "{s:#?}");
        let title = &s[1];
        assert_eq!(title.title, "Title");
        assert_eq!(title.kept_count(), 1);
        assert_eq!(
            title.working_text(),
            "First para. Second sentence.\n\n[[KEEP 1]]\n\nAfter code."
        );
        match &title.parts[0] {
            Part::Prose(r) => assert_eq!((r.line_start, r.line_end), (5, 5)),
            other => panic!("{other:?}"),
        }
        assert_eq!(ending(title, 1), "After code.");
        assert_eq!(beginning(title, 1), "First para.");
        assert_eq!(s[2].index, 2);
    }

    #[test]
    fn sentences_split_on_terminal_punctuation() {
        assert_eq!(
            sentences("One. Two? Three 3.5 four"),
            ["One.", "Two?", "Three 3.5 four"]
        );
    }
}
