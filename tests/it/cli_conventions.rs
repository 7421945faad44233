//! What a user of the review commands expects of a command line: one
//! project file read the same way by every command (`koas.toml`), a
//! failure never hidden by `-q`, `koas grep` that behaves like grep, one
//! severity vocabulary, deletions that leave no blank line, dense change
//! IDs, and quiet progress output (each kernel once, details with `-v`).
//! Outputs users read are insta snapshots (exit code, stdout, stderr).

use crate::review_common::{assert_code, code, stderr, stdout, Scratch};
use koas_test_support::test_plugin;
use std::process::Output;

/// Exit code, stdout and stderr, with the scratch folder, times and
/// durations replaced.
fn render(s: &Scratch, out: &Output) -> String {
    let text = format!(
        "exit code: {:?}\n----- stdout -----\n{}----- stderr -----\n{}",
        out.status.code(),
        stdout(out),
        stderr(out)
    );
    let text = text.replace(&s.dir.path().display().to_string(), "[SCRATCH]");
    let stamp =
        regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00").expect("regex");
    let ms = regex::Regex::new(r"\d+\.\d+ ms").expect("regex");
    let hash = regex::Regex::new(r"_[0-9a-f]{12}").expect("regex");
    let text = stamp.replace_all(&text, "[TIME]                          ");
    let text = ms.replace_all(&text, "[T] ms");
    hash.replace_all(&text, "_[HASH]").into_owned()
}

/// A document with one line a project pattern reports as an AI leftover.
const LEFTOVER_DOC: &str =
    "# Notes\n\n## Scope\n\nThe zorglub paragraph stays here for the test.\n\nAnother paragraph.\n";

fn scratch_with_toml(toml: &str) -> Scratch {
    let s = Scratch::new();
    s.write("doc.md", LEFTOVER_DOC);
    s.write("koas.toml", toml);
    s
}

fn report_text(s: &Scratch) -> String {
    let out = s.koas(&["-q", "report", "doc.md", "--print"]);
    assert_code(&out, 0, "report");
    stdout(&out)
}

#[test]
fn review_reads_koas_toml_like_check() {
    let pattern = "[scan]\nextra_ai_leftover_patterns = ['(?i)zorglub']\n";
    // [scan] reaches the review's scan kernel: the finding is reported.
    let s = scratch_with_toml(pattern);
    assert_code(
        &s.koas(&["-q", "review", "doc.md", "--no-llm"]),
        0,
        "review",
    );
    let report = report_text(&s);
    assert!(report.contains("ai_leftover"), "{report}");
    let check = s.koas(&["-q", "check", "doc.md"]);
    assert!(stdout(&check).contains("ai_leftover"), "{}", stdout(&check));

    // [check.severity] changes its severity in the report too, in the
    // words `koas check` uses.
    let s = scratch_with_toml(&format!(
        "{pattern}[check.severity]\nai_leftover = \"info\"\n"
    ));
    assert_code(
        &s.koas(&["-q", "review", "doc.md", "--no-llm"]),
        0,
        "review",
    );
    let report = report_text(&s);
    let line = report
        .lines()
        .find(|l| l.contains("ai_leftover"))
        .unwrap_or_else(|| panic!("finding listed:\n{report}"));
    assert!(line.contains("| info |"), "{line}");

    // A disabled kind is reported by neither command.
    let s = scratch_with_toml(&format!("{pattern}[check]\ndisable = [\"ai_leftover\"]\n"));
    assert_code(
        &s.koas(&["-q", "review", "doc.md", "--no-llm"]),
        0,
        "review",
    );
    let report = report_text(&s);
    assert!(!report.contains("ai_leftover"), "{report}");
    let check = s.koas(&["-q", "check", "doc.md"]);
    assert!(
        !stdout(&check).contains("ai_leftover"),
        "{}",
        stdout(&check)
    );
}

#[test]
fn a_misspelt_koas_toml_key_fails_every_command_naming_the_file() {
    let s = scratch_with_toml("");
    assert_code(
        &s.koas(&["-q", "review", "doc.md", "--no-llm"]),
        0,
        "review",
    );
    for bad in [
        "[check]\ndisabel = []\n",
        "[chek]\ndisable = []\n",
        "[scan]\npercent_mni = 1\n",
        "[llm]\nmodle = \"x\"\n",
        "[limits]\ntimout = 5\n",
    ] {
        s.write("koas.toml", bad);
        for args in [
            &["review", "doc.md", "--no-llm"][..],
            &["report", "doc.md"],
            &["grep", "doc.md"],
            &["status", "doc.md"],
            &["show", "doc.md", "RVW-0001"],
            &["revert", "doc.md", "--all"],
            &["check", "doc.md"],
        ] {
            let out = s.koas(args);
            assert_eq!(code(&out), 2, "{args:?} with {bad:?}: {}", stderr(&out));
            let err = stderr(&out);
            assert!(
                err.contains(&s.path("koas.toml").display().to_string()),
                "{args:?} with {bad:?} names the file: {err}"
            );
        }
    }
}

#[test]
fn koas_toml_limits_reach_the_review_pipeline() {
    // A [limits.KERNEL] table for a kernel the pipeline lacks is refused
    // when the limits are applied: the table reached the pipeline.
    let s = scratch_with_toml("[limits.md_nowhere]\ntimeout = 5\n");
    let out = s.koas(&["-q", "review", "doc.md", "--no-llm"]);
    assert_code(&out, 2, "review");
    assert!(
        stderr(&out).contains("[limits.md_nowhere]"),
        "{}",
        stderr(&out)
    );
    // Well-formed limits let the review run.
    s.write(
        "koas.toml",
        "[limits]\ntimeout = 600\n[limits.md_structure]\nmemory = 4096\n",
    );
    assert_code(
        &s.koas(&["-q", "review", "doc.md", "--no-llm"]),
        0,
        "review",
    );
}

/// A pipeline file: the reviewer pipeline plus the test plugin's failing
/// kernel.
fn failing_pipeline(s: &Scratch) {
    let builtin = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/reviewer.toml"),
    )
    .expect("configs/reviewer.toml");
    let text = builtin.replacen(
        "kernels = [",
        "kernels = [\"source_len\", \"panicker\", ",
        1,
    );
    s.write("failing.toml", &text);
}

#[test]
fn quiet_never_hides_a_failed_kernel() {
    let s = Scratch::with_fixture("retention_policy.md");
    failing_pipeline(&s);
    let testkit = test_plugin("testkit");
    let testkit = testkit.to_str().expect("utf-8 path");
    let needle = "deliberate test panic";

    let out = s.koas(&[
        "-q",
        "run",
        "failing.toml",
        "--kernel-path",
        testkit,
        "--input",
        "doc=retention_policy.md",
    ]);
    assert_code(&out, 1, "run -q");
    assert!(
        stderr(&out).contains("error: kernel `panicker`"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains(needle), "{}", stderr(&out));

    let out = s.koas(&[
        "-q",
        "review",
        "retention_policy.md",
        "--no-llm",
        "--pipeline",
        "failing.toml",
        "--kernel-path",
        testkit,
    ]);
    assert_code(&out, 1, "review -q");
    assert!(stderr(&out).contains(needle), "{}", stderr(&out));

    let out = s.koas(&[
        "-q",
        "review",
        "retention_policy.md",
        "--ops",
        "retention_policy.ops.json",
    ]);
    assert_code(&out, 0, "review");
    let out = s.koas(&[
        "-q",
        "revert",
        "retention_policy.md",
        "RVW-0001",
        "--pipeline",
        "failing.toml",
        "--kernel-path",
        testkit,
    ]);
    assert_code(&out, 1, "revert -q");
    assert!(stderr(&out).contains(needle), "{}", stderr(&out));

    let out = s.koas(&["-q", "check", "missing.md"]);
    assert_code(&out, 2, "check -q");
    assert!(stderr(&out).contains("missing.md"), "{}", stderr(&out));
}

#[test]
fn grep_takes_the_pattern_first_and_exits_1_on_no_match() {
    let s = Scratch::with_fixture("retention_policy.md");
    let doc = "retention_policy.md";
    assert_code(
        &s.koas(&["-q", "review", doc, "--ops", "retention_policy.ops.json"]),
        0,
        "review",
    );
    let out = s.koas(&["grep", "migration", doc]);
    insta::assert_snapshot!("grep_pattern_first", render(&s, &out));
    let out = s.koas(&["grep", doc, "-s", "error"]);
    insta::assert_snapshot!("grep_check_severity_word", render(&s, &out));
    let out = s.koas(&["grep", "no such words", doc]);
    insta::assert_snapshot!("grep_no_match", render(&s, &out));
    let out = s.koas(&["grep", doc, "migration"]);
    insta::assert_snapshot!("grep_old_order", render(&s, &out));
    let out = s.koas(&["grep", doc, "-s", "fatal"]);
    assert_code(&out, 2, "unknown severity");
    let out = s.koas(&["grep", "--help"]);
    assert_code(&out, 0, "help");
    let help = stdout(&out);
    assert!(
        help.contains("[PATTERN] DOC") && help.contains("like grep"),
        "{help}"
    );
    assert!(help.contains("1    no entry matches"), "{help}");
    assert!(
        !help.contains("revert that is not"),
        "grep's help is grep's: {help}"
    );
}

#[test]
fn check_and_grep_accept_both_severity_vocabularies() {
    let s = Scratch::new();
    s.write("doc.md", "# T\n\n## A\n\n#### Skipped level\n\nText.\n");
    let warning = s.koas(&["-q", "check", "doc.md", "--fail-on", "warning"]);
    let attention = s.koas(&["-q", "check", "doc.md", "--fail-on", "attention"]);
    assert_eq!(code(&warning), 1, "{}", stdout(&warning));
    assert_eq!(code(&attention), 1);
    let critical = s.koas(&["-q", "check", "doc.md", "--fail-on", "critical"]);
    assert_eq!(code(&critical), 0, "{}", stdout(&critical));
    let help = stdout(&s.koas(&["check", "--help"]));
    assert!(help.contains("warning      attention"), "{help}");
}

const BLOCKS: &str = "# Title\n\nFirst paragraph.\n\nSecond paragraph, to delete.\nIts second line.\n\nThird paragraph.\n";

#[test]
fn a_delete_removes_its_lines_and_the_blank_line_after_them() {
    let s = Scratch::new();
    s.write("doc.md", BLOCKS);
    s.write(
        "ops.json",
        r#"[{"action": "delete", "target": {"line_start": 5, "line_end": 6},
             "before_text": "Second paragraph, to delete.\nIts second line.",
             "rationale": "redundant"}]"#,
    );
    let out = s.koas(&["-q", "review", "doc.md", "--ops", "ops.json", "--in-place"]);
    assert_code(&out, 0, "review");
    assert_eq!(
        String::from_utf8(s.read("doc.md")).expect("utf-8"),
        "# Title\n\nFirst paragraph.\n\nThird paragraph.\n"
    );
    let (_, v) = s.koas_json(&["show", "doc.md", "RVW-0001"]);
    let summary = v["change"]["summary"].as_str().expect("summary");
    assert!(
        summary.contains("delete lines 5–6") && summary.contains("blank line"),
        "{summary}"
    );
    let out = s.koas(&["-q", "revert", "doc.md", "RVW-0001", "--in-place"]);
    assert_code(&out, 0, "revert");
    assert_eq!(String::from_utf8(s.read("doc.md")).expect("utf-8"), BLOCKS);
}

#[test]
fn rejected_ops_take_no_change_id() {
    let s = Scratch::new();
    s.write("doc.md", BLOCKS);
    s.write(
        "ops.json",
        r#"[{"action": "replace", "target": {"line_start": 3}, "before_text": "First", "after_text": "Opening", "kind": "style"},
            {"action": "replace", "target": {"line_start": 3}, "before_text": "not there", "after_text": "x", "kind": "style"},
            {"action": "flag_only", "target": {"line_start": 8}, "rationale": "vague", "kind": "clarity"},
            {"action": "replace", "target": {"line_start": 8}, "before_text": "Third", "after_text": "Last", "kind": "style"}]"#,
    );
    let (out, v) = s.koas_json(&["review", "doc.md", "--ops", "ops.json"]);
    assert_code(&out, 0, "review");
    let (_, found) = s.koas_json(&["grep", "doc.md"]);
    let ids: Vec<&str> = found["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["RVW-0001", "RVW-0002", "RVW-0003"], "{v}");
    let log = String::from_utf8(s.read(&format!(
        "{}/stage3/apply_log.jsonl",
        s.workspace().display()
    )))
    .expect("utf-8");
    let rejected: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .filter(|r: &serde_json::Value| r["status"] == "rejected")
        .collect();
    assert_eq!(rejected.len(), 1, "{log}");
    assert_eq!(rejected[0]["op_index"], 2);
    assert!(rejected[0].get("id").is_none(), "{}", rejected[0]);
    assert!(
        rejected[0]["reason"]
            .as_str()
            .expect("reason")
            .starts_with("op 2:"),
        "{}",
        rejected[0]
    );
}

/// Stderr lines sorted (kernels finish in parallel, in any order).
fn sorted_stderr(s: &Scratch, out: &Output) -> String {
    let text = render(s, out);
    let (head, err) = text
        .split_once("----- stderr -----\n")
        .expect("stderr part");
    let mut lines: Vec<&str> = err.lines().collect();
    lines.sort_unstable();
    format!("{head}----- stderr (sorted) -----\n{}\n", lines.join("\n"))
}

#[test]
fn review_and_revert_list_each_kernel_once_without_details() {
    let s = Scratch::with_fixture("retention_policy.md");
    let doc = "retention_policy.md";
    let out = s.koas(&[
        "review",
        doc,
        "--ops",
        "retention_policy.ops.json",
        "--no-llm",
    ]);
    assert_code(&out, 0, "review");
    insta::assert_snapshot!("review_progress", sorted_stderr(&s, &out));
    let out = s.koas(&["revert", doc, "RVW-0001"]);
    assert_code(&out, 0, "revert");
    insta::assert_snapshot!("revert_progress", sorted_stderr(&s, &out));
    // -v adds each kernel's summary.
    let out = s.koas(&["-v", "report", doc]);
    assert_code(&out, 0, "report -v");
    assert!(
        stderr(&out).contains("trigger a content recipe"),
        "{}",
        stderr(&out)
    );
    let out = s.koas(&["report", doc]);
    assert!(
        !stderr(&out).contains("trigger a content recipe"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn debug_lines_need_vv() {
    // md_inventory logs a debug line each time it runs (not when cached):
    // each run in a fresh folder.
    let doc = "retention_policy.md";
    let s = Scratch::with_fixture(doc);
    let out = s.koas(&["-v", "review", doc, "--no-llm"]);
    assert_code(&out, 0, "review -v");
    assert!(!stderr(&out).contains(": debug: "), "{}", stderr(&out));
    let s = Scratch::with_fixture(doc);
    let out = s.koas(&["-vv", "review", doc, "--no-llm"]);
    assert_code(&out, 0, "review -vv");
    assert!(
        stderr(&out).contains("md_inventory: debug: "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_flag_can_be_dismissed_and_every_view_says_so() {
    let s = Scratch::new();
    s.write("doc.md", BLOCKS);
    s.write(
        "ops.json",
        r#"[{"action": "replace", "target": {"line_start": 3}, "before_text": "First", "after_text": "Opening", "kind": "style"},
            {"action": "flag_only", "target": {"line_start": 8}, "rationale": "Which paragraph is third?", "kind": "clarity",
             "severity": "attention", "needs_attention": true}]"#,
    );
    assert_code(
        &s.koas(&["-q", "review", "doc.md", "--ops", "ops.json"]),
        0,
        "review",
    );
    let annotated = || {
        String::from_utf8(s.read(&format!(
            "{}/stage3/doc.REVIEWED.md",
            s.workspace().display()
        )))
        .expect("utf-8")
    };
    assert!(annotated().contains("RVW-0002"), "{}", annotated());

    let out = s.koas(&[
        "-q",
        "dismiss",
        "doc.md",
        "RVW-0002",
        "--reason",
        "it is clear enough",
    ]);
    assert_code(&out, 0, "dismiss");
    assert!(
        stdout(&out).contains("RVW-0002 dismissed by REVERT-RVW-0002"),
        "{}",
        stdout(&out)
    );
    // The document is untouched; the note is gone from the annotated copy.
    assert!(
        !annotated().contains("REVIEWER: RVW-0002"),
        "{}",
        annotated()
    );

    let out = s.koas(&["grep", "doc.md", "-k", "clarity"]);
    insta::assert_snapshot!("grep_dismissed_flag", render(&s, &out));
    let (_, status) = s.koas_json(&["status", "doc.md"]);
    assert_eq!(status["counts"]["dismissed"], 1, "{status}");
    assert_eq!(status["counts"]["reverts"], 0, "{status}");
    let report = report_text_of(&s, "doc.md");
    assert!(report.contains("dismissed (REVERT-RVW-0002)"), "{report}");
    assert!(report.contains("dismisses RVW-0002"), "{report}");
    let (_, entry) = s.koas_json(&["show", "doc.md", "REVERT-RVW-0002"]);
    assert_eq!(
        entry["change"]["rationale"], "it is clear enough",
        "{entry}"
    );

    // Refused, nothing written: twice, a change, an unknown ID.
    let before = s.read(&format!("{}/review/ledger.jsonl", s.workspace().display()));
    for (id, needle) in [
        ("RVW-0002", "already dismissed"),
        ("RVW-0001", "not a flag"),
        ("RVW-0009", "not in the ledger"),
    ] {
        let out = s.koas(&["-q", "dismiss", "doc.md", id]);
        assert_code(&out, 1, id);
        assert!(stderr(&out).contains(needle), "{id}: {}", stderr(&out));
    }
    assert_eq!(
        s.read(&format!("{}/review/ledger.jsonl", s.workspace().display())),
        before
    );
    // The change can still be reverted.
    assert_code(
        &s.koas(&["-q", "revert", "doc.md", "--all", "--in-place"]),
        0,
        "revert",
    );
    assert_eq!(String::from_utf8(s.read("doc.md")).expect("utf-8"), BLOCKS);
}

fn report_text_of(s: &Scratch, doc: &str) -> String {
    let out = s.koas(&["-q", "report", doc, "--print"]);
    assert_code(&out, 0, "report");
    stdout(&out)
}

#[test]
fn regression_help_and_readme_give_the_same_kernel_discovery_order() {
    // The bug: `koas --help` listed four places, the README six.
    let s = Scratch::new();
    let out = s.koas(&["--help"]);
    assert_code(&out, 0, "--help");
    let help = stdout(&out);
    let block: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Kernel discovery order:"))
        .take_while(|l| !l.trim().is_empty())
        .collect();
    assert!(block.len() >= 6, "{help}");
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"),
    )
    .expect("README.md");
    assert!(
        readme.contains(&block.join("\n")),
        "README.md does not hold the discovery order of --help:\n{}",
        block.join("\n")
    );
}

/// Regression (issue 49): `koas review --no-llm` said "no model is
/// configured: add an [llm] table…" though no model was wanted; it says
/// the model was not asked, here and in the report.
#[test]
fn regression_no_llm_says_the_model_was_not_asked() {
    let s = Scratch::new();
    s.write("doc.md", "# Doc\n\nSome text.\n");
    s.write(
        "koas.toml",
        "[llm]\nbackend = \"openai\"\nendpoint = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n",
    );
    let out = s.koas(&["review", "doc.md", "--no-llm"]);
    assert_code(&out, 0, "review");
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!text.contains("no model is configured"), "{text}");
    assert!(text.contains("--no-llm: no model was asked"), "{text}");
    let report =
        std::fs::read_to_string(s.workspace().join("review/REVIEW_doc.md")).expect("the report");
    assert!(!report.contains("No model is configured"), "{report}");
    assert!(
        report.contains("The model was not asked (--no-llm)"),
        "{report}"
    );
}
