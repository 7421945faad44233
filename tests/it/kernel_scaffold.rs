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
    let out = cargo_command()
        .args(["test", "--offline", "--", "--nocapture"])
        .current_dir(&crate_dir)
        .env("CARGO_TARGET_DIR", target_dir().join("scaffold-test"))
        .env("KOAS_BIN", koas_bin())
        .env_remove("KOAS_KERNEL_PATH")
        .output()
        .expect("cargo runs");
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{all}");
    assert!(all.contains("test result: ok. 4 passed"), "{all}");
    assert!(
        all.contains("test the_built_plugin_runs_in_a_koas_worker ... ok"),
        "{all}"
    );
    assert!(!all.contains("SKIPPED"), "{all}");
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
