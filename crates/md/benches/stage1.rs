//! Stage 1 benchmark: time and peak heap memory of the four Stage 1
//! computations (inventory, structure, protected regions, chunk plan), in
//! process, on documents of 5,600 and 100,000 lines built by concatenating
//! the shared corpus (`../shared/corpus/real`), or the project's examples
//! when the corpus is absent, plus the 50 MB adversarial document.
//!
//! `cargo bench -p koas-md --bench stage1` (add `-- --quick` for fewer
//! iterations). "with JSON" adds serializing every artifact to JSON, as
//! the kernels hand them to the host.

// The counting allocator below must implement `GlobalAlloc`, an unsafe
// trait: it only forwards to the system allocator and adds up sizes.
#![allow(unsafe_code)]

use koas_md::stage1;
use koas_review_schema::stage1::ChunkConfig;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts live heap bytes and their high-water mark.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = CURRENT.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters are only statistics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The source documents: the shared corpus if present, else the examples.
fn sources() -> (String, Vec<String>) {
    let docs: Vec<String> = koas_test_support::shared_files("corpus/real", &["md"])
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    if docs.is_empty() {
        let docs = vec![
            include_str!("../../../examples/spec-example.md").to_string(),
            include_str!("../../../examples/audit-fr.md").to_string(),
        ];
        ("examples/*.md (shared corpus absent)".into(), docs)
    } else {
        ("../shared/corpus/real/*.md".into(), docs)
    }
}

/// Exactly `lines` lines, cycling through the documents.
fn build(docs: &[String], lines: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    'outer: loop {
        for d in docs {
            for l in d.lines() {
                out.push_str(l);
                out.push('\n');
                n += 1;
                if n == lines {
                    break 'outer;
                }
            }
        }
    }
    out
}

struct Measure {
    median: Duration,
    min: Duration,
    peak: usize,
}

fn measure(iterations: usize, mut f: impl FnMut()) -> Measure {
    f(); // warm up
    let mut times = Vec::with_capacity(iterations);
    let mut peak = 0;
    for _ in 0..iterations {
        let base = CURRENT.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let t = Instant::now();
        f();
        times.push(t.elapsed());
        peak = peak.max(PEAK.load(Ordering::Relaxed) - base);
    }
    times.sort();
    Measure {
        median: times[times.len() / 2],
        min: times[0],
        peak,
    }
}

fn mib(b: usize) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

fn report(name: &str, text: &str, iterations: usize) -> f64 {
    let lines = text.lines().count();
    let plain = measure(iterations, || {
        let s = stage1::run("bench.md", text, ChunkConfig::default()).expect("stage 1");
        std::hint::black_box(&s);
    });
    let json = measure(iterations, || {
        let s = stage1::run("bench.md", text, ChunkConfig::default()).expect("stage 1");
        let sizes = [
            serde_json::to_vec(&s.stats).map(|v| v.len()),
            serde_json::to_vec(&s.structure.tree).map(|v| v.len()),
            serde_json::to_vec(&s.structure.sections).map(|v| v.len()),
            serde_json::to_vec(&s.structure.anchors).map(|v| v.len()),
            serde_json::to_vec(&s.spans).map(|v| v.len()),
            serde_json::to_vec(&s.chunks).map(|v| v.len()),
        ];
        let total: usize = sizes
            .into_iter()
            .map(|r| r.expect("artifacts serialize"))
            .sum();
        std::hint::black_box(total);
    });
    let per_line_us = plain.median.as_secs_f64() * 1e6 / lines as f64;
    println!(
        "| {name} | {lines} | {:.2} | {:.2} ms (min {:.2}) | {:.2} ms | {per_line_us:.3} | {:.1} MiB | {:.1} MiB |",
        mib(text.len()),
        plain.median.as_secs_f64() * 1e3,
        plain.min.as_secs_f64() * 1e3,
        json.median.as_secs_f64() * 1e3,
        mib(plain.peak),
        mib(json.peak),
    );
    per_line_us
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (origin, docs) = sources();
    println!(
        "Stage 1 in-process (inventory + structure + protected + chunk), documents from {origin}"
    );
    println!();
    println!("| document | lines | MiB | Stage 1 median | with JSON | µs/line | peak heap | peak heap with JSON |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let small = build(&docs, 5_600);
    let large = build(&docs, 100_000);
    let a = report("5,600 lines", &small, if quick { 5 } else { 50 });
    let b = report("100,000 lines", &large, if quick { 2 } else { 10 });
    let spec = include_str!("../../../examples/spec-example.md");
    let huge = spec.repeat(50 * 1024 * 1024 / spec.len() + 1);
    let c = report(
        "50 MB (examples/spec-example.md repeated)",
        &huge,
        if quick { 1 } else { 3 },
    );
    println!();
    println!(
        "Growth: time per line is {:.2}x at 100,000 lines and {:.2}x at 50 MB relative to 5,600 lines (1.0 = linear).",
        b / a,
        c / a
    );
}
