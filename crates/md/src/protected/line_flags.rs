//! A per-line flag set, to mark the lines some construct already owns.

use koas_review_schema::stage1::LineNo;

/// One flag per line of a document.
#[derive(Debug, Clone)]
pub struct LineFlags(Vec<bool>);

impl LineFlags {
    /// All lines unflagged; lines are 1-based, so index 0 is unused.
    pub fn new(line_count: LineNo) -> Self {
        LineFlags(vec![false; line_count as usize + 1])
    }

    /// Flags lines `start..=end` (clamped to the document).
    pub fn set_range(&mut self, start: LineNo, end: LineNo) {
        let end = (end as usize).min(self.0.len().saturating_sub(1));
        for i in (start as usize)..=end {
            if let Some(f) = self.0.get_mut(i) {
                *f = true;
            }
        }
    }

    /// `true` when `line` is flagged.
    pub fn get(&self, line: LineNo) -> bool {
        self.0.get(line as usize).copied().unwrap_or(false)
    }
}

/// The text of a line after its block-quote markers and indentation: the
/// part a block construct would start with.
pub fn strip_container_prefix(line: &str) -> &str {
    let mut s = line.trim_start();
    while let Some(rest) = s.strip_prefix('>') {
        s = rest.trim_start();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_ranges_and_clamps() {
        let mut f = LineFlags::new(5);
        f.set_range(2, 3);
        f.set_range(5, 99);
        let got: Vec<bool> = (0..=6).map(|l| f.get(l)).collect();
        assert_eq!(got, vec![false, false, true, true, false, true, false]);
    }

    #[test]
    fn strips_quotes_and_indentation() {
        assert_eq!(strip_container_prefix("  > >  $$x"), "$$x");
        assert_eq!(strip_container_prefix("text > x"), "text > x");
    }
}
