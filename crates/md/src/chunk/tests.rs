use super::*;
use crate::stage1;
use koas_kernel_api::hash::sha256;

fn plan_of(text: &str, max: u32, overlap: u32, min: u32) -> ChunkPlan {
    let config = ChunkConfig {
        max_chunk_tokens: max,
        overlap_tokens: overlap,
        min_chunk_tokens: min,
    };
    stage1::run("t.md", text, config).expect("stage 1").chunks
}

fn ranges(p: &ChunkPlan) -> Vec<(&str, LineNo, LineNo)> {
    p.chunks
        .iter()
        .map(|c| (c.section_id.as_str(), c.line_start, c.line_end))
        .collect()
}

#[test]
fn every_heading_starts_a_chunk() {
    let text = "intro\n\n# A\na\n## B\nb\n\n# C\nc\n";
    let p = plan_of(text, 1800, 100, 50);
    assert_eq!(
        ranges(&p),
        vec![("S0", 1, 2), ("S1", 3, 4), ("S1.1", 5, 7), ("S2", 8, 9)]
    );
    assert_eq!(p.chunks[0].anchor, "");
    assert!(p.chunks[0].chunk_id.starts_with("preamble_"));
    assert_eq!(p.chunks[2].anchor, "b");
    assert!(p.chunks.iter().all(|c| c.overlap_line_start.is_none()));
    assert_eq!(p.token_estimator, "chars/4");
}

#[test]
fn blank_preamble_is_folded_and_empty_document_has_no_chunk() {
    let p = plan_of("\n\n# A\ntext\n", 1800, 100, 50);
    assert_eq!(ranges(&p), vec![("S1", 1, 4)]);
    assert!(plan_of("", 1800, 100, 50).chunks.is_empty());
    assert_eq!(
        ranges(&plan_of("only text\n", 1800, 100, 50)),
        vec![("S0", 1, 1)]
    );
}

#[test]
fn large_sections_split_at_paragraph_boundaries() {
    // Each paragraph is 2 lines of 39 chars + newline = 80 chars = 20 tokens.
    let para = format!("{}\n{}\n", "a".repeat(39), "b".repeat(39));
    let text = format!("# H\n\n{para}\n{para}\n{para}\n{para}");
    // Lines: 1 "# H", 2 blank, 3-4 p1, 5 blank, 6-7 p2, 8 blank, 9-10 p3, 11 blank, 12-13 p4.
    // Two paragraphs (41 tokens) exceed 30: one paragraph per chunk.
    let p = plan_of(&text, 30, 0, 0);
    assert_eq!(
        ranges(&p),
        vec![("S1", 1, 5), ("S1", 6, 8), ("S1", 9, 11), ("S1", 12, 13)]
    );
    assert!(p
        .chunks
        .iter()
        .all(|c| !c.oversized && c.token_estimate <= 30));
    // With 45 tokens, two paragraphs fit.
    let wide = plan_of(&text, 45, 0, 0);
    assert_eq!(ranges(&wide), vec![("S1", 1, 8), ("S1", 9, 13)]);
}

#[test]
fn a_paragraph_larger_than_the_budget_splits_at_line_boundaries() {
    let line = format!("{}\n", "x".repeat(39)); // 10 tokens per line
    let text = format!("# H\n{}", line.repeat(10));
    let p = plan_of(&text, 30, 0, 0);
    assert_eq!(
        ranges(&p),
        vec![("S1", 1, 3), ("S1", 4, 6), ("S1", 7, 9), ("S1", 10, 11)]
    );
}

#[test]
fn protected_blocks_are_never_split() {
    let code: String = (0..20)
        .map(|i| format!("let v{i} = {i}; // padding padding\n"))
        .collect();
    let text = format!("# H\n\nintro paragraph\n\n```rust\n{code}```\n\nafter\n");
    let p = plan_of(&text, 40, 0, 0);
    let fence_start = 5;
    let fence_end = 5 + 20 + 1;
    for c in &p.chunks {
        assert!(
            !(c.line_start > fence_start && c.line_start <= fence_end),
            "chunk starts inside the fence: {c:?}"
        );
    }
    let big = p
        .chunks
        .iter()
        .find(|c| c.line_start <= fence_start && c.line_end >= fence_end)
        .expect("one chunk holds the whole fence");
    assert!(big.oversized);
}

#[test]
fn small_pieces_merge_into_their_neighbour() {
    // A heading alone would be a tiny first piece before a large table.
    let rows: String = (0..30).map(|i| format!("| {i} | value {i} |\n")).collect();
    let text = format!("# H\n\n| a | b |\n|---|---|\n{rows}");
    let p = plan_of(&text, 50, 0, 10);
    assert_eq!(ranges(&p), vec![("S1", 1, 34)]);
    assert!(p.chunks[0].oversized);
    let unmerged = plan_of(&text, 50, 0, 0);
    assert_eq!(ranges(&unmerged), vec![("S1", 1, 2), ("S1", 3, 34)]);
}

#[test]
fn overlap_repeats_the_end_of_the_previous_chunk_of_the_same_section() {
    let para = format!("{}\n{}\n", "a".repeat(39), "b".repeat(39));
    let text = format!("# H\n\n{para}\n{para}\n{para}\n# Next\n{para}");
    let p = plan_of(&text, 30, 12, 0);
    assert_eq!(
        ranges(&p),
        vec![("S1", 1, 5), ("S1", 6, 8), ("S1", 9, 11), ("S2", 12, 14)]
    );
    // 12 tokens = 48 chars: the blank line 5 (1 char) and line 4 (40) fit, line 3 does not.
    assert_eq!(p.chunks[1].overlap_line_start, Some(4));
    assert_eq!(p.chunks[1].overlap_token_estimate, 10);
    assert_eq!(p.chunks[2].overlap_line_start, Some(7));
    // Never across a heading.
    assert_eq!(p.chunks[3].overlap_line_start, None);
}

#[test]
fn chunk_ids_are_anchor_and_hash_and_unique() {
    let para = format!("{}\n\n", "same ".repeat(20));
    let text = format!("# Présentation générale\n\n{}", para.repeat(4));
    let p = plan_of(&text, 30, 0, 0);
    let ids: Vec<&str> = p.chunks.iter().map(|c| c.chunk_id.as_str()).collect();
    assert!(ids[0].starts_with("presentation-generale_"), "{ids:?}");
    let hash8 = &koas_kernel_api::hash::hex_part(&p.chunks[1].content_hash)[..8];
    assert_eq!(ids[1], format!("presentation-generale_{hash8}"));
    // Identical paragraphs give identical hashes: later ones get a suffix.
    assert_eq!(ids[2], format!("presentation-generale_{hash8}_2"));
    let unique: std::collections::HashSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len());
}

#[test]
fn crlf_and_bom_hashes_cover_exact_bytes() {
    let text = "\u{feff}# A\r\ntext\r\n# B\r\nmore\r\n";
    let p = plan_of(text, 1800, 100, 50);
    assert_eq!(ranges(&p), vec![("S1", 1, 2), ("S2", 3, 4)]);
    assert_eq!(p.chunks[0].content_hash, sha256(b"# A\r\ntext"));
    assert_eq!(p.chunks[0].byte_start, 3);
    assert_eq!(p.chunks[1].byte_end, text.len() as u64);
}
