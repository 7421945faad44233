//! Following a run of lines through later edits.
//!
//! Every change the engine records is a [`LineEdit`]: in some document
//! state, `old_len` lines at 0-based `start` became `new_len` lines. To find
//! where a region of an earlier state is now, map it through each later
//! edit in order. An edit that touches the region is a *conflict*: in
//! [`MapMode::Strict`] mapping fails, in [`MapMode::Clamp`] the region grows
//! to cover the edit (used to place notes and section tallies, where an
//! approximate position is still useful).

use koas_review_schema::edit_op::Action;
use koas_review_schema::ledger::LedgerEntry;
use serde::{Deserialize, Serialize};

use koas_review_schema::change_id::{ChangeId, EntryId};

/// A contiguous change of line count in one document state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineEdit {
    /// 0-based index of the first replaced line, or of the insertion point.
    pub start: usize,
    /// Number of lines removed (0 for a pure insertion).
    pub old_len: usize,
    /// Number of lines inserted (0 for a pure deletion).
    pub new_len: usize,
}

impl LineEdit {
    /// The edit that undoes this one.
    pub fn inverse(self) -> LineEdit {
        LineEdit {
            start: self.start,
            old_len: self.new_len,
            new_len: self.old_len,
        }
    }
}

/// A run of lines: 0-based `start`, `len` lines (`len == 0` is a point
/// between lines: before line `start`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    /// 0-based first line.
    pub start: usize,
    /// Number of lines.
    pub len: usize,
}

impl Region {
    /// `start + len`: the 0-based index just past the region.
    pub fn end(self) -> usize {
        self.start + self.len
    }
}

/// How to treat an edit that touches the region being mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapMode {
    /// Touching is an error.
    Strict,
    /// Touching widens the region to cover the edit's result.
    Clamp,
}

/// The region `region` of the state before `edit`, located in the state
/// after it. `Err(())` when the edit touches the region in strict mode.
#[allow(clippy::result_unit_err)]
pub fn map_through(region: Region, edit: LineEdit, mode: MapMode) -> Result<Region, ()> {
    let edit_end = edit.start + edit.old_len;
    let ambiguous_point = edit.old_len == 0 && region.len == 0 && edit.start == region.start;
    if !ambiguous_point && edit_end <= region.start {
        // Entirely before (an insertion right before the region counts).
        let start = region.start + edit.new_len - edit.old_len;
        return Ok(Region { start, ..region });
    }
    if !ambiguous_point && edit.start >= region.end() {
        return Ok(region);
    }
    match mode {
        MapMode::Strict => Err(()),
        MapMode::Clamp => {
            let start = region.start.min(edit.start);
            // The end of the region in the new state: past the edit's new
            // lines if the region reached into or past the edit.
            let region_end_after = if region.end() > edit_end {
                region.end() + edit.new_len - edit.old_len
            } else {
                edit.start + edit.new_len
            };
            let end = region_end_after.max(edit.start + edit.new_len).max(start);
            Ok(Region {
                start,
                len: end - start,
            })
        }
    }
}

/// Maps `region` through every edit of `edits`, in order. In strict mode
/// returns the index of the first edit that touches it.
pub fn map_through_all<I>(region: Region, edits: I, mode: MapMode) -> Result<Region, usize>
where
    I: IntoIterator<Item = LineEdit>,
{
    let mut current = region;
    for (index, edit) in edits.into_iter().enumerate() {
        current = map_through(current, edit, mode).map_err(|()| index)?;
    }
    Ok(current)
}

/// Maps a region of the *final* state back to the state before all
/// `edits` (given in application order), clamping on conflicts.
pub fn map_back_clamped(region: Region, edits: &[LineEdit]) -> Region {
    let mut current = region;
    for edit in edits.iter().rev() {
        current = map_through(current, edit.inverse(), MapMode::Clamp).unwrap_or(current);
    }
    current
}

/// Removes every change that is later reverted in the same chain, together
/// with its revert, rewriting the edits between them as if the change had
/// never been made. A change and its revert cancel out exactly, so a region
/// that the change touched can still be followed through the chain.
/// Pairs that cannot be cancelled cleanly (an edit in between touches the
/// change's lines) are left in place.
///
/// The chain is read from its end (see [`LaterEdits`]), so the cost is the
/// chain's length plus, for each pair, the edits left between the change
/// and its revert: a ledger of many review and revert cycles costs what
/// its live edits cost.
pub fn cancel_reverted_pairs(chain: &[(EntryId, LineEdit)]) -> Vec<(EntryId, LineEdit)> {
    let mut later = LaterEdits::default();
    for &(id, edit) in chain.iter().rev() {
        later.push_front(id, edit);
    }
    later.chronological().collect()
}

/// Which way a chain is walked: the one thing [`LaterEdits`] and
/// [`EarlierEdits`] do differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// From the newest entry back: a revert is met before its change.
    Backwards,
    /// From the oldest entry on: a change is met before its revert.
    Forwards,
}

/// The edits walked so far, with every change cancelled together with its
/// revert when the edits between them do not touch the change's lines.
#[derive(Debug, Clone)]
struct Cancelling {
    walk: Walk,
    /// In the order they were pushed; `None` where a pair was cancelled.
    items: Vec<Option<(EntryId, LineEdit)>>,
    /// Where the first-met entry of each open pair (a revert walking
    /// backwards, a change walking forwards) is in `items`.
    open: std::collections::HashMap<ChangeId, usize>,
    /// Number of `None` items.
    holes: usize,
}

impl Cancelling {
    fn new(walk: Walk) -> Self {
        Cancelling {
            walk,
            items: Vec::new(),
            open: std::collections::HashMap::new(),
            holes: 0,
        }
    }

    /// The change an entry opens a pair for, and the change it closes one
    /// of, in this walk's direction.
    fn pairing(&self, id: EntryId) -> (Option<ChangeId>, Option<ChangeId>) {
        match (self.walk, id) {
            (Walk::Backwards, EntryId::Revert(c)) | (Walk::Forwards, EntryId::Change(c)) => {
                (Some(c), None)
            }
            (Walk::Backwards, EntryId::Change(c)) | (Walk::Forwards, EntryId::Revert(c)) => {
                (None, Some(c))
            }
        }
    }

    fn push(&mut self, id: EntryId, edit: LineEdit) {
        let (opens, closes) = self.pairing(id);
        if let Some(change) = closes {
            if let Some(&at) = self.open.get(&change) {
                if self.cancel(at, edit) {
                    self.open.remove(&change);
                    return;
                }
            }
        }
        if let Some(change) = opens {
            self.open.insert(change, self.items.len());
        }
        self.items.push(Some((id, edit)));
    }

    /// Indexes of `items` from `from` to the end, oldest edit first.
    fn chronological_from(&self, from: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (from..self.items.len()).collect();
        if self.walk == Walk::Backwards {
            order.reverse();
        }
        order
    }

    /// Cancels the pair of the entry held at `at` and `edit`, the entry
    /// just met; false (and nothing changed) when an edit in between
    /// touches the change's lines.
    fn cancel(&mut self, at: usize, edit: LineEdit) -> bool {
        let Some(Some((_, held))) = self.items.get(at).copied() else {
            return false;
        };
        let (x, r) = match self.walk {
            Walk::Backwards => (edit, held),
            Walk::Forwards => (held, edit),
        };
        let between: Vec<(usize, EntryId, LineEdit)> = self
            .chronological_from(at + 1)
            .into_iter()
            .filter_map(|i| self.items[i].map(|(id, m)| (i, id, m)))
            .collect();
        let region = Region {
            start: x.start,
            len: x.new_len,
        };
        let Some(rewritten) = transpose_out(region, x, r, &between, 0) else {
            return false;
        };
        for (index, item) in rewritten {
            self.items[index] = Some(item);
        }
        self.items[at] = None;
        self.holes += 1;
        self.compact();
        true
    }

    /// Drops cancelled slots once they outnumber the live edits, so that
    /// walking between a change and its revert stays proportional to the
    /// live edits there.
    fn compact(&mut self) {
        while self.items.last().is_some_and(Option::is_none) {
            self.items.pop();
            self.holes -= 1;
        }
        if self.holes * 2 <= self.items.len() {
            return;
        }
        self.items.retain(Option::is_some);
        self.holes = 0;
        self.open.clear();
        for i in 0..self.items.len() {
            if let Some((id, _)) = self.items[i] {
                if let (Some(change), _) = self.pairing(id) {
                    self.open.insert(change, i);
                }
            }
        }
    }

    /// The edits held, oldest first.
    fn chronological(&self) -> impl Iterator<Item = (EntryId, LineEdit)> + '_ {
        self.chronological_from(0)
            .into_iter()
            .filter_map(|i| self.items[i])
    }
}

/// The edits after some point of a chain, with every change that is
/// reverted later in them cancelled together with its revert (see
/// [`cancel_reverted_pairs`]). Built by walking a chain backwards: each
/// [`LaterEdits::push_front`] adds the edit just before the current ones,
/// so after pushing the edits of entries `i+1..` it holds the net edits
/// that follow entry `i` — all of them, for every `i`, in one pass.
#[derive(Debug, Clone)]
pub struct LaterEdits(Cancelling);

impl Default for LaterEdits {
    fn default() -> Self {
        LaterEdits(Cancelling::new(Walk::Backwards))
    }
}

impl LaterEdits {
    /// Adds `edit`, made by entry `id`, before every edit held. A change
    /// whose revert is held cancels out with it when the edits between
    /// them do not touch its lines.
    pub fn push_front(&mut self, id: EntryId, edit: LineEdit) {
        self.0.push(id, edit);
    }

    /// The edits held, oldest first.
    pub fn chronological(&self) -> impl Iterator<Item = (EntryId, LineEdit)> + '_ {
        self.0.chronological()
    }

    /// `region`, a region of the state before the edits held, located
    /// after all of them (widened where an edit touches it).
    pub fn map_clamped(&self, region: Region) -> Region {
        self.chronological().fold(region, |r, (_, edit)| {
            map_through(r, edit, MapMode::Clamp).unwrap_or(r)
        })
    }
}

/// The edits before some point of a chain, with every change reverted
/// before that point cancelled together with its revert: the mirror of
/// [`LaterEdits`], built by walking a chain forwards.
#[derive(Debug, Clone)]
pub struct EarlierEdits(Cancelling);

impl Default for EarlierEdits {
    fn default() -> Self {
        EarlierEdits(Cancelling::new(Walk::Forwards))
    }
}

impl EarlierEdits {
    /// Adds `edit`, made by entry `id`, after every edit held. A revert
    /// whose change is held cancels out with it when the edits between
    /// them do not touch the change's lines.
    pub fn push_back(&mut self, id: EntryId, edit: LineEdit) {
        self.0.push(id, edit);
    }

    /// The edits held, oldest first.
    pub fn chronological(&self) -> impl Iterator<Item = (EntryId, LineEdit)> + '_ {
        self.0.chronological()
    }

    /// `region`, a region of the state after the edits held, located
    /// before all of them (clamped where an edit touches it).
    pub fn map_back_clamped(&self, region: Region) -> Region {
        let edits: Vec<LineEdit> = self.chronological().map(|(_, e)| e).collect();
        edits.iter().rev().fold(region, |r, edit| {
            map_through(r, edit.inverse(), MapMode::Clamp).unwrap_or(r)
        })
    }
}

/// Rewrites the edits between a change `x` and its revert `r` as if `x`
/// had never happened, following `x`'s lines (`region`) through them. An
/// insertion at exactly the point where `x` removed lines is ambiguous (its
/// lines could sit before or after that point); both readings are tried and
/// the one that brings the region to where the revert actually applied is
/// kept. `None` when no reading works (an edit touched `x`'s lines).
fn transpose_out(
    region: Region,
    x: LineEdit,
    r: LineEdit,
    between: &[(usize, EntryId, LineEdit)],
    depth: usize,
) -> Option<Vec<(usize, (EntryId, LineEdit))>> {
    let Some(((index, id, m), rest)) = between.split_first() else {
        let exact = r.start == region.start && r.old_len == x.new_len && r.new_len == x.old_len;
        return exact.then(Vec::new);
    };
    let shifted_before = |region: Region| Region {
        start: region.start + m.new_len - m.old_len,
        ..region
    };
    let moved_after = (
        *id,
        LineEdit {
            start: (m.start + x.old_len).saturating_sub(x.new_len),
            ..*m
        },
    );
    let prepend = |item: (EntryId, LineEdit), tail: Vec<(usize, (EntryId, LineEdit))>| {
        let mut out = vec![(*index, item)];
        out.extend(tail);
        out
    };
    let m_end = m.start + m.old_len;
    let ambiguous = m.old_len == 0 && region.len == 0 && m.start == region.start;
    if ambiguous {
        if depth >= 8 {
            return None;
        }
        // m's lines before x's point, or after it.
        if let Some(tail) = transpose_out(shifted_before(region), x, r, rest, depth + 1) {
            return Some(prepend((*id, *m), tail));
        }
        return transpose_out(region, x, r, rest, depth + 1).map(|tail| prepend(moved_after, tail));
    }
    if m_end <= region.start {
        transpose_out(shifted_before(region), x, r, rest, depth)
            .map(|tail| prepend((*id, *m), tail))
    } else if m.start >= region.end() {
        transpose_out(region, x, r, rest, depth).map(|tail| prepend(moved_after, tail))
    } else {
        None
    }
}

/// The line edit a ledger entry made, `None` for a flag.
pub fn edit_of(entry: &LedgerEntry) -> Option<LineEdit> {
    if entry.action == Action::FlagOnly {
        return None;
    }
    entry.change.map(|c| LineEdit {
        start: c.at.saturating_sub(1),
        old_len: c.removed,
        new_len: c.added,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn r(start: usize, len: usize) -> Region {
        Region { start, len }
    }
    fn e(start: usize, old_len: usize, new_len: usize) -> LineEdit {
        LineEdit {
            start,
            old_len,
            new_len,
        }
    }

    #[test]
    fn edits_before_shift_edits_after_do_not() {
        assert_eq!(
            map_through(r(10, 2), e(2, 1, 3), MapMode::Strict),
            Ok(r(12, 2))
        );
        assert_eq!(
            map_through(r(10, 2), e(12, 1, 3), MapMode::Strict),
            Ok(r(10, 2))
        );
        // insertion right before / right after
        assert_eq!(
            map_through(r(10, 2), e(10, 0, 1), MapMode::Strict),
            Ok(r(11, 2))
        );
        assert_eq!(
            map_through(r(10, 2), e(12, 0, 1), MapMode::Strict),
            Ok(r(10, 2))
        );
    }

    #[test]
    fn touching_edits_conflict_or_clamp() {
        assert!(map_through(r(10, 2), e(11, 1, 1), MapMode::Strict).is_err());
        assert!(map_through(r(10, 2), e(9, 2, 1), MapMode::Strict).is_err());
        assert!(map_through(r(10, 2), e(11, 0, 2), MapMode::Strict).is_err());
        // Two insertions at the same point are ambiguous.
        assert!(map_through(r(10, 0), e(10, 0, 2), MapMode::Strict).is_err());
        assert_eq!(
            map_through(r(10, 2), e(11, 1, 3), MapMode::Clamp),
            Ok(r(10, 4))
        );
        assert_eq!(
            map_through(r(10, 2), e(8, 3, 1), MapMode::Clamp),
            Ok(r(8, 2))
        );
    }

    #[test]
    fn points_next_to_edits() {
        // Deletion point at 5; an edit replacing lines starting at 5 is after it.
        assert_eq!(
            map_through(r(5, 0), e(5, 2, 1), MapMode::Strict),
            Ok(r(5, 0))
        );
        // An edit ending at the point is before it.
        assert_eq!(
            map_through(r(5, 0), e(3, 2, 0), MapMode::Strict),
            Ok(r(3, 0))
        );
        assert!(map_through(r(5, 0), e(4, 2, 2), MapMode::Strict).is_err());
    }

    #[test]
    fn back_mapping_undoes_forward_mapping() {
        let edits = [e(0, 0, 3), e(20, 2, 0), e(7, 1, 1)];
        let there = map_through_all(r(12, 3), edits, MapMode::Strict).unwrap();
        assert_eq!(map_back_clamped(there, &edits), r(12, 3));
    }

    #[test]
    fn reverted_pairs_cancel() {
        use koas_review_schema::change_id::{ChangeId, EntryId};
        let c = |n| EntryId::Change(ChangeId::new(n).unwrap());
        let rv = |n| EntryId::Revert(ChangeId::new(n).unwrap());
        // Change 2 rewrites lines 10..12 into 3 lines, change 3 edits line 20
        // (after it), then change 2 is reverted.
        let chain = [
            (c(2), e(10, 2, 3)),
            (c(3), e(20, 1, 1)),
            (rv(2), e(10, 3, 2)),
        ];
        let cancelled = cancel_reverted_pairs(&chain);
        assert_eq!(cancelled, vec![(c(3), e(19, 1, 1))]);
        // A region touched by change 2 can now be followed.
        assert_eq!(
            map_through_all(r(10, 2), cancelled.iter().map(|x| x.1), MapMode::Strict),
            Ok(r(10, 2))
        );
        // Not cancellable when an edit in between touched change 2's lines.
        let chain = [
            (c(2), e(10, 2, 3)),
            (c(3), e(11, 1, 1)),
            (rv(2), e(10, 3, 2)),
        ];
        assert_eq!(cancel_reverted_pairs(&chain).len(), 3);
    }

    proptest! {
        /// Mapping a region through a disjoint edit keeps its length and
        /// agrees with actually applying the edit to a vector of lines.
        #[test]
        fn strict_mapping_tracks_real_lines(
            n in 1usize..40,
            rs in 0usize..40, rl in 0usize..5,
            es in 0usize..40, eo in 0usize..5, en in 0usize..5,
        ) {
            let rs = rs.min(n); let rl = rl.min(n - rs);
            let es = es.min(n); let eo = eo.min(n - es);
            let mut lines: Vec<String> = (0..n).map(|i| format!("L{i}")).collect();
            let region = r(rs, rl);
            let before: Vec<String> = lines[rs..rs + rl].to_vec();
            let edit = e(es, eo, en);
            let new: Vec<String> = (0..en).map(|i| format!("N{i}")).collect();
            lines.splice(es..es + eo, new);
            if let Ok(mapped) = map_through(region, edit, MapMode::Strict) {
                prop_assert_eq!(mapped.len, rl);
                prop_assert_eq!(&lines[mapped.start..mapped.end()], &before[..]);
            }
            let clamped = map_through(region, edit, MapMode::Clamp).unwrap();
            prop_assert!(clamped.end() <= lines.len());
        }
    }
}
