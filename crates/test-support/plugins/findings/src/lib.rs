//! A third party's checks, as a team outside the repository would write
//! them: findings outputs of the kernel API's findings contract (no koas
//! schema crate), one built by hand in the documented JSON shape.

use koas_kernel_api::prelude::*;
use serde_json::json;

/// `doc` → `spelling` (`out/spelling.json`): every `teh` is a warning.
struct SpellCheck;
impl Kernel for SpellCheck {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("spell_check", "1.0.0")
            .stage("X1")
            .description("Reports `teh` (a third party's findings artifact)")
            .input("doc")
            .findings_output_file("spelling", "out/spelling.json")
            .finding_kind("spelling", "A misspelt word")
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let text = inputs.source_text("doc")?;
        let mut findings = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if let Some(at) = line.find("teh") {
                findings.push(json!({
                    "kind": "spelling",
                    "line": i + 1,
                    "column": line[..at].chars().count() + 1,
                    "severity": "warning",
                    "message": "`teh`: did you mean `the`?",
                    "evidence": line.trim(),
                }));
            }
        }
        let n = findings.len();
        Ok(KernelOutput::new()
            .artifact(
                "spelling",
                json!({"kernel": "spell_check", "findings": findings}),
            )
            .summary(format!("{n} spelling finding(s)")))
    }
}

/// `doc` → `sloppy`: a findings artifact with a severity koas does not
/// know, to see the error that names the kernel and the artifact.
struct SloppyFindings;
impl Kernel for SloppyFindings {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("sloppy_findings", "1.0.0")
            .stage("X1")
            .input("doc")
            .output("sloppy")
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        Ok(KernelOutput::new().artifact(
            "sloppy",
            json!({"kernel": "sloppy_findings", "findings": [
                {"kind": "style", "line": 1, "severity": "fatal", "message": "m"}
            ]}),
        ))
    }
}

/// `doc` → `bad_line_findings`: a declared findings output whose line is
/// a word, to see the runtime fail this kernel, naming the field.
struct BadLine;
impl Kernel for BadLine {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("bad_line", "1.0.0")
            .stage("X1")
            .input("doc")
            .findings_output("bad_line_findings")
            .finding_kind("style", "A matter of style")
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        Ok(KernelOutput::new().artifact(
            "bad_line_findings",
            json!({"kernel": "bad_line", "findings": [
                {"kind": "style", "line": "seven", "severity": "info", "message": "m"}
            ]}),
        ))
    }
}

koas_kernel_api::export_kernel!(SpellCheck, SloppyFindings, BadLine);
