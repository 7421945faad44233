//! A workspace made from one document, given another (`--input
//! doc=OTHER.md`, or a review's `-w DIR`): a usage error (exit 2) naming
//! both documents and what to do, before anything runs; not a kernel
//! failure (exit 1).

use crate::common::{koas, run, stderr};
use std::path::Path;

const A: &str = "# Title A\n\nFirst document.\n";
const B: &str = "# Title B\n\nAnother document.\n";

/// A pipeline of the reviewer's snapshotting kernel (its `doc.raw.md` is
/// written once) over `a.md`, with `b.md` beside it.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.md"), A).expect("a.md");
    std::fs::write(dir.path().join("b.md"), B).expect("b.md");
    std::fs::write(
        dir.path().join("p.toml"),
        "name = \"snap\"\nkernels = [\"md_inventory\"]\nworkspace = \"ws\"\n[inputs]\ndoc = \"a.md\"\n",
    )
    .expect("pipeline");
    dir
}

fn koas_run(dir: &Path, args: &[&str]) -> std::process::Output {
    run(koas().arg("run").arg("p.toml").args(args).current_dir(dir))
}

#[test]
fn run_on_another_document_is_a_usage_error_before_anything_runs() {
    let dir = project();
    let first = koas_run(dir.path(), &["-q"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let record = std::fs::read(dir.path().join("ws/run.json")).expect("run.json");
    let raw = dir.path().join("ws/stage1/doc.raw.md");
    assert_eq!(std::fs::read_to_string(&raw).expect("snapshot"), A);

    let other = koas_run(dir.path(), &["--input", "doc=b.md"]);
    let err = stderr(&other);
    assert_eq!(other.status.code(), Some(2), "{err}");
    assert!(
        err.contains("holds the run of another document, ./a.md, not b.md"),
        "{err}"
    );
    assert!(
        err.contains("stage1/doc.raw.md") && err.contains("md_inventory"),
        "{err}"
    );
    assert!(
        err.contains("--workspace DIR") && err.contains("Nothing was run"),
        "{err}"
    );
    assert!(!err.contains("FAILED"), "no kernel ran: {err}");
    // Nothing was run: the record and the snapshot are the first run's.
    assert_eq!(
        std::fs::read(dir.path().join("ws/run.json")).expect("run.json"),
        record
    );
    assert_eq!(std::fs::read_to_string(&raw).expect("snapshot"), A);

    // Another workspace takes it; a copy of the same bytes is no conflict.
    let own = koas_run(dir.path(), &["--input", "doc=b.md", "-w", "ws-b", "-q"]);
    assert_eq!(own.status.code(), Some(0), "{}", stderr(&own));
    std::fs::write(dir.path().join("copy.md"), A).expect("copy");
    let copy = koas_run(dir.path(), &["--input", "doc=copy.md", "-q"]);
    assert_eq!(copy.status.code(), Some(0), "{}", stderr(&copy));

    // The same file edited by hand: named as such, same exit code.
    std::fs::write(dir.path().join("copy.md"), format!("{A}More.\n")).expect("edit");
    let edited = koas_run(dir.path(), &["--input", "doc=copy.md"]);
    let err = stderr(&edited);
    assert_eq!(edited.status.code(), Some(2), "{err}");
    assert!(err.contains("copy.md changed since the workspace"), "{err}");
}

#[test]
fn review_of_another_document_in_a_workspace_is_a_usage_error() {
    let dir = project();
    let review = |doc: &str, extra: &[&str]| {
        run(koas()
            .args(["review", doc, "-w", "rws", "-q"])
            .args(extra)
            .current_dir(dir.path()))
    };
    let first = review("a.md", &[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let state = |f: &str| std::fs::read(dir.path().join("rws").join(f)).unwrap_or_default();
    let (ledger, edited) = (state("review/ledger.jsonl"), state("stage3/doc.edited.md"));
    assert_eq!(edited, A.as_bytes());

    let other = review("b.md", &[]);
    let err = stderr(&other);
    assert_eq!(other.status.code(), Some(2), "{err}");
    assert!(
        err.contains("holds the review of another document, a.md; b.md is no version of it"),
        "{err}"
    );
    assert!(err.contains("--rebase") && err.contains("-w"), "{err}");
    assert_eq!(state("review/ledger.jsonl"), ledger, "nothing written");
    assert_eq!(state("stage3/doc.edited.md"), edited, "nothing written");

    // `--rebase` says b.md is a.md renamed and edited: the review goes on.
    let rebased = review("b.md", &["--rebase"]);
    assert_eq!(rebased.status.code(), Some(0), "{}", stderr(&rebased));
}
