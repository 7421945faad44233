//! Benchmark: apply 1,000 ops to a ~1,600-line document, then revert them
//! all. Uses seed 000 (`../shared/seeds/000_*.txt`) when present, else a
//! generated document of the same size. Target: under 1 s for the whole
//! cycle.
//!
//! - `in_memory`: the engine alone (normalize, validate, apply, patches,
//!   ledger entries, bulk revert with conflict checks) — what a kernel does.
//! - `workspace_on_disk`: the same through the on-disk workspace (patch
//!   files, fsynced ledger, atomic document writes, annotated document).

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use koas_review::clock::SteppingClock;
use koas_review::session::MemorySession;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_op::Action;
use koas_review_schema::ledger::Actor;
use koas_review_schema::stage1::ProtectedSpans;
use koas_review_workspace::{RevertRunRequest, ReviewRequest, Workspace};
use serde_json::{json, Value};

fn seed_document() -> (String, &'static str) {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/seeds");
    let found: Option<PathBuf> = std::fs::read_dir(&seeds).ok().and_then(|d| {
        d.filter_map(Result::ok).map(|e| e.path()).find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("000_"))
        })
    });
    if let Some(text) = found.and_then(|p| std::fs::read_to_string(p).ok()) {
        return (text, "seed 000");
    }
    eprintln!("../shared/seeds absent: benchmarking a generated 1,600-line document");
    let mut text = String::new();
    for i in 0..1600 {
        if i % 9 == 0 {
            text.push_str(&format!("## Section {i}\n"));
        } else if i % 9 == 8 {
            text.push('\n');
        } else {
            text.push_str(&format!(
                "Line {i} of the generated document, with some wörds to edit.\n"
            ));
        }
    }
    (text, "generated")
}

/// 1,000 ops on distinct lines (so none overlaps): partial and whole-line
/// replaces, inserts, deletes and flags.
fn thousand_ops(text: &str) -> Vec<Value> {
    let lines: Vec<&str> = text.lines().collect();
    let mut order: Vec<usize> = (1..=lines.len()).collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in (1..order.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % (i as u64 + 1)) as usize);
    }
    order
        .into_iter()
        .take(1000)
        .enumerate()
        .map(|(k, line)| {
            let content = lines[line - 1];
            let word = content
                .split_whitespace()
                .find(|w| w.len() > 3 && content.matches(*w).count() == 1);
            match (k % 10, word) {
                (0..=3, Some(w)) => json!({"action": "replace", "kind": "typo", "target": {"line_start": line},
                    "before_text": w, "after_text": format!("{w}_x")}),
                (0..=5, _) => json!({"action": "replace", "kind": "terminology", "target": {"line_start": line},
                    "after_text": format!("Rewritten line {line}.")}),
                (6 | 7, _) => json!({"action": "insert", "kind": "grammar", "target": {"line_start": line, "line_end": line},
                    "after_text": format!("Inserted after {line}.")}),
                (8, _) => json!({"action": "delete", "target": {"line_start": line}}),
                _ => json!({"action": "flag_only", "target": {"line_start": line}, "rationale": "check"}),
            }
        })
        .collect()
}

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
    let (text, source) = seed_document();
    let ops = thousand_ops(&text);
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
