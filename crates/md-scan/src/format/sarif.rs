//! SARIF 2.1.0 (OASIS Static Analysis Results Interchange Format), the
//! format GitHub code scanning and most CI dashboards import.
//!
//! One run; one rule per finding kind (all of them are listed, so rule
//! indices are stable), then one per Vale style rule the findings name
//! (`Google.Passive`, with its link); one result per finding with its
//! file, line range, evidence snippet and a partial fingerprint that
//! survives line moves.

use super::FileFindings;
use koas_kernel_api::hash::sha256;
use koas_review_schema::findings::{Finding, FindingKind, Severity, REPOSITORY_URL};
use serde_json::{json, Value};

/// The schema URI written in `$schema`.
pub const SARIF_SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// A path as a URI reference: `/` separators, every byte outside the
/// unreserved set and `/` percent-encoded; absolute paths become `file://`
/// URIs.
pub fn path_to_uri(path: &str) -> String {
    let unified = path.replace('\\', "/");
    let mut out = String::with_capacity(unified.len());
    for b in unified.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.starts_with('/') {
        format!("file://{out}")
    } else {
        out
    }
}

fn rule(kind: FindingKind) -> Value {
    json!({
        "id": kind.as_str(),
        "name": kind.as_str(),
        "shortDescription": { "text": kind.description() },
        "helpUri": kind.doc_url(REPOSITORY_URL),
        "defaultConfiguration": { "level": level(kind.default_severity()) },
    })
}

/// A Vale style rule as a SARIF rule: its name, its link as help.
fn style_rule(f: &Finding) -> Value {
    let mut rule = json!({
        "id": f.kind_name(),
        "name": f.kind_name(),
        "shortDescription": { "text": format!("{}: {}", FindingKind::Style.description(), f.kind_name()) },
        "defaultConfiguration": { "level": level(f.severity) },
    });
    if let Some(link) = &f.link {
        rule["helpUri"] = json!(link);
    }
    rule
}

fn fingerprint(f: &Finding) -> String {
    let hash = sha256(format!("{}\u{0}{}", f.kind_name(), f.evidence).as_bytes());
    koas_kernel_api::hash::hex_part(&hash)
        .get(..16)
        .unwrap_or("")
        .to_string()
}

fn result(path: &str, f: &Finding, suppressed: bool, styles: &[String]) -> Value {
    let rule_index = match &f.rule {
        Some(rule) => FindingKind::ALL.len() + styles.iter().position(|r| r == rule).unwrap_or(0),
        None => FindingKind::ALL
            .iter()
            .position(|k| *k == f.kind)
            .unwrap_or(0),
    };
    let mut properties = serde_json::Map::new();
    properties.insert("kernel".into(), json!(f.kernel));
    for (key, value) in [
        ("section_id", &f.section_id),
        ("anchor", &f.anchor),
        ("chunk_id", &f.chunk_id),
    ] {
        if let Some(v) = value {
            properties.insert(key.into(), json!(v));
        }
    }
    let mut region =
        json!({ "startLine": f.line, "startColumn": f.column.max(1), "endLine": f.line_end });
    if let Some(end) = f.column_end.filter(|_| f.line_end == f.line) {
        region["endColumn"] = json!(end);
    }
    if !f.evidence.is_empty() {
        region["snippet"] = json!({ "text": f.evidence });
    }
    let mut result = json!({
        "ruleId": f.kind_name(),
        "ruleIndex": rule_index,
        "level": level(f.severity),
        "message": { "text": f.message },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": { "uri": path_to_uri(path) },
                "region": region,
            }
        }],
        "partialFingerprints": { "koasFinding/v1": fingerprint(f) },
        "properties": properties,
    });
    // A finding a comment in the document silences: code scanning shows
    // it dismissed rather than not at all.
    if suppressed {
        result["suppressions"] = json!([{ "kind": "inSource" }]);
    }
    result
}

/// The SARIF log of one `koas check` run, pretty-printed.
pub fn render_sarif(files: &[FileFindings<'_>], tool_version: &str) -> String {
    // The style rules the findings name, each once, after the kinds.
    let mut style_rules: Vec<&Finding> = Vec::new();
    for f in files
        .iter()
        .flat_map(|file| file.findings.iter().chain(file.suppressed.iter()))
    {
        if f.rule.is_some() && !style_rules.iter().any(|s| s.rule == f.rule) {
            style_rules.push(f);
        }
    }
    style_rules.sort_by(|a, b| a.rule.cmp(&b.rule));
    let names: Vec<String> = style_rules
        .iter()
        .map(|f| f.kind_name().to_owned())
        .collect();
    let names = &names;
    let results: Vec<Value> = files
        .iter()
        .flat_map(|file| {
            let shown = file
                .findings
                .iter()
                .map(move |f| result(file.path, f, false, names));
            let silenced = file
                .suppressed
                .iter()
                .map(move |f| result(file.path, f, true, names));
            shown.chain(silenced)
        })
        .collect();
    let artifacts: Vec<Value> = files
        .iter()
        .map(|f| json!({ "location": { "uri": path_to_uri(f.path) } }))
        .collect();
    let log = json!({
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "koas",
                    "version": tool_version,
                    "informationUri": REPOSITORY_URL,
                    "rules": FindingKind::ALL
                        .iter()
                        .map(|k| rule(*k))
                        .chain(style_rules.iter().map(|f| style_rule(f)))
                        .collect::<Vec<_>>(),
                }
            },
            "artifacts": artifacts,
            "results": results,
            "columnKind": "unicodeCodePoints",
        }]
    });
    let mut text = serde_json::to_string_pretty(&log).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_relative_references_or_file_uris() {
        assert_eq!(path_to_uri("docs/a.md"), "docs/a.md");
        assert_eq!(path_to_uri("my docs\\été.md"), "my%20docs/%C3%A9t%C3%A9.md");
        assert_eq!(path_to_uri("/tmp/x y.md"), "file:///tmp/x%20y.md");
    }

    #[test]
    fn results_carry_rule_level_location_and_fingerprint() {
        let mut f = Finding::new(
            FindingKind::MissingTarget,
            "md_numbering_control",
            60,
            60,
            "no figure 2",
            "Figure 2 shows",
        );
        f.section_id = Some("S4".into());
        let text = render_sarif(
            &[FileFindings {
                path: "spec.md",
                findings: &[f],
                suppressed: &[],
            }],
            "0.1.0",
        );
        let v: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["version"], "2.1.0");
        let run = &v["runs"][0];
        assert_eq!(
            run["tool"]["driver"]["rules"].as_array().map(Vec::len),
            Some(FindingKind::ALL.len())
        );
        let r = &run["results"][0];
        assert_eq!(r["ruleId"], "missing_target");
        assert_eq!(run["tool"]["driver"]["informationUri"], REPOSITORY_URL);
        assert_eq!(
            run["tool"]["driver"]["rules"][12]["helpUri"],
            format!("{REPOSITORY_URL}/blob/main/docs/check.md#missing_target")
        );
        assert_eq!(
            run["tool"]["driver"]["rules"][r["ruleIndex"].as_u64().unwrap_or(99) as usize]["id"],
            "missing_target"
        );
        assert_eq!(r["level"], "error");
        assert_eq!(
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            60
        );
        assert_eq!(r["properties"]["section_id"], "S4");
        assert_eq!(
            r["partialFingerprints"]["koasFinding/v1"]
                .as_str()
                .map(str::len),
            Some(16)
        );
    }
}
