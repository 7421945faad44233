//! The pyramid and the plan driven together, with a scripted model that
//! serves both kinds of request from one queue, in any order.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use koas_md::stage1;
use koas_review_schema::stage1::ChunkConfig;

use super::*;
use crate::context::Tier;
use crate::edit_plan::{ModelRequest, PlanTemplates};
use crate::lang::Language;
use crate::pyramid::{plan as pyramid_plan, PlanOptions as PyramidPlanOptions, SummaryRequest};
use crate::pyramid::{Template, Templates};

fn template(name: &str) -> Template {
    let path = format!("{}/../../prompts/{name}.tera", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("the repository's prompt template");
    Template::new(name, &text)
}

/// A request out, of either kind.
#[derive(Debug, Clone)]
enum Out {
    Summary(SummaryRequest),
    Edit(ModelRequest),
}

impl Out {
    fn name(&self) -> String {
        match self {
            Out::Summary(r) => format!("summary {}", r.key),
            // Named after the section the chunk's text begins with.
            Out::Edit(r) => {
                let text = r.prompt.split("Text to review").nth(1).unwrap_or_default();
                let name = ["Install", "Logs", "Use", "Remove", "Guide"]
                    .into_iter()
                    .find(|h| text.contains(&format!("# {h}")))
                    .unwrap_or("?");
                format!("edit {}", name.to_lowercase())
            }
        }
    }
}

/// How the script picks the next answer among the requests out.
#[derive(Debug, Clone, Copy)]
enum Order {
    FirstSent,
    LastSent,
    Shuffled(u64),
}

/// Serves summaries and edit requests from one queue. The abstract is
/// held back until nothing else is out (a slow answer). Every event is
/// logged: `sent X` and `answered X`.
struct Script {
    out: RefCell<VecDeque<(u64, Out)>>,
    tickets: Cell<u64>,
    order: Cell<Order>,
    log: RefCell<Vec<String>>,
    prompts: RefCell<Vec<String>>,
}

impl Script {
    fn new(order: Order) -> Script {
        Script {
            out: RefCell::new(VecDeque::new()),
            tickets: Cell::new(0),
            order: Cell::new(order),
            log: RefCell::new(Vec::new()),
            prompts: RefCell::new(Vec::new()),
        }
    }

    fn push(&self, out: Out) -> u64 {
        let ticket = self.tickets.get();
        self.tickets.set(ticket + 1);
        self.log.borrow_mut().push(format!("sent {}", out.name()));
        self.prompts.borrow_mut().push(match &out {
            Out::Summary(r) => r.prompt.clone(),
            Out::Edit(r) => r.prompt.clone(),
        });
        self.out.borrow_mut().push_back((ticket, out));
        ticket
    }

    fn pick(&self) -> Option<(u64, Out)> {
        let mut out = self.out.borrow_mut();
        let held = |o: &Out| matches!(o, Out::Summary(r) if r.key == "DOC");
        let candidates: Vec<usize> = (0..out.len()).filter(|&i| !held(&out[i].1)).collect();
        let at = match (candidates.is_empty(), self.order.get()) {
            (true, _) => 0,
            (false, Order::FirstSent) => candidates[0],
            (false, Order::LastSent) => candidates[candidates.len() - 1],
            (false, Order::Shuffled(seed)) => {
                let next = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                self.order.set(Order::Shuffled(next));
                candidates[(next >> 33) as usize % candidates.len()]
            }
        };
        out.remove(at)
    }
}

impl Summarizer for Script {
    fn submit(&self, request: SummaryRequest) -> u64 {
        self.push(Out::Summary(request))
    }

    fn next(&self) -> Option<(u64, Result<String, SummaryError>)> {
        unreachable!("the joint loop reads every answer through the edit model")
    }
}

impl EditModel for Script {
    fn submit(&self, request: ModelRequest) -> u64 {
        self.push(Out::Edit(request))
    }

    fn next(&self) -> Option<(u64, Result<ModelAnswer, ModelError>)> {
        let (ticket, out) = self.pick()?;
        self.log
            .borrow_mut()
            .push(format!("answered {}", out.name()));
        let text = match &out {
            Out::Summary(r) => format!("The part {} says what it says.", r.key),
            Out::Edit(r) if r.prompt.contains("teh installer") => "BEGIN_EDIT_OPS\n[{\"action\": \"replace\", \"line\": 1, \"before_text\": \"teh installer\", \"after_text\": \"the installer\", \"kind\": \"typo\"}]\nEND_EDIT_OPS".to_owned(),
            Out::Edit(_) => "BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS".to_owned(),
        };
        Some((
            ticket,
            Ok(ModelAnswer {
                completion_tokens: (text.len() / 4) as u64,
                stopped_at_marker: text.contains("END_EDIT_OPS"),
                text,
                elapsed_ms: 5,
            }),
        ))
    }
}

const DOC: &str = "# Guide\n\nWhat the guide is for.\n\n## Install\n\nRun teh installer twice.\n\n### Logs\n\nThe installer writes its logs.\n\n## Use\n\nOpen the app and read the logs.\n\n## Remove\n\nDelete the app.\n";

/// The pyramid and the plan of `DOC` with `order`, at `tier`: the
/// pyramid, the plan, the events and every prompt sent (sorted).
fn run(order: Order, tier: Tier) -> (Built, Planned, Vec<String>, Vec<String>) {
    let s = stage1::run("d.md", DOC, ChunkConfig::default()).expect("stage 1");
    let nodes = pyramid_plan(
        DOC,
        &s.structure.sections,
        &s.chunks,
        "Guide",
        Some(&s.spans),
        PyramidPlanOptions {
            levels: 4,
            max_input_tokens: 2_000,
        },
    )
    .expect("pyramid plan");
    let build_options = BuildOptions {
        levels: 4,
        summary_max_tokens: 120,
        language: Language::English,
        model: "scripted".into(),
        templates: Templates {
            leaf: template("pyramid_leaf"),
            parent: template("pyramid_parent"),
            abstract_: template("pyramid_abstract"),
        },
        rebuild: false,
        in_flight: 2,
    };
    let mut options = PlanOptions::new(
        Language::English,
        "scripted",
        PlanTemplates {
            review: template("review"),
            review_plain: template("review_plain"),
            regenerate: template("regenerate"),
            tutor_validate: template("tutor_validate"),
        },
    );
    options.default_tier = tier;
    options.in_flight = 2;
    // One request per chunk: the order of requests is what is looked at.
    options.target_request_tokens = 0;
    let input = PlanInput {
        doc: DOC,
        doc_hash: &s.doc_hash,
        chunks: &s.chunks,
        spans: Some(&s.spans),
        findings: &[],
        pyramid: None,
        glossary: &[],
        fingerprints: None,
        used_ids: &[],
        previous: None,
    };
    let script = Script::new(order);
    let (built, planned) = build_and_plan(
        PyramidInput {
            plan: &nodes,
            doc_hash: &s.doc_hash,
            previous: None,
            options: &build_options,
        },
        &input,
        &options,
        &script,
        &script,
        &mut |_| {},
        &mut |_, _| {},
    )
    .expect("builds and plans");
    let log = script.log.borrow().clone();
    let mut prompts = script.prompts.borrow().clone();
    prompts.sort();
    (built, planned, log, prompts)
}

#[test]
fn edit_requests_go_out_before_a_slow_abstract_is_answered() {
    let (built, planned, log, _) = run(Order::FirstSent, Tier::Section);
    let abstract_answered = log
        .iter()
        .position(|e| e == "answered summary DOC")
        .expect("the abstract was asked");
    let first_edit = log
        .iter()
        .position(|e| e.starts_with("sent edit"))
        .expect("edit requests were sent");
    assert!(first_edit < abstract_answered, "{log:#?}");
    // Every edit request went out before the abstract came back: none of
    // them reads it at this tier.
    let edits_after = log[abstract_answered..]
        .iter()
        .filter(|e| e.starts_with("sent edit"))
        .count();
    assert_eq!(edits_after, 0, "{log:#?}");
    assert_eq!(built.pyramid.nodes.len(), 5, "{:?}", built.pyramid.nodes);
    assert_eq!(planned.plan.ops.len(), 1);
    assert_eq!(planned.plan.ops[0].after_text, "the installer");
}

#[test]
fn a_chunk_waits_for_its_own_section_s_summary_only() {
    let (_, _, log, _) = run(Order::FirstSent, Tier::Section);
    let at = |event: &str| {
        log.iter()
            .position(|e| e == event)
            .unwrap_or_else(|| panic!("{event}: {log:#?}"))
    };
    // "Install" (level 1) is made from its subsection's summary; its
    // chunk's request reads it, so it goes out after it, and "Use" and
    // "Remove" wait for their own summaries only.
    assert!(
        at("answered summary S1.1") < at("sent edit install"),
        "{log:#?}"
    );
    assert!(
        at("answered summary S1.2") < at("sent edit use"),
        "{log:#?}"
    );
    assert!(at("sent edit use") < at("answered summary DOC"), "{log:#?}");
}

#[test]
fn the_plan_and_the_pyramid_do_not_depend_on_the_order_answers_arrive_in() {
    for tier in [Tier::Section, Tier::Full] {
        let (built, planned, _, prompts) = run(Order::FirstSent, tier);
        for order in [
            Order::LastSent,
            Order::Shuffled(7),
            Order::Shuffled(46),
            Order::Shuffled(2026),
        ] {
            let (b, p, _, ps) = run(order, tier);
            assert_eq!(b.pyramid.nodes, built.pyramid.nodes, "{order:?} {tier:?}");
            assert_eq!(p.plan.ops, planned.plan.ops, "{order:?} {tier:?}");
            assert_eq!(ps, prompts, "{order:?} {tier:?}: other prompts");
        }
    }
}

#[test]
fn at_the_full_tier_every_edit_request_waits_for_the_abstract() {
    let (_, _, log, prompts) = run(Order::FirstSent, Tier::Full);
    let abstract_answered = log
        .iter()
        .position(|e| e == "answered summary DOC")
        .expect("the abstract was asked");
    assert!(
        log[..abstract_answered]
            .iter()
            .all(|e| !e.starts_with("sent edit")),
        "{log:#?}"
    );
    assert!(prompts
        .iter()
        .filter(|p| p.starts_with("You are reviewing"))
        .all(|p| p.contains("Document abstract:\nThe part DOC says what it says.")));
}
