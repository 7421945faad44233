//! `koas review` with a model across runs: a server that dies mid-run and
//! comes back, one section edited, a per-run token budget, and what the
//! report says about the model and the guards. The scripted model counts
//! every request, so "not asked again" is seen at the server.

use crate::review_common::{assert_code, normalize, stderr, stdout, Scratch};
use koas_test_support::model::{ModelAnswer, ModelRequest, ScriptedModel};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A title over eight `##` sections of one sentence each: one chunk per
/// section, plus the title's.
fn manual() -> String {
    let mut doc = String::from("# Manual\n\nThe manual lists the steps of the procedure.\n\n");
    for i in 1..=8 {
        doc.push_str(&format!(
            "## Step {i}\n\nStep {i} is done by the operator on duty.\n\n"
        ));
    }
    doc
}

/// An edit-plan request (the pyramid's ask for summaries).
fn is_edit(r: &ModelRequest) -> bool {
    r.prompt.contains("BEGIN_EDIT_OPS")
}

/// A summary that changes with the prompt, so that a changed section
/// changes its parent's prompt (and a test sees the pyramid's path).
fn summary_of(prompt: &str) -> String {
    let h = prompt.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    format!("The section describes one step ({h:x}).")
}

/// A model that summarizes and proposes no change.
fn proposes_nothing(r: &ModelRequest) -> ModelAnswer {
    if is_edit(r) {
        ModelAnswer::text(NO_OPS)
    } else {
        ModelAnswer::text(summary_of(&r.prompt))
    }
}

const NO_OPS: &str = "BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS";

/// `koas.toml` with the model at `url`: one request at a time, no
/// transport retry (a dead server fails the request at once), and `extra`
/// keys.
fn koas_toml(url: &str, extra: &str) -> String {
    format!(
        "[llm]\nbackend = \"openai\"\nendpoint = \"{url}\"\nmodel = \"scripted\"\nmax_in_flight = 1\nmax_retries = 0\nbackoff_initial_ms = 1\n{extra}"
    )
}

fn edit_prompts(requests: &[ModelRequest]) -> Vec<String> {
    requests
        .iter()
        .filter(|r| is_edit(r))
        .map(|r| r.prompt.clone())
        .collect()
}

#[test]
fn a_server_that_dies_mid_run_fails_the_review_and_the_next_run_asks_only_the_other_chunks() {
    const K: usize = 3;
    let down = Arc::new(AtomicBool::new(false));
    // Edit requests the server answers before it dies.
    let limit = Arc::new(AtomicUsize::new(K));
    let answered = Arc::new(AtomicUsize::new(0));
    let (d, l, a) = (down.clone(), limit.clone(), answered.clone());
    let m = ScriptedModel::start(move |r| {
        if d.load(Ordering::SeqCst) {
            return ModelAnswer::Drop(Duration::ZERO);
        }
        if !is_edit(r) {
            return ModelAnswer::text(summary_of(&r.prompt));
        }
        if a.fetch_add(1, Ordering::SeqCst) >= l.load(Ordering::SeqCst) {
            d.store(true, Ordering::SeqCst);
            return ModelAnswer::Drop(Duration::ZERO);
        }
        ModelAnswer::text(NO_OPS)
    });
    let s = Scratch::new();
    let doc = manual();
    s.write("doc.md", &doc);
    s.write("koas.toml", &koas_toml(&m.url(), ""));

    let out = s.koas(&["-q", "review", "doc.md"]);
    assert_code(&out, 1, "review while the server dies");
    let err = stderr(&out);
    assert!(
        err.contains(&m.url()) && err.contains("TRANSPORT_FAILURE"),
        "the error names the endpoint: {err}"
    );
    assert!(err.contains("nothing was recorded"), "{err}");
    // The workspace is consistent: the document untouched, nothing in the
    // ledger, the status readable and truthful.
    assert_eq!(std::fs::read_to_string(s.path("doc.md")).expect("doc"), doc);
    let ws = s.workspace();
    let ledger = std::fs::read_to_string(ws.join("review/ledger.jsonl")).unwrap_or_default();
    assert_eq!(ledger.lines().count(), 0, "{ledger}");
    let (out, status) = s.koas_json(&["status", "doc.md"]);
    assert_code(&out, 0, "status after the failure");
    assert_eq!(status["status"], "ok", "{status}");
    // The finished chunks' answers are on disk, and every chunk has a
    // status line saying what happened to it.
    let raw: Vec<String> = std::fs::read_dir(ws.join("stage2/ops"))
        .expect("stage2/ops")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".raw.txt"))
        .collect();
    assert_eq!(raw.len(), K, "{raw:?}");
    let lines: Vec<Value> = std::fs::read_to_string(ws.join("stage2/ops/status.jsonl"))
        .expect("status.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a status line parses"))
        .collect();
    let skipped = lines.iter().filter(|l| l["verdict"] == "skipped").count();
    assert_eq!(lines.len() - skipped, K, "{lines:?}");
    assert!(skipped > 0, "{lines:?}");
    let first_requests = m.requests();
    let chunks = 9;
    let answered_first: BTreeSet<String> =
        edit_prompts(&first_requests).into_iter().take(K).collect();

    // The pyramid is built alongside the plan: the summaries koas did not
    // receive before the server died are asked again, never one it did.
    let exchanges = |from: usize| -> Vec<Value> {
        std::fs::read_to_string(ws.join("llm/exchanges.jsonl"))
            .expect("exchanges.jsonl")
            .lines()
            .skip(from)
            .map(|l| serde_json::from_str(l).expect("an exchange line parses"))
            .collect()
    };
    let received: BTreeSet<String> = exchanges(0)
        .iter()
        .filter(|e| e["role"] == "pyramid" && e["outcome"] == "ok")
        .map(|e| e["input_hash"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        !received.is_empty(),
        "some summaries came back before the failure"
    );
    let first_lines = exchanges(0).len();

    // The server is back: only the chunks that got no answer are asked.
    limit.store(usize::MAX, Ordering::SeqCst);
    down.store(false, Ordering::SeqCst);
    let before = first_requests.len();
    let out = s.koas(&["-q", "review", "doc.md", "--json"]);
    assert_code(&out, 0, "the review resumed");
    let second: Vec<ModelRequest> = m.requests().split_off(before);
    let asked = edit_prompts(&second);
    assert_eq!(
        asked.len(),
        chunks - K,
        "only the chunks without an answer are asked: {}",
        stdout(&out)
    );
    assert!(
        asked.iter().all(|p| !answered_first.contains(p)),
        "a chunk answered before the failure was asked again"
    );
    let asked_again: Vec<Value> = exchanges(first_lines)
        .into_iter()
        .filter(|e| {
            e["role"] == "pyramid"
                && e["source"] == "backend"
                && received.contains(e["input_hash"].as_str().unwrap_or_default())
        })
        .collect();
    assert!(asked_again.is_empty(), "{asked_again:#?}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["model"]["stopped"], Value::Null, "{v}");
    let plan: Value = serde_json::from_slice(
        &std::fs::read(ws.join("stage2/edit_plan.json")).expect("edit_plan.json"),
    )
    .expect("parses");
    assert_eq!(plan["status"], "complete", "{plan}");
    assert_eq!(plan["stats"]["reused"], K, "{plan}");
}

const RULES: &str = "# Retention policy\n\nThis policy sets how long records are kept.\n\n## Rules\n\nRecords are kept for 10 years.\n\nThe archive is reviewed each year by the records office.\n\nOld records are deleted by the operator.\n\nThe register is checked every month by the auditor.\n";

/// A careless model: a changed number, a sentence in French, a deletion
/// and a "typo" fix that rewrites the sentence.
const CARELESS: &str = r#"BEGIN_EDIT_OPS
[
 {"action": "replace", "before_text": "10 years", "after_text": "12 years", "kind": "typo", "severity": "minor", "rationale": "typo"},
 {"action": "replace", "before_text": "The archive is reviewed each year by the records office.", "after_text": "L'archive est revue chaque année par le service des archives.", "kind": "grammar", "severity": "minor", "rationale": "grammaire"},
 {"action": "delete", "before_text": "Old records are deleted by the operator.", "kind": "style", "severity": "minor", "rationale": "redundant"},
 {"action": "replace", "before_text": "The register is checked every month by the auditor.", "after_text": "An auditor inspects that ledger monthly.", "kind": "typo", "severity": "minor", "rationale": "wording"}
]
END_EDIT_OPS"#;

#[test]
fn the_report_names_the_model_and_counts_every_guard_firing() {
    let m = ScriptedModel::start(|r| {
        if !is_edit(r) {
            return ModelAnswer::text("The section states a retention rule.");
        }
        if r.prompt.contains("Records are kept") {
            ModelAnswer::text(CARELESS)
        } else {
            ModelAnswer::text(NO_OPS)
        }
    });
    let s = Scratch::new();
    s.write("doc.md", RULES);
    s.write("koas.toml", &koas_toml(&m.url(), ""));
    let (out, v) = s.koas_json(&["review", "doc.md"]);
    assert_code(&out, 0, "review");
    let guards = &v["guards"];
    for name in [
        "TOKEN_GUARD",
        "LANGUAGE_GUARD",
        "REWRITE_GUARD",
        "DELETION_CAUTION",
    ] {
        assert_eq!(guards[name], 1, "{name}: {v}");
    }
    let report =
        std::fs::read_to_string(s.workspace().join("review/REVIEW_doc.md")).expect("the report");
    // The same counts as the summary, and the model's calls.
    for (name, n) in guards.as_object().expect("guards") {
        assert!(
            report.contains(&format!("| {name} | {n} |")),
            "{name} {n} not in the report:\n{report}"
        );
    }
    // The one wording of the requests: the same in the summary.
    let requests = format!(
        "{} requests: {} sent to the server, 0 answered from the cache",
        m.calls(),
        m.calls()
    );
    assert!(
        report.contains(&format!("| Requests | {requests} |")),
        "{report}"
    );
    let workspace = s.workspace().display().to_string();
    let report = normalize(&report, s.dir.path()).replace(&workspace, "[WORKSPACE]");
    insta::assert_snapshot!("careless_model_report", report);

    // The text summary names the model and the guards.
    let s2 = Scratch::new();
    s2.write("doc.md", RULES);
    s2.write("koas.toml", &koas_toml(&m.url(), ""));
    let out = s2.koas(&["-q", "review", "doc.md"]);
    assert_code(&out, 0, "review (text)");
    let text = stdout(&out);
    assert!(text.contains("model:     scripted (openai): "), "{text}");
    assert!(
        text.contains("requests: ")
            && text.contains(" sent to the server, ")
            && text.contains(" answered from the cache, "),
        "{text}"
    );
    assert!(text.contains("DELETION_CAUTION 1"), "{text}");
}

#[test]
fn a_run_budget_stop_keeps_what_was_done_and_says_so_in_the_summary_and_the_report() {
    let m = ScriptedModel::start(|r| {
        if r.prompt.contains("Step 1 is done") {
            ModelAnswer::text(
                r#"BEGIN_EDIT_OPS
[{"action": "replace", "before_text": "on duty", "after_text": "on call", "kind": "terminology", "severity": "minor", "rationale": "the manual says on call elsewhere"}]
END_EDIT_OPS"#,
            )
        } else {
            ModelAnswer::text(NO_OPS)
        }
    });
    let s = Scratch::new();
    s.write("doc.md", &manual());
    // Room for a few chunks: each call reserves its prompt and 1,024
    // answer tokens.
    s.write("koas.toml", &koas_toml(&m.url(), "budget_per_run = 2000\n"));
    let out = s.koas(&["-q", "review", "doc.md", "--skip-pyramid"]);
    assert_code(&out, 0, "a budget stop is not a failure");
    let text = stdout(&out);
    assert!(
        text.contains("the model was stopped early (SESSION_BUDGET_EXHAUSTED)"),
        "{text}\n{}",
        stderr(&out)
    );
    let asked = edit_prompts(&m.requests()).len();
    assert!(asked > 0 && asked < 9, "{asked} chunks asked");
    let not_reviewed = 9 - asked;
    assert!(
        text.contains(&format!("{not_reviewed} chunk(s) not reviewed")),
        "{text}"
    );
    // What was done is kept: the first chunk's change is recorded.
    let ledger =
        std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("ledger");
    assert_eq!(ledger.lines().count(), 1, "{ledger}");
    let report =
        std::fs::read_to_string(s.workspace().join("review/REVIEW_doc.md")).expect("the report");
    assert!(
        report.contains(&format!(
            "| Stopped early | SESSION_BUDGET_EXHAUSTED: {not_reviewed} chunk(s) not reviewed"
        )),
        "{report}"
    );
}

#[test]
fn editing_one_section_asks_only_its_chunks_and_the_pyramids_path_to_the_root() {
    let m = ScriptedModel::start(proposes_nothing);
    let s = Scratch::new();
    let doc = manual();
    s.write("doc.md", &doc);
    s.write(
        "koas.toml",
        &koas_toml(&m.url(), "max_in_flight = 4\n").replace("max_in_flight = 1\n", ""),
    );
    let out = s.koas(&["-q", "review", "doc.md"]);
    assert_code(&out, 0, "first review");
    let first = m.calls();

    let edited = doc.replace(
        "Step 5 is done by the operator on duty.",
        "Step 5 is done by the operator on duty and logged.",
    );
    assert_ne!(edited, doc);
    s.write("doc.md", &edited);
    let out = s.koas(&["-q", "review", "doc.md"]);
    assert_code(&out, 0, "review of the edited document");
    let second: Vec<ModelRequest> = m.requests().split_off(first);
    let edits = edit_prompts(&second);
    assert_eq!(
        edits.len(),
        1,
        "only the edited section's chunk: {edits:#?}"
    );
    assert!(edits[0].contains("and logged"), "{}", edits[0]);
    // The pyramid asks the edited section's summary and the abstract
    // above it; the seven other sections are reused.
    let summaries: Vec<&ModelRequest> = second.iter().filter(|r| !is_edit(r)).collect();
    assert_eq!(
        summaries.len(),
        2,
        "{:#?}",
        summaries.iter().map(|r| &r.prompt).collect::<Vec<_>>()
    );
    assert!(summaries[0].prompt.contains("and logged"));
}

/// A model that proposes the same fix on every run (a cached chunk or a
/// model asked the same question again): once the change is reverted, the
/// next review must not make it again under a new ID.
#[test]
fn regression_a_rerun_does_not_reapply_a_reverted_change() {
    const FIX: &str = r#"BEGIN_EDIT_OPS
[{"action": "replace", "before_text": "Step 3 is done by the operator on duty.", "after_text": "Step 3 is done by the operator in charge.", "kind": "style", "severity": "minor", "rationale": "wording"}]
END_EDIT_OPS"#;
    let m = ScriptedModel::start(|r| {
        if !is_edit(r) {
            return ModelAnswer::text(summary_of(&r.prompt));
        }
        if r.prompt.contains("Step 3 is done") {
            ModelAnswer::text(FIX)
        } else {
            ModelAnswer::text(NO_OPS)
        }
    });
    let s = Scratch::new();
    s.write("doc.md", &manual());
    s.write("koas.toml", &koas_toml(&m.url(), ""));
    let (out, v) = s.koas_json(&["review", "doc.md"]);
    assert_code(&out, 0, "first review");
    assert_eq!(v["applied_ids"], serde_json::json!(["RVW-0001"]), "{v}");

    let out = s.koas(&["-q", "revert", "doc.md", "RVW-0001"]);
    assert_code(&out, 0, "revert");

    // The same proposal again: known as the reverted change, named, and
    // nothing applied.
    let (out, v) = s.koas_json(&["review", "doc.md"]);
    assert_code(&out, 0, "second review");
    assert_eq!(v["applied_ids"], serde_json::json!([]), "{v}");
    assert_eq!(
        (v["rejected"].as_u64(), v["known"].as_u64()),
        (Some(0), Some(1)),
        "{v}"
    );
    let record = &v["apply_log"][0];
    assert_eq!(
        (&record["status"], &record["matches"], &record["known_as"]),
        (&json!("known"), &json!("RVW-0001"), &json!("reverted")),
        "{v}"
    );
    let ledger =
        std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("the ledger");
    assert_eq!(
        ledger.lines().count(),
        2,
        "the change and its revert only:\n{ledger}"
    );
    let edited =
        std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited");
    assert!(
        edited.contains("operator on duty.\n\n## Step 4"),
        "{edited}"
    );

    // An ops file that makes it again is the same change: it stays
    // reverted whoever proposes it.
    s.write(
        "ops.json",
        r#"[{"action": "replace", "target": {"line_start": 15}, "before_text": "Step 3 is done by the operator on duty.", "after_text": "Step 3 is done by the operator in charge.", "kind": "style", "severity": "minor", "rationale": "decided"}]"#,
    );
    let (out, v) = s.koas_json(&["review", "doc.md", "--ops", "ops.json"]);
    assert_code(&out, 0, "review with the person's op");
    assert_eq!(v["applied_ids"], serde_json::json!([]), "{v}");
    assert_eq!(v["known"], 1, "{v}");
    // A person who wants it after all says so: `"again": true`.
    s.write(
        "ops.json",
        r#"[{"action": "replace", "target": {"line_start": 15}, "before_text": "Step 3 is done by the operator on duty.", "after_text": "Step 3 is done by the operator in charge.", "kind": "style", "severity": "minor", "rationale": "decided", "again": true}]"#,
    );
    let (out, v) = s.koas_json(&["review", "doc.md", "--ops", "ops.json"]);
    assert_code(&out, 0, "review with the person's op, again");
    assert_eq!(v["applied_ids"], serde_json::json!(["RVW-0002"]), "{v}");
}

#[test]
fn regression_a_server_down_for_two_runs_is_asked_everything_when_it_is_back() {
    // Two runs against a dead server give the same fallbacks and skipped
    // chunks; the third, with the server back, must ask for every summary
    // and every chunk instead of answering from the cache or the previous
    // pyramid.
    let down = Arc::new(AtomicBool::new(true));
    let d = down.clone();
    let m = ScriptedModel::start(move |r| {
        if d.load(Ordering::SeqCst) {
            return ModelAnswer::Drop(Duration::ZERO);
        }
        proposes_nothing(r)
    });
    let s = Scratch::new();
    s.write("doc.md", &manual());
    s.write("koas.toml", &koas_toml(&m.url(), ""));
    for run in 1..=2 {
        let out = s.koas(&["-q", "review", "doc.md"]);
        assert_code(&out, 1, &format!("run {run} with the server down"));
    }
    let pyramid: Value = serde_json::from_slice(
        &std::fs::read(s.workspace().join("stage2/pyramid.json")).expect("pyramid.json"),
    )
    .expect("parses");
    let nodes = pyramid["nodes"].as_array().expect("nodes").len();
    assert!(nodes > 0, "{pyramid}");
    assert!(
        pyramid["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .all(|n| n["fallback"] == true && n["unanswered"] == true),
        "{pyramid}"
    );

    down.store(false, Ordering::SeqCst);
    let before = m.requests().len();
    let out = s.koas(&["-q", "review", "doc.md"]);
    assert_code(&out, 0, "the server is back");
    let third: Vec<ModelRequest> = m.requests().split_off(before);
    let edits = third.iter().filter(|r| is_edit(r)).count();
    let summaries = third.len() - edits;
    assert_eq!(edits, 9, "every chunk is asked");
    assert_eq!(summaries, nodes, "every summary is asked");
    let pyramid: Value = serde_json::from_slice(
        &std::fs::read(s.workspace().join("stage2/pyramid.json")).expect("pyramid.json"),
    )
    .expect("parses");
    assert!(
        pyramid["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .all(|n| n["fallback"] == false && n.get("unanswered").is_none()),
        "{pyramid}"
    );

    // Complete now: a fourth run is answered from the cache.
    let before = m.requests().len();
    let out = s.koas(&["-q", "review", "doc.md"]);
    assert_code(&out, 0, "an unchanged document");
    assert_eq!(
        m.requests().len(),
        before,
        "no request on an unchanged document"
    );
}

/// What SmolLM2-135M answered on seed 000, one kind per section: every one
/// became a `flag_only` note in the annotated document (65 of 65).
fn small_model_answer(step: usize) -> String {
    match step {
        // The opening marker and an empty list, again and again, cut.
        1 => {
            "BEGIN_EDIT_OPS\n[]\n\nBEGIN_EDIT_OPS\n[]\nBEGIN_EDIT_OPS\n[]\nBEGIN_EDIT_OPS\n[".into()
        }
        // The chunk copied back, with line numbers.
        2 => "1\n## Step 2\n2\nStep 2 is done by the operator on duty.\n".into(),
        // One sentence looped until the budget ran out.
        3 => "1\n".to_owned() + &"The document's language is English. ".repeat(12),
        // Line numbers and placeholders only.
        4 => "1\n[MATH_0]\n2\n[MATH_1]\n3\n".into(),
        // A real finding in prose: it must stay a flag.
        5 => {
            "Step 5 does not say which operator role signs the log; a person should decide.".into()
        }
        _ => NO_OPS.into(),
    }
}

#[test]
fn regression_small_model_noise_is_not_flagged_and_a_real_prose_finding_is() {
    let m = ScriptedModel::start(|r| {
        if !is_edit(r) {
            return ModelAnswer::text(summary_of(&r.prompt));
        }
        // The section under review is the one in the text to review.
        let text = r.prompt.split("Text to review").nth(1).unwrap_or_default();
        let step = (1..=8).find(|i| text.contains(&format!("## Step {i}\n")));
        ModelAnswer::text(step.map_or(NO_OPS.to_owned(), small_model_answer))
    });
    let s = Scratch::new();
    let doc = manual();
    s.write("doc.md", &doc);
    s.write("koas.toml", &koas_toml(&m.url(), ""));
    let (out, v) = s.koas_json(&["review", "doc.md"]);
    assert_code(&out, 0, "review");
    // One flag: the real finding. No change to the document.
    assert_eq!(v["flags"], 1, "{v}");
    assert_eq!(v["total_changes"], 0, "{v}");
    let plan: Value = serde_json::from_str(
        &std::fs::read_to_string(s.workspace().join("stage2/edit_plan.json")).expect("plan"),
    )
    .expect("plan parses");
    let ops = plan["ops"].as_array().expect("ops");
    assert_eq!(ops.len(), 1, "{plan}");
    assert!(
        ops[0]["rationale"]
            .as_str()
            .is_some_and(|r| r.contains("operator role")),
        "{plan}"
    );
    let dropped: Vec<&str> = crate::common::strings_of(&plan["dropped"], "reason");
    assert_eq!(dropped, ["echo"], "{plan}");
    // The looping sentence is a degenerate answer, asked again with less
    // context, as one that ran on to its cap was.
    let step3 = plan["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .find(|c| {
            c["chunk_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("step-3"))
        })
        .expect("step 3");
    assert_eq!(step3["verdict"], "degenerate", "{step3}");
    assert_eq!(
        step3["adaptive_escalation"][0]["reason"], "repeated_sentence",
        "{step3}"
    );
    let annotated =
        std::fs::read_to_string(s.workspace().join("stage3/doc.REVIEWED.md")).expect("annotated");
    assert!(!annotated.contains("BEGIN_EDIT_OPS"), "{annotated}");
    assert!(!annotated.contains("language is English"), "{annotated}");
    assert_eq!(std::fs::read_to_string(s.path("doc.md")).expect("doc"), doc);
}

#[test]
fn regression_the_rerun_after_a_certain_fix_asks_the_model_nothing() {
    // A skipped heading level: a certain fix of the checks (#### → ###).
    let m = ScriptedModel::start(proposes_nothing);
    let s = Scratch::new();
    let doc = manual().replace("## Step 3\n", "#### Step 3\n");
    s.write("doc.md", &doc);
    s.write("koas.toml", &koas_toml(&m.url(), ""));

    let (out, v) = s.koas_json(&["review", "doc.md"]);
    assert_code(&out, 0, "first review");
    let first = m.requests();
    assert!(!first.is_empty());
    // The model read the fixed text only: the fix came first.
    assert!(
        first.iter().all(|r| !r.prompt.contains("#### Step 3")),
        "a prompt holds the unfixed heading"
    );
    assert!(
        first
            .iter()
            .filter(|r| is_edit(r))
            .any(|r| r.prompt.contains("### Step 3")),
        "no edit prompt holds the fixed heading"
    );
    assert_eq!(v["total_changes"], 1, "{v}");
    let ledger =
        std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("ledger");
    assert!(ledger.contains("heading_level_skip"), "{ledger}");
    let edited =
        std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited");
    assert_eq!(edited, manual().replace("## Step 3\n", "### Step 3\n"));

    // The unchanged document again: no request, nothing recorded again.
    let (out, v) = s.koas_json(&["review", "doc.md"]);
    assert_code(&out, 0, "the re-run");
    assert_eq!(
        m.requests().len(),
        first.len(),
        "the re-run asked the model"
    );
    assert_eq!(v["total_changes"], 0, "{v}");
    assert_eq!(v["model"]["calls"], 0, "{v}");
    let again = std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("ledger");
    assert_eq!(again, ledger);
}

#[test]
fn a_certain_fix_is_not_recorded_when_the_model_server_is_down() {
    let m = ScriptedModel::start(|_| ModelAnswer::Drop(Duration::ZERO));
    let s = Scratch::new();
    let doc = manual().replace("## Step 3\n", "#### Step 3\n");
    s.write("doc.md", &doc);
    s.write("koas.toml", &koas_toml(&m.url(), ""));
    let out = s.koas(&["-q", "review", "doc.md"]);
    assert_code(&out, 1, "review with the server down");
    assert!(
        stderr(&out).contains("nothing was recorded"),
        "{}",
        stderr(&out)
    );
    let ledger =
        std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).unwrap_or_default();
    assert_eq!(ledger.lines().count(), 0, "{ledger}");
}

/// The kernels that ran (not cached) in a command, from its progress
/// lines on stderr (not a terminal: one line per kernel).
fn kernels_run(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("koas: "))
        .filter(|l| l.contains(": ok ("))
        .filter_map(|l| l.split(':').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn regression_an_unchanged_rerun_is_answered_from_the_cache_at_once() {
    // The bug: the second run on an unchanged document ran md_pyramid and
    // md_edit_plan again (their previous outputs joined their cache key);
    // only the third was fully cached.
    let m = ScriptedModel::start(proposes_nothing);
    let s = Scratch::new();
    s.write("doc.md", &manual());
    s.write("koas.toml", &koas_toml(&m.url(), ""));
    let first = s.koas(&["review", "doc.md"]);
    assert_code(&first, 0, "first review");
    let ran = kernels_run(&stderr(&first));
    assert!(ran.iter().any(|k| k == "md_edit_plan"), "{ran:?}");
    let asked = m.requests().len();
    let second = s.koas(&["review", "doc.md"]);
    assert_code(&second, 0, "second review");
    let ran = kernels_run(&stderr(&second));
    assert_eq!(ran, Vec::<String>::new(), "{}", stderr(&second));
    assert_eq!(m.requests().len(), asked, "the model was asked again");
}

#[test]
fn a_model_that_proposes_nothing_and_no_model_at_all_each_get_a_hint() {
    // The bug: 0 ops after minutes of a small model, and "deterministic
    // stages only, 0 changes" without a model, and nothing said of what to do.
    let m = ScriptedModel::start(proposes_nothing);
    let s = Scratch::new();
    s.write("doc.md", &manual());
    s.write("koas.toml", &koas_toml(&m.url(), ""));
    let out = s.koas(&["-q", "review", "doc.md"]);
    assert_code(&out, 0, "review");
    let text = stdout(&out);
    assert!(
        text.contains("  hint:      the model proposed no change in 9 chunk(s): the document may need none, or the model is too small to follow the edit prompt (its answers are in "),
        "{text}"
    );
    let s = Scratch::new();
    s.write("doc.md", &manual());
    let out = s.koas(&["-q", "review", "doc.md"]);
    assert_code(&out, 0, "review without a model");
    let text = stdout(&out);
    assert!(
        text.contains("  hint:      no model is configured: add an [llm] table to koas.toml next to the document"),
        "{text}"
    );
}
