//! Snapshot tests of the annotated document, the review report and the
//! apply-log outcomes for the crate's planted-defect fixtures, reviewed
//! with a fixed ops file. (The shared planted corpus is not snapshotted: its
//! text must not be copied into the repository.)

mod common;

use koas_edit::clock::SteppingClock;
use koas_edit::edit_op::parse_ops_file;
use koas_kernel_api::hash::sha256;
use koas_review_schema::apply::{ApplyLogRecord, ApplyOptions};
use koas_review_schema::findings::Finding;
use koas_review_schema::review::ReportMeta;
use koas_review_schema::stage1::SectionEntry;
use koas_review_workspace::{ReviewRequest, Workspace};
use serde::Deserialize;

#[derive(Deserialize)]
struct Stage {
    sections: Vec<SectionEntry>,
    findings: Vec<Finding>,
}

fn outcome_lines(log: &[ApplyLogRecord]) -> String {
    log.iter()
        .map(|r| {
            let fixes: Vec<&str> = r.fixes.iter().map(|f| f.name()).collect();
            format!(
                "op {:>2} {} {:?} {:?} fixes={:?}{}",
                r.op_index,
                r.id.map_or_else(|| "-".to_owned(), |id| id.to_string()),
                r.status,
                r.action,
                fixes,
                match (&r.reject, &r.reason) {
                    (Some(class), Some(reason)) => format!("\n      {class}: {reason}"),
                    _ => String::new(),
                }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn review_fixture(name: &str) {
    let stem = name.trim_end_matches(".md");
    let text = common::fixture(name);
    let ops = parse_ops_file(&common::fixture(&format!("{stem}.ops.json"))).unwrap();
    let stage: Stage =
        serde_json::from_str(&common::fixture(&format!("{stem}.stage.json"))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path().join("ws"));
    let clock = SteppingClock::new("2026-02-06T14:23:01Z");
    let out = ws
        .review(ReviewRequest {
            doc_name: name,
            document: &text,
            ops: &ops,
            origin: koas_review_schema::apply::OpOrigin::Person,
            protected: &common::fixture_regions(name),
            options: &ApplyOptions::default(),
            actor: &common::actor(),
            command: "koas review --ops",
            clock: &clock,
            in_place: None,
        })
        .unwrap();
    let meta = ReportMeta {
        generated_at: "2026-02-06T15:00:00+00:00".into(),
        tool: format!("koas-review {}", koas_edit::VERSION),
        kernels: vec![
            ("md_apply_ops".into(), "1.1.0".into()),
            ("md_inline_notes_inject".into(), "1.0.0".into()),
        ],
        doc_name: name.into(),
        original_hash: sha256(&text),
        current_hash: sha256(&out.batch.final_text),
        notice: None,
    };
    let report = ws
        .write_report(&meta, &stage.sections, &stage.findings)
        .unwrap();
    insta::assert_snapshot!(format!("{stem}_reviewed"), out.annotated.text);
    insta::assert_snapshot!(format!("{stem}_report"), report);
    insta::assert_snapshot!(format!("{stem}_apply_log"), outcome_lines(&out.log));
}

#[test]
fn retention_spec_snapshots() {
    review_fixture("retention_spec.md");
}

#[test]
fn audit_fr_snapshots() {
    review_fixture("audit_fr.md");
}
