//! An installed koas (the layout `scripts/install.sh PREFIX` makes:
//! `PREFIX/bin/koas`, `PREFIX/lib/koas/kernels/`) finds its kernels with
//! no flag or variable, also in the user's data folder, and says where it
//! looked and how to install when it finds none. The test lays the prefix
//! out with the debug `koas` and plugins (hard links when possible):
//! building in release inside a test would take minutes; the script itself
//! was run by hand.

use crate::review_common::{assert_code, fixtures, stderr, stdout};
use koas_test_support::koas_bin;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Links (or copies) `from` to `to`.
fn place(from: &Path, to: &Path) {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
    }
}

/// The reviewer plugins built next to the test `koas`.
fn plugins() -> Vec<PathBuf> {
    let dir = koas_bin().parent().expect("bin folder");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read target")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(koas_orchestrator::discovery::is_kernel_library_name)
        })
        .collect();
    found.sort();
    assert!(
        found.len() >= 10,
        "reviewer plugins next to koas: {found:?}"
    );
    found
}

/// A prefix with `bin/koas` (in the target folder, so hard links work),
/// and a home folder with an empty data folder.
struct Installed {
    root: tempfile::TempDir,
}

impl Installed {
    fn new() -> Installed {
        let target = koas_bin()
            .parent()
            .and_then(Path::parent)
            .expect("target folder");
        let root = tempfile::tempdir_in(target).expect("tempdir");
        std::fs::create_dir_all(root.path().join("prefix/bin")).expect("mkdir");
        std::fs::create_dir_all(root.path().join("home/data")).expect("mkdir");
        place(koas_bin(), &root.path().join("prefix/bin/koas"));
        Installed { root }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    /// Puts the reviewer plugins in `rel` (created).
    fn kernels_in(&self, rel: &str) {
        let dir = self.path(rel);
        std::fs::create_dir_all(&dir).expect("mkdir");
        for p in plugins() {
            place(&p, &dir.join(p.file_name().expect("name")));
        }
    }

    /// The installed koas, run in the home folder, with a clean
    /// environment: no KOAS_KERNEL_PATH, the data folder inside the test.
    fn koas(&self, args: &[&str]) -> std::process::Output {
        Command::new(self.path("prefix/bin/koas"))
            .args(args)
            .current_dir(self.path("home"))
            .env_remove("KOAS_KERNEL_PATH")
            .env("XDG_DATA_HOME", self.path("home/data"))
            .env("HOME", self.path("home"))
            .env("NO_COLOR", "1")
            .output()
            .expect("koas runs")
    }
}

fn kernels_json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("koas kernels --json: {e}\n{}\n{}", stdout(out), stderr(out)))
}

#[test]
fn an_installed_koas_finds_its_kernels_in_lib_koas_kernels() {
    let i = Installed::new();
    i.kernels_in("prefix/lib/koas/kernels");
    let out = i.koas(&["kernels", "--json"]);
    assert_code(&out, 0, "kernels");
    let v = kernels_json(&out);
    let installed = std::fs::canonicalize(i.path("prefix/lib/koas/kernels")).expect("canon");
    let chunk = v["kernels"]
        .as_array()
        .expect("kernels")
        .iter()
        .find(|k| k["name"] == "md_chunk")
        .expect("md_chunk found");
    assert!(
        Path::new(chunk["library"].as_str().expect("library")).starts_with(&installed),
        "{chunk}"
    );
    assert!(v["searched"]
        .as_array()
        .expect("searched")
        .iter()
        .any(|s| s["origin"] == "install"));
    // And a review runs with them.
    std::fs::copy(
        fixtures().join("retention_policy.md"),
        i.path("home/doc.md"),
    )
    .expect("copy");
    let out = i.koas(&["-q", "review", "doc.md", "--no-llm"]);
    assert_code(&out, 0, "review with the installed kernels");
}

#[test]
fn kernels_in_the_user_data_folder_are_found() {
    let i = Installed::new();
    i.kernels_in("home/data/koas/kernels");
    let out = i.koas(&["kernels", "--json"]);
    assert_code(&out, 0, "kernels");
    let v = kernels_json(&out);
    assert!(stdout(&out).contains("\"md_structure\""));
    let user = v["searched"]
        .as_array()
        .expect("searched")
        .iter()
        .find(|s| s["origin"] == "user_data")
        .expect("the user data folder is searched");
    assert_eq!(
        user["path"].as_str().map(PathBuf::from),
        Some(i.path("home/data/koas/kernels"))
    );
}

#[test]
fn with_no_kernel_koas_says_where_it_looked_and_how_to_install() {
    let i = Installed::new();
    let out = i.koas(&["kernels"]);
    assert_code(&out, 1, "kernels with none installed");
    let err = stderr(&out);
    for needle in [
        "koas found no kernel",
        &i.path("prefix/lib/koas/kernels").display().to_string(),
        &i.path("home/data/koas/kernels").display().to_string(),
        "scripts/install.sh PREFIX",
        "--kernel-path",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
    }
    std::fs::copy(
        fixtures().join("retention_policy.md"),
        i.path("home/doc.md"),
    )
    .expect("copy");
    let out = i.koas(&["review", "doc.md", "--no-llm"]);
    assert_code(&out, 2, "review with no kernel");
    let err = stderr(&out);
    assert!(
        err.contains("No kernel was found at all") && err.contains("scripts/install.sh"),
        "{err}"
    );
}
