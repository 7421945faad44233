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
//! The document and the ops are `koas_test_support::bench_document` (the
//! seed document `../shared/seeds/000_*.txt` when the shared corpus is
//! present, else a generated document of the same size) and `bench_ops`,
//! the workload of the in-memory and on-disk `apply_revert` bench of
//! koas-review-workspace too. The bench times the `koas` binary
//! `koas_test_support::koas_bin` builds (in the bench's profile, with the
//! reviewer plugins next to it).

use koas_test_support::{bench_document, bench_ops, koas_bin};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const RUNS: usize = 5;
const OPS: usize = 1000;
const TARGET: Duration = Duration::from_secs(1);

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
    let bin = koas_bin();
    let (text, what) = bench_document();
    let ops = Value::Array(bench_ops(&text, OPS));
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
            bin,
            &dir,
            &[
                "-q", "review", "doc.md", "--ops", "ops.json", "-w", "ws", "--json",
            ],
        );
        let revert = review
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|_| run(bin, &dir, &["-q", "revert", "doc.md", "--all", "-w", "ws"]));
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
