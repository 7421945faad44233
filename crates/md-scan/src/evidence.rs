//! Short evidence strings cut around a match.

use koas_review_schema::findings::clip_evidence;

/// How many characters of context to keep on each side of a match.
const CONTEXT_CHARS: usize = 60;

/// The trimmed `line`, cut to about [`CONTEXT_CHARS`] characters on each
/// side of the byte range `start..end` (with `…` where cut).
pub fn around(line: &str, start: usize, end: usize) -> String {
    let start = floor_boundary(line, start.min(line.len()));
    let end = floor_boundary(line, end.clamp(start, line.len()));
    // Only the context kept is looked at: a match on a 1 MB line costs
    // what it costs on a short one.
    let mut before: Vec<char> = line[..start]
        .chars()
        .rev()
        .take(CONTEXT_CHARS + 1)
        .collect();
    before.reverse();
    let after: Vec<char> = line[end..].chars().take(CONTEXT_CHARS + 1).collect();
    let mut out = String::new();
    if before.len() > CONTEXT_CHARS {
        out.push('…');
        out.extend(&before[before.len() - CONTEXT_CHARS..]);
    } else {
        out.extend(&before);
    }
    out.push_str(&line[start..end]);
    if after.len() > CONTEXT_CHARS {
        out.extend(&after[..CONTEXT_CHARS]);
        out.push('…');
    } else {
        out.extend(&after);
    }
    clip_evidence(&out)
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keeps_short_lines_whole_and_cuts_long_ones() {
        assert_eq!(around("  see §5.3 here ", 6, 11), "see §5.3 here");
        let long = format!("{}MATCH{}", "a".repeat(100), "b".repeat(100));
        let ev = around(&long, 100, 105);
        assert!(
            ev.starts_with('…') && ev.ends_with('…') && ev.contains("MATCH"),
            "{ev}"
        );
    }

    proptest! {
        #[test]
        fn never_panics_and_keeps_the_match(line in "\\PC{0,200}", a in 0usize..300, b in 0usize..300) {
            let (s, e) = (a.min(b), a.max(b));
            let ev = around(&line, s, e);
            prop_assert!(ev.chars().count() <= koas_review_schema::findings::MAX_EVIDENCE_CHARS);
        }
    }
}
