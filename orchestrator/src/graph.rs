//! Rendering a pipeline's DAG as Graphviz DOT or Mermaid.

use crate::dag::Producer;
use crate::prepare::Prepared;
use std::fmt::Write;

fn edges(p: &Prepared) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for name in &p.dag.order {
        let Some(k) = p.kernels.get(name) else {
            continue;
        };
        for input in &k.spec.inputs {
            let from = match p.dag.producers.get(&input.artifact) {
                Some(Producer::Kernel(k)) => k.clone(),
                Some(Producer::Source) => format!("input:{}", input.artifact),
                None => continue,
            };
            out.push((from, name.clone(), input.artifact.clone()));
        }
    }
    out
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The DAG in Graphviz DOT.
pub fn to_dot(p: &Prepared) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "digraph {} {{", quote(&p.pipeline.name));
    let _ = writeln!(s, "  rankdir=LR;");
    let _ = writeln!(s, "  node [shape=box, fontname=\"monospace\"];");
    for source in &p.dag.sources {
        let _ = writeln!(
            s,
            "  {} [shape=note, label={}];",
            quote(&format!("input:{source}")),
            quote(source)
        );
    }
    for name in &p.dag.order {
        let label = p
            .kernels
            .get(name)
            .map(|k| format!("{name}\\n{} {}", k.spec.stage, k.spec.version))
            .unwrap_or_else(|| name.clone());
        let _ = writeln!(
            s,
            "  {} [label=\"{}\"];",
            quote(name),
            label.replace('"', "\\\"")
        );
    }
    for (from, to, artifact) in edges(p) {
        let _ = writeln!(
            s,
            "  {} -> {} [label={}];",
            quote(&from),
            quote(&to),
            quote(&artifact)
        );
    }
    s.push_str("}\n");
    s
}

fn mermaid_id(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The DAG as a Mermaid flowchart.
pub fn to_mermaid(p: &Prepared) -> String {
    let mut s = String::from("flowchart LR\n");
    for source in &p.dag.sources {
        let _ = writeln!(
            s,
            "  {}[/\"{}\"/]",
            mermaid_id(&format!("input:{source}")),
            source
        );
    }
    for name in &p.dag.order {
        let _ = writeln!(s, "  {}[\"{}\"]", mermaid_id(name), name);
    }
    for (from, to, artifact) in edges(p) {
        let _ = writeln!(
            s,
            "  {} -->|{}| {}",
            mermaid_id(&from),
            artifact,
            mermaid_id(&to)
        );
    }
    s
}
