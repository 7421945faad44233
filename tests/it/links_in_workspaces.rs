//! Links planted inside a review workspace (the ledger, the patches folder,
//! `.review` itself) are refused by name, never written through: regression
//! tests through the real `koas` binary (issue 45, "links inside a review
//! workspace are followed").
#![cfg(unix)]

use crate::lsp::{uri_of, Client};
use crate::review_common::{assert_code, stderr, Scratch};
use koas_test_support::koas_bin;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Stdio;

const DOC: &str = "# Handbook\n\n## Part 1\n\nThe bandwith of part 1 is high.\n\n## Part 2\n\nThe recieve path of part 2.\n";

fn typo_ops(before: &str, after: &str, line: usize) -> String {
    json!([{"action": "replace", "kind": "typo", "target": {"line_start": line},
            "before_text": before, "after_text": after}])
    .to_string()
}

/// A scratch folder with `doc.md`, reviewed once (one change recorded),
/// and an empty folder `elsewhere/` for links to lead to.
fn reviewed() -> Scratch {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    s.write("first.json", &typo_ops("bandwith", "bandwidth", 5));
    s.write("second.json", &typo_ops("recieve", "receive", 9));
    std::fs::create_dir(s.path("elsewhere")).expect("mkdir");
    let out = s.koas(&["-q", "review", "doc.md", "--ops", "first.json"]);
    assert_code(&out, 0, "first review");
    s
}

/// Every file below `dir` with its bytes (links not followed).
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("list").flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                out.push((path.display().to_string(), bytes));
            }
        }
    }
    out.sort();
    out
}

/// `text` refuses a symbolic link whose path ends with `link`.
fn assert_names_link(text: &str, link: &str) {
    let named = text
        .lines()
        .any(|l| l.contains("refused the symbolic link") && l.contains(&format!("{link}:")));
    assert!(named, "the message names the link …{link}: {text}");
}

#[test]
fn regression_a_ledger_linked_elsewhere_is_refused_and_the_outside_file_unchanged() {
    let s = reviewed();
    let ws = s.workspace();
    let ledger = ws.join("review/ledger.jsonl");
    // The outside file starts as a copy of the ledger: a koas that reads
    // and appends through the link would find it sound.
    let outside = s.path("elsewhere/led");
    std::fs::copy(&ledger, &outside).expect("copy");
    let before = std::fs::read(&outside).expect("read");
    std::fs::remove_file(&ledger).expect("rm");
    symlink(&outside, &ledger).expect("symlink");
    let out = s.koas(&["-q", "review", "doc.md", "--ops", "second.json"]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_names_link(&stderr(&out), "review/ledger.jsonl");
    assert_eq!(
        std::fs::read(&outside).expect("read"),
        before,
        "the outside file is unchanged"
    );
    assert!(
        std::fs::symlink_metadata(&ledger)
            .expect("link")
            .is_symlink(),
        "the link is kept, not replaced"
    );
    // Reading commands refuse it too, never showing the outside file.
    let out = s.koas(&["-q", "status", "doc.md"]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("ledger.jsonl"), "{}", stderr(&out));
}

#[test]
fn regression_a_patches_folder_linked_elsewhere_receives_nothing() {
    let s = reviewed();
    let ws = s.workspace();
    let patches = ws.join("review/patches");
    std::fs::rename(&patches, s.path("moved-patches")).expect("move");
    symlink(s.path("elsewhere"), &patches).expect("symlink");
    let out = s.koas(&["-q", "review", "doc.md", "--ops", "second.json"]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_names_link(&stderr(&out), "review/patches");
    assert_eq!(
        contents(&s.path("elsewhere")),
        Vec::new(),
        "nothing written there"
    );
    assert!(std::fs::symlink_metadata(&patches)
        .expect("link")
        .is_symlink());
}

/// `.review` linked to `elsewhere/`, before any review.
fn review_folder_linked() -> Scratch {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    s.write("first.json", &typo_ops("bandwith", "bandwidth", 5));
    std::fs::create_dir(s.path("elsewhere")).expect("mkdir");
    symlink(s.path("elsewhere"), s.path(".review")).expect("symlink");
    s
}

#[test]
fn regression_a_review_folder_linked_elsewhere_receives_nothing_from_koas_review() {
    let s = review_folder_linked();
    let out = s.koas(&["-q", "review", "doc.md", "--ops", "first.json"]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_names_link(&stderr(&out), "/.review");
    assert_eq!(
        contents(&s.path("elsewhere")),
        Vec::new(),
        "nothing written there"
    );
    assert_eq!(std::fs::read_to_string(s.path("doc.md")).expect("doc"), DOC);
}

#[test]
fn regression_a_review_folder_linked_elsewhere_receives_nothing_from_the_language_server() {
    let s = review_folder_linked();
    let uri = uri_of(&s, "doc.md");
    let mut c = Client::start(&s, &[]);
    c.initialize(s.dir.path());
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": DOC}}),
    );
    let answer = c.request(
        "workspace/executeCommand",
        json!({"command": "koas.review", "arguments": [uri, {"noLlm": true}]}),
    );
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        answer.get("error").is_some(),
        "the review is refused: {answer}"
    );
    assert!(
        message.contains("symbolic link") && message.contains(".review"),
        "{answer}"
    );
    assert_eq!(
        contents(&s.path("elsewhere")),
        Vec::new(),
        "nothing written there"
    );
    assert_eq!(c.shutdown(), Some(0));
}

/// One JSON-RPC exchange with `koas mcp` over stdio: the answer to `id`.
fn mcp_answer(lines: &mut impl BufRead, id: u64) -> Value {
    let mut line = String::new();
    loop {
        line.clear();
        let n = lines.read_line(&mut line).expect("read");
        assert!(n > 0, "koas mcp closed its output before answering {id}");
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if message["id"] == json!(id) && message.get("method").is_none() {
            return message;
        }
    }
}

#[test]
fn regression_a_review_folder_linked_elsewhere_receives_nothing_from_the_mcp_server() {
    // The link leads to a folder inside the root, so only the refusal of
    // links (not the root's confinement) keeps the files out of it.
    let s = Scratch::new();
    std::fs::create_dir_all(s.path("root/docs")).expect("mkdir");
    std::fs::create_dir_all(s.path("root/elsewhere")).expect("mkdir");
    s.write("root/docs/doc.md", DOC);
    symlink(s.path("root/elsewhere"), s.path("root/docs/.review")).expect("symlink");
    let mut child = std::process::Command::new(koas_bin())
        .args(["mcp", "--root"])
        .arg(s.path("root"))
        .current_dir(s.path("root"))
        .env_remove("KOAS_WORKSPACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("koas mcp starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").expect("write");
        stdin.flush().expect("flush");
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "links-test", "version": "1"}}}),
    );
    mcp_answer(&mut lines, 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let ops = json!([{"action": "replace", "kind": "typo", "target": {"line_start": 5},
                      "before_text": "bandwith", "after_text": "bandwidth"}]);
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "review_md_run", "arguments": {"doc_path": "docs/doc.md", "ops": ops}}}),
    );
    let answer = mcp_answer(&mut lines, 2);
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let text = answer.to_string();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        text.contains("symbolic link") && text.contains(".review"),
        "{answer}"
    );
    assert_eq!(
        contents(&s.path("root/elsewhere")),
        Vec::new(),
        "nothing written there"
    );
}

#[test]
fn regression_the_kernels_host_writes_nothing_through_a_link_in_the_run_folder() {
    use crate::common::{kernel, Project};
    // A folder of the workspace linked to another of its folders: the
    // path stays inside, so only the refusal of links keeps the kernel's
    // file API from writing through it.
    let p = Project::new(
        "# Doc\n\nText.\n",
        &["source_len", "writer"],
        "[config.writer]\npath = \"notes/hello.txt\"",
    );
    std::fs::create_dir_all(p.ws().join("elsewhere")).expect("mkdir");
    symlink(p.ws().join("elsewhere"), p.ws().join("notes")).expect("symlink");
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let error = kernel(&p.record(), "writer")["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        error.contains("refused the symbolic link") && error.contains("notes"),
        "{error}"
    );
    assert_eq!(contents(&p.ws().join("elsewhere")), Vec::new());
    // The run folder itself a link: refused before anything is written.
    let p = Project::new("# Doc\n\nText.\n", &["source_len"], "");
    let outside = p.dir.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    symlink(&outside, p.ws()).expect("symlink");
    let out = p.run(&[]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_names_link(&stderr(&out), "ws");
    assert_eq!(contents(&outside), Vec::new(), "nothing written there");
}
