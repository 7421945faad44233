//! The findings of kernels other than the built-in checks, next to theirs,
//! named by kernel: the kernels of a `--pipeline FILE`, or the built-in
//! Stage 1 and 2 followed by the `[kernels] run` of the project's
//! `koas.toml`.

use crate::kernel_findings;
use crate::passes::{self, Control, RunFailure, RunInputs};
use crate::project::ProjectFile;
use koas_md_scan::kinds::KindCatalog;
use koas_orchestrator::embed::HostOptions;
use koas_orchestrator::pipeline::{self, Overrides, Pipeline};
use koas_review_schema::findings::{KernelFindings, Severity};
use serde_json::{json, Value};
use std::path::Path;

/// What the other kernels reported on one document.
pub struct OtherFindings {
    /// Their findings, the project's `[check]` and the document's
    /// `koas-disable` comments applied.
    pub found: Vec<KernelFindings>,
    /// Findings outputs that could not be read (naming kernel and output).
    pub errors: Vec<String>,
    /// Every kind the run knows, for the SARIF rules.
    pub catalog: KindCatalog,
}

/// Runs the pipeline in `file` on `doc` (as its `doc` input, in the
/// pipeline's workspace, cached like `koas run`) and reads back the
/// findings its kernels produced. A failed kernel is an error naming it.
pub fn findings_for(
    global: &HostOptions,
    file: &Path,
    doc: &Path,
    project: &ProjectFile,
) -> anyhow::Result<OtherFindings> {
    if doc == Path::new("-") {
        anyhow::bail!("--pipeline runs kernels on a file: save standard input to a file first");
    }
    let overrides = Overrides {
        workspace: None,
        jobs: None,
        inputs: vec![("doc".to_owned(), doc.to_path_buf())],
        sets: Vec::new(),
    };
    let mut pipeline = pipeline::load(file, &overrides)?;
    project.add_kernels(&mut pipeline)?;
    run_and_collect(global, pipeline, doc, project, &file.display().to_string())
}

/// The built-in Stage 1 and 2 then the project's `[kernels] run` on
/// `doc`, in a workspace of its own under `.koas/check/` beside the
/// `koas.toml` (cached: an unchanged document costs a cache lookup). For
/// standard input, `doc` is the name it is checked under and `stdin` its
/// text, which the kernels read from a copy in that workspace.
pub fn project_findings(
    global: &HostOptions,
    doc: &Path,
    stdin: Option<&str>,
    project: &ProjectFile,
) -> anyhow::Result<OtherFindings> {
    let Some(config) = &project.path else {
        anyhow::bail!("no koas.toml names other kernels");
    };
    let absolute = std::path::absolute(doc)?;
    // Names made of the document's, safe on every file system.
    let safe = |name: Option<&std::ffi::OsStr>| {
        name.map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
    };
    let hash = koas_kernel_api::hash::sha256(absolute.to_string_lossy().as_bytes());
    let folder = format!(
        "{}-{}",
        safe(doc.file_stem()),
        koas_kernel_api::hash::hex_part(&hash)
            .get(..12)
            .unwrap_or_default()
    );
    let root = config.parent().unwrap_or(Path::new("."));
    let workspace = root.join(".koas").join("check").join(folder);
    let input = match stdin {
        None => absolute,
        Some(text) => {
            let copy = workspace.join("stdin").join(safe(doc.file_name()));
            if let Some(parent) = copy.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&copy, text)?;
            copy
        }
    };
    let mut pipeline = passes::load(None, &workspace, vec![("doc".to_owned(), input.clone())])?;
    pipeline = stage_1_and_2(&pipeline);
    project.apply(&mut pipeline)?;
    run_and_collect(
        global,
        pipeline,
        &input,
        project,
        &format!("[kernels] run of {}", config.display()),
    )
}

/// The deterministic kernels of the built-in pipeline: Stage 1 and the
/// Stage 2 checks, without the model's kernels and what applies, reports
/// or reverts.
fn stage_1_and_2(pipeline: &Pipeline) -> Pipeline {
    let later = [
        passes::PYRAMID,
        passes::EDIT_PLAN,
        passes::APPLY,
        passes::REVERT,
    ];
    pipeline.subset(|k| !later.contains(&k) && !passes::VIEWS.contains(&k))
}

fn run_and_collect(
    global: &HostOptions,
    mut pipeline: Pipeline,
    doc: &Path,
    project: &ProjectFile,
    origin: &str,
) -> anyhow::Result<OtherFindings> {
    let (discovery, catalog) = crate::project::discover(global, &mut pipeline, project)?;
    let control = Control::ctrl_c();
    let inputs = RunInputs {
        quiet: true,
        ..RunInputs::default()
    };
    let (_, result) = passes::run_pass(global, &control, &pipeline, &discovery, inputs)?;
    match result {
        Ok(outcome) => {
            let (mut found, errors) = kernel_findings::collect(&outcome.record);
            let text = std::fs::read_to_string(doc).unwrap_or_default();
            kernel_findings::apply_policy(&mut found, &project.kind_policy(), &text);
            Ok(OtherFindings {
                found,
                errors,
                catalog,
            })
        }
        // The failed kernel's kinds stay known: a suppression comment
        // naming one is no typo (its kernel failed, said as an error).
        Err(RunFailure::Kernel(message)) => Ok(OtherFindings {
            found: Vec::new(),
            errors: vec![format!("{origin}: {message}")],
            catalog,
        }),
        Err(RunFailure::Interrupted) => {
            Err(anyhow::anyhow!("{}: {origin}: interrupted", doc.display()))
        }
    }
}

/// The SARIF rules of the other kernels' kinds (`KERNEL/KIND`, with the
/// description the kernel declares), for the kinds in `catalog`.
pub fn sarif_rules(catalog: &KindCatalog) -> Vec<Value> {
    catalog
        .others()
        .map(|e| {
            json!({
                "id": format!("{}/{}", e.kernel, e.kind),
                "name": e.kind,
                "shortDescription": { "text": e.description },
                "properties": { "kernel": e.kernel },
            })
        })
        .collect()
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
