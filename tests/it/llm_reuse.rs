//! What a server reused of the prompts (issue 47), through the real
//! binary: a server that reports its prompt cache the way llama.cpp's
//! does (`timings.cache_n`) gets each answer's reuse written to the
//! exchange log, and `koas review`'s summary line adds it up exactly as
//! the log has it; a server that says nothing gets nothing written and
//! nothing said (an unknown reuse is not a reuse of 0).

use crate::review_common::{assert_code, llm_flags, stderr, stdout, Scratch};
use koas_test_support::model::{ModelAnswer, ModelOptions, ModelRequest, ScriptedModel};
use serde_json::Value;

/// Six sections, each with a typo.
fn document() -> String {
    (0..6)
        .map(|i| format!("# Part {i}\n\nThe bandwith of part {i} of the service is high.\n\n"))
        .collect()
}

/// Summaries get a sentence, edit requests no change.
fn answer(r: &ModelRequest) -> ModelAnswer {
    if r.prompt.contains("BEGIN_EDIT_OPS") {
        ModelAnswer::text("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS")
    } else {
        ModelAnswer::text("A part about the bandwidth of the service.")
    }
}

/// Runs `koas review` against `model`; its stdout and the exchange log's
/// lines answered by the server.
fn review(model: &ScriptedModel) -> (String, Vec<Value>) {
    let s = Scratch::new();
    s.write("doc.md", &document());
    let mut args = vec!["-q", "review", "doc.md"];
    let flags = llm_flags(model, 2);
    args.extend(flags.iter().map(String::as_str));
    let out = s.koas(&args);
    assert_code(&out, 0, "review");
    let log = std::fs::read_to_string(s.workspace().join("llm/exchanges.jsonl"))
        .unwrap_or_else(|e| panic!("the exchange log: {e}\n{}", stderr(&out)));
    let answered = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|e| e["source"] == "backend")
        .collect();
    (stdout(&out), answered)
}

#[test]
fn the_summary_says_what_the_server_reused_as_the_exchange_log_recorded_it() {
    let model = ScriptedModel::start_with(
        ModelOptions {
            report_reuse: true,
            ..ModelOptions::default()
        },
        answer,
    );
    let (text, answered) = review(&model);
    assert!(answered.len() >= 6, "{} answers", answered.len());
    let prompt: u64 = answered
        .iter()
        .map(|e| e["prompt_tokens"].as_u64().expect("prompt tokens"))
        .sum();
    let reused: u64 = answered
        .iter()
        .map(|e| {
            e["reused_prompt_tokens"]
                .as_u64()
                .unwrap_or_else(|| panic!("every answer says its reuse: {e}"))
        })
        .sum();
    // Requests of a kind begin alike: the server reused something, and
    // never more than the prompts held.
    assert!(reused > 0 && reused < prompt, "{reused} of {prompt}");
    let said = format!(", {prompt} prompt tokens ({reused} reused by the server), ");
    assert!(text.contains(&said), "{said:?} not in:\n{text}");
    assert!(text.contains("model:     scripted (openai): "), "{text}");
}

#[test]
fn a_server_that_says_nothing_of_its_cache_gets_no_reuse_written_or_said() {
    let model = ScriptedModel::start(answer);
    let (text, answered) = review(&model);
    assert!(answered.len() >= 6, "{} answers", answered.len());
    for e in &answered {
        assert!(e.get("reused_prompt_tokens").is_none(), "{e}");
    }
    assert!(text.contains("model:     scripted (openai): "), "{text}");
    assert!(!text.contains("reused by the server"), "{text}");
    assert!(!text.contains("prompt tokens"), "{text}");
}

/// Regression (issue 49): an unchanged re-run that asked the model nothing
/// printed the cached results' figures ("16 asked of the model", "14
/// worker calls") as this run's work, above "model: 0 requests". It says
/// they were reused, and what the model was asked now.
#[test]
fn regression_a_rerun_says_its_results_were_reused() {
    let model = ScriptedModel::start(answer);
    let s = Scratch::new();
    s.write("doc.md", &document());
    let mut args = vec!["-q", "review", "doc.md"];
    let flags = llm_flags(&model, 2);
    args.extend(flags.iter().map(String::as_str));
    let first = s.koas(&args);
    assert_code(&first, 0, "review");
    let text = stdout(&first);
    assert!(!text.contains("reused from an earlier run"), "{text}");
    assert!(text.contains("  pyramid:   "), "{text}");
    let again = s.koas(&args);
    assert_code(&again, 0, "the same review again");
    let text = stdout(&again);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} line in:\n{text}"))
            .to_owned()
    };
    assert!(
        line("  pyramid:   ")
            .starts_with("  pyramid:   reused from an earlier run, nothing redone (then: "),
        "{text}"
    );
    assert!(
        line("  edit plan: ")
            .starts_with("  edit plan: reused from an earlier run, nothing redone (then: "),
        "{text}"
    );
    assert!(line("  model:     ").contains(": 0 requests"), "{text}");
}
