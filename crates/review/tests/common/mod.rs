//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

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

/// The shared folder (`/work/shared` seen from the workspace root as
/// `../shared`), or `None` with a printed skip message.
pub fn shared_dir(test: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    if dir.join("corpus").is_dir() {
        Some(dir)
    } else {
        println!(
            "SKIP {test}: {} is absent (shared corpus not available)",
            dir.display()
        );
        None
    }
}

/// A test actor.
pub fn actor() -> Actor {
    Actor {
        tool: "koas-review tests".into(),
        operator: "ci".into(),
    }
}

/// True when `git` can be run.
pub fn git_available() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `git apply --check` of `patch` against a file `doc_name` holding
/// `state`, in a fresh temporary directory. Returns git's stderr on
/// failure.
pub fn git_apply_check(doc_name: &str, state: &str, patch: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(dir.path().join(doc_name), state).map_err(|e| e.to_string())?;
    std::fs::write(dir.path().join("change.patch"), patch).map_err(|e| e.to_string())?;
    let out = Command::new("git")
        .args(["apply", "--check", "--whitespace=nowarn", "change.patch"])
        .current_dir(dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir.path())
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Applies `patch` with `git apply` (not just a check) and returns the
/// resulting file, to compare with the engine's own application.
pub fn git_apply(doc_name: &str, state: &str, patch: &str) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join(doc_name);
    std::fs::write(&file, state).map_err(|e| e.to_string())?;
    std::fs::write(dir.path().join("change.patch"), patch).map_err(|e| e.to_string())?;
    let out = Command::new("git")
        .args(["apply", "--whitespace=nowarn", "change.patch"])
        .current_dir(dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir.path())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    std::fs::read_to_string(&file).map_err(|e| e.to_string())
}

/// A small deterministic generator (xorshift), for tests that need
/// reproducible pseudo-random choices without proptest.
pub struct Rng(pub u64);

impl Rng {
    /// Next value.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Deterministic ops over a document: every op targets a distinct line,
/// mixing whole-line replaces, partial replaces, inserts, deletes and
/// flags. Lines are chosen from `candidates` (1-based).
pub fn generated_ops(text: &str, count: usize, seed: u64) -> Vec<serde_json::Value> {
    use serde_json::json;
    let lines: Vec<&str> = text.split('\n').collect();
    let n = if text.ends_with('\n') {
        lines.len() - 1
    } else {
        lines.len()
    };
    let mut rng = Rng(seed | 1);
    let mut used = vec![false; n + 2];
    let mut ops = Vec::new();
    let mut attempts = 0;
    while ops.len() < count && attempts < count * 20 {
        attempts += 1;
        let line = 1 + rng.below(n.max(1));
        if used[line] || used[line.saturating_sub(1)] || used[(line + 1).min(n + 1)] {
            continue;
        }
        used[line] = true;
        let content = lines[line - 1].trim_end_matches('\r');
        let word = content
            .split_whitespace()
            .find(|w| w.len() > 3 && content.matches(*w).count() == 1);
        let op = match (rng.below(10), word) {
            (0..=3, Some(word)) => {
                json!({"action": "replace", "kind": "typo", "target": {"line_start": line},
                "before_text": word, "after_text": format!("{word}é")})
            }
            (4 | 5, _) => {
                json!({"action": "replace", "kind": "terminology", "target": {"line_start": line},
                "after_text": format!("Rewritten line {line} — ünïcode ✓")})
            }
            (6 | 7, _) => {
                json!({"action": "insert", "kind": "grammar", "target": {"line_start": line, "line_end": line},
                "after_text": format!("Inserted after {line}.\nSecond inserted line.")})
            }
            (8, _) => {
                json!({"action": "delete", "target": {"line_start": line}, "rationale": "test deletion"})
            }
            _ => {
                json!({"action": "flag_only", "target": {"line_start": line}, "rationale": "check this"})
            }
        };
        ops.push(op);
    }
    ops
}
