//! What the edit plan costs a small model: requests, prompt and answer
//! tokens and the model phase's time of `koas review --skip-pyramid`, with
//! a scripted model that behaves like SmolLM2-135M on a local server: it
//! reads the prompt (2 ms per prompt token), writes a complete "no
//! changes" answer (`BEGIN_EDIT_OPS` / `[]`) and then repeats `[]` at 40
//! tokens a second until the request's `max_tokens`, never writing
//! `END_EDIT_OPS`. Four requests at a time (`--llm-max-in-flight 4`).
//!
//! ```text
//! cargo bench -p koas --bench edit_plan_cost
//! KOAS_BENCH_BEFORE=/path/to/older/koas cargo bench -p koas --bench edit_plan_cost
//! ```
//!
//! With `KOAS_BENCH_BEFORE` the same runs are made with that binary first
//! (its kernels next to it), for a before/after table. Documents: the
//! bundled `examples/spec-example.md` and, when `../shared` is there, the
//! French audit of the corpus (`corpus/planted/audit_fr.md`).

use koas_test_support::{
    koas_bin, model_phase_ms, repo_root, request_span, shared_dir, ModelAnswer, ScriptedModel,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Time to read a prompt token.
const PROMPT_TOKEN: Duration = Duration::from_millis(2);
/// Time to write an answer token (40 tokens a second).
const ANSWER_TOKEN: Duration = Duration::from_millis(25);

struct Figures {
    requests: usize,
    prompt_tokens: u64,
    answer_tokens: u64,
    model_secs: f64,
    wall_secs: f64,
}

fn run(bin: &Path, doc: &Path) -> Figures {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::copy(doc, dir.path().join("doc.md")).expect("copy the document");
    let model = ScriptedModel::start(|r| {
        let prompt_tokens = (r.prompt.chars().count() as u32).div_ceil(4);
        ModelAnswer::Looping {
            text: "BEGIN_EDIT_OPS\n[]\n".to_owned(),
            repeat: "[]\n".to_owned(),
            every: ANSWER_TOKEN,
            think: PROMPT_TOKEN * prompt_tokens,
        }
    });
    let start = Instant::now();
    let out = Command::new(bin)
        .args(["-q", "review", "doc.md", "--skip-pyramid", "--json"])
        .args(["--llm-backend", "openai", "--llm-endpoint"])
        .arg(model.url())
        .args(["--llm-model", "scripted", "--llm-max-in-flight", "4"])
        .current_dir(dir.path())
        .env_remove("KOAS_KERNEL_PATH")
        .output()
        .expect("koas runs");
    let wall_secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        eprintln!(
            "{} review failed: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        std::process::exit(1);
    }
    let summary: Value = serde_json::from_slice(&out.stdout).expect("json summary");
    let ws = dir
        .path()
        .join(summary["workspace"].as_str().expect("workspace"));
    let log = std::fs::read_to_string(ws.join("llm/exchanges.jsonl")).expect("exchange log");
    let entries: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|e: &Value| e["source"] == "backend")
        .collect();
    let spans: Vec<(u64, u64)> = entries.iter().filter_map(request_span).collect();
    let sum = |key: &str| entries.iter().filter_map(|e| e[key].as_u64()).sum();
    Figures {
        requests: model.calls(),
        prompt_tokens: model
            .requests()
            .iter()
            .map(|r| (r.prompt.chars().count() as u64).div_ceil(4))
            .sum(),
        answer_tokens: sum("completion_tokens"),
        model_secs: model_phase_ms(&spans) as f64 / 1000.0,
        wall_secs,
    }
}

fn main() {
    let mut docs: Vec<PathBuf> = vec![repo_root().join("examples/spec-example.md")];
    if let Some(shared) = shared_dir("edit_plan_cost") {
        let audit = shared.join("corpus/planted/audit_fr.md");
        if audit.is_file() {
            docs.push(audit);
        }
    }
    let mut bins: Vec<(&str, PathBuf)> = Vec::new();
    if let Some(before) = std::env::var_os("KOAS_BENCH_BEFORE") {
        bins.push(("before", PathBuf::from(before)));
    }
    bins.push(("this build", koas_bin().to_path_buf()));
    println!(
        "edit_plan_cost: scripted small model ({} ms a prompt token, {} ms an answer token, loops on its answer to the cap), 4 in flight, --skip-pyramid",
        PROMPT_TOKEN.as_millis(),
        ANSWER_TOKEN.as_millis()
    );
    println!(
        "{:<18} {:<11} {:>8} {:>13} {:>13} {:>10} {:>9}",
        "document", "koas", "requests", "prompt tok", "answer tok", "model (s)", "wall (s)"
    );
    for doc in &docs {
        let name = doc.file_name().and_then(|n| n.to_str()).unwrap_or("doc");
        for (label, bin) in &bins {
            let f = run(bin, doc);
            println!(
                "{name:<18} {label:<11} {:>8} {:>13} {:>13} {:>10.1} {:>9.1}",
                f.requests, f.prompt_tokens, f.answer_tokens, f.model_secs, f.wall_secs
            );
        }
    }
}
