//! GitHub Actions workflow commands:
//! `::warning file=docs/a.md,line=3,endLine=4,col=1,title=koas ai_leftover::message`,
//! with `endColumn` when the finding is a span of one line (a word).

use super::FileFindings;
use koas_review_schema::findings::Severity;

/// Escapes the message part of a workflow command.
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property value of a workflow command.
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

fn command(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    }
}

/// One workflow command per finding.
pub fn render_github(files: &[FileFindings<'_>]) -> String {
    let mut out = String::new();
    for file in files {
        for f in file.findings {
            // GitHub reads an end column on a one-line annotation only.
            let end_column = match f.column_end {
                Some(end) if f.line_end == f.line => format!(",endColumn={end}"),
                _ => String::new(),
            };
            out.push_str(&format!(
                "::{} file={},line={},endLine={},col={}{end_column},title={}::{}\n",
                command(f.severity),
                escape_property(file.path),
                f.line,
                f.line_end,
                f.column.max(1),
                escape_property(&format!("koas {}", f.kind_name())),
                escape_data(&f.message)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::findings::{Finding, FindingKind};

    #[test]
    fn commands_per_severity_with_escaping() {
        let mut f = vec![
            Finding::new(
                FindingKind::AiLeftover,
                "k",
                3,
                4,
                "100% wrong,\nreally",
                "x",
            ),
            Finding::new(FindingKind::TerminologyDrift, "k", 7, 7, "pick one", "x"),
            Finding::new(FindingKind::Misspelling, "k", 9, 9, "explians", "x").at_span(5, 13),
        ];
        f[0].severity = Severity::Error;
        let text = render_github(&[FileFindings {
            path: "dir,x/a:b.md",
            findings: &f,
            suppressed: &[],
        }]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "::error file=dir%2Cx/a%3Ab.md,line=3,endLine=4,col=1,title=koas ai_leftover::100%25 wrong,%0Areally"
        );
        assert_eq!(lines[1], "::notice file=dir%2Cx/a%3Ab.md,line=7,endLine=7,col=1,title=koas terminology_drift::pick one");
        assert_eq!(
            lines[2],
            "::warning file=dir%2Cx/a%3Ab.md,line=9,endLine=9,col=5,endColumn=13,title=koas misspelling::explians"
        );
    }
}
