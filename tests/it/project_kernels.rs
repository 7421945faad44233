//! A third party's kernel, installed in the XDG kernels folder and named in
//! `koas.toml` `[kernels] run`, is a first-class check: a plain `koas check
//! DOC` reports its findings; `[check] disable`, `[check.severity]` and
//! `koas-disable` comments apply to its kinds; SARIF lists its rule; a
//! review and a later report keep its section; a malformed findings output
//! fails the kernel that made it, naming the field.

use crate::review_common::{assert_code, stderr, stdout, Scratch};
use koas_test_support::test_plugin;
use std::process::Output;

const DOC: &str = "# Guide\n\nThis is teh guide.\n\nAll is fine here.\n";

/// A scratch folder with the `findings` test plugin installed where an
/// installed koas looks (`$XDG_DATA_HOME/koas/kernels`), and `toml` as its
/// `koas.toml`.
struct Project {
    s: Scratch,
}

impl Project {
    fn new(toml: &str) -> Project {
        let s = Scratch::new();
        let kernels = s.path("data/koas/kernels");
        std::fs::create_dir_all(&kernels).expect("mkdir");
        let lib = test_plugin("findings");
        std::fs::copy(&lib, kernels.join(lib.file_name().expect("a file name"))).expect("copy");
        s.write("doc.md", DOC);
        s.write("koas.toml", toml);
        Project { s }
    }

    fn koas(&self, args: &[&str]) -> Output {
        self.s
            .command(args)
            .env("XDG_DATA_HOME", self.s.path("data"))
            .output()
            .expect("koas runs")
    }
}

/// The third party's spelling kernel; the built-in spelling check, which
/// would report "teh" too (as a hint), is off so that its finding stands
/// alone.
const RUN_SPELL: &str = "[kernels]\nrun = [\"spell_check\"]\n[language]\nspelling = false\n";

#[test]
fn a_plain_check_reports_an_installed_kernel_named_in_koas_toml() {
    let p = Project::new(RUN_SPELL);
    let out = p.koas(&["check", "doc.md"]);
    assert_code(&out, 1, "its warning fails at the default level");
    assert_eq!(
        stdout(&out),
        "doc.md:3:9: warning spelling [spell_check]: `teh`: did you mean `the`?\n"
    );
    assert_eq!(
        stderr(&out),
        "1 finding (0 errors, 1 warning, 0 info) in 1 file; 1 from spell_check\n"
    );

    // A kernel koas cannot find is named, with where it looked.
    p.s.write(
        "koas.toml",
        "[kernels]\nrun = [\"spell_chek\"]\n[language]\nspelling = false\n",
    );
    let out = p.koas(&["check", "doc.md"]);
    assert_code(&out, 2, "not found");
    assert!(
        stderr(&out).contains(
            "koas.toml: [kernels] run names `spell_chek`, which koas did not find (searched: "
        ) && stderr(&out).contains("data/koas/kernels"),
        "{}",
        stderr(&out)
    );

    // Standard input too (an editor's unsaved buffer), under its name.
    p.s.write("koas.toml", RUN_SPELL);
    let mut child =
        p.s.command(&["check", "-", "--stdin-filename", "notes/draft.md"])
            .env("XDG_DATA_HOME", p.s.path("data"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
    {
        use std::io::Write;
        let mut input = child.stdin.take().expect("stdin");
        input.write_all(DOC.as_bytes()).expect("write");
    }
    let out = child.wait_with_output().expect("koas runs");
    assert_code(&out, 1, "stdin");
    assert_eq!(
        stdout(&out),
        "notes/draft.md:3:9: warning spelling [spell_check]: `teh`: did you mean `the`?\n"
    );

    // Without the [kernels] table, the built-in checks only.
    p.s.write("koas.toml", "");
    let out = p.koas(&["check", "doc.md"]);
    assert_code(&out, 0, "no built-in finding");
    assert!(!stdout(&out).contains("spell_check"), "{}", stdout(&out));
}

#[test]
fn koas_toml_disables_its_kind_and_changes_its_severity() {
    let p = Project::new(&format!("{RUN_SPELL}[check]\ndisable = [\"spelling\"]\n"));
    let out = p.koas(&["check", "doc.md"]);
    assert_code(&out, 0, "disabled");
    assert_eq!(stdout(&out), "");

    // The qualified name works too.
    p.s.write(
        "koas.toml",
        &format!("{RUN_SPELL}[check]\ndisable = [\"spell_check/spelling\"]\n"),
    );
    assert_code(
        &p.koas(&["check", "doc.md"]),
        0,
        "disabled by its full name",
    );

    p.s.write(
        "koas.toml",
        &format!(
            "{RUN_SPELL}[check]\nfail_on = \"error\"\n[check.severity]\nspelling = \"info\"\n"
        ),
    );
    let out = p.koas(&["check", "doc.md"]);
    assert_code(&out, 0, "info does not fail at error");
    assert_eq!(
        stdout(&out),
        "doc.md:3:9: info spelling [spell_check]: `teh`: did you mean `the`?\n"
    );
    let out = p.koas(&["check", "doc.md", "--fail-on", "info"]);
    assert_code(&out, 1, "--fail-on info counts it");

    // A kind no kernel declares is an error naming the kinds that exist.
    p.s.write(
        "koas.toml",
        &format!("{RUN_SPELL}[check]\ndisable = [\"speling\"]\n"),
    );
    let out = p.koas(&["check", "doc.md"]);
    assert_code(&out, 2, "a typo");
    let err = stderr(&out);
    assert!(
        err.contains("koas.toml: [check] disable: unknown finding kind \"speling\" (known kinds:")
            && err.contains("spelling"),
        "{err}"
    );
    assert!(
        err.ends_with("\n0 findings (0 errors, 0 warnings, 0 info) in 1 file; 1 error above\n"),
        "the summary says something was not checked: {err}"
    );
    // Without [kernels] the name is checked at once against the built-in kinds.
    p.s.write("koas.toml", "[check]\ndisable = [\"spelling\"]\n");
    let out = p.koas(&["check", "doc.md"]);
    assert_code(&out, 2, "not a built-in kind");
    assert!(
        stderr(&out).contains("unknown finding kind \"spelling\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_koas_disable_comment_silences_its_kind_without_a_warning() {
    let p = Project::new(RUN_SPELL);
    p.s.write(
        "doc.md",
        &DOC.replace(
            "This is teh",
            "<!-- koas-disable-next-line spelling -->\nThis is teh",
        ),
    );
    let out = p.koas(&["check", "doc.md"]);
    assert_code(&out, 0, "silenced");
    assert_eq!(stdout(&out), "");
    assert!(!stderr(&out).contains("unknown kind"), "{}", stderr(&out));
    // Another kernel's name for it silences nothing.
    p.s.write(
        "doc.md",
        &DOC.replace(
            "This is teh",
            "<!-- koas-disable-next-line other/spelling -->\nThis is teh",
        ),
    );
    let out = p.koas(&["check", "doc.md"]);
    assert_code(&out, 1, "not silenced");
    assert!(
        stderr(&out).contains("suppression comment names unknown kind \"other/spelling\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn sarif_lists_its_rule_with_the_kernels_description() {
    let p = Project::new(RUN_SPELL);
    let out = p.koas(&["check", "doc.md", "--format", "sarif"]);
    let log: serde_json::Value = serde_json::from_slice(&out.stdout).expect("sarif");
    let rules = log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .expect("rules");
    let rule = rules
        .iter()
        .find(|r| r["id"] == "spell_check/spelling")
        .unwrap_or_else(|| panic!("no rule: {log}"));
    assert_eq!(rule["shortDescription"]["text"], "A misspelt word");
    assert!(
        rules.iter().any(|r| r["id"] == "ai_leftover"),
        "the built-in rules stay"
    );
    let results = log["runs"][0]["results"].as_array().expect("results");
    assert!(results
        .iter()
        .any(|r| r["ruleId"] == "spell_check/spelling"));
    // `koas kernels --json` shows the kinds a kernel declares.
    let out = p.koas(&["kernels", "--json", "--allow-skipped"]);
    let listing: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let spell = listing["kernels"]
        .as_array()
        .and_then(|k| k.iter().find(|k| k["name"] == "spell_check"))
        .unwrap_or_else(|| panic!("{listing}"));
    assert_eq!(
        spell["finding_kinds"],
        serde_json::json!([{"kind": "spelling", "description": "A misspelt word"}])
    );
}

#[test]
fn a_review_and_a_later_report_keep_its_section() {
    let p = Project::new(RUN_SPELL);
    let out = p.koas(&["review", "doc.md", "--no-llm"]);
    assert_code(&out, 0, "review");
    let report_path = p.s.workspace().join("review/REVIEW_doc.md");
    let section = "| `spell_check` | 3 | warning | spelling | `teh`: did you mean `the`? |";
    let report = std::fs::read_to_string(&report_path).expect("report");
    assert!(report.contains(section), "{report}");
    std::fs::remove_file(&report_path).expect("rm");
    let out = p.koas(&["report", "doc.md"]);
    assert_code(&out, 0, "report");
    let report = std::fs::read_to_string(&report_path).expect("report");
    assert!(report.contains(section), "{report}");
    // The project's severity reaches the report too.
    p.s.write(
        "koas.toml",
        &format!("{RUN_SPELL}[check.severity]\nspelling = \"error\"\n"),
    );
    assert_code(&p.koas(&["report", "doc.md"]), 0, "report");
    let report = std::fs::read_to_string(&report_path).expect("report");
    assert!(
        report.contains("| `spell_check` | 3 | error | spelling |"),
        "{report}"
    );
}

#[test]
fn a_review_made_with_a_pipeline_file_keeps_it_for_the_report() {
    let p = Project::new("");
    let kernels = crate::third_party_findings::reviewer_kernels_with("");
    p.s.write("p.toml", &format!("name = \"team\"\n{kernels}\n"));
    let out = p.koas(&["review", "doc.md", "--no-llm", "--pipeline", "p.toml"]);
    assert_code(&out, 0, "review");
    let report_path = p.s.workspace().join("review/REVIEW_doc.md");
    let out = p.koas(&["report", "doc.md"]);
    assert_code(&out, 0, "report without the flag");
    let report = std::fs::read_to_string(&report_path).expect("report");
    assert!(
        report.contains("## Findings from other kernels"),
        "{report}"
    );
    // `--pipeline built-in` goes back, and a later report follows.
    let out = p.koas(&["review", "doc.md", "--no-llm", "--pipeline", "built-in"]);
    assert_code(&out, 0, "review");
    assert_code(&p.koas(&["report", "doc.md"]), 0, "report");
    let report = std::fs::read_to_string(&report_path).expect("report");
    assert!(!report.contains("Findings from other kernels"), "{report}");
    // A recorded pipeline that is gone is named, not silently dropped.
    assert_code(
        &p.koas(&["review", "doc.md", "--no-llm", "--pipeline", "p.toml"]),
        0,
        "review",
    );
    std::fs::remove_file(p.s.path("p.toml")).expect("rm");
    let out = p.koas(&["report", "doc.md"]);
    assert_code(&out, 2, "the pipeline is gone");
    assert!(
        stderr(&out).contains("p.toml, which is no longer there; pass --pipeline FILE"),
        "{}",
        stderr(&out)
    );
}

/// Regression (issue 49): when a kernel failed, `koas check` also warned
/// that a suppression comment naming its kind names an unknown kind; the
/// kind is known, its kernel failed, and only that is said.
#[test]
fn regression_a_failed_kernels_kind_is_not_called_unknown() {
    let p = Project::new("[kernels]\nrun = [\"bad_line\"]\n");
    p.s.write(
        "doc.md",
        &DOC.replace(
            "This is teh",
            "<!-- koas-disable-next-line style -->\nThis is teh",
        ),
    );
    let out = p.koas(&["check", "doc.md"]);
    assert_code(&out, 2, "a failed kernel is an error");
    let err = stderr(&out);
    assert!(err.contains("error: doc.md: [kernels] run of"), "{err}");
    assert!(err.contains("bad_line"), "{err}");
    assert!(!err.contains("unknown kind"), "{err}");
}

#[test]
fn a_malformed_findings_output_fails_its_producer_naming_the_field() {
    let p = Project::new("[kernels]\nrun = [\"spell_check\", \"bad_line\"]\n");
    let out = p.koas(&["check", "doc.md"]);
    assert_code(&out, 2, "a failed kernel is an error");
    let err = stderr(&out);
    assert!(
        err.contains("bad_line")
            && err.contains("returned a malformed findings output `bad_line_findings`: findings[0].line: expected a whole number ≥ 1, got \"seven\""),
        "{err}"
    );
    // `koas run` records it as that kernel's failure, not its consumer's.
    p.s.write(
        "p.toml",
        "name = \"bad\"\nkernels = [\"bad_line\"]\n[inputs]\ndoc = \"doc.md\"\n",
    );
    let out = p.koas(&["run", "p.toml"]);
    assert_code(&out, 1, "the kernel failed");
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(p.s.path(".koas/runs/bad/run.json")).expect("run.json"),
    )
    .expect("json");
    let kernel = record["kernels"]
        .as_array()
        .and_then(|k| k.iter().find(|k| k["name"] == "bad_line"))
        .unwrap_or_else(|| panic!("{record}"));
    assert_eq!(kernel["status"], "failed", "{kernel}");
    assert!(
        kernel["error"]
            .as_str()
            .is_some_and(|e| e.contains("findings[0].line")),
        "{kernel}"
    );
}

/// `koas kernels install`: a built plugin is checked, then copied where
/// every koas command finds it; a plain `koas check` then reports its
/// finding. A plugin of another ABI is refused, naming both versions, and
/// nothing is copied.
#[test]
fn an_installed_kernel_is_checked_copied_and_run_by_a_plain_check() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    s.write("koas.toml", RUN_SPELL);
    let koas = |args: &[&str]| {
        s.command(args)
            .env("XDG_DATA_HOME", s.path("data"))
            .output()
            .expect("koas runs")
    };
    let folder = s.path("data/koas/kernels");
    // Before: the kernel is not found.
    assert_code(
        &koas(&["check", "doc.md"]),
        2,
        "spell_check is not installed",
    );
    let wrong = test_plugin("wrong-abi");
    let out = koas(&["kernels", "install", &wrong.display().to_string()]);
    assert_code(&out, 2, "another ABI");
    let err = stderr(&out);
    assert!(err.contains("ABI"), "{err}");
    assert!(err.contains("nothing was installed"), "{err}");
    assert!(!folder.exists(), "nothing copied");

    // The crate's folder, its builds in another target folder.
    let lib = test_plugin("findings");
    let crate_dir = koas_test_support::repo_root().join("crates/test-support/plugins/findings");
    let target = lib
        .parent()
        .and_then(std::path::Path::parent)
        .expect("the target folder");
    let out = koas(&[
        "kernels",
        "install",
        &crate_dir.display().to_string(),
        "--target-dir",
        &target.display().to_string(),
    ]);
    assert_code(&out, 0, "installed");
    let said = stdout(&out);
    let file = folder.join(lib.file_name().expect("a file name"));
    assert!(
        said.starts_with(&format!("installed {} (", file.display())),
        "{said}"
    );
    assert!(said.contains("spell_check 1.0.0"), "{said}");
    assert!(file.is_file());
    let out = koas(&["check", "doc.md"]);
    assert_code(&out, 1, "its finding fails the check");
    assert!(stdout(&out).contains("[spell_check]"), "{}", stdout(&out));
    // Again: replaced, said so.
    let out = koas(&["kernels", "install", &lib.display().to_string()]);
    assert_code(&out, 0, "installed again");
    assert!(stdout(&out).starts_with("replaced "), "{}", stdout(&out));
    // Not a library.
    let out = koas(&[
        "kernels",
        "install",
        &s.path("doc.md").display().to_string(),
    ]);
    assert_code(&out, 2, "not a plugin");
    assert!(
        stderr(&out).contains("not a kernel library"),
        "{}",
        stderr(&out)
    );
}

/// Regression (issue 49): a kernel that declares no config took any key
/// of `[kernels.config.NAME]` without a word; the key is refused, named.
#[test]
fn regression_a_kernel_without_config_refuses_a_key() {
    let p = Project::new(&format!(
        "{RUN_SPELL}[kernels.config.spell_check]\nmax_lenght = 3\n"
    ));
    let out = p.koas(&["check", "doc.md"]);
    assert_code(&out, 2, "a config the kernel does not take");
    let err = stderr(&out);
    assert!(err.contains("max_lenght"), "{err}");
    assert!(err.contains("takes no config"), "{err}");
}
