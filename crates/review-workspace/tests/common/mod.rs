//! Helpers of this crate's integration tests that need koas-review types.
//! The documents are the edit engine's own fixtures, read where they are
//! (`crates/edit/tests/fixtures`): the workspace reviews the same
//! documents, so they are not copied here.
#![allow(dead_code)]

use std::path::PathBuf;

use koas_review_schema::ledger::Actor;
use koas_review_schema::stage1::ProtectedSpans;

/// The edit engine's fixtures (`crates/edit/tests/fixtures`).
pub fn fixtures() -> PathBuf {
    koas_test_support::repo_root().join("crates/edit/tests/fixtures")
}

/// Reads a fixture file.
pub fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).expect("fixture exists")
}

/// Protected regions of a fixture document.
pub fn fixture_regions(doc: &str) -> ProtectedSpans {
    let stem = doc.trim_end_matches(".md");
    serde_json::from_str(&fixture(&format!("{stem}.protected.json"))).expect("regions parse")
}

/// A test actor (the same as the edit engine's tests: the snapshots show
/// it).
pub fn actor() -> Actor {
    Actor {
        tool: "koas-review tests".into(),
        operator: "ci".into(),
    }
}
