//! The whole review cycle as processes, timed from outside like a user
//! sees it: `koas review DOC --ops <1,000 ops>` on a fresh workspace
//! (plugin loading, Stage 1, Stage 2, md_apply_ops, the host's replay check
//! and crash-safe commit, notes and report), then `koas revert DOC --all`
//! (planning, replay check, commit, views). Target: under 1 s for both.
//!
//! ```text
//! cargo bench -p koas --bench review_cycle
//! ```
//!
//! The document is seed 000 (`../shared/seeds/000_*.txt`) when present,
//! else a generated document of the same size. The bench builds the
//! reviewer plugins (release) next to the `koas` binary it times.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const RUNS: usize = 5;
const OPS: usize = 1000;
const TARGET: Duration = Duration::from_secs(1);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."))
}

/// Builds the reviewer plugins next to the `koas` binary under test.
fn build_plugins(bin: &Path) -> Result<(), String> {
    let profile = bin.parent().ok_or("koas has no folder")?;
    let target = profile.parent().ok_or("no target folder")?;
    let text =
        std::fs::read_to_string(repo().join("configs/reviewer.toml")).map_err(|e| e.to_string())?;
    let pipeline: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    let kernels = pipeline
        .get("kernels")
        .and_then(|k| k.as_array())
        .ok_or("configs/reviewer.toml has no kernels")?;
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(repo())
        .args(["build", "--offline", "-q", "--release", "--target-dir"])
        .arg(target);
    for k in kernels {
        let name = k.as_str().ok_or("kernel name is not a string")?;
        cmd.args(["-p", &format!("koas-kernel-{}", name.replace('_', "-"))]);
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(())
}

fn document() -> (String, &'static str) {
    let seeds = repo().join("../shared/seeds");
    let found = std::fs::read_dir(&seeds).ok().and_then(|d| {
        d.filter_map(Result::ok).map(|e| e.path()).find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("000_"))
        })
    });
    if let Some(text) = found.and_then(|p| std::fs::read_to_string(p).ok()) {
        return (text, "seed 000");
    }
    let mut text = String::new();
    for i in 0..1600 {
        if i % 9 == 0 {
            text.push_str(&format!("## Section {i}\n"));
        } else if i % 9 == 8 {
            text.push('\n');
        } else {
            text.push_str(&format!(
                "Line {i} of the generated document, with some words to edit.\n"
            ));
        }
    }
    (text, "a generated 1,600-line document (../shared absent)")
}

/// 1,000 ops on distinct lines: partial and whole-line replaces, inserts,
/// deletes and flags, spread over the document (pseudo-random, fixed).
fn thousand_ops(text: &str) -> Vec<Value> {
    let lines: Vec<&str> = text.lines().collect();
    let mut order: Vec<usize> = (1..=lines.len()).collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in (1..order.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % (i as u64 + 1)) as usize);
    }
    order.truncate(OPS.min(lines.len()));
    order.sort_unstable();
    order
        .iter()
        .enumerate()
        .map(|(k, &line)| {
            let content = lines[line - 1];
            let word = content
                .split_whitespace()
                .find(|w| w.len() > 3 && content.matches(*w).count() == 1);
            match (k % 5, word) {
                (0, Some(w)) => json!({"action": "replace", "kind": "typo", "target": {"line_start": line},
                                        "before_text": w, "after_text": format!("{w}·")}),
                (0 | 1, _) => json!({"action": "replace", "kind": "style", "target": {"line_start": line},
                                      "after_text": format!("Rewritten line {k}."), "rationale": "bench"}),
                (2, _) => json!({"action": "insert", "kind": "clarity", "target": {"line_start": line, "line_end": line},
                                 "after_text": format!("Inserted line {k}."), "rationale": "bench"}),
                (3, _) => json!({"action": "delete", "target": {"line_start": line}, "rationale": "bench"}),
                _ => json!({"action": "flag_only", "target": {"line_start": line}, "rationale": "bench"}),
            }
        })
        .collect()
}

fn run(bin: &Path, dir: &Path, args: &[&str]) -> Result<(Duration, String), String> {
    let start = Instant::now();
    let out = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .env_remove("KOAS_KERNEL_PATH")
        .output()
        .map_err(|e| e.to_string())?;
    let elapsed = start.elapsed();
    if !out.status.success() {
        return Err(format!(
            "koas {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok((elapsed, String::from_utf8_lossy(&out.stdout).into_owned()))
}

fn main() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_koas"));
    if let Err(e) = build_plugins(&bin) {
        println!("skipped: cannot build the reviewer plugins offline: {e}");
        return;
    }
    let (text, what) = document();
    let ops = Value::Array(thousand_ops(&text));
    let mut reviews = Vec::new();
    let mut reverts = Vec::new();
    let mut totals = Vec::new();
    let mut applied = String::new();
    // Workspaces are removed only at the end: deleting thousands of patch
    // files right before a run makes ext4 slower to allocate new inodes,
    // which would be measured as koas's time.
    let root = std::env::temp_dir().join(format!("koas-review-bench-{}", std::process::id()));
    for i in 0..RUNS {
        let dir = root.join(i.to_string());
        if let Err(e) = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join("doc.md"), &text))
            .and_then(|()| std::fs::write(dir.join("ops.json"), ops.to_string()))
        {
            println!("skipped: {e}");
            return;
        }
        let review = run(
            &bin,
            &dir,
            &[
                "-q", "review", "doc.md", "--ops", "ops.json", "-w", "ws", "--json",
            ],
        );
        let revert = review
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|_| run(&bin, &dir, &["-q", "revert", "doc.md", "--all", "-w", "ws"]));
        let ((review, summary), (revert, _)) = match (review, revert) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => panic!("{e}"),
        };
        let restored =
            std::fs::read_to_string(dir.join("ws/stage3/doc.edited.md")).unwrap_or_default();
        assert!(
            restored == text,
            "revert --all did not give back the original"
        );
        if applied.is_empty() {
            let v: Value = serde_json::from_str(&summary).unwrap_or_default();
            applied = format!(
                "{} changes, {} flags, {} rejected",
                v["total_changes"], v["flags"], v["rejected"]
            );
        }
        reviews.push(review);
        reverts.push(revert);
        totals.push(review + revert);
    }
    let _ = std::fs::remove_dir_all(&root);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let stats = |v: &mut Vec<Duration>| {
        v.sort();
        (ms(v[0]), ms(v[v.len() / 2]), ms(v[v.len() - 1]))
    };
    let (rmin, rmed, rmax) = stats(&mut reviews);
    let (vmin, vmed, vmax) = stats(&mut reverts);
    let (tmin, tmed, tmax) = stats(&mut totals);
    println!("review cycle on {what}, {OPS} ops ({applied}), {RUNS} runs, fresh workspace each:");
    println!("  koas review --ops : min {rmin:.0} / median {rmed:.0} / max {rmax:.0} ms");
    println!("  koas revert --all : min {vmin:.0} / median {vmed:.0} / max {vmax:.0} ms");
    println!(
        "  both              : min {tmin:.0} / median {tmed:.0} / max {tmax:.0} ms; target {:.0} ms: {}",
        ms(TARGET),
        if tmax < ms(TARGET) { "met" } else if tmed < ms(TARGET) { "met (median)" } else { "MISSED" }
    );
}
