//! Prints how long each dictionary takes to load and how fast the checks
//! read the paragraphs of the files given (split at blank lines, as plain
//! text): the figures of docs/performance.md.
//!
//!     cargo run --release -p koas-lang --example load_times -- FILE...

use koas_lang::{Checker, LanguageConfig, Paragraph, Vocabulary};
use std::time::Instant;

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: load_times FILE...");
        std::process::exit(2);
    }
    for file in files {
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{file}: {e}");
                std::process::exit(2);
            }
        };
        let paragraphs: Vec<Paragraph<'_>> = text
            .split("\n\n")
            .map(|p| Paragraph {
                text: p,
                heading: p.starts_with('#'),
            })
            .collect();
        // A new checker per file: its first check loads what it needs.
        let checker = Checker::new(LanguageConfig::default(), Vocabulary::default());
        let t = Instant::now();
        let report = match checker.check(&paragraphs, &[]) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{file}: {e}");
                std::process::exit(1);
            }
        };
        let first = t.elapsed();
        let t = Instant::now();
        let again = checker
            .check(&paragraphs, &[])
            .map(|r| r.issues.len())
            .unwrap_or(0);
        let warm = t.elapsed();
        let loads: Vec<String> = report
            .loaded
            .iter()
            .map(|(l, d)| format!("{} {:.2} ms", l.name(), d.as_secs_f64() * 1e3))
            .collect();
        let mb = text.len() as f64 / 1e6;
        println!(
            "{file}: {} bytes, {} paragraphs, {} issues ({again} again); loaded: {}; first check {:.1} ms, loaded again {:.1} ms ({:.1} MB/s)",
            text.len(),
            paragraphs.len(),
            report.issues.len(),
            if loads.is_empty() { "nothing".to_owned() } else { loads.join(", ") },
            first.as_secs_f64() * 1e3,
            warm.as_secs_f64() * 1e3,
            mb / warm.as_secs_f64()
        );
    }
}
