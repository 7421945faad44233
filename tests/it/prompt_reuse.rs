//! Prompts in the order servers reuse: every request begins with what the
//! earlier requests of its kind began with (the instructions, the answer
//! format, the document-wide context), and what varies comes last. A
//! server's prompt cache (llama.cpp's, vLLM's prefix caching) reuses that
//! beginning instead of reading it again.

use crate::review_common::{assert_code, Scratch};
use koas_test_support::model::{ModelAnswer, ModelRequest, ScriptedModel};
use std::path::PathBuf;

/// The characters `a` and `b` begin with in common.
fn common_prefix(a: &str, b: &str) -> usize {
    a.chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum()
}

/// The mean share of each request's characters (after the first of its
/// kind) that an earlier request of the same kind began with, and how
/// many requests it is over.
fn reused_share(prompts: &[String]) -> (f64, usize) {
    let shares: Vec<f64> = (1..prompts.len())
        .map(|i| {
            let best = prompts[..i]
                .iter()
                .map(|p| common_prefix(p, &prompts[i]))
                .max()
                .unwrap_or(0);
            best as f64 / prompts[i].len().max(1) as f64
        })
        .collect();
    let n = shares.len();
    (shares.iter().sum::<f64>() / n.max(1) as f64, n)
}

fn full_prompt(r: &ModelRequest) -> String {
    format!("{}\n{}", r.system.as_deref().unwrap_or_default(), r.prompt)
}

/// Reviews `doc` with a model that summarizes in one sentence and proposes
/// nothing; the edit prompts and the summary prompts, in the order sent.
fn prompts_of(doc: &str) -> (Vec<String>, Vec<String>) {
    let model = ScriptedModel::start(|r: &ModelRequest| {
        if r.prompt.contains("BEGIN_EDIT_OPS") {
            ModelAnswer::text("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS")
        } else {
            ModelAnswer::text("This part states what the document requires of it.")
        }
    });
    let s = Scratch::new();
    s.write("doc.md", doc);
    let url = model.url();
    let out = s.koas(&[
        "-q",
        "review",
        "doc.md",
        "--llm-backend",
        "openai",
        "--llm-endpoint",
        &url,
        "--llm-model",
        "scripted",
        "--llm-max-in-flight",
        "4",
    ]);
    assert_code(&out, 0, "koas review with a model");
    let (edits, summaries): (Vec<ModelRequest>, Vec<ModelRequest>) = model
        .requests()
        .into_iter()
        .partition(|r| r.prompt.contains("BEGIN_EDIT_OPS"));
    (
        edits.iter().map(full_prompt).collect(),
        summaries.iter().map(full_prompt).collect(),
    )
}

fn check(name: &str, doc: &str) {
    let (edits, summaries) = prompts_of(doc);
    let (edit_share, edit_n) = reused_share(&edits);
    let (summary_share, summary_n) = reused_share(&summaries);
    eprintln!(
        "{name}: reused beginning: edit requests {edit_share:.3} over {edit_n}, summaries {summary_share:.3} over {summary_n}"
    );
    assert!(
        edit_n >= 3 && summary_n >= 3,
        "{name}: too few requests to judge"
    );
    assert!(
        edit_share >= 0.6,
        "{name}: edit requests share {edit_share:.3}"
    );
    assert!(
        summary_share >= 0.5,
        "{name}: summaries share {summary_share:.3}"
    );
}

#[test]
fn requests_begin_with_what_earlier_requests_of_their_kind_began_with() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    for name in ["examples/audit-fr.md", "examples/spec-example.md"] {
        let doc = std::fs::read_to_string(root.join(name)).expect("the repository's example");
        check(name, &doc);
    }
}

#[test]
fn the_shared_audit_s_requests_begin_as_earlier_ones_did() {
    let Some(shared) = koas_test_support::shared_dir(
        "prompt_reuse::the_shared_audit_s_requests_begin_as_earlier_ones_did",
    ) else {
        return;
    };
    let doc = std::fs::read_to_string(shared.join("corpus/planted/audit_fr.md"))
        .expect("the planted French audit");
    check("audit_fr.md", &doc);
}

#[test]
fn the_share_measure_counts_only_a_common_beginning() {
    let prompts = vec![
        "abcdef".to_owned(),
        "abcxyz".to_owned(),
        "zzzzzz".to_owned(),
    ];
    let (share, n) = reused_share(&prompts);
    assert_eq!(n, 2);
    assert!((share - 0.25).abs() < 1e-9, "{share}");
}
