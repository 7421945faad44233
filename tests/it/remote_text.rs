//! Text that comes from a model server, a plugin or a document reaches the
//! terminal only through the one sanitiser: control and escape characters
//! are shown escaped. Regression tests through the real `koas` binary.

use crate::common::{stderr, stdout, Project};
use crate::review_common::Scratch;
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
    let out = s.koas(&[
        "review",
        "doc.md",
        "--llm-backend",
        "openai",
        "--llm-endpoint",
        &model.url(),
        "--llm-model",
        "scripted",
    ]);
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

#[test]
fn a_documents_control_characters_are_shown_escaped_by_koas_check() {
    let s = Scratch::new();
    // A heading and a broken link whose texts carry the attack: the
    // finding quotes them.
    s.write(
        "doc.md",
        &format!("# Title {ATTACK}\n\nSee [the part](#part-{ATTACK}).\n"),
    );
    for format in ["human", "github"] {
        let out = s.koas(&["check", "doc.md", "--format", format]);
        let text = all(&out);
        assert_inert(&format!("koas check --format {format}"), &text);
        assert!(
            text.contains("\\u{1b}"),
            "the finding quotes the text: {text}"
        );
    }
}

/// A person's op (or a model's) whose rationale carries the attack: the
/// ledger keeps it, and `koas grep` and `koas show` print it.
#[test]
fn a_ledgers_control_characters_are_shown_escaped_by_koas_grep_and_show() {
    let s = Scratch::new();
    s.write("doc.md", "# Title\n\nThe service handles teh work.\n");
    let ops = serde_json::json!([{"action": "replace", "kind": "typo",
        "target": {"line_start": 3}, "before_text": "teh", "after_text": "the",
        "rationale": format!("marker {ATTACK}")}]);
    s.write("ops.json", &ops.to_string());
    let out = s.koas(&["review", "doc.md", "--ops", "ops.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    for args in [
        &["grep", "marker", "doc.md"][..],
        &["show", "RVW-0001", "doc.md"][..],
    ] {
        let out = s.koas(args);
        let text = all(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {text}");
        assert_inert(&format!("koas {}", args[0]), &text);
        assert!(
            text.contains(&format!("marker {SHOWN}")),
            "{args:?}: {text}"
        );
    }
}
