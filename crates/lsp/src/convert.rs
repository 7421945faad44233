//! Findings as LSP diagnostics, fixes as text edits.

use crate::text::Text;
use koas_review_schema::findings::{Finding, Severity};
use lsp_types::{
    CodeDescription, Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, Location,
    NumberOrString, Position, Range, TextEdit, Uri,
};

/// The source every diagnostic carries.
pub const SOURCE: &str = "koas";

/// The range a finding covers in `text`: its span `column..column_end`
/// when it has one (a word), else from its column on its first line to
/// the end of its last line (clamped to the text). Columns count
/// characters; positions are in UTF-16 code units, as the server
/// declares (`positionEncoding`).
pub fn finding_range(text: &Text, finding: &Finding) -> Range {
    let last_line = text.line_count().saturating_sub(1);
    let first = (finding.line.max(1) as usize - 1).min(last_line);
    let last = (finding.line_end.max(finding.line) as usize - 1).clamp(first, last_line);
    let column = finding.column.max(1) as usize - 1;
    let start = text.position_of_char(first, column);
    match finding.column_end {
        Some(end) if last == first => Range::new(
            start,
            text.position_of_char(first, (end.max(1) as usize - 1).max(column)),
        ),
        _ => Range::new(start, text.line_range(last).end),
    }
}

/// The text of a finding's span (`column..column_end` of its line), when
/// it has one.
pub fn span_text(text: &Text, finding: &Finding) -> Option<String> {
    let end = finding.column_end? as usize;
    if finding.line_end != finding.line || finding.line == 0 {
        return None;
    }
    let start = finding.column.max(1) as usize - 1;
    let line = text.line(finding.line as usize - 1);
    Some(
        line.chars()
            .skip(start)
            .take(end.saturating_sub(1).saturating_sub(start))
            .collect(),
    )
}

/// The title of the quick fix putting `suggestion` in place of `word`
/// (an empty suggestion removes the word).
pub fn suggestion_title(word: &str, suggestion: &str) -> String {
    if suggestion.is_empty() {
        format!("koas: remove “{}”", word.trim())
    } else {
        format!("koas: “{}” → “{suggestion}”", word.trim())
    }
}

/// The other lines a message names ("repeats the paragraph at line 94",
/// "the table that follows at line 5"): related information.
fn named_lines(message: &str, own: u32) -> Vec<u32> {
    let mut lines = Vec::new();
    let mut rest = message;
    while let Some(i) = rest.find("line ") {
        rest = &rest[i + 5..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(n) = digits.parse::<u32>() {
            if n != own && n > 0 && !lines.contains(&n) {
                lines.push(n);
            }
        }
    }
    lines
}

/// A finding as a diagnostic of the document at `uri`.
pub fn diagnostic(text: &Text, uri: &Uri, finding: &Finding, docs_base: &str) -> Diagnostic {
    let kind = finding.kind_name();
    // A style rule's own page, else the kind's row of the documentation.
    let page = match (&finding.rule, &finding.link) {
        (Some(_), Some(link)) => link.clone(),
        _ => finding.kind.doc_url(docs_base),
    };
    let code_description = page
        .parse::<Uri>()
        .ok()
        .map(|href| CodeDescription { href });
    let related: Vec<DiagnosticRelatedInformation> = named_lines(&finding.message, finding.line)
        .into_iter()
        .filter(|&n| (n as usize) <= text.line_count())
        .map(|n| DiagnosticRelatedInformation {
            location: Location {
                uri: uri.clone(),
                range: text.line_range(n as usize - 1),
            },
            message: format!("line {n}"),
        })
        .collect();
    Diagnostic {
        range: finding_range(text, finding),
        severity: Some(match finding.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
            Severity::Info => DiagnosticSeverity::INFORMATION,
        }),
        code: Some(NumberOrString::String(kind.to_string())),
        code_description,
        source: Some(SOURCE.to_string()),
        message: finding.message.clone(),
        related_information: (!related.is_empty()).then_some(related),
        tags: None,
        data: None,
    }
}

/// A finding's certain fix as text edits, when every line it changes
/// still reads as the finding saw it.
pub fn fix_edits(text: &Text, finding: &Finding) -> Option<Vec<TextEdit>> {
    let fix = finding.fix.as_ref()?;
    let mut edits = Vec::new();
    for edit in &fix.edits {
        let line = (edit.line as usize).checked_sub(1)?;
        if line >= text.line_count() || text.line(line) != edit.before {
            return None;
        }
        edits.push(match &edit.after {
            Some(after) => TextEdit::new(text.line_range(line), after.clone()),
            None if line + 1 < text.line_count() => TextEdit::new(
                Range::new(
                    Position::new(line as u32, 0),
                    Position::new(line as u32 + 1, 0),
                ),
                String::new(),
            ),
            // The last line: remove it with the line ending before it.
            None if line > 0 => TextEdit::new(
                Range::new(text.line_range(line - 1).end, text.line_range(line).end),
                String::new(),
            ),
            None => TextEdit::new(text.line_range(line), String::new()),
        });
    }
    Some(edits)
}

/// The edit that inserts `<!-- koas-disable-next-line KIND -->` above the
/// finding's first line, indented like it.
pub fn disable_edit(text: &Text, finding: &Finding) -> TextEdit {
    let line = (finding.line.max(1) as usize - 1).min(text.line_count().saturating_sub(1));
    let content = text.line(line);
    let indent: String = content
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    TextEdit::new(
        Range::new(Position::new(line as u32, 0), Position::new(line as u32, 0)),
        format!(
            "{indent}<!-- koas-disable-next-line {} -->\n",
            finding.kind_name()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::findings::{FindingKind, Fix, FixEdit};

    fn finding(line: u32, message: &str) -> Finding {
        Finding::new(
            FindingKind::DuplicateParagraph,
            "k",
            line,
            line,
            message.to_string(),
            "e",
        )
    }

    #[test]
    fn ranges_related_lines_and_severity() {
        let text = Text::new("# T\n\nSame.\n\nSame.\n".into());
        let uri: Uri = "file:///tmp/d.md".parse().expect("uri");
        let f = finding(
            5,
            "This paragraph repeats the paragraph at line 3 word for word",
        );
        let d = diagnostic(&text, &uri, &f, "https://example.invalid/koas");
        assert_eq!(
            d.range,
            Range::new(Position::new(4, 0), Position::new(4, 5))
        );
        assert_eq!(
            d.code,
            Some(NumberOrString::String("duplicate_paragraph".into()))
        );
        assert_eq!(d.severity, Some(DiagnosticSeverity::WARNING));
        let related = d.related_information.expect("the twin");
        assert_eq!(related[0].location.range.start.line, 2);
        assert_eq!(
            d.code_description.map(|c| c.href.to_string()).as_deref(),
            Some("https://example.invalid/koas/blob/main/docs/check.md#duplicate_paragraph")
        );
    }

    #[test]
    fn a_word_span_is_its_range_in_utf16_units() {
        // "😀" is two UTF-16 units: the word after it starts at unit 6.
        let text = Text::new("# T\n\nÉté 😀 explians it.\n".into());
        let f = Finding::new(FindingKind::Misspelling, "k", 3, 3, "m", "e")
            .at_span(7, 15)
            .with_suggestions(vec!["explains".into(), String::new()]);
        let uri: Uri = "file:///tmp/d.md".parse().expect("uri");
        let d = diagnostic(&text, &uri, &f, "https://example.invalid/koas");
        assert_eq!(
            d.range,
            Range::new(Position::new(2, 7), Position::new(2, 15))
        );
        assert_eq!(d.code, Some(NumberOrString::String("misspelling".into())));
        assert_eq!(d.source.as_deref(), Some(SOURCE));
        assert_eq!(span_text(&text, &f).as_deref(), Some("explians"));
        assert_eq!(
            suggestion_title("explians", "explains"),
            "koas: “explians” → “explains”"
        );
        assert_eq!(suggestion_title("the", ""), "koas: remove “the”");
        // Without a span: to the end of the line.
        let whole = Finding::new(FindingKind::Misspelling, "k", 3, 3, "m", "e").at_column(7);
        assert_eq!(finding_range(&text, &whole).end, Position::new(2, 19));
        assert_eq!(span_text(&text, &whole), None);
    }

    #[test]
    fn fixes_apply_only_to_the_lines_they_saw() {
        let text = Text::new("# T\n\n##\n\nx\n".into());
        let mut f = finding(3, "empty");
        f.fix = Some(Fix {
            description: "remove".into(),
            edits: vec![FixEdit {
                line: 3,
                before: "##".into(),
                after: None,
            }],
        });
        let edits = fix_edits(&text, &f).expect("applies");
        assert_eq!(
            edits[0].range,
            Range::new(Position::new(2, 0), Position::new(3, 0))
        );
        let moved = Text::new("# T\n\nchanged\n".into());
        assert!(fix_edits(&moved, &f).is_none());
        let d = disable_edit(&Text::new("# T\n\n  - item\n".into()), &finding(3, "x"));
        assert_eq!(
            d.new_text,
            "  <!-- koas-disable-next-line duplicate_paragraph -->\n"
        );
    }
}
