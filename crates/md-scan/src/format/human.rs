//! Compiler-style text: `file:line:col: severity kind: message`, one
//! finding a line (the markdownlint and Vale convention), so that a reader
//! sees which lines fail the run without asking for JSON.

use super::FileFindings;
use koas_review_schema::findings::Severity;

/// One line per finding: `path:line:col: severity kind: message`.
pub fn render_human(files: &[FileFindings<'_>]) -> String {
    let mut out = String::new();
    for file in files {
        for f in file.findings {
            out.push_str(&format!(
                "{}:{}:{}: {} {}: {}\n",
                file.path,
                f.line,
                f.column,
                f.severity,
                f.kind_name(),
                f.message
            ));
        }
    }
    out
}

/// `N findings (E errors, W warnings, I info) in F files`.
pub fn summary_line(files: &[FileFindings<'_>]) -> String {
    let count = |s: Severity| {
        files
            .iter()
            .flat_map(|f| f.findings.iter())
            .filter(|f| f.severity == s)
            .count()
    };
    let total: usize = files.iter().map(|f| f.findings.len()).sum();
    let plural = |n: usize, word: &str| {
        if n == 1 {
            format!("{n} {word}")
        } else {
            format!("{n} {word}s")
        }
    };
    format!(
        "{} ({}, {}, {} info) in {}",
        plural(total, "finding"),
        plural(count(Severity::Error), "error"),
        plural(count(Severity::Warning), "warning"),
        count(Severity::Info),
        plural(files.len(), "file")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::findings::{Finding, FindingKind};

    #[test]
    fn one_compiler_style_line_per_finding() {
        let f = vec![
            Finding::new(FindingKind::AiLeftover, "k", 3, 3, "remove it", "x"),
            Finding::new(FindingKind::BrokenReference, "k", 9, 9, "no §5.3", "x").at_column(12),
        ];
        let files = [FileFindings {
            path: "docs/a.md",
            findings: &f,
            suppressed: &[],
        }];
        assert_eq!(
            render_human(&files),
            "docs/a.md:3:1: warning ai_leftover: remove it\ndocs/a.md:9:12: error broken_reference: no §5.3\n"
        );
        assert_eq!(
            summary_line(&files),
            "2 findings (1 error, 1 warning, 0 info) in 1 file"
        );
    }
}
