//! Broken link fragments: `[x](#anchor)` where no heading of the document
//! has that anchor (nor an HTML `id`/`name`, nor a heading nested in a
//! quote or list). The comparison ignores case and percent-encoding, as
//! browsers and GitHub resolve them.

use super::KERNEL;
use crate::document::Document;
use crate::markdown::MarkdownFacts;
use koas_review_schema::findings::{Finding, FindingKind};

/// Decodes `%XX` escapes (invalid ones are kept as written).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(v) = u8::from_str_radix(s.get(i + 1..i + 3).unwrap_or(""), 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

/// The anchor without a leading section number (`3-capacity` → `capacity`).
fn without_number(anchor: &str) -> &str {
    anchor.trim_start_matches(|c: char| c.is_ascii_digit() || c == '-')
}

/// `true` when `anchor` is probably what `wanted` meant: the same words
/// under another number, or one ending with the other.
fn similar(anchor: &str, wanted: &str) -> bool {
    let (a, w) = (without_number(anchor), without_number(wanted));
    (!a.is_empty() && a == w)
        || (anchor.len() > 3
            && wanted.len() > 3
            && (anchor.ends_with(wanted) || wanted.ends_with(anchor)))
}

/// Reports same-document links whose fragment names no anchor.
pub fn detect(doc: &Document<'_>, facts: &MarkdownFacts, out: &mut Vec<Finding>) {
    let anchors = &doc.stage1.anchors.anchors;
    let known_lower: std::collections::HashSet<String> = anchors
        .keys()
        .chain(facts.extra_anchors.iter())
        .map(|a| a.to_lowercase())
        .collect();
    for link in &facts.fragment_links {
        if link.fragment.is_empty()
            || (link.line..=link.line_end).any(|l| doc.block_kind(l).is_some())
        {
            continue;
        }
        let decoded = percent_decode(&link.fragment).to_lowercase();
        if known_lower.contains(&decoded) {
            continue;
        }
        let hint = anchors
            .keys()
            .find(|a| similar(a, &decoded))
            .map(|a| format!("; did you mean #{a}?"))
            .unwrap_or_default();
        out.push(Finding::new(
            FindingKind::BrokenLinkAnchor,
            KERNEL,
            link.line,
            link.line_end,
            format!(
                "The link points to #{}, but no heading of this document has that anchor{hint}",
                link.fragment
            ),
            &link.source,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;
    use crate::markdown;

    fn scan(text: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let facts = markdown::collect(&doc);
        let mut out = Vec::new();
        detect(&doc, &facts, &mut out);
        out
    }

    #[test]
    fn missing_anchors_are_reported_with_a_hint() {
        let found = scan("# T\n\n## 3. Capacity\n\nSee [cap](#3-capacity), [retry](#retry-policy) and [x](#7-capacity).\n");
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].line, 5);
        assert!(found[0].evidence.contains("(#retry-policy)"));
        assert!(
            found[1].message.contains("did you mean #3-capacity"),
            "{}",
            found[1].message
        );
    }

    #[test]
    fn case_percent_encoding_html_ids_and_empty_fragments_resolve() {
        let text = "# Été Résumé\n\n<a id=\"custom\"></a>\n\n[a](#%C3%A9t%C3%A9-r%C3%A9sum%C3%A9) [b](#Ete-X) [c](#custom) [d](#) `[e](#nope)`\n";
        let found = scan(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("#Ete-X"));
    }

    #[test]
    fn percent_decoding_keeps_invalid_escapes() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
