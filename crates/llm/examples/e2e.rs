//! End-to-end check of the LLM host service against a real local server.
//!
//! ```text
//! cargo run -p koas-llm --example e2e -- --endpoint http://127.0.0.1:8081 --model smollm2-135m \
//!     [--backend openai|ollama] [--workspace DIR] [--doc FILE.md]
//! ```
//!
//! Steps: ping (list models) → calibrate (3 × temperature 0) → one
//! request per paragraph of the document, submitted together, each answer
//! read by the canonicalizer (one JSON object) → the same requests again
//! (must all come from the response cache) → replay from the exchange log
//! with the network endpoint replaced by a dead port (must give identical
//! texts).
//! Exits non-zero when an invariant fails; a calibration drift is reported
//! but is not fatal unless `--require-calibration` is given.

use koas_extract::{extract_json_block, normalize_text};
use koas_kernel_api::LlmRequest;
use koas_llm::{auto_progress, calibrate, ping, LlmConfig, LlmService, Prompts, ReplaySource};
use std::path::PathBuf;
use std::process::ExitCode;

struct Args {
    endpoint: String,
    model: String,
    backend: String,
    workspace: Option<PathBuf>,
    doc: PathBuf,
    require_calibration: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        endpoint: "http://127.0.0.1:8081".into(),
        model: "smollm2-135m".into(),
        backend: "openai".into(),
        workspace: None,
        doc: PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/sample.md"
        )),
        require_calibration: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--endpoint" => args.endpoint = value()?,
            "--model" => args.model = value()?,
            "--backend" => args.backend = value()?,
            "--workspace" => args.workspace = Some(PathBuf::from(value()?)),
            "--doc" => args.doc = PathBuf::from(value()?),
            "--require-calibration" => args.require_calibration = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("e2e: {e}");
            ExitCode::from(2)
        }
    }
}

fn paragraphs(doc: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut line = 1;
    for para in doc.split("\n\n") {
        let first = line;
        line += para.lines().count() + 1;
        if !para.trim().is_empty() && !para.trim_start().starts_with('#') {
            let numbered: Vec<String> = para
                .lines()
                .enumerate()
                .map(|(i, l)| format!("{}: {l}", first + i))
                .collect();
            out.push((first, numbered.join("\n")));
        }
    }
    out
}

fn run() -> Result<bool, String> {
    let args = parse_args()?;
    let mut ok = true;
    let config = LlmConfig::from_json(serde_json::json!({
        "backend": args.backend,
        "endpoint": args.endpoint,
        "model": args.model,
        "timeout_secs": 120,
        "max_tokens": 256,
        "context_window": 4096,
        "max_in_flight": 2,
        "empty_retry_wait_ms": [200, 500],
    }))
    .map_err(|e| e.to_string())?;
    let workspace = match args.workspace {
        Some(w) => w,
        None => std::env::temp_dir().join(format!("koas-e2e-llm-{}", std::process::id())),
    };
    std::fs::create_dir_all(&workspace).map_err(|e| e.to_string())?;
    println!("workspace: {}", workspace.display());

    let report = ping(&config).map_err(|e| e.to_string())?;
    println!(
        "ping: {} answered in {} ms; models: {:?}",
        report.endpoint, report.latency_ms, report.models
    );
    if !report.models.contains(&args.model) {
        println!("ping: WARNING the server does not list {}", args.model);
    }

    let service = LlmService::builder(config.clone(), &workspace)
        .progress(auto_progress())
        .build()
        .map_err(|e| e.to_string())?;
    let calibration = calibrate(&service).map_err(|e| e.to_string())?;
    println!("calibrate: {}", calibration.verdict);
    for (i, run) in calibration.runs.iter().enumerate() {
        println!(
            "  run {}: {} {}",
            i + 1,
            run.status,
            run.canonical_hash.as_deref().unwrap_or("-")
        );
    }
    if args.require_calibration && !calibration.passed {
        ok = false;
    }

    let requests = paragraph_requests(&args.doc)?;
    let live = service.complete_many(&requests);
    let (texts, answered) = print_answers(&live);
    ok &= answered;

    let before = service.session_metadata().calls.backend;
    let again = service.complete_many(&requests);
    let after = service.session_metadata().calls.backend;
    let cached = again
        .iter()
        .filter(|r| r.as_ref().is_ok_and(|r| r.cached))
        .count();
    println!(
        "cache: re-run made {} backend calls; {cached}/{} answers from the cache",
        after - before,
        requests.len()
    );
    if after != before || cached != requests.len() {
        println!("cache: FAIL an unchanged re-run must make zero calls");
        ok = false;
    }

    let metadata = service.session_metadata();
    println!(
        "metadata: {}",
        serde_json::to_string_pretty(&metadata).map_err(|e| e.to_string())?
    );
    drop(service);

    let source = ReplaySource::from_exchange_log_session(
        &workspace.join(koas_llm::EXCHANGE_LOG),
        &metadata.session_id,
    )
    .map_err(|e| e.to_string())?;
    let mut offline = config;
    offline.endpoint = Some("http://127.0.0.1:9".into());
    let replay = LlmService::replay(offline, &workspace, source).map_err(|e| e.to_string())?;
    ok &= replay_identical(&replay.complete_many(&requests), &texts);
    println!("verdict: {}", if ok { "PASS" } else { "FAIL" });
    Ok(ok)
}

/// One request per paragraph of the document at `path`.
fn paragraph_requests(path: &std::path::Path) -> Result<Vec<LlmRequest>, String> {
    let doc = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let prompts = Prompts::locate(None);
    let system = prompts
        .load("e2e_paragraph_system")
        .and_then(|t| t.render(&serde_json::json!({})))
        .map_err(|e| e.to_string())?;
    let user = prompts.load("e2e_paragraph").map_err(|e| e.to_string())?;
    let mut requests: Vec<LlmRequest> = Vec::new();
    for (_, text) in paragraphs(&doc) {
        let prompt = user
            .render(&serde_json::json!({ "numbered_lines": text }))
            .map_err(|e| e.to_string())?;
        requests.push(
            LlmRequest::new("edit", prompt)
                .system(&system)
                .stop_marker("END_ANSWER"),
        );
    }
    Ok(requests)
}

/// Prints each answer and how the canonicalizer read it: the answers'
/// texts, and whether every request was answered.
fn print_answers(
    live: &[Result<koas_kernel_api::LlmResponse, koas_llm::LlmError>],
) -> (Vec<String>, bool) {
    let mut ok = true;
    let mut texts = Vec::new();
    for (i, result) in live.iter().enumerate() {
        match result {
            Ok(r) => {
                let read = match extract_json_block(&normalize_text(&r.text)) {
                    Ok(block) => format!("one object {}", block.hash),
                    Err(rejection) => rejection.code().to_string(),
                };
                println!(
                    "paragraph {}: {read} ({} + {} tokens{}{}), answer: {:?}",
                    i + 1,
                    r.prompt_tokens,
                    r.completion_tokens,
                    if r.tokens_estimated {
                        ", estimated"
                    } else {
                        ""
                    },
                    if r.stopped_at_marker {
                        ", stopped at marker"
                    } else {
                        ""
                    },
                    r.text.chars().take(160).collect::<String>()
                );
                texts.push(r.text.clone());
            }
            Err(e) => {
                println!("paragraph {}: ERROR {e}", i + 1);
                ok = false;
                texts.push(String::new());
            }
        }
    }
    (texts, ok)
}

/// Prints how the replayed answers compare with the live `texts`:
/// whether all are identical.
fn replay_identical(
    replayed: &[Result<koas_kernel_api::LlmResponse, koas_llm::LlmError>],
    texts: &[String],
) -> bool {
    let mut identical = 0;
    for (i, (r, text)) in replayed.iter().zip(texts).enumerate() {
        match r {
            Ok(r) if r.text == *text => identical += 1,
            Ok(_) => println!("replay: paragraph {} differs", i + 1),
            Err(e) => println!("replay: paragraph {}: {e}", i + 1),
        }
    }
    println!(
        "replay: {identical}/{} answers identical, no network",
        texts.len()
    );
    identical == texts.len()
}
