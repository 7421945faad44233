//! The summary tree: which node waits for which, and the prompt of a node whose
//! children are summarized.

use super::*;

/// The pyramid as it is built: what is ready to ask, what is out.
pub(super) struct Tree<'p> {
    pub(super) plan: &'p [PlanNode],
    /// The summaries of the nodes made so far, by node ID: a parent's
    /// prompt holds its children's.
    pub(super) summaries: HashMap<String, Made>,
    pub(super) nodes: Vec<PyramidNode>,
    pub(super) tasks: Vec<Task>,
    /// Tasks whose inputs are made, deepest level first, then in plan
    /// order: a parent is reached as soon as it can be.
    pub(super) ready: std::collections::BTreeSet<(std::cmp::Reverse<u8>, usize)>,
    /// Requests out, by ticket.
    pub(super) out: HashMap<u64, usize>,
    /// Warnings about single summaries, in task order whatever the order
    /// their answers came in.
    pub(super) failed: std::collections::BTreeMap<usize, String>,
}

impl Tree<'_> {
    pub(super) fn order(&self, t: usize) -> (std::cmp::Reverse<u8>, usize) {
        (std::cmp::Reverse(self.plan[self.tasks[t].node].level), t)
    }

    pub(super) fn job(&self, t: usize) -> &Job {
        // A task out has its job: `start` renders it before sending.
        self.tasks[t].job.as_ref().unwrap_or(&NO_JOB)
    }

    /// Renders task `t`'s request, then reuses its summary, falls back
    /// (the model was stopped) or sends it.
    pub(super) fn start(
        &mut self,
        state: &mut State<'_>,
        t: usize,
        progress: &mut dyn FnMut(u32, u32),
    ) -> Result<(), BuildError> {
        let job = self.task_job(state, t)?;
        if let Some(made) = state.known.get(&job.input_hash).cloned() {
            state.stats.reused += 1;
            self.tasks[t].job = Some(job);
            self.finish(state, t, made, progress);
            return Ok(());
        }
        if let Some(reason) = state.stopped.clone() {
            let made = state.fallback(&job, Some(&reason));
            self.tasks[t].job = Some(job);
            self.finish(state, t, made, progress);
            return Ok(());
        }
        state.stats.requested += 1;
        let ticket = state.summarizer.submit(job.request(false));
        self.tasks[t].job = Some(job);
        self.out.insert(ticket, t);
        Ok(())
    }

    /// Reads an answer: a summary, a second request, or a fallback.
    pub(super) fn answered(
        &mut self,
        state: &mut State<'_>,
        t: usize,
        answer: Result<String, SummaryError>,
        progress: &mut dyn FnMut(u32, u32),
    ) {
        let made = match answer {
            Ok(answer) => match clean_summary(&answer, self.job(t).cap) {
                Some(summary) => Made {
                    summary,
                    fallback: false,
                    unanswered: false,
                },
                None if self.tasks[t].retry => state.fallback(self.job(t), None),
                // Asked again next run: the model was not asked twice.
                None if state.stopped.is_some() => {
                    let reason = state.stopped.clone();
                    state.fallback(self.job(t), reason.as_deref())
                }
                None => {
                    self.tasks[t].retry = true;
                    let ticket = state.summarizer.submit(self.job(t).request(true));
                    self.out.insert(ticket, t);
                    return;
                }
            },
            Err(e) => {
                if e.fatal && state.stopped.is_none() {
                    state.warnings.push(format!(
                        "stopped asking the model ({}); the remaining summaries are first-sentence fallbacks",
                        e.message
                    ));
                    state.stopped = Some(e.message.clone());
                } else if !e.fatal {
                    self.failed
                        .insert(t, format!("summary of {}: {}", self.job(t).key, e.message));
                }
                state.fallback(self.job(t), Some(&e.message))
            }
        };
        self.finish(state, t, made, progress);
    }

    /// Keeps task `t`'s summary and readies what waited on it.
    pub(super) fn finish(
        &mut self,
        state: &mut State<'_>,
        t: usize,
        made: Made,
        progress: &mut dyn FnMut(u32, u32),
    ) {
        let hash = self.job(t).input_hash.clone();
        state.known.insert(hash.clone(), made.clone());
        self.tasks[t].made = Some((hash, made.clone()));
        if self.tasks[t].part.is_none() {
            let node = &self.plan[self.tasks[t].node];
            self.nodes.push(PyramidNode {
                node_id: node.node_id.clone(),
                level: node.level,
                heading: node.heading.clone(),
                anchor: node.anchor.clone(),
                content_hash: node.content_hash.clone(),
                input_hash: self.tasks[t]
                    .made
                    .as_ref()
                    .map(|m| m.0.clone())
                    .unwrap_or_default(),
                summary: made.summary.clone(),
                children: node.children.clone(),
                token_count: estimate_tokens(&made.summary),
                line_start: node.line_start,
                line_end: node.line_end,
                fallback: made.fallback,
                unanswered: made.unanswered,
                parts: self.parts(t),
            });
            self.summaries.insert(node.node_id.clone(), made);
        }
        state.done += 1;
        progress(state.done, state.total);
        for d in std::mem::take(&mut self.tasks[t].dependents) {
            self.tasks[d].waiting_on -= 1;
            if self.tasks[d].waiting_on == 0 {
                let order = self.order(d);
                self.ready.insert(order);
            }
        }
    }

    /// The summaries of node task `t`'s parts, in their order.
    pub(super) fn parts(&self, t: usize) -> Vec<SummaryPart> {
        let node = &self.plan[self.tasks[t].node];
        let Source::Parts(parts) = &node.source else {
            return Vec::new();
        };
        parts
            .iter()
            .enumerate()
            .filter_map(|(i, part)| {
                let (hash, made) = self.tasks[t - parts.len() + i].made.clone()?;
                Some(SummaryPart {
                    chunk_id: part.chunk_id.clone(),
                    input_hash: hash,
                    summary: made.summary,
                    fallback: made.fallback,
                    unanswered: made.unanswered,
                })
            })
            .collect()
    }

    /// The request of task `t`: a part from its text, a node from its
    /// text, its parts' summaries or its children's (the abstract from the
    /// top sections').
    pub(super) fn task_job(&self, state: &State<'_>, t: usize) -> Result<Job, BuildError> {
        let node = &self.plan[self.tasks[t].node];
        if let (Some(i), Source::Parts(parts)) = (self.tasks[t].part, &node.source) {
            let part = &parts[i];
            return state.job(
                &format!("{}#{}", node.node_id, part.chunk_id),
                node,
                RequestKind::Leaf,
                &part.text,
                "",
                Vec::new(),
                Some((i + 1, parts.len())),
            );
        }
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
                let parts = self.parts(t);
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
