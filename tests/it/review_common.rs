//! Helpers of the review command tests (`review_*`): scratch folders with
//! a document, running the real `koas` (built with the reviewer plugins
//! next to it by `koas_test_support::koas_bin`) and reading its workspace.

#![allow(dead_code)]

pub use crate::common::{stderr, stdout};
use koas_test_support::koas_bin;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The review tests' own documents and ops files (`tests/fixtures/review`).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/review")
}

/// A scratch folder holding documents; `koas` runs inside it.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    /// An empty scratch folder, deleted when dropped.
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

    /// Writes `text` to `name` inside the folder, replacing it (and
    /// making its parent folders).
    pub fn write(&self, name: &str, text: &str) {
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("parent folder");
        }
        std::fs::write(path, text).expect("write");
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

/// The flags that point `koas review` (or `refine`) at a scripted model,
/// with `in_flight` requests at a time.
pub fn llm_flags(model: &koas_test_support::ScriptedModel, in_flight: usize) -> Vec<String> {
    [
        "--llm-backend",
        "openai",
        "--llm-endpoint",
        &model.url(),
        "--llm-model",
        "scripted",
        "--llm-max-in-flight",
        &in_flight.to_string(),
    ]
    .map(str::to_owned)
    .to_vec()
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

/// A model that answers each edit request with `ops_for(chunk)` (the text
/// it is shown to review) between the edit-ops tags, and every other
/// request (the pyramid's summaries) with one plain sentence.
pub fn edit_model(
    ops_for: impl Fn(&str) -> Vec<serde_json::Value> + Send + Sync + 'static,
) -> koas_test_support::ScriptedModel {
    use koas_test_support::model::{ModelAnswer, ModelRequest};
    koas_test_support::ScriptedModel::start(move |r: &ModelRequest| {
        if !r.prompt.contains("BEGIN_EDIT_OPS") {
            return ModelAnswer::text("The section describes an operation.");
        }
        let chunk = r.prompt.split("Text to review").nth(1).unwrap_or("");
        let chunk = chunk
            .split("Answer with BEGIN_EDIT_OPS")
            .next()
            .unwrap_or("");
        ModelAnswer::text(format!(
            "BEGIN_EDIT_OPS\n{}\nEND_EDIT_OPS",
            serde_json::Value::Array(ops_for(chunk))
        ))
    })
}

/// Waits for `child` at most `limit`, killing it (and failing, with its
/// stderr) after: a hang guard for commands that once blocked forever,
/// not a timing.
pub fn finish_within(
    mut child: std::process::Child,
    limit: std::time::Duration,
    what: &str,
) -> Output {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{what} did not end within {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The runtime's options for a test that drives the review API as a
/// library: the plugins the binary was built with, beside it, run in this
/// process (kernels run in workers of the koas executable; a test binary
/// is none), quiet.
pub fn library_host() -> koas_orchestrator::embed::HostOptions {
    let bin = koas_test_support::koas_bin();
    koas_orchestrator::embed::HostOptions {
        kernel_paths: vec![bin.parent().expect("its folder").to_path_buf()],
        quiet: true,
        in_process: true,
        ..koas_orchestrator::embed::HostOptions::default()
    }
}
