//! Times one cold review + revert cycle through the on-disk workspace:
//! 1,000 whole-line replaces on a document (by default the shared corpus's
//! first seed document, `../shared/seeds/000_*.txt`), then a bulk revert
//! of all of them, checking the original comes back.
//!
//! ```text
//! cargo run --release -p koas-review-workspace --example disk_cycle [DOC] [WORKSPACE_PARENT]
//! ```

use std::time::Instant;

use koas_edit::clock::SteppingClock;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::ledger::Actor;
use koas_review_schema::stage1::ProtectedSpans;
use koas_review_workspace::{RevertRunRequest, ReviewRequest, Workspace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let doc = match args.first() {
        Some(doc) => std::path::PathBuf::from(doc),
        None => koas_test_support::shared_seed_000()
            .ok_or("no DOC given, and seed 000 is absent (../shared/seeds/000_*.txt)")?,
    };
    let text = std::fs::read_to_string(&doc)?;
    let parent = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| std::env::temp_dir().to_string_lossy().into_owned());
    let lines = text.lines().count();
    let ops: Vec<serde_json::Value> = (1..=lines)
        .take(1000)
        .map(|l| serde_json::json!({"action": "replace", "kind": "typo", "target": {"line_start": l}, "after_text": format!("line {l} rewritten")}))
        .collect();
    let dir = tempfile::tempdir_in(parent)?;
    let ws = Workspace::new(dir.path().join("ws"));
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    let actor = Actor {
        tool: "disk_cycle".into(),
        operator: "bench".into(),
    };
    let started = Instant::now();
    let out = ws.review(ReviewRequest {
        doc_name: "doc.md",
        document: &text,
        ops: &ops,
        origin: koas_review_schema::apply::OpOrigin::Person,
        protected: &ProtectedSpans::default(),
        options: &ApplyOptions::default(),
        actor: &actor,
        command: "disk_cycle",
        clock: &clock,
        in_place: None,
    })?;
    let review_time = started.elapsed();
    let ids: Vec<_> = out
        .batch
        .applied
        .iter()
        .filter(|a| a.change.is_some())
        .map(|a| a.op.id)
        .collect();
    let revert_started = Instant::now();
    ws.revert(RevertRunRequest {
        ids: &ids,
        rationale: "",
        actor: &actor,
        command: "disk_cycle",
        clock: &clock,
        options: &ApplyOptions::default(),
        in_place: None,
    })?;
    let revert_time = revert_started.elapsed();
    let restored = std::fs::read_to_string(ws.path("stage3/doc.edited.md"))? == text;
    println!(
        "{} ops applied in {review_time:?}, reverted in {revert_time:?}, total {:?}; original restored: {restored}",
        ids.len(),
        started.elapsed()
    );
    Ok(())
}
