//! Building what end-to-end tests and benchmarks run, with cargo.
//!
//! `cargo test` builds neither the `koas` binary for a package that does
//! not own it nor any `cdylib` plugin, and a test must never run stale
//! plugins. So the tests build them here, once per test process, offline
//! (the suite runs after `cargo build --workspace`, so every dependency is
//! already there), and a failed build fails the test with cargo's stderr.
//!
//! - [`koas_bin`]: the workspace's `koas` binary and the reviewer plugins
//!   (every kernel `configs/reviewer.toml` lists), built into the target
//!   directory and profile of the running test, so that discovery finds
//!   the plugins in the executable's folder.
//! - [`build_standalone`]: a cargo project with its own workspace (the test
//!   plugins of `crates/test-support/plugins`, the example kernel…), built
//!   into `<target>/test-plugins` so that it never lands next to `koas`.

use crate::corpus::repo_root;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Where the running test or bench executable was built: cargo puts it in
/// `<target>[/<triple>]/<profile>/deps/` (`examples/` for examples).
struct Layout {
    /// The cargo target directory (`target/`, `$CARGO_TARGET_DIR`…).
    target_dir: PathBuf,
    /// `<target>[/<triple>]/<profile>`: where `cargo build` puts binaries
    /// and libraries of the same profile.
    profile_dir: PathBuf,
    /// The `--target` triple when cross-compiling.
    triple: Option<String>,
}

impl Layout {
    /// The layout of the current executable.
    fn current() -> Result<Layout, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot locate the running test executable: {e}"))?;
        let parent = exe.parent().ok_or("the test executable has no folder")?;
        let in_deps = parent
            .file_name()
            .is_some_and(|n| n == "deps" || n == "examples");
        let profile_dir = match parent.parent() {
            Some(profile) if in_deps => profile.to_path_buf(),
            _ => {
                return Err(format!(
                    "{} is not in a cargo `<target>/<profile>/deps` folder; run it with cargo",
                    exe.display()
                ))
            }
        };
        let above = profile_dir
            .parent()
            .ok_or("the profile folder has no parent")?;
        // Cargo marks the root of a target directory with CACHEDIR.TAG; a
        // folder between it and the profile is a cross-compilation triple.
        let is_target_root = |dir: &Path| dir.join("CACHEDIR.TAG").is_file();
        let (target_dir, triple) = match above.parent() {
            Some(root) if !is_target_root(above) && is_target_root(root) => (
                root.to_path_buf(),
                above.file_name().map(|n| n.to_string_lossy().into_owned()),
            ),
            _ => (above.to_path_buf(), None),
        };
        Ok(Layout {
            target_dir,
            profile_dir,
            triple,
        })
    }

    /// The cargo arguments selecting this layout's profile and triple.
    fn profile_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        // `dev` and `test` build into `debug`, `release` and `bench` into
        // `release`, a custom profile into a folder of its name.
        match self.profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => {}
            Some("release") => args.push("--release".to_string()),
            Some(custom) => args.extend(["--profile".to_string(), custom.to_string()]),
        }
        if let Some(triple) = &self.triple {
            args.extend(["--target".to_string(), triple.clone()]);
        }
        args
    }
}

/// The cargo running the tests (`$CARGO` at run time, else the one that
/// compiled this crate).
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into()))
}

/// The cargo running the tests, for a test that runs cargo on a project
/// of its own (`RUSTFLAGS` of the outer build left out, as for
/// [`build_standalone`]).
pub fn cargo_command() -> Command {
    let mut cmd = cargo();
    cmd.env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    cmd
}

/// The cargo target directory of the running test (`target/`, or
/// `$CARGO_TARGET_DIR`): a project a test builds puts its own target
/// folder below it, so that later runs reuse what it compiled.
pub fn target_dir() -> PathBuf {
    Layout::current()
        .map(|l| l.target_dir)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a quiet, offline `cargo build` with `args`; cargo's stderr on
/// failure.
fn cargo_build(mut cmd: Command, args: &[String], what: &str) -> Result<(), String> {
    cmd.args(["build", "--offline", "--quiet"]).args(args);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run cargo to build {what}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "building {what} failed (cargo {args:?}):\n{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The plugin packages of every kernel the shipped pipelines list
/// (`configs/reviewer.toml`, `configs/refine.toml`; `md_chunk` →
/// `koas-kernel-md-chunk`), each once.
fn reviewer_plugin_packages() -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for file in ["configs/reviewer.toml", "configs/refine.toml"] {
        let path = repo_root().join(file);
        if file != "configs/reviewer.toml" && !path.is_file() {
            continue;
        }
        for package in pipeline_plugin_packages(&path)? {
            if !out.contains(&package) {
                out.push(package);
            }
        }
    }
    Ok(out)
}

/// The plugin packages of the kernels the pipeline file `path` lists.
fn pipeline_plugin_packages(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let pipeline: toml::Table = text
        .parse()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let kernels = pipeline
        .get("kernels")
        .and_then(|k| k.as_array())
        .ok_or_else(|| format!("{}: no `kernels` array", path.display()))?;
    kernels
        .iter()
        .map(|k| {
            k.as_str()
                .map(|name| format!("koas-kernel-{}", name.replace('_', "-")))
                .ok_or_else(|| format!("{}: a kernel name is not a string", path.display()))
        })
        .collect()
}

/// Builds `koas` and the reviewer plugins for the running test's profile;
/// the path of the `koas` executable.
fn build_koas() -> Result<PathBuf, String> {
    let layout = Layout::current()?;
    let mut args = vec!["--target-dir".to_string()];
    args.push(layout.target_dir.to_string_lossy().into_owned());
    args.extend(layout.profile_args());
    args.extend(["-p".to_string(), "koas".to_string()]);
    for package in reviewer_plugin_packages()? {
        args.extend(["-p".to_string(), package]);
    }
    let mut cmd = cargo();
    cmd.current_dir(repo_root());
    cargo_build(cmd, &args, "koas and the reviewer plugins")?;
    let bin = layout
        .profile_dir
        .join(format!("koas{}", std::env::consts::EXE_SUFFIX));
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!("cargo built koas, but not at {}", bin.display()))
    }
}

/// The workspace's `koas` executable, freshly built (once per test
/// process) with the reviewer plugins in its folder.
///
/// A test package that does not own the binary has no
/// `CARGO_BIN_EXE_koas`, so the binary is built here with
/// `cargo build -p koas` into the target directory and profile the running
/// test was built with (found from `std::env::current_exe()`:
/// `target/debug/deps/it-…` → `target/debug/koas`), which also keeps the
/// build incremental. Panics with cargo's stderr when the build fails.
pub fn koas_bin() -> &'static Path {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BUILT.get_or_init(build_koas) {
        Ok(bin) => bin,
        Err(e) => panic!("{e}"),
    }
}

/// Builds the standalone cargo project of `manifest` (its own workspace)
/// into `<target>/test-plugins` and returns the folder holding its
/// libraries (`debug`, or `release` when `release`). Panics with cargo's
/// stderr when the build fails.
///
/// `RUSTFLAGS` is not passed on: these libraries are loaded by `koas`, not
/// linked into the tests, and need no instrumentation flag of the outer
/// build.
pub fn build_standalone(manifest: &Path, release: bool) -> PathBuf {
    try_build_standalone(manifest, release).unwrap_or_else(|e| panic!("{e}"))
}

fn try_build_standalone(manifest: &Path, release: bool) -> Result<PathBuf, String> {
    let target = Layout::current()?.target_dir.join("test-plugins");
    let mut args = vec![
        "--manifest-path".to_string(),
        manifest.to_string_lossy().into_owned(),
        "--target-dir".to_string(),
        target.to_string_lossy().into_owned(),
    ];
    if release {
        args.push("--release".to_string());
    }
    let mut cmd = cargo();
    cmd.env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    cargo_build(cmd, &args, &manifest.display().to_string())?;
    Ok(target.join(if release { "release" } else { "debug" }))
}

/// The folder of the built test plugins (`crates/test-support/plugins`,
/// built once per test process; a failed build fails every test that
/// needs them, without building again).
pub fn test_plugins_dir() -> &'static Path {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins/Cargo.toml");
    match BUILT.get_or_init(|| try_build_standalone(&manifest, false)) {
        Ok(dir) => dir,
        Err(e) => panic!("{e}"),
    }
}

/// The path of one built test plugin, by its folder name in
/// `crates/test-support/plugins` (e.g. `test_plugin("wrong-abi")`).
pub fn test_plugin(name: &str) -> PathBuf {
    test_plugins_dir().join(format!(
        "{}koas_kernel_test_{}{}",
        std::env::consts::DLL_PREFIX,
        name.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    ))
}

/// A temporary folder holding copies of the named test plugins only, for
/// discovery tests that must not see the others.
pub fn test_plugin_folder(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for name in names {
        let src = test_plugin(name);
        let file = src.file_name().expect("a plugin library has a file name");
        std::fs::copy(&src, dir.path().join(file))
            .unwrap_or_else(|e| panic!("copy {}: {e}", src.display()));
    }
    dir
}
