//! Requests of the right size: small adjacent chunks are asked about in
//! one request, up to a target size.
//!
//! The chunk plan never crosses a heading, so a document of short sections
//! has many chunks of a few dozen tokens, each of which would carry the
//! whole prompt (instructions, context) in a request of its own. A group
//! joins adjacent chunks when
//!
//! * each is a whole chunk (a piece cut from a large chunk is big enough);
//! * the next one does not start a top-level section (a heading at the
//!   document's outline level or above), so a request stays inside one
//!   part of the document and its context (the pyramid's section) fits;
//! * the group stays within the target size.
//!
//! Chunk boundaries never fall inside a protected block, and a group's
//! boundaries are chunk boundaries, so no request cuts one either.

use super::split::Piece;
use crate::estimate_tokens;

/// One piece to ask about, as the grouping sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// The piece (a whole chunk, or a piece of a large one).
    pub piece: Piece,
    /// `true` when the piece is its chunk, whole.
    pub whole: bool,
    /// The heading level the piece starts with (1–6), `None` when it does
    /// not start with a heading.
    pub heading: Option<u8>,
}

/// The level of the heading on `first` (followed by `second`, for a
/// setext underline), if `first` is one.
pub fn heading_level(first: &str, second: Option<&str>) -> Option<u8> {
    let indent = first.len() - first.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &first[indent..];
    let hashes = rest.len() - rest.trim_start_matches('#').len();
    if (1..=6).contains(&hashes) {
        let after = &rest[hashes..];
        if after.is_empty() || after.starts_with([' ', '\t']) {
            return u8::try_from(hashes).ok();
        }
        return None;
    }
    if first.trim().is_empty() {
        return None;
    }
    let underline = second?.trim();
    if !underline.is_empty() && underline.chars().all(|c| c == '=') {
        Some(1)
    } else if underline.len() >= 2 && underline.chars().all(|c| c == '-') {
        Some(2)
    } else {
        None
    }
}

/// The document's outline level: the highest heading level (smallest
/// number) that more than one section uses, so that a lone title above
/// the numbered parts does not make the whole document one part.
fn outline_level(units: &[Unit]) -> Option<u8> {
    let mut counts = [0usize; 7];
    for level in units.iter().filter_map(|u| u.heading) {
        counts[usize::from(level.min(6))] += 1;
    }
    (1..=6u8)
        .find(|&l| counts[usize::from(l)] > 1)
        .or_else(|| (1..=6u8).find(|&l| counts[usize::from(l)] > 0))
}

/// Groups `units` (in document order, contiguous) into requests of at most
/// `target` estimated tokens; `text(a, b)` is the document's lines `a..=b`.
/// A target of 0 asks every unit alone. Returns the groups as index
/// ranges into `units`.
pub fn group(
    units: &[Unit],
    target: u32,
    text: &dyn Fn(u32, u32) -> String,
) -> Vec<std::ops::Range<usize>> {
    let outline = outline_level(units);
    let starts_part = |u: &Unit| matches!((u.heading, outline), (Some(h), Some(o)) if h <= o);
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, unit) in units.iter().enumerate() {
        let joins = target > 0
            && unit.whole
            && !starts_part(unit)
            && groups.last().is_some_and(|g| {
                let first = &units[g.start];
                units[g.clone()].iter().all(|u| u.whole)
                    && estimate_tokens(&text(first.piece.line_start, unit.piece.line_end)) <= target
            });
        match groups.last_mut() {
            Some(g) if joins => g.end = i + 1,
            _ => groups.push(i..i + 1),
        }
    }
    groups
}

/// The ID of a request that covers `n` chunks from `first`: the first
/// chunk's ID alone, or `{first}+{n-1}`.
pub fn group_id(first: &str, n: usize) -> String {
    if n <= 1 {
        first.to_owned()
    } else {
        format!("{first}+{}", n - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atx_and_setext_headings_have_their_level() {
        assert_eq!(heading_level("## Scope", None), Some(2));
        assert_eq!(heading_level("   # Title", None), Some(1));
        assert_eq!(heading_level("#hashtag", None), None);
        assert_eq!(heading_level("    # code", None), None);
        assert_eq!(heading_level("####### seven", None), None);
        assert_eq!(heading_level("Title", Some("=====")), Some(1));
        assert_eq!(heading_level("Part", Some("---")), Some(2));
        assert_eq!(heading_level("Text", Some("more text")), None);
        assert_eq!(heading_level("", Some("---")), None);
    }

    fn unit(id: &str, a: u32, b: u32, heading: Option<u8>) -> Unit {
        Unit {
            piece: Piece {
                id: id.to_owned(),
                line_start: a,
                line_end: b,
            },
            whole: true,
            heading,
        }
    }

    /// Ten characters a line: about 2.5 tokens.
    fn lines(a: u32, b: u32) -> String {
        (a..=b).map(|_| "abcdefghij").collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn small_sections_join_until_the_target_and_never_across_a_part() {
        // # Title, then two parts (## ) with small subsections (### ).
        let units = vec![
            unit("t", 1, 2, Some(1)),
            unit("p1", 3, 6, Some(2)),
            unit("p1a", 7, 10, Some(3)),
            unit("p1b", 11, 14, Some(3)),
            unit("p2", 15, 18, Some(2)),
            unit("p2a", 19, 22, Some(3)),
        ];
        let groups = group(&units, 1_000, &lines);
        assert_eq!(groups, vec![0..1, 1..4, 4..6]);
        // A target that holds two sections of four lines, not three.
        let groups = group(&units, 25, &lines);
        assert_eq!(groups, vec![0..1, 1..3, 3..4, 4..6]);
        assert_eq!(group(&units, 0, &lines).len(), units.len());
    }

    #[test]
    fn a_piece_of_a_large_chunk_is_asked_alone() {
        let mut units = vec![
            unit("a", 1, 4, Some(2)),
            unit("b_a", 5, 8, Some(3)),
            unit("b_b", 9, 12, None),
            unit("c", 13, 14, Some(3)),
        ];
        units[1].whole = false;
        units[2].whole = false;
        assert_eq!(group(&units, 1_000, &lines), vec![0..1, 1..2, 2..3, 3..4]);
    }

    #[test]
    fn ids_name_the_first_chunk_and_how_many_follow() {
        assert_eq!(group_id("scope_1a2b", 1), "scope_1a2b");
        assert_eq!(group_id("scope_1a2b", 3), "scope_1a2b+2");
    }
}
