//! End to end through the real runtime: `koas run configs/reviewer.toml`
//! loads the four Stage 1 plugins from the `koas` executable's folder.
//!
//! `koas_test_support::koas_bin` first builds `koas` and the reviewer
//! plugins (offline, into the test's own target directory) so that the
//! tests never run stale plugins; a failed build fails the tests.

use koas_review_schema::stage1::{ChunkPlan, FileStats, HeadingTree, ProtectedSpans, SectionIndex};
use koas_test_support::{koas_bin, repo_root, shared_documents};
use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(koas_bin())
        .args(args)
        .env_remove("KOAS_KERNEL_PATH")
        .output()
        .expect("koas runs")
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn config() -> String {
    repo_root()
        .join("configs/reviewer.toml")
        .display()
        .to_string()
}

#[test]
fn until_md_chunk_writes_every_stage1_file() {
    let ws = tempfile::tempdir().expect("tempdir");
    let ws_arg = ws.path().display().to_string();
    let out = run(&[
        "run",
        &config(),
        "--until",
        "md_chunk",
        "--workspace",
        &ws_arg,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "koas failed:\n{stderr}");
    let stage1 = ws.path().join("stage1");
    let example = std::fs::read(repo_root().join("examples/spec-example.md")).expect("example");
    assert_eq!(
        std::fs::read(stage1.join("doc.raw.md")).expect("snapshot"),
        example
    );
    let stats: FileStats = read_json(&stage1.join("md_inventory.json"));
    assert_eq!(stats.lines, 238);
    let tree: HeadingTree = read_json(&stage1.join("md_structure.json"));
    assert_eq!(tree.heading_count, 22);
    let outline: SectionIndex = read_json(&stage1.join("outline.json"));
    assert_eq!(outline.sections[9].anchor, "examples");
    let anchors: serde_json::Value = read_json(&stage1.join("anchors.json"));
    assert_eq!(anchors["anchors"]["examples-1"], "S1.9.3");
    let spans: ProtectedSpans = read_json(&stage1.join("protected_spans.json"));
    assert_eq!(spans.blocks.len(), 15);
    let summary: serde_json::Value = read_json(&stage1.join("md_protected_regions.json"));
    assert_eq!(summary["block_count"], 15);
    let plan: ChunkPlan = read_json(&stage1.join("chunks.json"));
    assert_eq!(plan.chunks.len(), 23);
    assert_eq!(plan.doc_hash, stats.sha256);
    for kernel in [
        "md_inventory",
        "md_structure",
        "md_protected_regions",
        "md_chunk",
    ] {
        assert!(stderr.contains(kernel), "{kernel} not reported:\n{stderr}");
    }
}

#[test]
fn kernel_md_structure_prints_the_tree() {
    let ws = tempfile::tempdir().expect("tempdir");
    let ws_arg = ws.path().display().to_string();
    let out = run(&[
        "run",
        &config(),
        "--kernel",
        "md_structure",
        "--workspace",
        &ws_arg,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let tree: HeadingTree =
        serde_json::from_value(printed["outputs"]["heading_tree"].clone()).expect("heading_tree");
    assert_eq!(tree.heading_count, 22);
    assert_eq!(tree.roots[0].title, "Acme Ledger Service");
    let summary = printed["summary"].as_str().expect("summary");
    assert!(summary.contains("22 headings (max depth 4"), "{summary}");
}

#[test]
fn the_snapshot_of_a_workspace_is_immutable() {
    let ws = tempfile::tempdir().expect("tempdir");
    let ws_arg = ws.path().display().to_string();
    let first = run(&[
        "run",
        &config(),
        "--until",
        "md_inventory",
        "--workspace",
        &ws_arg,
    ]);
    assert!(first.status.success());
    let other = repo_root()
        .join("examples/audit-fr.md")
        .display()
        .to_string();
    let input = format!("doc={other}");
    let second = run(&[
        "run",
        &config(),
        "--until",
        "md_inventory",
        "--workspace",
        &ws_arg,
        "--input",
        &input,
    ]);
    assert!(
        !second.status.success(),
        "a second document must be refused"
    );
    let stderr = String::from_utf8_lossy(&second.stderr);
    // A usage error (exit 2) naming the file that may not be replaced.
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("doc.raw.md") && stderr.contains("another document"),
        "{stderr}"
    );
    let kept = std::fs::read(ws.path().join("stage1/doc.raw.md")).expect("snapshot");
    assert_eq!(
        kept,
        std::fs::read(repo_root().join("examples/spec-example.md")).expect("example")
    );
}

#[test]
fn invalid_utf8_stops_the_run_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("latin1.md");
    std::fs::write(&bad, b"# R\xe9sum\xe9\n\nTexte.\n").expect("write");
    let ws = dir.path().join("ws");
    let input = format!("doc={}", bad.display());
    let ws_arg = ws.display().to_string();
    let out = run(&[
        "run",
        &config(),
        "--until",
        "md_chunk",
        "--workspace",
        &ws_arg,
        "--input",
        &input,
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("latin1.md") && stderr.contains("offset 3"),
        "{stderr}"
    );
    assert!(!ws.join("stage1/doc.raw.md").exists());
    assert!(!ws.join("stage1/chunks.json").exists());
}

#[test]
fn crlf_and_bom_survive_the_host_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let doc = dir.path().join("crlf.md");
    let text = "\u{feff}# Titre\r\n\r\nTexte `code`.\r\n\r\n```\r\nx\r\n```\r\n";
    std::fs::write(&doc, text).expect("write");
    let ws = dir.path().join("ws");
    let input = format!("doc={}", doc.display());
    let ws_arg = ws.display().to_string();
    let out = run(&[
        "run",
        &config(),
        "--until",
        "md_chunk",
        "--workspace",
        &ws_arg,
        "--input",
        &input,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(ws.join("stage1/doc.raw.md")).expect("snapshot"),
        text.as_bytes()
    );
    let plan: ChunkPlan = read_json(&ws.join("stage1/chunks.json"));
    let rebuilt: String = plan
        .chunks
        .iter()
        .map(|c| &text[c.byte_start as usize..c.byte_end as usize])
        .collect();
    assert_eq!(format!("\u{feff}{rebuilt}"), text);
}

#[test]
fn every_shared_document_runs_through_the_runtime() {
    let Some(files) = shared_documents("every_shared_document_runs_through_the_runtime") else {
        return;
    };
    assert!(files.len() >= 14);
    for path in files {
        let ws = tempfile::tempdir().expect("tempdir");
        let input = format!("doc={}", path.display());
        let ws_arg = ws.path().display().to_string();
        let out = run(&[
            "run",
            &config(),
            "--until",
            "md_chunk",
            "--workspace",
            &ws_arg,
            "--input",
            &input,
        ]);
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let plan: ChunkPlan = read_json(&ws.path().join("stage1/chunks.json"));
        let text = std::fs::read_to_string(&path).expect("UTF-8");
        assert_eq!(
            plan.line_count as usize,
            text.lines().count(),
            "{}",
            path.display()
        );
    }
}
