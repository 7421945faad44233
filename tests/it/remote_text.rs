//! Text that comes from a model server, a plugin or a document reaches the
//! terminal only through the one sanitiser: control and escape characters
//! are shown escaped. Regression tests through the real `koas` binary.

use crate::common::{stderr, stdout, Project};
use crate::review_common::{llm_flags, Scratch};
use koas_test_support::model::{ModelAnswer, ScriptedModel};
use koas_test_support::test_plugin;
use std::process::Output;

/// What the attacker sends: a window title (OSC 0 … BEL), a screen clear
/// (CSI 2J), a carriage return and a line that looks like koas's own.
const ATTACK: &str = "\u{1b}]0;PWNED\u{7}\u{1b}[2J\rkoas: review OK";

/// The attack as koas must show it: every control character escaped.
const SHOWN: &str = "\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\\rkoas: review OK";

/// Fails when any byte a terminal would obey reached it: ESC, BEL, CR,
/// or a one-byte CSI.
fn assert_inert(what: &str, text: &str) {
    for (name, c) in [
        ("ESC", '\u{1b}'),
        ("BEL", '\u{7}'),
        ("CR", '\r'),
        ("CSI", '\u{9b}'),
    ] {
        assert!(
            !text.contains(c),
            "{what}: a raw {name} reached the terminal:\n{text:?}"
        );
    }
}

fn all(out: &Output) -> String {
    format!("{}{}", stdout(out), stderr(out))
}

#[test]
fn a_model_servers_http_500_error_text_is_shown_escaped_on_stderr() {
    let model = ScriptedModel::start(|_| ModelAnswer::Status(500, ATTACK.to_owned()));
    let s = Scratch::new();
    s.write("doc.md", "# Title\n\nThe service handles teh work.\n");
    s.write(
        "koas.toml",
        "[llm]\nbackoff_initial_ms = 10\nbackoff_max_ms = 20\nmax_retries = 1\n",
    );
    let mut args = vec!["review".to_owned(), "doc.md".to_owned()];
    args.extend(llm_flags(&model, 1));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = s.koas(&args);
    let text = all(&out);
    assert!(model.calls() > 0, "the server was asked: {text}");
    assert_inert("koas review", &text);
    assert!(
        text.contains(SHOWN),
        "the server's text is shown, escaped:\n{text}"
    );
    assert_ne!(out.status.code(), Some(0), "{text}");
}

#[test]
fn a_model_servers_http_500_error_text_is_shown_escaped_by_koas_run() {
    let model = ScriptedModel::start(|_| ModelAnswer::Status(500, ATTACK.to_owned()));
    let p = Project::new(
        "a document\n",
        &["source_len", "asks_llm"],
        &format!(
            "[llm]\nbackend = \"openai\"\nmodel = \"scripted\"\nendpoint = \"{}\"\nbackoff_initial_ms = 10\nbackoff_max_ms = 20\nmax_retries = 1\n",
            model.url()
        ),
    );
    let out = p.run(&["-v"]);
    let text = all(&out);
    assert!(model.calls() > 0, "the server was asked: {text}");
    assert_inert("koas run", &text);
    assert!(
        text.contains(SHOWN),
        "the server's text is shown, escaped:\n{text}"
    );
}

/// A plugin's warning, summary and error message are the plugin's words.
fn escapes_project(extra: &str) -> (Project, Output) {
    let p = Project::new("a document\n", &["hostile_escapes"], extra);
    let hostile = test_plugin("hostile");
    let out = p.run(&["-v", "--kernel-path", hostile.to_str().expect("utf-8 path")]);
    (p, out)
}

#[test]
fn a_plugins_log_line_and_summary_are_shown_escaped() {
    let (_p, out) = escapes_project("");
    let text = all(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_inert("a plugin's log and summary", &text);
    assert!(text.contains(&format!("log {SHOWN}")), "{text}");
    assert!(text.contains(&format!("summary {SHOWN}")), "{text}");
}

#[test]
fn a_plugins_error_message_is_shown_escaped() {
    let (p, out) = escapes_project("[config.hostile_escapes]\nfail = true\n");
    let text = all(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_inert("a plugin's error", &text);
    assert!(text.contains(&format!("error {SHOWN}")), "{text}");
    // The run record keeps the plugin's words as they were (JSON escapes
    // them): only what reaches a terminal is shown escaped.
    let record = p.record().to_string();
    assert!(record.contains("error \\u001b]0;PWNED"), "{record}");
}

/// A document's name is someone else's words too: `koas check` quotes it
/// on every finding line.
#[test]
fn a_document_names_control_characters_are_shown_escaped_by_koas_check() {
    let s = Scratch::new();
    let name = format!("evil{ATTACK}.md");
    s.write(&name, "# T\n\nSee [x](#nowhere).\n");
    for format in ["human", "github"] {
        let out = s.koas(&["check", ".", "--format", format]);
        let text = all(&out);
        assert_eq!(
            out.status.code(),
            Some(1),
            "the broken link is found: {text}"
        );
        assert_inert(&format!("koas check --format {format}"), &text);
        // GitHub's workflow commands percent-encode CR and `:` themselves.
        assert!(
            text.contains("evil\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J"),
            "{text}"
        );
    }
}

/// The forward patch `koas show --patch` prints holds the document's
/// lines around the change as they are.
#[test]
fn a_documents_control_characters_are_shown_escaped_by_koas_show() {
    let s = Scratch::new();
    s.write(
        "doc.md",
        &format!("# Title\n\nThe service {ATTACK} handles teh work.\n"),
    );
    let ops = serde_json::json!([{"action": "replace", "kind": "typo",
        "target": {"line_start": 3}, "before_text": "teh", "after_text": "the"}]);
    s.write("ops.json", &ops.to_string());
    let out = s.koas(&["review", "doc.md", "--ops", "ops.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    let out = s.koas(&["show", "doc.md", "RVW-0001", "--patch"]);
    let text = all(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_inert("koas show --patch", &text);
    assert!(
        text.contains(&format!("-The service {SHOWN} handles teh work.")),
        "{text}"
    );
}

/// A plugin's file name is shown by `koas kernels` in its table, in the
/// problems (a name loaded twice) and in the files not loaded.
#[test]
fn a_plugin_file_names_control_characters_are_shown_escaped_by_koas_kernels() {
    let s = Scratch::new();
    let folder = s.dir.path().join("kernels");
    std::fs::create_dir(&folder).expect("folder");
    let testkit = test_plugin("testkit");
    for name in [
        format!("libkoas_kernel_x{ATTACK}.so"),
        format!("lib{ATTACK}.so"),
    ] {
        std::fs::copy(&testkit, folder.join(name)).expect("copy");
    }
    let out = s.koas(&["kernels", "--kernel-path", "kernels"]);
    let text = all(&out);
    assert_inert("koas kernels", &text);
    assert!(
        text.contains(&format!("libkoas_kernel_x{SHOWN}.so")),
        "{text}"
    );
    assert!(text.contains(&format!("lib{SHOWN}.so: ignored")), "{text}");
}
