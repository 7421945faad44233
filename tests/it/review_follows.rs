//! A review follows its document: the workspace is named after the
//! document's file name, a hand edit is noticed (refused with the command
//! that continues, or followed when nothing is recorded), hand edits become
//! `external` changes, the changes they touched are listed as not
//! revertible, workspaces named by an earlier koas are renamed; and the
//! report's findings are those of the current document, with the ones
//! changes resolved named by change ID.

use crate::review_common::{assert_code, normalize, stderr, stdout, Scratch};
use koas_kernel_api::hash::sha256;
use serde_json::Value;
use std::path::PathBuf;

const DOC: &str = "# Title

## Intro

As an AI language model, I cannot do this.

The bandwith is low.

Some text here.

## Next

The same paragraph repeated here for testing purposes of the detector.

The same paragraph repeated here for testing purposes of the detector.
";

const OPS: &str = r#"[
 {"action": "replace", "target": {"line_start": 7, "line_end": 7}, "before_text": "bandwith", "after_text": "bandwidth", "kind": "typo"},
 {"action": "replace", "target": {"line_start": 9, "line_end": 9}, "before_text": "Some text here.", "after_text": "Some better text here.", "kind": "style"}
]"#;

fn reviewed(in_place: bool) -> Scratch {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    s.write("ops.json", OPS);
    let mut args = vec!["-q", "review", "doc.md", "--ops", "ops.json"];
    if in_place {
        args.push("--in-place");
    }
    assert_code(&s.koas(&args), 0, "first review");
    s
}

fn ledger(s: &Scratch) -> Vec<Value> {
    std::fs::read_to_string(s.workspace().join("review/ledger.jsonl"))
        .expect("ledger")
        .lines()
        .map(|l| serde_json::from_str(l).expect("ledger line"))
        .collect()
}

fn workspaces(s: &Scratch) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(s.path(".review"))
        .expect(".review")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    found.sort();
    found
}

#[test]
fn a_hand_edited_document_keeps_its_review_and_continues_on_request() {
    let s = reviewed(true);
    let ws = s.workspace();
    assert!(
        ws.ends_with(format!(".review/doc_{}", &sha256("doc.md")[7..19])),
        "named after the file name: {}",
        ws.display()
    );
    // The writer edits the reviewed document by hand: RVW-0002's line and
    // a new closing line.
    let text = String::from_utf8(s.read("doc.md")).expect("utf-8");
    assert!(text.contains("Some better text here."), "{text}");
    let edited =
        text.replace("Some better text here.", "Some text I wrote myself.") + "\nThe end.\n";
    s.write("doc.md", &edited);

    // The review is still found.
    let out = s.koas(&["grep", "doc.md"]);
    assert_code(&out, 0, "grep after a hand edit");
    assert!(stdout(&out).contains("RVW-0002"), "{}", stdout(&out));
    let (out, status) = s.koas_json(&["status", "doc.md"]);
    assert_code(&out, 0, "status");
    assert_eq!(status["document_changed_outside"], true, "{status}");

    // Nothing is started silently: the review stops with the command.
    let ledger_before = s.read(&format!("{}/review/ledger.jsonl", ws.display()));
    let out = s.koas(&["-q", "review", "doc.md"]);
    assert_code(&out, 2, "review of a hand-edited document");
    assert!(
        stderr(&out).contains("changed outside koas")
            && stderr(&out).contains("koas review doc.md --rebase"),
        "{}",
        stderr(&out)
    );
    let out = s.koas(&["-q", "revert", "doc.md", "RVW-0001", "--in-place"]);
    assert_code(&out, 2, "revert --in-place over a hand edit");
    assert!(stderr(&out).contains("--rebase"), "{}", stderr(&out));
    assert_eq!(
        workspaces(&s),
        std::slice::from_ref(&ws),
        "no second workspace"
    );
    assert_eq!(
        s.read(&format!("{}/review/ledger.jsonl", ws.display())),
        ledger_before
    );
    assert_eq!(s.read("doc.md"), edited.as_bytes(), "the hand edit is kept");

    // --rebase records the hand edits and keeps the ledger.
    let (out, summary) = s.koas_json(&["review", "doc.md", "--rebase"]);
    assert_code(&out, 0, "review --rebase");
    assert_eq!(
        summary["rebased"],
        serde_json::json!(["RVW-0003", "RVW-0004"])
    );
    let entries = ledger(&s);
    let ids: Vec<&str> = entries.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["RVW-0001", "RVW-0002", "RVW-0003", "RVW-0004"]);
    assert!(entries[2..].iter().all(|e| e["kind"] == "external"));
    let current = std::fs::read_to_string(ws.join("stage3/doc.edited.md")).expect("edited");
    assert_eq!(current, edited, "the review continues on the new text");

    // RVW-0002's lines were rewritten by hand: it is not revertible, and
    // every command says so.
    let (_, status) = s.koas_json(&["status", "doc.md"]);
    assert_eq!(status["document_changed_outside"], false, "{status}");
    assert_eq!(
        status["not_revertible"],
        serde_json::json!([{"id": "RVW-0002", "by": "RVW-0003"}]),
        "{status}"
    );
    let out = s.koas(&["status", "doc.md"]);
    assert!(
        stdout(&out).contains("RVW-0002 (lines edited in RVW-0003)"),
        "{}",
        stdout(&out)
    );
    let out = s.koas(&["show", "doc.md", "RVW-0002"]);
    assert!(stdout(&out).contains("not revertible"), "{}", stdout(&out));
    let out = s.koas(&["-q", "revert", "doc.md", "RVW-0002"]);
    assert_code(&out, 1, "revert of a change edited by hand");
    assert!(
        stderr(&out)
            .contains("RVW-0002 (its lines were edited outside koas, recorded as RVW-0003)"),
        "{}",
        stderr(&out)
    );
    // The untouched change still reverts.
    let out = s.koas(&["-q", "revert", "doc.md", "RVW-0001", "--in-place"]);
    assert_code(&out, 0, "revert of an untouched change");
    let text = String::from_utf8(s.read("doc.md")).expect("utf-8");
    assert!(
        text.contains("bandwith") && text.contains("Some text I wrote myself."),
        "{text}"
    );
}

#[test]
fn with_no_change_recorded_a_hand_edit_is_followed_and_said() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    assert_code(&s.koas(&["-q", "review", "doc.md", "--no-llm"]), 0, "first");
    s.write(
        "doc.md",
        &DOC.replace("As an AI language model, I cannot do this.\n\n", ""),
    );
    let out = s.koas(&["-q", "review", "doc.md", "--no-llm"]);
    assert_code(&out, 0, "second");
    assert!(
        stdout(&out).contains("changed outside koas"),
        "{}",
        stdout(&out)
    );
    assert_eq!(workspaces(&s).len(), 1);
    let report =
        std::fs::read_to_string(s.workspace().join("review/REVIEW_doc.md")).expect("report");
    // The leftover was removed by hand: resolved by the external change.
    assert!(
        report.contains("| ai_leftover |") && report.contains("RVW-0001 (edited outside koas)"),
        "{report}"
    );
}

#[test]
fn a_workspace_named_by_an_earlier_koas_is_found_and_renamed() {
    let s = reviewed(false);
    let ws = s.workspace();
    // What an earlier koas named it: the document's content hash.
    let old = s.path(&format!(".review/doc_{}", &sha256(DOC)[7..19]));
    std::fs::rename(&ws, &old).expect("rename");
    let out = s.koas(&["grep", "doc.md"]);
    assert_code(&out, 0, "grep finds the old workspace");
    assert!(stdout(&out).contains("RVW-0002"), "{}", stdout(&out));
    assert!(stderr(&out).contains("was renamed"), "{}", stderr(&out));
    assert_eq!(workspaces(&s), std::slice::from_ref(&ws));
    assert_eq!(ledger(&s).len(), 2, "the ledger moved with it");
    // And the review goes on in it.
    let out = s.koas(&["-q", "revert", "doc.md", "RVW-0001"]);
    assert_code(&out, 0, "revert in the renamed workspace");
}

#[test]
fn the_report_lists_the_current_findings_and_what_resolved_the_others() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    // Delete the AI leftover and the second copy of the paragraph.
    s.write(
        "ops.json",
        r#"[
 {"action": "delete", "target": {"line_start": 5, "line_end": 6}, "kind": "ai_leftover", "rationale": "AI leftover"},
 {"action": "delete", "target": {"line_start": 14, "line_end": 15}, "kind": "duplicate", "rationale": "Duplicate paragraph"},
 {"action": "replace", "target": {"line_start": 7, "line_end": 7}, "before_text": "bandwith", "after_text": "bandwidth", "kind": "typo"}
]"#,
    );
    let out = s.koas(&["-q", "review", "doc.md", "--ops", "ops.json"]);
    assert_code(&out, 0, "review");
    let report =
        std::fs::read_to_string(s.workspace().join("review/REVIEW_doc.md")).expect("report");
    let resolved = report
        .split("## Resolved findings")
        .nth(1)
        .expect("a resolved findings section");
    assert!(
        resolved.contains("| ai_leftover |") && resolved.contains("| RVW-0001 |"),
        "{report}"
    );
    assert!(
        resolved.contains("| duplicate_paragraph |") && resolved.contains("| RVW-0002 |"),
        "{report}"
    );
    let current = report
        .split("## Findings on the current document")
        .nth(1)
        .and_then(|t| t.split("## Resolved findings").next())
        .expect("findings section");
    assert!(current.contains("No findings."), "{report}");
    insta::assert_snapshot!("resolved_findings_report", normalize(&report, s.dir.path()));

    // Reverting the deletion brings the leftover back among the findings.
    assert_code(
        &s.koas(&["-q", "revert", "doc.md", "RVW-0001"]),
        0,
        "revert",
    );
    let report =
        std::fs::read_to_string(s.workspace().join("review/REVIEW_doc.md")).expect("report");
    let (current, resolved) = report
        .split_once("## Resolved findings")
        .expect("still one resolved finding");
    assert!(current.contains("| ai_leftover |"), "{report}");
    assert!(!resolved.contains("ai_leftover"), "{report}");
}

/// A review without --in-place that records a change (on the last line):
/// the review stops writing DOC.
fn stop_writing(s: &Scratch) {
    s.write(
        "more.json",
        r#"[{"action": "replace", "target": {"line_start": 15}, "before_text": "repeated here", "after_text": "repeated there", "kind": "style", "rationale": "wording"}]"#,
    );
    let (out, v) = s.koas_json(&["review", "doc.md", "--ops", "more.json"]);
    assert_code(&out, 0, "a review without --in-place");
    assert_eq!(v["total_changes"], 1, "{v}");
}

/// The text of a file of the scratch folder.
fn text_of(s: &Scratch, name: &str) -> String {
    String::from_utf8(s.read(name)).expect("utf-8")
}

#[test]
fn revert_after_an_in_place_review_writes_the_file_too() {
    // The bug: the revert updated only the workspace's copy, DOC kept the
    // fix, and `koas status` said nothing of it.
    let s = reviewed(true);
    assert!(text_of(&s, "doc.md").contains("bandwidth"));
    let (out, summary) = s.koas_json(&["revert", "doc.md", "RVW-0001"]);
    assert_code(&out, 0, "revert");
    assert_eq!(summary["in_place"], true, "{summary}");
    let doc = text_of(&s, "doc.md");
    assert!(doc.contains("The bandwith is low."), "{doc}");
    assert!(doc.contains("Some better text here."), "{doc}");
    let out = s.koas(&["revert", "doc.md", "RVW-0002"]);
    assert_code(&out, 0, "second revert");
    assert!(
        stdout(&out)
            .contains("replaced:  doc.md (its review writes it: the last review was --in-place)"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        text_of(&s, "doc.md"),
        DOC,
        "both reverted: the original bytes"
    );
    let (out, status) = s.koas_json(&["status", "doc.md"]);
    assert_code(&out, 0, "status");
    assert_eq!(status["document_file"], "current", "{status}");
    assert_eq!(status["writes_document"], true, "{status}");
    let out = s.koas(&["status", "doc.md"]);
    assert!(
        stdout(&out).contains(
            "file:      doc.md is the review's current version (reviews and reverts write it: the last review was --in-place)"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_review_without_in_place_keeps_the_file_and_status_says_so() {
    let s = reviewed(false);
    assert_eq!(text_of(&s, "doc.md"), DOC);
    let out = s.koas(&["status", "doc.md"]);
    assert_code(&out, 0, "status");
    assert!(
        stdout(&out).contains("file:      doc.md is the original, 2 change(s) behind its review"),
        "{}",
        stdout(&out)
    );
    // A revert then touches only the workspace: DOC was never written.
    let (out, summary) = s.koas_json(&["revert", "doc.md", "RVW-0001"]);
    assert_code(&out, 0, "revert");
    assert_eq!(summary["in_place"], false, "{summary}");
    assert_eq!(text_of(&s, "doc.md"), DOC);
    // An --in-place review, then one without that records nothing: the
    // review still writes DOC (seen on a writer's walk: a plain re-run
    // switched the mode off without a word).
    assert_code(
        &s.koas(&["-q", "review", "doc.md", "--no-llm", "--in-place"]),
        0,
        "in place",
    );
    assert_code(
        &s.koas(&["-q", "review", "doc.md", "--no-llm"]),
        0,
        "unchanged re-run",
    );
    let (_, status) = s.koas_json(&["status", "doc.md"]);
    assert_eq!(status["writes_document"], true, "{status}");
    // One without --in-place that records a change: the change stays in
    // the workspace, the review stops writing DOC, a revert leaves it alone.
    stop_writing(&s);
    let before = text_of(&s, "doc.md");
    assert_code(
        &s.koas(&["-q", "revert", "doc.md", "RVW-0002"]),
        0,
        "revert",
    );
    assert_eq!(text_of(&s, "doc.md"), before, "not written");
    let (_, status) = s.koas_json(&["status", "doc.md"]);
    assert_eq!(status["writes_document"], false, "{status}");
    assert_eq!(status["document_file"], "behind", "{status}");
    let out = s.koas(&["status", "doc.md"]);
    assert!(
        stdout(&out).contains("file:      doc.md is 2 change(s) behind its review"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_rebase_does_not_bring_back_a_change_reverted_in_the_workspace() {
    // The bug: a change reverted without writing DOC came back as a hand
    // edit (kind external, attributed to the writer) at the next rebase.
    let s = reviewed(true);
    stop_writing(&s);
    assert_code(
        &s.koas(&["-q", "revert", "doc.md", "RVW-0001"]),
        0,
        "revert",
    );
    let doc = text_of(&s, "doc.md");
    assert!(doc.contains("bandwidth"), "DOC still has the fix: {doc}");
    // The writer edits the file by hand: a closing line.
    s.write("doc.md", &format!("{doc}\nThe end.\n"));
    let out = s.koas(&["status", "doc.md"]);
    assert!(
        stdout(&out).contains(
            "file:      doc.md was edited outside koas since the review last saw it; `koas review doc.md --rebase` records the edits and continues"
        ),
        "{}",
        stdout(&out)
    );
    let (out, summary) = s.koas_json(&["review", "doc.md", "--rebase", "--no-llm"]);
    assert_code(&out, 0, "rebase");
    let entries = ledger(&s);
    let external: Vec<&Value> = entries.iter().filter(|e| e["kind"] == "external").collect();
    assert_eq!(external.len(), 1, "only the writer's edit: {external:?}");
    assert!(
        external[0]["after_text"]
            .as_str()
            .unwrap_or_default()
            .contains("The end.")
            || external[0]["patch_text"].to_string().contains("The end."),
        "{}",
        external[0]
    );
    let current =
        std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited");
    assert!(
        current.contains("The bandwith is low."),
        "RVW-0001 stays reverted: {current}"
    );
    assert!(
        current.contains("Some better text here."),
        "RVW-0002 kept: {current}"
    );
    assert!(current.ends_with("\nThe end.\n"), "{current}");
    assert!(summary.get("rebase_overlaps").is_none(), "{summary}");
    // DOC itself is as the writer left it, and known: no second rebase.
    assert_code(
        &s.koas(&["-q", "review", "doc.md", "--no-llm"]),
        0,
        "next review",
    );
    let (_, status) = s.koas_json(&["status", "doc.md"]);
    assert_eq!(status["document_changed_outside"], false, "{status}");
    assert_eq!(status["document_file"], "behind", "{status}");
    let out = s.koas(&["status", "doc.md"]);
    assert!(
        stdout(&out).contains("file:      doc.md lacks changes the review recorded since it was last written; `koas review doc.md --in-place` writes them into it"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_hand_edit_of_a_line_the_review_reverted_since_is_recorded_and_said() {
    let s = reviewed(true);
    stop_writing(&s);
    assert_code(
        &s.koas(&["-q", "revert", "doc.md", "RVW-0001"]),
        0,
        "revert",
    );
    let doc = text_of(&s, "doc.md").replace("The bandwidth is low.", "The bandwidth is very low.");
    s.write("doc.md", &doc);
    let out = s.koas(&["review", "doc.md", "--rebase", "--no-llm"]);
    assert_code(&out, 0, "rebase");
    assert!(
        stdout(&out).contains("overlap:   doc.md lines 7: the hand edits there touch lines the review changed or reverted since doc.md was last written; they are recorded as doc.md has them"),
        "{}",
        stdout(&out)
    );
    let current =
        std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited");
    assert_eq!(current, doc, "recorded as DOC has it");
}
