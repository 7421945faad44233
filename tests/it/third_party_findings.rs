//! Findings from a third party's kernel reach users: `koas check
//! --pipeline FILE` lists them next to the built-in checks, named by
//! kernel, in every format and in the exit code; the review report has a
//! section for them; a findings artifact that does not parse is an error
//! naming the kernel and the artifact.

use crate::review_common::{assert_code, normalize, stderr, stdout, Scratch};
use koas_test_support::test_plugin_folder;

const DOC: &str = "# Guide\n\nThis is teh guide.\n\nAll is fine here.\n";

/// The built-in spelling check would report "teh" too (as a hint): off,
/// so that these tests see the third party's finding alone.
const NO_BUILTIN_SPELLING: &str = "[language]\nspelling = false\n";

/// A pipeline of the reviewer's kernels plus the third party's
/// `spell_check` (and `extra` more kernels), its plugins in `folder`.
fn pipeline(s: &Scratch, folder: &std::path::Path, extra: &str) {
    s.write(
        "p.toml",
        &format!(
            "name = \"checks\"\n{}\nkernel_paths = [\"{}\"]\n",
            reviewer_kernels_with(extra),
            folder.display()
        ),
    );
}

/// The `kernels = [...]` line of configs/reviewer.toml with
/// `spell_check` (and `extra`) added at the end.
pub(crate) fn reviewer_kernels_with(extra: &str) -> String {
    let reviewer = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/reviewer.toml"),
    )
    .expect("configs/reviewer.toml");
    reviewer
        .lines()
        .skip_while(|l| !l.starts_with("kernels"))
        .take_while(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
        .replace(
            "\"md_revert\"]",
            &format!("\"md_revert\", \"spell_check\"{extra}]"),
        )
}

#[test]
fn check_with_a_pipeline_lists_a_third_party_kernels_findings_by_name() {
    let plugins = test_plugin_folder(&["findings"]);
    let s = Scratch::new();
    s.write("doc.md", DOC);
    s.write("koas.toml", NO_BUILTIN_SPELLING);
    pipeline(&s, plugins.path(), "");

    let out = s.koas(&["check", "doc.md", "--pipeline", "p.toml"]);
    assert_code(
        &out,
        1,
        "a warning from the third party fails at the default level",
    );
    insta::assert_snapshot!(
        "check_pipeline_human",
        format!(
            "{}\n--- stderr\n{}",
            stdout(&out),
            normalize(&stderr(&out), s.dir.path())
        )
    );

    let out = s.koas(&[
        "check",
        "doc.md",
        "--pipeline",
        "p.toml",
        "--format",
        "json",
    ]);
    let items: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let theirs: Vec<&serde_json::Value> = items
        .as_array()
        .expect("array")
        .iter()
        .filter(|i| i["kernel"] == "spell_check")
        .collect();
    assert_eq!(theirs.len(), 1, "{items}");
    assert_eq!(theirs[0]["file"], "doc.md");
    assert_eq!(theirs[0]["line"], 3);
    assert_eq!(theirs[0]["column"], 9);
    assert_eq!(theirs[0]["kind"], "spelling");

    let out = s.koas(&[
        "check",
        "doc.md",
        "--pipeline",
        "p.toml",
        "--format",
        "sarif",
    ]);
    let log: serde_json::Value = serde_json::from_slice(&out.stdout).expect("sarif");
    let results = log["runs"][0]["results"].as_array().expect("results");
    assert!(
        results
            .iter()
            .any(|r| r["ruleId"] == "spell_check/spelling" && r["level"] == "warning"),
        "{log}"
    );

    let out = s.koas(&[
        "check",
        "doc.md",
        "--pipeline",
        "p.toml",
        "--format",
        "github",
    ]);
    assert!(
        stdout(&out).contains("::warning file=doc.md,line=3,endLine=3,title=koas spell_check/spelling::`teh`: did you mean `the`?"),
        "{}",
        stdout(&out)
    );

    // The same document without the pipeline: the built-in checks only.
    let out = s.koas(&["check", "doc.md"]);
    assert_code(&out, 0, "no built-in finding");
    assert!(!stdout(&out).contains("spell_check"));

    // Fixed: no finding, exit 0.
    s.write("doc.md", &DOC.replace("teh", "the"));
    s.write("koas.toml", NO_BUILTIN_SPELLING);
    let out = s.koas(&["check", "doc.md", "--pipeline", "p.toml"]);
    assert_code(&out, 0, "fixed");
}

#[test]
fn a_findings_artifact_that_does_not_parse_names_the_kernel_and_the_artifact() {
    let plugins = test_plugin_folder(&["findings"]);
    let s = Scratch::new();
    s.write("doc.md", DOC);
    s.write("koas.toml", NO_BUILTIN_SPELLING);
    pipeline(&s, plugins.path(), ", \"sloppy_findings\"");
    let out = s.koas(&["check", "doc.md", "--pipeline", "p.toml"]);
    assert_code(&out, 2, "an unreadable findings artifact is an error");
    let err = stderr(&out);
    assert!(
        err.contains("kernel `sloppy_findings`: output `sloppy` looks like a findings artifact but is not one: findings[0].severity:")
            && err.contains("fatal"),
        "{err}"
    );
    // The good kernel's findings are still listed.
    assert!(stdout(&out).contains("[spell_check]"), "{}", stdout(&out));
}

#[test]
fn the_review_report_shows_a_third_party_kernels_findings_on_the_current_document() {
    let plugins = test_plugin_folder(&["findings"]);
    let s = Scratch::new();
    s.write("doc.md", DOC);
    s.write("koas.toml", NO_BUILTIN_SPELLING);
    pipeline(&s, plugins.path(), "");
    let out = s.koas(&["review", "doc.md", "--pipeline", "p.toml", "--no-llm"]);
    assert_code(&out, 0, "review");
    let report =
        std::fs::read_to_string(s.workspace().join("review/REVIEW_doc.md")).expect("report");
    assert!(
        report.contains("## Findings from other kernels"),
        "{report}"
    );
    assert!(
        report.contains("| `spell_check` | 3 | warning | spelling | `teh`: did you mean `the`? |"),
        "{report}"
    );
    // The HTML page shows them too.
    let out = s.koas(&["report", "doc.md", "--pipeline", "p.toml", "--html"]);
    assert_code(&out, 0, "report --html");
    let page = std::fs::read_to_string(s.workspace().join("review/REVIEW_doc.html")).expect("page");
    assert!(
        page.contains("<h2>Findings from other kernels</h2>"),
        "{page}"
    );
    assert!(
        page.contains("<td><code>spell_check</code></td><td>3</td><td><span class=\"tag sev-warning\">warning</span></td><td>spelling</td><td>`teh`: did you mean `the`?</td>"),
        "{page}"
    );

    // A change that fixes it: the next report no longer lists it.
    s.write(
        "ops.json",
        r#"[{"action": "replace", "target": {"line_start": 3, "line_end": 3}, "before_text": "This is teh guide.", "after_text": "This is the guide.", "kind": "typo", "severity": "minor", "rationale": "spelling"}]"#,
    );
    let out = s.koas(&[
        "review",
        "doc.md",
        "--pipeline",
        "p.toml",
        "--ops",
        "ops.json",
    ]);
    assert_code(&out, 0, "review with the fix");
    let report =
        std::fs::read_to_string(s.workspace().join("review/REVIEW_doc.md")).expect("report");
    assert!(
        report.contains("0 finding(s) reported by 1 kernel(s)"),
        "{report}"
    );
}
