//! Snapshots (insta) of the report and the annotated document that `koas
//! review --ops` produces with a fixed ops file: on this crate's own
//! fixture documents (always), and on the planted-defect documents of the
//! shared corpus (when `../shared` is present; the documents themselves
//! are not copied into the repository, only koas's output is kept).
//! Timestamps, versions and paths are replaced by placeholders.

use crate::review_common::{assert_code, normalize, Scratch};
use std::path::Path;

/// Reviews `doc` (already in `s`) with `ops`, then reverts one change so
/// the report shows a revert too; returns the normalized report and
/// annotated document.
fn review(s: &Scratch, doc: &str, ops: &str, revert: Option<&str>) -> (String, String) {
    let out = s.koas(&["-q", "review", doc, "--ops", ops, "-w", "ws"]);
    assert_code(&out, 0, "review");
    if let Some(id) = revert {
        let out = s.koas(&["-q", "revert", doc, id, "-w", "ws", "--reason", "snapshot"]);
        assert_code(&out, 0, "revert");
    }
    let ws = s.path("ws");
    let stem = Path::new(doc)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let read =
        |rel: &str| std::fs::read_to_string(ws.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    (
        normalize(&read(&format!("review/REVIEW_{stem}.md")), s.dir.path()),
        normalize(&read("stage3/doc.REVIEWED.md"), s.dir.path()),
    )
}

#[test]
fn own_fixture_english_report_and_annotated_document() {
    let s = Scratch::with_fixture("retention_policy.md");
    let (report, reviewed) = review(
        &s,
        "retention_policy.md",
        "retention_policy.ops.json",
        Some("RVW-0005"),
    );
    insta::assert_snapshot!("retention_policy_report", report);
    insta::assert_snapshot!("retention_policy_reviewed", reviewed);
}

#[test]
fn own_fixture_french_report_and_annotated_document() {
    let s = Scratch::with_fixture("controle_acces.md");
    let (report, reviewed) = review(&s, "controle_acces.md", "controle_acces.ops.json", None);
    insta::assert_snapshot!("controle_acces_report", report);
    insta::assert_snapshot!("controle_acces_reviewed", reviewed);
}

#[test]
fn planted_corpus_reports_and_annotated_documents() {
    let Some(shared) =
        koas_test_support::shared_dir("planted_corpus_reports_and_annotated_documents")
    else {
        return;
    };
    for stem in ["audit_fr", "spec_en"] {
        let s = Scratch::new();
        let doc = format!("{stem}.md");
        s.copy(&shared.join("corpus/planted").join(&doc), &doc);
        let ops = format!("{stem}.ops.json");
        s.copy(
            &crate::review_common::fixtures().join("planted").join(&ops),
            &ops,
        );
        let (report, reviewed) = review(&s, &doc, &ops, None);
        insta::assert_snapshot!(format!("planted_{stem}_report"), report);
        insta::assert_snapshot!(format!("planted_{stem}_reviewed"), reviewed);
        // Then the read commands, and reverting everything gives back the
        // planted document byte for byte.
        let (out, status) = s.koas_json(&["status", &doc, "-w", "ws"]);
        assert_code(&out, 0, "status");
        assert_eq!(status["status"], "ok");
        let (_, found) = s.koas_json(&["grep", &doc, "-w", "ws", "-k", "ai_leftover"]);
        assert!(found["total"].as_u64().unwrap() >= 1, "{found}");
        let (out, shown) = s.koas_json(&["show", &doc, "RVW-0001", "-w", "ws", "--patch"]);
        assert_code(&out, 0, "show");
        assert!(shown["patch"]
            .as_str()
            .unwrap()
            .starts_with(&format!("--- a/{doc}")));
        let out = s.koas(&["-q", "revert", &doc, "--all", "-w", "ws"]);
        assert_code(&out, 0, "revert --all");
        assert_eq!(
            std::fs::read(s.path("ws/stage3/doc.edited.md")).unwrap(),
            std::fs::read(shared.join("corpus/planted").join(&doc)).unwrap()
        );
    }
}
