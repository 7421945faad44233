//! Where a rule applies: the host's blocks, the pieces Vale makes of
//! them, and Vale's scope selectors (`heading.h2`, `~blockquote`,
//! `paragraph & ~list`).

/// What a piece of a document is, as Vale's scopes name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeKind {
    /// A heading of level 1 to 6 (`heading`, `heading.h2`…).
    Heading(u8),
    /// A paragraph (`paragraph`; its sentences are `sentence`).
    Paragraph,
    /// A list item's text (`list`).
    ListItem,
    /// A blockquote's text (`blockquote`).
    Blockquote,
    /// A table cell (`table.cell`; `table.header` for the first row).
    TableCell {
        /// The cell is in the header row.
        header: bool,
    },
}

/// A piece of a document's prose, for the rules whose scope takes it:
/// the host finds them (code, front matter and the like are none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// What it is.
    pub kind: ScopeKind,
    /// Its bytes in the document.
    pub span: std::ops::Range<usize>,
}

/// The names Vale's scopes are made of that a host's blocks can carry.
const SECTIONS: [&str; 16] = [
    "text",
    "heading",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "paragraph",
    "sentence",
    "list",
    "blockquote",
    "table",
    "header",
    "cell",
    "summary",
];

/// `raw` is matched on its own: it is the whole document as written.
const RAW: &str = "raw";

/// The names of a heading's levels.
const LEVELS: [&str; 6] = ["h1", "h2", "h3", "h4", "h5", "h6"];

/// The scope names of the pieces Vale lints of a block of `kind`, in the
/// order it lints them: a paragraph as a whole (`paragraph`), then each
/// of its sentences, then as `text`; any other block once.
pub(crate) fn pieces_of(kind: ScopeKind) -> Vec<Vec<&'static str>> {
    match kind {
        ScopeKind::Heading(level) => {
            let mut names = vec!["text", "heading"];
            if let Some(h) = usize::from(level)
                .checked_sub(1)
                .and_then(|i| LEVELS.get(i))
            {
                names.push(h);
            }
            vec![names]
        }
        ScopeKind::Paragraph => vec![vec!["paragraph"], vec!["sentence"], vec!["text"]],
        ScopeKind::ListItem => vec![vec!["text", "list"]],
        ScopeKind::Blockquote => vec![vec!["text", "blockquote"]],
        ScopeKind::TableCell { header: true } => vec![vec!["text", "table", "header"]],
        ScopeKind::TableCell { header: false } => vec![vec!["text", "table", "cell"]],
    }
}

/// The summary (the paragraphs, list items and blockquotes, one after
/// another) is what Vale's `summary` scope, `metric` and `readability`
/// read.
pub(crate) fn in_summary(kind: ScopeKind) -> bool {
    matches!(
        kind,
        ScopeKind::Paragraph | ScopeKind::ListItem | ScopeKind::Blockquote
    )
}

/// One part of a selector: names that must all be there (or, negated,
/// not all be).
#[derive(Debug, Clone)]
struct Part {
    names: Vec<String>,
    negated: bool,
}

/// A rule's `scope`, read: any of its entries may match, an entry's
/// `&`-joined parts must all.
#[derive(Debug, Clone)]
pub(crate) struct RuleScope {
    entries: Vec<Vec<Part>>,
}

impl RuleScope {
    /// Reads a rule's scope entries; also gives the entries naming a
    /// scope no host block can be (`alt`, `table.caption`, a format such
    /// as `md`), which then never match.
    pub(crate) fn parse(scopes: &[String]) -> (RuleScope, Vec<String>) {
        let mut unknown = Vec::new();
        let entries = scopes
            .iter()
            .map(|entry| {
                let parts: Vec<Part> = entry
                    .split('&')
                    .map(|part| {
                        let part = part.trim();
                        let (negated, body) = match part.strip_prefix('~') {
                            Some(rest) => (true, rest),
                            None => (false, part),
                        };
                        Part {
                            names: body.split('.').map(|n| n.trim().to_owned()).collect(),
                            negated,
                        }
                    })
                    .collect();
                let known = parts.iter().all(|p| {
                    p.names
                        .iter()
                        .all(|n| SECTIONS.contains(&n.as_str()) || n == RAW)
                });
                if !known {
                    unknown.push(entry.clone());
                }
                parts
            })
            .collect();
        (RuleScope { entries }, unknown)
    }

    /// Whether a piece named `names` is in the scope, as Vale matches
    /// selectors: a part's names must all be among the piece's, a negated
    /// part's not all; a negated part alone never takes the sized pieces
    /// (`raw`, `summary`).
    pub(crate) fn takes(&self, names: &[&str]) -> bool {
        let sized = names.contains(&RAW) || names.contains(&"summary");
        self.entries.iter().any(|parts| {
            parts.iter().all(|part| {
                let all_there = part.names.iter().all(|n| names.contains(&n.as_str()));
                if part.negated {
                    !all_there && !sized
                } else {
                    all_there
                }
            })
        })
    }

    /// Whether the scope takes the whole document as written.
    pub(crate) fn takes_raw(&self) -> bool {
        self.takes(&[RAW])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(entries: &[&str]) -> RuleScope {
        let owned: Vec<String> = entries.iter().map(|s| (*s).to_owned()).collect();
        RuleScope::parse(&owned).0
    }

    #[test]
    fn selectors_match_as_vales_do() {
        let h2 = &pieces_of(ScopeKind::Heading(2))[0];
        let cell = &pieces_of(ScopeKind::TableCell { header: false })[0];
        let item = &pieces_of(ScopeKind::ListItem)[0];
        assert!(scope(&["heading"]).takes(h2));
        assert!(scope(&["heading.h2"]).takes(h2));
        assert!(!scope(&["heading.h1"]).takes(h2));
        assert!(scope(&["text"]).takes(cell));
        assert!(!scope(&["table.header"]).takes(cell));
        assert!(scope(&["~heading"]).takes(item));
        assert!(!scope(&["~heading"]).takes(h2));
        assert!(!scope(&["~heading"]).takes(&["summary"]));
        assert!(scope(&["text & ~list"]).takes(cell));
        assert!(!scope(&["text & ~list"]).takes(item));
        assert!(scope(&["raw"]).takes_raw());
        assert!(!scope(&["text"]).takes_raw());
    }

    #[test]
    fn a_paragraph_is_linted_whole_by_sentence_and_as_text() {
        let pieces = pieces_of(ScopeKind::Paragraph);
        let sentence = scope(&["sentence"]);
        assert_eq!(pieces.iter().filter(|p| sentence.takes(p)).count(), 1);
        assert!(!sentence.takes(&pieces_of(ScopeKind::ListItem)[0]));
        assert!(!scope(&["paragraph"]).takes(&pieces_of(ScopeKind::Blockquote)[0]));
    }

    #[test]
    fn scopes_no_block_can_be_are_named() {
        let owned = vec!["alt".to_owned(), "heading".to_owned(), "text.md".to_owned()];
        let (_, unknown) = RuleScope::parse(&owned);
        assert_eq!(unknown, ["alt", "text.md"]);
        assert_eq!(pieces_of(ScopeKind::Heading(9))[0], ["text", "heading"]);
    }
}
