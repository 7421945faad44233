//! Benchmark: apply 1,000 ops to a ~1,600-line document, then revert them
//! all. The document and the ops are `koas_test_support::bench_document`
//! (the seed document `../shared/seeds/000_*.txt` when the shared corpus is
//! present, else a generated document of the same size) and `bench_ops`,
//! the workload of the whole-process `review_cycle` bench too. Target:
//! under 1 s for the whole cycle.
//!
//! - `in_memory`: the engine alone (normalize, validate, apply, patches,
//!   ledger entries, bulk revert with conflict checks) — what a kernel does.
//! - `workspace_on_disk`: the same through the on-disk workspace (patch
//!   files, fsynced ledger, atomic document writes, annotated document).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use koas_edit::clock::SteppingClock;
use koas_edit::session::MemorySession;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_op::Action;
use koas_review_schema::ledger::Actor;
use koas_review_schema::stage1::ProtectedSpans;
use koas_review_workspace::{RevertRunRequest, ReviewRequest, Workspace};
use koas_test_support::{bench_document, bench_ops};
use serde_json::Value;

fn actor() -> Actor {
    Actor {
        tool: "bench".into(),
        operator: "bench".into(),
    }
}

fn in_memory_cycle(text: &str, ops: &[Value]) -> usize {
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    let mut session = MemorySession::new("seed.md", text);
    let out = session
        .apply(
            ops,
            &ProtectedSpans::default(),
            &ApplyOptions::default(),
            &actor(),
            &clock,
            "bench",
        )
        .expect("ids");
    let ids: Vec<ChangeId> = out
        .applied
        .iter()
        .filter(|a| a.op.action != Action::FlagOnly && a.change.is_some())
        .map(|a| a.op.id)
        .collect();
    session
        .revert(&ids, "", &actor(), &clock, "bench-revert")
        .expect("revert all");
    assert!(session.text == text, "the cycle must restore the document");
    out.applied.len()
}

fn on_disk_cycle(text: &str, ops: &[Value]) -> usize {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = Workspace::new(dir.path().join("ws"));
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    let out = ws
        .review(ReviewRequest {
            doc_name: "seed.md",
            document: text,
            ops,
            origin: koas_review_schema::apply::OpOrigin::Person,
            protected: &ProtectedSpans::default(),
            options: &ApplyOptions::default(),
            actor: &actor(),
            command: "bench",
            clock: &clock,
            in_place: None,
        })
        .expect("review");
    let ids: Vec<ChangeId> = out
        .batch
        .applied
        .iter()
        .filter(|a| a.change.is_some())
        .map(|a| a.op.id)
        .collect();
    ws.revert(RevertRunRequest {
        ids: &ids,
        rationale: "",
        actor: &actor(),
        command: "bench",
        clock: &clock,
        options: &ApplyOptions::default(),
        in_place: None,
    })
    .expect("revert");
    out.batch.applied.len()
}

fn bench(c: &mut Criterion) {
    let (text, source) = bench_document();
    let ops = bench_ops(&text, 1000);
    let applied = in_memory_cycle(&text, &ops);
    eprintln!(
        "document: {source}, {} lines, {} bytes; {} ops, {applied} applied",
        text.lines().count(),
        text.len(),
        ops.len()
    );
    let mut group = c.benchmark_group("apply_1000_then_revert_all");
    group.sample_size(10);
    group.bench_function("in_memory", |b| {
        b.iter(|| black_box(in_memory_cycle(&text, &ops)))
    });
    group.bench_function("workspace_on_disk", |b| {
        b.iter(|| black_box(on_disk_cycle(&text, &ops)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
