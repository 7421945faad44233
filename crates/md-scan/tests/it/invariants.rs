//! Invariants of every check on any document:
//!
//! * nothing panics, whatever the Markdown;
//! * every finding lies inside the document (`1 <= line <= line_end <=
//!   line count`) and names its kernel;
//! * nothing inside a protected region is reported (a table finding may
//!   start in the table it is about, nothing else may start in a protected
//!   block);
//! * the result does not depend on line endings (CRLF gives the same
//!   findings as LF) and a BOM changes nothing;
//! * findings are sorted and the run is deterministic.
//!
//! Plus adversarial documents that must finish quickly.

use koas_md_scan::config::ProjectConfig;
use koas_md_scan::stage1::Stage1Artifacts;
use koas_md_scan::{check_document, chunk_fingerprints};
use koas_review_schema::findings::{Finding, FindingKind};
use koas_review_schema::stage1::BlockKind;
use proptest::prelude::*;

fn blocks() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-zéà ,.!'’]{0,60}".prop_map(|s| format!("{s}\n")),
        (1usize..7, "[A-Za-z0-9 .]{0,20}").prop_map(|(n, t)| format!("{} {t}\n", "#".repeat(n))),
        Just("Certainly! Here is the text.\n".to_string()),
        Just("See Section 9.4 and §3.1, voir 2.2, cf. 7.7.\n".to_string()),
        Just("Nous avons retenu deux approches :\n".to_string()),
        Just("| Part | Share |\n|---|---|\n| a | 60 % |\n| b | 70,5% |\n".to_string()),
        Just("| a | b | c |\n|---|---|\n| 1 | 2 |\n".to_string()),
        Just("```\nAs an AI, see Section 9.\n| x | y |\n|---|\n```\n".to_string()),
        Just("~~~\nunclosed fence\n".to_string()),
        Just("$$\nx = \\text{Figure 9}\n$$\n".to_string()),
        Just("<div>\nI hope this helps\n</div>\n".to_string()),
        Just("Figure 3: caption\n".to_string()),
        Just("Table 2 – caption\n".to_string()),
        Just("As Figure 8 shows, [x](#nowhere) and `§9.9`.\n".to_string()),
        Just("> quoted dead code and code mort\n".to_string()),
        Just("- item one\n- item two\n".to_string()),
        Just("<!-- koas-disable-next-line -->\n".to_string()),
        Just("---\n".to_string()),
        Just("\n".to_string()),
    ]
}

fn document() -> impl Strategy<Value = String> {
    (
        prop::option::of(Just("---\ntitle: x\n---\n".to_string())),
        prop::collection::vec(blocks(), 0..25),
    )
        .prop_map(|(front, parts)| format!("{}{}", front.unwrap_or_default(), parts.concat()))
}

fn check(text: &str) -> Vec<Finding> {
    check_document(text, &ProjectConfig::default())
        .expect("default config is valid")
        .findings
}

/// Kinds that look inside tables: the two table checks, and `#fragment`
/// links in cells (markdownlint checks those too).
fn is_table_kind(kind: FindingKind) -> bool {
    matches!(
        kind,
        FindingKind::TableStructure | FindingKind::TablePercentage | FindingKind::BrokenLinkAnchor
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn findings_are_inside_the_document_and_outside_protected_regions(text in document()) {
        let findings = check(&text);
        let s1 = Stage1Artifacts::compute(&text);
        let lines = s1.sections.line_count;
        for f in &findings {
            prop_assert!(1 <= f.line && f.line <= f.line_end && f.line_end <= lines, "{f:?} in {lines} lines");
            prop_assert!(["md_consistency_scan", "md_numbering_control", "md_language_check"].contains(&f.kernel.as_str()));
            if let Some(block) = s1.protected.block_at_line(f.line) {
                prop_assert!(
                    block.kind == BlockKind::Table && is_table_kind(f.kind),
                    "{f:?} starts inside a protected {:?} block", block.kind
                );
            }
        }
        let mut sorted = findings.clone();
        koas_review_schema::findings::sort_findings(&mut sorted);
        prop_assert_eq!(&sorted, &findings);
        prop_assert_eq!(check(&text), findings);
    }

    #[test]
    fn line_endings_and_bom_change_nothing(text in document()) {
        let lf = check(&text);
        let crlf = check(&text.replace('\n', "\r\n"));
        let bom = check(&format!("\u{feff}{text}"));
        let key = |v: &[Finding]| v.iter().map(|f| (f.kind, f.line, f.line_end)).collect::<Vec<_>>();
        prop_assert_eq!(key(&lf), key(&crlf));
        prop_assert_eq!(key(&lf), key(&bom));
    }

    #[test]
    fn fingerprints_cover_every_chunk(text in document()) {
        let s1 = Stage1Artifacts::compute(&text);
        let prints = chunk_fingerprints(s1.view(&text), &Default::default()).expect("valid");
        prop_assert_eq!(prints.chunk_count, s1.chunks.chunks.len());
        for p in &prints.fingerprints {
            prop_assert!((0.0..=1.0).contains(&p.features.digit_density));
            prop_assert_eq!(p.triggers_recipe, !p.triggers.is_empty());
        }
    }
}

#[test]
fn adversarial_documents_finish() {
    let big_table = {
        let mut t = String::from("Les 3 lignes :\n\n| Part | Share |\n|---|---|\n");
        for i in 0..10_000 {
            t.push_str(&format!("| r{i} | 1% |\n"));
        }
        t
    };
    let nested_quotes = format!("{} Certainly!\n", ">".repeat(100));
    let nested_lists: String = (0..100)
        .map(|i| format!("{}- item {i}\n", "  ".repeat(i)))
        .collect();
    let long_line = "voir 9.9 ".repeat(100_000);
    let many_refs = "See Section 9.9 and Figure 4. ".repeat(10_000);
    for (name, text) in [
        ("empty", String::new()),
        ("bom only", "\u{feff}".to_string()),
        ("front matter only", "---\ntitle: x\n---\n".to_string()),
        ("unclosed fence", "# T\n\n```\nAs an AI\n".to_string()),
        ("10k-row table", big_table),
        ("100-deep quotes", nested_quotes),
        ("100-deep lists", nested_lists),
        ("1 MB line", format!("# 1. A\n\n{long_line}\n")),
        (
            "many references on one line",
            format!("# 1. A\n\nFigure 1: x\n\n{many_refs}\n"),
        ),
        ("pipes everywhere", "|\n|-|\n|||||\n| |\n".repeat(1000)),
    ] {
        let start = std::time::Instant::now();
        let findings = check(&text);
        println!(
            "{name}: {} findings in {:?}",
            findings.len(),
            start.elapsed()
        );
    }
}

#[test]
fn one_mb_line_of_references_is_reported_once_per_target() {
    let text = format!("# 1. A\n\n{}\n", "voir 9.9 ".repeat(100_000));
    let findings = check(&text);
    assert_eq!(findings.len(), 1, "same-line references are deduplicated");
}
