//! The pyramid (built by `md_edit_plan`) through the real binary, against a scripted model on
//! loopback: the pyramid's shape, the calls it costs (all, none, the path
//! to the root), concurrency at the server, fallbacks, runs without a
//! model, templates in the cache key, and the `[llm]` table of koas.toml.

use crate::review_common::{assert_code, stderr, stdout, Scratch};
use koas_test_support::model::{ModelAnswer, ModelRequest, ScriptedModel};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A document with an H1 title, `sections` H2 sections of which the first
/// has two H3 subsections; every section has a sentence of its own.
fn document(sections: usize) -> String {
    let mut doc = String::from(
        "# Audit of the payment service\n\nThis report reviews the payment service.\n\n",
    );
    for i in 1..=sections {
        doc.push_str(&format!(
            "## Section {i}\n\nSection {i} describes control number {i} of the service in detail.\n\n"
        ));
        if i == 1 {
            doc.push_str("### Scope\n\nThe scope covers the ledger and the gateway.\n\n");
            doc.push_str("### Method\n\nThe method samples forty transactions a month.\n\n");
        }
    }
    doc
}

/// A model that answers every summary request with a short sentence
/// naming what it was asked about, after `delay`.
fn summarizer(delay: Duration) -> ScriptedModel {
    ScriptedModel::start(move |r: &ModelRequest| {
        let words = r.prompt.split_whitespace().count();
        ModelAnswer::after(
            delay,
            format!("This part states its controls in {words} words of prompt."),
        )
    })
}

/// Requests the pyramid made (the edit plan asks the model too).
fn pyramid_calls(model: &ScriptedModel) -> usize {
    model
        .requests()
        .iter()
        .filter(|r| !r.prompt.contains("BEGIN_EDIT_OPS"))
        .count()
}

fn llm_flags(model: &ScriptedModel, in_flight: usize) -> Vec<String> {
    vec![
        "--llm-backend".into(),
        "openai".into(),
        "--llm-endpoint".into(),
        model.url(),
        "--llm-model".into(),
        "scripted".into(),
        "--llm-max-in-flight".into(),
        in_flight.to_string(),
    ]
}

fn review(s: &Scratch, doc: &str, extra: &[String]) -> std::process::Output {
    let mut args: Vec<&str> = vec!["-q", "review", doc];
    args.extend(extra.iter().map(String::as_str));
    let out = s.koas(&args);
    assert_code(&out, 0, "koas review with a model");
    out
}

fn pyramid(s: &Scratch) -> Value {
    let path = s.workspace().join("stage2/pyramid.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).expect("pyramid.json parses")
}

fn nodes(p: &Value) -> &Vec<Value> {
    p["nodes"].as_array().expect("nodes")
}

fn count_level(p: &Value, level: u64) -> usize {
    nodes(p)
        .iter()
        .filter(|n| n["level"].as_u64() == Some(level))
        .count()
}

#[test]
fn a_review_with_a_model_builds_every_level_and_an_unchanged_rerun_asks_nothing() {
    let s = Scratch::new();
    s.write("doc.md", &document(5));
    let model = summarizer(Duration::ZERO);
    let flags = llm_flags(&model, 2);
    let out = review(&s, "doc.md", &flags);
    let p = pyramid(&s);
    assert_eq!(p["status"], "built", "{p}\n{}", stderr(&out));
    // The title's H1 is the document: its 5 sections are level 1, the two
    // subsections of section 1 level 2, and the abstract level 0.
    assert_eq!(count_level(&p, 0), 1, "{p}");
    assert_eq!(count_level(&p, 1), 5, "{p}");
    assert_eq!(count_level(&p, 2), 2, "{p}");
    let total = nodes(&p).len();
    assert_eq!(
        pyramid_calls(&model),
        total,
        "one call per node on a first build"
    );
    assert!(nodes(&p)
        .iter()
        .all(|n| n["summary"].as_str().is_some_and(|t| !t.is_empty())));
    assert!(nodes(&p).iter().all(|n| n["fallback"] != true));
    let md = std::fs::read_to_string(s.workspace().join("stage2/pyramid.md")).expect("pyramid.md");
    assert!(md.contains("Section 3"), "{md}");

    review(&s, "doc.md", &flags);
    assert_eq!(
        pyramid_calls(&model),
        total,
        "an unchanged document asks the model nothing"
    );
}

// Found on a real server: a document without one top-level title has the
// file's name as its abstract's heading, and after a first review the text
// read is the workspace's `doc.edited.md` — the second review renamed the
// root and asked the model for it again.
#[test]
fn regression_a_second_review_keeps_the_documents_name_and_asks_the_model_nothing() {
    let s = Scratch::new();
    let doc = "## Scope\n\nThe scope covers the ledger.\n\n## Method\n\nThe method samples forty transactions.\n";
    s.write("audit.md", doc);
    let model = summarizer(Duration::ZERO);
    let flags = llm_flags(&model, 2);
    review(&s, "audit.md", &flags);
    let first = pyramid_calls(&model);
    assert_eq!(first, 3, "the abstract and two sections");
    assert!(
        s.workspace().join("stage3/doc.edited.md").is_file(),
        "the second review reads the workspace's copy"
    );
    for _ in 0..2 {
        review(&s, "audit.md", &flags);
        assert_eq!(
            pyramid_calls(&model),
            first,
            "an unchanged document asks nothing"
        );
        let p = pyramid(&s);
        let root = nodes(&p)
            .iter()
            .find(|n| n["level"] == 0)
            .expect("the abstract");
        assert_eq!(root["heading"], "audit.md", "{root}");
    }
}

// The workspace follows the document across a hand edit (no change was
// recorded, so the review continues on the new text without --rebase):
// the pyramid is rebuilt from its own previous outputs.
#[test]
fn editing_one_leaf_asks_exactly_its_path_to_the_root() {
    let s = Scratch::new();
    s.write("doc.md", &document(5));
    // Each answer differs with its prompt, so that a changed child changes
    // its parent's input.
    let model = ScriptedModel::start(|r: &ModelRequest| {
        let digest = koas_kernel_api::hash::sha256(&r.prompt);
        ModelAnswer::text(format!("Summary {}.", &digest[7..19]))
    });
    let mut flags = llm_flags(&model, 4);
    // No change recorded: the summaries are compared on the texts alone.
    flags.push("--no-check-fixes".to_owned());
    review(&s, "doc.md", &flags);
    let before = pyramid_calls(&model);
    assert_eq!(before, 8, "the abstract, 5 sections and 2 subsections");
    let edited = document(5).replace(
        "The method samples forty transactions a month.",
        "The method samples sixty transactions a month.",
    );
    s.write("doc.md", &edited);
    review(&s, "doc.md", &flags);
    let asked: Vec<String> = model
        .requests()
        .iter()
        .filter(|r| !r.prompt.contains("BEGIN_EDIT_OPS"))
        .skip(before)
        .map(|r| r.prompt.clone())
        .collect();
    // The "Method" subsection, its parent "Section 1", and the abstract.
    assert_eq!(asked.len(), 3, "{asked:#?}");
    assert!(asked[0].contains("sixty transactions"), "{}", asked[0]);
}

#[test]
fn independent_nodes_are_asked_concurrently_up_to_max_in_flight() {
    let s = Scratch::new();
    s.write("doc.md", &document(12));
    let model = summarizer(Duration::from_millis(150));
    review(&s, "doc.md", &llm_flags(&model, 4));
    assert_eq!(model.peak_in_flight(), 4, "12 sections at 4 in flight");
}

#[test]
fn empty_and_chatty_answers_become_marked_fallbacks_and_the_run_stays_green() {
    let s = Scratch::new();
    s.write("doc.md", &document(3));
    let model = ScriptedModel::start(|r: &ModelRequest| {
        if r.prompt.contains("Section 2 describes") {
            ModelAnswer::text("")
        } else if r.prompt.contains("Section 3 describes") {
            ModelAnswer::text("Sure, here is a summary of the section you asked for:")
        } else {
            ModelAnswer::text("The service is audited control by control.")
        }
    });
    // Empty answers are retried by the service after a wait: none here.
    s.write("koas.toml", "[llm]\nempty_retries = 0\nmax_retries = 0\n");
    review(&s, "doc.md", &llm_flags(&model, 2));
    let p = pyramid(&s);
    let by_heading = |h: &str| {
        nodes(&p)
            .iter()
            .find(|n| n["heading"] == h)
            .unwrap_or_else(|| panic!("node {h} in {p}"))
            .clone()
    };
    let two = by_heading("Section 2");
    assert_eq!(two["fallback"], true, "{two}");
    assert!(
        two["summary"]
            .as_str()
            .unwrap_or("")
            .contains("control number 2"),
        "{two}"
    );
    let three = by_heading("Section 3");
    assert_eq!(three["fallback"], true, "{three}");
    assert_eq!(by_heading("Section 1")["fallback"], false);
    assert!(nodes(&p)
        .iter()
        .all(|n| n["summary"].as_str().is_some_and(|t| !t.is_empty())));
}

#[test]
fn without_a_model_the_pyramid_is_skipped_and_the_review_succeeds() {
    let s = Scratch::new();
    s.write("doc.md", &document(3));
    let model = summarizer(Duration::ZERO);
    let out = s.koas(&["-q", "review", "doc.md", "--no-llm"]);
    assert_code(&out, 0, "--no-llm");
    let p = pyramid(&s);
    assert_eq!(p["status"], "skipped", "{p}");
    assert_eq!(p["skipped_reason"], "--no-llm", "{p}");
    assert!(nodes(&p).is_empty());

    // --no-llm wins over a configured model: nothing is asked.
    let mut args = vec![
        "-q".to_string(),
        "review".into(),
        "doc.md".into(),
        "--no-llm".into(),
    ];
    args.extend(llm_flags(&model, 2));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_code(&s.koas(&args), 0, "--no-llm with flags");
    assert_eq!(pyramid_calls(&model), 0);

    let mut args = vec![
        "-q".to_string(),
        "review".into(),
        "doc.md".into(),
        "--skip-pyramid".into(),
    ];
    args.extend(llm_flags(&model, 2));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_code(&s.koas(&args), 0, "--skip-pyramid");
    assert_eq!(pyramid(&s)["skipped_reason"], "--skip-pyramid");
    assert_eq!(pyramid_calls(&model), 0);

    // No model configured anywhere: skipped, green, and said so.
    let fresh = Scratch::new();
    fresh.write("doc.md", &document(2));
    assert_code(&fresh.koas(&["-q", "review", "doc.md"]), 0, "no model");
    assert_eq!(pyramid(&fresh)["skipped_reason"], "no LLM configured");
}

#[test]
fn the_project_file_sets_the_model_and_a_misspelt_key_names_it() {
    let s = Scratch::new();
    s.write("doc.md", &document(2));
    let model = summarizer(Duration::ZERO);
    s.write(
        "koas.toml",
        &format!(
            "[check]\nfail_on = \"error\"\n\n[llm]\nbackend = \"openai\"\nendpoint = \"{}\"\nmodel = \"scripted\"\n",
            model.url()
        ),
    );
    let out = review(&s, "doc.md", &[]);
    assert!(
        pyramid_calls(&model) > 0,
        "koas.toml's model was used: {}",
        stderr(&out)
    );
    assert_eq!(pyramid(&s)["model"], "scripted");

    s.write("koas.toml", "[llm]\nbackend = \"openai\"\nmodle = \"x\"\n");
    let out = s.koas(&["-q", "review", "doc.md"]);
    assert_ne!(out.status.code(), Some(0), "a misspelt key is an error");
    let err = stderr(&out);
    assert!(err.contains("koas.toml") && err.contains("modle"), "{err}");
}

/// `koas run` of the repository's reviewer pipeline on `doc`.
fn run_reviewer(s: &Scratch, doc: &Path, extra: &[String]) -> std::process::Output {
    let pipeline = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../configs/reviewer.toml");
    let input = format!("doc={}", doc.display());
    let ws = s.path("ws");
    let mut args: Vec<String> = vec![
        "run".into(),
        pipeline.display().to_string(),
        "--until".into(),
        "md_edit_plan".into(),
        "--input".into(),
        input,
        "--workspace".into(),
        ws.display().to_string(),
    ];
    args.extend(extra.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = s.koas(&args);
    assert_code(&out, 0, "koas run --until md_edit_plan");
    out
}

#[test]
fn node_hashes_not_the_kernel_cache_decide_and_an_edited_template_rebuilds() {
    let s = Scratch::new();
    s.write("doc.md", &document(3));
    let model = summarizer(Duration::ZERO);
    let flags = llm_flags(&model, 2);
    let doc = s.path("doc.md");
    run_reviewer(&s, &doc, &flags);
    let first = pyramid_calls(&model);
    assert!(first > 0);

    let mut no_cache = flags.clone();
    no_cache.push("--no-cache".into());
    let out = run_reviewer(&s, &doc, &no_cache);
    assert_eq!(
        pyramid_calls(&model),
        first,
        "--no-cache re-runs the kernel, but no node changed: {}",
        stdout(&out)
    );

    // A prompts folder whose leaf template differs: every leaf is asked
    // again (and their ancestors), since the template is in the key.
    std::fs::create_dir_all(s.path("prompts")).expect("mkdir");
    let leaf = koas_llm::Prompts::built_in()
        .load("pyramid_leaf")
        .expect("built-in leaf template");
    s.write(
        "prompts/pyramid_leaf.tera",
        &format!("{}\nKeep it under twenty words.", leaf.text()),
    );
    let mut edited = flags.clone();
    edited.push("--prompts".into());
    edited.push(s.path("prompts").display().to_string());
    run_reviewer(&s, &doc, &edited);
    let asked: Vec<ModelRequest> = model
        .requests()
        .into_iter()
        .filter(|r| !r.prompt.contains("BEGIN_EDIT_OPS"))
        .skip(first)
        .collect();
    // The four leaves (Scope, Method, Sections 2 and 3) with the new
    // template; parents only where a child's summary changed.
    let leaves = asked
        .iter()
        .filter(|r| r.prompt.contains("Keep it under twenty words."))
        .count();
    assert_eq!(leaves, 4, "every leaf rebuilt: {asked:#?}");

    let mut missing = flags;
    missing.push("--prompts".into());
    missing.push(s.path("no-such-folder").display().to_string());
    let input = format!("doc={}", doc.display());
    let pipeline = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../configs/reviewer.toml");
    let mut args: Vec<String> = vec![
        "-q".into(),
        "run".into(),
        pipeline.display().to_string(),
        "--input".into(),
        input,
    ];
    args.extend(missing);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = s.koas(&args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-folder"), "{}", stderr(&out));
}

/// Regression: Ctrl-C during a review with a slow local model waited for
/// the answers in flight (up to the model timeout, minutes), and whatever
/// the kernel made of the refused calls would have been kept as its result.
#[cfg(unix)]
#[test]
fn ctrl_c_during_a_slow_model_stops_at_once_and_keeps_no_partial_pyramid() {
    let s = Scratch::new();
    s.write("doc.md", &document(3));
    // Far longer than the test waits: only a cut answer lets koas stop.
    let slow = summarizer(Duration::from_secs(120));
    let mut args: Vec<String> = vec!["review".into(), "doc.md".into()];
    args.extend(llm_flags(&slow, 1));
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut child = s
        .command(&arg_refs)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn koas");
    let start = std::time::Instant::now();
    while slow.calls() == 0 {
        assert!(start.elapsed() < Duration::from_secs(60), "no model call");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let interrupted = std::time::Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        assert!(
            interrupted.elapsed() < Duration::from_secs(30),
            "koas waited for the model's answer after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(130), "an interrupted review exits 130");
    let ws = s.workspace();
    assert!(
        !ws.join("stage2/pyramid.json").exists(),
        "a pyramid of fallbacks made of refused calls was written"
    );
    assert!(
        !ws.join(".koas/previous/md_edit_plan.json").exists(),
        "partial work must not become the next run's previous outputs"
    );
    assert_eq!(slow.calls(), 1, "no call started after Ctrl-C");
    // The next run asks the model for every summary again.
    let fast = summarizer(Duration::ZERO);
    review(&s, "doc.md", &llm_flags(&fast, 2));
    let p = pyramid(&s);
    assert!(nodes(&p).iter().all(|n| n["fallback"] == false), "{p}");
    assert_eq!(pyramid_calls(&fast), nodes(&p).len());
}
