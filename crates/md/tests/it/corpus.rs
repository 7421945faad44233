//! Stage 1 on the shared corpus (`../shared/corpus`, `../shared/seeds`).
//!
//! The figures below were written by reading the documents (`cat -n`,
//! `grep -n`), not copied from the library's output. Every test skips with
//! a message when the shared folder is absent.

use koas_md::stage1::{self, Stage1};
use koas_review_schema::stage1::{BlockKind, ChunkConfig, LineNo};
use koas_test_support::{shared_dir, shared_documents};

/// Stage 1 of the shared document `rel`; `None` (the test skips, with a
/// message) when the shared corpus is absent.
fn load(rel: &str) -> Option<(String, Stage1)> {
    let path = shared_dir(&format!("Stage 1 of {rel}"))?.join(rel);
    let text = std::fs::read_to_string(&path).expect("readable UTF-8 corpus file");
    let s = stage1::run(rel, &text, ChunkConfig::default()).expect("stage 1");
    Some((text, s))
}

fn section<'a>(s: &'a Stage1, id: &str) -> &'a koas_review_schema::stage1::SectionEntry {
    s.structure
        .sections
        .sections
        .iter()
        .find(|e| e.id == id)
        .unwrap_or_else(|| panic!("section {id}"))
}

fn blocks_of(s: &Stage1, kind: BlockKind) -> Vec<(LineNo, LineNo)> {
    s.spans
        .blocks
        .iter()
        .filter(|b| b.kind == kind)
        .map(|b| (b.line_start, b.line_end))
        .collect()
}

#[test]
fn planted_spec_en() {
    let Some((_, s)) = load("corpus/planted/spec_en.md") else {
        return;
    };
    assert_eq!(s.stats.lines, 68);
    assert_eq!(s.structure.tree.heading_count, 8);
    assert_eq!(s.structure.tree.max_depth, 4);
    let got: Vec<(&str, &str, LineNo, LineNo)> = s
        .structure
        .sections
        .sections
        .iter()
        .map(|e| (e.id.as_str(), e.anchor.as_str(), e.line_start, e.line_end))
        .collect();
    assert_eq!(
        got,
        vec![
            ("S1", "telemetry-gateway-specification", 1, 68),
            ("S1.1", "1-introduction", 3, 11),
            ("S1.2", "2-interfaces", 12, 32),
            ("S1.2.1", "21-ingest-api", 14, 32),
            ("S1.2.1.1", "211-authentication", 29, 32),
            ("S1.3", "3-capacity", 33, 53),
            ("S1.4", "4-failure-handling", 54, 68),
            ("S1.4.1", "41-backpressure", 64, 68),
        ]
    );
    // The document links to #3-capacity (exists) and #retry-policy (does not).
    assert!(s.structure.anchors.anchors.contains_key("3-capacity"));
    assert!(!s.structure.anchors.anchors.contains_key("retry-policy"));
    assert_eq!(blocks_of(&s, BlockKind::Table), vec![(18, 23), (37, 41)]);
    assert_eq!(blocks_of(&s, BlockKind::CodeFence), vec![(47, 52)]);
    assert_eq!(s.spans.blocks.len(), 3);
    // Line 50 (`see_section: "Section 12"`) is inside the protected fence.
    assert_eq!(
        s.spans.block_at_line(50).map(|b| b.info.as_deref()),
        Some(Some("yaml"))
    );
}

#[test]
fn planted_audit_fr() {
    let Some((_, s)) = load("corpus/planted/audit_fr.md") else {
        return;
    };
    assert_eq!(s.stats.lines, 105);
    assert_eq!(s.structure.tree.heading_count, 15);
    assert_eq!(s.structure.tree.max_depth, 4);
    assert_eq!(
        section(&s, "S1").anchor,
        "audit-technique-de-la-plateforme-orion"
    );
    assert_eq!(section(&s, "S1.2").anchor, "2-périmètre-et-méthode");
    assert_eq!(section(&s, "S1.3.1").anchor, "31-vue-densemble");
    let bus = section(&s, "S1.3.1.1");
    assert_eq!(
        (bus.anchor.as_str(), bus.line_start, bus.level),
        ("311-détail-du-bus", 53, 4)
    );
    // `#### 4.1.1` directly under `## 4.`: the level skip makes it S1.4.1.
    let cov = section(&s, "S1.4.1");
    assert_eq!((cov.level, cov.line_start, cov.line_end), (4, 72, 84));
    assert_eq!(
        cov.numbering.as_ref().map(|n| n.parts.clone()),
        Some(vec![4, 1, 1])
    );
    assert_eq!(
        (section(&s, "S1.6").line_start, section(&s, "S1.6").line_end),
        (97, 105)
    );
    let fm = s.stats.front_matter.as_ref().expect("front matter");
    assert_eq!((fm.line_start, fm.line_end), (1, 4));
    let blocks: Vec<(BlockKind, LineNo, LineNo)> = s
        .spans
        .blocks
        .iter()
        .map(|b| (b.kind, b.line_start, b.line_end))
        .collect();
    assert_eq!(
        blocks,
        vec![
            (BlockKind::YamlFrontMatter, 1, 4),
            (BlockKind::Table, 28, 32),
            (BlockKind::CodeFence, 42, 47),
            (BlockKind::Table, 64, 68),
            (BlockKind::Table, 76, 79),
            (BlockKind::MathBlock, 103, 105),
        ]
    );
    // Lines 76-79: 3 header cells over a 2-cell delimiter row, refused by
    // GFM, protected anyway.
    assert_eq!(s.spans.blocks[4].info.as_deref(), Some("malformed"));
    assert_eq!(s.stats.tables, 2);
}

#[test]
fn real_readme() {
    let Some((_, s)) = load("corpus/real/README.md") else {
        return;
    };
    assert_eq!(s.stats.lines, 28);
    assert_eq!(s.structure.tree.heading_count, 1);
    assert_eq!(section(&s, "S1").anchor, "real-documents");
    assert_eq!(blocks_of(&s, BlockKind::CodeFence), vec![(6, 28)]);
    assert_eq!(s.spans.blocks[0].info, None);
    assert_eq!(s.chunks.chunks.len(), 1);
}

#[test]
fn real_koas() {
    let Some((text, s)) = load("corpus/real/ragix_KOAS.md") else {
        return;
    };
    assert_eq!(s.stats.lines, 614);
    // 53 lines start with `#`; line 412 is inside a ```python fence.
    assert_eq!(s.structure.tree.heading_count, 52);
    assert_eq!(s.structure.tree.max_depth, 3);
    assert_eq!(s.structure.tree.roots.len(), 1);
    assert_eq!(s.structure.tree.roots[0].children.len(), 14);
    assert!(s
        .structure
        .sections
        .sections
        .iter()
        .all(|e| e.line_start != 412));
    let toc = section(&s, "S1.1");
    assert_eq!(
        (toc.title.as_str(), toc.line_start),
        ("Table of Contents", 12)
    );
    let schema = section(&s, "S1.10.1");
    assert_eq!(
        (schema.anchor.as_str(), schema.line_start),
        ("event-schema-koasevent10", 440)
    );
    let quality = section(&s, "S1.12");
    assert_eq!(
        (quality.line_start, quality.line_end, quality.children.len()),
        (510, 564, 4)
    );
    let appendix = section(&s, "S1.14");
    assert_eq!(
        (
            appendix.anchor.as_str(),
            appendix.line_start,
            appendix.line_end
        ),
        ("appendix-design-philosophy-summary", 589, 614)
    );
    assert_eq!(
        blocks_of(&s, BlockKind::CodeFence),
        vec![
            (51, 68),
            (107, 126),
            (145, 183),
            (200, 216),
            (222, 230),
            (246, 264),
            (325, 342),
            (393, 405),
            (411, 414),
            (472, 482),
            (527, 529),
            (557, 559)
        ]
    );
    assert_eq!(
        blocks_of(&s, BlockKind::Table),
        vec![
            (270, 277),
            (283, 291),
            (297, 303),
            (313, 319),
            (516, 521),
            (533, 539),
            (545, 551)
        ]
    );
    assert_eq!(s.stats.code_fences, 12);
    assert_eq!(s.stats.tables, 7);
    // The table escape `\|` at line 551 does not end the table early.
    assert!(text.lines().nth(550).is_some_and(|l| l.contains("\\|")));
}

/// Every Stage 1 computation succeeds on every shared document, and the
/// chunk plan's invariants hold on each.
#[test]
fn every_shared_document_goes_through_stage1() {
    let Some(files) = shared_documents("every_shared_document_goes_through_stage1") else {
        return;
    };
    assert!(
        files.len() >= 14,
        "expected the whole corpus, found {files:?}"
    );
    for path in files {
        let text = std::fs::read_to_string(&path).expect("UTF-8");
        let name = path.display().to_string();
        let s = stage1::run(&name, &text, ChunkConfig::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let n = s.stats.lines;
        let mut next = 1;
        for c in &s.chunks.chunks {
            assert_eq!(
                c.line_start, next,
                "{name}: gap or overlap before {}",
                c.chunk_id
            );
            next = c.line_end + 1;
            for b in &s.spans.blocks {
                assert!(
                    !(b.line_start < c.line_start && c.line_start <= b.line_end),
                    "{name}: chunk {} starts inside {:?}",
                    c.chunk_id,
                    b
                );
            }
        }
        assert_eq!(next, n + 1, "{name}: chunks do not reach the last line");
    }
}
