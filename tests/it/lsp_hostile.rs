//! `koas lsp` against what an editor, a plugin or a file can send it:
//! framing errors, oversized headers and lengths, stale diagnostics, hostile
//! `workspace/executeCommand` paths and slow checks. Regression tests
//! through the real `koas` binary, one per finding of issue 45.

use crate::lsp::{uri_of, Client};
use crate::review_common::Scratch;
use serde_json::{json, Value};
use std::io::Write;

/// A started, initialized server with one document open (its diagnostics
/// received), for the tests that only need it to answer.
fn ready(s: &Scratch) -> (Client, String) {
    s.write("doc.md", "# Doc\n\nText.\n");
    let uri = uri_of(s, "doc.md");
    let mut c = Client::start(s, &[]);
    c.initialize(s.dir.path());
    open(&mut c, &uri, 1, "# Doc\n\nText.\n");
    c.diagnostics(&uri, 1);
    (c, uri)
}

fn open(c: &mut Client, uri: &str, version: i64, text: &str) {
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "markdown", "version": version, "text": text}}),
    );
}

/// A hover request with `id`, framed, as bytes.
fn hover_frame(id: u64, uri: &str) -> Vec<u8> {
    let body = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/hover",
        "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}}),
    )
    .expect("json");
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend(body);
    frame
}

fn write_raw(c: &mut Client, bytes: &[u8]) {
    c.stdin.write_all(bytes).expect("write");
    c.stdin.flush().expect("flush");
}

/// Waits for the answer to request `id` and checks it is a success.
fn answered(c: &mut Client, id: u64) {
    let answer = c.wait_for(|m| m["id"] == json!(id) && m.get("method").is_none());
    assert!(answer.get("error").is_none(), "{answer}");
}

/// The next framing error the server answers with (id null).
fn framing_error(c: &mut Client) -> Value {
    let e = c.wait_for(|m| m["id"].is_null() && m.get("error").is_some());
    assert!(e["error"]["code"].is_i64(), "{e}");
    e
}

#[test]
fn a_header_byte_that_is_not_utf8_does_not_end_the_server() {
    let s = Scratch::new();
    let (mut c, uri) = ready(&s);
    write_raw(&mut c, b"Content-Length: 10\xff\r\n\r\n{\"a\":1}xyz");
    let e = framing_error(&mut c);
    assert_eq!(e["error"]["code"], -32700, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(r"10\xff")),
        "{e}"
    );
    write_raw(&mut c, &hover_frame(1000, &uri));
    answered(&mut c, 1000);
    assert_eq!(c.shutdown(), Some(0), "the server is still up");
}

#[test]
fn a_huge_header_line_is_not_echoed_back() {
    let s = Scratch::new();
    let (mut c, uri) = ready(&s);
    let huge = "A".repeat(5 << 20);
    write_raw(&mut c, format!("Content-Type: {huge}\r\n\r\n").as_bytes());
    let e = framing_error(&mut c);
    let size = serde_json::to_string(&e).expect("json").len();
    assert!(size < 1024, "a 5 MiB header came back as {size} bytes");
    assert!(
        e["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("over 8192 bytes")),
        "{e}"
    );
    // A huge line after the length: refused as well, the next request read.
    write_raw(
        &mut c,
        format!("Content-Length: 2\r\nX-Pad: {huge}\r\n\r\n{{}}").as_bytes(),
    );
    let e = framing_error(&mut c);
    assert!(serde_json::to_string(&e).expect("json").len() < 1024);
    write_raw(&mut c, &hover_frame(1000, &uri));
    answered(&mut c, 1000);
    assert_eq!(c.shutdown(), Some(0));
}

#[test]
fn an_oversized_content_length_is_refused_and_the_next_request_answered() {
    let s = Scratch::new();
    let (mut c, uri) = ready(&s);
    let mut bytes = b"Content-Length: 99999999999\r\n\r\n".to_vec();
    bytes.extend(hover_frame(1000, &uri));
    write_raw(&mut c, &bytes);
    let e = framing_error(&mut c);
    assert_eq!(e["error"]["code"], -32600, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("99999999999 bytes refused")),
        "{e}"
    );
    answered(&mut c, 1000);
    assert_eq!(c.shutdown(), Some(0));
}

#[test]
fn a_negative_length_or_a_longer_body_then_five_requests_all_answered() {
    let s = Scratch::new();
    let (mut c, uri) = ready(&s);
    // The length is refused; the body its sender meant follows it (the
    // old reader lost every later request on this shape).
    let mut bytes = b"Content-Length: -5\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":999}".to_vec();
    bytes.extend((1..=5).flat_map(|i| hover_frame(1000 + i, &uri)));
    write_raw(&mut c, &bytes);
    let e = framing_error(&mut c);
    assert_eq!(e["error"]["code"], -32700, "{e}");
    for i in 1..=5 {
        answered(&mut c, 1000 + i);
    }

    // A body 40 bytes longer than its header says.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"textDocument/hover","params":{{"pad":"{}"}}}}"#,
        "p".repeat(80)
    );
    let mut bytes = format!("Content-Length: {}\r\n\r\n{body}", body.len() - 40).into_bytes();
    bytes.extend((6..=10).flat_map(|i| hover_frame(1000 + i, &uri)));
    write_raw(&mut c, &bytes);
    let e = framing_error(&mut c);
    assert_eq!(e["error"]["code"], -32700, "{e}");
    for i in 6..=10 {
        answered(&mut c, 1000 + i);
    }
    assert_eq!(c.shutdown(), Some(0));
}

#[test]
fn a_closed_and_reopened_document_gets_none_of_its_old_diagnostics() {
    let s = Scratch::new();
    // 2,500 empty headings: 2,500 findings.
    let dirty: String = std::iter::once("# Doc\n\n")
        .chain(std::iter::repeat_n("##\n\nText.\n\n", 2500))
        .collect();
    let clean = "# Doc\n\nText.\n";
    s.write("doc.md", clean);
    let uri = uri_of(&s, "doc.md");
    let mut c = Client::start(&s, &[]);
    c.initialize(s.dir.path());
    for _ in 0..3 {
        open(&mut c, &uri, 1, &dirty);
        c.notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": uri}}),
        );
        open(&mut c, &uri, 1, clean);
        let diags = c.diagnostics(&uri, 1);
        assert!(
            diags.is_empty(),
            "{} old diagnostics published on the new text",
            diags.len()
        );
        c.notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": uri}}),
        );
    }
    // Whatever came later: no publication with the old findings.
    let answer = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
    );
    assert!(answer.get("error").is_none(), "{answer}");
    let stale = c.seen.iter().any(|m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["diagnostics"]
                .as_array()
                .is_some_and(|d| !d.is_empty())
    });
    assert!(!stale, "old diagnostics were published");
    assert_eq!(c.shutdown(), Some(0));
}

/// `workspace/executeCommand` of `command` on the open document `uri`.
fn command(c: &mut Client, command: &str, uri: &str) -> Value {
    let mut arguments = vec![json!(uri)];
    match command {
        "koas.review" => arguments.push(json!({"noLlm": true})),
        "koas.revert" => arguments.push(json!("RVW-0001")),
        _ => {}
    }
    c.request(
        "workspace/executeCommand",
        json!({"command": command, "arguments": arguments}),
    )
}

#[test]
fn execute_command_on_a_fifo_or_dev_zero_is_refused_while_the_server_answers() {
    let s = Scratch::new();
    let (mut c, uri) = ready(&s);
    let fifo = s.path("pipe.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let fifo_uri = uri_of(&s, "pipe.md");
    for (target, kind) in [(fifo_uri.as_str(), "FIFO"), ("file:///dev/zero", "device")] {
        open(&mut c, target, 1, "# Doc\n\nText.\n");
        for name in ["koas.review", "koas.check", "koas.revert", "koas.fixAll"] {
            let answer = command(&mut c, name, target);
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(kind) && message.contains("not a regular file"),
                "{name} on {target}: {answer}"
            );
            // The main loop still answers.
            let hover = c.request(
                "textDocument/hover",
                json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
            );
            assert!(hover.get("error").is_none(), "{hover}");
        }
    }
    assert_eq!(c.shutdown(), Some(0));
}

#[test]
fn an_oversize_sparse_file_is_refused_by_size_without_reading_it() {
    let s = Scratch::new();
    let (mut c, _) = ready(&s);
    // 2 GiB of nothing: a sparse file takes no disk.
    let file = std::fs::File::create(s.path("huge.md")).expect("create");
    file.set_len(2 << 30).expect("set_len");
    drop(file);
    let uri = uri_of(&s, "huge.md");
    open(&mut c, &uri, 1, "# Huge\n\nText.\n");
    for name in ["koas.review", "koas.revert"] {
        let answer = command(&mut c, name, &uri);
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("GiB") && message.contains("over the limit"),
            "{name}: {answer}"
        );
    }
    assert_eq!(c.shutdown(), Some(0));
}

/// A document whose check takes long: large (`sections` of 140 bytes),
/// full of what the checks look at (headings, links to them, numbered
/// tables and figures), each detector's work linear in it.
fn slow_document(sections: usize) -> String {
    let mut text = String::from("# Slow\n\n");
    for i in 0..sections {
        text.push_str(&format!(
            "## Part {i} on retries\n\nSee [part](#part-{i}-on-retries), Table {i} and Figure {i}: 12% of 40 units.\n\n| a | b |\n|---|---|\n| {i} | x |\n\n"
        ));
    }
    text
}

#[test]
fn a_small_document_is_checked_while_a_slow_one_is_still_being_checked() {
    let s = Scratch::new();
    let slow = slow_document(6_000);
    s.write("a-slow.md", &slow);
    s.write("b-small.md", "# Small\n\n##\n");
    let (slow_uri, small_uri) = (uri_of(&s, "a-slow.md"), uri_of(&s, "b-small.md"));
    // A budget large enough that the slow check runs to its end.
    let mut c = Client::start(&s, &["--check-budget-ms", "600000", "--check-threads", "2"]);
    c.initialize(s.dir.path());
    open(&mut c, &slow_uri, 1, &slow);
    open(&mut c, &small_uri, 1, "# Small\n\n##\n");
    let first = c.wait_for(|m| m["method"] == "textDocument/publishDiagnostics");
    assert_eq!(
        first["params"]["uri"], small_uri,
        "the small document waited for the slow one"
    );
    assert!(
        first["params"]["diagnostics"]
            .as_array()
            .is_some_and(|d| !d.is_empty()),
        "{first}"
    );
    // The slow one is published in the end.
    c.diagnostics(&slow_uri, 1);
    assert_eq!(c.shutdown(), Some(0));
}

#[test]
fn a_check_over_its_budget_publishes_no_findings_and_logs_why() {
    let s = Scratch::new();
    let text = slow_document(2_000);
    s.write("doc.md", &text);
    let uri = uri_of(&s, "doc.md");
    let mut c = Client::start(&s, &["--check-budget-ms", "1"]);
    c.initialize(s.dir.path());
    open(&mut c, &uri, 1, &text);
    let diags = c.diagnostics(&uri, 1);
    assert_eq!(diags.len(), 1, "findings published over budget");
    assert_eq!(diags[0]["severity"], 3, "{diags:?}");
    assert!(
        diags[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("took longer than 1 ms")),
        "{diags:?}"
    );
    let log = c.wait_for(|m| m["method"] == "window/logMessage");
    assert!(
        log["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("too slow to check") && m.contains(&uri)),
        "{log}"
    );
    assert_eq!(c.shutdown(), Some(0));
}
