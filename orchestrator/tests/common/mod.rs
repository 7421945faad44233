//! Shared helpers for the orchestrator's integration tests: building the
//! test plugin libraries and running the real `koas` binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("orchestrator has a parent folder")
        .to_path_buf()
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

/// Builds a standalone cargo project (its own workspace) into
/// `target/test-plugins` and returns the folder holding its libraries.
pub fn build_standalone(manifest: &Path) -> PathBuf {
    let target = repo_root().join("target").join("test-plugins");
    let status = Command::new(cargo())
        .arg("build")
        .arg("--quiet")
        .arg("--manifest-path")
        .arg(manifest)
        .arg("--target-dir")
        .arg(&target)
        .env_remove("RUSTFLAGS")
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building {} failed", manifest.display());
    target.join("debug")
}

/// The folder of the built test plugins (built once per test binary).
pub fn plugins_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        build_standalone(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plugins/Cargo.toml"))
    })
}

/// The path of one built test plugin, e.g. `lib("testkit")`.
pub fn lib(name: &str) -> PathBuf {
    plugins_dir().join(format!(
        "{}koas_kernel_test_{}{}",
        std::env::consts::DLL_PREFIX,
        name.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    ))
}

/// A folder holding copies of the named test plugins only.
pub fn plugin_folder(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for n in names {
        let src = lib(n);
        let dst = dir.path().join(src.file_name().expect("file name"));
        std::fs::copy(&src, &dst).expect("copy plugin");
    }
    dir
}

/// A `koas` command with a clean environment for discovery.
pub fn koas() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_koas"));
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

/// Stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Stderr as text.
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
            .arg(lib("testkit"))
            .args(args)
            .current_dir(self.dir.path());
        run(&mut c)
    }

    /// The parsed `run.json`.
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
