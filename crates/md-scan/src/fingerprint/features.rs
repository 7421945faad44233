//! The structural features of a chunk: the counts that predict whether a
//! model will stumble on it, computed without any LLM.

use crate::config::FingerprintConfig;
use crate::document::Document;
use crate::tables::Table;
use crate::words::at_word_boundaries;
use crate::ScanError;
use koas_review_schema::fingerprint::ChunkFeatures;
use koas_review_schema::stage1::{BlockKind, InlineKind};
use regex::Regex;
use unicode_properties::UnicodeEmoji;

/// Counts features with the safety keywords compiled once.
pub struct FeatureCounter {
    safety: Option<Regex>,
}

fn is_bullet(line: &str) -> bool {
    let s = line.trim_start_matches([' ', '\t', '>']).trim_start();
    let mut chars = s.chars();
    match chars.next() {
        Some('-' | '*' | '+') => chars.next().is_some_and(|c| c == ' ' || c == '\t'),
        Some(c) if c.is_ascii_digit() => {
            let rest = s.trim_start_matches(|c: char| c.is_ascii_digit());
            let digits = s.len() - rest.len();
            digits <= 9
                && (rest.starts_with(". ") || rest.starts_with(") ") || rest == "." || rest == ")")
        }
        _ => false,
    }
}

/// The first index in `0..len` where `pred` turns false (`pred` must be
/// true then false along the index, as for a sorted list).
fn partition(len: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

fn is_emoji(c: char) -> bool {
    !c.is_ascii() && c.is_emoji_char()
}

impl FeatureCounter {
    /// Compiles the safety keywords.
    pub fn new(config: &FingerprintConfig) -> Result<Self, ScanError> {
        let mut keywords: Vec<&str> = config
            .safety_keywords
            .iter()
            .map(|w| w.trim())
            .filter(|w| !w.is_empty())
            .collect();
        // Longest first: the regex takes the first alternative that
        // matches, and "exploit" must not hide "exploits".
        keywords.sort_by_key(|w| std::cmp::Reverse(w.len()));
        let words: Vec<String> = keywords
            .iter()
            .map(|w| {
                w.split_whitespace()
                    .map(regex::escape)
                    .collect::<Vec<_>>()
                    .join(r"\s+")
            })
            .collect();
        let safety = if words.is_empty() {
            None
        } else {
            let pattern = format!(r"(?i)(?:{})", words.join("|"));
            Some(Regex::new(&pattern).map_err(|e| ScanError::InvalidPattern {
                key: "safety_keywords".into(),
                pattern,
                reason: e.to_string(),
            })?)
        };
        Ok(FeatureCounter { safety })
    }

    /// The features of lines `start..=end`.
    pub fn count(
        &self,
        doc: &Document<'_>,
        tables: &[Table],
        start: u32,
        end: u32,
        tokens: u32,
    ) -> ChunkFeatures {
        let mut f = ChunkFeatures {
            content_tokens: tokens,
            ..ChunkFeatures::default()
        };
        // Tables, blocks and inline spans are sorted by line: take the slice
        // starting in the chunk (a scan of the whole list per chunk would be
        // quadratic on large documents).
        let in_chunk = |first: &dyn Fn(usize) -> u32, len: usize| {
            let lo = partition(len, |i| first(i) < start);
            let hi = partition(len, |i| first(i) <= end);
            lo..hi.max(lo)
        };
        for t in &tables[in_chunk(&|i| tables[i].line_start, tables.len())] {
            f.table_count += 1;
            f.table_rows += t.rows.len() as u32;
        }
        let protected = doc.stage1.protected;
        let blocks = &protected.blocks;
        for b in &blocks[in_chunk(&|i| blocks[i].line_start, blocks.len())] {
            match b.kind {
                BlockKind::MathBlock => f.math_count += 1,
                BlockKind::CodeFence => f.code_fence_count += 1,
                _ => {}
            }
        }
        let inlines = &protected.inlines;
        f.math_count += inlines[in_chunk(&|i| inlines[i].line, inlines.len())]
            .iter()
            .filter(|s| s.kind == InlineKind::InlineMath)
            .count() as u32;
        let (mut digits, mut visible) = (0u64, 0u64);
        for line in start..=end.min(doc.line_count()) {
            let text = doc.line(line);
            for c in text.chars() {
                if c.is_whitespace() {
                    continue;
                }
                visible += 1;
                if c.is_ascii_digit() {
                    digits += 1;
                }
                if is_emoji(c) {
                    f.emoji_count += 1;
                }
            }
            if let Some(re) = &self.safety {
                f.safety_keyword_hits += re
                    .find_iter(text)
                    .filter(|m| at_word_boundaries(text, m.start(), m.end()))
                    .count() as u32;
            }
            let kind = doc.block_kind(line);
            let in_code = matches!(
                kind,
                Some(
                    BlockKind::CodeFence
                        | BlockKind::IndentedCode
                        | BlockKind::HtmlBlock
                        | BlockKind::MathBlock
                        | BlockKind::YamlFrontMatter
                        | BlockKind::TomlFrontMatter
                )
            );
            let quoted = text.trim_start_matches([' ', '\t']).starts_with('>');
            // Inside code, a `>` line is quoted only when the block itself
            // sits in a block quote (its first line starts with `>`).
            if quoted
                && (!in_code
                    || protected
                        .block_at_line(line)
                        .is_some_and(|b| doc.line(b.line_start).trim_start().starts_with('>')))
            {
                f.blockquote_lines += 1;
            }
            if !in_code && kind != Some(BlockKind::Table) && is_bullet(text) {
                f.bullet_count += 1;
            }
        }
        if visible > 0 {
            let density = digits as f64 / visible as f64;
            f.digit_density = (density * 10_000.0).round() / 10_000.0;
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;
    use crate::tables::find_tables;

    fn features(text: &str) -> ChunkFeatures {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let tables = find_tables(&doc);
        FeatureCounter::new(&FingerprintConfig::default())
            .expect("compiles")
            .count(&doc, &tables, 1, doc.line_count(), 7)
    }

    #[test]
    fn counts_every_feature() {
        let text = "# T 🚀\n\n- one\n* two\n1. three\n\n> quote ✅\n> more\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n\
                    Math $x^2$ and $y$.\n\n$$\nz\n$$\n\n```\n- not a bullet\n> not a quote\n```\n\nAn attack with a password.\n";
        let f = features(text);
        assert_eq!(f.table_rows, 2);
        assert_eq!(f.table_count, 1);
        assert_eq!(f.math_count, 3);
        assert_eq!(f.emoji_count, 2);
        assert_eq!(f.bullet_count, 3);
        assert_eq!(f.blockquote_lines, 2);
        assert_eq!(f.safety_keyword_hits, 2);
        let words = features("Attacks, exploits and passwords2 or xattack.\n");
        assert_eq!(words.safety_keyword_hits, 2);
        assert_eq!(f.code_fence_count, 1);
        assert_eq!(f.content_tokens, 7);
        assert!(
            f.digit_density > 0.0 && f.digit_density < 0.2,
            "{}",
            f.digit_density
        );
    }

    #[test]
    fn digits_only_give_density_one_and_empty_gives_zero() {
        assert_eq!(features("123 456\n").digit_density, 1.0);
        assert_eq!(features("\n\n").digit_density, 0.0);
    }

    #[test]
    fn bullets_need_a_space_after_the_marker() {
        assert!(is_bullet("- a") && is_bullet("  12. b") && is_bullet("> * c") && is_bullet("3)"));
        assert!(
            !is_bullet("-a")
                && !is_bullet("**bold**")
                && !is_bullet("2024 roadmap")
                && !is_bullet("1.5 x")
        );
    }
}
