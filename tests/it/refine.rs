//! `koas refine DOC` through the real binary with scripted loopback
//! models: judges that score sections by what their text says, a patcher
//! and a section-expander that rewrite by script, a delta judge that
//! answers YES or NO. Every change is in the ledger and revertible.

use crate::review_common::{assert_code, code, llm_flags, stderr, Scratch};
use koas_test_support::model::{ModelAnswer, ModelRequest, ScriptedModel};
use serde_json::Value;

const DOC: &str = "# Retention policy\n\nRecords are kept for seven years after the end of the contract.\n\n## Scope\n\nThe policy covers every payment record. Records are kept for ten years in the archive.\n\n## Rules\n\nThe archive team, in a way that is not always obvious to people who are new, reviews the archive once a year.\n\n```sh\narchive --check --all\n```\n\n## Access\n\nOnly the audit team can read the archive, basically.\n";

/// The section text a judge prompt shows (between `SECTION …:` and the
/// closing quotes), or "" for another prompt.
fn judged(prompt: &str) -> String {
    let Some(at) = prompt.find("\nSECTION ") else {
        return String::new();
    };
    let rest = &prompt[at..];
    let Some(open) = rest.find("\"\"\"\n") else {
        return String::new();
    };
    let body = &rest[open + 4..];
    body[..body.find("\n\"\"\"").unwrap_or(body.len())].to_owned()
}

/// The section content a fix prompt shows.
fn to_fix(prompt: &str) -> String {
    let start = prompt.find("<section>\n").map_or(0, |i| i + 10);
    let end = prompt.find("\n</section>").unwrap_or(prompt.len());
    prompt[start..end].to_owned()
}

fn is_judge(r: &ModelRequest) -> bool {
    r.prompt.contains("Answer with JSON only")
}
fn is_fix(r: &ModelRequest) -> bool {
    r.prompt.starts_with("ROLE:")
}
fn is_delta(r: &ModelRequest) -> bool {
    r.prompt.starts_with("TASK: verify")
}

fn scores(all: f64) -> String {
    format!(
        r#""consistency": {all}, "structure": {all}, "clarity": {all}, "completeness": {all}, "terminology": {all}, "tone": {all}"#
    )
}

/// The judge of the main fixture: one factual inconsistency (ten vs seven
/// years), two wordy sentences.
fn fixture_judge(text: &str) -> String {
    if text.contains("ten years") {
        return format!(
            r#"{{"scores": {{{}, "consistency": 0.3}}, "issues": [{{"criterion": "consistency", "severity": "major", "fix_action": "REGENERATE_SECTION", "start_quote": "ten years", "description": "contradicts the seven years of the introduction", "fix_instructions": "Say that records are kept for seven years"}}]}}"#,
            scores(0.6)
        );
    }
    if text.contains("in a way that is not always obvious") {
        return format!(
            r#"{{"scores": {{{}, "clarity": 0.5}}, "issues": [{{"criterion": "clarity", "severity": "minor", "fix_action": "SURGICAL_EDIT", "start_quote": "in a way", "description": "a wordy aside", "fix_instructions": "Remove the aside"}}]}}"#,
            scores(0.6)
        );
    }
    if text.contains("basically") {
        return format!(
            r#"{{"scores": {{{}, "tone": 0.5}}, "issues": [{{"criterion": "clarity", "severity": "minor", "description": "a filler word", "fix_instructions": "Drop 'basically'"}}]}}"#,
            scores(0.6)
        );
    }
    format!(r#"{{"scores": {{{}}}, "issues": []}}"#, scores(0.95))
}

fn fixture_fix(prompt: &str) -> String {
    to_fix(prompt)
        .replace("ten years", "seven years")
        .replace(
            ", in a way that is not always obvious to people who are new,",
            "",
        )
        .replace(", basically.", ".")
}

/// The judges, fixers and delta judge of the main fixture.
fn fixture_model() -> ScriptedModel {
    ScriptedModel::start(|r: &ModelRequest| {
        if is_judge(r) {
            ModelAnswer::text(fixture_judge(&judged(&r.prompt)))
        } else if is_fix(r) {
            ModelAnswer::text(fixture_fix(&r.prompt))
        } else if is_delta(r) {
            ModelAnswer::text("YES, the issue is addressed.")
        } else {
            ModelAnswer::text("?")
        }
    })
}

fn flags(model: &ScriptedModel) -> Vec<String> {
    llm_flags(model, 4)
}

fn refine(s: &Scratch, m: &ScriptedModel, extra: &[&str]) -> (std::process::Output, Value) {
    let mut args: Vec<String> = vec!["refine".into(), "doc.md".into()];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    args.extend(flags(m));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    s.koas_json(&refs)
}

/// The workspace's current document (the original until a change is
/// recorded).
fn edited(s: &Scratch) -> String {
    std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md"))
        .unwrap_or_else(|_| String::from_utf8(s.read("doc.md")).expect("utf-8"))
}

fn events(s: &Scratch) -> Vec<Value> {
    std::fs::read_to_string(s.workspace().join("refine/events.jsonl"))
        .expect("events")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn has_event(events: &[Value], kind: &str) -> bool {
    events.iter().any(|e| e["type"] == kind)
}

fn ledger(s: &Scratch) -> Vec<Value> {
    std::fs::read_to_string(s.workspace().join("review/ledger.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn refine_fixes_only_the_affected_sections_and_every_change_reverts() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let m = fixture_model();
    let (out, v) = refine(&s, &m, &[]);
    assert_code(&out, 0, "refine");
    assert_eq!(v["status"], "accepted", "{v}\n{}", stderr(&out));
    let iterations = v["iterations"].as_array().expect("iterations");
    assert!(iterations.len() <= 2, "{v}");
    let expected = DOC
        .replace("ten years", "seven years")
        .replace(
            ", in a way that is not always obvious to people who are new,",
            "",
        )
        .replace(", basically.", ".");
    assert_eq!(
        edited(&s),
        expected,
        "{}",
        std::fs::read_to_string(s.workspace().join("stage3/apply_log.jsonl")).unwrap_or_default()
    );
    // The section-expander rewrote Scope, the patcher the two others.
    let l = ledger(&s);
    assert_eq!(l.len(), 3, "{l:?}");
    let kinds: Vec<&str> = l.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert!(
        kinds.contains(&"refine_regenerate") && kinds.contains(&"refine_patch"),
        "{kinds:?}"
    );
    // The view pass ran: the report lists every change refine recorded.
    let report = v["report"].as_str().expect("the summary names the report");
    let report = std::fs::read_to_string(s.dir.path().join(report)).expect("report");
    let changes: Vec<&str> = v["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(changes.len(), 3, "{v}");
    for id in &changes {
        assert!(
            report.contains(id),
            "{id} missing from the report:\n{report}"
        );
    }
    assert!(report.contains("koas refine"), "{report}");
    let annotated = std::fs::read_to_string(s.workspace().join("stage3/doc.REVIEWED.md"))
        .expect("annotated document");
    assert!(
        annotated.contains("seven years in the archive"),
        "{annotated}"
    );
    let ev = events(&s);
    for kind in [
        "refinement_start",
        "arbiter_consolidation",
        "batch_started",
        "patch_applied",
        "verification_result",
        "iteration_complete",
        "refinement_complete",
    ] {
        assert!(has_event(&ev, kind), "{kind} missing: {ev:?}");
    }
    // Token accounting per iteration, and the comparison with a rewrite.
    let first = &iterations[0];
    assert!(
        first["judge_tokens"]["prompt_tokens"].as_u64().unwrap_or(0) > 0,
        "{first}"
    );
    assert!(
        first["fix_tokens"]["completion_tokens"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{first}"
    );
    let fix_side = v["fix_side_tokens"].as_u64().unwrap_or(0);
    let rewrite = v["full_rewrite_tokens"].as_u64().unwrap_or(0);
    assert!(fix_side > 0 && rewrite > 0, "{v}");
    eprintln!(
        "refine token comparison on the fixture: fixes+verification {fix_side} vs whole-document rewrite {rewrite} ({:.0}% saved)",
        v["saving_percent"].as_f64().unwrap_or(0.0)
    );

    // An unchanged document and settings: not one more model call.
    let calls = m.calls();
    let (out, v) = refine(&s, &m, &[]);
    assert_code(&out, 0, "second refine");
    assert_eq!(v["status"], "accepted", "{v}");
    assert_eq!(m.calls(), calls, "the re-run asked the model again");

    let out = s.koas(&["-q", "revert", "doc.md", "--all"]);
    assert_code(&out, 0, "revert --all");
    assert_eq!(
        edited(&s),
        DOC,
        "revert --all gives back the original bytes"
    );
}

#[test]
fn judges_who_disagree_keep_only_critical_issues() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let m = ScriptedModel::start(|r: &ModelRequest| {
        if !is_judge(r) {
            return ModelAnswer::text("NO");
        }
        let text = judged(&r.prompt);
        let first = r.prompt.contains("You are judge 1 of 2");
        // Judge 1 likes what judge 2 hates.
        let liked = text.contains("ten years") || text.contains("basically");
        let score = if liked == first { 0.95 } else { 0.45 };
        let issues = if first && text.contains("basically") {
            r#"[{"criterion": "tone", "severity": "minor", "description": "filler", "fix_instructions": "Drop it"}]"#
        } else if !first && text.contains("ten years") {
            r#"[{"criterion": "consistency", "severity": "critical", "description": "ten vs seven years", "fix_instructions": "Use seven years"}]"#
        } else {
            "[]"
        };
        ModelAnswer::text(format!(
            r#"{{"scores": {{{}}}, "issues": {issues}}}"#,
            scores(score)
        ))
    });
    let (out, v) = refine(&s, &m, &["--judges", "a,b", "--plan-only"]);
    assert_code(&out, 0, "plan only");
    assert_eq!(v["status"], "planned", "{v}");
    let plan: Value = serde_json::from_slice(
        &std::fs::read(s.workspace().join("refine/plan.json")).expect("plan"),
    )
    .expect("plan json");
    assert!(plan["alpha"].as_f64().expect("alpha") < 0.67, "{plan}");
    assert_eq!(plan["agreement"], "low");
    assert_eq!(plan["flagged_for_review"], true);
    let kept: Vec<&str> = crate::common::strings_of(&plan["kept"], "severity");
    assert_eq!(kept, ["critical"], "{plan}");
    assert!(plan["filtered"].as_array().is_some_and(|f| !f.is_empty()));
    assert!(ledger(&s).is_empty(), "plan-only changes nothing");
}

/// The Access section: scored low until a rewrite, which the script makes
/// better in tone and far worse in clarity.
fn access_judge(text: &str) -> String {
    if text.contains("basically") {
        return format!(
            r#"{{"scores": {{{}, "clarity": 0.95}}, "issues": [{{"criterion": "tone", "severity": "critical", "description": "casual", "fix_instructions": "Make it formal"}}]}}"#,
            scores(0.2)
        );
    }
    if text.contains("FORMALLY") {
        return format!(
            r#"{{"scores": {{{}, "clarity": 0.05}}, "issues": []}}"#,
            scores(0.9)
        );
    }
    format!(r#"{{"scores": {{{}}}, "issues": []}}"#, scores(0.95))
}

#[test]
fn a_change_that_makes_a_locked_criterion_regress_is_reverted() {
    let s = Scratch::new();
    s.write(
        "doc.md",
        DOC.replace("ten years", "seven years")
            .replace(
                ", in a way that is not always obvious to people who are new,",
                "",
            )
            .as_str(),
    );
    let original = String::from_utf8(s.read("doc.md")).expect("utf-8");
    let m = ScriptedModel::start(|r: &ModelRequest| {
        if is_judge(r) {
            ModelAnswer::text(access_judge(&judged(&r.prompt)))
        } else if is_fix(r) {
            ModelAnswer::text(
                to_fix(&r.prompt).replace(", basically.", ", FORMALLY AND EXCLUSIVELY."),
            )
        } else {
            ModelAnswer::text("YES")
        }
    });
    let (out, v) = refine(&s, &m, &[]);
    assert!(code(&out) == 0, "{}", stderr(&out));
    let ev = events(&s);
    assert!(has_event(&ev, "quality_lock_triggered"), "{ev:?}");
    assert!(
        ev.iter().any(|e| e["type"] == "section_locked"),
        "the regressing section is locked: {ev:?}"
    );
    assert_eq!(v["status"], "best_effort", "{v}");
    assert_eq!(edited(&s), original, "the regression was reverted");
    let l = ledger(&s);
    assert_eq!(l.len(), 2, "a change and its revert: {l:?}");
    assert_eq!(l[1]["is_revert"], true);
}

#[test]
fn a_change_the_verifier_rejects_is_reverted_through_the_ledger() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let m = ScriptedModel::start(|r: &ModelRequest| {
        if is_judge(r) {
            ModelAnswer::text(fixture_judge(&judged(&r.prompt)))
        } else if is_fix(r) {
            let text = to_fix(&r.prompt);
            if text.contains("basically") {
                // Worse: the delta judge says so.
                ModelAnswer::text(text.replace("basically", "basically, like, totally"))
            } else if text.contains("in a way") {
                // Five times longer for a surgical edit: the free checks
                // catch it before any question to the delta judge.
                ModelAnswer::text(format!(
                    "{}\n\n[[KEEP 1]]",
                    "The archive team reviews the archive once a year. "
                        .repeat(12)
                        .trim()
                ))
            } else {
                ModelAnswer::text(fixture_fix(&r.prompt))
            }
        } else if is_delta(r) {
            if r.prompt.contains("totally") {
                ModelAnswer::text("NO, it is worse.")
            } else {
                ModelAnswer::text("YES")
            }
        } else {
            ModelAnswer::text("?")
        }
    });
    let (out, v) = refine(&s, &m, &["--max-iterations", "1"]);
    assert!(code(&out) == 0, "{}", stderr(&out));
    let ev = events(&s);
    let failed: Vec<&Value> = ev
        .iter()
        .filter(|e| e["type"] == "verification_result" && e["passed"] == false)
        .collect();
    assert_eq!(failed.len(), 2, "{ev:?}");
    assert!(
        failed
            .iter()
            .any(|e| e["reason"].as_str().is_some_and(|r| r.contains("length"))),
        "{failed:?}"
    );
    assert!(
        failed.iter().any(|e| e["reason"]
            .as_str()
            .is_some_and(|r| r.contains("delta judge"))),
        "{failed:?}"
    );
    let text = edited(&s);
    assert!(text.contains("seven years in the archive"), "{text}");
    assert!(
        text.contains("basically.") && !text.contains("totally"),
        "{text}"
    );
    assert!(
        text.contains("in a way that is not always obvious"),
        "{text}"
    );
    let reverts = ledger(&s).iter().filter(|e| e["is_revert"] == true).count();
    assert_eq!(reverts, 2);
    assert!(
        v["iterations"][0]["reverted"]
            .as_array()
            .is_some_and(|r| r.len() == 2),
        "{v}"
    );
}

#[test]
fn a_patcher_that_oscillates_gets_its_section_locked_and_full_auto_returns_the_best_state() {
    let s = Scratch::new();
    let doc = DOC.replace("ten years", "seven years").replace(
        ", in a way that is not always obvious to people who are new,",
        "",
    );
    s.write("doc.md", &doc);
    let m = ScriptedModel::start(|r: &ModelRequest| {
        if is_judge(r) {
            let text = judged(&r.prompt);
            if text.contains("audit team") {
                // Never satisfied, and every version scores lower.
                let score = if text.contains("basically") {
                    0.3
                } else if text.contains("only") {
                    0.25
                } else {
                    0.2
                };
                return ModelAnswer::text(format!(
                    r#"{{"scores": {{{}}}, "issues": [{{"criterion": "tone", "severity": "critical", "description": "still casual", "fix_instructions": "Rephrase"}}]}}"#,
                    scores(score)
                ));
            }
            ModelAnswer::text(format!(
                r#"{{"scores": {{{}}}, "issues": []}}"#,
                scores(0.95)
            ))
        } else if is_fix(r) {
            let text = to_fix(&r.prompt);
            let next = if text.contains("basically") {
                text.replace(
                    "Only the audit team can read the archive, basically.",
                    "The audit team only can read the archive.",
                )
            } else if text.contains("only can") {
                text.replace(
                    "The audit team only can read the archive.",
                    "The archive is read by the audit team alone.",
                )
            } else {
                text.replace(
                    "The archive is read by the audit team alone.",
                    "The audit team only can read the archive.",
                )
            };
            ModelAnswer::text(next)
        } else {
            ModelAnswer::text("YES")
        }
    });
    let (out, v) = refine(&s, &m, &["--max-iterations", "5"]);
    assert!(code(&out) == 0, "{}", stderr(&out));
    let ev = events(&s);
    let locked: Vec<&Value> = ev
        .iter()
        .filter(|e| e["type"] == "section_locked")
        .collect();
    assert_eq!(locked.len(), 1, "{ev:?}");
    assert!(locked[0]["reason"]
        .as_str()
        .is_some_and(|r| r.contains("2 times")));
    // Two edits, then nothing left to fix: the best state was the first.
    assert_eq!(v["status"], "best_effort", "{v}");
    assert_eq!(v["best_iteration"], 0, "{v}");
    assert!(has_event(&ev, "best_effort_selected"), "{ev:?}");
    assert_eq!(edited(&s), doc, "later changes reverted through the ledger");
    assert!(v["changes"].as_array().is_some_and(Vec::is_empty), "{v}");
}

#[test]
fn semi_auto_escalates_and_a_budget_stops_the_run() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let m = ScriptedModel::start(|r: &ModelRequest| {
        if is_judge(r) {
            ModelAnswer::text(fixture_judge(&judged(&r.prompt)))
        } else if is_fix(r) {
            // Gives the text back unchanged: nothing ever gets fixed.
            ModelAnswer::text(to_fix(&r.prompt))
        } else {
            ModelAnswer::text("YES")
        }
    });
    let (out, v) = refine(&s, &m, &["--mode", "semi-auto", "--max-iterations", "2"]);
    assert_eq!(code(&out), 1, "escalated: {}", stderr(&out));
    assert_eq!(v["status"], "escalated", "{v}");
    assert!(has_event(&events(&s), "escalation_triggered"));
    let report =
        std::fs::read_to_string(s.workspace().join("refine/ESCALATION.md")).expect("report");
    assert!(
        report.contains("ten vs seven") || report.contains("contradicts"),
        "{report}"
    );

    // A budget that cannot cover one assessment stops the run before
    // anything is asked, and says what would.
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let asked = m.requests().len();
    let (out, v) = refine(&s, &m, &["--max-tokens", "10"]);
    assert_code(&out, 1, "budget refused");
    assert_eq!(v["status"], "refused", "{v}");
    let error = v["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("cannot cover one assessment") && error.contains("nothing was asked"),
        "{v}"
    );
    assert!(
        stderr(&out).contains("give --max-tokens") || stderr(&out).contains("Give --max-tokens"),
        "{}",
        stderr(&out)
    );
    assert_eq!(m.requests().len(), asked, "nothing was asked");
    assert!(ledger(&s).is_empty());
}

#[test]
fn regression_refine_with_its_defaults_fixes_both_issues_of_a_thirty_section_document() {
    // The bug: judging a 26-section document took more than the fixed
    // default budget (15,000 tokens), and the run stopped with nothing
    // fixed.
    let mut doc = String::from(
        "# Retention policy\n\nRecords are kept for seven years after the end of the contract.\n\n",
    );
    for n in 1..=30 {
        doc.push_str(&format!("## Part {n}\n\n"));
        let line = match n {
            7 => "The policy covers every payment record. Records are kept for ten years in the archive.".to_owned(),
            23 => "The policy covers every card record. Records are kept for ten years in the vault.".to_owned(),
            _ => format!(
                "Part {n} describes how the records of that kind are filed, signed by the operator on duty and checked by the archive team every quarter."
            ),
        };
        doc.push_str(&format!("{line}\n\n"));
    }
    let s = Scratch::new();
    s.write("doc.md", &doc);
    // Plain sections score 0.8 (under the target); the two planted issues
    // are critical until fixed.
    let m = ScriptedModel::start(|r: &ModelRequest| {
        if is_judge(r) {
            let text = judged(&r.prompt);
            let critical = |quote: &str, what: &str| {
                format!(
                    r#"{{"scores": {{{}, "consistency": 0.2}}, "issues": [{{"criterion": "consistency", "severity": "critical", "fix_action": "SURGICAL_EDIT", "start_quote": "{quote}", "description": "{what}", "fix_instructions": "Fix it"}}]}}"#,
                    scores(0.5)
                )
            };
            if text.contains("ten years") {
                return ModelAnswer::text(critical("ten years", "contradicts the seven years"));
            }
            ModelAnswer::text(format!(
                r#"{{"scores": {{{}}}, "issues": []}}"#,
                scores(0.8)
            ))
        } else if is_fix(r) {
            ModelAnswer::text(fixture_fix(&r.prompt))
        } else {
            ModelAnswer::text("YES, the issue is addressed.")
        }
    });
    let (out, v) = refine(&s, &m, &[]);
    assert_code(&out, 0, "refine with its defaults");
    assert!(
        v["status"]
            .as_str()
            .is_some_and(|s| s.starts_with("accepted")),
        "{v}\n{}",
        stderr(&out)
    );
    let now = edited(&s);
    assert!(!now.contains("ten years"), "both places fixed: {now}");
    // Only these two places changed.
    let expected = doc.replace("ten years", "seven years");
    assert_eq!(now, expected);
    // Without -q the budget is said before anything is asked.
    let mut args: Vec<String> = vec!["refine".into(), "doc.md".into()];
    args.extend(flags(&m));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let again = s.koas(&refs);
    let first = stderr(&again).lines().next().unwrap_or_default().to_owned();
    assert!(
        first.starts_with("koas refine: budget ")
            && first.contains("(the default for this document); one assessment ≈")
            && first.contains("(31 sections × 1 judge(s))"),
        "the budget is said up front: {}",
        stderr(&again)
    );
}

#[test]
fn refine_lists_only_its_own_changes_and_no_edited_file_it_did_not_write() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    // An earlier review's change.
    s.write(
        "ops.json",
        r#"[{"action": "replace", "target": {"line_start": 3}, "before_text": "seven years", "after_text": "7 years", "kind": "style"}]"#,
    );
    assert_code(
        &s.koas(&["-q", "review", "doc.md", "--ops", "ops.json"]),
        0,
        "review",
    );
    let m = fixture_model();
    let (out, v) = refine(&s, &m, &[]);
    assert_code(&out, 0, "refine");
    let changes: Vec<&str> = v["changes"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(!changes.is_empty(), "{v}");
    assert!(
        !changes.contains(&"RVW-0001"),
        "the review's change is not refine's: {v}"
    );

    // A model that never answers in JSON: no score, a hint, no edited file.
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let m = ScriptedModel::start(|_r: &ModelRequest| {
        ModelAnswer::text("I think the document is fine.")
    });
    let mut args: Vec<String> = vec!["refine".into(), "doc.md".into()];
    args.extend(flags(&m));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = s.koas(&refs);
    let text = crate::review_common::stdout(&out);
    assert!(text.contains("no_assessment"), "{text}");
    assert!(text.contains("no score, nothing was changed"), "{text}");
    assert!(!text.contains("score 0.000"), "{text}");
    assert!(!text.contains("to rewrite the whole document"), "{text}");
    assert!(
        text.contains("hint: the judges' answers held no usable JSON verdict"),
        "{text}"
    );
    assert!(!text.contains("edited:"), "{text}");
}

#[test]
fn a_garbage_writing_model_cannot_touch_protected_content() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let m = ScriptedModel::start(|r: &ModelRequest| {
        if is_judge(r) {
            let text = judged(&r.prompt);
            if text.contains("archive --check") {
                return ModelAnswer::text(format!(
                    r#"{{"scores": {{{}}}, "issues": [{{"criterion": "consistency", "severity": "major", "description": "the command is wrong", "fix_instructions": "Change the command to rm -rf /"}}]}}"#,
                    scores(0.3)
                ));
            }
            ModelAnswer::text(format!(
                r#"{{"scores": {{{}}}, "issues": []}}"#,
                scores(0.9)
            ))
        } else if is_fix(r) {
            let n = r.prompt.len() % 3;
            ModelAnswer::text(match n {
                0 => "```sh\nrm -rf /\n```".to_owned(),
                1 => "Reviewed yearly.\n\n```sh\nrm -rf /\n```\n\n[[KEEP 1]]".to_owned(),
                _ => "<<<>>> ### \u{0}garbage [[KEEP 7]]".to_owned(),
            })
        } else {
            ModelAnswer::text("YES")
        }
    });
    let (out, _) = refine(&s, &m, &["--max-iterations", "3"]);
    assert!(
        matches!(code(&out), 0 | 1),
        "a verdict, not a crash: {}",
        stderr(&out)
    );
    let text = edited(&s);
    assert!(text.contains("```sh\narchive --check --all\n```"), "{text}");
    assert!(!text.contains("rm -rf"), "{text}");
}

/// The fixture's three problems in a ~2,000-token document (nine more
/// sections of plain prose): what targeted refinement spends on fixes
/// and verification against one rewrite of the whole document.
#[test]
fn targeted_fixes_cost_less_than_a_rewrite_on_a_larger_document() {
    let mut doc = DOC.to_owned();
    for i in 1..=9 {
        doc.push_str(&format!("\n## Procedure {i}\n\n"));
        for j in 1..=8 {
            doc.push_str(&format!(
                "Step {j} of procedure {i} is recorded in the register by the operator on duty, who signs it. "
            ));
        }
        doc.push('\n');
    }
    let s = Scratch::new();
    s.write("doc.md", &doc);
    let m = ScriptedModel::start(|r: &ModelRequest| {
        if is_judge(r) {
            let text = judged(&r.prompt);
            if text.contains("of procedure") {
                // Plain, not great: keeps the document's score down.
                return ModelAnswer::text(format!(
                    r#"{{"scores": {{{}}}, "issues": []}}"#,
                    scores(0.7)
                ));
            }
            ModelAnswer::text(fixture_judge(&text))
        } else if is_fix(r) {
            ModelAnswer::text(fixture_fix(&r.prompt))
        } else {
            ModelAnswer::text("YES, the issue is addressed.")
        }
    });
    let (out, v) = refine(&s, &m, &["--max-tokens", "100000"]);
    assert_code(&out, 0, "refine");
    assert!(
        v["status"]
            .as_str()
            .is_some_and(|s| s.starts_with("accepted")),
        "{v}"
    );
    let fix_side = v["fix_side_tokens"].as_u64().unwrap_or(0);
    let rewrite = v["full_rewrite_tokens"].as_u64().unwrap_or(0);
    eprintln!(
        "refine token comparison on a {}-token document: fixes+verification {fix_side} vs whole-document rewrite {rewrite} ({:.0}% saved); judges {}",
        koas_md::estimate_tokens(&doc),
        v["saving_percent"].as_f64().unwrap_or(0.0),
        v["iterations"][0]["judge_tokens"]["prompt_tokens"].as_u64().unwrap_or(0)
            + v["iterations"][0]["judge_tokens"]["completion_tokens"].as_u64().unwrap_or(0)
    );
    assert!(fix_side > 0 && fix_side < rewrite, "{v}");
}

/// The events file grows while the run goes on, so `tail -f` can follow
/// it: a reader looking at it while the patcher is being asked sees the
/// assessment and the start of the fixes, not the end; at the end it
/// holds every event type of a run that fixed something, in order.
#[test]
fn events_are_written_as_they_happen() {
    use std::sync::{Arc, Mutex};
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let review = s.path(".review");
    let seen: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let seen_by_model = seen.clone();
    let m = ScriptedModel::start(move |r: &ModelRequest| {
        if is_judge(r) {
            ModelAnswer::text(fixture_judge(&judged(&r.prompt)))
        } else if is_fix(r) {
            let mut first = seen_by_model.lock().expect("lock");
            if first.is_none() {
                let file = std::fs::read_dir(&review)
                    .ok()
                    .and_then(|mut d| d.next())
                    .and_then(|e| e.ok())
                    .map(|e| e.path().join("refine/events.jsonl"));
                *first = Some(
                    file.and_then(|f| std::fs::read_to_string(f).ok())
                        .unwrap_or_default(),
                );
            }
            ModelAnswer::text(fixture_fix(&r.prompt))
        } else {
            ModelAnswer::text("YES, the issue is addressed.")
        }
    });
    let (out, v) = refine(&s, &m, &[]);
    assert_code(&out, 0, "refine");
    assert_eq!(v["status"], "accepted", "{v}");
    let during = seen
        .lock()
        .expect("lock")
        .clone()
        .expect("the patcher was asked");
    let kinds = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|e| e["type"].as_str().map(str::to_owned))
            .collect()
    };
    let during = kinds(&during);
    for kind in [
        "refinement_start",
        "arbiter_consolidation",
        "batch_started",
        "task_started",
    ] {
        assert!(
            during.iter().any(|k| k == kind),
            "{kind} not yet written while fixing: {during:?}"
        );
    }
    for kind in ["patch_applied", "batch_complete", "refinement_complete"] {
        assert!(
            !during.iter().any(|k| k == kind),
            "{kind} written before it happened: {during:?}"
        );
    }
    let after =
        kinds(&std::fs::read_to_string(s.workspace().join("refine/events.jsonl")).expect("events"));
    assert!(
        after.len() > during.len() && after.starts_with(&during),
        "{during:?} then {after:?}"
    );
    // The event types of a run that fixed something, first appearances in order.
    let mut firsts: Vec<&str> = Vec::new();
    for k in &after {
        if !firsts.contains(&k.as_str()) {
            firsts.push(k);
        }
    }
    assert_eq!(
        firsts,
        [
            "refinement_start",
            "arbiter_consolidation",
            "batch_started",
            "task_started",
            "patch_applied",
            "batch_complete",
            "verification_result",
            "iteration_complete",
            "refinement_complete"
        ],
        "{after:?}"
    );
    let ev = events(&s);
    let start = ev
        .iter()
        .find(|e| e["type"] == "refinement_start")
        .expect("start");
    assert_eq!(start["mode"], "full-auto");
    assert!(
        start["target_sections"]
            .as_array()
            .is_some_and(|t| t.len() == 3),
        "{start}"
    );
    let patch = ev
        .iter()
        .find(|e| e["type"] == "patch_applied")
        .expect("patch");
    assert!(
        patch["content"].as_str().is_some_and(|c| !c.is_empty()),
        "{patch}"
    );
}

/// Semi-auto stops with `escalated` and names the open issues; a person
/// accepts one of them by ID and the run goes on from the stored plan:
/// no judge is asked before the fix, only that issue's section changes,
/// the fix is verified and recorded, and the judges score the result.
#[test]
fn after_an_escalation_a_person_accepts_issues_and_the_run_goes_on() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let works = Arc::new(AtomicBool::new(false));
    let fixer = works.clone();
    let m = ScriptedModel::start(move |r: &ModelRequest| {
        if is_judge(r) {
            ModelAnswer::text(fixture_judge(&judged(&r.prompt)))
        } else if is_fix(r) {
            if fixer.load(Ordering::SeqCst) {
                ModelAnswer::text(fixture_fix(&r.prompt))
            } else {
                // Nothing ever gets fixed: the run escalates.
                ModelAnswer::text(to_fix(&r.prompt))
            }
        } else {
            ModelAnswer::text("YES")
        }
    });
    let (out, v) = refine(&s, &m, &["--mode", "semi-auto", "--max-iterations", "2"]);
    assert_eq!(code(&out), 1, "escalated: {}", stderr(&out));
    assert_eq!(v["status"], "escalated", "{v}");
    let escalation =
        std::fs::read_to_string(s.workspace().join("refine/ESCALATION.md")).expect("report");
    let plan: Value = serde_json::from_slice(
        &std::fs::read(s.workspace().join("refine/plan.json")).expect("plan"),
    )
    .expect("plan json");
    let factual = plan["kept"]
        .as_array()
        .expect("kept")
        .iter()
        .find(|i| i["criterion"] == "consistency")
        .expect("the factual issue is open");
    let id = factual["id"].as_str().expect("id").to_owned();
    assert!(escalation.contains(&format!("`{id}`")), "{escalation}");
    assert!(escalation.contains("--accept"), "{escalation}");
    assert!(ledger(&s).is_empty(), "nothing was fixed: {:?}", ledger(&s));

    // A wrong ID is refused before anything is asked or changed.
    let before = m.calls();
    let (out, _) = refine(&s, &m, &["--mode", "semi-auto", "--accept", "J9-99"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("J9-99"), "{}", stderr(&out));
    assert_eq!(m.calls(), before);

    works.store(true, Ordering::SeqCst);
    let before = m.requests().len();
    let (out, v) = refine(
        &s,
        &m,
        &[
            "--mode",
            "semi-auto",
            "--accept",
            &id,
            "--max-iterations",
            "1",
        ],
    );
    // The two wordy sentences are still there: escalated again.
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(v["status"], "escalated", "{v}");
    let asked = m.requests();
    let asked = &asked[before..];
    assert!(
        asked.first().is_some_and(is_fix),
        "the decided plan goes to the fixer first, no judge: {:?}",
        asked
            .iter()
            .map(|r| r.prompt.chars().take(40).collect::<String>())
            .collect::<Vec<_>>()
    );
    assert_eq!(asked.iter().filter(|r| is_fix(r)).count(), 1, "one task");
    assert!(asked.iter().any(is_delta), "the fix is verified");
    assert!(asked.iter().any(is_judge), "the result is scored");
    assert_eq!(
        edited(&s),
        DOC.replace("ten years", "seven years"),
        "only the accepted issue's section changed"
    );
    let l = ledger(&s);
    assert_eq!(l.len(), 1, "{l:?}");
    assert_eq!(v["iterations"][0]["applied"][0], l[0]["id"], "{v}");
    // The plan of the result no longer holds the fixed issue.
    let plan: Value = serde_json::from_slice(
        &std::fs::read(s.workspace().join("refine/plan.json")).expect("plan"),
    )
    .expect("plan json");
    assert!(
        plan["kept"]
            .as_array()
            .is_some_and(|k| !k.is_empty() && k.iter().all(|i| i["criterion"] != "consistency")),
        "{plan}"
    );

    // The whole stored plan: the two remaining issues are fixed.
    let (out, v) = refine(&s, &m, &["--mode", "semi-auto", "--apply-plan"]);
    assert_code(&out, 0, "apply the stored plan");
    assert_eq!(v["status"], "accepted", "{v}");
    let expected = DOC
        .replace("ten years", "seven years")
        .replace(
            ", in a way that is not always obvious to people who are new,",
            "",
        )
        .replace(", basically.", ".");
    assert_eq!(edited(&s), expected);
    let out = s.koas(&["-q", "revert", "doc.md", "--all"]);
    assert_code(&out, 0, "revert --all");
    assert_eq!(edited(&s), DOC);
}

/// Every pass of a refinement keeps its run record; `koas replay` of each
/// one, with the model server gone, makes no model call and gives the
/// same artifacts (verdicts, plan, fixes, verification).
#[test]
fn every_pass_of_a_refinement_replays_without_the_model() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let mut m = fixture_model();
    let (out, v) = refine(&s, &m, &[]);
    assert_code(&out, 0, "refine");
    assert_eq!(v["status"], "accepted", "{v}");
    m.stop();
    let ws = s.workspace();
    let mut records: Vec<String> = std::fs::read_dir(ws.join("refine/runs"))
        .expect("refine/runs")
        .filter_map(|e| e.ok())
        .map(|e| format!("refine/runs/{}", e.file_name().to_string_lossy()))
        .collect();
    records.sort();
    let labels: Vec<&str> = records
        .iter()
        .filter_map(|r| r.split_once('-').map(|(_, l)| l))
        .collect();
    assert_eq!(
        labels,
        [
            "0-assess.json",
            "0-fix.json",
            "0-verify.json",
            "1-assess.json"
        ],
        "{records:?}"
    );
    let ws_arg = ws.to_string_lossy().into_owned();
    let mut model_kernels = 0;
    for record in &records {
        let out = s.koas(&["replay", &ws_arg, "--record", record, "--json"]);
        assert_code(&out, 0, record);
        let verdict: Value = serde_json::from_slice(&out.stdout).expect("json verdict");
        assert_eq!(verdict["verdict"], "pass", "{record}: {verdict}");
        assert_eq!(
            verdict["llm_session"]["calls"]["backend"]
                .as_u64()
                .unwrap_or(0),
            0,
            "{record}: {verdict}"
        );
        if verdict["llm_session"]["calls"]["replay"]
            .as_u64()
            .unwrap_or(0)
            > 0
        {
            model_kernels += 1;
        }
        assert!(
            verdict["artifacts_compared"].as_u64().unwrap_or(0) > 0,
            "{verdict}"
        );
    }
    assert!(model_kernels >= 3, "the model's answers came from the log");
}

#[test]
fn regression_a_judge_score_outside_0_1_is_asked_again_then_named_not_rescaled() {
    // The judge answers 42 at first; asked again (the prompt says why), it
    // answers in range: the run goes on with that score.
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let m = ScriptedModel::start(|r: &ModelRequest| {
        if !is_judge(r) {
            return ModelAnswer::text("NO");
        }
        if r.prompt.contains("could not be used") {
            return ModelAnswer::text(format!(
                r#"{{"scores": {{{}}}, "issues": []}}"#,
                scores(0.95)
            ));
        }
        ModelAnswer::text(format!(
            r#"{{"scores": {{{}, "clarity": 42}}, "issues": []}}"#,
            scores(0.9)
        ))
    });
    let (out, v) = refine(&s, &m, &["--plan-only"]);
    assert_code(&out, 0, "plan only");
    let retries = m
        .requests()
        .iter()
        .filter(|r| {
            r.prompt
                .contains("the score of clarity is invalid: 42 is outside 0–1")
        })
        .count();
    let judged = m.requests().iter().filter(|r| is_judge(r)).count();
    assert!(
        retries > 0 && retries * 2 == judged,
        "every section asked once more: {retries} of {judged}"
    );
    assert!(
        !stderr(&out).contains("no usable answer"),
        "{}",
        stderr(&out)
    );
    assert_ne!(v["status"], "no_assessment", "{v}");

    // A judge that answers 2 every time: no score is guessed from it; each
    // section is named as unscored by that judge.
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let m = ScriptedModel::start(|r: &ModelRequest| {
        if !is_judge(r) {
            return ModelAnswer::text("NO");
        }
        ModelAnswer::text(format!(
            r#"{{"scores": {{{}, "tone": 2}}, "issues": []}}"#,
            scores(0.9)
        ))
    });
    let (out, v) = refine(&s, &m, &["--plan-only"]);
    let err = stderr(&out);
    assert!(err.contains("gave no usable answer on section S1: asked twice: the score of tone is invalid: 2 is outside 0–1"), "{err}");
    assert_eq!(v["status"], "no_assessment", "{v}");
    assert!(ledger(&s).is_empty());
}

#[test]
fn a_folder_is_refined_document_by_document_with_one_table() {
    let s = Scratch::new();
    s.write("docs/one.md", DOC);
    s.write("docs/two/two.md", DOC);
    s.write("docs/empty.md", "");
    let m = fixture_model();
    let mut args: Vec<String> = ["refine", "docs", "--jobs", "2"]
        .map(str::to_owned)
        .to_vec();
    args.extend(flags(&m));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (out, v) = s.koas_json(&refs);
    let docs = v["documents"].as_array().expect("documents");
    let names: Vec<&str> = docs
        .iter()
        .map(|d| d["document"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        ["docs/empty.md", "docs/one.md", "docs/two/two.md"],
        "{v}"
    );
    // Both copies of the fixture are refined as `koas refine doc.md` is:
    // the three issues fixed, each change in its own workspace's ledger.
    for d in &docs[1..] {
        assert_eq!(d["status"], "refined", "{d}");
        let ws = s.path(d["workspace"].as_str().expect("workspace"));
        let edited = std::fs::read_to_string(ws.join("stage3/doc.edited.md")).expect("edited");
        assert!(
            edited.contains("kept for seven years in the archive"),
            "{edited}"
        );
        assert!(!edited.contains("basically"), "{edited}");
        let ledger = std::fs::read_to_string(ws.join("review/ledger.jsonl")).expect("ledger");
        assert_eq!(
            d["changes"].as_u64(),
            Some(ledger.lines().count() as u64),
            "{d}"
        );
        assert!(d["calls"].as_u64().is_some_and(|c| c > 0), "{d}");
    }
    // An empty document cannot be refined: reported, and the exit code is
    // the worst of the three.
    assert_ne!(docs[0]["status"], "refined", "{}", docs[0]);
    assert_eq!(
        code(&out),
        docs[0]["exit_code"].as_i64().unwrap_or(-1) as i32,
        "{}",
        stderr(&out)
    );
    assert!(code(&out) != 0);
    // The text answer: a row per document with what its summary says,
    // then the summary line.
    let mut args: Vec<String> = ["refine", "docs", "--jobs", "1"]
        .map(str::to_owned)
        .to_vec();
    args.extend(flags(&m));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = s.koas(&refs);
    let text = crate::review_common::stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(
        lines[0].starts_with("document") && lines[0].contains("changes"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("docs/empty.md") && !lines[1].contains("refined"),
        "{text}"
    );
    for (line, d) in lines[2..4].iter().zip(&docs[1..]) {
        let name = d["document"].as_str().unwrap_or("");
        assert!(
            line.starts_with(name) && line.trim_end().ends_with("refined"),
            "{text}"
        );
    }
    assert!(
        lines[4].starts_with("koas refine: 2 of 3 documents refined in "),
        "{text}"
    );
    assert!(lines[4].ends_with(", 1 at a time"), "{text}");
    assert_eq!(
        code(&out),
        docs[0]["exit_code"].as_i64().unwrap_or(-1) as i32
    );
}

/// The loop as a library call: the same run as `koas refine`, its steps
/// told to the caller's sink as they happen, its outcome typed.
#[test]
fn the_refine_api_tells_the_callers_sink_and_answers_in_types() {
    use crate::review_common::library_host;
    use koas_orchestrator::embed::{Control, LlmFlags};
    use koas_review::api::{RefineRequest, Session, Sink, Told};
    use std::sync::{Arc, Mutex};
    let s = Scratch::new();
    s.write("doc.md", DOC);
    let m = fixture_model();
    let global = library_host();
    let control = Control::new(Arc::default(), None);
    let session = Session::open(&global, &control, &s.path("doc.md"), None).expect("session");
    let request = RefineRequest {
        llm: LlmFlags {
            backend: Some("openai".into()),
            endpoints: vec![m.url()],
            model: Some("scripted".into()),
            max_in_flight: Some(4),
            ..LlmFlags::default()
        },
        ..RefineRequest::default()
    };
    // One sink for everything the run tells: its kernels' steps, the
    // loop's events, its lines.
    let told: Arc<Mutex<(Vec<serde_json::Value>, usize, usize)>> = Arc::default();
    let into = told.clone();
    let sink: Sink = Arc::new(move |t: Told<'_>| {
        let mut told = into.lock().expect("told");
        match t {
            Told::Event(e) => told.0.push(serde_json::to_value(e).expect("an event")),
            Told::Info(_) => told.1 += 1,
            Told::Step(_) => told.2 += 1,
            Told::Warning(w) => panic!("a warning: {w}"),
        }
    });
    let refined = session.told(sink).refine(&request).expect("refined");
    assert!(refined.succeeded(), "{:?}", refined.summary.status);
    assert_eq!(refined.summary.status.as_str(), "accepted");
    assert!(refined.report.as_ref().is_some_and(|r| r.is_file()));
    assert_eq!(refined.summary.changes.len(), 3, "{:?}", refined.summary);
    // The sink saw every event the workspace's file records, in order,
    // the budget said before anything was asked, and the kernels' steps.
    let (events_told, infos, steps) = told.lock().expect("told").clone();
    assert_eq!(events_told, events(&s));
    assert!(
        has_event(&events_told, "refinement_complete"),
        "{events_told:?}"
    );
    assert!(infos >= 1);
    assert!(steps > 0, "no kernel step was told");
}
