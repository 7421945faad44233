//! How the review commands run kernels: the reviewer pipeline (built in,
//! or `--pipeline FILE`) in *passes* over the review workspace.
//!
//! A review command never lets a kernel's output reach the ledger
//! directly. It runs a **planning pass** (`md_apply_ops`, or `md_revert`,
//! with Stage 1 and 2), commits the planned outcome itself through
//! [`koas_review_workspace::PreparedRun`] under the workspace lock, then
//! runs a **view pass** (`md_inline_notes_inject`,
//! `md_review_report_assemble`) on the committed state. The workspace state
//! reaches the kernels as host-provided artifacts (`review_doc`, `ledger`,
//! `review_state`, `review_meta`; see [`koas_edit::artifacts`]). Each
//! pass is an ordinary engine run in the workspace (cache in `.koas/`,
//! record in `run.json`, which holds the last pass).

use crate::common::LlmFlags;
pub use crate::outputs::{output, parse_output};
use anyhow::Context as _;
use koas_kernel_api::hash::sha256;
use koas_orchestrator::cache::Cache;
use koas_orchestrator::discovery::Discovery;
use koas_orchestrator::embed::{self, HostOptions};
pub use koas_orchestrator::embed::{Control, HostLlm, RunFailure, RunInputs};
use koas_orchestrator::engine::{CanonicalJson, Provided, RunOutcome};
use koas_orchestrator::llm_host::LlmLayer;
use koas_orchestrator::pipeline::{self, Embedded, Overrides, Pipeline};
use koas_orchestrator::prepare::Prepared;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The built-in reviewer pipeline: `configs/reviewer.toml` as shipped.
const BUILT_IN: &str = include_str!("../../../configs/reviewer.toml");

/// How the built-in pipeline is named in messages.
pub const BUILT_IN_NAME: &str = "<built-in reviewer pipeline (configs/reviewer.toml)>";

/// The kernel that applies ops.
pub const APPLY: &str = "md_apply_ops";
/// The kernel that plans reverts.
pub const REVERT: &str = "md_revert";

/// The kernel that summarizes the document with the model.
pub const PYRAMID: &str = "md_pyramid";

/// The kernel that asks the model for edit ops.
pub const EDIT_PLAN: &str = "md_edit_plan";
/// The view kernels: they rebuild the annotated document and the report
/// from the committed state after every run.
pub const VIEWS: [&str; 2] = ["md_inline_notes_inject", "md_review_report_assemble"];
/// The report kernel.
pub const REPORT: &str = "md_review_report_assemble";

/// The reviewer pipeline for a workspace: `file`, or the built-in one,
/// with `inputs` as its sources and the workspace as its workspace.
pub fn load(
    file: Option<&Path>,
    workspace: &Path,
    inputs: Vec<(String, PathBuf)>,
) -> anyhow::Result<Pipeline> {
    load_built_in(file, BUILT_IN, BUILT_IN_NAME, workspace, inputs)
}

/// The reviewer pipeline of a command on `target`'s workspace: the
/// `given` pipeline file, else the one the review was made with, else the
/// built-in one, on the workspace's original document, with the project
/// file applied and its kernels found.
pub fn workspace_pipeline(
    global: &HostOptions,
    target: &crate::common::ReviewTarget,
    given: Option<&Path>,
) -> anyhow::Result<(Pipeline, Discovery)> {
    let file = target.pipeline_file(given)?;
    let raw = target.workspace.path(koas_review_workspace::paths::RAW_DOC);
    let mut pipeline = load(
        file.as_deref(),
        target.root(),
        vec![("doc".to_owned(), raw)],
    )?;
    target.project.apply(&mut pipeline)?;
    let (discovery, _) = crate::project::discover(global, &mut pipeline, &target.project)?;
    Ok((pipeline, discovery))
}

/// The model of a review of `document`: the `[llm]` table of the
/// project's `koas.toml` (found upward from the document), then the
/// pipeline's, then `--tutor-model`, then the flags. `None` with
/// `no_llm`, or when nothing configures a model (the LLM kernels then run
/// in their deterministic mode).
pub fn review_llm(
    pipeline: &Pipeline,
    document: &Path,
    flags: &LlmFlags,
    tutor_model: Option<&str>,
    no_llm: bool,
    quiet: bool,
) -> anyhow::Result<Option<HostLlm>> {
    if no_llm {
        return Ok(None);
    }
    let folder = document
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tutor = tutor_model.map(|tutor| LlmLayer {
        origin: PathBuf::from("--tutor-model"),
        table: serde_json::json!({ "tutor_model": tutor }),
    });
    let extra = tutor.into_iter().collect();
    Ok(HostLlm::configured(
        pipeline,
        folder,
        extra,
        &flags.overrides(),
        quiet,
    )?)
}

/// One engine run of `pipeline` (already reduced to the pass's kernels)
/// in a review workspace: the workspace's own files are reserved, and
/// its snapshot of the original is never written by a kernel.
pub fn run_pass(
    global: &HostOptions,
    control: &Control,
    pipeline: &Pipeline,
    discovery: &Discovery,
    inputs: RunInputs,
) -> anyhow::Result<(Prepared, Result<RunOutcome, RunFailure>)> {
    let mut inputs = inputs;
    inputs.reserved = koas_review_workspace::paths::RESERVED
        .iter()
        .map(|(path, what)| (path.to_string(), what.to_string()))
        .collect();
    // The workspace wrote its snapshot of the original when it was
    // created; Stage 1 runs on the current document, whose text must not
    // reach that write-once file.
    inputs
        .host_written
        .insert(koas_review_schema::names::DOC_RAW.to_owned());
    Ok(embed::run(global, control, pipeline, discovery, inputs)?)
}

/// `review_meta` as canonical JSON, its apply log (one record per op of
/// the last run: 100,000 for a large review) written a record at a time.
/// The destructuring names every field, so a new one cannot be forgotten.
fn context_json(
    context: &koas_review_schema::review::ReportContext,
) -> serde_json::Result<CanonicalJson> {
    let koas_review_schema::review::ReportContext {
        meta,
        apply_log,
        earlier_findings,
        model,
    } = context;
    let mut members = vec![
        ("meta".to_owned(), CanonicalJson::of(meta)?),
        (
            "apply_log".to_owned(),
            CanonicalJson::array(apply_log, |_| {})?,
        ),
        (
            "earlier_findings".to_owned(),
            CanonicalJson::array(earlier_findings, |_| {})?,
        ),
    ];
    if let Some(model) = model {
        members.push(("model".to_owned(), CanonicalJson::of(model)?));
    }
    CanonicalJson::object(members)
}

/// The kernel versions of every kernel of `pipeline` that discovery found.
pub fn versions_of(pipeline: &Pipeline, discovery: &Discovery) -> Vec<(String, String)> {
    pipeline
        .kernels
        .iter()
        .filter_map(|k| {
            discovery
                .kernels
                .get(k)
                .map(|l| (k.clone(), l.spec.version.clone()))
        })
        .collect()
}

/// What the view pass produced.
#[derive(Default)]
pub struct Views {
    /// `review/REVIEW_<stem>.md`, when the pipeline has the report kernel.
    pub report: Option<PathBuf>,
    /// What the report was made of, for the HTML page (`koas report
    /// --html`); an error when it could not be read back.
    pub data: Option<anyhow::Result<crate::html_report::ViewData>>,
}

/// The view pass on the committed state of `run`: annotated document
/// (written by the engine) and report (written by the host as
/// `review/REVIEW_<stem>.md` and its `stage3/` copy). `notice` is shown
/// under the report's title.
///
/// It runs after a commit, so every failure, a setup error included, is a
/// [`RunFailure`]: the caller reports that the changes are recorded but
/// the views are stale.
pub fn run_views(
    global: &HostOptions,
    control: &Control,
    pipeline: &Pipeline,
    discovery: &Discovery,
    run: &koas_review_workspace::PreparedRun<'_>,
    notice: Option<String>,
    project: &crate::project::ProjectFile,
) -> Result<Views, RunFailure> {
    run_views_with_model(
        global, control, pipeline, discovery, run, notice, None, project,
    )
}

/// [`run_views`] after a run that asked a model: the report says which
/// model, how many calls, and whether the service stopped early.
#[allow(clippy::too_many_arguments)] // as views_pass
pub fn run_views_with_model(
    global: &HostOptions,
    control: &Control,
    pipeline: &Pipeline,
    discovery: &Discovery,
    run: &koas_review_workspace::PreparedRun<'_>,
    notice: Option<String>,
    model: Option<koas_review_schema::review::ReviewModelRun>,
    project: &crate::project::ProjectFile,
) -> Result<Views, RunFailure> {
    views_pass(
        global, control, pipeline, discovery, run, notice, model, project,
    )
    .unwrap_or_else(|e| Err(RunFailure::Kernel(embed::error_chain(&e, ": "))))
}

/// The Stage 2 findings of the workspace's original document, for the
/// report's resolved findings: Stage 1 and the scans of `pipeline` run on
/// `stage1/doc.raw.md` (cache hits after the first review), writing no
/// file.
fn original_findings(
    global: &HostOptions,
    control: &Control,
    pipeline: &Pipeline,
    discovery: &Discovery,
    workspace: &koas_review_workspace::Workspace,
) -> anyhow::Result<Result<Vec<koas_review_schema::findings::Finding>, RunFailure>> {
    use koas_review_schema::findings::FindingsArtifact;
    use koas_review_schema::names;
    const FINDINGS: [&str; 3] = [
        names::ISSUES,
        names::NUMBERING_FINDINGS,
        names::LANGUAGE_FINDINGS,
    ];
    let spec = |k: &str| discovery.kernels.get(k).map(|l| &l.spec);
    let scans: Vec<String> = pipeline
        .kernels
        .iter()
        .filter(|k| {
            spec(k).is_some_and(|s| {
                s.outputs
                    .iter()
                    .any(|o| FINDINGS.contains(&o.artifact.as_str()))
            })
        })
        .cloned()
        .collect();
    if scans.is_empty() {
        return Ok(Ok(Vec::new()));
    }
    let mut original = pipeline.subset(|k| {
        scans.iter().any(|s| s == k) || spec(k).is_some_and(|s| s.stage == "S1" && !s.uses_llm)
    });
    // The original document never changes in a workspace: its findings are
    // kept in a file, keyed by the kernels (name, version, library) and
    // their config, so the cache need not keep its Stage 1 for them.
    let key = findings_key(&original, discovery, workspace)?;
    let kept = workspace.path(ORIGINAL_FINDINGS);
    if let Some(found) = std::fs::read(&kept)
        .ok()
        .and_then(|b| serde_json::from_slice::<KeptFindings>(&b).ok())
        .filter(|k| k.key == key)
    {
        return Ok(Ok(found.findings));
    }
    original.inputs.insert(
        "doc".to_owned(),
        workspace.path(koas_review_workspace::paths::RAW_DOC),
    );
    let mut inputs = RunInputs {
        quiet: true,
        transient: true,
        ..RunInputs::default()
    };
    inputs.host_written = original
        .kernels
        .iter()
        .filter_map(|k| spec(k))
        .flat_map(|s| s.outputs.iter().map(|o| o.artifact.clone()))
        .collect();
    let (_, result) = run_pass(global, control, &original, discovery, inputs)?;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(failure) => return Ok(Err(failure)),
    };
    let mut found = Vec::new();
    for kernel in &scans {
        for artifact in FINDINGS {
            if let Ok(value) = output(&outcome.record, kernel, artifact) {
                let parsed: FindingsArtifact =
                    serde_json::from_value(value).with_context(|| {
                        format!("`{artifact}` of kernel `{kernel}` has an unexpected shape")
                    })?;
                found.extend(parsed.findings);
            }
        }
    }
    // Best effort: without the file, the next view pass runs the scans
    // again.
    if let Ok(bytes) = serde_json::to_vec(&KeptFindings {
        key,
        findings: found.clone(),
    }) {
        // Below the held workspace folder: a link there is not written
        // through (best effort, as before: the next run recomputes it).
        let _ = koas_orchestrator::workspace::write_below(workspace.root(), &kept, &bytes);
    }
    Ok(Ok(found))
}

/// What the original document's findings are computed with: the kernels
/// (name, version, library) of `original` and their config, hashed.
fn findings_key(
    original: &Pipeline,
    discovery: &Discovery,
    workspace: &koas_review_workspace::Workspace,
) -> anyhow::Result<String> {
    let cache = Cache::open(workspace.root());
    let kernels: Vec<Value> = original
        .kernels
        .iter()
        .filter_map(|k| discovery.kernels.get(k))
        .map(|l| {
            serde_json::json!([
                l.spec.name,
                l.spec.version,
                cache.plugin_hash(&l.library).unwrap_or_default()
            ])
        })
        .collect();
    let config: BTreeMap<&String, &Value> = original
        .config
        .iter()
        .filter(|(k, _)| original.kernels.contains(k))
        .collect();
    let _ = cache.flush();
    Ok(sha256(serde_json::to_string(&serde_json::json!([
        kernels, config
    ]))?))
}

/// `review/original_findings.json`: the findings of the workspace's
/// original document, for the report's resolved findings.
const ORIGINAL_FINDINGS: &str = "review/original_findings.json";

/// The content of [`ORIGINAL_FINDINGS`].
#[derive(serde::Serialize, Deserialize)]
struct KeptFindings {
    /// What the findings were computed with (see `original_findings`).
    key: String,
    findings: Vec<koas_review_schema::findings::Finding>,
}

// One argument per thing the views are made of; a struct of them would
// only move the list.
#[allow(clippy::too_many_arguments)]
fn views_pass(
    global: &HostOptions,
    control: &Control,
    pipeline: &Pipeline,
    discovery: &Discovery,
    run: &koas_review_workspace::PreparedRun<'_>,
    notice: Option<String>,
    model: Option<koas_review_schema::review::ReviewModelRun>,
    project: &crate::project::ProjectFile,
) -> anyhow::Result<Result<Views, RunFailure>> {
    use koas_review_schema::names;
    use koas_review_schema::review::ReportContext;
    // The model's kernels ran in the planning pass; run again here, without
    // the model, they would overwrite what it wrote.
    let uses_llm = |k: &str| discovery.kernels.get(k).is_some_and(|l| l.spec.uses_llm);
    let mut views = pipeline.subset(|k| k != APPLY && k != REVERT && !uses_llm(k));
    let workspace = run.workspace();
    // Stage 1 and 2 describe the document as committed: the file every
    // commit rewrites, whose text the run holds (handed over below).
    let edited = workspace.path(koas_review_workspace::paths::EDITED_DOC);
    let committed = edited.is_file();
    if committed {
        views.inputs.insert("doc".to_owned(), edited);
    }
    if !VIEWS.iter().any(|v| views.has(v)) {
        return Ok(Ok(Views::default()));
    }
    let meta = report_meta(run, pipeline, discovery, notice);
    let earlier_findings =
        if koas_kernel_api::hash::same_hash(&meta.original_hash, &meta.current_hash) {
            Vec::new()
        } else {
            match original_findings(global, control, &views, discovery, workspace)? {
                Ok(found) => found,
                Err(failure) => return Ok(Err(failure)),
            }
        };
    let context = ReportContext {
        meta,
        apply_log: workspace.last_run_log()?,
        model,
        earlier_findings,
    };
    let inputs = views_inputs(run, committed, &context)?;
    let (_, result) = run_pass(global, control, &views, discovery, inputs)?;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(failure) => return Ok(Err(failure)),
    };
    if !views.has(REPORT) {
        return Ok(Ok(Views::default()));
    }
    let text = output(&outcome.record, REPORT, names::REVIEW_REPORT)?;
    let text = text
        .as_str()
        .context("the report kernel returned a report that is not text")?;
    // Findings of the pipeline's other kernels (a third party's checks),
    // computed in this pass on the current document, named by kernel.
    let (mut found, errors) = crate::kernel_findings::collect(&outcome.record);
    crate::kernel_findings::apply_policy(&mut found, &project.kind_policy(), run.current_text());
    for e in &errors {
        eprintln!("warning: {e}");
    }
    let text = format!(
        "{text}{}",
        crate::kernel_findings::report_section(&found, &errors)
    );
    let path = run.write_report_text(&text)?;
    let data = crate::html_report::ViewData::collect(
        &outcome.record,
        &views,
        discovery,
        context,
        run.current_text(),
        found,
    );
    Ok(Ok(Views {
        report: Some(path),
        data: Some(data),
    }))
}

/// What the report says of itself: the state it describes, the tool and
/// kernels, the document's hashes, the notice.
fn report_meta(
    run: &koas_review_workspace::PreparedRun<'_>,
    pipeline: &Pipeline,
    discovery: &Discovery,
    notice: Option<String>,
) -> koas_review_schema::review::ReportMeta {
    use koas_review_schema::review::ReportMeta;
    ReportMeta {
        // The time of the state the report describes (its last ledger
        // entry, or the workspace's creation), not of this run: an
        // unchanged review gives the same report, from the cache.
        generated_at: run
            .entries()
            .last()
            .map(|e| e.timestamp.clone())
            .unwrap_or_else(|| run.meta().created_at.clone()),
        tool: format!("koas {}", env!("CARGO_PKG_VERSION")),
        kernels: versions_of(pipeline, discovery),
        doc_name: run.meta().doc_name.clone(),
        original_hash: run.meta().original_hash.clone(),
        current_hash: sha256(run.current_text()),
        notice,
    }
}

/// The view pass's inputs: the committed text (as `doc` when the
/// workspace's current document exists), the ledger and the report's
/// context.
fn views_inputs(
    run: &koas_review_workspace::PreparedRun<'_>,
    committed: bool,
    context: &koas_review_schema::review::ReportContext,
) -> anyhow::Result<RunInputs> {
    use koas_review_schema::names;
    let mut inputs = RunInputs::default();
    if committed {
        inputs
            .sources
            .insert("doc".to_owned(), Arc::from(run.current_text().as_bytes()));
    }
    inputs.provided.insert(
        names::REVIEW_DOC.to_owned(),
        Provided::from(Value::String(run.current_text().to_owned())),
    );
    // The views need no patch text: leaving the ledger's copies out keeps
    // this artifact (and its copy in every request) small. The ledger and
    // the report's context are given as canonical JSON, one entry a tree at
    // a time: as trees they were the largest part of a 100,000-change
    // review's memory.
    let ledger = CanonicalJson::array(run.entries(), |entry| {
        if let Some(entry) = entry.as_object_mut() {
            entry.remove("patch_text");
        }
    })?;
    inputs.provided.insert(
        names::LEDGER.to_owned(),
        Provided::Canonical(Arc::new(ledger)),
    );
    inputs.provided.insert(
        names::REVIEW_META.to_owned(),
        Provided::Canonical(Arc::new(context_json(context)?)),
    );
    inputs.host_written.insert(names::REVIEW_REPORT.to_owned());
    Ok(inputs)
}

/// A built-in pipeline (the reviewer's, or `koas refine`'s
/// `configs/refine.toml`), named `shown` in messages, or `file` when
/// given, with `inputs` as its sources and `workspace` as its workspace.
pub fn load_built_in(
    file: Option<&Path>,
    text: &str,
    shown: &str,
    workspace: &Path,
    inputs: Vec<(String, PathBuf)>,
) -> anyhow::Result<Pipeline> {
    let Some(file) = file else {
        let embedded = Embedded { text, shown };
        return Ok(Pipeline::embedded(embedded, workspace, inputs)?);
    };
    let overrides = Overrides {
        workspace: Some(workspace.to_path_buf()),
        jobs: None,
        inputs,
        sets: Vec::new(),
    };
    Ok(pipeline::load(file, &overrides)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::review::{ReportContext, ReviewModelRun};
    use serde_json::json;

    fn context(model: Option<ReviewModelRun>) -> ReportContext {
        ReportContext {
            meta: serde_json::from_value(json!({
                "generated_at": "2026-11-26T06:00:00Z", "tool": "koas test",
                "kernels": [["md_apply_ops", "0.1.0"]], "doc_name": "doc.md",
                "original_hash": "sha256:aa", "current_hash": "sha256:bb",
                "notice": "a \"quoted\" notice"
            }))
            .expect("meta"),
            apply_log: (1..=30)
                .map(|i| {
                    serde_json::from_value(json!({
                        "run_id": "run-1", "op_index": i, "status": "flagged",
                        "id": format!("RVW-{i:04}"), "action": "flag_only", "lines": [i, i],
                        "fixes": [{"fix": "HASH_RECOMPUTE", "from": null, "to": "sha256:b7"},
                                  {"fix": "NOTE_INJECT", "alert": "NOTE"}],
                        "defaults_filled": ["kind"], "reason": format!("op {i} é")
                    }))
                    .expect("record")
                })
                .collect(),
            earlier_findings: Vec::new(),
            model,
        }
    }

    #[test]
    fn the_report_context_written_a_record_at_a_time_is_its_canonical_json() {
        for model in [
            None,
            Some(ReviewModelRun {
                backend: "openai".into(),
                ..ReviewModelRun::default()
            }),
        ] {
            let context = context(model);
            let tree = serde_json::to_value(&context).expect("tree");
            assert_eq!(
                context_json(&context).expect("canonical").bytes(),
                koas_kernel_api::hash::canonical_bytes(&tree)
            );
        }
    }
}
