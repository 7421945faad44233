//! The tools: their arguments (with the JSON schemas clients read) and
//! what each one does, as blocking calls of the reviewer's library
//! functions. Every answer follows one convention: a JSON object with
//! `status` (`completed`, `error`, `not_found`, `partial`), `summary`
//! (under 300 characters), `workspace` and, on failure, `error`.

use crate::paths::{PathError, Root};
use koas_orchestrator::embed::{ExitStatus, HostOptions, LlmFlags};
use koas_review::api::{
    check, entry_id, ApiError, CheckRequest, GrepRequest, ReportRequest, RevertChanges,
    RevertRequest, ReviewRequest, Session,
};
use koas_review::{first_line, workspace_of, Control};
use koas_review_schema::findings::Severity;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// What every tool call shares: the runtime's flags, the root and the
/// server's sovereignty setting.
#[derive(Clone)]
pub struct Ctx {
    /// Kernel search path, limits, isolation (the server's command line).
    pub global: HostOptions,
    /// Where every path is resolved.
    pub root: Root,
    /// `--no-strict-sovereign` on the server's command line: the only
    /// way a tool call may reach a non-local model.
    pub no_strict_sovereign: bool,
}

/// A tool's answer: the JSON object and whether it is an error.
#[derive(Debug)]
pub struct Answer {
    /// The object (status, summary, workspace, error, the tool's fields).
    pub value: Value,
    /// True for `isError`.
    pub is_error: bool,
}

impl Answer {
    fn ok(value: Value) -> Answer {
        Answer {
            value,
            is_error: false,
        }
    }

    /// A failure with status `status` (`error` or `not_found`).
    pub fn failure(status: &str, message: &str, workspace: Option<&Path>) -> Answer {
        Answer {
            value: json!({
                "status": status,
                "summary": first_line(message),
                "error": message,
                "workspace": workspace,
            }),
            is_error: true,
        }
    }
}

/// A tool: its name, what it does, its argument schema and its body.
pub struct Tool {
    /// The MCP tool name.
    pub name: &'static str,
    /// The description an agent reads.
    pub description: &'static str,
    /// The argument schema.
    pub schema: fn() -> std::sync::Arc<serde_json::Map<String, Value>>,
    /// True when the tool may write the review workspace.
    pub writes: bool,
    /// True when a call may run long (a review with a model).
    pub long: bool,
    run: fn(&Ctx, Value, &Control) -> Answer,
}

impl Tool {
    /// Runs the tool on `arguments` (blocking).
    pub fn call(&self, ctx: &Ctx, arguments: Value, control: &Control) -> Answer {
        (self.run)(ctx, arguments, control)
    }
}

fn schema<T: JsonSchema + 'static>() -> std::sync::Arc<serde_json::Map<String, Value>> {
    rmcp::handler::server::tool::schema_for_type::<T>()
}

/// Every tool of the server.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "review_md_run",
        description: "Review a Markdown document like `koas review`: run the reviewer pipeline in the document's review workspace (.review/ next to it) and record every change with an ID (RVW-NNNN), a forward and an inverse patch and a ledger entry. Changes come from `ops` (edit ops you give) or from the configured model; with neither (or no_llm), only the deterministic checks run. Returns status, summary, workspace, total_changes, counts (applied, flagged, rejected), applied_ids, the report path. The document itself is not modified: the edited version is stage3/doc.edited.md in the workspace. Sends progress notifications and stops when the request is cancelled.",
        schema: schema::<ReviewParams>,
        writes: true,
        long: true,
        run: review_md_run,
    },
    Tool {
        name: "review_md_status",
        description: "State of a document's review workspace, without running anything: stages completed, counts of changes (active, need attention, silent, flags, reverts), whether the edited document is up to date with its ledger, who holds the workspace lock, a torn ledger tail. Status not_found when the document was never reviewed.",
        schema: schema::<DocParams>,
        writes: false,
        long: false,
        run: review_md_status,
    },
    Tool {
        name: "review_md_revert",
        description: "Revert recorded changes by ID (like `koas revert`): latest first, all or nothing. A change can be reverted once; a revert cannot be reverted; a change a later change depends on, or whose text was changed since, is refused and nothing is touched. Returns total_reverted, the revert entries (REVERT-RVW-NNNN) and, when refused, `refused` with the reason.",
        schema: schema::<RevertParams>,
        writes: true,
        long: false,
        run: review_md_revert,
    },
    Tool {
        name: "review_md_show_change",
        description: "One ledger entry in detail (like `koas show`): action, kind, severity, silent flag, rationale, scope, hashes, whether and by what it was reverted; with include_patch, its forward unified diff. Status not_found for an ID not in the ledger.",
        schema: schema::<ShowParams>,
        writes: false,
        long: false,
        run: review_md_show_change,
    },
    Tool {
        name: "check_md",
        description: "Check a Markdown document like `koas check` (structure, references, numbering, tables, terminology; no model, no review workspace, the document untouched): the findings as structured JSON (kind, line, column, severity, message, evidence, fix when certain), `kernel_findings` from the other kernels the project's koas.toml runs ([kernels] run; each with its `kernel`), counts by severity, and `fails`: whether a finding reaches the project's fail_on severity.",
        schema: schema::<CheckParams>,
        writes: false,
        long: false,
        run: check_md,
    },
    Tool {
        name: "review_md_report",
        description: "(Re)write the review report of a document's workspace from its ledger (like `koas report`) and return it: the report's Markdown text, its path, the annotated document's path and the counts.",
        schema: schema::<DocParams>,
        writes: true,
        long: false,
        run: review_md_report,
    },
    Tool {
        name: "review_md_grep",
        description: "Search a document's ledger (like `koas grep`): every filter given must match. Returns the matching entries and their number.",
        schema: schema::<GrepParams>,
        writes: false,
        long: false,
        run: review_md_grep,
    },
];

/// The tool named `name`.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

// ---------------------------------------------------------------- arguments

/// Arguments of a tool that needs only the document.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocParams {
    /// The Markdown document, relative to the server's root (or an
    /// absolute path inside it), e.g. "docs/spec.md".
    pub doc_path: String,
}

/// Arguments of review_md_run.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewParams {
    /// The Markdown document, relative to the server's root (or an
    /// absolute path inside it), e.g. "docs/spec.md".
    pub doc_path: String,
    /// Edit ops to apply instead of the model's: a JSON array of ops, an
    /// object with an "ops" array, or the path (relative to the root) of
    /// a JSON file holding either. An op, e.g. {"action": "replace",
    /// "target": {"line_start": 7, "line_end": 7}, "before_text":
    /// "bandwith", "after_text": "bandwidth", "kind": "typo", "severity":
    /// "minor", "rationale": "spelling"}. "action" is "replace",
    /// "insert" (after the target lines), "delete" or "flag_only"; "after_text"
    /// is the new text (none for delete and flag_only); "before_text" is
    /// the text replaced, checked against the line. Line numbers are
    /// 1-based in the workspace's current document; missing fields get
    /// defaults. The whole schema: docs/artifacts.md.
    #[serde(default)]
    pub ops: Option<Value>,
    /// Model wire protocol: "ollama", "openai" (llama.cpp, vLLM, LM
    /// Studio) or "anthropic". Default: the project's koas.toml [llm].
    #[serde(default)]
    pub backend: Option<String>,
    /// Model server base URL, e.g. "http://127.0.0.1:11434". A non-local
    /// endpoint is refused unless the server was started with
    /// --no-strict-sovereign.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// The worker model.
    #[serde(default)]
    pub model: Option<String>,
    /// A second model that checks the worker's ops (accepts, corrects or
    /// rejects them).
    #[serde(default)]
    pub tutor_model: Option<String>,
    /// Do not build the document summary the model reviews each chunk
    /// with.
    #[serde(default)]
    pub skip_pyramid: bool,
    /// Use no model even if one is configured: deterministic stages only.
    #[serde(default)]
    pub no_llm: bool,
    /// Refuse every op that touches a protected region (code, tables,
    /// math, front matter, HTML, inline code).
    #[serde(default)]
    pub strict: bool,
    /// Do not apply the certain fixes of the checks as changes.
    #[serde(default)]
    pub no_check_fixes: bool,
}

/// Change IDs: a list, or one string with IDs separated by commas or
/// spaces.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ChangeIds {
    /// "RVW-0001,RVW-0002".
    Text(String),
    /// ["RVW-0001", "RVW-0002"].
    List(Vec<String>),
}

impl ChangeIds {
    fn ids(&self) -> Vec<String> {
        let split = |s: &str| -> Vec<String> {
            s.split(|c: char| c == ',' || c.is_whitespace())
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect()
        };
        match self {
            ChangeIds::Text(s) => split(s),
            ChangeIds::List(list) => list.iter().flat_map(|s| split(s)).collect(),
        }
    }
}

/// Arguments of review_md_revert.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevertParams {
    /// The Markdown document, relative to the server's root.
    pub doc_path: String,
    /// The changes to revert: ["RVW-0001", "RVW-0002"] or
    /// "RVW-0001,RVW-0002".
    pub change_ids: ChangeIds,
    /// Why (stored as the revert entries' rationale).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Arguments of review_md_show_change.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowParams {
    /// The Markdown document, relative to the server's root.
    pub doc_path: String,
    /// The entry: RVW-NNNN, or REVERT-RVW-NNNN for a revert.
    pub change_id: String,
    /// Also return the forward patch (a unified diff).
    #[serde(default)]
    pub include_patch: bool,
}

/// Arguments of check_md.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckParams {
    /// The Markdown document, relative to the server's root.
    pub doc_path: String,
    /// Read no koas.toml and no .vale.ini (built-in check settings).
    #[serde(default)]
    pub no_config: bool,
}

/// Arguments of review_md_grep.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepParams {
    /// The Markdown document, relative to the server's root.
    pub doc_path: String,
    /// Regular expression matched against the ID, the summary and the
    /// rationale.
    #[serde(default)]
    pub pattern: Option<String>,
    /// Only this kind (e.g. typo, terminology, logic_flow).
    #[serde(default)]
    pub kind: Option<String>,
    /// Only this severity (minor, attention, deletion, critical).
    #[serde(default)]
    pub severity: Option<String>,
    /// Only silent (true) or non-silent (false) entries.
    #[serde(default)]
    pub silent: Option<bool>,
    /// Only reverts (true) or only non-reverts (false).
    #[serde(default)]
    pub reverts: Option<bool>,
}

// ---------------------------------------------------------------- helpers

/// Parses the arguments, or answers why they do not fit the schema.
fn parse<T: DeserializeOwned>(tool: &str, arguments: Value) -> Result<T, Answer> {
    serde_json::from_value(arguments)
        .map_err(|e| Answer::failure("error", &format!("invalid arguments for {tool}: {e}"), None))
}

/// A document named by a client: resolved inside the root, with its
/// workspace (checked to stay inside the root too).
struct Doc {
    /// The document's path, inside the root.
    path: PathBuf,
    workspace: PathBuf,
}

impl Doc {
    fn resolve(ctx: &Ctx, given: &str) -> Result<Doc, Answer> {
        let path = ctx.root.existing(given).map_err(|e| match e {
            PathError::NotFound { .. } => Answer::failure("not_found", &e.to_string(), None),
            _ => Answer::failure("error", &e.to_string(), None),
        })?;
        let workspace = workspace_of(&path).map_err(|e| error(&e, None))?;
        ctx.root
            .contains(&workspace)
            .map_err(|e| Answer::failure("error", &format!("its review workspace: {e}"), None))?;
        Ok(Doc { path, workspace })
    }

    /// Fails with `not_found` unless a review created the workspace.
    fn require_workspace(&self) -> Result<(), Answer> {
        let exists = koas_review_workspace::Workspace::new(self.workspace.clone())
            .meta()
            .map_err(|e| {
                Answer::failure(
                    "error",
                    &format!("workspace {}: {e}", self.workspace.display()),
                    Some(&self.workspace),
                )
            })?
            .is_some();
        if exists {
            Ok(())
        } else {
            Err(Answer::failure(
                "not_found",
                &format!(
                    "{} has no review workspace yet (looked in {}); run review_md_run first",
                    self.path.display(),
                    self.workspace.display()
                ),
                Some(&self.workspace),
            ))
        }
    }
}

/// An error and its causes on one line.
fn error(e: &anyhow::Error, workspace: Option<&Path>) -> Answer {
    Answer::failure(
        "error",
        &koas_orchestrator::embed::error_chain(e, ": "),
        workspace,
    )
}

/// An operation's JSON as an answer: the convention's status, a short
/// summary, the workspace, `isError` unless it succeeded.
fn answer(exit: ExitStatus, mut value: Value, workspace: &Path) -> Answer {
    if !value.is_object() {
        value = json!({ "result": value });
    }
    let is_error = exit != ExitStatus::Success;
    let status = value
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or(if is_error { "error" } else { "completed" })
        .to_owned();
    let status = match status.as_str() {
        "completed" | "error" | "not_found" | "partial" => status,
        _ if is_error => "error".to_owned(),
        _ => "completed".to_owned(),
    };
    value["status"] = json!(status);
    let summary = value
        .get("summary")
        .and_then(Value::as_str)
        .map(first_line)
        .or_else(|| value.get("error").and_then(Value::as_str).map(first_line))
        .unwrap_or_default();
    value["summary"] = json!(summary);
    if value.get("workspace").map_or(true, Value::is_null) {
        value["workspace"] = json!(workspace);
    }
    if exit == ExitStatus::Interrupted && value.get("error").is_none() {
        value["error"] = json!("cancelled");
    }
    Answer { value, is_error }
}

macro_rules! try_answer {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(answer) => return answer,
        }
    };
}

// ---------------------------------------------------------------- tools

fn review_md_run(ctx: &Ctx, arguments: Value, control: &Control) -> Answer {
    let p: ReviewParams = try_answer!(parse("review_md_run", arguments));
    let doc = try_answer!(Doc::resolve(ctx, &p.doc_path));
    let ops = match &p.ops {
        None | Some(Value::Null) => None,
        Some(Value::String(path)) => Some(try_answer!(ctx
            .root
            .existing(path)
            .map_err(|e| Answer::failure("error", &format!("ops: {e}"), None)))),
        Some(inline @ (Value::Array(_) | Value::Object(_))) => {
            Some(try_answer!(write_inline_ops(&doc.workspace, inline)))
        }
        Some(other) => {
            return Answer::failure(
                "error",
                &format!(
                    "invalid arguments for review_md_run: ops must be an array of edit ops, an object with an \"ops\" array, or a path; got {other}"
                ),
                None,
            )
        }
    };
    let llm = LlmFlags {
        backend: p.backend,
        endpoints: p.endpoint.into_iter().collect(),
        model: p.model,
        // Sovereignty is the server's: an argument cannot lift it.
        no_strict_sovereign: ctx.no_strict_sovereign,
        ..LlmFlags::default()
    };
    let request = ReviewRequest {
        ops,
        strict: p.strict,
        no_llm: p.no_llm,
        skip_pyramid: p.skip_pyramid,
        no_check_fixes: p.no_check_fixes,
        tutor_model: p.tutor_model,
        llm,
        whole_json: true,
        ..ReviewRequest::default()
    };
    let reviewed = Session::open(&ctx.global, control, &doc.path, None)
        .and_then(|session| session.review(&request));
    match reviewed {
        Ok(reviewed) => {
            let mut value = reviewed.to_json();
            let counts = reviewed.counts;
            value["counts"] = json!({
                "applied": counts.applied,
                "flagged": counts.flagged,
                "rejected": counts.rejected,
            });
            completed(value, &doc.workspace)
        }
        Err(e) => api_error(e, &doc.workspace),
    }
}

/// Ops given inline are kept in the workspace (`mcp/ops-<time>.json`),
/// where the run's record can name them.
fn write_inline_ops(workspace: &Path, ops: &Value) -> Result<PathBuf, Answer> {
    let fail = |e: &dyn std::fmt::Display| {
        Answer::failure(
            "error",
            &format!("cannot write the ops into {}: {e}", workspace.display()),
            Some(workspace),
        )
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let rel = format!("mcp/ops-{stamp}-{}.json", std::process::id());
    let text = serde_json::to_string_pretty(ops).unwrap_or_else(|_| ops.to_string());
    // Through the held workspace folder: a `.review` or `mcp` folder that
    // is a link is refused by name, never written through.
    let dir = koas_review_workspace::Workspace::new(workspace)
        .held_or_create()
        .map_err(|e| fail(&e))?;
    dir.write_atomic(&rel, text.as_bytes())
        .map_err(|e| fail(&e))?;
    Ok(workspace.join(rel))
}

fn review_md_status(ctx: &Ctx, arguments: Value, control: &Control) -> Answer {
    let p: DocParams = try_answer!(parse("review_md_status", arguments));
    let doc = try_answer!(Doc::resolve(ctx, &p.doc_path));
    try_answer!(doc.require_workspace());
    let review = Session::open(&ctx.global, control, &doc.path, None)
        .and_then(|session| session.status(false))
        .and_then(|review| review.to_json());
    let value = match review {
        Ok(value) => value,
        Err(e) => return api_error(e, &doc.workspace),
    };
    // The workspace's state ("ok", "locked", "torn_ledger"…) is the
    // answer's `state`; the convention's status says whether the call
    // worked.
    let state = value.get("status").cloned();
    let mut out = completed(value, &doc.workspace);
    if let (Some(state), Some(map)) = (state, out.value.as_object_mut()) {
        map.insert("state".into(), state);
        map.insert("status".into(), json!("completed"));
        let holder = map.get("locked_by").cloned().unwrap_or(Value::Null);
        map.insert("lock_holder".into(), holder);
        let torn = map.get("torn_tail").is_some_and(|t| !t.is_null());
        map.insert("torn_ledger".into(), json!(torn));
    }
    out
}

fn review_md_revert(ctx: &Ctx, arguments: Value, control: &Control) -> Answer {
    let p: RevertParams = try_answer!(parse("review_md_revert", arguments));
    let ids = p.change_ids.ids();
    if ids.is_empty() {
        return Answer::failure(
            "error",
            "invalid arguments for review_md_revert: change_ids names no change",
            None,
        );
    }
    let doc = try_answer!(Doc::resolve(ctx, &p.doc_path));
    try_answer!(doc.require_workspace());
    let session = match Session::open(&ctx.global, control, &doc.path, None) {
        Ok(session) => session,
        Err(e) => return api_error(e, &doc.workspace),
    };
    let mut request = RevertRequest::new(RevertChanges::Listed(ids.clone()));
    request.reason = p.reason.unwrap_or_default();
    let (mut out, refused) = match session.revert(&request) {
        Ok(reverted) => (
            completed(reverted.to_json(&doc.workspace), &doc.workspace),
            json!([]),
        ),
        // All or nothing: the request as a whole was refused.
        Err(ApiError::Refused { reason }) => (
            Answer::failure("error", &reason, Some(&doc.workspace)),
            json!([{ "change_ids": ids, "reason": reason }]),
        ),
        Err(e) => (api_error(e, &doc.workspace), json!([])),
    };
    if let Some(map) = out.value.as_object_mut() {
        map.insert("refused".into(), refused);
        map.entry("total_reverted").or_insert(json!(0));
    }
    out
}

/// An operation of the review API that completed, as an answer.
fn completed(value: Value, workspace: &Path) -> Answer {
    answer(ExitStatus::Success, value, workspace)
}

/// An operation of the review API that did not complete, as an answer.
fn api_error(e: ApiError, workspace: &Path) -> Answer {
    match e {
        ApiError::Refused { reason } => Answer::failure("error", &reason, Some(workspace)),
        ApiError::Stopped {
            status,
            message,
            partial,
        } => {
            let value = json!({
                "status": if partial { "partial" } else { "error" },
                "summary": first_line(&message),
                "error": message,
                "workspace": workspace,
            });
            answer(status, value, workspace)
        }
        ApiError::NotFound { message } => Answer::failure("not_found", &message, Some(workspace)),
        ApiError::Other(e) => error(&e, Some(workspace)),
    }
}

fn review_md_show_change(ctx: &Ctx, arguments: Value, control: &Control) -> Answer {
    let p: ShowParams = try_answer!(parse("review_md_show_change", arguments));
    let doc = try_answer!(Doc::resolve(ctx, &p.doc_path));
    try_answer!(doc.require_workspace());
    let shown = Session::open(&ctx.global, control, &doc.path, None)
        .and_then(|session| session.show(entry_id(&p.change_id)?, p.include_patch));
    match shown {
        Ok(shown) => completed(shown.to_json(&doc.workspace), &doc.workspace),
        Err(e) => api_error(e, &doc.workspace),
    }
}

fn check_md(ctx: &Ctx, arguments: Value, _control: &Control) -> Answer {
    let p: CheckParams = try_answer!(parse("check_md", arguments));
    let path = try_answer!(ctx.root.existing(&p.doc_path).map_err(|e| match e {
        PathError::NotFound { .. } => Answer::failure("not_found", &e.to_string(), None),
        _ => Answer::failure("error", &e.to_string(), None),
    }));
    let request = CheckRequest {
        no_config: p.no_config,
        root: Some(ctx.root.dir().to_path_buf()),
        ..CheckRequest::default()
    };
    let checked = match check(&ctx.global, &path, &request) {
        Ok(checked) => checked,
        Err(ApiError::Other(e)) => return error(&e, None),
        Err(e) => return Answer::failure("error", &e.to_string(), None),
    };
    let mut counts = serde_json::Map::new();
    for severity in Severity::ALL {
        counts.insert(severity.as_str().to_owned(), json!(checked.count(severity)));
    }
    let shown = path
        .strip_prefix(ctx.root.dir())
        .unwrap_or(&path)
        .display()
        .to_string();
    Answer::ok(json!({
        "status": "completed",
        "summary": first_line(&format!("{shown}: {} findings", checked.total())),
        "workspace": Value::Null,
        "file": shown,
        "total": checked.total(),
        "counts": counts,
        "fail_on": checked.fail_on,
        "fails": checked.fails(),
        "findings": checked.output.findings,
        "kernel_findings": checked.others,
        "warnings": checked.output.warnings,
    }))
}

fn review_md_report(ctx: &Ctx, arguments: Value, control: &Control) -> Answer {
    let p: DocParams = try_answer!(parse("review_md_report", arguments));
    let doc = try_answer!(Doc::resolve(ctx, &p.doc_path));
    try_answer!(doc.require_workspace());
    let reported = Session::open(&ctx.global, control, &doc.path, None)
        .and_then(|session| session.report(&ReportRequest::default()));
    let reported = match reported {
        Ok(reported) => reported,
        Err(e) => return api_error(e, &doc.workspace),
    };
    let mut out = completed(reported.to_json(&doc.workspace), &doc.workspace);
    let path = &reported.report;
    match std::fs::read_to_string(path) {
        Ok(text) => out.value["text"] = json!(text),
        Err(e) => {
            return Answer::failure(
                "error",
                &format!("cannot read the report {}: {e}", path.display()),
                Some(&doc.workspace),
            )
        }
    }
    out
}

fn review_md_grep(ctx: &Ctx, arguments: Value, control: &Control) -> Answer {
    let p: GrepParams = try_answer!(parse("review_md_grep", arguments));
    let doc = try_answer!(Doc::resolve(ctx, &p.doc_path));
    try_answer!(doc.require_workspace());
    let request = GrepRequest {
        pattern: p.pattern,
        kind: p.kind,
        severity: p.severity,
        silent: p.silent,
        reverts: p.reverts,
    };
    let found = Session::open(&ctx.global, control, &doc.path, None)
        .and_then(|session| session.grep(&request));
    match found {
        // No match is a completed answer with `total` 0, not a failure.
        Ok(found) => completed(found.to_json(&doc.workspace), &doc.workspace),
        Err(e) => api_error(e, &doc.workspace),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_ids_split_on_commas_and_spaces() {
        let t: ChangeIds = serde_json::from_value(json!("RVW-0001, RVW-0002 RVW-0003")).unwrap();
        assert_eq!(t.ids(), ["RVW-0001", "RVW-0002", "RVW-0003"]);
        let l: ChangeIds =
            serde_json::from_value(json!(["RVW-0004", "RVW-0005,RVW-0006"])).unwrap();
        assert_eq!(l.ids(), ["RVW-0004", "RVW-0005", "RVW-0006"]);
    }

    #[test]
    fn every_tool_schema_is_an_object_with_described_properties() {
        for tool in TOOLS {
            let schema = (tool.schema)();
            assert_eq!(schema.get("type"), Some(&json!("object")), "{}", tool.name);
            let props = schema
                .get("properties")
                .and_then(Value::as_object)
                .unwrap_or_else(|| panic!("{} has no properties", tool.name));
            assert!(props.contains_key("doc_path"), "{}", tool.name);
            for (name, prop) in props {
                assert!(
                    prop.get("description").is_some(),
                    "{}.{name} has no description",
                    tool.name
                );
            }
        }
    }

    #[test]
    fn the_op_the_ops_description_shows_is_one_the_reviewer_accepts() {
        // The bug: the description showed `"new_text"` and top-level line
        // numbers, and an op written that way was refused.
        let schema = schema::<ReviewParams>();
        let description = schema["properties"]["ops"]["description"]
            .as_str()
            .expect("ops is described")
            .to_owned();
        let example = description
            .split("An op, e.g. ")
            .nth(1)
            .and_then(|rest| rest.split(". \"action\"").next())
            .expect("the description holds an example op");
        let op: Value = serde_json::from_str(example).expect("the example is JSON");
        let built = koas_edit::edit_op::build_op(
            &op,
            koas_review_schema::change_id::ChangeId::first(),
            &Default::default(),
        )
        .expect("the reviewer builds the example op");
        assert_eq!(built.op.after_text, "bandwidth");
        assert_eq!(built.op.target.line_start, 7);
        assert!(!description.contains("new_text"), "{description}");
    }

    #[test]
    fn unknown_and_mistyped_arguments_are_refused() {
        let bad = parse::<ShowParams>("t", json!({"doc_path": "a.md", "change_id": 7}));
        assert!(bad.is_err_and(|a| a.is_error));
        let extra = parse::<DocParams>(
            "t",
            json!({"doc_path": "a.md", "no_strict_sovereign": true}),
        );
        assert!(extra.is_err_and(|a| a.is_error
            && a.value["error"]
                .as_str()
                .is_some_and(|e| e.contains("no_strict_sovereign"))));
    }

    #[test]
    fn a_reply_keeps_the_convention() {
        let out = answer(
            ExitStatus::Failure,
            json!({"status": "refused", "error": "no"}),
            Path::new("/ws"),
        );
        assert!(out.is_error);
        assert_eq!(out.value["status"], "error");
        assert_eq!(out.value["summary"], "no");
        assert_eq!(out.value["workspace"], "/ws");
        let long = "x".repeat(1000);
        let out = answer(
            ExitStatus::Success,
            json!({"summary": long}),
            Path::new("/ws"),
        );
        assert!(out.value["summary"].as_str().unwrap().chars().count() <= 300);
        assert_eq!(out.value["status"], "completed");
    }
}
