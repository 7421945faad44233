//! The pipeline DAG, built from the artifacts kernels declare.
//!
//! An edge goes from the producer of an artifact to each kernel that reads
//! it. Sources (files named in the pipeline's `[inputs]`) produce artifacts
//! too. A required input nobody produces, an artifact produced twice, and a
//! cycle are errors naming the kernels and artifacts involved; every such
//! problem is reported, not just the first.

use koas_kernel_api::KernelSpec;
use petgraph::algo::{tarjan_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{BTreeMap, BTreeSet};

/// Who produces an artifact: a kernel of the pipeline or a source file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Producer {
    /// A kernel, by name.
    Kernel(String),
    /// A source file of the pipeline.
    Source,
}

/// One problem found while building the DAG.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DagProblem {
    /// A required input has no producer.
    #[error("artifact `{artifact}` is required by {} but no kernel in the pipeline produces it and it is not an [inputs] entry{}", list(consumers), suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    MissingProducer {
        /// The name of the artifact nobody produces.
        artifact: String,
        /// The kernels that need it.
        consumers: Vec<String>,
        /// A produced artifact or `[inputs]` entry whose name is close
        /// (a likely typo), if any.
        suggestion: Option<String>,
    },
    /// An `[inputs]` entry (or `--input`) that no kernel reads, whose name
    /// is close to an input a kernel reads and nothing provides: a typo
    /// that would otherwise be silently ignored.
    #[error("[inputs] entry `{input}` is read by no kernel of the pipeline (did you mean `{suggestion}`?)")]
    UnreadInput {
        /// The entry's name.
        input: String,
        /// The input a kernel reads that nothing provides.
        suggestion: String,
    },
    /// Two producers for one artifact.
    #[error(
        "artifact `{artifact}` is produced by more than one of: {}",
        list(producers)
    )]
    DuplicateProducer {
        /// The name of the artifact produced more than once.
        artifact: String,
        /// Its producers (`[inputs]` for a source file).
        producers: Vec<String>,
    },
    /// Kernels that depend on each other's outputs, directly or through
    /// other kernels (a kernel reading its own output included).
    #[error(
        "cycle between kernels {} through artifacts {}",
        list(kernels),
        list(artifacts)
    )]
    Cycle {
        /// The kernels on the cycle, sorted by name.
        kernels: Vec<String>,
        /// The artifacts passed between those kernels, sorted.
        artifacts: Vec<String>,
    },
}

fn list(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// All the problems of a pipeline graph.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the pipeline graph is invalid:\n{}", .0.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
pub struct DagError(pub Vec<DagProblem>);

/// The validated DAG of a pipeline.
#[derive(Debug, Clone)]
pub struct Dag {
    /// Kernel nodes; edges carry the artifact names linking them.
    pub graph: DiGraph<String, Vec<String>>,
    nodes: BTreeMap<String, NodeIndex>,
    /// Producer of every artifact, sources included; an artifact no one
    /// produces (an optional input) is absent.
    pub producers: BTreeMap<String, Producer>,
    /// Kernels in a topological order.
    pub order: Vec<String>,
    /// The artifacts read from the pipeline's `[inputs]` files.
    pub sources: BTreeSet<String>,
}

/// Each artifact's producers: the pipeline's sources and the kernels that
/// output it.
fn producers_of(
    specs: &[&KernelSpec],
    sources: &BTreeSet<String>,
) -> BTreeMap<String, Vec<Producer>> {
    let mut producers_of: BTreeMap<String, Vec<Producer>> = BTreeMap::new();
    for s in sources {
        producers_of
            .entry(s.clone())
            .or_default()
            .push(Producer::Source);
    }
    for spec in specs {
        for o in &spec.outputs {
            producers_of
                .entry(o.artifact.clone())
                .or_default()
                .push(Producer::Kernel(spec.name.clone()));
        }
    }
    producers_of
}

/// A source no kernel reads, when its name is close to an input nothing
/// provides (a misspelt `[inputs]` name).
fn unread_inputs(
    specs: &[&KernelSpec],
    sources: &BTreeSet<String>,
    producers_of: &BTreeMap<String, Vec<Producer>>,
    problems: &mut Vec<DagProblem>,
) {
    let read: BTreeSet<&str> = specs
        .iter()
        .flat_map(|s| s.inputs.iter().map(|i| i.artifact.as_str()))
        .collect();
    let unprovided: Vec<&str> = read
        .iter()
        .copied()
        .filter(|a| !producers_of.contains_key(*a))
        .collect();
    for source in sources.iter().filter(|s| !read.contains(s.as_str())) {
        if let Some(s) = koas_kernel_api::suggest::closest(source, unprovided.iter().copied()) {
            problems.push(DagProblem::UnreadInput {
                input: source.clone(),
                suggestion: s.to_string(),
            });
        }
    }
}

/// The graph's cycles, each with its kernels and the artifacts between
/// them.
fn cycles(graph: &DiGraph<String, Vec<String>>, problems: &mut Vec<DagProblem>) {
    for scc in tarjan_scc(graph) {
        let self_loop = scc.len() == 1 && graph.find_edge(scc[0], scc[0]).is_some();
        if scc.len() > 1 || self_loop {
            let members: BTreeSet<NodeIndex> = scc.iter().copied().collect();
            let mut kernels: Vec<String> = scc.iter().map(|n| graph[*n].clone()).collect();
            kernels.sort();
            let mut artifacts: BTreeSet<String> = BTreeSet::new();
            for e in graph.edge_indices() {
                if let Some((a, b)) = graph.edge_endpoints(e) {
                    if members.contains(&a) && members.contains(&b) {
                        artifacts.extend(graph[e].iter().cloned());
                    }
                }
            }
            problems.push(DagProblem::Cycle {
                kernels,
                artifacts: artifacts.into_iter().collect(),
            });
        }
    }
}

impl Dag {
    /// Builds and validates the DAG of `specs` with `sources` as the
    /// pipeline's source artifacts.
    pub fn build(specs: &[&KernelSpec], sources: &BTreeSet<String>) -> Result<Dag, DagError> {
        let mut problems = Vec::new();
        let producers_of = producers_of(specs, sources);
        let mut producers = BTreeMap::new();
        for (artifact, ps) in &producers_of {
            if ps.len() > 1 {
                problems.push(DagProblem::DuplicateProducer {
                    artifact: artifact.clone(),
                    producers: ps
                        .iter()
                        .map(|p| match p {
                            Producer::Kernel(k) => k.clone(),
                            Producer::Source => "[inputs]".to_string(),
                        })
                        .collect(),
                });
            } else if let Some(p) = ps.first() {
                producers.insert(artifact.clone(), p.clone());
            }
        }
        let mut graph = DiGraph::new();
        let mut nodes = BTreeMap::new();
        for spec in specs {
            nodes.insert(spec.name.clone(), graph.add_node(spec.name.clone()));
        }
        let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut edges: BTreeMap<(NodeIndex, NodeIndex), Vec<String>> = BTreeMap::new();
        for spec in specs {
            let to = nodes[&spec.name];
            for input in &spec.inputs {
                match producers_of.get(&input.artifact).map(Vec::as_slice) {
                    None | Some([]) => {
                        if input.required {
                            missing
                                .entry(input.artifact.clone())
                                .or_default()
                                .push(spec.name.clone());
                        }
                    }
                    Some(ps) => {
                        for p in ps {
                            if let Producer::Kernel(k) = p {
                                edges
                                    .entry((nodes[k], to))
                                    .or_default()
                                    .push(input.artifact.clone());
                            }
                        }
                    }
                }
            }
        }
        unread_inputs(specs, sources, &producers_of, &mut problems);
        for (artifact, consumers) in missing {
            let suggestion = koas_kernel_api::suggest::closest(&artifact, producers_of.keys())
                .map(str::to_string);
            problems.push(DagProblem::MissingProducer {
                artifact,
                consumers,
                suggestion,
            });
        }
        for ((from, to), artifacts) in edges {
            graph.add_edge(from, to, artifacts);
        }
        cycles(&graph, &mut problems);
        if !problems.is_empty() {
            return Err(DagError(problems));
        }
        let order = toposort(&graph, None)
            .map_err(|_| DagError(vec![]))?
            .into_iter()
            .map(|n| graph[n].clone())
            .collect();
        Ok(Dag {
            graph,
            nodes,
            producers,
            order,
            sources: sources.clone(),
        })
    }

    /// `name` and every kernel it (transitively) depends on.
    pub fn ancestors(&self, name: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let Some(&start) = self.nodes.get(name) else {
            return out;
        };
        let mut stack = vec![start];
        while let Some(n) = stack.pop() {
            if out.insert(self.graph[n].clone()) {
                stack.extend(
                    self.graph
                        .neighbors_directed(n, petgraph::Direction::Incoming),
                );
            }
        }
        out
    }

    /// The kernels that read an output of `name` directly.
    pub fn dependents(&self, name: &str) -> Vec<String> {
        self.nodes
            .get(name)
            .map(|&n| {
                self.graph
                    .neighbors_directed(n, petgraph::Direction::Outgoing)
                    .map(|m| self.graph[m].clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `true` when the DAG has a kernel of that name.
    pub fn contains(&self, name: &str) -> bool {
        self.nodes.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str, ins: &[&str], outs: &[&str]) -> KernelSpec {
        let mut s = KernelSpec::new(name, "1.0.0");
        for i in ins {
            s = s.input(*i);
        }
        for o in outs {
            s = s.output(*o);
        }
        s
    }

    fn build(specs: &[KernelSpec], sources: &[&str]) -> Result<Dag, DagError> {
        let refs: Vec<&KernelSpec> = specs.iter().collect();
        Dag::build(&refs, &sources.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn orders_producers_before_consumers() {
        let specs = [
            k("c", &["b"], &["c"]),
            k("a", &["doc"], &["a"]),
            k("b", &["a"], &["b"]),
        ];
        let dag = build(&specs, &["doc"]).expect("valid");
        assert_eq!(dag.order, vec!["a", "b", "c"]);
        assert_eq!(
            dag.ancestors("b"),
            ["a", "b"].iter().map(|s| s.to_string()).collect()
        );
        assert_eq!(dag.dependents("a"), vec!["b"]);
    }

    #[test]
    fn reports_every_problem_with_names() {
        let specs = [
            k("x", &["y_out"], &["x_out"]),
            k("y", &["x_out"], &["y_out"]),
            k("d1", &[], &["dup"]),
            k("d2", &[], &["dup"]),
            k("m", &["ghost"], &["m_out"]),
        ];
        let err = build(&specs, &[]).expect_err("invalid");
        assert!(err.0.contains(&DagProblem::Cycle {
            kernels: vec!["x".into(), "y".into()],
            artifacts: vec!["x_out".into(), "y_out".into()],
        }));
        assert!(err.0.contains(&DagProblem::DuplicateProducer {
            artifact: "dup".into(),
            producers: vec!["d1".into(), "d2".into()],
        }));
        assert!(err.0.contains(&DagProblem::MissingProducer {
            artifact: "ghost".into(),
            consumers: vec!["m".into()],
            suggestion: None,
        }));
        let text = err.to_string();
        assert!(text.contains("`ghost`") && text.contains("`d2`") && text.contains("`y_out`"));
    }

    #[test]
    fn a_source_and_a_kernel_producing_one_artifact_is_a_duplicate() {
        let err = build(&[k("a", &[], &["doc"])], &["doc"]).expect_err("dup");
        assert!(err.to_string().contains("[inputs]"));
    }

    #[test]
    fn optional_inputs_without_producer_are_fine() {
        let s = KernelSpec::new("a", "1.0.0")
            .optional_input("maybe")
            .output("o");
        assert!(build(&[s], &[]).is_ok());
    }

    #[test]
    fn misspelt_inputs_get_a_suggestion() {
        // A kernel reads `doc`; the pipeline's only entry is `dco`.
        let specs = vec![k("a", &["doc"], &["a_out"]), k("b", &["a_otu"], &["b_out"])];
        let err = build(&specs, &["dco"]).expect_err("invalid");
        let text = err.to_string();
        assert!(
            text.contains(
                "[inputs] entry `dco` is read by no kernel of the pipeline (did you mean `doc`?)"
            ),
            "{text}"
        );
        assert!(
            text.contains("`a_otu`") && text.contains("did you mean `a_out`?"),
            "{text}"
        );
        // An entry nobody reads and close to nothing stays allowed.
        let specs = vec![k("a", &["doc"], &["a_out"])];
        assert!(build(&specs, &["doc", "glossary"]).is_ok());
    }

    use proptest::prelude::*;

    proptest! {
        /// For any acyclic wiring (kernel i may only read outputs of
        /// kernels j < i), the DAG builds and its order puts every
        /// producer before its consumers; `ancestors` is closed.
        #[test]
        fn order_respects_every_edge(wiring in prop::collection::vec(prop::collection::vec(any::<prop::sample::Index>(), 0..3), 1..25)) {
            let specs: Vec<KernelSpec> = wiring.iter().enumerate().map(|(i, reads)| {
                let mut s = KernelSpec::new(format!("k{i}"), "1.0.0").output(format!("a{i}"));
                let mut seen = std::collections::BTreeSet::new();
                if i == 0 { s = s.input("doc"); }
                for r in reads {
                    if i > 0 {
                        let j = r.index(i);
                        if seen.insert(j) { s = s.input(format!("a{j}")); }
                    }
                }
                s
            }).collect();
            let dag = build(&specs, &["doc"]).expect("acyclic wiring builds");
            let pos: BTreeMap<&str, usize> = dag.order.iter().enumerate().map(|(p, n)| (n.as_str(), p)).collect();
            for s in &specs {
                for input in &s.inputs {
                    if let Some(Producer::Kernel(p)) = dag.producers.get(&input.artifact) {
                        prop_assert!(pos[p.as_str()] < pos[s.name.as_str()]);
                    }
                }
                let anc = dag.ancestors(&s.name);
                for a in &anc {
                    for up in dag.ancestors(a) {
                        prop_assert!(anc.contains(&up));
                    }
                }
            }
        }
    }
}
