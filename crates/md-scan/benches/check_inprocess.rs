//! Where the time of `koas check` goes, in-process: Stage 1 alone, then
//! Stage 1 + both Stage 2 checks, on seed 000 and on 100,000 lines.

#[path = "support/docs.rs"]
mod bench_docs;

use criterion::{criterion_group, criterion_main, Criterion};
use koas_md_scan::config::ProjectConfig;
use koas_md_scan::stage1::Stage1Artifacts;
use koas_md_scan::{check_document, chunk_fingerprints};

fn bench(c: &mut Criterion) {
    let (name, small) = bench_docs::small();
    let large = bench_docs::large(100_000);
    let config = ProjectConfig::default();
    let mut group = c.benchmark_group("check");
    group.sample_size(10);
    for (label, text) in [(name.as_str(), &small), ("100k lines", &large)] {
        group.bench_function(format!("stage1/{label}"), |b| {
            b.iter(|| Stage1Artifacts::compute(text))
        });
        group.bench_function(format!("stage1+stage2/{label}"), |b| {
            b.iter(|| check_document(text, &config).map(|o| o.findings.len()))
        });
        let s1 = Stage1Artifacts::compute(text);
        group.bench_function(format!("fingerprints/{label}"), |b| {
            b.iter(|| chunk_fingerprints(s1.view(text), &config.fingerprint).map(|f| f.chunk_count))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
