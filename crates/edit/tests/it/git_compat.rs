//! The patches are standard unified diffs: `git apply` accepts every
//! forward patch on the state it was made on, produces the same bytes as
//! the engine, and accepts the inverse on the state after. Edge cases:
//! CRLF, missing final newline, byte-order mark, top and end insertions,
//! an empty document, non-ASCII text.

use koas_edit::apply::batch_states;
use koas_edit::clock::SteppingClock;
use koas_edit::session::MemorySession;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::stage1::ProtectedSpans;
use serde_json::{json, Value};

fn check_with_git(text: &str, ops: Vec<Value>) {
    if !koas_test_support::git_available() {
        println!("SKIP git_compat: git is not installed");
        return;
    }
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    let mut session = MemorySession::new("doc.md", text);
    let out = session
        .apply(
            &ops,
            &ProtectedSpans::default(),
            &ApplyOptions::default(),
            &crate::common::actor(),
            &clock,
            "r",
        )
        .unwrap();
    assert!(out.rejected.is_empty(), "{:?}", out.rejected);
    let states: Vec<(String, String)> = batch_states(&out, text).collect();
    let pairs: Vec<_> = out
        .applied
        .iter()
        .filter_map(|a| a.patches.as_ref())
        .collect();
    assert_eq!(states.len(), pairs.len());
    assert!(!pairs.is_empty());
    for ((before, after), pair) in states.iter().zip(pairs) {
        koas_test_support::git_apply_check("doc.md", before, &pair.forward)
            .unwrap_or_else(|e| panic!("git refused the forward patch: {e}\n{}", pair.forward));
        assert_eq!(
            &koas_test_support::git_apply("doc.md", before, &pair.forward).unwrap(),
            after
        );
        assert_eq!(
            &koas_test_support::git_apply("doc.md", after, &pair.inverse).unwrap(),
            before
        );
    }
}

#[test]
fn crlf_document() {
    check_with_git(
        "# Titre\r\n\r\nLigne une.\r\nLigne deux.\r\n",
        vec![
            json!({"action": "replace", "kind": "typo", "target": {"line_start": 3}, "after_text": "Ligne 1, corrigée."}),
            json!({"action": "insert", "kind": "grammar", "target": {"line_start": 4, "line_end": 4}, "after_text": "Ajout."}),
        ],
    );
}

#[test]
fn missing_final_newline() {
    check_with_git(
        "a\nb\nc",
        vec![
            json!({"action": "replace", "kind": "typo", "target": {"line_start": 3}, "after_text": "C"}),
        ],
    );
    check_with_git(
        "a\nb\nc",
        vec![
            json!({"action": "insert", "kind": "typo", "target": {"line_start": 3, "line_end": 3}, "after_text": "d"}),
        ],
    );
    check_with_git(
        "a\nb\nc",
        vec![json!({"action": "delete", "target": {"line_start": 3}})],
    );
    check_with_git(
        "a\nb\nc",
        vec![
            json!({"action": "replace", "kind": "typo", "target": {"line_start": 1}, "after_text": "A"}),
        ],
    );
}

#[test]
fn bom_top_insert_and_non_ascii() {
    check_with_git(
        "\u{feff}# Überblick\nText mit Umlauten 🚀.\n",
        vec![
            json!({"action": "insert", "kind": "grammar", "target": {"line_start": 0, "line_end": 0}, "after_text": "Vorwort ✓"}),
            json!({"action": "replace", "kind": "typo", "target": {"line_start": 2}, "before_text": "Umlauten", "after_text": "Ümläuten"}),
        ],
    );
}

#[test]
fn empty_document_gets_content() {
    check_with_git(
        "",
        vec![
            json!({"action": "insert", "kind": "grammar", "target": {"line_start": 0, "line_end": 0}, "after_text": "first line"}),
        ],
    );
}

#[test]
fn a_wrong_patch_is_refused_by_git() {
    // Negative control: the checker can fail.
    if !koas_test_support::git_available() {
        println!("SKIP a_wrong_patch_is_refused_by_git: git is not installed");
        return;
    }
    let patch = "--- a/doc.md\n+++ b/doc.md\n@@ -1,2 +1,2 @@\n a\n-x\n+y\n";
    assert!(koas_test_support::git_apply_check("doc.md", "a\nb\n", patch).is_err());
    assert!(koas_test_support::git_apply_check("doc.md", "a\nx\n", patch).is_ok());
}
