//! Benchmark: does the host keep `max_in_flight` requests busy?
//!
//! A loopback OpenAI-compatible server answers every request after a fixed
//! delay. 200 requests are submitted at once through
//! `LlmService::complete_many`; with concurrency N they should finish in
//! about (200 / N) × delay. Run with `cargo bench -p koas-llm --bench
//! in_flight`; `KOAS_BENCH_DELAY_MS` and `KOAS_BENCH_REQUESTS` override the
//! defaults (25 ms, 200).

#[path = "../tests/it/support/mod.rs"]
mod support;

use koas_kernel_api::LlmRequest;
use koas_llm::LlmService;
use std::time::{Duration, Instant};
use support::{MockServer, Proto};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let delay = Duration::from_millis(env_u64("KOAS_BENCH_DELAY_MS", 25));
    let total = env_u64("KOAS_BENCH_REQUESTS", 200) as usize;
    println!(
        "{total} requests, server delay {} ms, loopback OpenAI-compatible server",
        delay.as_millis()
    );
    println!(
        "{:>11} {:>12} {:>12} {:>7} {:>9}",
        "concurrency", "expected_s", "measured_s", "ratio", "peak"
    );
    for n in [1usize, 2, 4, 8, 16] {
        let server = MockServer::start(
            vec![],
            Some(Proto::Openai.full("ok", Some((10, 1))).delayed(delay)),
        );
        let ws = tempfile::tempdir().expect("tempdir");
        let mut config = Proto::Openai.config(&server.url());
        config.stream = false;
        config.max_in_flight = n;
        config.timeout_secs = 30.0;
        config.budget_per_run = 0;
        let service = LlmService::builder(config, ws.path())
            .cache_dir(None)
            .build()
            .expect("service");
        let requests: Vec<LlmRequest> = (0..total)
            .map(|i| LlmRequest::new("edit", format!("part {i}")))
            .collect();
        let started = Instant::now();
        let results = service.complete_many(&requests);
        let measured = started.elapsed().as_secs_f64();
        let failed = results.iter().filter(|r| r.is_err()).count();
        assert_eq!(failed, 0, "all requests succeed");
        let expected = total as f64 / n as f64 * delay.as_secs_f64();
        println!(
            "{n:>11} {expected:>12.3} {measured:>12.3} {:>7.2} {:>9}",
            measured / expected,
            server.peak_in_flight()
        );
    }
}
