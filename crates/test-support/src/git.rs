//! Checking koas's patches with `git apply`: the patch files are meant to
//! be usable by standard tools, so tests hand them to git itself (and
//! skip that part when git is not installed).

use std::path::Path;
use std::process::Command;

/// True when `git` can be run.
pub fn git_available() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Writes `name` holding `state` and `change.patch` holding `patch` in a
/// fresh temporary folder and runs `git apply ARGS change.patch` there
/// with no user or system git configuration; git's stderr on refusal.
fn run_git_apply(
    dir: &Path,
    name: &str,
    state: &[u8],
    patch: &[u8],
    args: &[&str],
) -> Result<(), String> {
    std::fs::write(dir.join(name), state).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("change.patch"), patch).map_err(|e| e.to_string())?;
    let out = Command::new("git")
        .arg("apply")
        .args(args)
        .args(["--whitespace=nowarn", "change.patch"])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// `git apply --check` of `patch` against a file `name` holding `state`;
/// git's stderr when it refuses.
pub fn git_apply_check(
    name: &str,
    state: impl AsRef<[u8]>,
    patch: impl AsRef<[u8]>,
) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    run_git_apply(
        dir.path(),
        name,
        state.as_ref(),
        patch.as_ref(),
        &["--check"],
    )
}

/// Applies `patch` with `git apply` (not just a check) to a file `name`
/// holding `state` and returns the resulting file, to compare with koas's
/// own application; git's stderr when it refuses.
pub fn git_apply(
    name: &str,
    state: impl AsRef<[u8]>,
    patch: impl AsRef<[u8]>,
) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    run_git_apply(dir.path(), name, state.as_ref(), patch.as_ref(), &[])?;
    std::fs::read_to_string(dir.path().join(name)).map_err(|e| e.to_string())
}
