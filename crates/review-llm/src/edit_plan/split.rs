//! Sub-chunks: a chunk larger than `max_edit_chunk_tokens` is reviewed in
//! pieces cut at paragraph boundaries, never inside a protected block, one
//! level only (a paragraph larger than the limit stays whole).

use koas_review_schema::stage1::ProtectedSpans;

use crate::estimate_tokens;

/// A piece of a chunk: the chunk itself, or `{chunk_id}_a`, `_b`, ….
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Its ID.
    pub id: String,
    /// First line (1-based, in the document).
    pub line_start: u32,
    /// Last line (inclusive).
    pub line_end: u32,
}

/// `a`, `b`, …, `z`, `aa`, `ab`, …
fn suffix(mut n: usize) -> String {
    let mut s = Vec::new();
    loop {
        s.push(char::from(b'a' + (n % 26) as u8));
        if n < 26 {
            break;
        }
        n = n / 26 - 1;
    }
    s.iter().rev().collect()
}

/// Cuts lines `line_start..=line_end` of `lines` (the document's lines,
/// index 0 = line 1) into pieces of at most `max_tokens` where paragraph
/// boundaries allow.
pub fn split(
    chunk_id: &str,
    lines: &[&str],
    line_start: u32,
    line_end: u32,
    max_tokens: u32,
    spans: Option<&ProtectedSpans>,
) -> Vec<Piece> {
    let whole = vec![Piece {
        id: chunk_id.to_owned(),
        line_start,
        line_end,
    }];
    let text_of = |a: u32, b: u32| -> String {
        let lo = (a.max(1) - 1) as usize;
        let hi = (b as usize).min(lines.len());
        lines.get(lo..hi).map(|l| l.join("\n")).unwrap_or_default()
    };
    if max_tokens == 0 || estimate_tokens(&text_of(line_start, line_end)) <= max_tokens {
        return whole;
    }
    let protected = |line: u32| spans.is_some_and(|s| s.overlaps_lines(line, line));
    // Paragraphs: maximal runs between blank lines outside protected blocks.
    let mut paragraphs: Vec<(u32, u32)> = Vec::new();
    let mut start = line_start;
    for line in line_start..=line_end {
        let blank = text_of(line, line).trim().is_empty() && !protected(line);
        if blank && line > start && line < line_end {
            paragraphs.push((start, line));
            start = line + 1;
        }
    }
    if start <= line_end {
        paragraphs.push((start, line_end));
    }
    let mut pieces: Vec<(u32, u32)> = Vec::new();
    for (a, b) in paragraphs {
        match pieces.last_mut() {
            Some(last) if estimate_tokens(&text_of(last.0, b)) <= max_tokens => last.1 = b,
            _ => pieces.push((a, b)),
        }
    }
    if pieces.len() < 2 {
        return whole;
    }
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, (a, b))| Piece {
            id: format!("{chunk_id}_{}", suffix(i)),
            line_start: a,
            line_end: b,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::stage1::{BlockKind, ProtectedSpan};

    #[test]
    fn small_chunks_stay_whole_and_large_ones_split_at_paragraphs() {
        let para = "word ".repeat(60); // 75 tokens
        let text = format!("{para}\n\n{para}\n\n{para}\n\n{para}");
        let lines: Vec<&str> = text.split('\n').collect();
        let n = lines.len() as u32;
        assert_eq!(split("c", &lines, 1, n, 1000, None).len(), 1);
        let pieces = split("c", &lines, 1, n, 160, None);
        let ids: Vec<&str> = pieces.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["c_a", "c_b"]);
        assert_eq!((pieces[0].line_start, pieces[0].line_end), (1, 4));
        assert_eq!((pieces[1].line_start, pieces[1].line_end), (5, 7));
        assert_eq!(suffix(26), "aa");
    }

    #[test]
    fn never_inside_a_protected_block() {
        let para = "word ".repeat(60);
        let text = format!("{para}\n\n```\ncode\n\ncode\n```\n\n{para}");
        let lines: Vec<&str> = text.split('\n').collect();
        let spans = ProtectedSpans {
            doc_hash: String::new(),
            line_count: lines.len() as u32,
            blocks: vec![ProtectedSpan::from_lines(BlockKind::CodeFence, 3, 7)],
            inlines: vec![],
        };
        let pieces = split("c", &lines, 1, lines.len() as u32, 80, Some(&spans));
        for p in &pieces {
            assert!(
                !(p.line_start > 3 && p.line_start <= 7),
                "piece starts inside the fence: {pieces:?}"
            );
        }
        assert!(pieces.len() >= 2, "{pieces:?}");
    }
}
