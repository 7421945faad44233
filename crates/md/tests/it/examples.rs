//! Stage 1 on the project's own example documents (`examples/*.md`).
//! Every expected figure below was written by reading the documents
//! (`cat -n`), not copied from the library's output.

use koas_md::stage1::{self, Stage1};
use koas_review_schema::stage1::{BlockKind, ChunkConfig, HeadingStyle, InlineKind, NumberingKind};

const SPEC: &str = include_str!("../../../../examples/spec-example.md");
const AUDIT_FR: &str = include_str!("../../../../examples/audit-fr.md");

fn run(text: &str) -> Stage1 {
    stage1::run("example.md", text, ChunkConfig::default()).expect("stage 1 runs")
}

fn sections(s: &Stage1) -> Vec<(&str, u8, &str, u32, u32)> {
    s.structure
        .sections
        .sections
        .iter()
        .map(|e| {
            (
                e.id.as_str(),
                e.level,
                e.anchor.as_str(),
                e.line_start,
                e.line_end,
            )
        })
        .collect()
}

fn blocks(s: &Stage1) -> Vec<(BlockKind, u32, u32)> {
    s.spans
        .blocks
        .iter()
        .map(|b| (b.kind, b.line_start, b.line_end))
        .collect()
}

#[test]
fn spec_example_inventory() {
    let s = run(SPEC);
    assert_eq!(s.stats.lines, 238);
    assert_eq!(s.stats.headings, 22);
    assert_eq!(s.stats.code_fences, 3);
    assert_eq!(s.stats.indented_code_blocks, 1);
    assert_eq!(s.stats.tables, 4);
    let fm = s.stats.front_matter.as_ref().expect("front matter");
    assert_eq!((fm.line_start, fm.line_end), (1, 6));
    assert!(!s.stats.has_bom);
}

#[test]
fn spec_example_heading_tree() {
    let s = run(SPEC);
    assert_eq!(s.structure.tree.heading_count, 22);
    assert_eq!(s.structure.tree.max_depth, 4);
    assert_eq!(s.structure.tree.roots.len(), 1);
    assert_eq!(
        s.structure
            .tree
            .preamble
            .map(|p| (p.line_start, p.line_end)),
        Some((1, 7))
    );
    assert_eq!(
        sections(&s),
        vec![
            ("S1", 1, "acme-ledger-service", 8, 238),
            ("S1.1", 2, "1-scope", 16, 29),
            ("S1.2", 2, "2-architecture", 30, 81),
            ("S1.2.1", 3, "21-components", 36, 48),
            ("S1.2.2", 3, "22-storage", 49, 81),
            ("S1.2.2.1", 4, "storage-layout-on-disk", 68, 81),
            ("S1.3", 2, "3-public-api", 82, 113),
            ("S1.3.1", 3, "31-posting-an-entry", 88, 106),
            ("S1.3.2", 3, "32-reading-balances", 107, 113),
            ("S1.4", 2, "examples", 114, 128),
            ("S1.5", 2, "4-consistency-guarantees", 129, 158),
            ("S1.5.1", 3, "41-failure-modes", 145, 158),
            ("S1.6", 2, "5-operational-limits", 159, 180),
            ("S1.6.1", 3, "51-examples", 171, 180),
            ("S1.7", 2, "6-security", 181, 201),
            ("S1.7.1", 3, "61-access-control", 186, 196),
            ("S1.7.2", 3, "62-audit-trail", 197, 201),
            ("S1.8", 2, "7--rollout-plan", 202, 212),
            ("S1.9", 2, "appendix", 213, 238),
            ("S1.9.1", 3, "a1-error-codes", 215, 222),
            ("S1.9.2", 3, "a2-glossary", 223, 230),
            ("S1.9.3", 3, "examples-1", 231, 238),
        ]
    );
    let by_id = |id: &str| {
        s.structure
            .sections
            .sections
            .iter()
            .find(|e| e.id == id)
            .expect("section")
    };
    // Setext headings, with the escaped `1\.` read as text.
    let scope = by_id("S1.1");
    assert_eq!(scope.style, HeadingStyle::Setext);
    assert_eq!(
        (scope.title.as_str(), scope.heading_line_end),
        ("1. Scope", 17)
    );
    assert_eq!(by_id("S1.4").heading_line_end, 115);
    assert_eq!(by_id("S1").body_line_end, 15);
    assert_eq!(by_id("S1.2").body_line_end, 35);
    // Numbering.
    let n = by_id("S1.2.2").numbering.clone().expect("2.2.");
    assert_eq!(
        (n.label.as_str(), n.raw.as_str(), n.parts.clone()),
        ("2.2", "2.2.", vec![2, 2])
    );
    let a1 = by_id("S1.9.1").numbering.clone().expect("A.1");
    assert_eq!(
        (a1.kind, a1.parts.clone(), a1.rest.as_str()),
        (NumberingKind::Letter, vec![1, 1], "Error codes")
    );
    assert_eq!(
        by_id("S1.8").numbering.as_ref().map(|n| n.rest.as_str()),
        Some("🚀 Rollout plan")
    );
    assert!(by_id("S1.9").numbering.is_none());
    let numbered = s
        .structure
        .sections
        .sections
        .iter()
        .filter(|e| e.numbering.is_some())
        .count();
    assert_eq!(numbered, 17);
    // Anchors.
    assert_eq!(
        s.structure
            .anchors
            .anchors
            .get("examples-1")
            .map(String::as_str),
        Some("S1.9.3")
    );
    assert_eq!(s.structure.anchors.duplicates.len(), 1);
    assert_eq!(
        s.structure.anchors.duplicates[0].anchors,
        vec!["examples", "examples-1"]
    );
    // Lines 101, 149 and 193 look like headings but sit in code / HTML.
    for line in [101, 149, 193] {
        assert!(s
            .structure
            .sections
            .sections
            .iter()
            .all(|e| e.line_start != line));
    }
}

#[test]
fn spec_example_protected_spans() {
    let s = run(SPEC);
    assert_eq!(
        blocks(&s),
        vec![
            (BlockKind::YamlFrontMatter, 1, 6),
            (BlockKind::Table, 38, 43),
            (BlockKind::MathBlock, 58, 60),
            (BlockKind::MathBlock, 64, 66),
            (BlockKind::CodeFence, 70, 77),
            (BlockKind::CodeFence, 90, 102),
            (BlockKind::CodeFence, 119, 127),
            (BlockKind::HtmlBlock, 147, 153),
            (BlockKind::Table, 161, 166),
            (BlockKind::IndentedCode, 176, 179),
            (BlockKind::HtmlBlock, 192, 195),
            (BlockKind::Table, 207, 211),
            (BlockKind::Table, 217, 221),
            (BlockKind::LinkRefDef, 237, 237),
            (BlockKind::LinkRefDef, 238, 238),
        ]
    );
    let info: Vec<Option<&str>> = s.spans.blocks.iter().map(|b| b.info.as_deref()).collect();
    assert_eq!(info[2], Some("$$"));
    assert_eq!(info[3], Some("\\["));
    assert_eq!(info[4..7], [Some("text"), Some("rust"), Some("json")]);
    assert_eq!(info[13..15], [Some("post"), Some("balance")]);
    let find = |kind: InlineKind, line: u32| {
        s.spans
            .inlines
            .iter()
            .find(|i| i.kind == kind && i.line == line)
            .unwrap_or_else(|| panic!("{kind:?} on line {line}"))
    };
    // "The projector applies entries in log order. For an account " is 59 chars.
    assert_eq!(find(InlineKind::InlineMath, 55).column, 60);
    assert_eq!(find(InlineKind::InlineCode, 109).column, 24);
    assert_eq!(find(InlineKind::Autolink, 111).column, 20);
    let url = find(InlineKind::BareUrl, 112);
    assert_eq!(url.column, 19);
    assert_eq!(
        &SPEC[url.byte_start as usize..url.byte_end as usize],
        "https://wiki.example.invalid/als/consistency"
    );
    // Inline code inside the tables is covered by the table spans.
    assert!(s
        .spans
        .inlines
        .iter()
        .all(|i| !(217..=221).contains(&i.line)));
}

#[test]
fn spec_example_chunks() {
    let s = run(SPEC);
    let c = &s.chunks.chunks;
    // No section exceeds 1,800 tokens: one chunk per section plus the
    // front matter preamble.
    assert_eq!(c.len(), 23);
    assert_eq!(
        (c[0].section_id.as_str(), c[0].line_start, c[0].line_end),
        ("S0", 1, 7)
    );
    assert_eq!(
        (c[1].section_id.as_str(), c[1].line_start, c[1].line_end),
        ("S1", 8, 15)
    );
    assert_eq!(
        (c[2].section_id.as_str(), c[2].line_start, c[2].line_end),
        ("S1.1", 16, 29)
    );
    assert_eq!(
        (c[22].section_id.as_str(), c[22].line_start, c[22].line_end),
        ("S1.9.3", 231, 238)
    );
    assert!(c[0].chunk_id.starts_with("preamble_"));
    assert!(
        c[18].chunk_id.starts_with("7-rollout-plan_"),
        "{}",
        c[18].chunk_id
    );
    assert!(c
        .iter()
        .all(|c| !c.oversized && c.overlap_line_start.is_none()));
}

#[test]
fn french_example() {
    let s = run(AUDIT_FR);
    assert_eq!(s.stats.lines, 82);
    assert_eq!(
        sections(&s),
        vec![
            (
                "S1",
                1,
                "rapport-daudit-de-la-plateforme-de-facturation",
                7,
                82
            ),
            ("S1.1", 2, "i-présentation-générale", 13, 34),
            ("S1.1.1", 3, "11-périmètre", 19, 24),
            ("S1.1.2", 3, "12-méthode", 25, 34),
            ("S1.2", 2, "ii-constats", 35, 64),
            ("S1.2.1", 3, "21-calcul-des-taxes", 37, 53),
            ("S1.2.2", 3, "22-gestion-des-secrets", 54, 59),
            ("S1.2.3", 3, "constats", 60, 64),
            ("S1.3", 2, "iii-recommandations", 65, 82),
            ("S1.3.1", 3, "constats-1", 76, 82),
        ]
    );
    let roman: Vec<(u32, &str)> = s
        .structure
        .sections
        .sections
        .iter()
        .filter_map(|e| e.numbering.as_ref())
        .filter(|n| n.kind == NumberingKind::Roman)
        .map(|n| (n.parts[0], n.rest.as_str()))
        .collect();
    assert_eq!(
        roman,
        vec![
            (1, "Présentation générale"),
            (2, "Constats"),
            (3, "Recommandations")
        ]
    );
    assert_eq!(
        blocks(&s),
        vec![
            (BlockKind::TomlFrontMatter, 1, 5),
            (BlockKind::Table, 29, 33),
            (BlockKind::MathBlock, 42, 44),
            (BlockKind::CodeFence, 49, 52),
            (BlockKind::HtmlBlock, 71, 74),
            (BlockKind::LinkRefDef, 82, 82),
        ]
    );
    // Columns count chars: "où " is 3 chars but 4 bytes.
    let math = s.spans.inlines.iter().find(|i| i.line == 46).expect("$n$");
    assert_eq!(
        (math.kind, math.column, math.end_column),
        (InlineKind::InlineMath, 4, 6)
    );
    let code = s.spans.inlines.iter().find(|i| i.line == 57).expect("code");
    assert_eq!((code.kind, code.column), (InlineKind::InlineCode, 12));
    let url = s.spans.inlines.iter().find(|i| i.line == 80).expect("url");
    assert_eq!(
        (url.kind, url.column, url.end_column),
        (InlineKind::BareUrl, 1, 50)
    );
    // Chunk IDs are ASCII file names even for accented anchors.
    let ids: Vec<&str> = s
        .chunks
        .chunks
        .iter()
        .map(|c| c.chunk_id.as_str())
        .collect();
    assert!(ids[2].starts_with("i-presentation-generale_"), "{ids:?}");
    assert!(ids.iter().all(|id| id.is_ascii()));
}
