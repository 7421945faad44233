//! Helpers of the runtime tests (`runtime`, `cli_snapshots`, `llm_host`):
//! running the real `koas` binary on scratch pipelines of the test
//! plugins (`koas_test_support::test_plugin`).

#![allow(dead_code)]

use koas_test_support::{koas_bin, test_plugin};
use std::path::PathBuf;
use std::process::{Command, Output};

/// A `koas` command with a clean environment for discovery.
pub fn koas() -> Command {
    let mut c = Command::new(koas_bin());
    c.env_remove("KOAS_KERNEL_PATH")
        .env_remove("KOAS_JOBS")
        .env_remove("KOAS_WORKSPACE")
        .env_remove("RUST_BACKTRACE")
        .env("NO_COLOR", "1");
    c
}

/// Runs a command and returns its output.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("koas runs")
}

/// Stdout as text (invalid UTF-8 replaced).
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Stderr as text (invalid UTF-8 replaced).
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scratch project: a document and a pipeline file in a temp folder.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    /// A project with `doc.md` holding `doc` and a pipeline running
    /// `kernels` with the extra TOML `extra` appended.
    pub fn new(doc: &str, kernels: &[&str], extra: &str) -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("doc.md"), doc).expect("write doc");
        let list = kernels
            .iter()
            .map(|k| format!("\"{k}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let toml = format!(
            "name = \"test\"\nkernels = [{list}]\nworkspace = \"ws\"\n{extra}\n[inputs]\ndoc = \"doc.md\"\n"
        );
        std::fs::write(dir.path().join("pipeline.toml"), toml).expect("write pipeline");
        Project { dir }
    }

    pub fn pipeline(&self) -> PathBuf {
        self.dir.path().join("pipeline.toml")
    }

    pub fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// `koas run <pipeline> --kernel-path <testkit> ARGS...`.
    pub fn run(&self, args: &[&str]) -> Output {
        let mut c = koas();
        c.arg("run")
            .arg(self.pipeline())
            .arg("--kernel-path")
            .arg(test_plugin("testkit"))
            .args(args)
            .current_dir(self.dir.path());
        run(&mut c)
    }

    /// The parsed `run.json` of the workspace; panics when it is missing.
    pub fn record(&self) -> serde_json::Value {
        let bytes = std::fs::read(self.ws().join("run.json")).expect("run.json exists");
        serde_json::from_slice(&bytes).expect("run.json parses")
    }
}

/// The record of one kernel in a parsed `run.json`.
pub fn kernel<'a>(record: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    record["kernels"]
        .as_array()
        .expect("kernels array")
        .iter()
        .find(|k| k["name"] == name)
        .unwrap_or_else(|| panic!("kernel {name} in run.json"))
}

/// The string `field` of each item of the array `items` (items without it
/// left out); panics when `items` is not an array.
pub fn strings_of<'v>(items: &'v serde_json::Value, field: &str) -> Vec<&'v str> {
    items
        .as_array()
        .unwrap_or_else(|| panic!("an array, not {items}"))
        .iter()
        .filter_map(|item| item[field].as_str())
        .collect()
}
