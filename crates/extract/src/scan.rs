//! A quote-aware scanner for balanced `{…}` / `[…]` regions.
//!
//! Works on bytes: every delimiter it looks at is ASCII, and ASCII bytes
//! never occur inside a multi-byte UTF-8 sequence, so region boundaries are
//! always valid `str` boundaries. Runs in linear time and never recurses.

use std::ops::Range;

/// A region that starts at an opening delimiter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Region {
    /// A balanced region, delimiters included.
    Closed(Range<usize>),
    /// An opening delimiter at this offset that is never closed.
    Unclosed(usize),
}

/// Which delimiters and string quotes a scan honours.
#[derive(Debug, Clone, Copy)]
pub struct Delimiters {
    /// The opening byte, `{` or `[`.
    pub open: u8,
    /// The matching closing byte, `}` or `]`.
    pub close: u8,
    /// Bytes that open and close string literals inside a region.
    pub quotes: &'static [u8],
}

/// JSON objects with standard double-quoted strings.
pub const OBJECT: Delimiters = Delimiters {
    open: b'{',
    close: b'}',
    quotes: b"\"",
};

/// JSON arrays with standard double-quoted strings.
pub const ARRAY: Delimiters = Delimiters {
    open: b'[',
    close: b']',
    quotes: b"\"",
};

/// Finds the outermost regions of `text` delimited by `d`, in order.
///
/// Text outside regions is ignored (quotes there do not count). An opening
/// delimiter that is never closed ends the scan with [`Region::Unclosed`].
pub fn top_level_regions(text: &str, d: Delimiters) -> Vec<Region> {
    let bytes = text.as_bytes();
    let mut regions = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != d.open {
            i += 1;
            continue;
        }
        match region_end(bytes, i, d) {
            Some(end) => {
                regions.push(Region::Closed(i..end));
                i = end;
            }
            None => {
                regions.push(Region::Unclosed(i));
                break;
            }
        }
    }
    regions
}

/// The exclusive end of the balanced region opening at `start`, if it closes.
fn region_end(bytes: &[u8], start: usize, d: Delimiters) -> Option<usize> {
    let mut depth: usize = 0;
    let mut in_string: Option<u8> = None;
    let mut escaped = false;
    for (offset, &b) in bytes[start..].iter().enumerate() {
        if let Some(quote) = in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == quote {
                in_string = None;
            }
            continue;
        }
        if d.quotes.contains(&b) {
            in_string = Some(b);
        } else if b == d.open {
            depth += 1;
        } else if b == d.close {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return Some(start + offset + 1);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_outermost_object() {
        let text = r#"a {"x": {"y": 1}} b {"z": "}"} c"#;
        let regions = top_level_regions(text, OBJECT);
        assert_eq!(regions.len(), 2);
        let Region::Closed(r) = &regions[1] else {
            panic!("second region should close")
        };
        assert_eq!(&text[r.clone()], r#"{"z": "}"}"#);
    }

    #[test]
    fn escaped_quote_does_not_end_a_string() {
        let text = r#"{"a": "say \"}\" now"}"#;
        assert_eq!(
            top_level_regions(text, OBJECT),
            vec![Region::Closed(0..text.len())]
        );
    }

    #[test]
    fn unclosed_region_stops_the_scan() {
        let regions = top_level_regions("x { {} ", OBJECT);
        assert_eq!(regions, vec![Region::Unclosed(2)]);
    }

    #[test]
    fn arrays_are_scanned_with_their_own_delimiters() {
        let regions = top_level_regions("ops: [1, [2], \"]\"] end", ARRAY);
        assert_eq!(regions, vec![Region::Closed(5..18)]);
    }
}
