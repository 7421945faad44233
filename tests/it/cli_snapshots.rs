//! Snapshots of what users see: exit code, stdout and stderr of `koas`
//! for the common error paths.

use crate::common::*;
use koas_test_support::test_plugins_dir;
use std::process::Output;

fn render(out: &Output) -> String {
    format!(
        "exit code: {:?}\n----- stdout -----\n{}----- stderr -----\n{}",
        out.status.code(),
        stdout(out),
        stderr(out)
    )
}

fn settings(p: &Project) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    let tmp = p.dir.path().to_string_lossy().into_owned();
    s.add_filter(&regex_escape(&tmp), "[TMP]");
    s.add_filter(
        &regex_escape(&test_plugins_dir().to_string_lossy()),
        "[PLUGINS]",
    );
    s.add_filter(r"\d+\.\d+ ms", "[T] ms");
    s.add_filter(r"Searched: [^\n]*", "Searched: [SEARCH PATH]");
    s
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if "\\.+*?()|[]{}^$".contains(c) {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[test]
fn snapshot_cycle_error() {
    let p = Project::new("x\n", &["cycle_a", "cycle_b", "needs_ghost"], "");
    let out = p.run(&["--quiet"]);
    settings(&p).bind(|| insta::assert_snapshot!("cycle_error", render(&out)));
}

#[test]
fn snapshot_failed_run() {
    let p = Project::new(
        "some words\n",
        &["source_len", "panicker", "after_panic"],
        "",
    );
    let out = p.run(&["--jobs", "1"]);
    settings(&p).bind(|| insta::assert_snapshot!("failed_run", render(&out)));
}

#[test]
fn snapshot_unknown_kernel() {
    let p = Project::new("x\n", &["source_len", "sourcelen"], "");
    let out = p.run(&[]);
    settings(&p).bind(|| insta::assert_snapshot!("unknown_kernel", render(&out)));
}
