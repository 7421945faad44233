//! `koas lsp`: the real binary as a language server on stdio, driven by a
//! small LSP client: the handshake, diagnostics equal to `koas check`'s on
//! open and on in-memory edits (the file on disk untouched), stale checks
//! dropped, a code action applied and its finding gone, hover and code
//! lenses on a reviewed document, `koas.revert`, malformed messages
//! answered with JSON-RPC errors, and a clean shutdown.

use crate::review_common::Scratch;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

pub(crate) const WAIT: Duration = Duration::from_secs(60);

/// A client of one `koas lsp` process (`lsp_hostile` drives it too).
pub(crate) struct Client {
    pub(crate) child: Child,
    pub(crate) stdin: ChildStdin,
    incoming: Receiver<Value>,
    /// Messages received while waiting for something else.
    pub(crate) seen: Vec<Value>,
    next_id: u64,
}

fn read_frame(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length:") {
            length = v.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

impl Client {
    pub(crate) fn start(s: &Scratch, extra: &[&str]) -> Client {
        let mut args = vec!["lsp"];
        args.extend_from_slice(extra);
        let mut child = s
            .command(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("koas lsp starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, incoming) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_frame(&mut reader) {
                if tx.send(message).is_err() {
                    return;
                }
            }
        });
        Client {
            child,
            stdin,
            incoming,
            seen: Vec::new(),
            next_id: 1,
        }
    }

    pub(crate) fn send_raw(&mut self, body: &[u8]) {
        write!(self.stdin, "Content-Length: {}\r\n\r\n", body.len()).expect("write");
        self.stdin.write_all(body).expect("write");
        self.stdin.flush().expect("flush");
    }

    pub(crate) fn send(&mut self, message: &Value) {
        let body = serde_json::to_vec(message).expect("json");
        self.send_raw(&body);
    }

    pub(crate) fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its response (answering the server's
    /// own requests meanwhile: `workspace/applyEdit` is accepted).
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait_for(|m| m["id"] == json!(id) && m.get("method").is_none())
    }

    /// Waits for the first message (new or already seen) matching `wanted`.
    pub(crate) fn wait_for(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.seen.iter().position(&wanted) {
            return self.seen.remove(i);
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.incoming.recv_timeout(left).unwrap_or_else(|_| {
                panic!("no matching message in {WAIT:?}; seen: {:#?}", self.seen)
            });
            // The server's requests get an answer at once.
            if message.get("method").is_some() && message.get("id").is_some() {
                let result = if message["method"] == "workspace/applyEdit" {
                    json!({"applied": true})
                } else {
                    Value::Null
                };
                let id = message["id"].clone();
                self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
            }
            if wanted(&message) {
                return message;
            }
            self.seen.push(message);
        }
    }

    /// The next diagnostics published for `uri` at `version`.
    pub(crate) fn diagnostics(&mut self, uri: &str, version: i64) -> Vec<Value> {
        let m = self.wait_for(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["version"] == json!(version)
        });
        m["params"]["diagnostics"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    pub(crate) fn initialize(&mut self, root: &std::path::Path) {
        let answer = self.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": format!("file://{}", root.display()),
                "capabilities": {"window": {"workDoneProgress": true}}
            }),
        );
        let caps = &answer["result"]["capabilities"];
        assert_eq!(caps["textDocumentSync"]["change"], 2, "{answer}");
        assert_eq!(caps["hoverProvider"], true);
        assert!(caps["executeCommandProvider"]["commands"]
            .as_array()
            .is_some_and(|c| c.contains(&json!("koas.revert"))));
        self.notify("initialized", json!({}));
    }

    pub(crate) fn shutdown(mut self) -> Option<i32> {
        let answer = self.request("shutdown", Value::Null);
        assert_eq!(answer["result"], Value::Null, "{answer}");
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            assert!(Instant::now() < deadline, "koas lsp did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

pub(crate) fn uri_of(s: &Scratch, name: &str) -> String {
    let path = s.path(name).canonicalize().expect("canonical path");
    format!("file://{}", path.display())
}

/// `(line, kind, message)` of diagnostics, as `koas check` would say them.
pub(crate) fn diag_keys(diags: &[Value]) -> Vec<(u64, String, String)> {
    let mut keys: Vec<_> = diags
        .iter()
        .map(|d| {
            (
                d["range"]["start"]["line"].as_u64().unwrap_or(0) + 1,
                d["code"].as_str().unwrap_or("").to_owned(),
                d["message"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    keys.sort();
    keys
}

fn check_keys(s: &Scratch, doc: &str) -> Vec<(u64, String, String)> {
    let out = s.koas(&["check", "--format", "json", "--fail-on", "never", doc]);
    let items: Vec<Value> = serde_json::from_slice(&out.stdout).expect("check json");
    let mut keys: Vec<_> = items
        .iter()
        .map(|f| {
            (
                f["line"].as_u64().unwrap_or(0),
                f["kind"].as_str().unwrap_or("").to_owned(),
                f["message"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    keys.sort();
    keys
}

const DOC: &str = "\
# Guide

See [the setup](#setupp) first.

##

## Setup

<!-- koas-disable-next-line ai_leftover -->
As an AI language model, I cannot promise this.

As an AI language model, I wrote this section.
";

/// Regression (issue 49): "fix all in file" applied one round of fixes;
/// "teh the the" needed three. It now fixes until nothing is left.
#[test]
fn regression_fix_all_converges_in_one_action() {
    let s = Scratch::new();
    let text = "# A\n\nRead the the the guide and teh the the notes.\n";
    s.write("r.md", text);
    let uri = uri_of(&s, "r.md");
    let mut c = Client::start(&s, &["--debounce-ms", "50"]);
    c.initialize(s.dir.path());
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": text}}),
    );
    let diags = c.diagnostics(&uri, 1);
    assert!(!diags.is_empty());
    let actions = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri},
               "range": {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}},
               "context": {"diagnostics": [], "only": ["source.fixAll"]}}),
    );
    let actions = actions["result"].as_array().cloned().expect("actions");
    assert_eq!(actions.len(), 1, "{actions:#?}");
    assert_eq!(
        actions[0]["title"],
        "koas: fix all in file (5 certain fixes)"
    );
    assert_eq!(
        actions[0]["edit"]["changes"][&uri][0]["newText"],
        "# A\n\nRead the guide and the notes.\n"
    );
    assert_eq!(c.shutdown(), Some(0));
}

#[test]
fn diagnostics_follow_the_editor_text_and_a_fix_removes_its_finding() {
    let s = Scratch::new();
    s.write("guide.md", DOC);
    // koas.toml applies: the AI leftover is an error here.
    s.write("koas.toml", "[check.severity]\nai_leftover = \"error\"\n");
    let uri = uri_of(&s, "guide.md");
    let mut c = Client::start(&s, &["--debounce-ms", "300"]);
    c.initialize(s.dir.path());
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": DOC}}),
    );
    let diags = c.diagnostics(&uri, 1);
    assert_eq!(diag_keys(&diags), check_keys(&s, "guide.md"), "{diags:#?}");
    let kinds: Vec<&str> = diags.iter().filter_map(|d| d["code"].as_str()).collect();
    assert!(
        kinds.contains(&"broken_link_anchor") && kinds.contains(&"empty_heading"),
        "{kinds:?}"
    );
    // The suppression comment is honoured: one AI leftover, line 12, an error.
    let ai: Vec<&Value> = diags
        .iter()
        .filter(|d| d["code"] == "ai_leftover")
        .collect();
    assert_eq!(ai.len(), 1, "{ai:?}");
    assert_eq!(ai[0]["range"]["start"]["line"], 11);
    assert_eq!(ai[0]["severity"], 1);
    assert!(
        ai[0]["codeDescription"]["href"]
            .as_str()
            .is_some_and(|h| h.ends_with("/blob/main/docs/check.md#ai_leftover")),
        "{:?}",
        ai[0]["codeDescription"]
    );

    // Two quick edits in memory: only the newest version is published.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2},
               "contentChanges": [{"range": {"start": {"line": 11, "character": 0}, "end": {"line": 11, "character": 0}}, "text": "Intro.\n\n"}]}),
    );
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3},
               "contentChanges": [{"range": {"start": {"line": 0, "character": 2}, "end": {"line": 0, "character": 7}}, "text": "Handbook"}]}),
    );
    let diags = c.diagnostics(&uri, 3);
    let ai: Vec<&Value> = diags
        .iter()
        .filter(|d| d["code"] == "ai_leftover")
        .collect();
    assert_eq!(
        ai[0]["range"]["start"]["line"], 13,
        "the finding moved with the text"
    );
    assert!(
        !c.seen.iter().any(|m| m["params"]["version"] == json!(2)),
        "a stale check was published"
    );
    assert_eq!(
        std::fs::read_to_string(s.path("guide.md")).expect("read"),
        DOC,
        "the file is untouched"
    );

    // The empty heading's fix, as a code action, applied by the client.
    let empty = diags
        .iter()
        .find(|d| d["code"] == "empty_heading")
        .cloned()
        .expect("empty heading");
    let actions = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": empty["range"], "context": {"diagnostics": [empty]}}),
    );
    let actions = actions["result"].as_array().cloned().expect("actions");
    let titles: Vec<&str> = actions.iter().filter_map(|a| a["title"].as_str()).collect();
    assert!(
        titles.iter().any(|t| t.contains("disable empty_heading")),
        "{titles:?}"
    );
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("koas: fix all in file")),
        "{titles:?}"
    );
    let fix = actions
        .iter()
        .find(|a| a["isPreferred"] == true)
        .expect("the certain fix");
    let edits = fix["edit"]["changes"][&uri]
        .as_array()
        .cloned()
        .expect("edits");
    let mut text: Vec<String> = {
        let now = DOC.replacen("# Guide", "# Handbook", 1).replacen(
            "As an AI language model, I wrote",
            "Intro.\n\nAs an AI language model, I wrote",
            1,
        );
        now.split_inclusive('\n').map(str::to_owned).collect()
    };
    // The fix removes whole lines: apply it line-wise, last first.
    let mut spans: Vec<(usize, usize)> = edits
        .iter()
        .map(|e| {
            assert_eq!(e["newText"], "");
            (
                e["range"]["start"]["line"].as_u64().expect("line") as usize,
                e["range"]["end"]["line"].as_u64().expect("line") as usize,
            )
        })
        .collect();
    spans.sort_unstable_by(|a, b| b.cmp(a));
    for (from, to) in spans {
        text.drain(from..to);
    }
    let fixed: String = text.concat();
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": fixed}]}),
    );
    let diags = c.diagnostics(&uri, 4);
    assert!(
        !diags.iter().any(|d| d["code"] == "empty_heading"),
        "{diags:#?}"
    );
    assert!(diags.iter().any(|d| d["code"] == "broken_link_anchor"));

    // Malformed messages get JSON-RPC errors; the server stays up.
    c.send_raw(b"{this is not json");
    let e = c.wait_for(|m| m["error"]["code"] == -32700);
    assert_eq!(e["id"], Value::Null);
    c.send(&json!({"jsonrpc": "2.0", "id": 99, "params": {}}));
    let e = c.wait_for(|m| m["id"] == 99);
    assert_eq!(e["error"]["code"], -32600, "{e}");
    let e = c.request("textDocument/nothingLikeThis", json!({}));
    assert_eq!(e["error"]["code"], -32601, "{e}");
    // Regression: Neovim 0.7 sends its copies of the diagnostics without
    // their ranges; the actions are still given.
    let lenient = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 9, "character": 0}},
               "context": {"diagnostics": [{"message": "no range here"}]}}),
    );
    assert!(
        lenient["result"].as_array().is_some_and(|a| !a.is_empty()),
        "{lenient}"
    );
    let e = c.request("textDocument/codeAction", json!({"textDocument": 7}));
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let e = c.request(
        "workspace/executeCommand",
        json!({"command": "koas.nope", "arguments": [uri]}),
    );
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let hover = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
    );
    assert_eq!(hover["result"], Value::Null, "no review: no hover");

    assert_eq!(c.shutdown(), Some(0));
}

#[test]
fn hover_lenses_and_revert_on_a_reviewed_document() {
    let s = Scratch::with_fixture("retention_policy.md");
    let doc = "retention_policy.md";
    let out = s.koas(&[
        "-q",
        "review",
        doc,
        "--ops",
        "retention_policy.ops.json",
        "--no-llm",
        "--in-place",
    ]);
    assert!(out.status.success(), "{}", crate::common::stderr(&out));
    let text = std::fs::read_to_string(s.path(doc)).expect("read");
    let uri = uri_of(&s, doc);
    let mut c = Client::start(&s, &[]);
    c.initialize(s.dir.path());
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": text}}),
    );
    c.diagnostics(&uri, 1);

    let lenses = c.request(
        "textDocument/codeLens",
        json!({"textDocument": {"uri": uri}}),
    );
    let lenses = lenses["result"].as_array().cloned().expect("lenses");
    assert!(!lenses.is_empty(), "a lens per applied change");
    let first = &lenses[0];
    assert_eq!(first["command"]["command"], "koas.revert");
    let id = first["command"]["arguments"][1]
        .as_str()
        .expect("id")
        .to_owned();
    assert!(id.starts_with("RVW-"), "{id}");
    let line = first["range"]["start"]["line"].clone();

    let hover = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": 0}}),
    );
    let shown = hover["result"]["contents"]["value"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(shown.contains(&id), "{shown}");
    assert!(
        shown.contains("koas revert /") && shown.contains(&format!("/{doc} {id}`")),
        "{shown}"
    );

    let answer = c.request(
        "workspace/executeCommand",
        json!({"command": "koas.revert", "arguments": [uri, id]}),
    );
    assert!(answer.get("error").is_none(), "{answer}");
    // The editor is given the reverted text.
    let edit = c.wait_for(|m| m["method"] == "workspace/applyEdit");
    let new_text = edit["params"]["edit"]["changes"][&uri][0]["newText"]
        .as_str()
        .expect("new text")
        .to_owned();
    assert_eq!(
        new_text,
        std::fs::read_to_string(s.path(doc)).expect("read")
    );
    assert_ne!(new_text, text);
    let shown = s.koas(&["show", doc, &format!("REVERT-{id}")]);
    assert!(shown.status.success(), "{}", crate::common::stderr(&shown));

    assert_eq!(c.shutdown(), Some(0));
}

#[test]
fn review_command_reports_progress_and_gives_the_editor_the_result() {
    let s = Scratch::with_fixture("retention_policy.md");
    let doc = "retention_policy.md";
    let text = std::fs::read_to_string(s.path(doc)).expect("read");
    let uri = uri_of(&s, doc);
    let mut c = Client::start(&s, &[]);
    c.initialize(s.dir.path());
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": text}}),
    );
    c.diagnostics(&uri, 1);
    // An unsaved buffer is refused: the review reads the file.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": format!("{text}\nmore\n")}]}),
    );
    let refused = c.request(
        "workspace/executeCommand",
        json!({"command": "koas.review", "arguments": [uri, {"noLlm": true}]}),
    );
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("save")));
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": text}]}),
    );
    let answer = c.request(
        "workspace/executeCommand",
        json!({"command": "koas.review", "arguments": [uri, {"noLlm": true}]}),
    );
    assert!(answer.get("error").is_none(), "{answer}");
    assert_eq!(answer["result"]["status"], "completed", "{answer}");
    // Work-done progress: created, begun, reported, ended.
    let create = c.wait_for(|m| m["method"] == "window/workDoneProgress/create");
    let token = create["params"]["token"].clone();
    let kinds: Vec<String> = c
        .seen
        .iter()
        .filter(|m| m["method"] == "$/progress" && m["params"]["token"] == token)
        .filter_map(|m| m["params"]["value"]["kind"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("begin"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last().map(String::as_str), Some("end"), "{kinds:?}");
    assert!(kinds.iter().any(|k| k == "report"), "{kinds:?}");
    assert!(s.path(".review").is_dir(), "the review has its workspace");
    assert_eq!(c.shutdown(), Some(0));
}

#[test]
fn a_long_review_is_cancelled_from_the_editor() {
    use koas_test_support::model::{ModelAnswer, ModelRequest, ScriptedModel};
    let s = Scratch::new();
    let mut doc = String::from("# Manual\n\nIntro.\n\n");
    for i in 1..=6 {
        doc.push_str(&format!(
            "## Part {i}\n\nPart {i} is done by the operator.\n\n"
        ));
    }
    s.write("doc.md", &doc);
    // Every answer takes 30 s: the review would take minutes.
    let model = ScriptedModel::start(|_: &ModelRequest| {
        ModelAnswer::after(Duration::from_secs(30), "BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS")
    });
    let uri = uri_of(&s, "doc.md");
    let mut c = Client::start(&s, &[]);
    c.initialize(s.dir.path());
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": doc}}),
    );
    c.diagnostics(&uri, 1);
    c.send(
        &json!({"jsonrpc": "2.0", "id": 500, "method": "workspace/executeCommand", "params": {
            "command": "koas.review",
            "arguments": [uri, {"backend": "openai", "endpoint": model.url(), "model": "scripted"}]
        }}),
    );
    let create = c.wait_for(|m| m["method"] == "window/workDoneProgress/create");
    let token = create["params"]["token"].clone();
    let started = Instant::now();
    while model.calls() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the model was never called"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The server answers other requests while the review runs.
    let hover = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
    );
    assert!(hover.get("error").is_none(), "{hover}");
    let cancelled_at = Instant::now();
    c.notify("window/workDoneProgress/cancel", json!({"token": token}));
    let answer = c.wait_for(|m| m["id"] == 500 && m.get("method").is_none());
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(25),
        "the review went on {:?} after the cancellation: {answer}",
        cancelled_at.elapsed()
    );
    let end = c.wait_for(|m| {
        m["method"] == "$/progress"
            && m["params"]["token"] == token
            && m["params"]["value"]["kind"] == "end"
    });
    assert!(end["params"]["value"]["message"].is_string());
    assert_eq!(c.shutdown(), Some(0));
}

#[test]
fn exit_without_shutdown_and_requests_before_initialize() {
    let s = Scratch::new();
    let mut c = Client::start(&s, &[]);
    let e = c.request("textDocument/hover", json!({}));
    assert_eq!(e["error"]["code"], -32002, "{e}");
    c.notify("exit", Value::Null);
    let deadline = Instant::now() + WAIT;
    let code = loop {
        if let Some(status) = c.child.try_wait().expect("wait") {
            break status.code();
        }
        assert!(Instant::now() < deadline, "koas lsp did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(1));
}

#[test]
fn an_editors_docs_base_url_is_where_each_diagnostic_links() {
    let s = Scratch::new();
    let text = "# Guide\n\nSee [the setup](#setpu).\n";
    s.write("guide.md", text);
    let uri = uri_of(&s, "guide.md");
    let mut c = Client::start(&s, &["--debounce-ms", "50"]);
    let answer = c.request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": format!("file://{}", s.dir.path().display()),
            "capabilities": {},
            "initializationOptions": {"docsBaseUrl": "https://git.example.test/docs-team/koas/"}
        }),
    );
    assert!(answer["result"]["capabilities"].is_object(), "{answer}");
    c.notify("initialized", json!({}));
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": text}}),
    );
    let diags = c.diagnostics(&uri, 1);
    let anchor: Vec<&Value> = diags
        .iter()
        .filter(|d| d["code"] == "broken_link_anchor")
        .collect();
    assert_eq!(anchor.len(), 1, "{diags:#?}");
    assert_eq!(
        anchor[0]["codeDescription"]["href"],
        "https://git.example.test/docs-team/koas/blob/main/docs/check.md#broken_link_anchor"
    );
    assert_eq!(c.shutdown(), Some(0));
}

/// The README's Lua snippet for Neovim 0.7, as it is written there.
fn readme_snippet_for_neovim_0_7() -> String {
    let readme = std::fs::read_to_string(koas_test_support::repo_root().join("README.md"))
        .expect("README.md");
    let marker = "-- koas lsp on Markdown buffers, one client per project (Neovim 0.7 or later)";
    let start = readme
        .find(marker)
        .expect("the README has the Neovim 0.7 snippet");
    let end = readme[start..]
        .find("```")
        .expect("the snippet's block ends")
        + start;
    readme[start..end].to_string()
}

#[test]
fn the_readmes_neovim_0_7_snippet_shows_diagnostics_and_applies_a_code_action() {
    let nvim = std::process::Command::new("nvim").arg("--version").output();
    let Ok(version) = nvim else {
        eprintln!("SKIPPED: no nvim on the PATH (Debian: apt install neovim)");
        return;
    };
    eprintln!(
        "{}",
        String::from_utf8_lossy(&version.stdout)
            .lines()
            .next()
            .unwrap_or("")
    );
    let s = Scratch::new();
    // A project of its own: the snippet finds koas.toml upward.
    s.write("koas.toml", "");
    let doc = "# Guide\n\nSee [the setup](#setup) first.\n\n##\n\n## Setup\n\nDone.\n";
    s.write("docs/guide.md", doc);
    let results = s.path("nvim-out.txt");
    let harness = r#"
local out = assert(io.open(os.getenv("KOAS_NVIM_OUT"), "w"))
vim.api.nvim_create_autocmd("VimEnter", { callback = function()
  local function finish(code) out:close(); vim.cmd(code == 0 and "qa!" or "cquit 1") end
  if not vim.wait(30000, function() return #vim.diagnostic.get(0) > 0 end, 50) then
    out:write("no diagnostics\n"); return finish(1)
  end
  local target
  for _, d in ipairs(vim.diagnostic.get(0)) do
    out:write(string.format("diagnostic %d %s\n", d.lnum + 1, tostring(d.code)))
    if d.code == "empty_heading" then target = d end
  end
  if not target then return finish(1) end
  local params = {
    textDocument = vim.lsp.util.make_text_document_params(),
    range = { start = { line = target.lnum, character = 0 }, ["end"] = { line = target.lnum, character = 0 } },
    context = { diagnostics = { target.user_data.lsp } },
  }
  local answers = vim.lsp.buf_request_sync(0, "textDocument/codeAction", params, 20000)
  local chosen
  for _, answer in pairs(answers or {}) do
    for _, action in ipairs(answer.result or {}) do
      if action.isPreferred then chosen = action end
    end
  end
  if not chosen then out:write("no preferred code action\n"); return finish(1) end
  vim.lsp.util.apply_workspace_edit(chosen.edit, "utf-16")
  out:write("applied " .. chosen.title .. "\n")
  for _, line in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do out:write("| " .. line .. "\n") end
  finish(0)
end })
"#;
    let init = format!("{}\n{harness}", readme_snippet_for_neovim_0_7());
    s.write("init.lua", &init);
    let bin_dir = koas_test_support::koas_bin()
        .parent()
        .expect("koas's folder")
        .to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    let mut child = std::process::Command::new("nvim")
        .args(["--headless", "-i", "NONE", "-n", "-u"])
        .arg(s.path("init.lua"))
        .arg(s.path("docs/guide.md"))
        .current_dir(s.dir.path())
        .env("PATH", path)
        .env("KOAS_NVIM_OUT", &results)
        .env("XDG_CONFIG_HOME", s.dir.path())
        .env("XDG_DATA_HOME", s.dir.path())
        .env("XDG_STATE_HOME", s.dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nvim starts");
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("nvim did not finish in {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let said = std::fs::read_to_string(&results).unwrap_or_default();
    assert!(status.success(), "{status:?}\n{said}");
    assert!(said.contains("diagnostic 5 empty_heading\n"), "{said}");
    assert!(said.contains("applied "), "{said}");
    // The empty heading is gone from the buffer.
    assert!(!said.contains("| ##\n"), "{said}");
}
