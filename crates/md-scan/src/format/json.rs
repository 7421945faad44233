//! JSON: an array of findings, each with the `file` it belongs to.

use super::FileFindings;
use koas_review_schema::findings::Finding;
use serde::Serialize;

/// A finding with the file it belongs to, `file` first.
#[derive(Serialize)]
struct Located<'a> {
    file: &'a str,
    #[serde(flatten)]
    finding: &'a Finding,
}

/// A pretty-printed JSON array; each element is a finding with a `file`
/// key first, then the finding's fields in their documented order.
pub fn render_json(files: &[FileFindings<'_>]) -> String {
    let items: Vec<Located<'_>> = files
        .iter()
        .flat_map(|file| {
            file.findings.iter().map(move |finding| Located {
                file: file.path,
                finding,
            })
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&items).unwrap_or_else(|_| "[]".into());
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::findings::{Finding, FindingKind};
    use serde_json::Value;

    #[test]
    fn array_of_findings_with_their_file() {
        let f = vec![Finding::new(
            FindingKind::TableStructure,
            "md_consistency_scan",
            4,
            6,
            "m",
            "e",
        )];
        let text = render_json(&[
            FileFindings {
                path: "a.md",
                findings: &f,
                suppressed: &[],
            },
            FileFindings {
                path: "b.md",
                findings: &[],
                suppressed: &[],
            },
        ]);
        let v: Value = serde_json::from_str(&text).expect("valid JSON");
        let arr = v.as_array().expect("array");
        assert_eq!(arr.len(), 1);
        assert_eq!(arr[0]["file"], "a.md");
        assert_eq!(arr[0]["kind"], "table_structure");
        assert_eq!(arr[0]["line_end"], 6);
        assert_eq!(arr[0]["severity"], "error");
        let keys: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix('"')?.split('"').next())
            .collect();
        assert_eq!(
            keys,
            [
                "file", "kind", "line", "column", "line_end", "severity", "message", "evidence",
                "kernel"
            ]
        );
        assert_eq!(render_json(&[]), "[]\n");
    }
}
