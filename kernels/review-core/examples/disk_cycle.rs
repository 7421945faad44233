use std::time::Instant;
use koas_review::apply::ApplyOptions;
use koas_review::clock::SteppingClock;
use koas_review::ledger::Actor;
use koas_review::protected::ProtectedRegions;
use koas_review::workspace::{ReviewRequest, RevertRunRequest, Workspace};
fn main() {
    let text = std::fs::read_to_string("/work/shared/seeds/000_2676a4bca076e17a.txt").unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let ops: Vec<serde_json::Value> = (1..=lines.len()).step_by(1).take(1000).map(|l| serde_json::json!({"action":"replace","kind":"typo","target":{"line_start":l},"after_text":format!("x{l}")})).collect();
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path().join("ws"));
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    let actor = Actor{tool:"t".into(),operator:"o".into()};
    let t = Instant::now();
    let out = ws.review(ReviewRequest{doc_name:"seed.md",document:&text,ops:&ops,protected:&ProtectedRegions::default(),options:&ApplyOptions::default(),actor:&actor,command:"x",clock:&clock,in_place:None}).unwrap();
    eprintln!("review {:?} applied {}", t.elapsed(), out.batch.applied.len());
    let ids: Vec<_> = out.batch.applied.iter().map(|a| a.op.id).collect();
    let t2 = Instant::now();
    ws.revert(RevertRunRequest{ids:&ids,rationale:"",actor:&actor,command:"x",clock:&clock,options:&ApplyOptions::default(),in_place:None}).unwrap();
    eprintln!("revert {:?}; total {:?}", t2.elapsed(), t.elapsed());
    assert_eq!(std::fs::read_to_string(ws.path("stage3/doc.edited.md")).unwrap(), text);
}
