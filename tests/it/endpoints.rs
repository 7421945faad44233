//! Several endpoints for one model through the real binary: endpoints
//! serving different models are refused before any request, a server
//! killed mid-run is failed over without asking anything twice, every
//! endpoint down stops the run and a re-run asks only what was missing,
//! and `koas llm ping` with two endpoints.

use crate::common::Project;
use crate::review_common::{code, stderr, stdout, Scratch};
use koas_test_support::model::{ModelAnswer, ModelOptions, ModelRequest, ScriptedModel};
use std::collections::BTreeSet;
use std::time::Duration;

fn doc() -> String {
    let mut d = String::from("# Handbook\n\n");
    for i in 0..6 {
        d.push_str(&format!(
            "## Part {i}\n\nThis part number {i} explains how teh service handles its work.\n\n"
        ));
    }
    d
}

/// A typo fixed in each part, and a short summary: enough requests to
/// spread, and changes to compare.
fn script(delay: Duration) -> impl Fn(&ModelRequest) -> ModelAnswer + Send + Sync + 'static {
    move |r: &ModelRequest| {
        if r.prompt.contains("BEGIN_EDIT_OPS") {
            ModelAnswer::after(
                delay,
                "BEGIN_EDIT_OPS\n[{\"action\": \"replace\", \"line\": 3, \"before_text\": \"teh service\", \"after_text\": \"the service\", \"kind\": \"typo\"}]\nEND_EDIT_OPS",
            )
        } else {
            ModelAnswer::after(delay, "The part describes an operation.")
        }
    }
}

fn scratch() -> Scratch {
    let s = Scratch::new();
    std::fs::write(s.dir.path().join("doc.md"), doc()).expect("doc");
    // Short retry waits, so the failing runs end quickly.
    std::fs::write(
        s.dir.path().join("koas.toml"),
        "[llm]\nbackoff_initial_ms = 20\nbackoff_max_ms = 40\n",
    )
    .expect("koas.toml");
    s
}

fn review(s: &Scratch, endpoints: &[String]) -> std::process::Output {
    let mut args: Vec<String> = ["-q", "review", "doc.md", "--llm-backend", "openai"]
        .map(str::to_owned)
        .to_vec();
    for e in endpoints {
        args.extend(["--llm-endpoint".to_owned(), e.clone()]);
    }
    args.extend(["--llm-model", "scripted", "--llm-max-in-flight", "2"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    s.koas(&args)
}

/// The prompts a server answered in full.
fn answered(m: &ScriptedModel) -> Vec<String> {
    m.requests()
        .into_iter()
        .zip(m.timeline())
        .filter(|(_, t)| t.answered)
        .map(|(r, _)| r.prompt)
        .collect()
}

#[test]
fn endpoints_serving_different_models_are_refused_before_any_chat_request() {
    let a = ScriptedModel::start(script(Duration::ZERO));
    let b = ScriptedModel::start_as("another-model", script(Duration::ZERO));
    // `koas run`, the endpoints in the pipeline's [llm] table.
    let p = Project::new(
        "a document\n",
        &["source_len", "asks_llm"],
        &format!(
            "[llm]\nbackend = \"openai\"\nmodel = \"scripted\"\nendpoints = [\"{}\", {{ url = \"{}\", max_in_flight = 3 }}]\n",
            a.url(),
            b.url()
        ),
    );
    let out = p.run(&[]);
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(code(&out), 1, "{all}");
    let named = format!("{} (serves another-model)", b.url());
    let record = p.record().to_string();
    assert!(
        all.contains(&named) || record.contains(&named),
        "{all}\n{record}"
    );
    assert!(record.contains("MODEL_MISMATCH"), "{record}");
    assert_eq!((a.calls(), b.calls()), (0, 0), "no chat request was sent");

    // `koas review` with the flags: nothing is asked either (how the
    // review reports a stopped model is the review's business).
    let s = scratch();
    let out = review(&s, &[a.url(), b.url()]);
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(all.contains("MODEL_MISMATCH"), "{all}");
    assert_eq!((a.calls(), b.calls()), (0, 0), "no chat request was sent");
}

#[test]
fn an_endpoint_killed_mid_run_is_failed_over_and_nothing_is_asked_twice() {
    let mut a = ScriptedModel::start(script(Duration::from_millis(400)));
    let b = ScriptedModel::start(script(Duration::from_millis(20)));
    let s = scratch();
    let endpoints = [a.url(), b.url()];
    let out = std::thread::scope(|scope| {
        let run = scope.spawn(|| review(&s, &endpoints));
        // Killed while it answers its first request.
        while a.timeline().is_empty() && !run.is_finished() {
            std::thread::sleep(Duration::from_millis(5));
        }
        a.kill();
        run.join().expect("run")
    });
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(a.calls() >= 1, "a was asked before it died");
    let mut all = answered(&a);
    all.extend(answered(&b));
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!(distinct.len(), all.len(), "a prompt was answered twice");
    // a's cut requests were asked again, of b.
    assert!(a.answered() < a.calls(), "a's request was cut");
    let cut: Vec<String> = a
        .requests()
        .into_iter()
        .zip(a.timeline())
        .filter(|(_, t)| !t.answered)
        .map(|(r, _)| r.prompt)
        .collect();
    for prompt in &cut {
        assert!(
            answered(&b).contains(prompt),
            "a cut request was not asked of b"
        );
    }
    // The same review as with one endpoint that never failed.
    let one = ScriptedModel::start(script(Duration::ZERO));
    let s1 = scratch();
    let out = review(&s1, &[one.url()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let edited = |s: &Scratch| {
        std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited")
    };
    assert_eq!(edited(&s), edited(&s1));
    assert_eq!(edited(&s).matches("the service").count(), 6);
    let changes = |s: &Scratch| -> Vec<(String, String)> {
        std::fs::read_to_string(s.workspace().join("review/ledger.jsonl"))
            .expect("ledger")
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .map(|e| (e["id"].to_string(), e["patch_forward"].to_string()))
            .collect()
    };
    assert_eq!(changes(&s), changes(&s1));
}

#[test]
fn every_endpoint_down_stops_the_run_and_a_rerun_asks_only_what_was_missing() {
    let s = scratch();
    let mut a = ScriptedModel::start(script(Duration::from_millis(50)));
    let mut b = ScriptedModel::start(script(Duration::from_millis(50)));
    let endpoints = [a.url(), b.url()];
    let out = std::thread::scope(|scope| {
        let run = scope.spawn(|| review(&s, &endpoints));
        while a.answered() + b.answered() < 2 && !run.is_finished() {
            std::thread::sleep(Duration::from_millis(5));
        }
        a.kill();
        b.kill();
        run.join().expect("run")
    });
    assert_eq!(code(&out), 1, "{}\n{}", stdout(&out), stderr(&out));
    let mut before = answered(&a);
    before.extend(answered(&b));
    assert!(!before.is_empty());
    let c = ScriptedModel::start(script(Duration::ZERO));
    let out = review(&s, &[c.url()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let asked: Vec<String> = c.requests().into_iter().map(|r| r.prompt).collect();
    for prompt in &before {
        assert!(
            !asked.contains(prompt),
            "an answered request was asked again"
        );
    }
    assert!(!asked.is_empty(), "the missing requests were asked");
}

fn ping(endpoints: &[String]) -> std::process::Output {
    let s = Scratch::new();
    let mut args: Vec<&str> = vec!["llm", "ping", "--llm-backend", "openai"];
    for e in endpoints {
        args.extend(["--llm-endpoint", e.as_str()]);
    }
    args.extend(["--llm-model", "scripted"]);
    s.koas(&args)
}

#[test]
fn ping_pings_every_endpoint_and_says_whether_they_agree() {
    let a = ScriptedModel::start(script(Duration::ZERO));
    let b = ScriptedModel::start_with(
        ModelOptions {
            slots: Some(1),
            ..ModelOptions::default()
        },
        script(Duration::ZERO),
    );
    let out = ping(&[a.url(), format!("{}#slots=3", b.url())]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("{} (openai) answered", a.url())),
        "{text}"
    );
    assert!(
        text.contains(&format!("{} (openai) answered", b.url())),
        "{text}"
    );
    assert!(text.contains("endpoints agree"), "{text}");

    let other = ScriptedModel::start_as("another-model", script(Duration::ZERO));
    let out = ping(&[a.url(), other.url()]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("endpoints disagree"), "{text}");
    assert!(
        text.contains(&format!("{} (serves another-model)", other.url())),
        "{text}"
    );

    let mut dead = ScriptedModel::start(script(Duration::ZERO));
    let dead_url = dead.url();
    dead.kill();
    let out = ping(&[a.url(), dead_url.clone()]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("{dead_url} is down")),
        "{}",
        stdout(&out)
    );
}
