//! The planner with scripted models, on real Stage 1 artifacts and the
//! repository's prompt templates.

use std::cell::RefCell;

use koas_md::stage1;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_op::Action;
use koas_review_schema::edit_plan::{ChunkVerdict, EditPlan, EditPlanStatus};
use koas_review_schema::fingerprint::{
    ChunkFeatures, ChunkFingerprint, ChunkFingerprints, FingerprintConfig,
};
use koas_review_schema::stage1::ChunkConfig;
use proptest::prelude::*;

use super::*;
use crate::estimate_tokens;
use crate::pyramid::Template;

fn template(name: &str) -> Template {
    let path = format!("{}/../../prompts/{name}.tera", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("the repository's prompt template");
    Template::new(name, &text)
}

fn templates() -> PlanTemplates {
    PlanTemplates {
        review: template("review"),
        review_plain: template("review_plain"),
        regenerate: template("regenerate"),
        tutor_validate: template("tutor_validate"),
    }
}

fn options() -> PlanOptions {
    PlanOptions::new(Language::English, "scripted", templates())
}

type Answer = Result<ModelAnswer, ModelError>;

/// Answers each request with `f(request, n)` where `n` counts the earlier
/// requests of the same chunk and role; records every request. Answers
/// complete in the order requests were sent, or last sent first
/// (`reverse`).
struct Script<F: Fn(&ModelRequest, usize) -> Answer> {
    f: F,
    calls: RefCell<Vec<ModelRequest>>,
    /// Requests sent and not yet answered, with their tickets.
    out: RefCell<std::collections::VecDeque<(u64, ModelRequest)>>,
    tickets: std::cell::Cell<u64>,
    /// The most requests out at once.
    peak: std::cell::Cell<usize>,
    reverse: bool,
    /// Answers a request out drawn at random (this seed) instead.
    shuffle: std::cell::Cell<Option<u64>>,
    /// Every request as sent, in the order sent.
    sent: RefCell<Vec<ModelRequest>>,
}

fn script<F: Fn(&ModelRequest, usize) -> Answer>(f: F) -> Script<F> {
    Script {
        f,
        calls: RefCell::new(Vec::new()),
        out: RefCell::new(std::collections::VecDeque::new()),
        tickets: std::cell::Cell::new(0),
        peak: std::cell::Cell::new(0),
        reverse: false,
        shuffle: std::cell::Cell::new(None),
        sent: RefCell::new(Vec::new()),
    }
}

impl<F: Fn(&ModelRequest, usize) -> Answer> EditModel for Script<F> {
    fn submit(&self, request: ModelRequest) -> u64 {
        let ticket = self.tickets.get();
        self.tickets.set(ticket + 1);
        self.sent.borrow_mut().push(request.clone());
        let mut out = self.out.borrow_mut();
        out.push_back((ticket, request));
        self.peak.set(self.peak.get().max(out.len()));
        ticket
    }

    fn next(&self) -> Option<(u64, Answer)> {
        let (ticket, r) = if let Some(seed) = self.shuffle.get() {
            // A small LCG: reproducible, and enough to mix the order.
            let next = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.shuffle.set(Some(next));
            let mut out = self.out.borrow_mut();
            let len = out.len();
            if len == 0 {
                return None;
            }
            out.remove((next >> 33) as usize % len)?
        } else if self.reverse {
            self.out.borrow_mut().pop_back()?
        } else {
            self.out.borrow_mut().pop_front()?
        };
        let n = self
            .calls
            .borrow()
            .iter()
            .filter(|c| c.chunk_id == r.chunk_id && c.role == r.role)
            .count();
        self.calls.borrow_mut().push(r.clone());
        Some((ticket, (self.f)(&r, n)))
    }
}

fn ok(text: &str) -> Answer {
    Ok(ModelAnswer {
        text: text.to_owned(),
        completion_tokens: (text.len() / 4) as u64,
        stopped_at_marker: text.contains("END_EDIT_OPS"),
        elapsed_ms: 5,
    })
}

fn tokens(text: &str, completion_tokens: u64) -> Answer {
    Ok(ModelAnswer {
        text: text.to_owned(),
        completion_tokens,
        stopped_at_marker: false,
        elapsed_ms: 5,
    })
}

fn err(message: &str, fatal: bool) -> ModelError {
    ModelError {
        message: message.to_owned(),
        fatal,
    }
}

const DOC: &str = "# Guide\n\nThe bandwith of the system is high.\n\n## Install\n\nRun teh installer twice.\n\n## Use\n\nOpen the app and recieve the logs.\n";

struct Fixture {
    text: String,
    s: stage1::Stage1,
}

fn fixture(text: &str) -> Fixture {
    Fixture {
        text: text.to_owned(),
        s: stage1::run("d.md", text, ChunkConfig::default()).expect("stage 1"),
    }
}

impl Fixture {
    fn input<'a>(&'a self, previous: Option<&'a EditPlan>, used: &'a [ChangeId]) -> PlanInput<'a> {
        PlanInput {
            doc: &self.text,
            doc_hash: &self.s.doc_hash,
            chunks: &self.s.chunks,
            spans: Some(&self.s.spans),
            findings: &[],
            pyramid: None,
            glossary: &[],
            fingerprints: None,
            used_ids: used,
            previous,
        }
    }
}

fn run(
    input: &PlanInput<'_>,
    options: &PlanOptions,
    model: &dyn EditModel,
) -> (Planned, Vec<ChunkDone>) {
    let mut done = Vec::new();
    let planned = plan(input, options, model, &mut |d| done.push(d.clone())).expect("plans");
    (planned, done)
}

/// A model that fixes the typo of whichever chunk it is shown.
fn fixer(r: &ModelRequest, _: usize) -> Answer {
    let fix = [
        ("bandwith", "bandwidth"),
        ("teh installer", "the installer"),
        ("recieve", "receive"),
    ]
    .into_iter()
    .find(|(typo, _)| r.prompt.contains(typo));
    match fix {
        Some((typo, right)) => ok(&format!(
            "BEGIN_EDIT_OPS\n[{{\"action\": \"replace\", \"line\": 42, \"before_text\": \"{typo}\", \"after_text\": \"{right}\", \"kind\": \"typo\"}}]\nEND_EDIT_OPS"
        )),
        None => ok("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS"),
    }
}

#[test]
fn every_chunk_is_asked_in_its_language_and_ops_land_on_their_lines() {
    let f = fixture(DOC);
    let model = script(fixer);
    let (planned, done) = run(&f.input(None, &[]), &options(), &model);
    let p = &planned.plan;
    assert_eq!(p.status, EditPlanStatus::Complete);
    let lines: Vec<(usize, &str)> = p
        .ops
        .iter()
        .map(|o| (o.target.line_start, o.after_text.as_str()))
        .collect();
    assert_eq!(
        lines,
        [(3, "bandwidth"), (7, "the installer"), (11, "receive")]
    );
    let ids: Vec<String> = p.ops.iter().map(|o| o.id.to_string()).collect();
    assert_eq!(ids, ["RVW-0001", "RVW-0002", "RVW-0003"]);
    for call in model.calls.borrow().iter() {
        assert!(
            call.prompt.contains("written in English"),
            "{}",
            call.prompt
        );
        assert_eq!(call.stop_marker.as_deref(), Some("END_EDIT_OPS"));
    }
    // One status per chunk, handed over as each batch finished.
    assert_eq!(done.len(), p.chunks.len());
    assert!(done
        .iter()
        .all(|d| d.raw.len() == 1 && d.raw[0].0.ends_with(".raw.txt")));
    assert_eq!(p.stats.methods.get("tagged_payload"), Some(&3));
}

/// Prose with typos around a fenced block, an indented block and a table.
const BLOCKS: &str = "# Guide\n\nRun teh installer first.\n\n```sh\n./install --all\n./install --check\n```\n\n    indented line one\n    indented line two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nThen recieve the logs.\n";

/// Fixes both typos of `BLOCKS`, and tries to change the table through
/// its placeholder.
fn block_fixer(r: &ModelRequest, _: usize) -> Answer {
    let mut ops = Vec::new();
    for (typo, right) in [("teh installer", "the installer"), ("recieve", "receive")] {
        if r.prompt.contains(typo) {
            ops.push(format!(
                "{{\"action\": \"replace\", \"before_text\": \"{typo}\", \"after_text\": \"{right}\", \"kind\": \"typo\"}}"
            ));
        }
    }
    if r.prompt.contains("[[TABLE_BLOCK_0]]") {
        ops.push("{\"action\": \"replace\", \"before_text\": \"[[TABLE_BLOCK_0]]\", \"after_text\": \"[[TABLE_BLOCK_0]] and more\", \"kind\": \"typo\"}".to_owned());
    }
    ok(&format!(
        "BEGIN_EDIT_OPS\n[{}]\nEND_EDIT_OPS",
        ops.join(", ")
    ))
}

#[test]
fn protected_blocks_are_one_placeholder_line_each_and_lines_keep_their_numbers() {
    let f = fixture(BLOCKS);
    let model = script(block_fixer);
    let (planned, done) = run(&f.input(None, &[]), &options(), &model);
    let calls = model.calls.borrow();
    assert_eq!(calls.len(), 1, "one request for the small document");
    let prompt = &calls[0].prompt;
    for hidden in ["./install", "indented line", "| 1 | 2 |", "```"] {
        assert!(!prompt.contains(hidden), "{hidden:?} is shown: {prompt}");
    }
    // Each placeholder line has its block's first line number, and the
    // prose after the blocks keeps the document's.
    for shown in [
        " 3 | Run teh installer first.",
        " 5 | [[CODE_BLOCK_0]]",
        " 9 | ",
        "10 | [[CODE_BLOCK_1]]",
        "13 | [[TABLE_BLOCK_0]]",
        "17 | Then recieve the logs.",
        "(17 lines;",
    ] {
        assert!(prompt.contains(shown), "{shown:?} missing: {prompt}");
    }
    let p = &planned.plan;
    let ops: Vec<(usize, &str)> = p
        .ops
        .iter()
        .map(|o| (o.target.line_start, o.after_text.as_str()))
        .collect();
    assert_eq!(ops, [(3, "the installer"), (17, "receive")]);
    // The table's placeholder unmasks to the table, which is protected.
    let dropped: Vec<&str> = p.dropped.iter().map(|d| d.reason.as_str()).collect();
    assert_eq!(dropped, ["protected"]);
    assert_eq!(
        p.dropped[0].before_text.as_deref(),
        Some("| a | b |\n|---|---|\n| 1 | 2 |")
    );
    // What each placeholder stood for is kept beside the plan.
    let masks: Vec<&(String, String)> = done.iter().flat_map(|d| &d.masks).collect();
    let protected = masks
        .iter()
        .find(|(name, _)| name.ends_with("_PROTECTED.json"))
        .expect("the placeholders' file");
    assert!(protected.1.contains("./install --all") && protected.1.contains("[[TABLE_BLOCK_0]]"));

    // Asked to show them, the prompt holds the blocks as they are.
    let mut o = options();
    o.show_protected = true;
    let model = script(block_fixer);
    let (planned, _) = run(&f.input(None, &[]), &o, &model);
    let prompt = &model.calls.borrow()[0].prompt;
    assert!(
        prompt.contains("./install --all") && prompt.contains("| 1 | 2 |"),
        "{prompt}"
    );
    assert!(!prompt.contains("[[CODE_BLOCK_0]]"), "{prompt}");
    assert_eq!(planned.plan.ops.len(), 2);
}

#[test]
fn a_worker_answer_stops_where_it_starts_copying_the_prompt() {
    // The second section quotes one of the prompt's headings: an op may
    // copy it, so it ends no answer about that section.
    let f = fixture("# Guide\n\nRun teh installer.\n\n## Notes\n\nDocument abstract: none yet.\n");
    let mut o = options();
    o.target_request_tokens = 0;
    let model = script(block_fixer);
    run(&f.input(None, &[]), &o, &model);
    let calls = model.calls.borrow();
    assert_eq!(calls.len(), 2);
    for c in calls.iter() {
        assert!(c.echoes.iter().all(|e| ECHOES.contains(&e.as_str())));
        assert!(c.echoes.iter().all(|e| c.prompt.contains(e.as_str())));
        assert!(
            c.echoes.contains(&"Text to review (".to_owned()),
            "{:?}",
            c.echoes
        );
    }
    let notes = calls
        .iter()
        .find(|c| c.prompt.contains("none yet"))
        .expect("notes");
    assert!(!notes.echoes.contains(&"Document abstract:".to_owned()));
}

#[test]
fn a_chunk_of_protected_blocks_alone_is_not_asked() {
    let f = fixture("---\ntitle: Guide\n---\n\n# Guide\n\nRun teh installer.\n");
    let model = script(block_fixer);
    let (planned, done) = run(&f.input(None, &[]), &options(), &model);
    let p = &planned.plan;
    assert_eq!(p.chunks.len(), 2, "{:?}", p.chunks);
    let front = &p.chunks[0];
    assert_eq!((front.line_start, front.worker_calls), (1, 0));
    assert_eq!(front.verdict, ChunkVerdict::Empty);
    assert!(front.error.is_none());
    assert_eq!(model.calls.borrow().len(), 1);
    assert!(!model.calls.borrow()[0].prompt.contains("FRONT_MATTER"));
    assert_eq!(p.ops.len(), 1);
    assert_eq!(done.len(), 2, "every chunk is handed over");
    assert_eq!(p.status, EditPlanStatus::Complete);
}

#[test]
fn requests_are_sized_by_what_the_model_is_shown() {
    // Two sections of a sentence each around a long code block: shown as
    // text they exceed a request; shown as placeholders they share one.
    let code: String = (0..120)
        .map(|i| format!("let value_{i} = compute({i});\n"))
        .collect();
    let doc = format!(
        "# Guide\n\n## Setup\n\nRun teh installer.\n\n```rust\n{code}```\n\n### Details\n\nThen recieve it.\n"
    );
    let f = fixture(&doc);
    let model = script(block_fixer);
    let (planned, _) = run(&f.input(None, &[]), &options(), &model);
    assert_eq!(
        model.calls.borrow().len(),
        1,
        "one request for both sections"
    );
    assert_eq!(planned.plan.ops.len(), 2);
    let mut o = options();
    o.show_protected = true;
    let model = script(block_fixer);
    run(&f.input(None, &[]), &o, &model);
    assert!(model.calls.borrow().len() >= 2, "the code fills a request");
}

#[test]
fn every_ladder_format_is_read() {
    let formats = [
        ("json_strict", r#"[{"action": "replace", "before_text": "bandwith", "after_text": "bandwidth"}]"#),
        ("json_relaxed", "[{'action': 'replace', 'before_text': 'bandwith', 'after_text': 'bandwidth',},]"),
        ("yaml", "- action: replace\n  before_text: bandwith\n  after_text: bandwidth\n"),
        ("tagged_payload", "BEGIN_EDIT_OPS\n[{\"action\": \"replace\", \"before_text\": \"bandwith\", \"after_text\": \"bandwidth\"}]\nEND_EDIT_OPS"),
        ("plaintext_regex", "[RVW] action=replace / lines=1-1 / before=\"bandwith\" / after=\"bandwidth\""),
        ("freeform_salvage", "The first sentence overstates the system's bandwidth."),
    ];
    let f = fixture("The bandwith of the system is high.\n");
    for (method, answer) in formats {
        let model = script(|_, _| ok(answer));
        let (planned, _) = run(&f.input(None, &[]), &options(), &model);
        let p = &planned.plan;
        assert_eq!(p.chunks[0].method, method);
        assert!(p.chunks[0].parse_success, "{method}");
        assert_eq!(p.ops.len(), 1, "{method}: {p:?}");
        if method == "freeform_salvage" {
            assert_eq!(p.ops[0].action, Action::FlagOnly);
            assert!(p.ops[0].needs_attention);
        } else {
            assert_eq!(p.ops[0].after_text, "bandwidth", "{method}");
            assert_eq!(p.ops[0].target.line_start, 1);
        }
    }
}

fn recipe_doc() -> String {
    let mut text = String::from("# Results\n\n");
    text.push_str("**Bold** one and teh **two** and **three** 🚀 ✅ and the attack.\n\n");
    text.push_str("| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n| 5 | 6 |\n\n---\n");
    text
}

fn fingerprints(f: &Fixture) -> ChunkFingerprints {
    ChunkFingerprints {
        doc_hash: f.s.doc_hash.clone(),
        chunk_count: f.s.chunks.chunks.len(),
        triggered_count: f.s.chunks.chunks.len(),
        config: FingerprintConfig::default(),
        fingerprints: f
            .s
            .chunks
            .chunks
            .iter()
            .map(|c| ChunkFingerprint {
                chunk_id: c.chunk_id.clone(),
                section_id: c.section_id.clone(),
                line_start: c.line_start,
                line_end: c.line_end,
                features: ChunkFeatures::default(),
                triggers_recipe: true,
                triggers: vec!["table_rows".into()],
            })
            .collect(),
    }
}

#[test]
fn degenerate_answers_fire_retries_then_policies_a_c_d_in_order() {
    let f = fixture(&recipe_doc());
    let fp = fingerprints(&f);
    let mut input = f.input(None, &[]);
    input.fingerprints = Some(&fp);
    let model = script(|r, n| match n {
        0 | 1 => tokens("", 0),                          // empty: warmer retries
        2 => tokens(" \n\n  ", 300),                     // only whitespace: policy A
        3 => tokens(&"the the the ".repeat(400), 1_024), // budget burnt: policy C
        4 => tokens("", 1_024),                          // saturated: policy D
        _ => {
            assert!(r.prompt.contains("[[TABLE_BLOCK_0]]"), "{}", r.prompt);
            assert!(!r.prompt.contains("**"), "stripped: {}", r.prompt);
            ok("BEGIN_EDIT_OPS\n[{\"action\": \"replace\", \"before_text\": \"teh two and three [[EMOJI_0]]\", \"after_text\": \"the two and three [[EMOJI_0]]\"}]\nEND_EDIT_OPS")
        }
    });
    let mut o = options();
    o.context_budget = 6_000;
    // The table is shown, for the recipe to mask it.
    o.show_protected = true;
    let (planned, done) = run(&input, &o, &model);
    let s = &planned.plan.chunks[0];
    let policies: Vec<&str> = s
        .adaptive_escalation
        .iter()
        .map(|e| e.policy.as_str())
        .collect();
    // Less context (A) renders the same prompt for this small chunk: the
    // request is nudged warmer rather than sent again as it was.
    assert_eq!(policies, ["retry", "retry", "A", "retry", "C", "D"]);
    assert_eq!(s.adaptive_escalation[2].from, "tier=1");
    assert_eq!(s.adaptive_escalation[2].to, "tier=0");
    assert_eq!(s.adaptive_escalation[2].reason, "decoded_empty_saturated");
    assert_eq!(
        s.adaptive_escalation[3].reason,
        "the same request again would get the same answer"
    );
    assert!(s.adaptive_escalation[4]
        .reason
        .starts_with("token_budget_burnt"));
    assert!(
        s.recipe.contains(&"table_mask".to_owned()) && s.recipe.contains(&"emoji_mask".to_owned())
    );
    assert_eq!(s.recipe.last().map(String::as_str), Some("markdown_strip"));
    let temps: Vec<Option<f64>> = model.calls.borrow().iter().map(|c| c.temperature).collect();
    assert_eq!(temps[..3], [None, Some(0.15), Some(0.2)]);
    // The proposal was made on the plain-text projection, whose line
    // differs from the document's (bold markers): a person decides.
    let op = &planned.plan.ops[0];
    assert_eq!(op.action, Action::FlagOnly, "{op:?}");
    assert_eq!(op.target.line_start, 3);
    assert!(!s.degenerate);
    assert_eq!(planned.plan.stats.recipe_recovered, 1);
    let masks: Vec<&str> = done[0].masks.iter().map(|(n, _)| n.as_str()).collect();
    for name in [
        "_TABLE_0.md",
        "_EMOJI.json",
        "_recipe.json",
        "_MDSTRIP_0.txt",
    ] {
        assert!(
            masks.iter().any(|m| m.ends_with(name)),
            "{name} in {masks:?}"
        );
    }
    assert_eq!(done[0].raw.len(), 6);
}

#[test]
fn a_chunk_degenerate_after_every_policy_becomes_an_exemplar() {
    let f = fixture(&recipe_doc());
    let fp = fingerprints(&f);
    let mut input = f.input(None, &[]);
    input.fingerprints = Some(&fp);
    let model = script(|_, _| tokens("   ", 500));
    let (planned, done) = run(&input, &options(), &model);
    let s = &planned.plan.chunks[0];
    assert_eq!(s.verdict, ChunkVerdict::Degenerate);
    assert!(s.degenerate);
    let policies: Vec<&str> = s
        .adaptive_escalation
        .iter()
        .map(|e| e.policy.as_str())
        .collect();
    assert_eq!(policies, ["A", "retry", "C", "D"]);
    let exemplar = done[0].exemplar.as_ref().expect("exemplar");
    assert_eq!(exemplar["reason"], "decoded_empty_saturated");
    assert_eq!(planned.plan.stats.recipe_recovered, 0);
    assert_eq!(planned.plan.stats.degenerate, 1);
}

#[test]
fn policy_b_asks_again_with_more_context_when_the_checks_found_something() {
    use koas_review_schema::findings::{Finding, FindingKind};
    let f = fixture("The bandwith of the system is high.\n");
    let findings = [Finding::new(
        FindingKind::AiLeftover,
        "k",
        1,
        1,
        "leftover",
        "e",
    )];
    let mut input = f.input(None, &[]);
    input.findings = &findings;
    let model = script(|r, n| {
        if n == 0 {
            assert!(!r.prompt.contains("leftover"), "tier 1 has no findings");
            ok("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS")
        } else {
            assert!(r.prompt.contains("- line 1: ai_leftover"), "{}", r.prompt);
            ok("BEGIN_EDIT_OPS\n[{\"action\": \"flag_only\", \"before_text\": \"bandwith\", \"rationale\": \"leftover\"}]\nEND_EDIT_OPS")
        }
    });
    let (planned, _) = run(&input, &options(), &model);
    let s = &planned.plan.chunks[0];
    assert_eq!(s.adaptive_escalation[0].policy, "B");
    assert_eq!(
        (
            s.adaptive_escalation[0].from.as_str(),
            s.adaptive_escalation[0].to.as_str()
        ),
        ("tier=1", "tier=2")
    );
    assert_eq!(planned.plan.ops.len(), 1);
}

const GOOD: &str = "BEGIN_EDIT_OPS\n[{\"action\": \"replace\", \"before_text\": \"bandwith\", \"after_text\": \"bandwidth\", \"kind\": \"typo\"}]\nEND_EDIT_OPS";

fn tutored(tutor: impl Fn(usize) -> Answer, worker_again: &'static str) -> Planned {
    let f = fixture("The bandwith of the system is high.\n");
    let mut o = options();
    o.tutor_model = Some("tutor".into());
    let model = script(move |r, n| match r.role {
        ModelRole::Tutor => {
            assert!(
                r.prompt.contains("\"after_text\": \"bandwidth\""),
                "{}",
                r.prompt
            );
            tutor(n)
        }
        ModelRole::Worker if n == 0 => ok(GOOD),
        ModelRole::Worker => {
            assert!(r.prompt.contains("rejected"), "{}", r.prompt);
            ok(worker_again)
        }
    });
    run(&f.input(None, &[]), &o, &model).0
}

#[test]
fn the_tutor_accepts_corrects_rejects_or_fails() {
    let p = tutored(|_| ok("VERDICT: ACCEPTED\nREASON: fine."), "").plan;
    assert_eq!(p.chunks[0].verdict, ChunkVerdict::Accepted);
    assert_eq!(p.ops[0].after_text, "bandwidth");
    assert_eq!((p.chunks[0].worker_calls, p.chunks[0].tutor_calls), (1, 1));

    let p = tutored(
        |_| ok("VERDICT: CORRECTED\nREASON: severity.\nCORRECTION:\n[{\"action\": \"replace\", \"before_text\": \"bandwith\", \"after_text\": \"bandwidth\", \"severity\": \"attention\"}]"),
        "",
    )
    .plan;
    assert_eq!(p.chunks[0].verdict, ChunkVerdict::Corrected);
    assert_eq!(p.ops[0].severity, "attention");

    let p = tutored(
        |_| ok("VERDICT: REJECTED\nREASON: wrong word."),
        "BEGIN_EDIT_OPS\n[{\"action\": \"flag_only\", \"before_text\": \"bandwith\", \"rationale\": \"check the term\"}]\nEND_EDIT_OPS",
    )
    .plan;
    assert_eq!(p.chunks[0].verdict, ChunkVerdict::Regenerated);
    assert_eq!(p.ops.len(), 1);
    assert_eq!(p.ops[0].action, Action::FlagOnly);
    assert!(p.dropped.iter().any(|d| d.reason == "tutor_rejected"));
    assert_eq!(p.chunks[0].worker_calls, 2);

    // The regeneration degenerates too: nothing.
    let p = tutored(|_| ok("VERDICT: REJECTED\nREASON: no."), "").plan;
    assert_eq!(p.chunks[0].verdict, ChunkVerdict::Rejected);
    assert!(p.ops.is_empty());

    for failing in [Err(err("tutor down", false)), ok("Looks fine to me.")] {
        let p = tutored(move |_| failing.clone(), "").plan;
        assert_eq!(p.chunks[0].verdict, ChunkVerdict::TutorFailed);
        assert!(p.ops.is_empty(), "fail-safe: {:?}", p.ops);
        assert!(p.dropped.iter().any(|d| d.reason == "tutor_failed"));
    }
}

#[test]
fn an_op_with_a_number_as_after_text_is_dropped_as_wrong_type_not_applied() {
    let f = fixture(DOC);
    // The bandwith chunk's answer: one op with a number for its text, one
    // good op; every other chunk: no changes.
    let model = script(|r: &ModelRequest, _| {
        if r.prompt.contains("bandwith") {
            ok("BEGIN_EDIT_OPS\n[{\"action\": \"replace\", \"line\": 3, \"before_text\": \"bandwith\", \"after_text\": 12345}, {\"action\": \"replace\", \"before_text\": \"high\", \"after_text\": \"very high\"}]\nEND_EDIT_OPS")
        } else {
            ok("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS")
        }
    });
    let (planned, _) = run(&f.input(None, &[]), &options(), &model);
    let p = &planned.plan;
    let texts: Vec<&str> = p.ops.iter().map(|o| o.after_text.as_str()).collect();
    assert_eq!(texts, ["very high"], "no op carries the number as text");
    let wrong: Vec<_> = p
        .dropped
        .iter()
        .filter(|d| d.reason == "wrong_type")
        .collect();
    assert_eq!(wrong.len(), 1, "{:?}", p.dropped);
    assert_eq!(wrong[0].action, "replace");
    assert_eq!(
        wrong[0].before_text.as_deref(),
        Some("bandwith"),
        "the drop names its text"
    );
    assert_eq!(
        wrong[0].detail,
        "after_text must be a string, found the number 12345 (item 1 of the answer's list)"
    );
    let chunk = p
        .chunks
        .iter()
        .find(|c| c.chunk_id == wrong[0].chunk_id)
        .expect("the drop names its chunk");
    assert_eq!(
        (chunk.ops_proposed, chunk.ops, chunk.ops_dropped),
        (2, 1, 1)
    );
}

#[test]
fn a_chunk_whose_every_op_has_a_wrong_type_is_filtered_not_empty() {
    let f = fixture(DOC);
    let model = script(|r: &ModelRequest, _| {
        if r.prompt.contains("bandwith") {
            ok("BEGIN_EDIT_OPS\n[{\"action\": \"flag_only\", \"line_start\": [3], \"rationale\": \"the term is unclear here\"}]\nEND_EDIT_OPS")
        } else {
            ok("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS")
        }
    });
    let (planned, _) = run(&f.input(None, &[]), &options(), &model);
    let p = &planned.plan;
    assert!(p.ops.is_empty());
    let drop = p
        .dropped
        .iter()
        .find(|d| d.reason == "wrong_type")
        .expect("the refused op is recorded");
    assert!(
        drop.detail
            .starts_with("line_start must be a line number, found the list [3]"),
        "{}",
        drop.detail
    );
    let chunk = p
        .chunks
        .iter()
        .find(|c| c.chunk_id == drop.chunk_id)
        .expect("its chunk");
    assert_eq!(chunk.verdict, ChunkVerdict::Filtered, "not \"no changes\"");
    assert_eq!(chunk.method, "tagged_payload");
    assert!(chunk.parse_success);
}

fn many_sections(n: usize) -> String {
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!(
            "# Part {i}\n\nThe bandwith number {i} is high.\n\n"
        ));
    }
    text
}

#[test]
fn the_circuit_breaker_switches_to_the_plain_prompt() {
    let f = fixture(&many_sections(8));
    let mut o = options();
    o.breaker_window = 4;
    o.in_flight = 1;
    let model = script(|r, _| {
        if r.prompt.contains("[RVW] action=replace") {
            ok("[RVW] action=replace / lines=3-3 / before=\"bandwith\" / after=\"bandwidth\"")
        } else {
            ok("}}} {{{ 123")
        }
    });
    let (planned, _) = run(&f.input(None, &[]), &o, &model);
    let p = &planned.plan;
    assert!(p.stats.circuit_breaker_tripped);
    let prompts: Vec<&str> = p.chunks.iter().map(|c| c.prompt.as_str()).collect();
    assert_eq!(prompts[..2], ["review", "review"]);
    assert!(
        prompts[2..].iter().all(|p| *p == "review_plain"),
        "{prompts:?}"
    );
    assert_eq!(p.ops.len(), 6);
    assert!(planned
        .warnings
        .iter()
        .any(|w| w.contains("circuit breaker")));
    assert!(
        model
            .calls
            .borrow()
            .iter()
            .filter(|c| c.stop_marker.is_none())
            .count()
            >= 6
    );
}

#[test]
fn results_do_not_depend_on_completion_order_and_ids_skip_used_ones() {
    let f = fixture(&many_sections(10));
    let used = [ChangeId::new(5).expect("id"), ChangeId::new(2).expect("id")];
    let in_order = script(fixer);
    let (a, _) = run(&f.input(None, &used), &options(), &in_order);
    let mut reversed = script(fixer);
    reversed.reverse = true;
    let (b, _) = run(&f.input(None, &used), &options(), &reversed);
    assert_eq!(a.plan, b.plan);
    assert_eq!(a.plan.ops[0].id.to_string(), "RVW-0006");
    assert_eq!(a.plan.ops.len(), 10);
    // The configured number of requests is kept out, never more.
    assert_eq!(in_order.peak.get(), 8);
    assert_eq!(reversed.peak.get(), 8);
    let mut one = options();
    one.in_flight = 1;
    let (c, _) = run(&f.input(None, &used), &one, &script(fixer));
    assert_eq!(c.plan.ops, a.plan.ops);
}

/// A model that cannot write the structured answer for the first dozen
/// chunks, then can: the breaker trips on some chunks, and which ones must
/// not depend on which answers came first.
fn stumbling(r: &ModelRequest, _: usize) -> Answer {
    let part: usize = r
        .prompt
        .split("The bandwith number ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    if r.prompt.contains("[RVW] action=replace") {
        if part % 3 == 0 {
            return ok("nothing to say");
        }
        return ok("[RVW] action=replace / lines=3-3 / before=\"bandwith\" / after=\"bandwidth\"");
    }
    if part < 12 {
        return ok("}}} {{{ 123");
    }
    fixer(r, 0)
}

#[test]
fn regression_the_breaker_picks_the_same_prompts_whatever_order_answers_arrive_in() {
    let f = fixture(&many_sections(40));
    let mut o = options();
    o.in_flight = 6;
    o.breaker_window = 6;
    let first = script(stumbling);
    let (a, done_a) = run(&f.input(None, &[]), &o, &first);
    assert!(a.plan.stats.circuit_breaker_tripped, "{:?}", a.warnings);
    let prompts =
        |p: &Planned| -> Vec<String> { p.plan.chunks.iter().map(|c| c.prompt.clone()).collect() };
    let plain = prompts(&a).iter().filter(|p| *p == "review_plain").count();
    assert!(plain > 0 && plain < 40, "{:?}", prompts(&a));
    let mut orders = vec![script(stumbling), script(stumbling)];
    orders[0].reverse = true;
    for seed in [1u64, 7, 42, 1234] {
        let s = script(stumbling);
        s.shuffle.set(Some(seed));
        orders.push(s);
    }
    for model in &orders {
        let (b, done_b) = run(&f.input(None, &[]), &o, model);
        assert_eq!(prompts(&a), prompts(&b));
        assert_eq!(a.plan, b.plan);
        assert_eq!(a.warnings, b.warnings);
        // Chunks are handed over in chunk order, whatever the order.
        let ids = |d: &[ChunkDone]| {
            d.iter()
                .map(|c| c.status.chunk_id.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&done_a), ids(&done_b));
        assert!(model.peak.get() <= 6);
    }
}

#[test]
fn a_chunks_retry_goes_out_as_soon_as_its_answer_is_read() {
    let f = fixture(&many_sections(6));
    let mut o = options();
    o.in_flight = 2;
    // Part 0's first answer is empty: it is asked again, warmer.
    let model = script(|r, n| {
        if r.prompt.contains("number 0 ") && n == 0 {
            ok("")
        } else {
            fixer(r, n)
        }
    });
    let (planned, _) = run(&f.input(None, &[]), &o, &model);
    assert_eq!(planned.plan.ops.len(), 6);
    let sent: Vec<String> = model
        .sent
        .borrow()
        .iter()
        .map(|r| r.chunk_id.clone())
        .collect();
    // Two out at first; part 0's answer comes first and its retry takes
    // the freed place at once, before part 2 is sent.
    assert_eq!(sent[0], sent[2], "{sent:?}");
    assert_ne!(sent[1], sent[2], "{sent:?}");
    assert_eq!(model.peak.get(), 2);
}

#[test]
fn an_unchanged_chunk_is_reused_and_an_edited_one_asked_again() {
    let f = fixture(&many_sections(4));
    let (first, _) = run(&f.input(None, &[]), &options(), &script(fixer));
    let again = script(fixer);
    let (second, done) = run(&f.input(Some(&first.plan), &[]), &options(), &again);
    assert!(
        again.calls.borrow().is_empty(),
        "zero calls on an unchanged document"
    );
    assert_eq!(second.plan.ops, first.plan.ops);
    assert_eq!(second.plan.stats.reused, 4);
    assert!(done.iter().all(|d| d.status.reused));
    // Insert a paragraph in part 1: parts 0, 2, 3 are unchanged (moved
    // down two lines), only part 1 is asked again.
    let edited = many_sections(4).replace(
        "The bandwith number 1 is high.\n",
        "A new sentence.\n\nThe bandwith number 1 is high.\n",
    );
    let g = fixture(&edited);
    let third = script(fixer);
    let (after, _) = run(&g.input(Some(&first.plan), &[]), &options(), &third);
    let asked: Vec<String> = third
        .calls
        .borrow()
        .iter()
        .map(|c| c.chunk_id.clone())
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].starts_with("part-1"), "{asked:?}");
    let lines: Vec<usize> = after.plan.ops.iter().map(|o| o.target.line_start).collect();
    assert_eq!(lines, [3, 9, 13, 17]);
    for op in &after.plan.ops {
        assert_eq!(
            g.text
                .lines()
                .nth(op.target.line_start - 1)
                .map(|l| l.contains("bandwith")),
            Some(true)
        );
    }
    // A different model: asked again.
    let mut other = options();
    other.model = "another".into();
    let fourth = script(fixer);
    run(&f.input(Some(&first.plan), &[]), &other, &fourth);
    assert_eq!(fourth.calls.borrow().len(), 4);
}

#[test]
fn a_spent_budget_stops_asking_and_keeps_what_was_done() {
    let f = fixture(&many_sections(6));
    let mut o = options();
    o.in_flight = 2;
    let model = script(|r, _| {
        if r.chunk_id.starts_with("part-2") {
            Err(err("SESSION_BUDGET_EXHAUSTED: B2 reached", true))
        } else {
            fixer(r, 0)
        }
    });
    let (planned, done) = run(&f.input(None, &[]), &o, &model);
    let p = &planned.plan;
    assert_eq!(p.status, EditPlanStatus::Partial);
    assert!(p
        .reason
        .as_deref()
        .is_some_and(|r| r.contains("SESSION_BUDGET_EXHAUSTED")));
    let verdicts: Vec<ChunkVerdict> = p.chunks.iter().map(|c| c.verdict).collect();
    // Part 3 was in the same batch as part 2 and got its answer: kept.
    // Parts 4 and 5 were never asked.
    use ChunkVerdict::{SingleModel as S, Skipped};
    assert_eq!(verdicts, [S, S, Skipped, S, Skipped, Skipped]);
    assert_eq!(p.ops.len(), 3);
    assert_eq!(model.calls.borrow().len(), 4);
    assert_eq!(done.len(), 6);
    assert!(planned.warnings[0].contains("SESSION_BUDGET_EXHAUSTED"));
    // The next run asks only the skipped chunks.
    let resumed = script(fixer);
    let (next, _) = run(&f.input(Some(p), &[]), &o, &resumed);
    assert_eq!(resumed.calls.borrow().len(), 3);
    assert_eq!(next.plan.ops.len(), 6);
    assert_eq!(next.plan.status, EditPlanStatus::Complete);
}

#[test]
fn large_chunks_are_reviewed_in_sub_chunks() {
    let para = "This sentence is long enough to count. ".repeat(25);
    let text = format!("# Big\n\n{para}\n\n{para}teh end.\n\n{para}\n");
    let f = fixture(&text);
    let mut o = options();
    o.max_edit_chunk_tokens = 300;
    let (planned, _) = run(
        &f.input(None, &[]),
        &o,
        &script(|r, _| {
            if r.prompt.contains("teh end") {
                ok("BEGIN_EDIT_OPS\n[{\"action\": \"replace\", \"before_text\": \"teh end.\", \"after_text\": \"the end.\"}]\nEND_EDIT_OPS")
            } else {
                ok("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS")
            }
        }),
    );
    let ids: Vec<&str> = planned
        .plan
        .chunks
        .iter()
        .map(|c| c.chunk_id.as_str())
        .collect();
    assert!(
        ids.len() >= 2 && ids[0].ends_with("_a") && ids[1].ends_with("_b"),
        "{ids:?}"
    );
    assert_eq!(planned.plan.ops.len(), 1);
    assert_eq!(planned.plan.ops[0].target.line_start, 5);
    assert!(planned.plan.ops[0].target.chunk_id.ends_with("_b"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn ids_are_unique_increasing_and_never_used(used in proptest::collection::vec(1u32..40, 0..6), typos in proptest::collection::vec(any::<bool>(), 1..6)) {
        let mut text = String::new();
        for (i, typo) in typos.iter().enumerate() {
            let word = if *typo { "bandwith" } else { "bandwidth" };
            text.push_str(&format!("# Part {i}\n\nThe {word} number {i} is high.\n\n"));
        }
        let f = fixture(&text);
        let used: Vec<ChangeId> = used.into_iter().filter_map(ChangeId::new).collect();
        let (planned, _) = run(&f.input(None, &used), &options(), &script(fixer));
        let ids: Vec<ChangeId> = planned.plan.ops.iter().map(|o| o.id).collect();
        prop_assert_eq!(ids.len(), typos.iter().filter(|t| **t).count());
        prop_assert!(ids.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(ids.iter().all(|id| !used.contains(id) && used.iter().all(|u| u < id)));
    }
}

#[test]
fn regression_no_request_is_sent_twice_the_same_for_a_chunk() {
    let f = fixture(&recipe_doc());
    let fp = fingerprints(&f);
    let mut input = f.input(None, &[]);
    input.fingerprints = Some(&fp);
    let model = script(|_, _| tokens("   ", 500));
    let _ = run(&input, &options(), &model);
    let calls = model.calls.borrow();
    let mut seen = std::collections::HashSet::new();
    for c in calls.iter() {
        assert!(
            seen.insert((
                c.prompt.clone(),
                c.temperature.map(f64::to_bits),
                c.max_tokens
            )),
            "asked twice the same: temperature {:?}",
            c.temperature
        );
    }
    assert!(calls.len() >= 4, "{}", calls.len());
}

#[test]
fn an_answer_cap_follows_the_chunk_within_the_ceiling() {
    let f = fixture(&recipe_doc());
    let input = f.input(None, &[]);
    let model = script(|_, _| ok("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS"));
    let mut o = options();
    let _ = run(&input, &o, &model);
    let small = model.calls.borrow()[0].clone();
    assert!(
        small.max_tokens < o.max_tokens,
        "{} of {}",
        small.max_tokens,
        o.max_tokens
    );
    assert!(small.max_tokens >= 256);
    assert_eq!(small.complete_after.as_deref(), Some("BEGIN_EDIT_OPS"));
    o.max_tokens = 200;
    let model = script(|_, _| ok("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS"));
    let _ = run(&input, &o, &model);
    assert_eq!(
        model.calls.borrow()[0].max_tokens,
        200,
        "never above the ceiling"
    );
}

#[test]
fn a_model_that_answers_neither_prompt_is_stopped_early_and_the_plan_says_so() {
    let f = fixture(&many_sections(40));
    let mut o = options();
    o.breaker_window = 4;
    o.in_flight = 1;
    let model = script(|_, _| ok("}}} {{{ 123"));
    let (planned, _) = run(&f.input(None, &[]), &o, &model);
    let p = &planned.plan;
    assert!(p.stats.circuit_breaker_tripped);
    let asked = p
        .chunks
        .iter()
        .filter(|c| c.verdict != ChunkVerdict::Skipped)
        .count();
    let skipped = p.chunks.len() - asked;
    // Two structured chunks trip the breaker, two plain ones the give-up.
    assert_eq!(
        asked,
        4,
        "{:?}",
        p.chunks.iter().map(|c| &c.verdict).collect::<Vec<_>>()
    );
    assert!(skipped >= 30, "{skipped}");
    assert!(
        planned
            .warnings
            .iter()
            .any(|w| w.contains("the review stopped asking it")),
        "{:?}",
        planned.warnings
    );
    assert!(
        model.calls.borrow().len() < 4 * 6,
        "{}",
        model.calls.borrow().len()
    );
}

/// A handbook of `parts` parts (`## `) of `subs` short subsections (`### `)
/// each, a code block in every other subsection; each subsection holds one
/// unique typo, `recieves report P-S`.
fn handbook(parts: usize, subs: usize) -> String {
    let mut text = String::from("# Handbook\n\nAn introduction.\n\n");
    for p in 1..=parts {
        text.push_str(&format!("## Part {p}\n\nThis part is about topic {p}.\n\n"));
        for s in 1..=subs {
            text.push_str(&format!(
                "### Step {p}.{s}\n\nThe team recieves report {p}-{s} every week.\n\n"
            ));
            if s % 2 == 0 {
                text.push_str(&format!("```sh\nrun --step {p}.{s}\n```\n\n"));
            }
        }
    }
    text
}

/// Fixes every `recieves report P-S` the request shows.
fn report_fixer(r: &ModelRequest, _: usize) -> Answer {
    let mut ops = Vec::new();
    for line in r.prompt.lines() {
        if let Some(at) = line.find("recieves report ") {
            let rest = &line[at + "recieves report ".len()..];
            let id: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect();
            ops.push(serde_json::json!({
                "action": "replace",
                "before_text": format!("recieves report {id}"),
                "after_text": format!("receives report {id}"),
                "kind": "typo",
                "severity": "minor",
            }));
        }
    }
    ok(&format!(
        "BEGIN_EDIT_OPS\n{}\nEND_EDIT_OPS",
        serde_json::Value::Array(ops)
    ))
}

#[test]
fn small_sections_share_requests_near_the_target_and_ops_land_on_their_lines() {
    use koas_review_schema::findings::{Finding, FindingKind};
    let doc = handbook(4, 6);
    let f = fixture(&doc);
    let lines: Vec<&str> = doc.lines().collect();
    let line_of = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .map(|i| i as u32 + 1)
            .expect("the line")
    };
    // A finding on one typo's line, deep in a part.
    let typo_line = line_of("recieves report 3-4");
    let findings = [Finding::new(
        FindingKind::AiLeftover,
        "k",
        typo_line,
        1,
        "a finding on report 3-4",
        "e",
    )];
    let mut input = f.input(None, &[]);
    input.findings = &findings;
    let mut o = options();
    o.default_tier = Tier::from_number(2);
    let chunks = f.s.chunks.chunks.len();
    let model = script(report_fixer);
    let (planned, _) = run(&input, &o, &model);
    let p = &planned.plan;
    let calls = model.calls.borrow();

    // Far fewer requests than chunks, each near the target but within it.
    assert!(chunks >= 29, "{chunks} chunks");
    assert!(
        calls.len() * 3 <= chunks,
        "{} requests for {chunks} chunks",
        calls.len()
    );
    let sizes: Vec<u32> = p
        .chunks
        .iter()
        .map(|c| estimate_tokens(&lines[c.line_start as usize - 1..c.line_end as usize].join("\n")))
        .collect();
    assert!(
        sizes.iter().all(|&t| t <= o.target_request_tokens),
        "{sizes:?}"
    );
    let merged: Vec<&ChunkStatus> = p.chunks.iter().filter(|c| !c.members.is_empty()).collect();
    assert!(!merged.is_empty());
    // A request never spans two parts, nor the title and a part.
    for c in &p.chunks {
        let parts = lines[c.line_start as usize - 1..c.line_end as usize]
            .iter()
            .filter(|l| l.starts_with("## ") || l.starts_with("# "))
            .count();
        let starts_with_part = lines[c.line_start as usize - 1].starts_with('#')
            && !lines[c.line_start as usize - 1].starts_with("###");
        assert!(
            parts == 0 || (parts == 1 && starts_with_part),
            "{} spans a part boundary",
            c.chunk_id
        );
    }
    // No request's boundary falls inside a protected block.
    for c in &p.chunks {
        for b in &f.s.spans.blocks {
            let cuts = |l: u32| b.line_start < l && l <= b.line_end;
            assert!(
                !cuts(c.line_start) && !cuts(c.line_end + 1),
                "{} cuts the block at {}–{}",
                c.chunk_id,
                b.line_start,
                b.line_end
            );
        }
    }
    // Members are the plan's chunks, in order, covering the request.
    for c in &merged {
        assert_eq!(
            c.chunk_id,
            format!("{}+{}", c.members[0], c.members.len() - 1)
        );
        let first =
            f.s.chunks
                .chunks
                .iter()
                .find(|k| k.chunk_id == c.members[0])
                .expect("member");
        let last =
            f.s.chunks
                .chunks
                .iter()
                .find(|k| Some(&k.chunk_id) == c.members.last())
                .expect("member");
        assert_eq!(
            (first.line_start, last.line_end),
            (c.line_start, c.line_end)
        );
    }
    // Every typo fixed once, on its own line, owned by the chunk (of the
    // chunk plan) that holds that line, with that chunk's anchor.
    assert_eq!(p.ops.len(), 24, "{:?}", p.dropped);
    for op in &p.ops {
        let id = op
            .after_text
            .split("receives report ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .expect("an id");
        let line = line_of(&format!("recieves report {id} ")) as usize;
        assert_eq!((op.target.line_start, op.target.line_end), (line, line));
        let owner =
            f.s.chunks
                .chunks
                .iter()
                .find(|k| k.line_start as usize <= line && line <= k.line_end as usize)
                .expect("owner");
        assert_eq!(op.target.chunk_id, owner.chunk_id, "{id}");
        assert_eq!(op.target.anchor, owner.anchor, "{id}");
    }
    // The finding reaches the request that holds its line, at the line
    // the request numbers it.
    let holder = p
        .chunks
        .iter()
        .find(|c| c.line_start <= typo_line && typo_line <= c.line_end)
        .expect("holder");
    let request = calls
        .iter()
        .find(|r| r.chunk_id == holder.chunk_id)
        .expect("its request");
    let relative = typo_line - holder.line_start + 1;
    assert!(
        request
            .prompt
            .contains(&format!("- line {relative}: ai_leftover")),
        "{}",
        request.prompt
    );
    assert!(
        request
            .prompt
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{relative} |"))
                && l.contains("recieves report 3-4")),
        "{}",
        request.prompt
    );
}

#[test]
fn a_smaller_target_fills_each_request_until_the_next_chunk_would_not_fit() {
    let doc = handbook(2, 8);
    let f = fixture(&doc);
    let lines: Vec<&str> = doc.lines().collect();
    let text = |a: u32, b: u32| lines[a as usize - 1..b as usize].join("\n");
    let mut o = options();
    o.target_request_tokens = 60;
    let model = script(report_fixer);
    let (planned, _) = run(&f.input(None, &[]), &o, &model);
    let p = &planned.plan;
    assert!(p.chunks.len() > 4, "{}", p.chunks.len());
    for pair in p.chunks.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(estimate_tokens(&text(a.line_start, a.line_end)) <= 60);
        let next = b.members.first().unwrap_or(&b.chunk_id);
        let next =
            f.s.chunks
                .chunks
                .iter()
                .find(|k| &k.chunk_id == next)
                .expect("chunk");
        let starts_part = lines[next.line_start as usize - 1].starts_with("## ");
        assert!(
            starts_part || estimate_tokens(&text(a.line_start, next.line_end)) > 60,
            "{} could have taken {}",
            a.chunk_id,
            next.chunk_id
        );
    }
    assert_eq!(p.ops.len(), 16);
}

#[test]
fn a_zero_target_asks_every_chunk_alone() {
    let f = fixture(&handbook(2, 3));
    let mut o = options();
    o.target_request_tokens = 0;
    let model = script(report_fixer);
    let (planned, _) = run(&f.input(None, &[]), &o, &model);
    assert_eq!(model.calls.borrow().len(), f.s.chunks.chunks.len());
    assert!(planned.plan.chunks.iter().all(|c| c.members.is_empty()));
    assert_eq!(planned.plan.ops.len(), 6);
}

#[test]
fn a_request_over_several_chunks_is_reused_whole_on_the_next_run() {
    let f = fixture(&handbook(2, 4));
    let model = script(report_fixer);
    let (first, _) = run(&f.input(None, &[]), &options(), &model);
    assert!(first.plan.chunks.iter().any(|c| !c.members.is_empty()));
    let again = script(report_fixer);
    let (second, _) = run(&f.input(Some(&first.plan), &[]), &options(), &again);
    assert_eq!(again.calls.borrow().len(), 0);
    assert_eq!(second.plan.ops.len(), first.plan.ops.len());
    let targets = |p: &EditPlan| -> Vec<(String, usize)> {
        p.ops
            .iter()
            .map(|o| (o.target.chunk_id.clone(), o.target.line_start))
            .collect()
    };
    assert_eq!(targets(&second.plan), targets(&first.plan));
}
