//! A reader that stops reading (`koas grep … | head -1`) closes the pipe
//! under koas's stdout: every command that prints must then end quietly,
//! with no panic (exit 101) and no "Broken pipe" error. `koas check` has
//! its own test in `workspace_rules`.
//!
//! The pipe's reading end is closed before koas writes anything, so the
//! first write fails: the same failure as `| head -1` after its first
//! line, without depending on how fast `head` exits.

#![cfg(unix)]

use crate::review_common::{assert_code, stderr, Scratch};
use std::io::Read;
use std::process::{Command, Stdio};

const DOC: &str = "doc.md";

/// A reviewed document whose ledger holds 700 flags with long rationales, so that every
/// command below has far more to print than a pipe holds.
fn reviewed() -> Scratch {
    let s = Scratch::new();
    let mut text = String::from("# Closed pipes\n\n");
    for i in 0..700 {
        text.push_str(&format!("Line {i} of prose to flag.\n"));
    }
    s.write(DOC, &text);
    let rationale = "a rationale long enough to fill the report and the grep lines ".repeat(3);
    let ops: Vec<serde_json::Value> = (0..700)
        .map(|i| {
            serde_json::json!({
                "action": "flag_only",
                "target": {"line_start": i + 3},
                "rationale": rationale,
            })
        })
        .collect();
    s.write("ops.json", &serde_json::Value::Array(ops).to_string());
    let out = s.koas(&["-q", "review", DOC, "--ops", "ops.json"]);
    assert_code(&out, 0, "review --ops");
    s
}

/// Runs `cmd` with its stdout a pipe nobody reads (the reading end closed
/// at once) and returns its exit code and stderr.
fn into_closed_pipe(mut cmd: Command) -> (Option<i32>, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("koas starts");
    drop(child.stdout.take());
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let status = child.wait().expect("koas ends");
    (status.code(), err)
}

fn assert_quiet_end(what: &str, (code, stderr): (Option<i32>, String)) {
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    assert!(!stderr.contains("Broken pipe"), "{what}: {stderr}");
    assert!(!stderr.contains("error"), "{what}: {stderr}");
    assert_eq!(code, Some(0), "{what} ends with 0: {stderr}");
}

#[test]
fn regression_grep_into_a_closed_pipe_ends_quietly() {
    let s = reviewed();
    assert_quiet_end("grep", into_closed_pipe(s.command(&["-q", "grep", DOC])));
}

#[test]
fn regression_report_print_into_a_closed_pipe_ends_quietly() {
    let s = reviewed();
    assert_quiet_end(
        "report --print",
        into_closed_pipe(s.command(&["-q", "report", "--print", DOC])),
    );
}

#[test]
fn regression_show_into_a_closed_pipe_ends_quietly() {
    let s = reviewed();
    assert_quiet_end(
        "show",
        into_closed_pipe(s.command(&["-q", "show", DOC, "RVW-0001", "--patch"])),
    );
}

#[test]
fn regression_kernels_into_a_closed_pipe_ends_quietly() {
    let s = Scratch::new();
    assert_quiet_end("kernels", into_closed_pipe(s.command(&["kernels"])));
}

/// The way users meet it: `koas grep … | head -2` prints the header and
/// one entry, and koas's own exit status (bash's `PIPESTATUS`) is 0.
#[test]
fn regression_grep_into_head_ends_quietly() {
    let s = reviewed();
    let script = format!(
        "'{}' -q grep '{DOC}' | head -2; echo \"status ${{PIPESTATUS[0]}}\"",
        koas_test_support::koas_bin().display(),
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(s.dir.path())
        .env_remove("KOAS_KERNEL_PATH")
        .env_remove("KOAS_WORKSPACE")
        .env("NO_COLOR", "1")
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        3,
        "the header and one entry of grep, then the status: {stdout}"
    );
    assert!(lines[0].starts_with("ID"), "{stdout}");
    assert!(lines[1].contains("RVW-"), "{stdout}");
    assert_eq!(lines[2], "status 0", "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
}
