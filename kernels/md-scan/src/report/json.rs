//! JSON: an array of findings, each with the `file` it belongs to.

use super::FileFindings;
use serde_json::Value;

/// A pretty-printed JSON array; each element is a finding with a `file`
/// key added first.
pub fn render_json(files: &[FileFindings<'_>]) -> String {
    let mut items: Vec<Value> = Vec::new();
    for file in files {
        for f in file.findings {
            let mut obj = serde_json::Map::new();
            obj.insert("file".into(), Value::String(file.path.to_string()));
            if let Ok(Value::Object(fields)) = serde_json::to_value(f) {
                obj.extend(fields);
            }
            items.push(Value::Object(obj));
        }
    }
    let mut text =
        serde_json::to_string_pretty(&Value::Array(items)).unwrap_or_else(|_| "[]".into());
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Finding, FindingKind};

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
            },
            FileFindings {
                path: "b.md",
                findings: &[],
            },
        ]);
        let v: Value = serde_json::from_str(&text).expect("valid JSON");
        let arr = v.as_array().expect("array");
        assert_eq!(arr.len(), 1);
        assert_eq!(arr[0]["file"], "a.md");
        assert_eq!(arr[0]["kind"], "table_structure");
        assert_eq!(arr[0]["line_end"], 6);
        assert_eq!(arr[0]["severity"], "error");
        assert_eq!(render_json(&[]), "[]\n");
    }
}
