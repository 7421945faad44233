//! Findings from any kernel of a pipeline: every output artifact with the
//! findings artifact shape (see `docs/artifacts.md`), other than the
//! built-in checks' own `issues`, `numbering_findings` and
//! `language_findings` (which `koas check` and the report already show), read back from a finished run and
//! named by kernel.

use koas_md_scan::kinds::KindPolicy;
use koas_md_scan::suppress::Suppressions;
use koas_orchestrator::run_record::{KernelStatus, RunRecord};
use koas_review_schema::findings::{read_findings_artifact, KernelFindings};
use koas_review_schema::names;

/// The findings of every kernel of `record` that produced a findings
/// artifact, in pipeline order; and one error per artifact that has the
/// shape but does not parse (naming the kernel and the artifact).
pub fn collect(record: &RunRecord) -> (Vec<KernelFindings>, Vec<String>) {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for k in record
        .kernels
        .iter()
        .filter(|k| k.status == KernelStatus::Ok)
    {
        for artifact in k.output_hashes.keys() {
            if [
                names::ISSUES,
                names::NUMBERING_FINDINGS,
                names::LANGUAGE_FINDINGS,
            ]
            .contains(&artifact.as_str())
            {
                continue;
            }
            let Ok(value) = crate::outputs::output(record, &k.name, artifact) else {
                continue;
            };
            match read_findings_artifact(&value) {
                None => {}
                Some(Ok(findings)) => found.push(KernelFindings {
                    kernel: k.name.clone(),
                    artifact: artifact.clone(),
                    findings,
                }),
                Some(Err(e)) => errors.push(format!(
                    "kernel `{}`: output `{artifact}` looks like a findings artifact but is not one: {e} (see docs/artifacts.md)",
                    k.name
                )),
            }
        }
    }
    (found, errors)
}

/// Applies the project's `[check]` to other kernels' findings: a disabled
/// kind is dropped, a configured severity replaces the kernel's, and a
/// `koas-disable` comment of `text` (the document they were made on)
/// silences what it covers. A kernel whose findings all go stays listed,
/// with none.
pub fn apply_policy(found: &mut [KernelFindings], policy: &KindPolicy, text: &str) {
    let suppressions = Suppressions::of_text(text);
    for k in found.iter_mut() {
        let kernel = k.kernel.as_str();
        k.findings.retain(|f| {
            !policy.is_disabled(kernel, &f.kind)
                && !suppressions
                    .as_ref()
                    .is_some_and(|s| s.is_suppressed_as(kernel, &f.kind, f.line))
        });
        for f in &mut k.findings {
            if let Some(severity) = policy.severity(kernel, &f.kind) {
                f.severity = severity;
            }
        }
    }
}

/// The report section listing `found` (and the `errors` of artifacts that
/// could not be read); empty when there is neither.
pub fn report_section(found: &[KernelFindings], errors: &[String]) -> String {
    if found.is_empty() && errors.is_empty() {
        return String::new();
    }
    let total: usize = found.iter().map(|k| k.findings.len()).sum();
    let mut out = format!(
        "\n## Findings from other kernels\n\n{total} finding(s) reported by {} kernel(s) of the pipeline, on the current document.\n",
        found.len()
    );
    if total > 0 {
        out.push_str("\n| Kernel | Line | Severity | Kind | Finding |\n|---|---:|---|---|---|\n");
        for k in found {
            for f in &k.findings {
                out.push_str(&format!(
                    "| `{}` | {} | {} | {} | {} |\n",
                    k.kernel,
                    f.line,
                    f.severity.as_str(),
                    cell(&f.kind),
                    cell(&f.message)
                ));
            }
        }
    }
    for e in errors {
        out.push_str(&format!("\n- **Not shown:** {}\n", cell(e)));
    }
    out
}

/// Text safe in a table cell: pipes escaped, one line.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::findings::{KernelFinding, Severity};

    #[test]
    fn the_section_names_each_kernel_and_escapes_cells() {
        let found = vec![KernelFindings {
            kernel: "spell".into(),
            artifact: "spelling".into(),
            findings: vec![KernelFinding {
                kind: "spelling".into(),
                line: 3,
                column: 1,
                line_end: None,
                severity: Severity::Warning,
                message: "`a|b`\nsplit".into(),
                evidence: String::new(),
                fix: None,
            }],
        }];
        let text = report_section(&found, &["kernel `x`: bad".to_owned()]);
        assert!(text.contains("## Findings from other kernels"), "{text}");
        assert!(
            text.contains("| `spell` | 3 | warning | spelling | `a\\|b` split |"),
            "{text}"
        );
        assert!(text.contains("**Not shown:** kernel `x`: bad"), "{text}");
        assert_eq!(report_section(&[], &[]), "");
    }
}
