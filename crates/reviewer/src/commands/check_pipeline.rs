//! `koas check --pipeline FILE`: the findings of every kernel of a
//! pipeline that produces a findings artifact (a third party's checks),
//! next to the built-in checks, named by kernel.

use crate::kernel_findings;
use crate::passes::{self, Control, RunFailure, RunInputs};
use koas_orchestrator::embed::HostOptions;
use koas_orchestrator::pipeline::{self, Overrides};
use koas_review_schema::findings::{KernelFindings, Severity};
use serde_json::{json, Value};
use std::path::Path;

/// Runs the pipeline in `file` on `doc` (as its `doc` input, in the
/// pipeline's workspace, cached like `koas run`) and reads back the
/// findings its kernels produced. A failed kernel is an error naming it.
pub fn findings_for(
    global: &HostOptions,
    file: &Path,
    doc: &Path,
) -> anyhow::Result<(Vec<KernelFindings>, Vec<String>)> {
    if doc == Path::new("-") {
        anyhow::bail!("--pipeline runs kernels on a file: save standard input to a file first");
    }
    let overrides = Overrides {
        workspace: None,
        jobs: None,
        inputs: vec![("doc".to_owned(), doc.to_path_buf())],
        sets: Vec::new(),
    };
    let pipeline = pipeline::load(file, &overrides)?;
    let discovery = koas_orchestrator::embed::discover_and_warn(global, &pipeline);
    let control = Control::ctrl_c();
    let inputs = RunInputs {
        quiet: true,
        ..RunInputs::default()
    };
    let (_, result) = passes::run_pass(global, &control, &pipeline, &discovery, inputs)?;
    match result {
        Ok(outcome) => Ok(kernel_findings::collect(&outcome.record)),
        Err(RunFailure::Kernel(message)) => Err(anyhow::anyhow!(
            "{}: pipeline {}: {message}",
            doc.display(),
            file.display()
        )),
        Err(RunFailure::Interrupted) => Err(anyhow::anyhow!(
            "{}: pipeline {}: interrupted",
            doc.display(),
            file.display()
        )),
    }
}

/// `true` when a kernel finding is at or above `threshold`.
pub fn fails(found: &[KernelFindings], threshold: Option<Severity>) -> bool {
    threshold.is_some_and(|t| {
        found
            .iter()
            .any(|k| k.findings.iter().any(|f| f.severity >= t))
    })
}

/// Compiler-style lines, like the built-in findings, with the kernel's
/// name after the kind: `doc.md:3:1: warning spelling [spell]: message`.
pub fn human(path: &str, found: &[KernelFindings]) -> String {
    let mut out = String::new();
    for k in found {
        for f in &k.findings {
            out.push_str(&format!(
                "{path}:{}:{}: {} {} [{}]: {}\n",
                f.line,
                f.column,
                f.severity.as_str(),
                f.kind,
                k.kernel,
                f.message.replace('\n', " ")
            ));
        }
    }
    out
}

/// GitHub workflow commands, titled `koas KERNEL/KIND`.
pub fn github(path: &str, found: &[KernelFindings]) -> String {
    let data = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    let property = |s: &str| data(s).replace(':', "%3A").replace(',', "%2C");
    let mut out = String::new();
    for k in found {
        for f in &k.findings {
            let command = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "notice",
            };
            out.push_str(&format!(
                "::{command} file={},line={},endLine={},title={}::{}\n",
                property(path),
                f.line,
                f.line_end.unwrap_or(f.line),
                property(&format!("koas {}/{}", k.kernel, f.kind)),
                data(&f.message)
            ));
        }
    }
    out
}

/// The JSON items of the kernel findings of one file: the finding's
/// fields with its `file` and `kernel`.
pub fn json_items(path: &str, found: &[KernelFindings]) -> Vec<Value> {
    found
        .iter()
        .flat_map(|k| {
            k.findings.iter().map(move |f| {
                let mut v = json!({ "file": path });
                if let (Some(obj), Ok(Value::Object(fields))) =
                    (v.as_object_mut(), serde_json::to_value(f))
                {
                    obj.extend(fields);
                    obj.insert("line_end".into(), json!(f.line_end.unwrap_or(f.line)));
                    obj.insert("kernel".into(), json!(k.kernel));
                }
                v
            })
        })
        .collect()
}

/// SARIF results of one file's kernel findings, rule `KERNEL/KIND`.
pub fn sarif_results(uri: &str, found: &[KernelFindings]) -> Vec<Value> {
    found
        .iter()
        .flat_map(|k| {
            k.findings.iter().map(move |f| {
                json!({
                    "ruleId": format!("{}/{}", k.kernel, f.kind),
                    "level": match f.severity {
                        Severity::Error => "error",
                        Severity::Warning => "warning",
                        Severity::Info => "note",
                    },
                    "message": { "text": f.message },
                    "locations": [{ "physicalLocation": {
                        "artifactLocation": { "uri": uri },
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.column,
                            "endLine": f.line_end.unwrap_or(f.line),
                        }
                    }}],
                    "properties": { "kernel": k.kernel },
                })
            })
        })
        .collect()
}
