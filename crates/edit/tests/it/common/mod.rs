//! Helpers of this crate's integration tests that need its types (the
//! generic ones — corpus, generated ops, git checks — are in
//! `koas_test_support`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use koas_review_schema::ledger::Actor;
use koas_review_schema::stage1::ProtectedSpans;

/// The crate's own fixtures.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
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

/// A test actor.
pub fn actor() -> Actor {
    Actor {
        tool: "koas-review tests".into(),
        operator: "ci".into(),
    }
}
