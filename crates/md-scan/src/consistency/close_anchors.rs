//! "Did you mean": the anchors of a document close to a broken link's
//! fragment, found through indexes instead of comparing the fragment with
//! every anchor (which made a document of thousands of headings and
//! broken links take minutes: issue 45).
//!
//! "Close" is what `similar` (the reference its tests compare with) says: the same words under another number, one anchor
//! ending with the other, the same letters with other hyphens, or a few
//! edits apart. Each of those has its own index, exact for the first three.
//! The edit-distance one uses the pigeonhole rule: when two titles are at
//! most three edits apart, one of the four quarters of the anchor appears
//! unchanged in the fragment, shifted by at most three characters; only
//! anchors sharing such a quarter are compared.
//!
//! Each broken link's work is bounded, so that a hostile document stays
//! linear: at most [`MAX_SUFFIX_BYTES`] bytes of the fragment's suffixes
//! are looked up, at most [`MAX_CANDIDATES`] anchors are read from each
//! index entry ([`MAX_PIECE_CANDIDATES`] from each entry of the pieces
//! index), and at most [`MAX_EDIT_COMPARISONS`] edit distances are computed
//! (in the anchors' order, stopping at the second match). On ordinary
//! documents the bounds are never reached and the suggestion is the one a
//! comparison with every anchor gives (the first close anchor in sorted
//! order, and a fix when it is the only one). Only when more than
//! [`MAX_CANDIDATES`] anchors end with the fragment, more than
//! [`MAX_PIECE_CANDIDATES`] anchors of one length share one quarter with
//! it (or, together, more than [`MAX_EDIT_COMPARISONS`] come before the
//! second close one), or the fragment's suffixes exceed the byte bound, can a
//! farther anchor (later in sorted order) be suggested, or a second close
//! anchor be missed (so that a fix is offered where a full comparison
//! would offer none).

use std::collections::HashMap;

/// Suffix bytes of one fragment looked up in the anchor set: a fragment of
/// 180 characters has all its suffixes looked up.
pub(crate) const MAX_SUFFIX_BYTES: usize = 16 * 1024;
/// Anchors read from one index entry (each entry is in sorted order, so
/// these are its first ones).
pub(crate) const MAX_CANDIDATES: usize = 256;
/// Anchors read from one entry of the pieces index (the edit-distance
/// candidates): fewer, as a fragment looks up some 200 pieces.
pub(crate) const MAX_PIECE_CANDIDATES: usize = 32;
/// Edit distances computed for one fragment.
pub(crate) const MAX_EDIT_COMPARISONS: usize = 64;

/// The largest number of edits [`similar`] accepts.
const MAX_EDITS: usize = 3;
/// Pieces an anchor is cut into for the edit-distance index: one more
/// than [`MAX_EDITS`], so that one piece survives the edits.
const PIECES: usize = MAX_EDITS + 1;
/// Titles shorter than this (in characters) accept no edit.
const MIN_EDITED: usize = 8;

/// The anchor without a leading section number (`3-capacity` → `capacity`).
pub(crate) fn without_number(anchor: &str) -> &str {
    anchor.trim_start_matches(|c: char| c.is_ascii_digit() || c == '-')
}

fn letters(s: &str) -> String {
    s.replace('-', "")
}

/// The number of edits [`similar`] accepts between titles whose shorter one
/// has `shorter` characters: at most one per four characters, three at
/// most, none under eight.
fn edit_limit(shorter: usize) -> usize {
    if shorter >= MIN_EDITED {
        (shorter / 4).min(MAX_EDITS)
    } else {
        0
    }
}

/// Edit distance between `a` and `b` in characters, or `None` once it
/// exceeds `limit`. Only the diagonal band of width `2 * limit + 1` is
/// computed (a cell outside it is more than `limit` edits away), so the
/// cost is linear in the length.
pub(crate) fn distance_within(a: &str, b: &str, limit: usize) -> Option<usize> {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let over = limit + 1;
    // prev[j] / cur[j]: distance between a[..i] and b[..j]; cells outside
    // the band hold `over` (anything above the limit is the same to us).
    let mut prev: Vec<usize> = (0..=b.len()).map(|j| j.min(over)).collect();
    let mut cur = vec![over; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        let row = i + 1;
        let lo = row.saturating_sub(limit);
        let hi = (row + limit).min(b.len());
        // The two cells this row reads just outside the previous row's
        // band, and its own left edge, may hold stale values: reset them.
        if row + limit <= b.len() {
            prev[row + limit] = over;
        }
        let mut best = over;
        if lo == 0 {
            cur[0] = row.min(over);
            best = cur[0];
        } else {
            cur[lo - 1] = over;
        }
        for j in lo.max(1)..=hi {
            let cost = usize::from(*ca != b[j - 1]);
            let d = (prev[j - 1] + cost).min(prev[j] + 1).min(cur[j - 1] + 1);
            cur[j] = d.min(over);
            best = best.min(cur[j]);
        }
        if best > limit {
            return None;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev.last().copied().filter(|&d| d <= limit)
}

/// `true` when `anchor` is probably what `wanted` meant: the same words
/// under another number, one ending with the other, the same letters with
/// other hyphens (`set-up`, `setup`), or a slightly renamed title (a
/// plural, a typo: titles of eight characters or more, at most one edit
/// per four characters, three at most). The reference the indexes of
/// [`CloseAnchors`] answer for (its tests compare them).
#[cfg(test)]
fn similar(anchor: &str, wanted: &str) -> bool {
    let (a, w) = (without_number(anchor), without_number(wanted));
    let shorter = a.chars().count().min(w.chars().count());
    let limit = edit_limit(shorter);
    (!a.is_empty() && a == w)
        || (anchor.len() > 3
            && wanted.len() > 3
            && ((anchor.ends_with(wanted) && !wanted.starts_with('-'))
                || (wanted.ends_with(anchor) && !anchor.starts_with('-'))))
        || (a.len() > 3 && letters(a) == letters(w))
        || (limit > 0 && distance_within(a, w, limit).is_some())
}

/// Where the pieces of a title of `len` characters start and end (in
/// characters): [`PIECES`] pieces as equal as can be.
fn pieces(len: usize) -> [(usize, usize); PIECES] {
    let mut out = [(0, 0); PIECES];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = (len * i / PIECES, len * (i + 1) / PIECES);
    }
    out
}

/// The anchors of one document, indexed for [`CloseAnchors::close_to`].
pub(crate) struct CloseAnchors<'a> {
    /// Every anchor, sorted: an anchor's ID is its place here, so the
    /// smaller ID is the one a sorted list of close anchors starts with.
    names: Vec<&'a str>,
    /// Title without its number → anchors (non-empty titles).
    by_title: HashMap<&'a str, Vec<u32>>,
    /// Title letters without hyphens → anchors (titles over 3 bytes).
    by_letters: HashMap<String, Vec<u32>>,
    /// Anchors over 3 bytes, for the fragment's suffixes.
    exact: HashMap<&'a str, u32>,
    /// The distinct byte lengths of `exact`'s anchors, ascending.
    lengths: Vec<usize>,
    /// Anchors over 3 bytes spelled backwards, sorted: those ending with a
    /// fragment are one run of this list.
    reversed: Vec<(Vec<u8>, u32)>,
    /// `(title characters, piece, piece text)` → anchors whose title
    /// (of eight characters or more) has that piece there.
    by_piece: HashMap<(usize, usize, &'a str), Vec<u32>>,
    /// Fragments already answered (a document often repeats a broken link).
    cache: HashMap<String, Vec<u32>>,
}

impl<'a> CloseAnchors<'a> {
    /// Indexes `anchors` (in any order; duplicates are kept once).
    pub(crate) fn new(anchors: impl IntoIterator<Item = &'a str>) -> Self {
        let mut names: Vec<&str> = anchors.into_iter().collect();
        names.sort_unstable();
        names.dedup();
        let mut index = CloseAnchors {
            names: Vec::new(),
            by_title: HashMap::new(),
            by_letters: HashMap::new(),
            exact: HashMap::new(),
            lengths: Vec::new(),
            reversed: Vec::new(),
            by_piece: HashMap::new(),
            cache: HashMap::new(),
        };
        for (id, &anchor) in names.iter().enumerate() {
            let id = u32::try_from(id).unwrap_or(u32::MAX);
            let title = without_number(anchor);
            if !title.is_empty() {
                index.by_title.entry(title).or_default().push(id);
            }
            if title.len() > 3 {
                index.by_letters.entry(letters(title)).or_default().push(id);
            }
            if anchor.len() > 3 {
                // The slug of a title that starts with punctuation
                // (`-string` of "`//` [string]") ends many fragments
                // without being their title.
                if !anchor.starts_with('-') {
                    index.exact.insert(anchor, id);
                    index.lengths.push(anchor.len());
                }
                index.reversed.push((anchor.bytes().rev().collect(), id));
            }
            let bounds: Vec<usize> = title
                .char_indices()
                .map(|(at, _)| at)
                .chain([title.len()])
                .collect();
            let chars = bounds.len() - 1;
            if chars >= MIN_EDITED {
                for (piece, (from, to)) in pieces(chars).into_iter().enumerate() {
                    let text = &title[bounds[from]..bounds[to]];
                    index
                        .by_piece
                        .entry((chars, piece, text))
                        .or_default()
                        .push(id);
                }
            }
        }
        index.lengths.sort_unstable();
        index.lengths.dedup();
        index.reversed.sort_unstable();
        index.names = names;
        index
    }

    /// The anchors close to `wanted` (a decoded, lower-cased fragment):
    /// the first one in sorted order, and a second one when there is
    /// more than one (then no fix is certain).
    pub(crate) fn close_to(&mut self, wanted: &str) -> Vec<&'a str> {
        let ids = match self.cache.get(wanted) {
            Some(ids) => ids.clone(),
            None => {
                let ids = self.search(wanted);
                self.cache.insert(wanted.to_string(), ids.clone());
                ids
            }
        };
        ids.iter()
            .filter_map(|&id| self.names.get(id as usize).copied())
            .collect()
    }

    /// The two smallest IDs of the close anchors (fewer when there are
    /// fewer).
    fn search(&self, wanted: &str) -> Vec<u32> {
        let mut found: Vec<u32> = Vec::new();
        let mut keep = |ids: &[u32]| found.extend(ids.iter().take(2));
        let w = without_number(wanted);
        // The same title under another number.
        if let Some(ids) = self.by_title.get(w) {
            keep(ids);
        }
        // The same letters with other hyphens (the anchor's title must be
        // over 3 bytes; an empty `w` has no letters any such title has).
        if let Some(ids) = self.by_letters.get(&letters(w)) {
            keep(ids);
        }
        if wanted.len() > 3 {
            // Anchors the fragment ends with.
            let mut budget = MAX_SUFFIX_BYTES;
            for &len in self.lengths.iter().take_while(|&&l| l <= wanted.len()) {
                if len > budget {
                    break;
                }
                budget -= len;
                let at = wanted.len() - len;
                if let Some(&id) = wanted.get(at..).and_then(|s| self.exact.get(s)) {
                    keep(&[id]);
                }
            }
            // Anchors that end with the fragment: a run of the reversed
            // list (not for a fragment that starts with punctuation).
            if !wanted.starts_with('-') {
                let back: Vec<u8> = wanted.bytes().rev().collect();
                let start = self
                    .reversed
                    .partition_point(|(r, _)| r.as_slice() < &back[..]);
                let mut run: Vec<u32> = self.reversed[start..]
                    .iter()
                    .take(MAX_CANDIDATES)
                    .take_while(|(r, _)| r.starts_with(&back))
                    .map(|&(_, id)| id)
                    .collect();
                run.sort_unstable();
                keep(&run);
            }
        }
        found.extend(self.edited(w));
        found.sort_unstable();
        found.dedup();
        found.truncate(2);
        found
    }

    /// Anchors whose title is a few edits from `w` (at most two, smallest
    /// first), through the pieces index.
    fn edited(&self, w: &str) -> Vec<u32> {
        let bounds: Vec<usize> = w
            .char_indices()
            .map(|(at, _)| at)
            .chain([w.len()])
            .collect();
        let w_chars = bounds.len() - 1;
        if w_chars < MIN_EDITED {
            return Vec::new();
        }
        let mut candidates: Vec<u32> = Vec::new();
        let shortest = w_chars.saturating_sub(MAX_EDITS).max(MIN_EDITED);
        for chars in shortest..=w_chars + MAX_EDITS {
            for (piece, (from, to)) in pieces(chars).into_iter().enumerate() {
                for shift in -(MAX_EDITS as isize)..=MAX_EDITS as isize {
                    let (Some(from), Some(to)) =
                        (from.checked_add_signed(shift), to.checked_add_signed(shift))
                    else {
                        continue;
                    };
                    let (Some(&start), Some(&end)) = (bounds.get(from), bounds.get(to)) else {
                        continue;
                    };
                    if let Some(ids) = self.by_piece.get(&(chars, piece, &w[start..end])) {
                        candidates.extend(ids.iter().take(MAX_PIECE_CANDIDATES));
                    }
                }
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut close = Vec::new();
        for &id in candidates.iter().take(MAX_EDIT_COMPARISONS) {
            let Some(a) = self.names.get(id as usize).map(|n| without_number(n)) else {
                continue;
            };
            let limit = edit_limit(a.chars().count().min(w_chars));
            if limit > 0 && distance_within(a, w, limit).is_some() {
                close.push(id);
                if close.len() == 2 {
                    break;
                }
            }
        }
        close
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What comparing with every anchor gives: the reference.
    fn naive<'a>(anchors: &[&'a str], wanted: &str) -> Vec<&'a str> {
        let mut close: Vec<&str> = anchors
            .iter()
            .copied()
            .filter(|a| similar(a, wanted))
            .collect();
        close.sort_unstable();
        close.dedup();
        close.truncate(2);
        close
    }

    #[test]
    fn renamed_titles_are_close_and_unrelated_ones_are_not() {
        assert!(similar("setup", "set-up"));
        assert!(similar("retry-policies", "retry-policy"));
        assert!(similar("3-capacity", "4-capacity"));
        assert!(!similar("scope", "slope"), "too short for an edit");
        assert!(!similar("retry-policy", "error-policy"));
        assert_eq!(distance_within("kitten", "sitting", 3), Some(3));
        assert_eq!(distance_within("kitten", "sitting", 2), None);
        assert_eq!(distance_within("abcdefgh", "abcdefgh", 0), Some(0));
        assert_eq!(distance_within("", "abc", 3), Some(3));
        assert_eq!(distance_within("éé-ab", "ee-ab", 2), Some(2));
    }

    #[test]
    fn the_index_finds_what_a_full_comparison_finds() {
        let anchors = [
            "3-capacity",
            "4-capacity",
            "retry-policies",
            "setup",
            "error-policy",
            "overview",
            "api-overview",
            "installation-guide",
            "configuration-reference",
        ];
        let mut index = CloseAnchors::new(anchors.iter().copied());
        for wanted in [
            "7-capacity",
            "retry-policy",
            "set-up",
            "overview",
            "view",
            "instalation-guide",
            "configuraton-referense",
            "nothing-like-it",
            "api",
            "",
        ] {
            assert_eq!(
                index.close_to(wanted),
                naive(&anchors, wanted),
                "for {wanted:?}"
            );
        }
    }

    proptest! {
        /// On small anchor sets (where no bound is reached), the indexes
        /// answer exactly what comparing with every anchor answers.
        #[test]
        fn indexes_agree_with_the_full_comparison(
            anchors in proptest::collection::vec("[0-9]{0,2}-?[a-eé]{1,4}(-[a-e]{1,5}){0,3}", 1..40),
            wanted in "[0-9]{0,2}-?[a-eé]{1,4}(-[a-e]{1,5}){0,3}",
        ) {
            let refs: Vec<&str> = anchors.iter().map(String::as_str).collect();
            let mut index = CloseAnchors::new(refs.iter().copied());
            prop_assert_eq!(index.close_to(&wanted), naive(&refs, &wanted));
        }

        /// The banded distance agrees with the full one.
        #[test]
        fn banded_distance_is_the_full_distance(a in "[ab-]{0,12}", b in "[ab-]{0,12}", limit in 0usize..4) {
            prop_assert_eq!(distance_within(&a, &b, limit), full_distance(&a, &b).filter(|&d| d <= limit));
        }
    }

    fn full_distance(a: &str, b: &str) -> Option<usize> {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.iter().enumerate() {
            let mut cur = vec![i + 1; b.len() + 1];
            for (j, cb) in b.iter().enumerate() {
                cur[j + 1] = (prev[j] + usize::from(ca != cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1);
            }
            prev = cur;
        }
        prev.last().copied()
    }

    /// A hostile document's anchors all share their pieces: the work per
    /// fragment stays bounded and the answer is still a close anchor.
    #[test]
    fn many_anchors_sharing_pieces_stay_bounded() {
        let owned: Vec<String> = (0..5000)
            .map(|i| format!("section-alpha-bravo-{i:05}"))
            .collect();
        let mut index = CloseAnchors::new(owned.iter().map(String::as_str));
        let started = std::time::Instant::now();
        for i in 0..2000 {
            let got = index.close_to(&format!("section-alpha-bravo-{i:05}x"));
            assert!(!got.is_empty());
            assert!(got
                .iter()
                .all(|a| similar(a, &format!("section-alpha-bravo-{i:05}x"))));
        }
        eprintln!(
            "2000 fragments against 5000 anchors: {:?}",
            started.elapsed()
        );
    }
}
