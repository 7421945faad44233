//! Quoted text. A phrase in quotation marks is *mentioned*, not used: a
//! document that lists the AI-leftover patterns ("As an AI", "Certainly!")
//! or shows an example reference ("see Section 4.2") is not at fault.
//! Straight double quotes pair up in order on a line; curly quotes and
//! guillemets pair with their closing mark. Single quotes are not
//! considered (they are apostrophes in French and English).

/// Byte ranges `(open, close)` of the quoted parts of `line`, quote marks
/// included.
pub fn quoted_ranges(line: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut straight: Option<usize> = None;
    let mut curly: Option<usize> = None;
    let mut guillemet: Option<usize> = None;
    for (i, c) in line.char_indices() {
        match c {
            '"' => match straight.take() {
                Some(open) => ranges.push((open, i + 1)),
                None => straight = Some(i),
            },
            '“' => curly = Some(i),
            '”' => {
                if let Some(open) = curly.take() {
                    ranges.push((open, i + c.len_utf8()));
                }
            }
            '«' => guillemet = Some(i),
            '»' => {
                if let Some(open) = guillemet.take() {
                    ranges.push((open, i + c.len_utf8()));
                }
            }
            _ => {}
        }
    }
    ranges
}

/// `true` when `start..end` lies inside one of `ranges`.
pub fn is_quoted(ranges: &[(usize, usize)], start: usize, end: usize) -> bool {
    ranges
        .iter()
        .any(|&(open, close)| open < start && end < close)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pairs_straight_curly_and_guillemets() {
        let line = r#"patterns: "As an AI", “Certainly!” and « voir §3 » but not this"#;
        let r = quoted_ranges(line);
        assert_eq!(r.len(), 3);
        let pos = |s: &str| line.find(s).unwrap_or(0);
        assert!(is_quoted(&r, pos("As an AI"), pos("As an AI") + 8));
        assert!(is_quoted(&r, pos("Certainly!"), pos("Certainly!") + 10));
        assert!(is_quoted(
            &r,
            pos("voir §3"),
            pos("voir §3") + "voir §3".len()
        ));
        assert!(!is_quoted(&r, pos("not this"), pos("not this") + 8));
    }

    #[test]
    fn an_unpaired_quote_quotes_nothing() {
        assert!(quoted_ranges(r#"He said "Certainly! and left"#).is_empty());
        assert!(quoted_ranges("l'audit, here's").is_empty());
    }

    proptest! {
        #[test]
        fn ranges_are_ordered_and_on_char_boundaries(line in "\\PC{0,80}") {
            for (open, close) in quoted_ranges(&line) {
                prop_assert!(open < close && close <= line.len());
                prop_assert!(line.is_char_boundary(open) && line.is_char_boundary(close));
            }
        }
    }
}
