//! Shared helpers of the review command tests (`review_*.rs`): building
//! the reviewer plugins next to the `koas` binary under test, scratch
//! folders with a document, running `koas` and reading its workspace.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("orchestrator has a parent folder")
        .to_path_buf()
}

/// This crate's review fixtures (own documents and ops files).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/review")
}

/// The shared corpus folder (`../shared` seen from the repository), or
/// `None` with a printed skip message.
pub fn shared(test: &str) -> Option<PathBuf> {
    let dir = repo().join("../shared");
    if dir.join("corpus").is_dir() {
        Some(dir)
    } else {
        println!(
            "SKIP {test}: {} is absent (the shared corpus is not available here)",
            dir.display()
        );
        None
    }
}

/// The plugin packages of every kernel `configs/reviewer.toml` lists.
fn plugin_packages() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("configs/reviewer.toml"))
        .expect("configs/reviewer.toml is readable");
    let pipeline: toml::Table = text.parse().expect("configs/reviewer.toml is TOML");
    pipeline["kernels"]
        .as_array()
        .expect("`kernels` is an array")
        .iter()
        .map(|k| {
            format!(
                "koas-kernel-{}",
                k.as_str()
                    .expect("kernel names are strings")
                    .replace('_', "-")
            )
        })
        .collect()
}

/// The `koas` binary under test, with the reviewer plugins built next to
/// it (once per test binary) so that discovery finds them in its folder.
pub fn koas_bin() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let bin = PathBuf::from(env!("CARGO_BIN_EXE_koas"));
            let profile = bin.parent().expect("koas has a folder").to_path_buf();
            let target = profile.parent().expect("profile folder has a parent");
            let mut cmd = Command::new(env!("CARGO"));
            cmd.current_dir(repo())
                .args(["build", "--offline", "-q", "--target-dir"])
                .arg(target);
            for p in plugin_packages() {
                cmd.args(["-p", &p]);
            }
            if profile.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            let out = cmd.output().expect("cargo runs");
            assert!(
                out.status.success(),
                "building the reviewer plugins failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            bin
        })
        .clone()
}

/// A scratch folder holding documents; `koas` runs inside it.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    /// An empty scratch folder.
    pub fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// A scratch folder holding a copy of fixture `name` (and its ops file
    /// when there is one).
    pub fn with_fixture(name: &str) -> Scratch {
        let s = Scratch::new();
        s.copy(&fixtures().join(name), name);
        let ops = name.replace(".md", ".ops.json");
        if fixtures().join(&ops).is_file() {
            s.copy(&fixtures().join(&ops), &ops);
        }
        s
    }

    /// Copies `from` to `name` inside the folder.
    pub fn copy(&self, from: &Path, name: &str) {
        std::fs::copy(from, self.path(name))
            .unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
    }

    /// Writes a file.
    pub fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path(name), text).expect("write");
    }

    /// A path inside the folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Reads a file inside the folder.
    pub fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.path(name)).unwrap_or_else(|e| panic!("read {name}: {e}"))
    }

    /// A `koas` command running in the folder, with a clean environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(koas_bin());
        c.args(args)
            .current_dir(self.dir.path())
            .env_remove("KOAS_KERNEL_PATH")
            .env_remove("KOAS_JOBS")
            .env_remove("KOAS_WORKSPACE")
            .env("NO_COLOR", "1")
            .env("USER", "reviewer");
        c
    }

    /// Runs `koas ARGS` and returns its output.
    pub fn koas(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("koas runs")
    }

    /// Runs `koas ARGS --json` (quiet) and parses stdout.
    pub fn koas_json(&self, args: &[&str]) -> (Output, serde_json::Value) {
        let mut all = vec!["-q"];
        all.extend_from_slice(args);
        all.push("--json");
        let out = self.koas(&all);
        let value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "koas {args:?} --json printed no JSON ({e}):\nstdout:\n{}\nstderr:\n{}",
                stdout(&out),
                stderr(&out)
            )
        });
        (out, value)
    }

    /// The only review workspace under `.review/`.
    pub fn workspace(&self) -> PathBuf {
        let mut found: Vec<PathBuf> = std::fs::read_dir(self.path(".review"))
            .expect(".review exists")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        assert_eq!(found.len(), 1, "one workspace: {found:?}");
        found.remove(0)
    }
}

/// Stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The exit code (panics when killed by a signal).
pub fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally")
}

/// Asserts an exit code, showing the output when it differs.
pub fn assert_code(o: &Output, expected: i32, what: &str) {
    assert_eq!(
        o.status.code(),
        Some(expected),
        "{what}: exit code\nstdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
}

/// Every file under `dir` (relative path → bytes), skipping `skip`
/// prefixes.
pub fn tree(dir: &Path, skip: &[&str]) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir") {
            let path = entry.expect("entry").path();
            let rel = path
                .strip_prefix(dir)
                .expect("inside")
                .to_string_lossy()
                .into_owned();
            if skip.iter().any(|s| rel.starts_with(s)) {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

/// True when `git` can be run.
pub fn git_available() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `git apply --check PATCH` against a file `name` holding `state`; git's
/// stderr on refusal.
pub fn git_apply_check(name: &str, state: &[u8], patch: &[u8]) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(dir.path().join(name), state).map_err(|e| e.to_string())?;
    std::fs::write(dir.path().join("change.patch"), patch).map_err(|e| e.to_string())?;
    let out = Command::new("git")
        .args(["apply", "--check", "--whitespace=nowarn", "change.patch"])
        .current_dir(dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir.path())
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Replaces what changes from run to run (timestamps, run IDs, paths,
/// versions) in a text, for snapshots.
pub fn normalize(text: &str, scratch: &Path) -> String {
    let stamp =
        regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00").expect("regex");
    let version =
        regex::Regex::new(r"\| (koas|Kernel `[a-z_]+`) (\| )?\d+\.\d+\.\d+ \|").expect("regex");
    let text = text.replace(&scratch.display().to_string(), "[SCRATCH]");
    let text = stamp.replace_all(&text, "[TIME]");
    version
        .replace_all(&text, |c: &regex::Captures<'_>| {
            format!(
                "| {} {}[VERSION] |",
                &c[1],
                c.get(2).map_or("", |m| m.as_str())
            )
        })
        .into_owned()
}
