//! End to end through the real runtime: `koas run configs/reviewer.toml`
//! loads the four Stage 1 plugins from the `koas` executable's folder.
//!
//! The test first builds `koas` and the four plugins (offline, into this
//! test's own target directory) so that it never runs stale plugins. When
//! the build cannot run offline (dependencies not downloaded yet), the
//! tests print why and skip.

use koas_review_schema::stage1::{ChunkPlan, FileStats, HeadingTree, ProtectedSpans, SectionIndex};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The plugin packages of every kernel `configs/reviewer.toml` lists
/// (`md_chunk` → `koas-kernel-md-chunk`): `koas run` needs all of them.
fn plugins() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("configs/reviewer.toml"))
        .expect("configs/reviewer.toml is readable");
    let pipeline: toml::Table = text.parse().expect("configs/reviewer.toml is TOML");
    pipeline["kernels"]
        .as_array()
        .expect("`kernels` is an array")
        .iter()
        .filter_map(|k| k.as_str())
        .map(|k| format!("koas-kernel-{}", k.replace('_', "-")))
        .collect()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `target/<profile>` holding this test binary.
fn profile_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.to_path_buf())
}

/// Builds koas and the plugins once; the koas binary path, or `None`
/// (with the reason printed) when they cannot be built offline.
fn koas() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = profile_dir()?;
            let target = dir.parent()?.to_path_buf();
            let mut cmd = Command::new(env!("CARGO"));
            cmd.current_dir(repo())
                .args(["build", "--offline", "-q", "--target-dir"])
                .arg(&target)
                .args(["-p", "koas"]);
            for p in plugins() {
                cmd.args(["-p", &p]);
            }
            if dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            let out = cmd.output().ok()?;
            if !out.status.success() {
                let err = String::from_utf8_lossy(&out.stderr);
                if err.contains("offline") || err.contains("download") {
                    eprintln!("SKIPPED: cannot build koas offline here:\n{err}");
                    return None;
                }
                panic!("building koas and the Stage 1 plugins failed:\n{err}");
            }
            let bin = dir.join(format!("koas{}", std::env::consts::EXE_SUFFIX));
            assert!(bin.is_file(), "{} was not built", bin.display());
            Some(bin)
        })
        .clone()
}

fn run(args: &[&str]) -> Option<Output> {
    let bin = koas()?;
    let out = Command::new(bin)
        .args(args)
        .env_remove("KOAS_KERNEL_PATH")
        .output()
        .expect("koas runs");
    Some(out)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn config() -> String {
    repo().join("configs/reviewer.toml").display().to_string()
}

#[test]
fn until_md_chunk_writes_every_stage1_file() {
    let ws = tempfile::tempdir().expect("tempdir");
    let ws_arg = ws.path().display().to_string();
    let Some(out) = run(&[
        "run",
        &config(),
        "--until",
        "md_chunk",
        "--workspace",
        &ws_arg,
    ]) else {
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "koas failed:\n{stderr}");
    let stage1 = ws.path().join("stage1");
    let example = std::fs::read(repo().join("examples/spec-example.md")).expect("example");
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
    let Some(out) = run(&[
        "run",
        &config(),
        "--kernel",
        "md_structure",
        "--workspace",
        &ws_arg,
    ]) else {
        return;
    };
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
    let Some(first) = run(&[
        "run",
        &config(),
        "--until",
        "md_inventory",
        "--workspace",
        &ws_arg,
    ]) else {
        return;
    };
    assert!(first.status.success());
    let other = repo().join("examples/audit-fr.md").display().to_string();
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
    ])
    .expect("built");
    assert!(
        !second.status.success(),
        "a second document must be refused"
    );
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains("doc.raw.md") && stderr.contains("different"),
        "{stderr}"
    );
    let kept = std::fs::read(ws.path().join("stage1/doc.raw.md")).expect("snapshot");
    assert_eq!(
        kept,
        std::fs::read(repo().join("examples/spec-example.md")).expect("example")
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
    let Some(out) = run(&[
        "run",
        &config(),
        "--until",
        "md_chunk",
        "--workspace",
        &ws_arg,
        "--input",
        &input,
    ]) else {
        return;
    };
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
    let Some(out) = run(&[
        "run",
        &config(),
        "--until",
        "md_chunk",
        "--workspace",
        &ws_arg,
        "--input",
        &input,
    ]) else {
        return;
    };
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
    let shared = repo().join("../shared");
    if !shared.join("corpus").is_dir() {
        eprintln!(
            "SKIPPED: {} not found; the shared corpus is not available here",
            shared.display()
        );
        return;
    }
    let mut files = Vec::new();
    for sub in ["corpus/real", "corpus/planted", "seeds"] {
        for entry in std::fs::read_dir(shared.join(sub)).expect("folder") {
            let path = entry.expect("entry").path();
            if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("md" | "txt")
            ) {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 14);
    for path in files {
        let ws = tempfile::tempdir().expect("tempdir");
        let input = format!("doc={}", path.display());
        let ws_arg = ws.path().display().to_string();
        let Some(out) = run(&[
            "run",
            &config(),
            "--until",
            "md_chunk",
            "--workspace",
            &ws_arg,
            "--input",
            &input,
        ]) else {
            return;
        };
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
