//! The LLM stage against scripted OpenAI-compatible servers with a fixed
//! number of slots (extra requests queue at the server, as llama-server's
//! do): the whole `koas` process, its model phase (first request in to
//! last answer out, from the servers' own request logs) against the ideal
//! (the servers' busy time divided by their slots).
//!
//! ```text
//! cargo bench -p koas --bench llm_stage
//! ```
//!
//! 1. seed 000, one endpoint, 500 ms an answer, 1, 4 and 16 slots;
//! 2. the same at 16 slots with each answer taking 100 ms to 2 s (drawn
//!    from the prompt's hash: the same request always takes as long);
//! 3. two endpoints of 8 slots against one of 8, 500 ms: throughput;
//! 4. 20 documents (the shared corpus, the examples, the seeds and some of
//!    the repository's docs) in one `koas review DIR` against 20 separate
//!    `koas review DOC`, one endpoint of 8 slots, 200 ms: wall time;
//! 5. seed 000 with its summaries (the pyramid and the plan share the
//!    slots), 4 slots, 500 ms and 100 ms-2 s answers.
//!
//! `LLM_STAGE_PARTS=5` runs the fifth part only (any digits: those parts).
//!
//! The model answers empty plans and one-sentence summaries. Each run uses
//! a fresh folder (no reuse). Needs `../shared` (prints SKIPPED otherwise).

use koas_test_support::model::{ModelAnswer, ModelOptions, ModelRequest, ScriptedModel};
use koas_test_support::{koas_bin, shared_dir};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn answer(r: &ModelRequest, delay: Duration) -> ModelAnswer {
    if r.prompt.contains("BEGIN_EDIT_OPS") {
        ModelAnswer::after(delay, "BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS")
    } else {
        ModelAnswer::after(delay, "The section describes how the system works.")
    }
}

/// 100 ms to 2 s, fixed by the prompt (FNV-1a of its bytes).
fn rambling(r: &ModelRequest) -> Duration {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in r.prompt.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
    }
    Duration::from_millis(100 + h % 1901)
}

fn server(
    slots: usize,
    delay: impl Fn(&ModelRequest) -> Duration + Send + Sync + 'static,
) -> ScriptedModel {
    ScriptedModel::start_with(
        ModelOptions {
            slots: Some(slots),
            ..ModelOptions::default()
        },
        move |r| answer(r, delay(r)),
    )
}

/// The makespan of the servers' own requests, each taking as long as it
/// did, sent in the order they arrived to the first free slot with no gap
/// at all: what a client with no overhead would get in that order. The
/// rest of the gap to the ideal is the order (a long answer sent last),
/// not the client.
fn no_gap(server: &ScriptedModel, slots: usize) -> f64 {
    let mut timeline = server.timeline();
    timeline.sort_by_key(|t| t.arrival);
    let mut free = vec![0.0f64; slots.max(1)];
    for t in timeline {
        let (Some(start), Some(end)) = (t.start, t.end) else {
            continue;
        };
        let took = (end - start).as_secs_f64();
        let slot = free
            .iter_mut()
            .min_by(|a, b| a.total_cmp(b))
            .expect("a slot");
        *slot += took;
    }
    free.into_iter().fold(0.0, f64::max)
}

/// (requests, model phase, busy time) over the servers' logs.
fn phase(servers: &[&ScriptedModel]) -> (usize, f64, f64) {
    let spans: Vec<(Duration, Duration)> = servers
        .iter()
        .flat_map(|s| s.timeline())
        .filter_map(|t| Some((t.start?, t.end?)))
        .collect();
    let first = servers
        .iter()
        .flat_map(|s| s.timeline())
        .map(|t| t.arrival)
        .min()
        .unwrap_or_default();
    let last = spans.iter().map(|s| s.1).max().unwrap_or_default();
    let busy: f64 = spans.iter().map(|(a, b)| (*b - *a).as_secs_f64()).sum();
    (spans.len(), (last - first).as_secs_f64(), busy)
}

fn review(
    dir: &Path,
    targets: &[&str],
    endpoints: &[&ScriptedModel],
    slots: usize,
    extra: &[&str],
) -> f64 {
    let mut cmd = Command::new(koas_bin());
    cmd.args(["-q", "review"]).args(targets).args(extra);
    cmd.args(["--llm-backend", "openai", "--llm-model", "scripted"]);
    for e in endpoints {
        cmd.args(["--llm-endpoint", &e.url()]);
    }
    cmd.args(["--llm-max-in-flight", &slots.to_string()]);
    let start = Instant::now();
    let out = cmd
        .current_dir(dir)
        .env_remove("KOAS_KERNEL_PATH")
        .output()
        .expect("koas runs");
    if !out.status.success() && out.status.code() != Some(1) {
        eprintln!(
            "koas review failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::process::exit(1);
    }
    start.elapsed().as_secs_f64()
}

fn main() {
    let Some(shared) = shared_dir("llm_stage") else {
        return;
    };
    let Some(seed) = koas_test_support::shared_seed_000() else {
        eprintln!("SKIPPED: llm_stage: no seed 000 in {}", shared.display());
        return;
    };
    let text = std::fs::read_to_string(&seed).expect("the seed reads");
    let fixed = |_: &ModelRequest| Duration::from_millis(500);

    let parts = std::env::var("LLM_STAGE_PARTS").unwrap_or_else(|_| "12345".to_owned());
    let mut cases: Vec<(&str, usize, bool)> = Vec::new();
    if parts.contains('1') {
        cases.extend([
            ("500 ms", 1, false),
            ("500 ms", 4, false),
            ("500 ms", 16, false),
        ]);
    }
    if parts.contains('2') {
        cases.push(("100 ms-2 s (rambling)", 16, true));
    }
    if !cases.is_empty() {
        println!(
            "1-2. seed 000 ({} bytes), --skip-pyramid, one endpoint",
            text.len()
        );
        table_header();
    }
    for (label, slots, ramble) in cases {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("seed.md"), &text).expect("write");
        let s = if ramble {
            server(slots, rambling)
        } else {
            server(slots, fixed)
        };
        review(dir.path(), &["seed.md"], &[&s], slots, &["--skip-pyramid"]);
        table_row(label, slots, &s);
    }

    if parts.contains('3') {
        two_endpoints(&text);
    }
    if parts.contains('4') {
        twenty_documents(&shared);
    }
    if parts.contains('5') {
        with_summaries(&text);
    }
}

/// The columns of parts 1, 2 and 5.
fn table_header() {
    println!(
        "{:>24} {:>5} {:>8} {:>10} {:>10} {:>11} {:>11} {:>12}",
        "answers",
        "slots",
        "requests",
        "model (s)",
        "ideal (s)",
        "model/ideal",
        "no gap (s)",
        "model/no gap"
    );
}

/// One row of that table: `s`'s requests, model phase, ideal and no gap.
fn table_row(label: &str, slots: usize, s: &ScriptedModel) {
    let (requests, model, busy) = phase(&[s]);
    let ideal = busy / slots as f64;
    let gapless = no_gap(s, slots);
    println!(
        "{label:>24} {slots:>5} {requests:>8} {model:>10.2} {ideal:>10.2} {:>11.3} {gapless:>11.2} {:>12.3}",
        model / ideal,
        model / gapless
    );
}

/// Part 5: the whole review, summaries included, on 4 slots: what the
/// pyramid and the plan sharing the slots leaves of the gap to the ideal.
fn with_summaries(text: &str) {
    println!("\n5. seed 000 with its summaries, one endpoint of 4 slots");
    table_header();
    let fixed = |_: &ModelRequest| Duration::from_millis(500);
    for ramble in [false, true] {
        let slots = 4;
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("seed.md"), text).expect("write");
        let (s, label) = if ramble {
            (server(slots, rambling), "100 ms-2 s (rambling)")
        } else {
            (server(slots, fixed), "500 ms")
        };
        review(dir.path(), &["seed.md"], &[&s], slots, &[]);
        table_row(label, slots, &s);
    }
}

/// Part 3: throughput of two endpoints against one.
fn two_endpoints(text: &str) {
    let fixed = |_: &ModelRequest| Duration::from_millis(500);
    println!("\n3. seed 000, --skip-pyramid, 500 ms: two endpoints of 8 slots against one of 8");
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("seed.md"), text).expect("write");
    let one = server(8, fixed);
    review(dir.path(), &["seed.md"], &[&one], 8, &["--skip-pyramid"]);
    let (r1, m1, _) = phase(&[&one]);
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("seed.md"), text).expect("write");
    let (a, b) = (server(8, fixed), server(8, fixed));
    review(dir.path(), &["seed.md"], &[&a, &b], 8, &["--skip-pyramid"]);
    let (r2, m2, _) = phase(&[&a, &b]);
    let (t1, t2) = (r1 as f64 / m1, r2 as f64 / m2);
    println!(
        "one endpoint: {r1} requests in {m1:.2} s ({t1:.2}/s); two: {r2} in {m2:.2} s ({t2:.2}/s, {} + {}); throughput ×{:.2}",
        a.answered(),
        b.answered(),
        t2 / t1
    );
}

/// Part 4: one command over 20 documents against 20 commands.
fn twenty_documents(shared: &Path) {
    println!("\n4. 20 documents, one endpoint of 8 slots, 200 ms, pyramid included");
    let docs = twenty(shared);
    let bytes: u64 = docs
        .iter()
        .filter_map(|d| std::fs::metadata(d).ok())
        .map(|m| m.len())
        .sum();
    let short = |_: &ModelRequest| Duration::from_millis(200);
    let dir = tempfile::tempdir().expect("tmp");
    let names = copy_docs(&docs, &dir.path().join("docs"));
    let set = server(8, short);
    let together = review(dir.path(), &["docs", "--jobs", "4"], &[&set], 8, &[]);
    let (rs, ms, bs) = phase(&[&set]);
    let dir = tempfile::tempdir().expect("tmp");
    copy_docs(&docs, &dir.path().join("docs"));
    let each = server(8, short);
    let mut apart = 0.0;
    for name in &names {
        apart += review(dir.path(), &[&format!("docs/{name}")], &[&each], 8, &[]);
    }
    let (re, me, be) = phase(&[&each]);
    println!("{} documents, {} bytes", names.len(), bytes);
    println!("one `koas review docs`: {together:.1} s wall, {rs} requests, model phase {ms:.1} s (ideal {:.1} s)", bs / 8.0);
    println!("20 runs in a row:       {apart:.1} s wall, {re} requests, model phase {me:.1} s (ideal {:.1} s)", be / 8.0);
    println!(
        "wall-time ratio (one command / 20 runs): {:.2}",
        together / apart
    );
}

/// The shared corpus's documents, the examples, the seeds, then the
/// repository's docs, up to 20.
fn twenty(shared: &Path) -> Vec<PathBuf> {
    let mut docs = Vec::new();
    let root = koas_test_support::repo_root();
    for dir in [
        shared.join("corpus/real"),
        shared.join("corpus/planted"),
        root.join("examples"),
        shared.join("seeds"),
        root.join("docs"),
    ] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "md" || e == "txt"))
            .collect();
        files.sort();
        docs.extend(files);
    }
    docs.truncate(20);
    docs
}

fn copy_docs(docs: &[PathBuf], to: &Path) -> Vec<String> {
    std::fs::create_dir_all(to).expect("docs folder");
    docs.iter()
        .enumerate()
        .map(|(i, d)| {
            let stem = d.file_stem().and_then(|s| s.to_str()).unwrap_or("doc");
            let name = format!("{i:02}_{stem}.md");
            std::fs::copy(d, to.join(&name)).expect("copy");
            name
        })
        .collect()
}
