//! Times each Stage 1 phase on a document (a file given as argument, or
//! the example specification repeated to about 50 MB):
//! `cargo run --release -p koas-md --example stage1_phases [FILE]`.

use koas_kernel_api::hash::sha256;
use koas_md::chunk;
use koas_md::scan::{scan, ScanOptions};
use koas_md::{inventory, protected, structure, LineIndex};
use koas_review_schema::stage1::ChunkConfig;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let text = match std::env::args().nth(1) {
        Some(path) => std::fs::read_to_string(path)?,
        None => {
            let spec = include_str!("../../../examples/spec-example.md");
            spec.repeat(50 * 1024 * 1024 / spec.len() + 1)
        }
    };
    let t = Instant::now();
    let lap = |what: &str| {
        eprintln!("{what:<28} {:>9.1} ms", t.elapsed().as_secs_f64() * 1000.0);
    };
    let hash = sha256(text.as_bytes());
    lap("sha256");
    let index = LineIndex::new(&text);
    lap("line index");
    let s = scan(&index, ScanOptions::default());
    lap("scan (blocks)");
    let stats = inventory::file_stats("x", &index, &s, Some(&hash));
    lap("file stats");
    let st = structure::build(&index, &s, &hash);
    lap("structure");
    let si = scan(&index, ScanOptions { inlines: true });
    lap("scan (with inlines)");
    let spans = protected::detect(&index, &si, &hash);
    lap("protected");
    let plan = chunk::plan(
        &index,
        &st.sections.sections,
        &spans.blocks,
        ChunkConfig::default(),
        &hash,
    );
    lap("chunk plan");
    eprintln!(
        "{} bytes, {} lines, {} headings, {} blocks, {} inlines, {} chunks",
        stats.bytes,
        stats.lines,
        st.tree.heading_count,
        spans.blocks.len(),
        spans.inlines.len(),
        plan.chunks.len()
    );
    Ok(())
}
