//! The lines accepted ops hold, and the line shifts of accepted ops.

use super::*;

/// 1-based inclusive line ranges an accepted op holds in the planned doc.
#[derive(Debug, Clone)]
pub(super) struct Occupied {
    pub(super) index: usize,
    pub(super) id: ChangeId,
    pub(super) lines: Option<(usize, usize)>,
    pub(super) insert_point: Option<usize>,
}

/// The lines and insertion points held by the ops accepted so far. Their
/// line ranges never overlap (an overlapping op is refused), so the ranges
/// a candidate overlaps are found from the one starting last before its
/// end, without scanning every accepted op.
#[derive(Debug, Default)]
pub(super) struct Occupancy {
    /// Start → (end, op index, op ID).
    pub(super) lines: std::collections::BTreeMap<usize, (usize, usize, ChangeId)>,
    /// Insertion point → (op index, op ID).
    pub(super) points: std::collections::HashMap<usize, (usize, ChangeId)>,
}

impl Occupancy {
    pub(super) fn insert(&mut self, o: &Occupied) {
        if let Some((a, b)) = o.lines {
            self.lines.insert(a, (b, o.index, o.id));
        }
        if let Some(x) = o.insert_point {
            self.points.entry(x).or_insert((o.index, o.id));
        }
    }

    /// The earliest accepted op the candidate overlaps, and where.
    pub(super) fn overlap(&self, candidate: &Occupied) -> Option<(usize, ChangeId, String)> {
        let mut found: Option<(usize, ChangeId, String)> = None;
        let mut keep = |index: usize, id: ChangeId, at: String| {
            if found.as_ref().map_or(true, |(i, ..)| index < *i) {
                found = Some((index, id, at));
            }
        };
        if let Some((c, d)) = candidate.lines {
            for (&a, &(b, index, id)) in self.lines.range(..=d).rev() {
                if b < c {
                    break;
                }
                let (s, e) = (a.max(c), b.min(d));
                let at = if s == e {
                    format!("line {s}")
                } else {
                    format!("lines {s}–{e}")
                };
                keep(index, id, at);
            }
        }
        if let Some(y) = candidate.insert_point {
            if let Some(&(index, id)) = self.points.get(&y) {
                // An op found by its lines keeps that description.
                keep(index, id, format!("the insertion point after line {y}"));
            }
        }
        found
    }
}

/// Sums of line deltas by planned position (a Fenwick tree): the shift an
/// op's lines undergo from the changes applied before them, in `log n`
/// rather than by summing every earlier change.
pub(super) struct Shifts {
    pub(super) tree: Vec<isize>,
}

impl Shifts {
    pub(super) fn new(lines: usize) -> Self {
        Shifts {
            tree: vec![0; lines + 2],
        }
    }

    /// Records `delta` for a change whose planned lines end (exclusive)
    /// at `end`.
    pub(super) fn add(&mut self, end: usize, delta: isize) {
        let mut i = end + 1;
        while i < self.tree.len() {
            self.tree[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// The sum of the deltas of changes ending at or before `at`.
    pub(super) fn before(&self, at: usize) -> isize {
        let mut i = (at + 1).min(self.tree.len() - 1);
        let mut sum = 0;
        while i > 0 {
            sum += self.tree[i];
            i -= i & i.wrapping_neg();
        }
        sum
    }
}
