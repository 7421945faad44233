//! The pyramid of a 200-section document built by `koas run` of Stage 1
//! and `md_pyramid` (the pyramid alone: in the reviewer pipeline
//! `md_edit_plan` builds it along with the plan), against a
//! scripted model that answers every request after 200 ms, at
//! `max_in_flight` 1, 4 and 16, against the ideal: the sum over the
//! pyramid's levels of ceil(nodes / N) × 200 ms (a level starts when the
//! one below is done).
//!
//! ```text
//! cargo bench -p koas --bench pyramid_parallel
//! ```
//!
//! The document: a title, 20 chapters of 9 sections each (level 1 and 2),
//! and a few sentences per section. Each run uses a fresh folder, so every
//! node is asked (no reuse).

use koas_test_support::{koas_bin, ModelAnswer, ScriptedModel};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

const DELAY: Duration = Duration::from_millis(200);

/// Stage 1 and the pyramid alone.
const PIPELINE: &str = r#"name = "pyramid"
description = "Stage 1 and the document pyramid"
kernels = ["md_inventory", "md_structure", "md_protected_regions", "md_chunk", "md_pyramid"]

[inputs]
doc = "doc.md"
"#;

fn document() -> String {
    let mut doc = String::from("# Operating manual\n\nThis manual describes the operations.\n\n");
    for c in 1..=20 {
        doc.push_str(&format!(
            "## Chapter {c}\n\nChapter {c} groups nine procedures.\n\n"
        ));
        for s in 1..=9 {
            doc.push_str(&format!(
                "### Procedure {c}.{s}\n\nProcedure {c}.{s} starts the pump, checks pressure {s} bar and logs the reading.\n\n"
            ));
        }
    }
    doc
}

fn main() {
    let bin = koas_bin();
    let text = document();
    let model = ScriptedModel::start(|_| ModelAnswer::after(DELAY, "The procedure is described."));
    println!("pyramid_parallel: 200 sections (20 chapters × 9, plus the title), model answers after {} ms", DELAY.as_millis());
    println!(
        "{:>4} {:>7} {:>10} {:>10} {:>7} {:>5}",
        "N", "nodes", "wall (s)", "ideal (s)", "ratio", "peak"
    );
    for n in [1usize, 4, 16] {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("doc.md"), &text).expect("write");
        let before = model.calls();
        let start = Instant::now();
        std::fs::write(dir.path().join("pyramid.toml"), PIPELINE).expect("write");
        let out = Command::new(bin)
            .arg("-q")
            .arg("run")
            .arg("pyramid.toml")
            .args(["--workspace", "ws"])
            .args(["--llm-backend", "openai", "--llm-endpoint"])
            .arg(model.url())
            .args([
                "--llm-model",
                "scripted",
                "--llm-max-in-flight",
                &n.to_string(),
            ])
            .current_dir(dir.path())
            .env_remove("KOAS_KERNEL_PATH")
            .output()
            .expect("koas runs");
        let wall = start.elapsed();
        if !out.status.success() {
            eprintln!(
                "koas review failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::process::exit(1);
        }
        let ws = dir.path().join("ws");
        if !ws.join("stage2/pyramid.json").is_file() {
            eprintln!(
                "no pyramid was written:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            std::process::exit(1);
        }
        let pyramid: Value = serde_json::from_slice(
            &std::fs::read(ws.join("stage2/pyramid.json")).expect("pyramid.json"),
        )
        .expect("parses");
        let mut per_level: BTreeMap<u64, usize> = BTreeMap::new();
        for node in pyramid["nodes"].as_array().into_iter().flatten() {
            *per_level
                .entry(node["level"].as_u64().unwrap_or(0))
                .or_default() += 1;
        }
        let nodes: usize = per_level.values().sum();
        assert_eq!(model.calls() - before, nodes, "one call per node");
        let ideal: Duration = per_level
            .values()
            .map(|&k| DELAY * u32::try_from(k.div_ceil(n)).unwrap_or(u32::MAX))
            .sum();
        println!(
            "{n:>4} {nodes:>7} {:>10.2} {:>10.2} {:>7.2} {:>5}",
            wall.as_secs_f64(),
            ideal.as_secs_f64(),
            wall.as_secs_f64() / ideal.as_secs_f64(),
            model.peak_in_flight()
        );
    }
}
