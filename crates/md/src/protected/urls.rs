//! Bare URLs in plain text (`https://…`, `http://…`, `www.…`), found with
//! the `linkify` crate, which trims trailing punctuation and unbalanced
//! closing brackets the way GFM's autolink extension does.

use linkify::{LinkFinder, LinkKind};
use std::ops::Range;

/// Byte ranges of the bare URLs inside `text[run]`, for each run.
pub fn find(text: &str, runs: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut finder = LinkFinder::new();
    finder.kinds(&[LinkKind::Url]).url_must_have_scheme(false);
    let mut out = Vec::new();
    for run in runs {
        let Some(slice) = text.get(run.clone()) else {
            continue;
        };
        if !slice.contains("://") && !contains_www(slice) {
            continue;
        }
        for link in finder.links(slice) {
            let s = link.as_str();
            if s.contains("://") || s.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("www.")) {
                out.push((run.start + link.start())..(run.start + link.end()));
            }
        }
    }
    out
}

fn contains_www(s: &str) -> bool {
    s.as_bytes()
        .windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"www."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(text: &str) -> Vec<&str> {
        find(text, std::slice::from_ref(&(0..text.len())))
            .into_iter()
            .map(|r| &text[r])
            .collect()
    }

    #[test]
    fn finds_scheme_and_www_urls_without_trailing_punctuation() {
        assert_eq!(
            urls("See https://example.org/a_b?x=1, and www.example.com. Also (http://x.io/p)."),
            vec![
                "https://example.org/a_b?x=1",
                "www.example.com",
                "http://x.io/p"
            ]
        );
    }

    #[test]
    fn ignores_plain_domains_and_files() {
        assert!(urls("Edit config.toml or example.com then run main.rs").is_empty());
    }

    #[test]
    fn offsets_are_relative_to_the_document() {
        let text = "xx see https://ab.org/c";
        let got = find(text, std::slice::from_ref(&(3..text.len())));
        assert_eq!(got, vec![7..text.len()]);
    }
}
