//! `koas new kernel`: what it prints is what it wrote, what it refuses
//! exits 2, and the crate it writes passes its own tests (`cargo test
//! --offline`, the worker test included, against this checkout's koas).

use crate::common::{koas, run, stderr, stdout};
use koas_test_support::{cargo_command, koas_bin, repo_root, target_dir};
use std::path::Path;
use std::process::Output;

/// `koas new kernel ARGS` run in `dir`.
fn new_kernel(dir: &Path, args: &[&str]) -> Output {
    run(koas().args(["new", "kernel"]).args(args).current_dir(dir))
}

/// Output with the scratch folder and the checkout replaced.
fn normalized(out: &Output, scratch: &Path) -> String {
    let root = repo_root()
        .canonicalize()
        .expect("the checkout")
        .display()
        .to_string();
    format!(
        "exit code: {:?}\n----- stdout -----\n{}----- stderr -----\n{}",
        out.status.code(),
        stdout(out),
        stderr(out)
    )
    .replace(&scratch.display().to_string(), "[TMP]")
    .replace(&root, "[KOAS]")
    .replace(std::env::consts::DLL_SUFFIX, ".so")
}

#[test]
fn new_kernel_writes_what_it_says_and_the_crate_passes_its_tests() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = new_kernel(tmp.path(), &["heading_length"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    insta::assert_snapshot!("new_kernel", normalized(&out, tmp.path()));
    // Every file the message lists is there, and nothing else.
    let crate_dir = tmp.path().join("heading_length");
    let text = stdout(&out);
    let listed: Vec<&str> = text
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let mut written = Vec::new();
    collect(&crate_dir, &crate_dir, &mut written);
    written.sort();
    let mut expected: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(written, expected);
    let manifest: toml::Table = std::fs::read_to_string(crate_dir.join("Cargo.toml"))
        .expect("Cargo.toml")
        .parse()
        .expect("TOML");
    assert_eq!(
        manifest["lib"]["crate-type"],
        toml::Value::from(vec!["cdylib", "rlib"])
    );
    assert!(manifest.contains_key("workspace"));

    // The crate's own tests, offline, built below this checkout's target
    // folder so that the next run reuses its dependencies; the worker test
    // runs against the koas under test.
    let all = cargo_test_in(&crate_dir, &["--", "--nocapture"]);
    assert!(all.contains("test result: ok. 4 passed"), "{all}");
    assert!(
        all.contains("test the_built_plugin_runs_in_a_koas_worker ... ok"),
        "{all}"
    );
    assert!(!all.contains("SKIPPED"), "{all}");
}

/// `cargo test` of a generated crate, offline, built below this checkout's
/// target folder so that the next run reuses its dependencies, its worker
/// test against the koas under test; its output, which must say it passed.
fn cargo_test_in(crate_dir: &Path, extra: &[&str]) -> String {
    let out = cargo_command()
        .args(["test", "--offline"])
        .args(extra)
        .current_dir(crate_dir)
        .env("CARGO_TARGET_DIR", target_dir().join("scaffold-test"))
        .env("KOAS_BIN", koas_bin())
        .env_remove("KOAS_KERNEL_PATH")
        .output()
        .expect("cargo runs");
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{all}");
    all
}

/// The files below `dir`, relative to `root`, `target/` aside.
fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            if entry.file_name() != "target" {
                collect(root, &path, out);
            }
        } else {
            let rel = path.strip_prefix(root).expect("below root");
            out.push(rel.display().to_string());
        }
    }
}

#[test]
fn new_kernel_refuses_with_exit_2() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = new_kernel(tmp.path(), &["Heading-Length"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "error: kernel name \"Heading-Length\": expected a lowercase letter, then lowercase letters, digits and `_` (like heading_length)\n"
    );
    let out = new_kernel(tmp.path(), &["t", "--reads", "section_idx"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--reads section_idx: not an artifact the test fixtures give (did you mean `section_index`?)"),
        "{}",
        stderr(&out)
    );
    std::fs::create_dir(tmp.path().join("mine")).expect("dir");
    std::fs::write(tmp.path().join("mine/notes.md"), "keep").expect("file");
    let out = new_kernel(tmp.path(), &["t", "--dir", "mine"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("mine exists and is not empty"),
        "{}",
        stderr(&out)
    );
    let out = new_kernel(tmp.path(), &["t", "--kernel-api", "nowhere"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--kernel-api nowhere: no koas-kernel-api crate there"),
        "{}",
        stderr(&out)
    );
    // Nothing was written by any of them.
    let mut left: Vec<String> = std::fs::read_dir(tmp.path())
        .expect("read_dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["mine"]);
    // --kernel-api takes the kernel-api folder of a checkout.
    let out = new_kernel(
        tmp.path(),
        &[
            "t",
            "--kernel-api",
            &repo_root().join("kernel-api").display().to_string(),
            "--reads",
            "chunks",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lib = std::fs::read_to_string(tmp.path().join("t/src/lib.rs")).expect("lib.rs");
    assert!(lib.contains(".input(\"chunks\")"), "{lib}");
    let help = run(koas().args(["new", "kernel", "--help"]));
    assert_eq!(help.status.code(), Some(0));
    assert!(stdout(&help).contains("Exit codes:"), "{}", stdout(&help));
}

/// The kernel `koas new kernel` wrote, built outside the workspace,
/// installed in an XDG kernels folder and named in a project's koas.toml,
/// is a first-class check: a plain `koas check` reports it, `[check]` and a
/// `koas-disable` comment configure it, SARIF lists its rule, a review and
/// a later report keep its section; and when its findings output is
/// malformed, it is the kernel that fails, naming the field.
#[test]
fn a_kernel_from_koas_new_kernel_installed_in_xdg_is_a_first_class_check() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = new_kernel(tmp.path(), &["heading_length"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let crate_dir = tmp.path().join("heading_length");
    let target = target_dir().join("scaffold-test");
    let data = tmp.path().join("data");
    let kernels = data.join("koas/kernels");
    std::fs::create_dir_all(&kernels).expect("mkdir");
    let library = format!(
        "{}koas_kernel_heading_length{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let build_and_install = || {
        let out = cargo_command()
            .args(["build", "--offline", "--quiet"])
            .current_dir(&crate_dir)
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .expect("cargo runs");
        assert!(out.status.success(), "{}", stderr(&out));
        // As the scaffold says: `koas kernels install .`, which finds the
        // build in CARGO_TARGET_DIR.
        let out = std::process::Command::new(koas_bin())
            .args(["kernels", "install", "."])
            .current_dir(&crate_dir)
            .env("CARGO_TARGET_DIR", &target)
            .env("XDG_DATA_HOME", &data)
            .output()
            .expect("koas runs");
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(kernels.join(&library).is_file());
    };
    build_and_install();

    let project = tmp.path().join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    let heading = "Retention of the records of the audit committee";
    let doc = format!("# Policy\n\nSome text.\n\n## {heading}\n\nMore text.\n");
    std::fs::write(project.join("doc.md"), &doc).expect("doc");
    let kernels_table =
        "[kernels]\nrun = [\"heading_length\"]\n[kernels.config.heading_length]\nmax = 30\n";
    let set_toml = |extra: &str| {
        std::fs::write(project.join("koas.toml"), format!("{kernels_table}{extra}")).expect("toml")
    };
    let koas_in = |args: &[&str]| {
        run(koas()
            .args(args)
            .current_dir(&project)
            .env("XDG_DATA_HOME", &data)
            .env_remove("KOAS_KERNEL_PATH"))
    };
    let line = format!(
        "doc.md:5:1: warning heading_too_long [heading_length]: heading of {} characters (the limit is 30)\n",
        heading.chars().count()
    );

    set_toml("");
    let out = koas_in(&["check", "doc.md"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), line);

    // SARIF lists its rule with the description its spec declares.
    let out = koas_in(&["check", "doc.md", "--format", "sarif"]);
    let log: serde_json::Value = serde_json::from_slice(&out.stdout).expect("sarif");
    let rules = log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .expect("rules");
    let rule = rules
        .iter()
        .find(|r| r["id"] == "heading_length/heading_too_long")
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(
        rule["shortDescription"]["text"],
        "A heading longer than `max` characters"
    );

    // koas.toml disables it, then changes its severity.
    set_toml("[check]\ndisable = [\"heading_too_long\"]\n");
    let out = koas_in(&["check", "doc.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    set_toml("[check.severity]\n\"heading_length/heading_too_long\" = \"error\"\n");
    let out = koas_in(&["check", "doc.md"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), line.replace("warning", "error"));

    // A koas-disable comment silences it, with no "unknown kind" warning.
    set_toml("");
    let silenced = doc.replace(
        "## Retention",
        "<!-- koas-disable-next-line heading_too_long -->\n## Retention",
    );
    std::fs::write(project.join("doc.md"), &silenced).expect("doc");
    let out = koas_in(&["check", "doc.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("unknown kind"), "{}", stderr(&out));
    std::fs::write(project.join("doc.md"), &doc).expect("doc");

    // Regression (issue 49): the scaffold's pipeline.toml looked for the
    // plugin in target/release, which a build into another target folder
    // never fills. It now runs the installed build, from the crate's
    // folder, whatever target folder cargo used.
    let pipeline = std::fs::read_to_string(crate_dir.join("pipeline.toml")).expect("pipeline");
    assert!(!pipeline.contains("target/release"), "{pipeline}");
    assert!(
        !crate_dir.join("target").exists(),
        "the build went to CARGO_TARGET_DIR"
    );
    // The pipeline's own config says 60 characters.
    let long = tmp.path().join("long.md");
    std::fs::write(
        &long,
        format!("# Policy\n\n## {}\n\nText.\n", "Retention ".repeat(8)),
    )
    .expect("doc");
    let doc_path = long.display().to_string();
    let out = run(koas()
        .args([
            "check",
            &doc_path,
            "--pipeline",
            "pipeline.toml",
            "--format",
            "json",
        ])
        .current_dir(&crate_dir)
        .env("XDG_DATA_HOME", &data)
        .env_remove("KOAS_KERNEL_PATH"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\"heading_too_long\""),
        "{}",
        stdout(&out)
    );

    // A review and a later report keep its section.
    let out = koas_in(&["review", "doc.md", "--no-llm"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let workspace = std::fs::read_dir(project.join(".review"))
        .expect(".review")
        .flatten()
        .next()
        .expect("the review workspace")
        .path();
    let report = workspace.join("review/REVIEW_doc.md");
    let row = format!(
        "| `heading_length` | 5 | warning | heading_too_long | heading of {} characters (the limit is 30) |",
        heading.chars().count()
    );
    let text = std::fs::read_to_string(&report).expect("report");
    assert!(text.contains(&row), "{text}");
    std::fs::remove_file(&report).expect("rm");
    let out = koas_in(&["report", "doc.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&report).expect("report");
    assert!(text.contains(&row), "{text}");

    // A findings output that breaks the contract fails the kernel itself.
    let lib_rs = crate_dir.join("src/lib.rs");
    let source = std::fs::read_to_string(&lib_rs).expect("lib.rs");
    let broken = source.replacen(
        "KernelFinding::new(TOO_LONG, section.line_start,",
        "KernelFinding::new(TOO_LONG, 0,",
        1,
    );
    assert_ne!(
        broken, source,
        "the generated kernel builds its findings as documented"
    );
    std::fs::write(&lib_rs, broken).expect("lib.rs");
    build_and_install();
    let out = koas_in(&["check", "doc.md"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("kernel `heading_length` (")
            && stderr(&out).contains("libkoas_kernel_heading_length")
            && stderr(&out).contains(") failed: returned a malformed findings output `heading_length_findings`: findings[0].line: expected a whole number ≥ 1, got 0"),
        "{}",
        stderr(&out)
    );
}

/// Regression (issue 49): `--reads` took one artifact, and reading the
/// document's text and its protected spans needed hand edits. Repeated,
/// it declares each; with `doc` and `protected_spans` the example reads
/// each line's text outside code, tables and the like; the crate builds
/// and its tests pass.
#[test]
fn regression_reads_is_repeatable_and_the_example_reads_prose() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = new_kernel(
        tmp.path(),
        &[
            "prose_check",
            "--reads",
            "doc",
            "--reads",
            "protected_spans",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("reads section_index, doc and protected_spans"),
        "{}",
        stdout(&out)
    );
    let crate_dir = tmp.path().join("prose_check");
    let lib = std::fs::read_to_string(crate_dir.join("src/lib.rs")).expect("lib.rs");
    assert!(lib.contains("!protected.protects(*line)"), "{lib}");
    let all = cargo_test_in(&crate_dir, &[]);
    assert!(!all.contains("warning:"), "{all}");
    assert!(all.contains("test result: ok. 4 passed"), "{all}");
}
