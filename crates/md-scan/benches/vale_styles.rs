//! What a project's Vale styles cost `koas check`, in-process: compiling
//! a style's rules (the Google and Microsoft styles, as vendored for the
//! fixtures test), and checking seed 000 with each of them beside the same
//! check without; and a 100,000-line document with and without Google. The styles are read from `tests/fixtures/vale-styles`
//! of the repository.

#[path = "support/docs.rs"]
mod bench_docs;

use criterion::{criterion_group, criterion_main, Criterion};
use koas_md_scan::config::{read_sources, ProjectConfig};
use koas_md_scan::Checker;
use std::path::Path;

/// A project whose `.vale.ini` builds on `style` alone, as the fixtures'
/// repository holds it.
fn project(style: &str) -> ProjectConfig {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/vale-styles")
        .join(style);
    let dir = std::env::temp_dir().join(format!("koas-bench-vale-{style}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp folder");
    let ini = dir.join(".vale.ini");
    std::fs::write(
        &ini,
        format!(
            "StylesPath = {}\n[*.md]\nBasedOnStyles = {style}\n",
            repo.display()
        ),
    )
    .expect("write .vale.ini");
    let mut config = ProjectConfig::default();
    config.language.styles = Some(read_sources(&ini).expect("the style reads"));
    let _ = std::fs::remove_dir_all(&dir);
    config
}

fn bench(c: &mut Criterion) {
    let (name, text) = bench_docs::small();
    let mut group = c.benchmark_group("vale");
    group.sample_size(10);
    let plain = Checker::new(&ProjectConfig::default()).expect("compiles");
    group.bench_function(format!("check/no style/{name}"), |b| {
        b.iter(|| plain.check(&text).map(|o| o.findings.len()))
    });
    for style in ["Google", "Microsoft"] {
        let config = project(style);
        let rules = config.language.styles.as_ref().map_or(0, |s| s.rules.len());
        group.bench_function(format!("compile/{style} ({rules} rules)"), |b| {
            b.iter(|| {
                koas_vale::Styles::compile(config.language.styles.as_ref().expect("read"))
                    .map(|s| s.notes.len())
                    .ok()
            })
        });
        let checker = Checker::new(&config).expect("compiles");
        group.bench_function(format!("check/{style}/{name}"), |b| {
            b.iter(|| checker.check(&text).map(|o| o.findings.len()))
        });
    }
    let large = bench_docs::large(100_000);
    let google = Checker::new(&project("Google")).expect("compiles");
    for (label, checker) in [("no style", &plain), ("Google", &google)] {
        group.bench_function(format!("check/{label}/100k lines"), |b| {
            b.iter(|| checker.check(&large).map(|o| o.findings.len()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
