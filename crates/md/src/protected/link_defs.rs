//! Link reference definitions the parser does not report.
//!
//! pulldown-cmark lists the *first* definition of each label; a later
//! definition with the same label is still a definition (it is not
//! rendered) but is not listed. This scanner finds any line outside every
//! other construct and outside paragraphs that starts like a definition
//! (`[label]:`), footnote definitions (`[^1]:`) excepted.

use super::line_flags::{strip_container_prefix, LineFlags};
use crate::line_index::LineIndex;
use koas_review_schema::stage1::LineNo;

/// A definition-looking line and its label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefLine {
    /// The line it is on (1-based).
    pub line: LineNo,
    /// The label between the brackets.
    pub label: String,
}

/// The label of a line that starts like a link reference definition.
pub fn definition_label(line: &str) -> Option<&str> {
    let s = strip_container_prefix(line);
    let rest = s.strip_prefix('[')?;
    let close = rest.find(']')?;
    let label = &rest[..close];
    let after = &rest[close + 1..];
    let ok = !label.trim().is_empty()
        && !label.starts_with('^')
        && !label.contains('[')
        && after.starts_with(':');
    ok.then_some(label)
}

/// Definition-looking lines that no construct and no paragraph owns.
pub fn find(index: &LineIndex<'_>, owned: &LineFlags) -> Vec<DefLine> {
    (1..=index.line_count())
        .filter(|&l| !owned.get(l))
        .filter_map(|l| {
            definition_label(index.line_text(l)).map(|label| DefLine {
                line: l,
                label: label.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_definition_lines() {
        assert_eq!(definition_label("[ref]: https://x.org"), Some("ref"));
        assert_eq!(definition_label("  > [Doc 2]: <x> \"t\""), Some("Doc 2"));
        assert_eq!(definition_label("[^1]: footnote"), None);
        assert_eq!(definition_label("[link](x): text"), None);
        assert_eq!(definition_label("[]: x"), None);
    }

    #[test]
    fn skips_owned_lines() {
        let idx = LineIndex::new("[a]: x\n[a]: y\n");
        let mut owned = LineFlags::new(2);
        owned.set_range(1, 1);
        assert_eq!(
            find(&idx, &owned),
            vec![DefLine {
                line: 2,
                label: "a".into()
            }]
        );
    }
}
