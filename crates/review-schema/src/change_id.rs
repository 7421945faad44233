//! Change IDs: `RVW-NNNN`, allocated by the engine, never taken from outside.
//!
//! The number is zero-padded to at least 4 digits and grows past 9999
//! (`RVW-10000`). Sequence numbers start at 1. A revert is recorded under
//! the ID `REVERT-RVW-NNNN` of the change it undoes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

/// Prefix of a change ID.
pub const CHANGE_PREFIX: &str = "RVW-";
/// Prefix of a revert entry ID (followed by the reverted change ID).
pub const REVERT_PREFIX: &str = "REVERT-";

/// A canonical change ID, `RVW-NNNN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChangeId(u32);

/// Why a string is not a canonical ID.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum IdError {
    /// The text does not have the `RVW-NNNN` shape.
    #[error(
        "'{0}' is not a change ID: expected RVW- followed by at least 4 digits, e.g. RVW-0001"
    )]
    Malformed(String),
    /// The number is zero or padded with extra zeros.
    #[error("'{0}' is not canonical: the number must be at least 1 and zero-padded to exactly 4 digits below 10000")]
    NotCanonical(String),
    /// The sequence would overflow.
    #[error("change ID sequence exhausted after RVW-{0}")]
    Exhausted(u32),
}

impl ChangeId {
    /// The ID with sequence number `seq` (must be at least 1).
    pub fn new(seq: u32) -> Option<Self> {
        (seq >= 1).then_some(ChangeId(seq))
    }

    /// The first ID, `RVW-0001`.
    pub fn first() -> Self {
        ChangeId(1)
    }

    /// The sequence number: 34 for `RVW-0034`.
    pub fn seq(self) -> u32 {
        self.0
    }

    /// The following ID.
    pub fn next(self) -> Result<Self, IdError> {
        self.0
            .checked_add(1)
            .map(ChangeId)
            .ok_or(IdError::Exhausted(self.0))
    }

    /// Parses a canonical ID: `RVW-` then 4 digits (`0001`–`9999`) or more
    /// digits without a leading zero.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        let digits = text
            .strip_prefix(CHANGE_PREFIX)
            .filter(|d| d.len() >= 4 && d.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| IdError::Malformed(text.to_owned()))?;
        if digits.len() > 4 && digits.starts_with('0') {
            return Err(IdError::NotCanonical(text.to_owned()));
        }
        let seq: u32 = digits
            .parse()
            .map_err(|_| IdError::Malformed(text.to_owned()))?;
        ChangeId::new(seq).ok_or_else(|| IdError::NotCanonical(text.to_owned()))
    }

    /// Every change ID mentioned anywhere in `text` (canonical or not
    /// padded the usual way), as sequence numbers. Used to keep allocation
    /// past IDs seen in patches and logs.
    pub fn scan(text: &str) -> impl Iterator<Item = ChangeId> + '_ {
        text.match_indices(CHANGE_PREFIX)
            .filter_map(move |(at, _)| {
                let rest = &text[at + CHANGE_PREFIX.len()..];
                let len = rest.bytes().take_while(u8::is_ascii_digit).count();
                if len < 4 {
                    return None;
                }
                rest[..len].parse::<u32>().ok().and_then(ChangeId::new)
            })
    }
}

impl fmt::Display for ChangeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{CHANGE_PREFIX}{:04}", self.0)
    }
}

impl FromStr for ChangeId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ChangeId::parse(s)
    }
}

impl Serialize for ChangeId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ChangeId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ChangeId::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The ID of a ledger entry: a change, or the revert of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntryId {
    /// `RVW-NNNN`: an applied change or a flag.
    Change(ChangeId),
    /// `REVERT-RVW-NNNN`: the revert of that change.
    Revert(ChangeId),
}

impl EntryId {
    /// Parses `RVW-NNNN` or `REVERT-RVW-NNNN`.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        match text.strip_prefix(REVERT_PREFIX) {
            Some(rest) => ChangeId::parse(rest).map(EntryId::Revert),
            None => ChangeId::parse(text).map(EntryId::Change),
        }
    }

    /// The change this entry is about (the reverted one for a revert).
    pub fn change(self) -> ChangeId {
        match self {
            EntryId::Change(id) | EntryId::Revert(id) => id,
        }
    }

    /// True for `REVERT-…` IDs.
    pub fn is_revert(self) -> bool {
        matches!(self, EntryId::Revert(_))
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntryId::Change(id) => write!(f, "{id}"),
            EntryId::Revert(id) => write!(f, "{REVERT_PREFIX}{id}"),
        }
    }
}

impl Serialize for EntryId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for EntryId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        EntryId::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Hands out IDs in sequence, continuing after the highest one seen.
#[derive(Debug, Clone)]
pub struct IdAllocator {
    next: ChangeId,
    exhausted: bool,
}

impl IdAllocator {
    /// An allocator whose first ID follows every ID in `seen`.
    pub fn after<I: IntoIterator<Item = ChangeId>>(seen: I) -> Result<Self, IdError> {
        let next = match seen.into_iter().max() {
            Some(max) => max.next()?,
            None => ChangeId::first(),
        };
        Ok(IdAllocator {
            next,
            exhausted: false,
        })
    }

    /// An allocator starting exactly at `next`.
    pub fn starting_at(next: ChangeId) -> Self {
        IdAllocator {
            next,
            exhausted: false,
        }
    }

    /// The ID the next call to [`IdAllocator::allocate`] returns.
    pub fn peek(&self) -> ChangeId {
        self.next
    }

    /// Returns the next ID and advances.
    pub fn allocate(&mut self) -> Result<ChangeId, IdError> {
        if self.exhausted {
            return Err(IdError::Exhausted(self.next.0));
        }
        let id = self.next;
        match id.next() {
            Ok(next) => self.next = next,
            Err(_) => self.exhausted = true,
        }
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn display_pads_to_four_and_grows() {
        assert_eq!(ChangeId(34).to_string(), "RVW-0034");
        assert_eq!(ChangeId(9999).to_string(), "RVW-9999");
        assert_eq!(ChangeId(10000).to_string(), "RVW-10000");
    }

    #[test]
    fn parse_is_strict() {
        assert_eq!(ChangeId::parse("RVW-0034"), Ok(ChangeId(34)));
        assert_eq!(ChangeId::parse("RVW-12345"), Ok(ChangeId(12345)));
        for bad in [
            "RVW-34",
            "rvw-0034",
            "RVW-00034",
            "RVW-0000",
            "RVW-00a1",
            "X",
            "",
        ] {
            assert!(ChangeId::parse(bad).is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn entry_ids_round_trip() {
        let revert = EntryId::parse("REVERT-RVW-0007").unwrap();
        assert_eq!(revert, EntryId::Revert(ChangeId(7)));
        assert_eq!(revert.to_string(), "REVERT-RVW-0007");
        assert!(EntryId::parse("REVERT-REVERT-RVW-0007").is_err());
        let json = serde_json::to_string(&revert).unwrap();
        assert_eq!(json, "\"REVERT-RVW-0007\"");
        assert_eq!(serde_json::from_str::<EntryId>(&json).unwrap(), revert);
    }

    #[test]
    fn allocation_continues_after_highest() {
        let mut alloc = IdAllocator::after([ChangeId(3), ChangeId(12), ChangeId(5)]).unwrap();
        assert_eq!(alloc.allocate().unwrap(), ChangeId(13));
        assert_eq!(alloc.allocate().unwrap(), ChangeId(14));
        let mut empty = IdAllocator::after([]).unwrap();
        assert_eq!(empty.allocate().unwrap(), ChangeId(1));
        let mut last = IdAllocator::starting_at(ChangeId(u32::MAX));
        assert!(last.allocate().is_ok());
        assert!(last.allocate().is_err());
    }

    #[test]
    fn scan_finds_ids_in_text() {
        let found: Vec<_> = ChangeId::scan("x RVW-0002.patch REVERT-RVW-0010 RVW-12 RVW-10001")
            .map(ChangeId::seq)
            .collect();
        assert_eq!(found, vec![2, 10, 10001]);
    }

    proptest! {
        #[test]
        fn display_parse_round_trip(seq in 1u32..=u32::MAX) {
            let id = ChangeId(seq);
            prop_assert_eq!(ChangeId::parse(&id.to_string()), Ok(id));
        }
    }
}
