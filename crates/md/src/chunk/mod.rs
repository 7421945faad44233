//! Structure-aligned chunking (`md_chunk`).
//!
//! Rules (also in `docs/artifacts.md`):
//! * every heading starts a chunk and a chunk holds no heading after its
//!   first line, so no chunk crosses a heading;
//! * the owned line ranges of the chunks partition the document;
//! * a section's own content larger than `max_chunk_tokens` is sub-split,
//!   at paragraph boundaries first (a line after a blank line, or just
//!   before / after a protected block), at any other line boundary only
//!   when a paragraph alone exceeds the budget;
//! * no boundary falls inside a protected block; a block larger than the
//!   budget gives an `oversized` chunk;
//! * a sub-split piece under `min_chunk_tokens` is merged into its
//!   neighbour in the same section;
//! * overlap repeats at most `overlap_tokens` of the previous chunk's last
//!   lines, only inside one section, never starting inside a protected
//!   block or taking the heading;
//! * a preamble of blank lines only is folded into the first chunk.

pub mod safe_name;

use crate::line_index::LineIndex;
use crate::tokens::tokens_for_chars;
use koas_kernel_api::hash::hex_part;
use koas_review_schema::stage1::{
    ChunkConfig, ChunkPlan, LineNo, ProtectedSpan, ReviewChunk, SectionEntry, PREAMBLE_SECTION_ID,
    TOKEN_ESTIMATOR,
};
use std::collections::{HashMap, HashSet};

/// A run of lines owned by one section: the heading (if any) and the
/// section's own content up to the next heading.
#[derive(Debug, Clone)]
struct Segment<'s> {
    id: &'s str,
    anchor: &'s str,
    start: LineNo,
    end: LineNo,
    /// Last heading line (`start - 1` for the preamble).
    heading_end: LineNo,
}

/// Per-line facts the chunker needs.
struct Lines<'a> {
    index: &'a LineIndex<'a>,
    /// `cum[l]` = chars of lines `1..=l`, line endings included.
    cum: Vec<u64>,
    /// `inside[l]`: a boundary before line `l` would split a block.
    inside: Vec<bool>,
    /// `block_edge[l]`: a block starts at `l` or ends at `l - 1`.
    block_edge: Vec<bool>,
}

impl<'a> Lines<'a> {
    fn new(index: &'a LineIndex<'a>, blocks: &[ProtectedSpan]) -> Self {
        let n = index.line_count() as usize;
        let text = index.text().as_bytes();
        let mut cum = vec![0u64; n + 1];
        for l in 1..=n {
            let line = l as LineNo;
            let (s, e) = (index.line_start(line), index.line_end_with_ending(line));
            let chars = text[s..e].iter().filter(|&&b| (b & 0xC0) != 0x80).count() as u64;
            cum[l] = cum[l - 1] + chars;
        }
        let mut depth = vec![0i64; n + 2];
        let mut block_edge = vec![false; n + 2];
        for b in blocks {
            let (s, e) = (b.line_start as usize, (b.line_end as usize).min(n));
            if s == 0 || s > n || e < s {
                continue;
            }
            block_edge[s] = true;
            block_edge[e + 1] = true;
            depth[s + 1] += 1;
            depth[e + 1] -= 1;
        }
        let mut inside = vec![false; n + 2];
        let mut running = 0i64;
        for l in 0..=n + 1 {
            running += depth[l];
            inside[l] = running > 0;
        }
        Lines {
            index,
            cum,
            inside,
            block_edge,
        }
    }

    fn chars(&self, start: LineNo, end: LineNo) -> u64 {
        if end < start {
            return 0;
        }
        self.cum[end as usize] - self.cum[start as usize - 1]
    }

    fn tokens(&self, start: LineNo, end: LineNo) -> u32 {
        tokens_for_chars(self.chars(start, end))
    }

    /// A chunk may start at `l` without splitting a block.
    fn can_break(&self, l: LineNo) -> bool {
        !self.inside[l as usize]
    }

    /// A paragraph boundary: after a blank line, or at a block edge.
    fn is_paragraph_break(&self, l: LineNo) -> bool {
        self.block_edge[l as usize] || (self.index.is_blank(l - 1) && !self.index.is_blank(l))
    }
}

/// Builds the chunk plan. `sections` must be in document order.
pub fn plan(
    index: &LineIndex<'_>,
    sections: &[SectionEntry],
    blocks: &[ProtectedSpan],
    config: ChunkConfig,
    doc_hash: &str,
) -> ChunkPlan {
    let lines = Lines::new(index, blocks);
    let segments = segments(index, &lines, sections);
    let mut chunks: Vec<ReviewChunk> = Vec::new();
    let mut ids = IdRegistry::default();
    for seg in &segments {
        let pieces = split_segment(&lines, seg, config);
        for (k, &(start, end)) in pieces.iter().enumerate() {
            let overlap = if k == 0 {
                None
            } else {
                overlap_start(&lines, seg, pieces[k - 1], config.overlap_tokens)
            };
            let content_hash = index.line_hash(start, end);
            let token_estimate = lines.tokens(start, end);
            let base = format!(
                "{}_{}",
                safe_name::safe_prefix(seg.anchor, seg.id),
                hex_part(&content_hash).get(..8).unwrap_or("")
            );
            let chunk_id = ids.unique(base);
            chunks.push(ReviewChunk {
                chunk_id,
                index: u32::try_from(chunks.len()).unwrap_or(u32::MAX),
                section_id: seg.id.to_string(),
                anchor: seg.anchor.to_string(),
                line_start: start,
                line_end: end,
                overlap_line_start: overlap,
                byte_start: index.line_start(start) as u64,
                byte_end: index.line_end_with_ending(end) as u64,
                token_estimate,
                overlap_token_estimate: overlap.map_or(0, |o| lines.tokens(o, start - 1)),
                content_hash,
                oversized: token_estimate > config.max_chunk_tokens,
            });
        }
    }
    ChunkPlan {
        doc_hash: doc_hash.to_string(),
        line_count: index.line_count(),
        config,
        token_estimator: TOKEN_ESTIMATOR.to_string(),
        chunks,
    }
}

/// Chunk IDs already given, and the next suffix to try for each base.
#[derive(Default)]
struct IdRegistry {
    taken: HashSet<String>,
    next_suffix: HashMap<String, u32>,
}

impl IdRegistry {
    /// `base`, or `base_2`, `base_3`, … for later chunks with the same
    /// base; amortized O(1) however many chunks share a base.
    fn unique(&mut self, base: String) -> String {
        if self.taken.insert(base.clone()) {
            return base;
        }
        let n = self.next_suffix.entry(base.clone()).or_insert(1);
        loop {
            *n += 1;
            let id = format!("{base}_{n}");
            if self.taken.insert(id.clone()) {
                return id;
            }
        }
    }
}

/// Cuts the document at every heading.
fn segments<'s>(
    index: &LineIndex<'_>,
    lines: &Lines<'_>,
    sections: &'s [SectionEntry],
) -> Vec<Segment<'s>> {
    let n = index.line_count();
    let mut segs: Vec<Segment<'s>> = Vec::new();
    for s in sections {
        let valid = s.line_start >= 1
            && s.line_start <= n
            && lines.can_break(s.line_start)
            && segs.last().map_or(true, |prev| s.line_start > prev.start);
        if !valid {
            continue;
        }
        segs.push(Segment {
            id: &s.id,
            anchor: &s.anchor,
            start: s.line_start,
            end: n,
            heading_end: s.heading_line_end.clamp(s.line_start, n),
        });
    }
    for i in 1..segs.len() {
        segs[i - 1].end = segs[i].start - 1;
    }
    match segs.first_mut() {
        Some(first) if first.start > 1 => {
            let blank = (1..first.start).all(|l| index.is_blank(l));
            if blank {
                first.start = 1;
            } else {
                let end = first.start - 1;
                segs.insert(0, preamble(1, end));
            }
        }
        None if n > 0 => segs.push(preamble(1, n)),
        _ => {}
    }
    segs
}

fn preamble<'s>(start: LineNo, end: LineNo) -> Segment<'s> {
    Segment {
        id: PREAMBLE_SECTION_ID,
        anchor: "",
        start,
        end,
        heading_end: start - 1,
    }
}

/// Splits one segment into owned line ranges.
fn split_segment(
    lines: &Lines<'_>,
    seg: &Segment<'_>,
    config: ChunkConfig,
) -> Vec<(LineNo, LineNo)> {
    let max = config.max_chunk_tokens;
    let (s, e) = (seg.start, seg.end);
    if lines.tokens(s, e) <= max {
        return vec![(s, e)];
    }
    let allowed = |l: LineNo| l > seg.heading_end && lines.can_break(l);
    let mut pieces = Vec::new();
    let mut cur = s;
    while cur <= e {
        let mut last_para = None;
        let mut last_any = None;
        let mut l = cur + 1;
        while l <= e && lines.tokens(cur, l - 1) <= max {
            if allowed(l) {
                last_any = Some(l);
                if lines.is_paragraph_break(l) {
                    last_para = Some(l);
                }
            }
            l += 1;
        }
        if l > e && lines.tokens(cur, e) <= max {
            pieces.push((cur, e));
            break;
        }
        let cut = last_para
            .or(last_any)
            .or_else(|| (l..=e).find(|&b| allowed(b)));
        match cut {
            Some(c) if c > cur => {
                pieces.push((cur, c - 1));
                cur = c;
            }
            _ => {
                pieces.push((cur, e));
                break;
            }
        }
    }
    merge_small(lines, pieces, config.min_chunk_tokens)
}

/// Merges pieces under `min` tokens into their neighbour.
fn merge_small(
    lines: &Lines<'_>,
    pieces: Vec<(LineNo, LineNo)>,
    min: u32,
) -> Vec<(LineNo, LineNo)> {
    let mut out: Vec<(LineNo, LineNo)> = Vec::with_capacity(pieces.len());
    for p in pieces {
        if let Some(last) = out.last_mut() {
            if lines.tokens(p.0, p.1) < min || lines.tokens(last.0, last.1) < min {
                last.1 = p.1;
                continue;
            }
        }
        out.push(p);
    }
    out
}

/// The first overlap line for a chunk following `prev` in the same
/// segment, if any.
fn overlap_start(
    lines: &Lines<'_>,
    seg: &Segment<'_>,
    prev: (LineNo, LineNo),
    budget: u32,
) -> Option<LineNo> {
    if budget == 0 {
        return None;
    }
    let (ps, pe) = prev;
    let floor = ps.max(seg.heading_end + 1);
    let mut best = None;
    let mut o = pe;
    while o >= floor && lines.tokens(o, pe) <= budget {
        if lines.can_break(o) {
            best = Some(o);
        }
        o -= 1;
    }
    best.filter(|&b| (b..=pe).any(|l| !lines.index.is_blank(l)))
}

#[cfg(test)]
mod tests;
