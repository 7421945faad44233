//! Scale of the review commands as whole processes, on inputs built to
//! expose superlinear costs. Each workload is generated here (nothing
//! large is committed) and timed from outside, like a user sees it; peak
//! memory is read with `/usr/bin/time` when it is installed.
//!
//! ```text
//! cargo bench -p koas --bench review_scale              # every workload
//! cargo bench -p koas --bench review_scale -- inline    # those whose name contains "inline"
//! KOAS_BENCH_RUNS=1 cargo bench -p koas --bench review_scale
//! KOAS_BENCH_BIN=/tmp/old/koas cargo bench -p koas --bench review_scale   # another build
//! ```
//!
//! | workload | what is timed | goal |
//! |---|---|---|
//! | `inline-spans` | `koas review` of one 750 KB line holding 37,500 inline code spans | < 2 s |
//! | `ledger-history` | after 8 cycles of `review` (1,000 ops) + `revert --all`: the 9th `review` and `revert --all` | the cost of this command's 1,000 ops, not of the history |
//! | `flags-100k` | `koas review --ops` with 100,000 flag ops, then `koas report` | < 10 s, < 1 GB each |
//! | `headings-100k` | `koas review` of a 100,000-heading document next to `koas check` of it | within 3× of check |

use koas_test_support::{bench_document, bench_ops, koas_bin};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// One finished command: wall time and, when measured, peak memory and
/// CPU time (user + system: on a shared machine the wall time is mostly
/// waiting, the CPU time is the command's own cost).
#[derive(Clone, Copy)]
struct Measure {
    wall: Duration,
    peak_kib: Option<u64>,
    cpu_secs: Option<f64>,
}

fn runs() -> usize {
    std::env::var("KOAS_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(3)
}

/// The `koas` to time: `KOAS_BENCH_BIN` (a copy of another build, with
/// its plugins next to it, to compare two versions), else the one
/// `koas_test_support::koas_bin` builds.
fn bin() -> PathBuf {
    std::env::var_os("KOAS_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| koas_bin().to_path_buf())
}

/// Runs `koas ARGS` in `dir`; panics with its stderr when it fails.
fn koas(dir: &Path, args: &[&str]) -> Measure {
    let bin = bin();
    let time = Path::new("/usr/bin/time");
    let peak_file = dir.join(".peak");
    let mut cmd = if time.is_file() {
        let mut c = Command::new(time);
        c.arg("-f")
            .arg("%M %U %S")
            .arg("-o")
            .arg(&peak_file)
            .arg(&bin);
        c
    } else {
        Command::new(&bin)
    };
    cmd.args(args)
        .current_dir(dir)
        .env_remove("KOAS_KERNEL_PATH")
        .env_remove("KOAS_WORKSPACE")
        .env_remove("KOAS_JOBS");
    let start = Instant::now();
    let out = cmd.output().expect("koas starts");
    let wall = start.elapsed();
    assert!(
        out.status.success(),
        "koas {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let figures: Vec<f64> = std::fs::read_to_string(&peak_file)
        .ok()
        .and_then(|t| t.lines().last().map(str::to_owned))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let _ = std::fs::remove_file(&peak_file);
    Measure {
        wall,
        peak_kib: figures.first().map(|&k| k as u64),
        cpu_secs: (figures.len() == 3).then(|| figures[1] + figures[2]),
    }
}

/// A fresh scratch folder under the system's temporary folder.
fn scratch(name: &str, run: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("koas-scale-{}-{name}-{run}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write input");
}

/// `min / median / max` of the runs, with the median's peak memory.
fn line(label: &str, mut measures: Vec<Measure>) {
    measures.sort_by_key(|m| m.wall);
    let s = |d: Duration| d.as_secs_f64();
    let median = measures[measures.len() / 2];
    let peak = measures
        .iter()
        .filter_map(|m| m.peak_kib)
        .max()
        .map_or("peak n/a".to_owned(), |k| {
            format!("peak {:.0} MB", k as f64 / 1024.0)
        });
    let cpu = median
        .cpu_secs
        .map_or(String::new(), |c| format!("  cpu {c:.2} s"));
    println!(
        "  {label:<34} median {:>7.2} s  (min {:.2}, max {:.2}, {} runs)  {peak}{cpu}",
        s(median.wall),
        s(measures[0].wall),
        s(measures[measures.len() - 1].wall),
        measures.len()
    );
}

/// One line of 37,500 inline code spans, about 750 KB.
fn inline_spans() {
    let mut text = String::from("# Inline spans\n\n");
    for i in 0..37_500 {
        text.push_str(&format!("`c{i:07}` and more "));
    }
    text.push('\n');
    println!(
        "inline-spans: one line of {} KB with 37,500 inline code spans",
        text.len() / 1000
    );
    let measures = (0..runs())
        .map(|run| {
            let dir = scratch("inline", run);
            write(&dir, "doc.md", &text);
            let m = koas(&dir, &["-q", "review", "doc.md", "-w", "ws"]);
            let _ = std::fs::remove_dir_all(&dir);
            m
        })
        .collect();
    line("koas review", measures);
}

/// 8 cycles of a 1,000-op review and `revert --all`, then a 9th of each.
fn ledger_history() {
    let (text, what) = bench_document();
    let ops = Value::Array(bench_ops(&text, 1000)).to_string();
    println!("ledger-history: {what}, 1,000 ops; 8 review + revert --all cycles first");
    let mut reviews = Vec::new();
    let mut reverts = Vec::new();
    let mut entries = 0;
    for run in 0..runs() {
        let dir = scratch("history", run);
        write(&dir, "doc.md", &text);
        write(&dir, "ops.json", &ops);
        let review = ["-q", "review", "doc.md", "--ops", "ops.json", "-w", "ws"];
        let revert = ["-q", "revert", "doc.md", "--all", "-w", "ws"];
        for _ in 0..8 {
            koas(&dir, &review);
            koas(&dir, &revert);
        }
        reviews.push(koas(&dir, &review));
        entries = std::fs::read_to_string(dir.join("ws/review/ledger.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0);
        reverts.push(koas(&dir, &revert));
        let restored = std::fs::read_to_string(dir.join("ws/stage3/doc.edited.md"));
        assert!(restored.is_ok_and(|r| r == text), "revert --all restores");
        let _ = std::fs::remove_dir_all(&dir);
    }
    line("9th koas review --ops", reviews);
    line(
        &format!("9th koas revert --all ({entries} entries)"),
        reverts,
    );
}

/// 100,000 flag ops on a 100,000-line document, then `koas report`.
fn flags_100k() {
    let mut text = String::from("# Flags\n\n");
    for i in 0..100_000 {
        text.push_str(&format!("Line {i} of prose to flag.\n"));
    }
    let ops: Vec<Value> = (0..100_000)
        .map(|i| {
            json!({"action": "flag_only", "target": {"line_start": i + 3}, "rationale": "check this"})
        })
        .collect();
    let ops = Value::Array(ops).to_string();
    println!("flags-100k: 100,000 flag_only ops on a 100,002-line document");
    let mut reviews = Vec::new();
    let mut reports = Vec::new();
    for run in 0..runs() {
        let dir = scratch("flags", run);
        write(&dir, "doc.md", &text);
        write(&dir, "ops.json", &ops);
        reviews.push(koas(
            &dir,
            &["-q", "review", "doc.md", "--ops", "ops.json", "-w", "ws"],
        ));
        reports.push(koas(&dir, &["-q", "report", "doc.md", "-w", "ws"]));
        let _ = std::fs::remove_dir_all(&dir);
    }
    line("koas review --ops", reviews);
    line("koas report", reports);
}

/// A 100,000-heading document: `koas review` next to `koas check`.
fn headings_100k() {
    let mut text = String::new();
    for i in 0..100_000 {
        text.push_str(&format!("## Heading {i}\n\nText.\n"));
    }
    println!(
        "headings-100k: 100,000 headings, {:.1} MB",
        text.len() as f64 / 1e6
    );
    let mut reviews = Vec::new();
    let mut checks = Vec::new();
    for run in 0..runs() {
        let dir = scratch("headings", run);
        write(&dir, "doc.md", &text);
        checks.push(koas(
            &dir,
            &["-q", "check", "doc.md", "--fail-on", "never", "--no-config"],
        ));
        reviews.push(koas(&dir, &["-q", "review", "doc.md", "-w", "ws"]));
        let _ = std::fs::remove_dir_all(&dir);
    }
    let ratio = {
        let median = |v: &mut Vec<Measure>| {
            v.sort_by_key(|m| m.wall);
            v[v.len() / 2].wall.as_secs_f64()
        };
        median(&mut reviews.clone()) / median(&mut checks.clone()).max(1e-9)
    };
    let cpu = |v: &[Measure]| {
        let mut c: Vec<f64> = v.iter().filter_map(|m| m.cpu_secs).collect();
        c.sort_by(f64::total_cmp);
        c.get(c.len() / 2).copied()
    };
    let cpu_ratio = match (cpu(&reviews), cpu(&checks)) {
        (Some(r), Some(c)) => format!(", CPU time {:.1}×", r / c.max(1e-9)),
        _ => String::new(),
    };
    line("koas check", checks);
    line("koas review", reviews);
    println!("  review / check (medians): wall {ratio:.1}×{cpu_ratio}");
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters workloads.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let workloads: [(&str, fn()); 4] = [
        ("inline-spans", inline_spans),
        ("ledger-history", ledger_history),
        ("flags-100k", flags_100k),
        ("headings-100k", headings_100k),
    ];
    for (name, run) in workloads {
        if filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())) {
            run();
        }
    }
}
