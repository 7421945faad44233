//! `koas review DOC` with a model: the pyramid, then `md_edit_plan` asks a
//! scripted loopback model for ops, and the ops it proposes are applied,
//! recorded in the ledger and revertible, whatever line numbers it gave.

use crate::review_common::{assert_code, llm_flags, stderr, stdout, Scratch};
use koas_test_support::model::{ModelAnswer, ModelRequest, ScriptedModel};
use serde_json::Value;
use std::time::Duration;

const DOC: &str = "# Retention policy\n\nThis policy sets how long records are kept.\n\n## Scope\n\nThe policy aplies to every payment record.\n\n## Rules\n\nRecords are kept for ten years.\n\nThe archive is reviewed each year.\n";

/// Pyramid requests get a summary; review requests get `ops` for the chunk
/// holding `needle`, and an empty plan otherwise.
fn model(needle: &'static str, ops: &'static str, delay: Duration) -> ScriptedModel {
    ScriptedModel::start(move |r: &ModelRequest| {
        if !r.prompt.contains("BEGIN_EDIT_OPS") {
            return ModelAnswer::after(delay, "The section states a retention rule.");
        }
        if r.prompt.contains(needle) {
            ModelAnswer::after(delay, format!("BEGIN_EDIT_OPS\n{ops}\nEND_EDIT_OPS"))
        } else {
            ModelAnswer::after(delay, "BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS")
        }
    })
}

fn review_json(s: &Scratch, extra: &[String]) -> (std::process::Output, Value) {
    let mut args: Vec<&str> = vec!["review", "doc.md"];
    args.extend(extra.iter().map(String::as_str));
    s.koas_json(&args)
}

#[test]
fn a_models_typo_fix_with_a_wrong_line_number_is_applied_recorded_and_revertible() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    // The model gives line 3 (relative to nothing): the text decides.
    let m = model(
        "aplies",
        r#"[{"action": "replace", "line": 3, "before_text": "aplies", "after_text": "applies", "kind": "typo", "severity": "minor", "rationale": "spelling"}]"#,
        Duration::ZERO,
    );
    let (out, v) = review_json(&s, &llm_flags(&m, 2));
    assert_code(&out, 0, "review with a model");
    assert_eq!(v["total_changes"], 1, "{v}\n{}", stderr(&out));
    let edited = std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md"))
        .expect("edited document");
    assert!(
        edited.contains("The policy applies to every payment record."),
        "{edited}"
    );
    assert_eq!(edited.lines().count(), DOC.lines().count());
    let model_report = &v["model"];
    assert!(
        model_report["calls"].as_u64().unwrap_or(0) > 0,
        "{model_report}"
    );
    assert!(
        model_report["edit_plan"]
            .as_str()
            .is_some_and(|t| !t.contains("skipped")),
        "{model_report}"
    );
    let ledger =
        std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("ledger");
    assert_eq!(ledger.lines().count(), 1, "{ledger}");
    let id = serde_json::from_str::<Value>(ledger.lines().next().unwrap_or("{}"))
        .ok()
        .and_then(|e| e["id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("a change id in {ledger}"));
    assert!(id.starts_with("RVW-"), "{id}");

    let out = s.koas(&["-q", "revert", "doc.md", &id]);
    assert_code(&out, 0, "revert the model's change");

    // Unchanged document, same model: not one more request.
    let calls = m.calls();
    let (out, _) = review_json(&s, &llm_flags(&m, 2));
    assert_code(&out, 0, "second review");
    assert_eq!(m.calls(), calls, "{}", stdout(&out));
}

#[test]
fn text_the_model_invented_is_not_applied() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let m = model(
        "aplies",
        r#"[{"action": "replace", "line": 7, "before_text": "the policy covers nothing", "after_text": "x", "kind": "typo", "severity": "minor"}]"#,
        Duration::ZERO,
    );
    let (out, v) = review_json(&s, &llm_flags(&m, 2));
    assert_code(&out, 0, "review");
    assert_eq!(v["total_changes"], 0, "{v}");
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited"),
        DOC
    );
}

#[test]
fn chunks_are_reviewed_concurrently_and_ops_do_not_replace_the_plan_with_no_llm() {
    let s = Scratch::new();
    let mut doc = String::from("# Manual\n\nIntro.\n\n");
    for i in 1..=8 {
        doc.push_str(&format!(
            "## Step {i}\n\nStep {i} is done by the operator.\n\n"
        ));
    }
    s.write("doc.md", &doc);
    let m = model("never-present", "[]", Duration::from_millis(150));
    let (out, _) = review_json(&s, &llm_flags(&m, 4));
    assert_code(&out, 0, "review");
    assert_eq!(m.peak_in_flight(), 4);
    let plan: Value = serde_json::from_slice(
        &std::fs::read(s.workspace().join("stage2/edit_plan.json")).expect("edit_plan.json"),
    )
    .expect("parses");
    assert_eq!(plan["status"], "complete", "{plan}");
    let status = std::fs::read_to_string(s.workspace().join("stage2/ops/status.jsonl"))
        .expect("status.jsonl");
    assert!(status.lines().count() >= 8, "{status}");

    let fresh = Scratch::new();
    fresh.write("doc.md", &doc);
    let before = m.calls();
    let mut args = llm_flags(&m, 4);
    args.push("--no-llm".into());
    let (out, v) = review_json(&fresh, &args);
    assert_code(&out, 0, "--no-llm");
    assert_eq!(m.calls(), before, "--no-llm asks nothing");
    assert!(v.get("model").is_none(), "{v}");
}

const RULES: &str = "# Retention policy\n\nThis policy sets how long records are kept.\n\n## Rules\n\nRecords are kept for 10 years.\n\nSee https://example.org/policy for the full text.\n\nThe archive is reviewed each year by the records office.\n\nOld records are deleted by the operator.\n";

/// A careless model: a changed number, a changed URL, a sentence in
/// French in an English document, a deletion. None may land silently.
const CARELESS: &str = r#"[
 {"action": "replace", "line": 1, "before_text": "10 years", "after_text": "12 years", "kind": "typo", "severity": "minor", "rationale": "typo"},
 {"action": "replace", "line": 2, "before_text": "https://example.org/policy", "after_text": "https://example.com/policy", "kind": "typo", "severity": "minor", "rationale": "link"},
 {"action": "replace", "line": 3, "before_text": "The archive is reviewed each year by the records office.", "after_text": "L'archive est revue chaque année par le service des archives.", "kind": "grammar", "severity": "minor", "rationale": "grammaire"},
 {"action": "delete", "line": 4, "before_text": "Old records are deleted by the operator.", "kind": "style", "severity": "minor", "rationale": "redundant"}
]"#;

#[test]
fn a_careless_models_number_url_language_and_deletion_ops_are_never_silent() {
    let s = Scratch::new();
    s.write("doc.md", RULES);
    let m = model("Records are kept", CARELESS, Duration::ZERO);
    let (out, v) = review_json(&s, &llm_flags(&m, 2));
    assert_code(&out, 0, "review");
    // The number is guarded; the bare URL is a protected span, so changing
    // it without a flag is refused outright; the French sentence becomes a
    // flag; the deletion gets its CAUTION note.
    assert_eq!(v["guards"]["TOKEN_GUARD"], 1, "{v}\n{}", stderr(&out));
    assert_eq!(v["guards"]["LANGUAGE_GUARD"], 1, "{v}");
    let log = v["apply_log"].as_array().expect("apply log");
    let status = |needle: &str| {
        log.iter()
            .find(|e| e["lines"][0] == needle.parse::<u64>().unwrap_or(0))
            .map(|e| e["status"].as_str().unwrap_or("").to_owned())
            .unwrap_or_default()
    };
    assert_eq!(status("9"), "rejected", "the URL: {v}");
    assert_eq!(status("11"), "flagged", "the French sentence: {v}");
    let notes = v["notes"].as_array().expect("notes");
    let alert = |id: &str| {
        notes
            .iter()
            .find(|n| n["id"] == id)
            .map(|n| n["alert"].as_str().unwrap_or("").to_owned())
            .unwrap_or_default()
    };
    assert_eq!(alert("RVW-0001"), "WARNING", "{v}");
    // The URL op was rejected and took no ID: the deletion is RVW-0003.
    assert_eq!(alert("RVW-0003"), "CAUTION", "{v}");
    let edited =
        std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited");
    assert!(
        !edited.contains("L'archive"),
        "no French text written: {edited}"
    );
    let ledger: Vec<Value> = std::fs::read_to_string(s.workspace().join("review/ledger.jsonl"))
        .expect("ledger")
        .lines()
        .map(|l| serde_json::from_str(l).expect("ledger line"))
        .collect();
    // Nothing that changed the text is silent.
    for entry in &ledger {
        if entry["action"] != "flag_only" {
            assert_eq!(entry["silent"], false, "{entry}");
            assert_eq!(entry["needs_attention"], true, "{entry}");
        }
    }
    let annotated =
        std::fs::read_to_string(s.workspace().join("stage3/doc.REVIEWED.md")).expect("annotated");
    assert!(
        annotated.contains("changes number '10' → '12'"),
        "{annotated}"
    );

    // --strict refuses the changed number and URL outright.
    let strict = Scratch::new();
    strict.write("doc.md", RULES);
    let mut args = llm_flags(&m, 2);
    args.push("--strict".into());
    let (out, v) = review_json(&strict, &args);
    assert_code(&out, 0, "strict review");
    let edited =
        std::fs::read_to_string(strict.workspace().join("stage3/doc.edited.md")).expect("edited");
    assert!(
        edited.contains("10 years") && edited.contains("example.org"),
        "{edited}"
    );
    let refused = v["apply_log"]
        .as_array()
        .expect("apply log")
        .iter()
        .filter(|e| e["reject"] == "REJECT_GUARD")
        .count();
    assert_eq!(refused, 1, "the changed number: {v}");
}

#[test]
fn a_models_flagged_edit_of_inline_code_is_refused_where_a_persons_would_pass() {
    let doc = "# Retention policy\n\n## Scope\n\nThe policy covers the `payments` table.\n\n## Rules\n\nRecords are kept for ten years.\n";
    let op = r#"[{"action": "replace", "line": 5, "before_text": "`payments`", "after_text": "`payment_records`", "kind": "terminology", "severity": "major", "rationale": "the table was renamed"}]"#;
    let s = Scratch::new();
    s.write("doc.md", doc);
    let m = model("payments", op, Duration::ZERO);
    let (out, v) = review_json(&s, &llm_flags(&m, 2));
    assert_code(&out, 0, "review with a model");
    assert_eq!(v["total_changes"], 0, "{v}\n{}", stderr(&out));
    let refused: Vec<&str> = v["apply_log"]
        .as_array()
        .map(|log| {
            log.iter()
                .filter(|r| r["reject"] == "REJECT_PROTECTED")
                .filter_map(|r| r["reason"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        refused.len() == 1 && refused[0].contains("proposed by a model"),
        "{v:#}"
    );
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited"),
        doc
    );
    // The same edit from a person's ops file, flagged with a note, passes.
    let person = Scratch::new();
    person.write("doc.md", doc);
    person.write(
        "ops.json",
        r#"[{"action": "replace", "target": {"line_start": 5}, "before_text": "`payments`", "after_text": "`payment_records`", "kind": "terminology", "needs_attention": true, "rationale": "the table was renamed"}]"#,
    );
    let (out, v) = person.koas_json(&["review", "doc.md", "--ops", "ops.json"]);
    assert_code(&out, 0, "review with an ops file");
    assert_eq!(v["total_changes"], 1, "{v:#}");
}

/// Every exchange of the review's log.
fn exchanges(s: &Scratch) -> Vec<Value> {
    std::fs::read_to_string(s.workspace().join("llm/exchanges.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn regression_a_model_that_loops_on_a_complete_answer_is_cut_at_once_and_the_answer_used() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    // The answer is complete at once, then the model repeats it without
    // end (never writing END_EDIT_OPS), 10 times a second: before, every
    // request ran to the token cap.
    let m = ScriptedModel::start(|r: &ModelRequest| {
        let (text, repeat) = if !r.prompt.contains("BEGIN_EDIT_OPS") {
            (
                "The section states a retention rule.\n".to_owned(),
                "The section states a retention rule and nothing else.\n".to_owned(),
            )
        } else if r.prompt.contains("aplies") {
            (
                r#"BEGIN_EDIT_OPS
[{"action": "replace", "before_text": "aplies", "after_text": "applies", "kind": "typo"}]
"#
                .to_owned(),
                "BEGIN_EDIT_OPS\n[]\n".to_owned(),
            )
        } else {
            (
                "BEGIN_EDIT_OPS\n[]\n".to_owned(),
                "BEGIN_EDIT_OPS\n[]\n".to_owned(),
            )
        };
        ModelAnswer::Looping {
            text,
            repeat,
            every: Duration::from_millis(100),
            think: Duration::ZERO,
        }
    });
    let (out, v) = review_json(&s, &llm_flags(&m, 4));
    assert_code(&out, 0, "review with a looping model");
    assert_eq!(v["total_changes"], 1, "{v}\n{}", stderr(&out));
    let log = exchanges(&s);
    let edits: Vec<&Value> = log
        .iter()
        .filter(|e| e["role"] == "edit" && e["source"] == "backend")
        .collect();
    assert!(!edits.is_empty(), "{log:?}");
    for e in &edits {
        // Complete at once: cut within a second, at the end of the list.
        assert_eq!(e["ended_by"], "complete", "{e}");
        assert!(e["latency_ms"].as_u64().is_some_and(|ms| ms < 1_000), "{e}");
        assert!(
            e["raw_text"]
                .as_str()
                .is_some_and(|t| t.trim_end().ends_with(']')),
            "{e}"
        );
    }
    // Summaries are cut when they start repeating (a line three times,
    // 300 ms at this pace), with the line kept once.
    let summaries: Vec<&Value> = log
        .iter()
        .filter(|e| e["role"] == "pyramid" && e["source"] == "backend")
        .collect();
    assert!(!summaries.is_empty(), "{log:?}");
    for e in summaries {
        assert_eq!(e["ended_by"], "repetition", "{e}");
        assert!(e["latency_ms"].as_u64().is_some_and(|ms| ms < 5_000), "{e}");
        assert_eq!(
            e["raw_text"]
                .as_str()
                .map(|t| t.matches("nothing else").count()),
            Some(1),
            "{e}"
        );
    }
}

#[test]
fn regression_a_model_writing_garbage_to_the_cap_gets_a_varied_retry_not_the_same_request() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let m = ScriptedModel::start(|r: &ModelRequest| {
        if !r.prompt.contains("BEGIN_EDIT_OPS") {
            return ModelAnswer::text("The section states a retention rule.");
        }
        ModelAnswer::text("lorem ipsum dolor ".repeat(2_000))
    });
    let (out, _) = review_json(&s, &llm_flags(&m, 4));
    assert_code(&out, 0, "review with a garbage model");
    let asked: Vec<(String, String, String)> = m
        .requests()
        .iter()
        .filter(|r| r.prompt.contains("BEGIN_EDIT_OPS"))
        .map(|r| {
            (
                r.prompt.clone(),
                format!("{:?}", r.temperature),
                r.body["max_tokens"].to_string(),
            )
        })
        .collect();
    let distinct: std::collections::HashSet<_> = asked.iter().collect();
    assert!(
        asked.len() > 3,
        "the chunks were asked again: {}",
        asked.len()
    );
    assert_eq!(
        distinct.len(),
        asked.len(),
        "no request was sent twice the same"
    );
    // And none was answered from the cache.
    assert!(
        exchanges(&s).iter().all(|e| e["source"] != "cache"),
        "a retry came from the cache"
    );
}

#[test]
fn a_model_that_answers_neither_prompt_is_stopped_early_and_the_review_says_so() {
    let mut doc = String::from("# Handbook\n\n");
    for i in 1..=40 {
        doc.push_str(&format!(
            "## Part {i}\n\nPart {i} is read by the operator.\n\n"
        ));
    }
    let m = ScriptedModel::start(|r: &ModelRequest| {
        if r.prompt.contains("BEGIN_EDIT_OPS") || r.prompt.contains("[RVW]") {
            ModelAnswer::text("}}} {{{ 123")
        } else {
            ModelAnswer::text("A part of the handbook.")
        }
    });
    let s = Scratch::new();
    s.write("doc.md", &doc);
    let (out, v) = review_json(&s, &llm_flags(&m, 4));
    assert_code(&out, 0, "the review goes on without the model");
    let model = &v["model"];
    assert!(
        model["stopped"]
            .as_str()
            .is_some_and(|r| r.contains("the model gave no usable answer")),
        "{model}"
    );
    assert!(
        model["chunks_not_reviewed"].as_u64().unwrap_or(0) >= 8,
        "{model}"
    );
    // Said in the text a person reads too.
    let s = Scratch::new();
    s.write("doc.md", &doc);
    let mut args = vec!["review".to_owned(), "doc.md".to_owned()];
    args.extend(llm_flags(&m, 4));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = s.koas(&refs);
    assert_code(&out, 0, "text review");
    assert!(
        stdout(&out).contains("the model was stopped early (the model gave no usable answer"),
        "{}",
        stdout(&out)
    );
}
