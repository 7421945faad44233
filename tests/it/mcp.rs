//! `koas mcp`: the real binary as an MCP server on stdio, driven by the
//! official Rust SDK's client (rmcp): the handshake, the tool list and its
//! schemas, every tool on a fixture document, paths that escape the root,
//! malformed arguments, sovereignty, and a long review (a slow scripted
//! model) cancelled by the client.

use crate::review_common::{fixtures, Scratch};
use koas_test_support::koas_bin;
use koas_test_support::model::{ModelAnswer, ModelRequest, ScriptedModel};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A client that keeps every progress notification it receives.
#[derive(Clone, Default)]
struct Client {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Ok(mut p) = self.progress.lock() {
            p.push(params);
        }
    }
}

impl Client {
    fn messages(&self) -> Vec<String> {
        self.progress
            .lock()
            .map(|p| p.iter().filter_map(|n| n.message.clone()).collect())
            .unwrap_or_default()
    }
}

type Session = RunningService<RoleClient, Client>;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Starts `koas mcp --root ROOT EXTRA...` and completes the handshake.
async fn connect(root: &Path, extra: &[&str]) -> (Session, Client) {
    connect_env(root, extra, &[]).await
}

/// [`connect`] with environment variables set for the server.
async fn connect_env(root: &Path, extra: &[&str], env: &[(&str, &Path)]) -> (Session, Client) {
    let mut cmd = tokio::process::Command::new(koas_bin());
    for (key, value) in env {
        cmd.env(key, value);
    }
    cmd.arg("mcp")
        .arg("--root")
        .arg(root)
        .args(extra)
        .current_dir(root)
        .env_remove("KOAS_KERNEL_PATH")
        .env_remove("KOAS_JOBS")
        .env("NO_COLOR", "1")
        .env("USER", "reviewer");
    let transport = TokioChildProcess::new(cmd).expect("spawn koas mcp");
    let client = Client::default();
    let session = client
        .clone()
        .serve(transport)
        .await
        .expect("MCP handshake with koas mcp");
    (session, client)
}

/// Calls `tool` with `args`; the structured answer and isError.
async fn call(session: &Session, tool: &str, args: Value) -> (Value, bool) {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    let result: CallToolResult = session
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map))
        .await
        .unwrap_or_else(|e| panic!("{tool}: protocol error {e}"));
    let value = result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("{tool}: no structured content: {result:?}"));
    // The text content carries the same object for clients that read text.
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default();
    assert_eq!(
        serde_json::from_str::<Value>(&text).ok().as_ref(),
        Some(&value),
        "{tool}: text content"
    );
    (value, result.is_error == Some(true))
}

/// The convention every answer follows.
fn assert_convention(tool: &str, v: &Value) {
    let status = v["status"]
        .as_str()
        .unwrap_or_else(|| panic!("{tool}: {v}"));
    assert!(
        ["completed", "error", "not_found", "partial"].contains(&status),
        "{tool}: status {status}"
    );
    let summary = v["summary"]
        .as_str()
        .unwrap_or_else(|| panic!("{tool}: {v}"));
    assert!(summary.chars().count() < 300, "{tool}: summary {summary}");
    assert!(v.get("workspace").is_some(), "{tool}: {v}");
    if status != "completed" {
        assert!(v["error"].is_string(), "{tool}: {v}");
    }
}

#[test]
fn every_tool_works_on_a_fixture_through_the_real_server() {
    let s = Scratch::with_fixture("retention_policy.md");
    let ops: Value = serde_json::from_slice(&s.read("retention_policy.ops.json")).expect("ops");
    let original = s.read("retention_policy.md");
    runtime().block_on(async {
        let (session, client) = connect(s.dir.path(), &[]).await;
        let info = session.peer_info().expect("server info");
        assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("koas"));
        assert!(info.capabilities.tools.is_some());

        // tools/list: every tool, each with an object schema whose
        // properties are described.
        let tools = session.list_all_tools().await.expect("tools/list");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for expected in [
            "review_md_run",
            "review_md_status",
            "review_md_revert",
            "review_md_show_change",
            "check_md",
            "review_md_report",
            "review_md_grep",
        ] {
            assert!(names.contains(&expected), "{expected} in {names:?}");
        }
        for tool in &tools {
            assert!(
                tool.description.as_ref().is_some_and(|d| d.len() > 40),
                "{}",
                tool.name
            );
            assert_eq!(tool.input_schema.get("type"), Some(&json!("object")));
            let props = tool.input_schema["properties"]
                .as_object()
                .unwrap_or_else(|| panic!("{} has no properties", tool.name));
            assert!(props["doc_path"]["description"].is_string(), "{}", tool.name);
            let required = tool.input_schema["required"].as_array().cloned().unwrap_or_default();
            assert!(required.contains(&json!("doc_path")), "{}", tool.name);
        }

        // Before any review: status is not_found.
        let (v, err) = call(&session, "review_md_status", json!({"doc_path": "retention_policy.md"})).await;
        assert!(err, "{v}");
        assert_eq!(v["status"], "not_found", "{v}");
        assert_convention("status", &v);

        // check_md: structured findings, nothing written.
        let (v, err) = call(&session, "check_md", json!({"doc_path": "retention_policy.md"})).await;
        assert!(!err, "{v}");
        assert_convention("check_md", &v);
        let findings = v["findings"].as_array().expect("findings");
        assert_eq!(v["total"], findings.len());
        assert!(findings.iter().all(|f| f["line"].is_u64() && f["message"].is_string()), "{v}");
        assert!(!s.path(".review").exists(), "check_md wrote a workspace");

        // review_md_run with the fixture's ops, inline.
        let (v, err) = call(
            &session,
            "review_md_run",
            json!({"doc_path": "retention_policy.md", "ops": ops, "no_llm": true}),
        )
        .await;
        assert!(!err, "{v}");
        assert_convention("review_md_run", &v);
        assert_eq!(v["status"], "completed");
        let applied = v["total_changes"].as_u64().expect("total_changes");
        assert!(applied >= 3, "{v}");
        assert_eq!(v["counts"]["applied"], applied);
        assert!(v["counts"]["rejected"].as_u64().unwrap_or(0) >= 1, "{v}");
        let workspace = v["workspace"].as_str().expect("workspace").to_owned();
        assert!(Path::new(&workspace).starts_with(s.dir.path().canonicalize().expect("canon")));
        let ids: Vec<String> = v["applied_ids"]
            .as_array()
            .expect("applied_ids")
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect();
        assert_eq!(s.read("retention_policy.md"), original, "the document is not touched");
        assert!(
            client.messages().iter().any(|m| m.contains("md_apply_ops")),
            "progress names the kernels: {:?}",
            client.messages()
        );

        // status after the review.
        let (v, err) = call(&session, "review_md_status", json!({"doc_path": "retention_policy.md"})).await;
        assert!(!err, "{v}");
        assert_convention("status", &v);
        assert_eq!(v["state"], "ok", "{v}");
        assert!(v["lock_holder"].is_null(), "{v}");
        assert_eq!(v["torn_ledger"], false);
        assert_eq!(v["counts"]["total_changes"], applied, "{v}");
        assert!(v["stages_completed"].as_array().is_some_and(|s| !s.is_empty()), "{v}");

        // show with its patch.
        let first = ids.first().expect("a change").clone();
        let (v, err) = call(
            &session,
            "review_md_show_change",
            json!({"doc_path": "retention_policy.md", "change_id": first, "include_patch": true}),
        )
        .await;
        assert!(!err, "{v}");
        assert_convention("show", &v);
        assert_eq!(v["change"]["id"], first.as_str());
        let patch = v["patch"].as_str().expect("patch");
        assert!(patch.contains("@@") && patch.contains("+++"), "{patch}");
        let (v, err) = call(
            &session,
            "review_md_show_change",
            json!({"doc_path": "retention_policy.md", "change_id": "RVW-0999"}),
        )
        .await;
        assert!(err);
        assert_eq!(v["status"], "not_found", "{v}");

        // grep.
        let (v, err) = call(&session, "review_md_grep", json!({"doc_path": "retention_policy.md", "kind": "typo"})).await;
        assert!(!err, "{v}");
        assert_convention("grep", &v);
        let entries = v["entries"].as_array().expect("entries");
        assert!(!entries.is_empty() && entries.iter().all(|e| e["kind"] == "typo"), "{v}");
        assert_eq!(v["total"], entries.len());

        // revert one change (comma-separated form), then the same again:
        // refused with a reason, nothing touched.
        let last = ids.last().expect("a change").clone();
        let (v, err) = call(
            &session,
            "review_md_revert",
            json!({"doc_path": "retention_policy.md", "change_ids": format!("{last},"), "reason": "test"}),
        )
        .await;
        assert!(!err, "{v}");
        assert_convention("revert", &v);
        assert_eq!(v["total_reverted"], 1, "{v}");
        assert_eq!(v["refused"], json!([]));
        let (v, err) = call(
            &session,
            "review_md_revert",
            json!({"doc_path": "retention_policy.md", "change_ids": [last.clone()]}),
        )
        .await;
        assert!(err, "{v}");
        assert_convention("revert again", &v);
        assert_eq!(v["total_reverted"], 0);
        assert_eq!(v["refused"][0]["change_ids"], json!([last]));
        assert!(v["refused"][0]["reason"].is_string(), "{v}");

        // report: its text, with the revert in it.
        let (v, err) = call(&session, "review_md_report", json!({"doc_path": "retention_policy.md"})).await;
        assert!(!err, "{v}");
        assert_convention("report", &v);
        let text = v["text"].as_str().expect("report text");
        assert!(text.starts_with('#') && text.contains(&first), "{text}");
        assert!(Path::new(v["report"].as_str().expect("report path")).is_file());

        // The ops as a path inside the root work too.
        s.write("second.md", "# Second\n\nA sentense.\n");
        s.write("second.ops.json", r#"[{"action": "replace", "kind": "typo", "target": {"line_start": 3}, "before_text": "sentense", "after_text": "sentence"}]"#);
        let (v, err) = call(
            &session,
            "review_md_run",
            json!({"doc_path": "second.md", "ops": "second.ops.json", "no_llm": true}),
        )
        .await;
        assert!(!err, "{v}");
        assert_eq!(v["total_changes"], 1, "{v}");

        session.cancel().await.expect("close");
    });
}

#[test]
fn escapes_and_malformed_arguments_are_tool_errors_and_the_server_stays_up() {
    let outer = Scratch::new();
    std::fs::create_dir(outer.path("root")).expect("mkdir");
    std::fs::copy(
        fixtures().join("retention_policy.md"),
        outer.path("secret.md"),
    )
    .expect("copy");
    std::fs::copy(
        fixtures().join("retention_policy.md"),
        outer.path("root/doc.md"),
    )
    .expect("copy");
    #[cfg(unix)]
    std::os::unix::fs::symlink(outer.path("secret.md"), outer.path("root/link.md"))
        .expect("symlink");
    let root = outer.path("root");
    runtime().block_on(async {
        let (session, _) = connect(&root, &[]).await;
        let secret = outer.path("secret.md").display().to_string();
        let mut escapes = vec![
            ("review_md_run", json!({"doc_path": "../secret.md", "no_llm": true})),
            ("check_md", json!({"doc_path": secret})),
            ("review_md_status", json!({"doc_path": "sub/../../secret.md"})),
            ("review_md_run", json!({"doc_path": "doc.md", "ops": "../secret.md"})),
        ];
        if cfg!(unix) {
            escapes.push(("check_md", json!({"doc_path": "link.md"})));
            escapes.push(("review_md_run", json!({"doc_path": "link.md", "no_llm": true})));
        }
        for (tool, args) in escapes {
            let (v, err) = call(&session, tool, args.clone()).await;
            assert!(err, "{tool} {args}: {v}");
            assert_eq!(v["status"], "error", "{v}");
            assert!(
                v["error"].as_str().is_some_and(|e| e.contains("outside the server's root")),
                "{tool} {args}: {v}"
            );
        }
        assert!(!outer.path(".review").exists(), "nothing was written outside the root");

        // Malformed arguments: a wrong type, a missing field, an unknown
        // field (an agent cannot switch sovereignty off), bad ops.
        for (tool, args, needle) in [
            ("review_md_show_change", json!({"doc_path": "doc.md", "change_id": 34}), "invalid type"),
            ("review_md_revert", json!({"doc_path": "doc.md"}), "change_ids"),
            ("review_md_run", json!({"doc_path": "doc.md", "no_strict_sovereign": true}), "unknown field"),
            ("review_md_run", json!({"doc_path": "doc.md", "ops": 5}), "ops must be"),
            ("review_md_run", json!({"doc_path": "doc.md", "ops": {"opz": []}}), "ops"),
            ("review_md_status", json!({}), "doc_path"),
        ] {
            let (v, err) = call(&session, tool, args.clone()).await;
            assert!(err, "{tool} {args}: {v}");
            assert_convention(tool, &v);
            assert!(
                v["error"].as_str().is_some_and(|e| e.contains(needle)),
                "{tool} {args}: {v}"
            );
        }

        // Sovereignty as on the command line: a non-local endpoint is
        // refused before anything is sent.
        let (v, err) = call(
            &session,
            "review_md_run",
            json!({"doc_path": "doc.md", "backend": "openai", "endpoint": "http://203.0.113.7:8080", "model": "m"}),
        )
        .await;
        assert!(err, "{v}");
        assert!(
            v["error"].as_str().is_some_and(|e| e.contains("sovereignty")),
            "{v}"
        );

        // An unknown tool is a protocol error; the server still answers.
        let unknown = session
            .call_tool(CallToolRequestParams::new("no_such_tool"))
            .await;
        assert!(unknown.is_err(), "{unknown:?}");
        let (v, err) = call(&session, "check_md", json!({"doc_path": "doc.md"})).await;
        assert!(!err, "{v}");
        session.cancel().await.expect("close");
    });
}

#[test]
fn a_long_review_sends_progress_and_stops_when_cancelled() {
    let s = Scratch::new();
    let mut doc = String::from("# Manual\n\nIntro.\n\n");
    for i in 1..=6 {
        doc.push_str(&format!(
            "## Step {i}\n\nStep {i} is done by the operator.\n\n"
        ));
    }
    s.write("doc.md", &doc);
    // Every answer takes 30 s: the review would take minutes.
    let model = ScriptedModel::start(|_: &ModelRequest| {
        ModelAnswer::after(Duration::from_secs(30), "BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS")
    });
    runtime().block_on(async {
        let (session, client) = connect(s.dir.path(), &[]).await;
        let Value::Object(args) = json!({
            "doc_path": "doc.md", "backend": "openai", "endpoint": model.url(), "model": "scripted",
        }) else {
            unreachable!()
        };
        let handle = session
            .send_cancellable_request(
                ClientRequest::CallToolRequest(CallToolRequest::new(
                    CallToolRequestParams::new("review_md_run").with_arguments(args),
                )),
                PeerRequestOptions::no_options(),
            )
            .await
            .expect("send review_md_run");
        // Wait until the model is being asked.
        let started = Instant::now();
        while model.calls() == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the model was never called; progress: {:?}",
                client.messages()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            client.messages().iter().any(|m| m.contains("started")),
            "progress before the model: {:?}",
            client.messages()
        );
        let cancelled_at = Instant::now();
        session
            .notify_cancelled(CancelledNotificationParam::new(
                Some(handle.id.clone()),
                Some("the user stopped it".into()),
            ))
            .await
            .expect("send the cancellation");

        // The server stops the run: the lock is released well before the
        // model's first answer, nothing is recorded, and it keeps serving.
        loop {
            let (v, err) = call(&session, "review_md_status", json!({"doc_path": "doc.md"})).await;
            let free = !err && v["lock_holder"].is_null();
            if free || v["status"] == "not_found" {
                if !err {
                    assert_eq!(v["counts"]["total_changes"], 0, "{v}");
                }
                break;
            }
            assert!(
                cancelled_at.elapsed() < Duration::from_secs(25),
                "still locked {:?} after the cancellation: {v}",
                cancelled_at.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(25),
            "stopped in {:?}",
            cancelled_at.elapsed()
        );
        let calls = model.calls();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(model.calls(), calls, "no request after the stop");
        assert!(calls < 7, "{calls} model calls for 7 sections");

        // The server still works after a cancelled call.
        let (v, err) = call(&session, "check_md", json!({"doc_path": "doc.md"})).await;
        assert!(!err, "{v}");
        // The cancelled request's answer, if any, does not matter: drop it.
        drop(handle);
        session.cancel().await.expect("close");
    });
}

/// True when `koas mcp --require-confinement` starts here (Linux with
/// Landlock); prints SKIPPED otherwise.
fn confinement_available(root: &Path) -> bool {
    let out = std::process::Command::new(koas_bin())
        .args(["mcp", "--require-confinement", "--root"])
        .arg(root)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run koas mcp");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("would not be confined") {
        eprintln!("SKIPPED: the kernel offers no Landlock here: {stderr}");
        return false;
    }
    assert!(
        stderr.contains("confined to the root by the kernel"),
        "{stderr}"
    );
    true
}

/// Swaps `docs/swap.md` between a document and a link to a file outside
/// the root, and `docs/.review` between a folder and a link to a folder
/// outside, as fast as it can, until `stop`.
fn swap_links(root: PathBuf, outside: PathBuf, stop: Arc<std::sync::atomic::AtomicBool>) -> u64 {
    use std::os::unix::fs::symlink;
    use std::sync::atomic::Ordering;
    let docs = root.join("docs");
    let doc_text = std::fs::read(docs.join("real.md")).expect("real.md");
    let mut swaps = 0u64;
    while !stop.load(Ordering::Relaxed) {
        // The document: a regular file, then a link out (each by rename,
        // so the name always exists).
        let _ = std::fs::write(docs.join("swap.tmp"), &doc_text);
        let _ = std::fs::rename(docs.join("swap.tmp"), docs.join("swap.md"));
        let _ = std::fs::remove_file(docs.join("link.tmp"));
        let _ = symlink(outside.join("secret.md"), docs.join("link.tmp"));
        let _ = std::fs::rename(docs.join("link.tmp"), docs.join("swap.md"));
        // The workspaces' folder: moved away, a link out in its place,
        // then back.
        if std::fs::rename(docs.join(".review"), docs.join(".review-real")).is_ok() {
            let _ = symlink(outside.join("ws"), docs.join(".review"));
            std::thread::sleep(Duration::from_micros(300));
            let _ = std::fs::remove_file(docs.join(".review"));
            let _ = std::fs::rename(docs.join(".review-real"), docs.join(".review"));
        }
        swaps += 1;
    }
    swaps
}

/// Every file under `dir`, recursively (links not followed).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                _ => out.push(path),
            }
        }
    }
    out
}

#[cfg(unix)]
#[test]
fn regression_a_link_swapped_during_calls_never_leads_a_read_or_write_out_of_the_root() {
    let outer = Scratch::new();
    let root = outer.path("root");
    let outside = outer.path("outside");
    std::fs::create_dir_all(root.join("docs")).expect("mkdir");
    std::fs::create_dir_all(outside.join("ws")).expect("mkdir");
    if !confinement_available(&root) {
        return;
    }
    // The secret is a document whose checks quote a marker: any answer
    // that read it carries the marker.
    let marker = "zebra-secret-7391";
    std::fs::write(
        outside.join("secret.md"),
        format!("# Secret\n\nSee [the plan](#{marker}) and [this](#{marker}-2).\n\n## {marker}\n\nText {marker}.\n"),
    )
    .expect("secret");
    std::fs::copy(
        fixtures().join("retention_policy.md"),
        root.join("docs/real.md"),
    )
    .expect("copy");
    std::fs::copy(
        fixtures().join("retention_policy.md"),
        root.join("docs/swap.md"),
    )
    .expect("copy");
    let ops = json!([{"action": "flag", "line_start": 1, "line_end": 1, "kind": "style",
                      "rationale": "race", "review_note": "REVIEWER: race"}]);
    // A first review so the workspace exists for the tools that read it.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rounds: usize = std::env::var("KOAS_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(80);
    let (calls, leaks, swaps) = runtime().block_on(async {
        let (session, _) = connect(&root, &[]).await;
        let (v, err) = call(&session, "review_md_run", json!({"doc_path": "docs/swap.md", "ops": ops.clone()})).await;
        assert!(!err, "{v}");
        let swapper = {
            let (root, outside, stop) = (root.clone(), outside.clone(), stop.clone());
            std::thread::spawn(move || swap_links(root, outside, stop))
        };
        let mut calls = 0usize;
        let mut leaks = Vec::new();
        for round in 0..rounds {
            let mut batch = vec![
                ("review_md_status", json!({"doc_path": "docs/swap.md"})),
                ("review_md_grep", json!({"doc_path": "docs/swap.md"})),
                ("review_md_show_change", json!({"doc_path": "docs/swap.md", "change_id": "RVW-0001", "include_patch": true})),
                ("review_md_report", json!({"doc_path": "docs/swap.md"})),
                ("review_md_revert", json!({"doc_path": "docs/swap.md", "change_ids": "RVW-0099"})),
            ];
            batch.extend((0..20).map(|_| ("check_md", json!({"doc_path": "docs/swap.md", "no_config": true}))));
            if round % 4 == 0 {
                batch.push(("review_md_run", json!({"doc_path": "docs/swap.md", "ops": ops.clone()})));
            }
            for (tool, args) in batch {
                let (v, _) = call(&session, tool, args).await;
                calls += 1;
                if v.to_string().contains(marker) {
                    leaks.push(format!("{tool}: {v}"));
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let swaps = swapper.join().expect("swapper");
        session.cancel().await.expect("close");
        (calls, leaks, swaps)
    });
    let written = files_under(&outside.join("ws"));
    eprintln!(
        "{calls} calls, {swaps} swaps, {} answers read outside the root, {} files written outside",
        leaks.len(),
        written.len()
    );
    assert!(
        swaps > 100,
        "the links were swapped during the calls ({swaps})"
    );
    assert!(
        leaks.is_empty(),
        "{} answers read the file outside the root, e.g. {}",
        leaks.len(),
        leaks[0]
    );
    assert!(
        written.is_empty(),
        "files written outside the root: {written:?}"
    );
    assert_eq!(
        std::fs::read_dir(&outside).expect("outside").count(),
        2,
        "nothing was created beside the secret"
    );
}

/// The real server on raw stdio: lines written by hand, answers read one
/// per line.
struct RawServer {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl RawServer {
    fn start(root: &Path) -> RawServer {
        let mut child = std::process::Command::new(koas_bin())
            .args(["mcp", "--root"])
            .arg(root)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("koas mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut server = RawServer {
            child,
            stdin,
            stdout,
        };
        server.send(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#);
        assert_eq!(server.answer()["id"], 0);
        server.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        server
    }

    fn send(&mut self, line: &[u8]) {
        use std::io::Write;
        self.stdin.write_all(line).expect("write");
        self.stdin.write_all(b"\n").expect("write");
        self.stdin.flush().expect("flush");
    }

    fn answer(&mut self) -> Value {
        use std::io::BufRead;
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// Closes stdin and returns what the server logged.
    fn finish(mut self) -> String {
        use std::io::Read;
        drop(self.stdin);
        let mut log = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            let _ = err.read_to_string(&mut log);
        }
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "{status}: {log}");
        log
    }
}

#[test]
fn regression_oversized_malformed_and_mistyped_requests_get_their_json_rpc_error() {
    let s = Scratch::with_fixture("retention_policy.md");
    let mut server = RawServer::start(s.dir.path());

    // 16 MiB and more: refused with the request's id, not left unanswered.
    let mut big = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"check_md","arguments":{"doc_path":""#.to_vec();
    big.extend(std::iter::repeat(b'a').take(16 * 1024 * 1024));
    big.extend_from_slice(br#""}}}"#);
    server.send(&big);
    let a = server.answer();
    assert_eq!(
        (a["id"].clone(), a["error"]["code"].clone()),
        (json!(5), json!(-32600)),
        "{a}"
    );
    assert!(
        a["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("16 MiB")),
        "{a}"
    );

    // Not JSON: -32700 with a null id.
    server.send(br#"{"jsonrpc":"2.0","id":6,"method":"#);
    let a = server.answer();
    assert_eq!(
        (a["id"].clone(), a["error"]["code"].clone()),
        (Value::Null, json!(-32700)),
        "{a}"
    );

    // A known method with parameters that do not fit: -32602, not -32601.
    server.send(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5}}"#);
    let a = server.answer();
    assert_eq!(
        (a["id"].clone(), a["error"]["code"].clone()),
        (json!(7), json!(-32602)),
        "{a}"
    );

    // An unknown method is still "method not found".
    server.send(br#"{"jsonrpc":"2.0","id":8,"method":"no/such/method"}"#);
    let a = server.answer();
    assert_eq!(
        (a["id"].clone(), a["error"]["code"].clone()),
        (json!(8), json!(-32601)),
        "{a}"
    );

    // And the server still works.
    server.send(br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"check_md","arguments":{"doc_path":"retention_policy.md"}}}"#);
    let a = server.answer();
    assert_eq!(a["id"], 9, "{a}");
    assert_eq!(
        a["result"]["structuredContent"]["status"], "completed",
        "{a}"
    );
    let log = server.finish();
    for needle in ["over 16 MiB", "-32700", "-32602"] {
        assert!(
            log.contains(needle),
            "the log names what was dropped ({needle}): {log}"
        );
    }
}

#[test]
fn check_md_answers_the_findings_of_the_projects_other_kernels() {
    let s = Scratch::new();
    let kernels = s.path("data/koas/kernels");
    std::fs::create_dir_all(&kernels).expect("mkdir");
    let lib = koas_test_support::test_plugin("findings");
    std::fs::copy(&lib, kernels.join(lib.file_name().expect("a file name"))).expect("copy");
    s.write("doc.md", "# Guide\n\nThis is teh guide.\n");
    // The built-in spelling check would report "teh" as well: off.
    s.write(
        "koas.toml",
        "[kernels]\nrun = [\"spell_check\"]\n[language]\nspelling = false\n",
    );
    let data = s.path("data");
    runtime().block_on(async {
        let (session, _) = connect_env(s.dir.path(), &[], &[("XDG_DATA_HOME", &data)]).await;
        let (v, err) = call(&session, "check_md", json!({"doc_path": "doc.md"})).await;
        assert!(!err, "{v}");
        assert_convention("check_md", &v);
        assert_eq!(v["total"], 1, "{v}");
        assert_eq!(v["fails"], true, "{v}");
        let theirs = &v["kernel_findings"][0];
        assert_eq!(theirs["kernel"], "spell_check", "{v}");
        assert_eq!(theirs["kind"], "spelling");
        assert_eq!(theirs["line"], 3);
        assert_eq!(v["counts"]["warning"], 1, "{v}");
        // With no_config, the built-in checks only: the language check's
        // hint on "teh" (nothing in the document says which word it meant).
        let (v, _) = call(
            &session,
            "check_md",
            json!({"doc_path": "doc.md", "no_config": true}),
        )
        .await;
        assert_eq!(v["total"], 1, "{v}");
        assert_eq!(v["findings"][0]["kind"], "misspelling", "{v}");
        assert_eq!(v["findings"][0]["severity"], "info", "{v}");
        assert_eq!(v["kernel_findings"], json!([]));
        session.cancel().await.ok();
    });
}

/// A client's method name and request id reach the server's log: shown
/// escaped, never obeyed by the terminal the log is read on.
#[test]
fn regression_a_clients_method_and_id_are_logged_with_their_escapes_shown() {
    let s = Scratch::with_fixture("retention_policy.md");
    let mut server = RawServer::start(s.dir.path());
    server.send(
        br#"{"jsonrpc":"2.0","id":"\u001b]0;PWNED\u0007","method":"tools/call","params":{"name":5}}"#,
    );
    let a = server.answer();
    assert_eq!(a["error"]["code"], json!(-32602), "{a}");
    server.send(br#"{"jsonrpc":"2.0","id":9,"method":"\u001b[2J\rkoas: ok"}"#);
    let a = server.answer();
    assert_eq!(a["id"], json!(9), "{a}");
    let log = server.finish();
    assert!(
        !log.contains('\u{1b}') && !log.contains('\u{7}') && !log.contains('\r'),
        "{log:?}"
    );
    // The id is shown (JSON-escaped), not dropped.
    assert!(log.contains("]0;PWNED"), "{log}");
}
