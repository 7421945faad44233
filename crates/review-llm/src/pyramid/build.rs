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
//! Levels are built deepest first; the summaries of one level (and the
//! parts of its long leaves) are asked for together, so the host can run
//! them concurrently.

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

/// Asks a model for summaries. The kernel implements it with the host's
/// LLM service (which runs a batch concurrently, up to its in-flight
/// bound); tests implement it with a script.
pub trait Summarizer {
    /// One answer per request, in the same order.
    fn summarize(&self, requests: &[SummaryRequest]) -> Vec<Result<String, SummaryError>>;
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
    input_hash: String,
    /// Text to fall back on.
    fallback_source: String,
}

/// Builds the pyramid of `plan`, reusing `previous` where inputs are
/// unchanged. `progress(done, total)` is called after each batch.
pub fn build(
    plan: &[PlanNode],
    doc_hash: &str,
    previous: Option<&Pyramid>,
    options: &BuildOptions,
    summarizer: &dyn Summarizer,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<Built, BuildError> {
    let mut state = State {
        options,
        summarizer,
        known: reusable_summaries(previous.filter(|_| !options.rebuild)),
        stats: PyramidStats::default(),
        warnings: Vec::new(),
        stopped: None,
        done: 0,
        total: plan
            .iter()
            .map(|n| {
                1 + match &n.source {
                    Source::Parts(p) => u32::try_from(p.len()).unwrap_or(u32::MAX),
                    _ => 0,
                }
            })
            .sum(),
    };
    let mut tree = Tree {
        plan,
        summaries: HashMap::new(),
        parts_of: HashMap::new(),
        nodes: Vec::new(),
    };
    let mut levels: Vec<u8> = plan.iter().map(|n| n.level).collect();
    levels.dedup();
    for level in levels {
        let at_level: Vec<&PlanNode> = plan.iter().filter(|n| n.level == level).collect();
        // Parts of this level's long leaves first.
        tree.summarize_parts(&mut state, &at_level, progress)?;
        tree.summarize_nodes(&mut state, &at_level, progress)?;
    }
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
    Ok(Built {
        pyramid: Pyramid {
            doc_hash: doc_hash.to_owned(),
            status: PyramidStatus::Built,
            skipped_reason: None,
            language: options.language.code().to_owned(),
            levels: options.levels,
            model: options.model.clone(),
            nodes,
            stats: state.stats,
        },
        warnings: state.warnings,
    })
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

/// The pyramid as it is built, level by level.
struct Tree<'p> {
    plan: &'p [PlanNode],
    /// The summaries of the nodes built so far, by node ID: a parent's
    /// prompt holds its children's.
    summaries: HashMap<String, Made>,
    /// The parts of this level's long leaves, by node ID, until their node
    /// is built.
    parts_of: HashMap<String, Vec<SummaryPart>>,
    nodes: Vec<PyramidNode>,
}

impl Tree<'_> {
    /// Summarizes the parts of the long leaves of one level.
    fn summarize_parts(
        &mut self,
        state: &mut State<'_>,
        at_level: &[&PlanNode],
        progress: &mut dyn FnMut(u32, u32),
    ) -> Result<(), BuildError> {
        let mut part_jobs = Vec::new();
        for node in at_level {
            if let Source::Parts(parts) = &node.source {
                for (i, part) in parts.iter().enumerate() {
                    part_jobs.push(state.job(
                        &format!("{}#{}", node.node_id, part.chunk_id),
                        node,
                        RequestKind::Leaf,
                        &part.text,
                        "",
                        Vec::new(),
                        Some((i + 1, parts.len())),
                    )?);
                }
            }
        }
        let part_results = state.run(part_jobs, progress);
        for (key, hash, made) in part_results {
            if let Some((node_id, chunk_id)) = key.split_once('#') {
                self.parts_of
                    .entry(node_id.to_owned())
                    .or_default()
                    .push(SummaryPart {
                        chunk_id: chunk_id.to_owned(),
                        input_hash: hash,
                        summary: made.summary,
                        fallback: made.fallback,
                        unanswered: made.unanswered,
                    });
            }
        }
        Ok(())
    }

    /// Summarizes the nodes of one level, once its long leaves' parts are
    /// summarized and the level below it is built.
    fn summarize_nodes(
        &mut self,
        state: &mut State<'_>,
        at_level: &[&PlanNode],
        progress: &mut dyn FnMut(u32, u32),
    ) -> Result<(), BuildError> {
        let mut jobs = Vec::new();
        for node in at_level {
            jobs.push(self.node_job(state, node)?);
        }
        let results = state.run(jobs, progress);
        for (key, hash, made) in results {
            let Some(node) = at_level.iter().find(|n| n.node_id == key) else {
                continue;
            };
            self.nodes.push(PyramidNode {
                node_id: node.node_id.clone(),
                level: node.level,
                heading: node.heading.clone(),
                anchor: node.anchor.clone(),
                content_hash: node.content_hash.clone(),
                input_hash: hash,
                summary: made.summary.clone(),
                children: node.children.clone(),
                token_count: estimate_tokens(&made.summary),
                line_start: node.line_start,
                line_end: node.line_end,
                fallback: made.fallback,
                unanswered: made.unanswered,
                parts: self.parts_of.remove(&node.node_id).unwrap_or_default(),
            });
            self.summaries.insert(key, made);
        }
        Ok(())
    }

    /// The job of a node: from its text, from its parts' summaries, or
    /// from its children's (the abstract from the top sections').
    fn node_job(&self, state: &State<'_>, node: &PlanNode) -> Result<Job, BuildError> {
        let kind = if node.node_id == ABSTRACT_NODE_ID
            && !matches!(node.source, Source::Text(_) | Source::Parts(_))
        {
            RequestKind::Abstract
        } else {
            match node.source {
                Source::Text(_) => RequestKind::Leaf,
                Source::Parts(_) | Source::Children { .. } => RequestKind::Parent,
            }
        };
        match &node.source {
            Source::Text(text) => state.job(&node.node_id, node, kind, text, "", Vec::new(), None),
            Source::Parts(_) => {
                let parts = self
                    .parts_of
                    .get(&node.node_id)
                    .cloned()
                    .unwrap_or_default();
                let children: Vec<(String, String)> = parts
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        (
                            format!("{} ({}/{})", node.heading, i + 1, parts.len()),
                            p.summary.clone(),
                        )
                    })
                    .collect();
                state.job(&node.node_id, node, kind, "", "", children, None)
            }
            Source::Children { intro } => {
                let children: Vec<(String, String)> = node
                    .children
                    .iter()
                    .filter_map(|id| {
                        let made = self.summaries.get(id)?;
                        let heading = self
                            .plan
                            .iter()
                            .find(|n| &n.node_id == id)
                            .map_or(id.as_str(), |n| n.heading.as_str());
                        Some((heading.to_owned(), made.summary.clone()))
                    })
                    .collect();
                state.job(&node.node_id, node, kind, "", intro, children, None)
            }
        }
    }
}

struct State<'a> {
    options: &'a BuildOptions,
    summarizer: &'a dyn Summarizer,
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
        let values = PromptValues {
            language: o.language.name(),
            language_code: o.language.code(),
            max_tokens: o.summary_max_tokens,
            // About three words per four tokens.
            max_words: o.summary_max_tokens.saturating_mul(3) / 4,
            level: node.level,
            heading: &node.heading,
            document_title: if kind == RequestKind::Abstract {
                &node.heading
            } else {
                ""
            },
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
        Ok(Job {
            key: key.to_owned(),
            level: node.level,
            kind,
            prompt,
            input_hash,
            fallback_source,
        })
    }

    /// Reuses or asks for every job; returns (key, input hash, summary).
    fn run(
        &mut self,
        jobs: Vec<Job>,
        progress: &mut dyn FnMut(u32, u32),
    ) -> Vec<(String, String, Made)> {
        let mut out: Vec<Option<Made>> = vec![None; jobs.len()];
        let mut ask: Vec<usize> = Vec::new();
        for (i, job) in jobs.iter().enumerate() {
            match self.known.get(&job.input_hash) {
                Some(made) => {
                    out[i] = Some(made.clone());
                    self.stats.reused += 1;
                }
                None => ask.push(i),
            }
        }
        for retry in [false, true] {
            if ask.is_empty() {
                break;
            }
            if let Some(reason) = &self.stopped {
                let reason = reason.clone();
                for &i in &ask {
                    out[i] = Some(self.fallback(&jobs[i], Some(&reason)));
                }
                ask.clear();
                break;
            }
            let requests: Vec<SummaryRequest> = ask
                .iter()
                .map(|&i| SummaryRequest {
                    key: jobs[i].key.clone(),
                    level: jobs[i].level,
                    kind: jobs[i].kind,
                    prompt: jobs[i].prompt.clone(),
                    retry,
                })
                .collect();
            self.stats.requested += u32::try_from(requests.len()).unwrap_or(u32::MAX);
            let answers = self.summarizer.summarize(&requests);
            let mut again = Vec::new();
            for (k, &i) in ask.iter().enumerate() {
                match answers.get(k) {
                    Some(Ok(answer)) => {
                        match clean_summary(answer, self.options.summary_max_tokens) {
                            Some(summary) => {
                                out[i] = Some(Made {
                                    summary,
                                    fallback: false,
                                    unanswered: false,
                                })
                            }
                            None if !retry => again.push(i),
                            None => out[i] = Some(self.fallback(&jobs[i], None)),
                        }
                    }
                    Some(Err(e)) => {
                        if e.fatal && self.stopped.is_none() {
                            self.warnings.push(format!(
                                "stopped asking the model ({}); the remaining summaries are first-sentence fallbacks",
                                e.message
                            ));
                            self.stopped = Some(e.message.clone());
                        } else if !e.fatal {
                            self.warnings
                                .push(format!("summary of {}: {}", jobs[i].key, e.message));
                        }
                        out[i] = Some(self.fallback(&jobs[i], Some(&e.message)));
                    }
                    None => out[i] = Some(self.fallback(&jobs[i], Some("no answer"))),
                }
            }
            // A retried request counts once in `requested`.
            if retry {
                self.stats.requested = self
                    .stats
                    .requested
                    .saturating_sub(u32::try_from(ask.len()).unwrap_or(0));
            }
            ask = again;
        }
        self.done += u32::try_from(jobs.len()).unwrap_or(u32::MAX);
        progress(self.done, self.total);
        jobs.into_iter()
            .zip(out)
            .map(|(job, made)| {
                let made = made.unwrap_or(Made {
                    summary: String::new(),
                    fallback: true,
                    unanswered: true,
                });
                self.known.insert(job.input_hash.clone(), made.clone());
                (job.key, job.input_hash, made)
            })
            .collect()
    }

    /// `why` is the service's reason when the model could not be asked;
    /// `None` when it answered with nothing usable.
    fn fallback(&mut self, job: &Job, why: Option<&str>) -> Made {
        self.stats.fallbacks += 1;
        Made {
            summary: first_sentences(&job.fallback_source, self.options.summary_max_tokens),
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
    }

    impl Summarizer for Script {
        fn summarize(&self, requests: &[SummaryRequest]) -> Vec<Result<String, SummaryError>> {
            requests
                .iter()
                .map(|r| {
                    let n = self.calls.borrow().iter().filter(|k| **k == r.key).count();
                    self.calls.borrow_mut().push(r.key.clone());
                    match self.answers.get(&r.key).and_then(|a| a.get(n)) {
                        Some(answer) => answer.clone(),
                        // A different prompt gives a different summary.
                        None => Ok(format!(
                            "Summary of {} ({}).",
                            r.key,
                            &sha256(&r.prompt)[7..15]
                        )),
                    }
                })
                .collect()
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
