//! `koas review` of seed 000 (the project's main specification, read as a
//! Markdown document) with a scripted model that answers every edit-plan
//! request after 500 ms, at `max_in_flight` 1, 4 and 16, against the
//! ideal: requests × 500 ms / N. The pyramid is skipped
//! (`--skip-pyramid`), so every request the model sees is a chunk's.
//!
//! ```text
//! cargo bench -p koas --bench edit_plan_parallel
//! ```
//!
//! The model answers an empty plan, so a chunk costs one request. The
//! planner sends chunks in batches of `max(N, 8)` and a batch ends when
//! its slowest answer is in, so the second ideal column counts whole
//! rounds: the sum over batches of ceil(batch / N) × 500 ms. Each run
//! uses a fresh folder (no reuse). Needs `../shared` (prints SKIPPED
//! otherwise).

use koas_test_support::{
    koas_bin, model_phase_ms, request_span, shared_dir, ModelAnswer, ScriptedModel,
};
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

const DELAY: Duration = Duration::from_millis(500);

fn main() {
    let Some(shared) = shared_dir("edit_plan_parallel") else {
        return;
    };
    let seed = std::fs::read_dir(shared.join("seeds"))
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("000_") && n.ends_with(".txt"))
        });
    let Some(seed) = seed else {
        eprintln!(
            "SKIPPED: edit_plan_parallel: no seeds/000_*.txt in {}",
            shared.display()
        );
        return;
    };
    let text = std::fs::read_to_string(&seed).expect("the seed reads");
    let bin = koas_bin();
    println!(
        "edit_plan_parallel: {} ({} bytes), model answers after {} ms, --skip-pyramid",
        seed.display(),
        text.len(),
        DELAY.as_millis()
    );
    println!(
        "{:>4} {:>7} {:>8} {:>9} {:>10} {:>14} {:>16} {:>11} {:>8} {:>8} {:>5}",
        "N",
        "chunks",
        "requests",
        "wall (s)",
        "model (s)",
        "req×0.5/N (s)",
        "whole rounds (s)",
        "model/ideal",
        "idle (s)",
        "max lat",
        "peak"
    );
    for n in [1usize, 4, 16] {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("seed.md"), &text).expect("write");
        // A fresh model per run, so that its peak is this run's.
        let model =
            ScriptedModel::start(|_| ModelAnswer::after(DELAY, "BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS"));
        let start = Instant::now();
        let out = Command::new(bin)
            .args(["-q", "review", "seed.md", "--skip-pyramid", "--json"])
            .args(["--llm-backend", "openai", "--llm-endpoint"])
            .arg(model.url())
            .args([
                "--llm-model",
                "scripted",
                "--llm-max-in-flight",
                &n.to_string(),
            ])
            .current_dir(dir.path())
            .env_remove("KOAS_KERNEL_PATH")
            .output()
            .expect("koas runs");
        let wall = start.elapsed();
        if !out.status.success() {
            eprintln!(
                "koas review failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::process::exit(1);
        }
        let summary: Value = serde_json::from_slice(&out.stdout).expect("json summary");
        let ws = summary["workspace"].as_str().expect("workspace");
        let plan_path = dir.path().join(ws).join("stage2/edit_plan.json");
        let plan: Value =
            serde_json::from_slice(&std::fs::read(&plan_path).expect("edit_plan.json"))
                .expect("parses");
        let chunks = plan["chunks"].as_array().map_or(0, Vec::len);
        let requests = model.calls();
        assert_eq!(
            plan["stats"]["worker_calls"].as_u64(),
            Some(requests as u64),
            "every request is a chunk's"
        );
        let naive = DELAY.as_secs_f64() * requests as f64 / n as f64;
        let batch = n.max(8);
        let rounds: usize = (0..chunks)
            .step_by(batch)
            .map(|start| (chunks - start).min(batch).div_ceil(n))
            .sum();
        let whole = DELAY.as_secs_f64() * rounds as f64;
        let peak = model.peak_in_flight();
        // The model phase, from the exchange log: first request sent to
        // last answer in (the rest of the wall time is koas's own work).
        let log = std::fs::read_to_string(dir.path().join(ws).join("llm/exchanges.jsonl"))
            .expect("exchange log");
        let spans: Vec<(u64, u64)> = log
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|e| request_span(&e))
            .collect();
        let first = spans.iter().map(|s| s.0).min().unwrap_or(0);
        let model_secs = model_phase_ms(&spans) as f64 / 1000.0;
        let max_latency = spans.iter().map(|s| s.1 - s.0).max().unwrap_or(0);
        // Time in the model phase with no request in flight: koas's own
        // work between rounds.
        let mut sorted = spans.clone();
        sorted.sort_unstable();
        let mut idle_ms = 0;
        let mut covered = first;
        for (start, end) in sorted {
            idle_ms += start.saturating_sub(covered);
            covered = covered.max(end);
        }
        let idle = idle_ms as f64 / 1000.0;
        println!(
            "{n:>4} {chunks:>7} {requests:>8} {:>9.2} {model_secs:>10.2} {naive:>14.2} {whole:>16.2} {:>11.2} {idle:>8.2} {:>6}ms {peak:>5}",
            wall.as_secs_f64(),
            model_secs / naive,
            max_latency,
        );
    }
}
