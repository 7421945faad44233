//! End-to-end tests of the runtime: real plugin libraries, the real `koas`
//! binary, real workspaces.

use crate::common::*;
use koas_test_support::{build_standalone, repo_root, test_plugin, test_plugin_folder};
use serde_json::Value;

const DOC: &str = "hello world, this document has some words in it\n";

fn status(v: &Value) -> &str {
    v["status"].as_str().unwrap_or("")
}

#[test]
fn discovery_lists_kernels_from_every_source() {
    let folder = test_plugin_folder(&["testkit"]);
    // --kernel-path
    let out = run(koas()
        .args(["kernels", "--json", "--kernel-path"])
        .arg(folder.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let names: Vec<&str> = strings_of(&v["kernels"], "name");
    for expected in ["source_len", "threshold", "sleepy_a", "panicker", "writer"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let k = v["kernels"]
        .as_array()
        .expect("array")
        .iter()
        .find(|k| k["name"] == "threshold")
        .expect("threshold");
    assert_eq!(k["abi_version"], 1);
    // The kernel-api it was built with, from the symbol export_kernel!
    // generates.
    assert_eq!(k["api_version"], koas_kernel_api::abi::API_VERSION);
    assert_eq!(v["api_version"], koas_kernel_api::abi::API_VERSION);
    assert_eq!(v["notes"], serde_json::json!([]));
    assert_eq!(k["version"], "1.0.0");
    assert_eq!(k["default_config"]["threshold"], 10);
    assert!(k["library"]
        .as_str()
        .expect("library")
        .contains("koas_kernel_test_testkit"));

    // KOAS_KERNEL_PATH
    let out = run(koas()
        .args(["kernels", "--json"])
        .env("KOAS_KERNEL_PATH", folder.path()));
    assert!(stdout(&out).contains("\"source_len\""));

    // the pipeline's kernel_paths, relative to the pipeline file
    let p = Project::new(DOC, &["source_len"], "kernel_paths = [\"plugins\"]");
    std::fs::create_dir(p.dir.path().join("plugins")).expect("mkdir");
    std::fs::copy(
        test_plugin("testkit"),
        p.dir
            .path()
            .join("plugins")
            .join(test_plugin("testkit").file_name().expect("name")),
    )
    .expect("copy");
    let out = run(koas().arg("run").arg(p.pipeline()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Files not named like kernel libraries are ignored.
    let other = tempfile::tempdir().expect("tmp");
    std::fs::copy(
        test_plugin("testkit"),
        other.path().join("libsomething_else.so"),
    )
    .expect("copy");
    let out = run(koas()
        .args(["kernels", "--json", "--kernel-path"])
        .arg(other.path()));
    assert!(!stdout(&out).contains("\"source_len\""));
}

#[test]
fn a_plugin_built_for_another_abi_is_refused_and_every_problem_is_reported() {
    let folder = test_plugin_folder(&[
        "wrong-abi",
        "no-symbol",
        "bad-describe",
        "dup-name",
        "testkit",
    ]);
    let out = run(koas()
        .args(["kernels", "--json", "--kernel-path"])
        .arg(folder.path()));
    // A skipped plugin fails the listing, and its last line says so; the
    // JSON still lists what loaded and every problem.
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).lines().last(),
        Some("koas kernels: 5 plugin(s) skipped, exit 1 (--allow-skipped accepts them)")
    );
    let allowed = run(koas()
        .args(["kernels", "--json", "--allow-skipped", "--kernel-path"])
        .arg(folder.path()));
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));
    assert!(!stderr(&allowed).contains("skipped, exit 1"));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let problems = v["problems"].as_array().expect("problems");
    let abi = problems
        .iter()
        .find(|p| p["problem"] == "abi_mismatch")
        .expect("abi mismatch reported");
    assert_eq!(abi["expected"], 1);
    assert_eq!(abi["found"], 999);
    assert!(abi["path"].as_str().expect("path").ends_with(
        test_plugin("wrong-abi")
            .file_name()
            .and_then(|f| f.to_str())
            .expect("name")
    ));
    // Both ABI versions and both kernel-api versions, the plugin's from its
    // optional symbol.
    assert_eq!(abi["api_version"], "7.0.0");
    let msg = abi["message"].as_str().expect("message");
    let api = koas_kernel_api::abi::API_VERSION;
    assert!(
        msg.ends_with(&format!(
            ": skipped: built with koas-kernel-api 7.0.0 (ABI 999); this koas has koas-kernel-api {api} (ABI 1); rebuild the plugin against koas-kernel-api {api}"
        )),
        "{msg}"
    );
    assert!(problems.iter().any(|p| p["problem"] == "missing_symbol"));
    let describes: Vec<&Value> = problems
        .iter()
        .filter(|p| p["problem"] == "describe_failed")
        .collect();
    assert_eq!(
        describes.len(),
        2,
        "both bad kernels reported: {describes:?}"
    );
    assert!(describes.iter().any(|p| p["message"]
        .as_str()
        .unwrap_or("")
        .contains("spec exploded")));
    assert!(problems
        .iter()
        .any(|p| p["problem"] == "duplicate_kernel" && p["name"] == "source_len"));
    // Working kernels of the same folder are still available.
    assert!(stdout(&out).contains("\"threshold\""));
    // The human listing reports the same problems on stderr.
    let out = run(koas()
        .arg("kernels")
        .arg("--kernel-path")
        .arg(folder.path()));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("5 plugin problem(s)"), "{err}");
    assert!(
        err.contains("built with koas-kernel-api 7.0.0 (ABI 999)"),
        "{err}"
    );
    assert!(
        err.trim_end()
            .ends_with("5 plugin(s) skipped, exit 1 (--allow-skipped accepts them)"),
        "{err}"
    );
}

#[test]
fn a_plugin_of_a_newer_kernel_api_loads_with_a_note() {
    let folder = test_plugin_folder(&["newer-api", "testkit"]);
    let out = run(koas()
        .args(["kernels", "--json", "--kernel-path"])
        .arg(folder.path()));
    // A note, not a skip: exit 0, the kernel listed.
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let newer = v["kernels"]
        .as_array()
        .expect("kernels")
        .iter()
        .find(|k| k["name"] == "newer_api")
        .expect("newer_api is listed");
    // Its describe answer names the version (it has no version symbol).
    assert_eq!(newer["api_version"], "99.0.0");
    assert_eq!(v["problems"], serde_json::json!([]));
    let notes = v["notes"].as_array().expect("notes");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["note"], "newer_kernel_api");
    assert_eq!(notes[0]["api_version"], "99.0.0");
    let api = koas_kernel_api::abi::API_VERSION;
    let expected = format!(
        "built with koas-kernel-api 99.0.0, newer than this koas's {api} (the same ABI 1): it loads, but what that kernel-api added is unknown to this koas"
    );
    assert!(
        notes[0]["message"]
            .as_str()
            .is_some_and(|m| m.ends_with(&expected)),
        "{notes:?}"
    );
    assert_eq!(
        stderr(&out).lines().last().map(|l| l.ends_with(&expected)),
        Some(true),
        "{}",
        stderr(&out)
    );
    // The listing shows each kernel's kernel-api and the same note.
    let out = run(koas()
        .arg("kernels")
        .arg("--kernel-path")
        .arg(folder.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = stdout(&out);
    assert!(
        listing
            .lines()
            .next()
            .is_some_and(|h| h.ends_with("ABI  KERNEL-API")),
        "{listing}"
    );
    let row = listing
        .lines()
        .find(|l| l.starts_with("newer_api "))
        .expect("newer_api row");
    assert!(row.ends_with("1    99.0.0"), "{row}");
    let row = listing
        .lines()
        .find(|l| l.starts_with("threshold "))
        .expect("threshold row");
    assert!(row.ends_with(&format!("1    {api}")), "{row}");
    assert!(
        stderr(&out)
            .lines()
            .any(|l| l.starts_with("note: ") && l.ends_with(&expected)),
        "{}",
        stderr(&out)
    );
}

#[test]
fn graph_errors_name_the_kernels_and_artifacts() {
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &["cycle_a", "cycle_b"],
            &["cycle", "`cycle_a`", "`cycle_b`", "`cyc_x`", "`cyc_y`"],
        ),
        (
            &["needs_ghost"],
            &[
                "`ghost_art`",
                "`needs_ghost`",
                "no kernel in the pipeline produces it",
            ],
        ),
        (
            &["dup_one", "dup_two"],
            &["`dup_art`", "`dup_one`", "`dup_two`", "more than one"],
        ),
    ];
    for (kernels, expected) in cases {
        let p = Project::new(DOC, kernels, "");
        let out = p.run(&[]);
        assert_eq!(out.status.code(), Some(2), "{kernels:?}: {}", stderr(&out));
        let err = stderr(&out);
        for e in expected {
            assert!(err.contains(e), "{kernels:?}: {e} not in {err}");
        }
        assert!(err.contains("pipeline.toml"), "names the file: {err}");
        assert!(!p.ws().join("run.json").exists(), "nothing ran");
    }
}

/// A kernel's `(start_ms, end_ms)` in a parsed `run.json`.
fn span(record: &Value, name: &str) -> (f64, f64) {
    let k = kernel(record, name);
    (
        k["start_ms"].as_f64().expect("start_ms"),
        k["end_ms"].as_f64().expect("end_ms"),
    )
}

#[test]
fn independent_kernels_run_at_the_same_time() {
    let p = Project::new(DOC, &["source_len", "sleepy_a", "sleepy_b"], "");
    let out = p.run(&["--jobs", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = p.record();
    let ((a0, a1), (b0, b1)) = (span(&r, "sleepy_a"), span(&r, "sleepy_b"));
    assert!(
        a0 < b1 && b0 < a1,
        "overlap expected: a {a0}..{a1}, b {b0}..{b1}"
    );
    // Both start after their producer ended.
    let (_, s1) = span(&r, "source_len");
    assert!(a0 >= s1 && b0 >= s1);

    // With one job they never overlap.
    let out = p.run(&["--jobs", "1", "--no-cache"]);
    assert_eq!(out.status.code(), Some(0));
    let r = p.record();
    let ((a0, a1), (b0, b1)) = (span(&r, "sleepy_a"), span(&r, "sleepy_b"));
    assert!(
        a1 <= b0 || b1 <= a0,
        "no overlap with --jobs 1: a {a0}..{a1}, b {b0}..{b1}"
    );
}

#[test]
fn a_panicking_kernel_is_isolated_while_its_sibling_branch_completes() {
    let p = Project::new(
        DOC,
        &[
            "source_len",
            "panicker",
            "after_panic",
            "threshold",
            "report_long",
        ],
        "",
    );
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = p.record();
    assert_eq!(status(&r), "failed");
    let pk = kernel(&r, "panicker");
    assert_eq!(pk["status"], "failed");
    let err = pk["error"].as_str().expect("error");
    assert!(err.contains("deliberate test panic"), "{err}");
    let after = kernel(&r, "after_panic");
    assert_eq!(after["status"], "skipped");
    assert!(after["skipped_reason"]
        .as_str()
        .expect("reason")
        .contains("`panicker` failed"));
    assert_eq!(kernel(&r, "threshold")["status"], "ok");
    assert_eq!(kernel(&r, "report_long")["status"], "ok");
    assert_eq!(
        std::fs::read_to_string(p.ws().join("reports/long.txt")).expect("report"),
        "the document is long\n"
    );
    assert!(stderr(&out).contains("deliberate test panic"));
}

#[test]
fn a_second_run_with_nothing_changed_executes_no_kernel() {
    let p = Project::new(DOC, &["source_len", "threshold", "report_long"], "");
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = p.record();
    for k in ["source_len", "threshold", "report_long"] {
        assert_eq!(kernel(&first, k)["cache"], "miss");
    }
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(0));
    let second = p.record();
    for k in ["source_len", "threshold", "report_long"] {
        assert_eq!(kernel(&second, k)["cache"], "hit", "{k}");
        assert_eq!(
            kernel(&second, k)["output_hashes"],
            kernel(&first, k)["output_hashes"]
        );
    }
    // A deleted output file is restored from the cache without running.
    std::fs::remove_file(p.ws().join("reports/long.txt")).expect("rm");
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(kernel(&p.record(), "report_long")["cache"], "hit");
    assert!(p.ws().join("reports/long.txt").exists());
    // --no-cache executes everything; `cache clear` forgets everything.
    let out = p.run(&["--no-cache"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(kernel(&p.record(), "source_len")["cache"], "disabled");
    let out = run(koas().args(["cache", "clear"]).arg(p.pipeline()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!p.ws().join(".koas/cache").exists());
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(kernel(&p.record(), "source_len")["cache"], "miss");
    // Changing the document re-runs its reader.
    std::fs::write(p.dir.path().join("doc.md"), "short\n").expect("write");
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(0));
    let r = p.record();
    assert_eq!(kernel(&r, "source_len")["cache"], "miss");
    assert_eq!(kernel(&r, "report_long")["cache"], "miss");
    assert_eq!(
        std::fs::read_to_string(p.ws().join("reports/long.txt")).expect("report"),
        "the document is short\n"
    );
}

#[test]
fn changing_a_config_reruns_downstream_only_when_the_output_changes() {
    let p = Project::new(DOC, &["source_len", "threshold", "report_long"], "");
    assert_eq!(p.run(&[]).status.code(), Some(0));
    // DOC is 49 bytes: threshold 20 still says "long".
    let out = p.run(&["--set", "threshold.threshold=20"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = p.record();
    assert_eq!(kernel(&r, "source_len")["cache"], "hit");
    assert_eq!(kernel(&r, "threshold")["cache"], "miss");
    assert_eq!(kernel(&r, "report_long")["cache"], "hit", "early cutoff");
    // threshold 1000 flips the output: report_long must re-run.
    let out = p.run(&["--set", "threshold.threshold=1000"]);
    assert_eq!(out.status.code(), Some(0));
    let r = p.record();
    assert_eq!(kernel(&r, "threshold")["cache"], "miss");
    assert_eq!(kernel(&r, "report_long")["cache"], "miss");
    assert_eq!(
        std::fs::read_to_string(p.ws().join("reports/long.txt")).expect("report"),
        "the document is short\n"
    );
}

#[test]
fn a_path_escaping_write_is_refused() {
    for (path, why) in [
        ("../escaped.txt", "not a relative path inside the workspace"),
        (
            "/tmp/koas-escaped-absolute.txt",
            "not a relative path inside the workspace",
        ),
        (".koas/cache/evil", "belongs to the runtime"),
    ] {
        let p = Project::new(
            DOC,
            &["source_len", "writer"],
            &format!("[config.writer]\npath = \"{path}\""),
        );
        let out = p.run(&[]);
        assert_eq!(out.status.code(), Some(1), "{path}: {}", stderr(&out));
        let record = p.record();
        let w = kernel(&record, "writer");
        assert_eq!(w["status"], "failed");
        let err = w["error"].as_str().expect("error");
        assert!(err.contains(why), "{path}: {err}");
        assert!(!p.dir.path().join("escaped.txt").exists());
    }
    assert!(!std::path::Path::new("/tmp/koas-escaped-absolute.txt").exists());

    // A symlink inside the workspace leading out is caught by the host.
    let p = Project::new(
        DOC,
        &["source_len", "writer"],
        "[config.writer]\npath = \"link/escaped.txt\"",
    );
    let outside = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(p.ws()).expect("ws");
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path(), p.ws().join("link")).expect("symlink");
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(kernel(&p.record(), "writer")["error"]
        .as_str()
        .expect("error")
        .contains("not a relative path inside the workspace"));
    assert!(!outside.path().join("escaped.txt").exists());

    // A path inside the workspace is fine, and the run record lists it.
    let p = Project::new(DOC, &["source_len", "writer"], "");
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(p.ws().join("notes/hello.txt")).expect("written"),
        "hello\nagain\n"
    );
    assert_eq!(
        kernel(&p.record(), "writer")["files_written"][0],
        "notes/hello.txt"
    );
}

#[test]
fn kernel_and_until_run_only_what_is_needed() {
    let p = Project::new(
        DOC,
        &["source_len", "threshold", "report_long", "sleepy_a"],
        "",
    );
    let out = p.run(&["--kernel", "threshold"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("stdout is JSON");
    assert_eq!(v["kernel"], "threshold");
    assert_eq!(v["status"], "ok");
    assert_eq!(v["outputs"]["is_long"], true);
    assert!(v["summary"]
        .as_str()
        .expect("summary")
        .contains("threshold 10"));
    let r = p.record();
    let ran: Vec<&str> = strings_of(&r["kernels"], "name");
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert!(!ran.contains(&"sleepy_a") && !ran.contains(&"report_long"));
    // Again: answered from the cache, same output.
    let out = p.run(&["--kernel", "threshold"]);
    let v2: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(v2["cache"], "hit");
    assert_eq!(v2["outputs"], v["outputs"]);

    let out = p.run(&["--until", "report_long"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(p.record()["kernels"].as_array().expect("kernels").len(), 3);
    let out = p.run(&["--kernel", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("kernel `nope` is not in the pipeline"));
}

#[test]
fn pipeline_errors_exit_2_and_name_the_file_and_key() {
    let p = Project::new(DOC, &["source_len"], "kernal_paths = []");
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("kernal_paths") && err.contains("pipeline.toml"),
        "{err}"
    );

    let p = Project::new(
        DOC,
        &["source_len", "threshold"],
        "[config.threshold]\ntreshold = 3",
    );
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("treshold") && err.contains("known keys: threshold"),
        "{err}"
    );

    let p = Project::new(
        DOC,
        &["source_len", "threshold"],
        "[config.threshold]\nthreshold = \"3\"",
    );
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("expected a number"),
        "{}",
        stderr(&out)
    );

    let p = Project::new(DOC, &["source_len", "no_such_kernel"], "");
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`no_such_kernel` not found"),
        "{}",
        stderr(&out)
    );

    let p = Project::new(DOC, &["source_len"], "");
    std::fs::remove_file(p.dir.path().join("doc.md")).expect("rm");
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("doc.md"), "{}", stderr(&out));

    let out = run(koas().args(["run", "/no/such/pipeline.toml"]));
    assert_eq!(out.status.code(), Some(2));
    let out = run(koas().args(["run"]));
    assert_eq!(out.status.code(), Some(2), "usage error");

    let p = Project::new(DOC, &["source_len"], "");
    let out = run(koas()
        .args(["run", "wrong_name"])
        .arg(p.pipeline())
        .arg("--kernel-path")
        .arg(test_plugin("testkit")));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("named `test`, not `wrong_name`"));
    let out = run(koas()
        .args(["run", "test"])
        .arg(p.pipeline())
        .arg("--kernel-path")
        .arg(test_plugin("testkit")));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn environment_variables_override_the_pipeline() {
    let p = Project::new(DOC, &["source_len", "threshold"], "");
    let other_ws = p.dir.path().join("elsewhere");
    let out = run(koas()
        .arg("run")
        .arg(p.pipeline())
        .arg("--kernel-path")
        .arg(test_plugin("testkit"))
        .env("KOAS_WORKSPACE", &other_ws)
        .env("KOAS_CONFIG__THRESHOLD__THRESHOLD", "1000")
        .current_dir(p.dir.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: Value =
        serde_json::from_slice(&std::fs::read(other_ws.join("run.json")).expect("run.json"))
            .expect("json");
    assert!(kernel(&r, "threshold")["summary"]
        .as_str()
        .expect("summary")
        .contains("threshold 1000"));
}

#[test]
fn an_llm_request_without_a_backend_fails_clearly() {
    let p = Project::new(DOC, &["source_len", "asks_llm"], "");
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(kernel(&p.record(), "asks_llm")["error"]
        .as_str()
        .expect("error")
        .contains("no LLM backend configured"));
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_cleanly() {
    use std::time::{Duration, Instant};
    let p = Project::new(
        DOC,
        &["source_len", "until_cancelled", "threshold", "report_long"],
        "",
    );
    let mut child = koas()
        .arg("run")
        .arg(p.pipeline())
        .arg("--kernel-path")
        .arg(test_plugin("testkit"))
        .current_dir(p.dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let flag = p.ws().join("out/started.flag");
    let start = Instant::now();
    while !flag.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "kernel never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let code = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s.code();
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "koas did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(130));
    let r = p.record();
    assert_eq!(r["status"], "cancelled");
    assert_eq!(kernel(&r, "until_cancelled")["status"], "cancelled");
    assert!(!p.ws().join("out/patience.json").exists());
    // Nothing half-written anywhere in the workspace.
    let mut stack = vec![p.ws()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("dir").filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(
                !name.contains(".tmp-"),
                "temp file left: {}",
                e.path().display()
            );
            if e.path().is_dir() {
                stack.push(e.path());
            }
        }
    }
    // The next run picks up where it stopped, using what completed.
    let out = p.run(&["--set", "until_cancelled.max_ms=10"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(kernel(&p.record(), "source_len")["cache"], "hit");
}

#[test]
fn graph_prints_dot_and_mermaid() {
    let p = Project::new(DOC, &["source_len", "threshold", "report_long"], "");
    let out = run(koas()
        .args(["graph", "--format", "dot"])
        .arg(p.pipeline())
        .arg("--kernel-path")
        .arg(test_plugin("testkit")));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dot = stdout(&out);
    assert!(dot.starts_with("digraph \"test\""));
    assert!(
        dot.contains("\"source_len\" -> \"threshold\" [label=\"doc_len\"]"),
        "{dot}"
    );
    assert!(dot.contains("\"input:doc\" -> \"source_len\""), "{dot}");
    let out = run(koas()
        .args(["graph", "--format", "mermaid"])
        .arg(p.pipeline())
        .arg("--kernel-path")
        .arg(test_plugin("testkit")));
    let mm = stdout(&out);
    insta::assert_snapshot!("mermaid_graph", mm);
}

#[test]
fn the_example_third_party_kernel_is_found_through_koas_kernel_path() {
    let manifest = repo_root().join("examples/word-count-kernel/Cargo.toml");
    let dir = build_standalone(&manifest, false);
    let p = Project::new("one two three\nfour\n", &["word_count"], "");
    let out = run(koas()
        .args(["run", "--kernel", "word_count"])
        .arg(p.pipeline())
        .env("KOAS_KERNEL_PATH", &dir)
        .current_dir(p.dir.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(v["outputs"]["word_count"]["words"], 4);
    assert_eq!(v["outputs"]["word_count"]["lines"], 2);
}

#[cfg(unix)]
#[test]
fn a_second_run_on_the_same_workspace_is_refused_naming_the_holder() {
    let p = Project::new(DOC, &["source_len"], "");
    std::fs::create_dir_all(p.ws()).expect("ws");
    let mut holder = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("sleep runs");
    let lock = serde_json::json!({
        "pid": holder.id(),
        "hostname": koas_orchestrator::lock::hostname(),
        "command": "koas run pipeline.toml",
        "started_at": "2026-01-01T00:00:00.000000+00:00",
    });
    std::fs::write(p.ws().join(".lock"), lock.to_string()).expect("lock");
    let out = p.run(&[]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("in use by") && err.contains(&holder.id().to_string()),
        "{err}"
    );
    assert!(!p.ws().join("run.json").exists(), "nothing ran");
    // The holder is gone: its lock is stale and taken over.
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!p.ws().join(".lock").exists(), "the lock is released");
}
