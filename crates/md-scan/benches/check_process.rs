//! `koas check` as a whole process (start-up, read, Stage 1, Stage 2,
//! JSON output), timed from outside like a user or CI sees it. Nothing is
//! cached between runs (`koas check` keeps no cache); the first run of each
//! document is reported separately as the cold run.
//!
//! ```text
//! cargo build --release -p koas
//! cargo bench -p koas-md-scan --bench check_process
//! ```
//!
//! The binary is `$KOAS_BIN`, else `target/release/koas` of this
//! workspace's target directory (`$CARGO_TARGET_DIR` or `target/`).
//! Targets: under 50 ms on seed 000, under 1 s on 100,000 lines.

#[path = "support/docs.rs"]
mod bench_docs;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn koas_bin() -> PathBuf {
    if let Ok(p) = std::env::var("KOAS_BIN") {
        return PathBuf::from(p);
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("release/koas")
}

fn time_once(bin: &Path, doc: &Path) -> Duration {
    let start = Instant::now();
    let out = Command::new(bin)
        .args(["check", "-q", "--no-config", "--format", "json"])
        .arg(doc)
        .output();
    let elapsed = start.elapsed();
    match out {
        Ok(o) if matches!(o.status.code(), Some(0 | 1)) => elapsed,
        Ok(o) => panic!("koas check failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => panic!(
            "cannot run {}: {e} (build it with cargo build --release -p koas)",
            bin.display()
        ),
    }
}

fn report(name: &str, lines: usize, bin: &Path, doc: &Path, runs: usize, target: Duration) {
    let cold = time_once(bin, doc);
    let mut warm: Vec<Duration> = (0..runs).map(|_| time_once(bin, doc)).collect();
    warm.sort();
    let median = warm[warm.len() / 2];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name} ({lines} lines): cold {:.1} ms; {runs} runs min {:.1} / median {:.1} / max {:.1} ms; target {:.0} ms: {}",
        ms(cold),
        ms(warm[0]),
        ms(median),
        ms(warm[warm.len() - 1]),
        ms(target),
        if median < target && cold < target { "met" } else { "MISSED" }
    );
}

fn main() {
    let bin = koas_bin();
    if !bin.is_file() {
        println!(
            "skipped: {} is not built (cargo build --release -p koas, or set KOAS_BIN)",
            bin.display()
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("koas-check-bench-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        println!("skipped: cannot create {}", dir.display());
        return;
    }
    let (name, small) = bench_docs::small();
    let small_path = dir.join("small.md");
    let large_path = dir.join("large.md");
    let large = bench_docs::large(100_000);
    if std::fs::write(&small_path, &small).is_err() || std::fs::write(&large_path, &large).is_err()
    {
        println!("skipped: cannot write the documents");
        return;
    }
    report(
        &name,
        small.lines().count(),
        &bin,
        &small_path,
        30,
        Duration::from_millis(50),
    );
    report(
        "concatenated corpus",
        large.lines().count(),
        &bin,
        &large_path,
        5,
        Duration::from_secs(1),
    );
    let _ = std::fs::remove_dir_all(&dir);
}
