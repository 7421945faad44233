//! Times the phases of `koas check` on one document (regex compilation,
//! Stage 1, each Stage 2 check): `cargo run --release -p koas-md-scan
//! --example phase_times -- DOC`.

use koas_md_scan::config::ProjectConfig;
use koas_md_scan::stage1::Stage1Artifacts;
use koas_md_scan::{check_document, chunk_fingerprints, consistency_scan, numbering_control};
use std::time::Instant;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: phase_times DOC");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    let config = ProjectConfig::default();
    let t = Instant::now();
    let s1 = Stage1Artifacts::compute(&text);
    println!("stage 1: {:?}", t.elapsed());
    let t = Instant::now();
    let c = consistency_scan(s1.view(&text), &config.scan).map(|o| o.findings.len());
    println!(
        "consistency scan (with regex compilation): {:?} → {c:?}",
        t.elapsed()
    );
    let t = Instant::now();
    let n = numbering_control(s1.view(&text), &config.numbering).map(|o| o.output.findings.len());
    println!("numbering control: {:?} → {n:?}", t.elapsed());
    let t = Instant::now();
    let f = chunk_fingerprints(s1.view(&text), &config.fingerprint).map(|f| f.chunk_count);
    println!("fingerprints: {:?} → {f:?}", t.elapsed());
    let t = Instant::now();
    let all = check_document(&text, &config).map(|o| o.findings.len());
    println!("check_document: {:?} → {all:?}", t.elapsed());
}
