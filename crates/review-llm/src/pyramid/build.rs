//! Building a pyramid from its plan, bottom up, asking the model only for
//! summaries whose input changed since the previous pyramid.
//!
//! A summary's *input hash* covers the exact prompt (which holds the text
//! or the children's summaries, the language and the length limit), the
//! system prompt, the template it was rendered from and the model. A node
//! whose input hash is in the previous pyramid gets that summary back
//! without a call, so an unchanged document costs nothing, and editing one
//! leaf costs the calls on its path to the root: the leaf's summary
//! changes, so its parent's prompt changes, up to the abstract.
//!
//! A summary is asked for as soon as what it is made from is summarized:
//! a leaf at once, a long leaf's parts at once and the leaf when its parts
//! are in, a parent when its own children are in (not when its whole level
//! is). Up to `in_flight` requests are out at once, the deepest first.

use std::collections::HashMap;

use koas_kernel_api::hash::sha256;
use koas_review_schema::pyramid::{
    Pyramid, PyramidNode, PyramidStats, PyramidStatus, SummaryPart, ABSTRACT_NODE_ID,
};
use serde::Serialize;

use super::clean::{clean_summary, first_sentences};
use super::plan::{PlanNode, Source};
use crate::estimate_tokens;
use crate::lang::Language;
use crate::prompt::{render, RenderError};

mod tree;
use tree::Tree;

/// The three prompt templates of the pyramid, with their hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Templates {
    /// Summarizes a section (or a part of one) from its text.
    pub leaf: Template,
    /// Summarizes a section from its children's summaries.
    pub parent: Template,
    /// Writes the document abstract from the top sections' summaries.
    pub abstract_: Template,
}

/// A prompt template's name, text and `sha256:` hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// Its name (`pyramid_leaf`).
    pub name: String,
    /// Its Tera text.
    pub text: String,
    /// `sha256:` of the text.
    pub hash: String,
}

impl Template {
    /// A template from its name and text.
    pub fn new(name: &str, text: &str) -> Template {
        Template {
            name: name.to_owned(),
            text: text.to_owned(),
            hash: sha256(text),
        }
    }
}

impl From<koas_kernel_api::PromptTemplate> for Template {
    /// The template the host handed a kernel (its hash as the host made it).
    fn from(t: koas_kernel_api::PromptTemplate) -> Template {
        Template {
            name: t.name,
            text: t.text,
            hash: t.hash,
        }
    }
}

/// What kind of summary a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// A section (or part) from its text.
    Leaf,
    /// A section from its children's summaries.
    Parent,
    /// The document abstract.
    Abstract,
}

/// One summary to ask the model for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryRequest {
    /// The node ID, or `<node>#<chunk>` for a part.
    pub key: String,
    /// The node's level.
    pub level: u8,
    /// What kind of summary.
    pub kind: RequestKind,
    /// The rendered prompt.
    pub prompt: String,
    /// The longest summary wanted, in estimated tokens: it follows what
    /// is summarized ([`summary_cap`]).
    pub max_tokens: u32,
    /// `true` for the second request after an answer with no summary in
    /// it: the summarizer may nudge the sampling.
    pub retry: bool,
}

/// Why a summary request got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryError {
    /// The service's message.
    pub message: String,
    /// `true` when asking again is pointless (the run's token budget is
    /// spent, the server refuses): the remaining nodes fall back without
    /// a call.
    pub fatal: bool,
}

/// Asks a model for summaries, a request at a time, answers as they
/// complete. The kernel implements it with the host's LLM stream; tests
/// with a script.
pub trait Summarizer {
    /// Sends `request` and returns its ticket; its answer comes from
    /// [`Summarizer::next`].
    fn submit(&self, request: SummaryRequest) -> u64;
    /// Waits for the next answer to complete: its ticket and the answer.
    /// Every submitted request is answered exactly once; `None` when none
    /// is outstanding.
    fn next(&self) -> Option<(u64, Result<String, SummaryError>)>;
}

/// How to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildOptions {
    /// Levels built (1–4), recorded in the pyramid.
    pub levels: u8,
    /// The longest summary, in estimated tokens.
    pub summary_max_tokens: u32,
    /// The language summaries are written in.
    pub language: Language,
    /// The model that writes them (part of every input hash).
    pub model: String,
    /// The prompt templates.
    pub templates: Templates,
    /// Ignore the previous pyramid: ask for every summary again.
    pub rebuild: bool,
    /// Requests kept at the model at once.
    pub in_flight: usize,
}

/// What went wrong while building, besides nodes that fell back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// A template cannot be rendered.
    #[error(transparent)]
    Render(#[from] RenderError),
}

/// A finished pyramid and what happened on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    /// The pyramid.
    pub pyramid: Pyramid,
    /// Warnings for the run record: fatal service errors, fallbacks.
    pub warnings: Vec<String>,
}

#[derive(Serialize)]
struct ChildValue<'a> {
    heading: &'a str,
    summary: &'a str,
}

#[derive(Serialize)]
struct PromptValues<'a> {
    language: &'a str,
    language_code: &'a str,
    max_tokens: u32,
    max_words: u32,
    level: u8,
    heading: &'a str,
    document_title: &'a str,
    outline: &'a str,
    text: &'a str,
    intro: &'a str,
    children: Vec<ChildValue<'a>>,
    part: Option<usize>,
    parts: usize,
}

/// A summary made or reused.
#[derive(Debug, Clone)]
struct Made {
    summary: String,
    fallback: bool,
    /// The model could not be asked (see `PyramidNode::unanswered`).
    unanswered: bool,
}

struct Job {
    key: String,
    level: u8,
    kind: RequestKind,
    prompt: String,
    /// The longest summary wanted.
    cap: u32,
    input_hash: String,
    /// Text to fall back on.
    fallback_source: String,
}

/// The longest outline a prompt carries, in characters.
const MAX_OUTLINE_CHARS: usize = 1_500;

/// The headings of the pyramid's first two section levels, in document
/// order, one per line (level 2 indented), cut at a whole line to
/// [`MAX_OUTLINE_CHARS`]. Every summary's prompt begins with it: it tells
/// the model where the section it summarizes stands, and a server's
/// prompt cache reuses it from one request to the next.
fn outline(plan: &[PlanNode]) -> String {
    let mut nodes: Vec<&PlanNode> = plan
        .iter()
        .filter(|n| matches!(n.level, 1 | 2) && !n.heading.trim().is_empty())
        .collect();
    nodes.sort_by_key(|n| (n.line_start, n.level));
    let mut out = String::new();
    for n in nodes {
        let line = format!(
            "{}- {}\n",
            if n.level == 2 { "  " } else { "" },
            n.heading.trim()
        );
        if out.len() + line.len() > MAX_OUTLINE_CHARS {
            out.push_str("- …\n");
            break;
        }
        out.push_str(&line);
    }
    out.trim_end().to_owned()
}

/// The smallest summary asked for: a sentence or two.
const MIN_SUMMARY_TOKENS: u32 = 32;

/// The longest summary of `input_tokens` of text: half of it, at least a
/// sentence or two, at most `max_tokens`. A summary is shorter than what
/// it summarizes: a 146-token section asked for a 200-token summary got
/// 400 tokens of prose from a small model.
pub fn summary_cap(input_tokens: u32, max_tokens: u32) -> u32 {
    (input_tokens / 2).clamp(MIN_SUMMARY_TOKENS.min(max_tokens), max_tokens)
}

/// Builds the pyramid of `plan`, reusing `previous` where inputs are
/// unchanged. `progress(done, total)` is called as summaries are made.
pub fn build(
    plan: &[PlanNode],
    doc_hash: &str,
    previous: Option<&Pyramid>,
    options: &BuildOptions,
    summarizer: &dyn Summarizer,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<Built, BuildError> {
    let mut building = Building::new(plan, doc_hash, previous, options, summarizer);
    loop {
        building.pump(progress)?;
        if building.is_done() {
            return Ok(building.finish());
        }
        match summarizer.next() {
            Some((ticket, answer)) => building.answer(ticket, answer, progress),
            None => building.lost(progress),
        }
    }
}

/// A pyramid being built, one step at a time, for a caller that reads
/// the model's answers itself: one that also sends other requests on the
/// same stream hands this one the answers to its tickets
/// ([`Building::owns`]).
pub struct Building<'p> {
    state: State<'p>,
    tree: Tree<'p>,
    doc_hash: String,
    /// The nodes not made yet: (node ID, level).
    pending: Vec<(String, u8)>,
    /// The nodes made so far, as a pyramid (`status` built).
    made: Pyramid,
}

impl<'p> Building<'p> {
    /// Starts building `plan`; nothing is sent before [`Building::pump`].
    pub fn new(
        plan: &'p [PlanNode],
        doc_hash: &str,
        previous: Option<&Pyramid>,
        options: &'p BuildOptions,
        summarizer: &'p dyn Summarizer,
    ) -> Building<'p> {
        let tasks = tasks_of(plan);
        let state = State {
            options,
            summarizer,
            title: plan
                .iter()
                .find(|n| n.level == 0)
                .map(|n| n.heading.clone())
                .unwrap_or_default(),
            outline: outline(plan),
            known: reusable_summaries(previous.filter(|_| !options.rebuild)),
            stats: PyramidStats::default(),
            warnings: Vec::new(),
            stopped: None,
            done: 0,
            total: u32::try_from(tasks.len()).unwrap_or(u32::MAX),
        };
        let mut tree = Tree {
            plan,
            summaries: HashMap::new(),
            nodes: Vec::new(),
            tasks,
            ready: std::collections::BTreeSet::new(),
            out: HashMap::new(),
            failed: std::collections::BTreeMap::new(),
        };
        tree.ready = (0..tree.tasks.len())
            .filter(|&t| tree.tasks[t].waiting_on == 0)
            .map(|t| tree.order(t))
            .collect();
        Building {
            state,
            tree,
            doc_hash: doc_hash.to_owned(),
            pending: plan.iter().map(|n| (n.node_id.clone(), n.level)).collect(),
            made: Pyramid {
                doc_hash: doc_hash.to_owned(),
                status: PyramidStatus::Built,
                skipped_reason: None,
                language: options.language.code().to_owned(),
                levels: options.levels,
                model: options.model.clone(),
                nodes: Vec::new(),
                stats: PyramidStats::default(),
            },
        }
    }

    /// Sends what is ready, up to the window; summaries reused from the
    /// previous pyramid are made at once, which may ready more.
    pub fn pump(&mut self, progress: &mut dyn FnMut(u32, u32)) -> Result<(), BuildError> {
        let window = self.state.options.in_flight.max(1);
        while self.tree.out.len() < window {
            let Some(first) = self.tree.ready.pop_first() else {
                break;
            };
            self.tree.start(&mut self.state, first.1, progress)?;
        }
        self.sync();
        Ok(())
    }

    /// Whether `ticket` is one of this build's requests still out.
    pub fn owns(&self, ticket: u64) -> bool {
        self.tree.out.contains_key(&ticket)
    }

    /// Whether requests are out.
    pub fn waiting(&self) -> bool {
        !self.tree.out.is_empty()
    }

    /// Reads the answer to one of this build's tickets.
    pub fn answer(
        &mut self,
        ticket: u64,
        answer: Result<String, SummaryError>,
        progress: &mut dyn FnMut(u32, u32),
    ) {
        if let Some(t) = self.tree.out.remove(&ticket) {
            self.tree.answered(&mut self.state, t, answer, progress);
            self.sync();
        }
    }

    /// The model lost track of the requests out: they fall back.
    pub fn lost(&mut self, progress: &mut dyn FnMut(u32, u32)) {
        let lost: Vec<usize> = self.tree.out.drain().map(|(_, t)| t).collect();
        for t in lost {
            let made = self.state.fallback(self.tree.job(t), Some("no answer"));
            self.tree.finish(&mut self.state, t, made, progress);
        }
        self.sync();
    }

    /// Summaries made (reused and fallbacks included) and to make.
    pub fn counts(&self) -> (u32, u32) {
        (self.state.done, self.state.total)
    }

    /// Every summary is made.
    pub fn is_done(&self) -> bool {
        self.tree.out.is_empty() && self.tree.ready.is_empty()
    }

    /// The nodes made so far, as a pyramid.
    pub fn made(&self) -> &Pyramid {
        &self.made
    }

    /// The nodes not made yet: (node ID, level).
    pub fn pending(&self) -> &[(String, u8)] {
        &self.pending
    }

    /// Brings the made pyramid and the pending list up to the tree.
    fn sync(&mut self) {
        if self.made.nodes.len() == self.tree.nodes.len() {
            return;
        }
        for node in &self.tree.nodes[self.made.nodes.len()..] {
            self.pending.retain(|(id, _)| id != &node.node_id);
            self.made.nodes.push(node.clone());
        }
    }

    /// The finished pyramid, nodes by level then line.
    pub fn finish(self) -> Built {
        let Building {
            mut state,
            mut tree,
            doc_hash,
            ..
        } = self;
        state
            .warnings
            .extend(std::mem::take(&mut tree.failed).into_values());
        let mut nodes = tree.nodes;
        nodes.sort_by(|a, b| {
            a.level
                .cmp(&b.level)
                .then(a.line_start.cmp(&b.line_start))
                .then(a.node_id.cmp(&b.node_id))
        });
        state.stats.summaries = state.stats.requested + state.stats.reused;
        if state.stats.fallbacks > 0 {
            state.warnings.push(format!(
                "{} of {} summaries are first-sentence fallbacks: the model gave nothing usable for them",
                state.stats.fallbacks, state.stats.summaries
            ));
        }
        Built {
            pyramid: Pyramid {
                doc_hash,
                status: PyramidStatus::Built,
                skipped_reason: None,
                language: state.options.language.code().to_owned(),
                levels: state.options.levels,
                model: state.options.model.clone(),
                nodes,
                stats: state.stats,
            },
            warnings: state.warnings,
        }
    }
}

/// One summary to make: a part of a long leaf, or a node.
struct Task {
    /// The node (index in the plan).
    node: usize,
    /// The part of the node's text (index in its parts), for a part.
    part: Option<usize>,
    /// Summaries still to make before this one can be asked for.
    waiting_on: usize,
    /// The tasks waiting on this one.
    dependents: Vec<usize>,
    /// The request, once rendered.
    job: Option<Job>,
    /// The summary, once made.
    made: Option<(String, Made)>,
    /// The request out is the second one (the first had no summary).
    retry: bool,
}

/// Every summary of the plan, parts before their node, each with what it
/// waits on: a long leaf on its parts, a parent on its children.
fn tasks_of(plan: &[PlanNode]) -> Vec<Task> {
    let task = |node, part| Task {
        node,
        part,
        waiting_on: 0,
        dependents: Vec::new(),
        job: None,
        made: None,
        retry: false,
    };
    let mut tasks = Vec::new();
    let mut of_node = HashMap::new();
    for (n, node) in plan.iter().enumerate() {
        if let Source::Parts(parts) = &node.source {
            tasks.extend((0..parts.len()).map(|i| task(n, Some(i))));
        }
        of_node.insert(node.node_id.as_str(), tasks.len());
        tasks.push(task(n, None));
    }
    for t in 0..tasks.len() {
        let node = &plan[tasks[t].node];
        let waits_on: Vec<usize> = match (&node.source, tasks[t].part) {
            (Source::Parts(parts), None) => (t - parts.len()..t).collect(),
            (Source::Children { .. }, None) => node
                .children
                .iter()
                .filter_map(|id| of_node.get(id.as_str()).copied())
                .filter(|&c| c != t)
                .collect(),
            _ => Vec::new(),
        };
        tasks[t].waiting_on = waits_on.len();
        for w in waits_on {
            tasks[w].dependents.push(t);
        }
    }
    tasks
}

/// The summaries of `previous` that may be reused, by input hash. A
/// summary the model could not be asked for (server down, budget spent)
/// is asked again; one it answered badly is not.
fn reusable_summaries(previous: Option<&Pyramid>) -> HashMap<String, Made> {
    let mut known: HashMap<String, Made> = HashMap::new();
    let Some(previous) = previous else {
        return known;
    };
    for node in &previous.nodes {
        if !node.unanswered {
            known.insert(
                node.input_hash.clone(),
                Made {
                    summary: node.summary.clone(),
                    fallback: node.fallback,
                    unanswered: false,
                },
            );
        }
        for part in node.parts.iter().filter(|p| !p.unanswered) {
            known.insert(
                part.input_hash.clone(),
                Made {
                    summary: part.summary.clone(),
                    fallback: part.fallback,
                    unanswered: false,
                },
            );
        }
    }
    known
}

/// Stands in for a job a task does not have yet (never read: a task is
/// only looked at once `start` has rendered its job).
static NO_JOB: Job = Job {
    key: String::new(),
    level: 0,
    kind: RequestKind::Leaf,
    prompt: String::new(),
    cap: 0,
    input_hash: String::new(),
    fallback_source: String::new(),
};

impl Job {
    fn request(&self, retry: bool) -> SummaryRequest {
        SummaryRequest {
            key: self.key.clone(),
            level: self.level,
            kind: self.kind,
            prompt: self.prompt.clone(),
            max_tokens: self.cap,
            retry,
        }
    }
}

struct State<'a> {
    options: &'a BuildOptions,
    summarizer: &'a dyn Summarizer,
    /// The document's title (the abstract's heading).
    title: String,
    /// Its sections' headings, the same in every prompt.
    outline: String,
    known: HashMap<String, Made>,
    stats: PyramidStats,
    warnings: Vec<String>,
    stopped: Option<String>,
    done: u32,
    total: u32,
}

impl State<'_> {
    #[allow(clippy::too_many_arguments)]
    fn job(
        &self,
        key: &str,
        node: &PlanNode,
        kind: RequestKind,
        text: &str,
        intro: &str,
        children: Vec<(String, String)>,
        part: Option<(usize, usize)>,
    ) -> Result<Job, BuildError> {
        let o = self.options;
        let template = match kind {
            RequestKind::Leaf => &o.templates.leaf,
            RequestKind::Parent => &o.templates.parent,
            RequestKind::Abstract => &o.templates.abstract_,
        };
        let fallback_source = if text.trim().is_empty() {
            let mut from = intro.to_owned();
            for (_, summary) in &children {
                from.push_str("\n\n");
                from.push_str(summary);
            }
            from
        } else {
            text.to_owned()
        };
        let cap = summary_cap(estimate_tokens(&fallback_source), o.summary_max_tokens);
        let values = PromptValues {
            language: o.language.name(),
            language_code: o.language.code(),
            max_tokens: cap,
            // About three words per four tokens.
            max_words: cap.saturating_mul(3) / 4,
            level: node.level,
            heading: &node.heading,
            document_title: &self.title,
            outline: &self.outline,
            text,
            intro,
            children: children
                .iter()
                .map(|(heading, summary)| ChildValue { heading, summary })
                .collect(),
            part: part.map(|(i, _)| i),
            parts: part.map_or(0, |(_, n)| n),
        };
        let prompt = render(&template.name, &template.text, &values)?;
        let input_hash = sha256(format!(
            "koas-pyramid-v1\0{}\0{}\0{}",
            o.model, template.hash, prompt
        ));
        Ok(Job {
            key: key.to_owned(),
            level: node.level,
            kind,
            prompt,
            cap,
            input_hash,
            fallback_source,
        })
    }

    /// `why` is the service's reason when the model could not be asked;
    /// `None` when it answered with nothing usable.
    fn fallback(&mut self, job: &Job, why: Option<&str>) -> Made {
        self.stats.fallbacks += 1;
        Made {
            summary: first_sentences(&job.fallback_source, job.cap.max(1)),
            fallback: true,
            unanswered: why.is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyramid::plan::{plan, PlanOptions};
    use koas_md::stage1;
    use koas_review_schema::stage1::ChunkConfig;
    use std::cell::RefCell;

    /// Answers every request with a summary naming its key, counting calls;
    /// `script` overrides the answer for a key.
    #[derive(Default)]
    struct Script {
        calls: RefCell<Vec<String>>,
        answers: HashMap<String, Vec<Result<String, SummaryError>>>,
        /// Requests out, answered first sent first unless held.
        out: RefCell<std::collections::VecDeque<(u64, SummaryRequest)>>,
        tickets: std::cell::Cell<u64>,
        /// Keys answered only when nothing else is out (a slow answer).
        hold: Vec<String>,
        /// `sent KEY` and `answered KEY`, in the order they happened.
        events: RefCell<Vec<String>>,
        peak: std::cell::Cell<usize>,
    }

    impl Summarizer for Script {
        fn submit(&self, request: SummaryRequest) -> u64 {
            let ticket = self.tickets.get();
            self.tickets.set(ticket + 1);
            self.events
                .borrow_mut()
                .push(format!("sent {}", request.key));
            let mut out = self.out.borrow_mut();
            out.push_back((ticket, request));
            self.peak.set(self.peak.get().max(out.len()));
            ticket
        }

        fn next(&self) -> Option<(u64, Result<String, SummaryError>)> {
            let (ticket, r) = {
                let mut out = self.out.borrow_mut();
                let at = out
                    .iter()
                    .position(|(_, r)| !self.hold.contains(&r.key))
                    .unwrap_or(0);
                out.remove(at)?
            };
            self.events.borrow_mut().push(format!("answered {}", r.key));
            let n = self.calls.borrow().iter().filter(|k| **k == r.key).count();
            self.calls.borrow_mut().push(r.key.clone());
            let answer = match self.answers.get(&r.key).and_then(|a| a.get(n)) {
                Some(answer) => answer.clone(),
                // A different prompt gives a different summary.
                None => Ok(format!(
                    "Summary of {} ({}).",
                    r.key,
                    &sha256(&r.prompt)[7..15]
                )),
            };
            Some((ticket, answer))
        }
    }

    fn templates(leaf: &str) -> Templates {
        Templates {
            leaf: Template::new("pyramid_leaf", leaf),
            parent: Template::new(
                "pyramid_parent",
                "Summarize {{ heading }} in {{ language }}:\n{{ intro }}\n{% for c in children %}- {{ c.heading }}: {{ c.summary }}\n{% endfor %}",
            ),
            abstract_: Template::new(
                "pyramid_abstract",
                "Abstract of {{ document_title }}:\n{% for c in children %}- {{ c.summary }}\n{% endfor %}",
            ),
        }
    }

    fn options(leaf: &str) -> BuildOptions {
        BuildOptions {
            levels: 4,
            summary_max_tokens: 120,
            language: Language::English,
            model: "scripted".into(),
            templates: templates(leaf),
            rebuild: false,
            in_flight: 1,
        }
    }

    const LEAF: &str =
        "Summarize {{ heading }} in {{ language }} in at most {{ max_words }} words:\n{{ text }}";

    const DOC: &str = "# Guide\n\nIntro.\n\n## Install\n\nRun the installer.\n\n## Use\n\nOpen the app.\n\n### Logs\n\nLogs are kept a year.\n\n# Appendix\n\nMore.\n";

    fn build_doc(
        text: &str,
        previous: Option<&Pyramid>,
        script: &Script,
        options: &BuildOptions,
    ) -> Built {
        let s = stage1::run("d.md", text, ChunkConfig::default()).expect("stage 1");
        let nodes = plan(
            text,
            &s.structure.sections,
            &s.chunks,
            "Guide",
            Some(&s.spans),
            PlanOptions {
                levels: options.levels,
                max_input_tokens: 2_000,
            },
        )
        .expect("plan");
        build(
            &nodes,
            &s.doc_hash,
            previous,
            options,
            script,
            &mut |_, _| {},
        )
        .expect("build")
    }

    #[test]
    fn every_summary_prompt_begins_with_the_same_outline() {
        let s = stage1::run("d.md", DOC, ChunkConfig::default()).expect("stage 1");
        let nodes = plan(
            DOC,
            &s.structure.sections,
            &s.chunks,
            "Guide",
            Some(&s.spans),
            PlanOptions {
                levels: 4,
                max_input_tokens: 2_000,
            },
        )
        .expect("plan");
        assert_eq!(outline(&nodes), "- Guide\n  - Install\n  - Use\n- Appendix");
        // A long outline stops at a whole line.
        let mut many = nodes.clone();
        for i in 0..400 {
            let mut n = nodes[1].clone();
            n.heading = format!("Section number {i}");
            n.line_start = 1_000 + i;
            many.push(n);
        }
        let cut = outline(&many);
        assert!(cut.len() <= MAX_OUTLINE_CHARS + 8, "{}", cut.len());
        assert!(cut.ends_with("- …"), "{cut}");
    }

    #[test]
    fn every_node_gets_a_summary_bottom_up() {
        let script = Script::default();
        let built = build_doc(DOC, None, &script, &options(LEAF));
        let ids: Vec<&str> = built
            .pyramid
            .nodes
            .iter()
            .map(|n| n.node_id.as_str())
            .collect();
        assert_eq!(ids, ["DOC", "S1", "S2", "S1.1", "S1.2", "S1.2.1"]);
        let calls = script.calls.borrow();
        // Deepest first: the level-3 leaf, then level 2, level 1, the abstract.
        assert_eq!(calls.first().map(String::as_str), Some("S1.2.1"));
        assert_eq!(calls.last().map(String::as_str), Some("DOC"));
        assert_eq!(built.pyramid.stats.requested, 6);
        assert!(built
            .pyramid
            .nodes
            .iter()
            .all(|n| !n.fallback && n.summary.starts_with("Summary of")));
    }

    #[test]
    fn a_parent_is_asked_as_soon_as_its_own_children_are_summarized() {
        // Appendix's leaf is slow; the guide's sections are not. With room
        // for every request, "Use" is asked once "Logs" is in and the
        // guide once its two sections are, all while the appendix's
        // answer is still out; only the abstract waits for it.
        let script = Script {
            hold: vec!["S2".into()],
            ..Script::default()
        };
        let mut wide = options(LEAF);
        wide.in_flight = 8;
        let built = build_doc(DOC, None, &script, &wide);
        let events = script.events.borrow().clone();
        let at = |e: &str| {
            events
                .iter()
                .position(|x| x == e)
                .unwrap_or_else(|| panic!("{e} not in {events:?}"))
        };
        assert!(at("sent S1.2") < at("answered S2"), "{events:?}");
        assert!(at("sent S1") < at("answered S2"), "{events:?}");
        assert!(at("answered S1.2.1") < at("sent S1.2"), "{events:?}");
        assert!(at("answered S2") < at("sent DOC"), "{events:?}");
        // The three leaves went out together at the start.
        assert_eq!(script.peak.get(), 3);
        // The same pyramid as asking one request at a time.
        let one = build_doc(DOC, None, &Script::default(), &options(LEAF));
        assert_eq!(built.pyramid, one.pyramid);
    }

    #[test]
    fn unchanged_document_makes_no_call_and_one_edited_leaf_costs_its_path() {
        let first = build_doc(DOC, None, &Script::default(), &options(LEAF));
        let again = Script::default();
        let second = build_doc(DOC, Some(&first.pyramid), &again, &options(LEAF));
        assert!(
            again.calls.borrow().is_empty(),
            "{:?}",
            again.calls.borrow()
        );
        assert_eq!(second.pyramid.stats.reused, 6);
        assert_eq!(second.pyramid.nodes, first.pyramid.nodes);
        let edited = DOC.replace("Logs are kept a year.", "Logs are kept two years.");
        let third = Script::default();
        build_doc(&edited, Some(&first.pyramid), &third, &options(LEAF));
        assert_eq!(*third.calls.borrow(), ["S1.2.1", "S1.2", "S1", "DOC"]);
    }

    #[test]
    fn a_template_edit_or_another_model_invalidates_the_summaries() {
        let first = build_doc(DOC, None, &Script::default(), &options(LEAF));
        let script = Script::default();
        let edited = options(&format!("{LEAF}\nBe brief."));
        build_doc(DOC, Some(&first.pyramid), &script, &edited);
        assert_eq!(script.calls.borrow().len(), 6);
        let script = Script::default();
        let mut other = options(LEAF);
        other.model = "another".into();
        build_doc(DOC, Some(&first.pyramid), &script, &other);
        assert_eq!(script.calls.borrow().len(), 6);
    }

    #[test]
    fn empty_and_boilerplate_answers_are_asked_again_then_fall_back() {
        let mut script = Script::default();
        script.answers.insert(
            "S2".into(),
            vec![Ok(String::new()), Ok("Sure! Here is the summary:".into())],
        );
        script.answers.insert(
            "S1.1".into(),
            vec![
                Ok("  ".into()),
                Ok("The installer sets everything up.".into()),
            ],
        );
        let built = build_doc(DOC, None, &script, &options(LEAF));
        let s2 = built.pyramid.node("S2").expect("S2");
        assert!(s2.fallback, "{s2:?}");
        assert_eq!(s2.summary, "More.");
        let s11 = built.pyramid.node("S1.1").expect("S1.1");
        assert!(!s11.fallback);
        assert_eq!(s11.summary, "The installer sets everything up.");
        assert_eq!(built.pyramid.stats.fallbacks, 1);
        assert_eq!(
            script.calls.borrow().iter().filter(|k| *k == "S2").count(),
            2
        );
        assert!(built.warnings.iter().any(|w| w.contains("fallback")));
    }

    #[test]
    fn a_fatal_error_stops_asking_and_every_node_still_exists() {
        let mut script = Script::default();
        script.answers.insert(
            "S1.2.1".into(),
            vec![Err(SummaryError {
                message: "SESSION_BUDGET_EXHAUSTED".into(),
                fatal: true,
            })],
        );
        let built = build_doc(DOC, None, &script, &options(LEAF));
        assert_eq!(built.pyramid.nodes.len(), 6);
        assert!(
            built.pyramid.nodes.iter().all(|n| n.fallback),
            "{:?}",
            built.pyramid.nodes
        );
        assert_eq!(*script.calls.borrow(), ["S1.2.1"]);
        assert!(built.warnings[0].contains("SESSION_BUDGET_EXHAUSTED"));
    }

    #[test]
    fn regression_summaries_the_model_could_not_give_are_asked_again_next_run() {
        // First run: the server fails at the first (deepest) request, so
        // every summary is a fallback the model was never asked for.
        let mut script = Script::default();
        script.answers.insert(
            "S1.2.1".into(),
            vec![Err(SummaryError {
                message: "TRANSPORT_FAILURE: connection refused".into(),
                fatal: true,
            })],
        );
        let first = build_doc(DOC, None, &script, &options(LEAF));
        assert!(first.pyramid.nodes.iter().all(|n| n.unanswered));
        // The server is back: every summary is asked again, none reused.
        let again = Script::default();
        let second = build_doc(DOC, Some(&first.pyramid), &again, &options(LEAF));
        assert_eq!(again.calls.borrow().len(), 6, "{:?}", again.calls.borrow());
        assert_eq!(second.pyramid.stats.reused, 0);
        assert!(second
            .pyramid
            .nodes
            .iter()
            .all(|n| !n.fallback && !n.unanswered));

        // A summary the model answered badly is a fallback it is not asked
        // for again: the same prompt would get the same answer.
        let mut bad = Script::default();
        bad.answers
            .insert("S2".into(), vec![Ok(String::new()), Ok(String::new())]);
        let third = build_doc(DOC, None, &bad, &options(LEAF));
        let s2 = third.pyramid.node("S2").expect("S2");
        assert!(s2.fallback && !s2.unanswered, "{s2:?}");
        let fourth = Script::default();
        build_doc(DOC, Some(&third.pyramid), &fourth, &options(LEAF));
        assert!(
            fourth.calls.borrow().is_empty(),
            "{:?}",
            fourth.calls.borrow()
        );
    }
}
