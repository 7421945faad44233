//! Issue 46: language_review. `koas review` uses the language checks
//! (`md_language_check`) through the real binary: with no model the
//! certain fixes are recorded in the ledger and the report (kind `typo`,
//! revertable), a re-run records nothing twice; with a scripted model the
//! uncertain findings reach the prompt of their chunk, the certain ones
//! are fixed before the model reads the text and never asked about.

use crate::common::{koas, run};
use crate::review_common::{assert_code, edit_model, llm_flags, stderr, Scratch};
use koas_review_schema::findings::{Finding, FindingKind, FindingsArtifact};
use koas_test_support::repo_root;
use serde_json::Value;

const DOC: &str = "guide.md";

/// Planted slips whose right word the document uses elsewhere ("The",
/// "explains", "addresses"): their fixes are certain. Two on line 8.
const GUIDE: &str = "# Deployment guide

## Overview

This guide explains how the service is deployed. The operator addresses
each request to the gateway, and the gateway explains its decisions in the log.

Teh gateway explians every refusal it sends.

## Routing

The router adresses requests by their path. The service keeps the
configuration in one file.

## Limits

The quota of the service is set by the platform team.
";

/// The same guide with a section holding a slip nothing in the document
/// points at ("wroker": "worker" or "broker"): reported with its
/// suggestions, never fixed.
fn guide_with_unsure_slip() -> String {
    format!(
        "{GUIDE}\n## Maintenance\n\nThe operator can restart the wroker when the queue grows.\n"
    )
}

fn ledger(s: &Scratch) -> Vec<Value> {
    let text = std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("ledger");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a ledger line"))
        .collect()
}

/// The lines of `a` and `b` that differ (1-based), both the same length.
fn changed_lines(a: &str, b: &str) -> Vec<usize> {
    assert_eq!(a.lines().count(), b.lines().count());
    a.lines()
        .zip(b.lines())
        .enumerate()
        .filter(|(_, (x, y))| x != y)
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn misspelling_certain_fixes_are_recorded_without_a_model() {
    let s = Scratch::new();
    s.write(DOC, GUIDE);
    let (out, v) = s.koas_json(&["review", DOC, "--no-llm", "--in-place"]);
    assert_code(&out, 0, "review --no-llm");
    assert_eq!(
        v["applied_ids"],
        serde_json::json!(["RVW-0001", "RVW-0002"]),
        "{v:#}"
    );
    assert_eq!(v["rejected"], 0, "{v:#}");
    let entries = ledger(&s);
    assert_eq!(entries.len(), 2, "{entries:#?}");
    for (entry, (id, line)) in entries.iter().zip([("RVW-0001", 8), ("RVW-0002", 12)]) {
        assert_eq!(entry["id"], id);
        assert_eq!(entry["kind"], "typo", "{entry:#}");
        assert_eq!(entry["change"]["at"], line, "{entry:#}");
    }
    // The document changed on exactly the slips' lines, to the right words.
    let fixed = String::from_utf8(s.read(DOC)).expect("utf-8");
    assert_eq!(changed_lines(GUIDE, &fixed), [8, 12]);
    assert_eq!(
        fixed.lines().nth(7),
        Some("The gateway explains every refusal it sends.")
    );
    assert!(fixed.contains("The router addresses requests"), "{fixed}");
    // The report lists the changes and the findings they resolved.
    let report =
        std::fs::read_to_string(s.workspace().join("review/REVIEW_guide.md")).expect("report");
    assert!(report.contains("| RVW-0001 | replace | typo |"), "{report}");
    assert!(report.contains("“explians”"), "{report}");
    assert!(
        report.contains("certain fixes were applied (2)"),
        "{report}"
    );
    // A re-run finds nothing left to fix and records nothing twice.
    let (out, v) = s.koas_json(&["review", DOC, "--no-llm", "--in-place"]);
    assert_code(&out, 0, "re-run");
    assert_eq!(v["applied_ids"], serde_json::json!([]), "{v:#}");
    assert_eq!(ledger(&s).len(), 2);
    assert_eq!(String::from_utf8(s.read(DOC)).expect("utf-8"), fixed);
    // Each fix reverts like any change.
    let out = s.koas(&["-q", "revert", DOC, "RVW-0002", "--in-place"]);
    assert_code(&out, 0, "revert");
    let reverted = String::from_utf8(s.read(DOC)).expect("utf-8");
    assert_eq!(changed_lines(GUIDE, &reverted), [8]);
    assert!(reverted.contains("The router adresses requests"));
}

#[test]
fn misspelling_without_a_certain_fix_reaches_the_prompt_of_its_chunk() {
    let s = Scratch::new();
    let text = guide_with_unsure_slip();
    s.write(DOC, &text);
    let model = edit_model(|_| Vec::new());
    let mut args: Vec<String> = vec!["review".into(), DOC.into(), "--skip-pyramid".into()];
    args.extend(llm_flags(&model, 2));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (out, v) = s.koas_json(&args);
    assert_code(&out, 0, "review with a scripted model");
    // The certain fixes went first, recorded as typos.
    let entries = ledger(&s);
    let typos: Vec<&Value> = entries.iter().filter(|e| e["kind"] == "typo").collect();
    assert_eq!(typos.len(), 2, "{v:#}\n{entries:#?}");
    let prompts: Vec<String> = model
        .requests()
        .into_iter()
        .map(|r| r.prompt)
        .filter(|p| p.contains("BEGIN_EDIT_OPS"))
        .collect();
    assert!(!prompts.is_empty(), "no edit request");
    // The model read the fixed text: no certain slip is shown or asked
    // about.
    for slip in ["Teh ", "explians", "adresses"] {
        assert!(
            prompts.iter().all(|p| !p.contains(slip)),
            "{slip} reached the model: {prompts:#?}"
        );
    }
    // The language hints are in the chunk's first prompt, at every tier:
    // a small model that answers at once still sees them.
    let asked: Vec<&String> = prompts
        .iter()
        .filter(|p| p.contains("restart the wroker"))
        .collect();
    assert!(!asked.is_empty(), "{prompts:#?}");
    assert!(
        asked[0].contains("Problems an automatic"),
        "the first prompt of the chunk has its hints: {}",
        asked[0]
    );
    let problems = asked[0]
        .split("Problems an automatic check found in this part:")
        .nth(1)
        .and_then(|rest| rest.split("Text to review").next())
        .unwrap_or_else(|| panic!("no findings in the prompt: {}", asked[0]));
    assert!(problems.contains("misspelling"), "{problems}");
    assert!(problems.contains("“wroker”"), "{problems}");
    assert!(
        problems.contains("“worker”") && problems.contains("“broker”"),
        "its suggestions: {problems}"
    );
    // Only that chunk has problems to show (in its first prompt and in
    // its retry after an empty answer).
    assert!(
        prompts
            .iter()
            .filter(|p| p.contains("Problems an automatic check found"))
            .all(|p| p.contains("restart the wroker")),
        "{prompts:#?}"
    );
}

/// What `md_language_check` writes when the reviewer pipeline runs up to
/// it, and what `koas check` reports: the same findings, the certain
/// fixes among them.
#[test]
fn language_findings_of_the_plugin_are_those_of_koas_check() {
    let s = Scratch::new();
    s.write(DOC, GUIDE);
    let ws = s.path("ws");
    let out = run(koas()
        .args(["-q", "run"])
        .arg(repo_root().join("configs/reviewer.toml"))
        .arg("--input")
        .arg(format!("doc={}", s.path(DOC).display()))
        .arg("-w")
        .arg(&ws)
        .args(["--until", "md_language_check"]));
    assert!(out.status.success(), "koas run --until: {}", stderr(&out));
    let bytes = std::fs::read(ws.join("stage2/language_findings.json")).expect("written");
    let artifact: FindingsArtifact = serde_json::from_slice(&bytes).expect("findings artifact");
    let words: Vec<(u32, bool)> = artifact
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::Misspelling)
        .map(|f| (f.line, f.fix.is_some()))
        .collect();
    assert_eq!(words, [(8, true), (8, true), (12, true)], "{artifact:#?}");
    let out = run(koas()
        .args(["check", "--no-config", "--format", "json"])
        .arg(s.path(DOC)));
    let checked: Vec<Finding> = serde_json::from_slice::<Vec<Finding>>(&out.stdout)
        .unwrap_or_else(|e| panic!("koas check --format json: {e}\n{}", stderr(&out)))
        .into_iter()
        .filter(|f| f.kernel == "md_language_check")
        .collect();
    assert_eq!(checked, artifact.findings);
}
