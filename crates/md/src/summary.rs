//! One-line kernel summaries (under 500 chars) for people.

use crate::structure::Structure;
use koas_review_schema::stage1::{
    ChunkPlan, FileStats, LineEndingStyle, ProtectedSpans, ProtectedSummary,
};

/// Longest summary the host keeps.
const MAX: usize = 480;

fn cut(s: String) -> String {
    if s.chars().count() <= MAX {
        return s;
    }
    let mut out: String = s.chars().take(MAX - 1).collect();
    out.push('…');
    out
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1024 * 1024 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `md_inventory`: size, lines, hash, front matter, fences, tables.
pub fn inventory(stats: &FileStats) -> String {
    let hash = stats.sha256.get(..19).unwrap_or(&stats.sha256);
    let mut parts = vec![format!(
        "{}, {}, {hash}…",
        plural(u64::from(stats.lines), "line", "lines"),
        size(stats.bytes)
    )];
    if let Some(fm) = &stats.front_matter {
        let fmt = match fm.format {
            koas_review_schema::stage1::FrontMatterFormat::Yaml => "YAML",
            koas_review_schema::stage1::FrontMatterFormat::Toml => "TOML",
        };
        parts.push(format!(
            "{fmt} front matter (lines {}–{})",
            fm.line_start, fm.line_end
        ));
    }
    parts.push(plural(u64::from(stats.headings), "heading", "headings"));
    parts.push(plural(
        u64::from(stats.code_fences),
        "code fence",
        "code fences",
    ));
    parts.push(plural(u64::from(stats.tables), "table", "tables"));
    match stats.line_endings.style {
        LineEndingStyle::Crlf => parts.push("CRLF line endings".into()),
        LineEndingStyle::Mixed => parts.push("mixed LF/CRLF line endings".into()),
        _ => {}
    }
    if stats.has_bom {
        parts.push("UTF-8 BOM".into());
    }
    cut(parts.join(", "))
}

/// `md_structure`: headings, depth, duplicates, numbering.
pub fn structure(s: &Structure) -> String {
    let t = &s.tree;
    let numbered = s
        .sections
        .sections
        .iter()
        .filter(|e| e.numbering.is_some())
        .count() as u64;
    let dups: usize = s
        .anchors
        .duplicates
        .iter()
        .map(|d| d.anchors.len() - 1)
        .sum();
    let mut out = format!(
        "{}, {} (max depth {}, deepest level H{}), {} top-level",
        plural(u64::from(t.line_count), "line", "lines"),
        plural(u64::from(t.heading_count), "heading", "headings"),
        t.max_depth,
        t.max_level,
        t.roots.len()
    );
    out.push_str(&format!(
        ", {}, {} explicitly numbered",
        plural(dups as u64, "duplicate anchor", "duplicate anchors"),
        numbered
    ));
    if let Some(p) = &t.preamble {
        out.push_str(&format!(", preamble lines {}–{}", p.line_start, p.line_end));
    }
    cut(out)
}

/// `md_protected_regions`: blocks per kind, lines covered, inline spans.
pub fn protected(spans: &ProtectedSpans, summary: &ProtectedSummary) -> String {
    let kinds = |inline: bool| -> String {
        summary
            .by_kind
            .iter()
            .filter(|(k, _)| {
                let is_inline = matches!(
                    k.as_str(),
                    "inline_code" | "inline_math" | "autolink" | "bare_url"
                );
                is_inline == inline
            })
            .map(|(k, c)| format!("{} {k}", c.count))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = format!(
        "{} over {} of {}",
        plural(
            u64::from(summary.block_count),
            "protected block",
            "protected blocks"
        ),
        plural(u64::from(summary.protected_lines), "line", "lines"),
        spans.line_count
    );
    let b = kinds(false);
    if !b.is_empty() {
        out.push_str(&format!(" ({b})"));
    }
    out.push_str(&format!(
        "; {}",
        plural(
            u64::from(summary.inline_count),
            "inline span",
            "inline spans"
        )
    ));
    let i = kinds(true);
    if !i.is_empty() {
        out.push_str(&format!(" ({i})"));
    }
    cut(out)
}

/// `md_chunk`: number of chunks, budget, sizes, oversized ones.
pub fn chunks(plan: &ChunkPlan) -> String {
    let n = plan.chunks.len() as u64;
    let total: u64 = plan
        .chunks
        .iter()
        .map(|c| u64::from(c.token_estimate))
        .sum();
    let largest = plan
        .chunks
        .iter()
        .map(|c| c.token_estimate)
        .max()
        .unwrap_or(0);
    let oversized = plan.chunks.iter().filter(|c| c.oversized).count() as u64;
    let overlapping = plan
        .chunks
        .iter()
        .filter(|c| c.overlap_line_start.is_some())
        .count() as u64;
    let sections = {
        let mut ids: Vec<&str> = plan.chunks.iter().map(|c| c.section_id.as_str()).collect();
        ids.dedup();
        ids.len() as u64
    };
    cut(format!(
        "{} over {} (budget {} tokens, overlap {}): ~{total} tokens, mean {}, largest {largest}, {} oversized, {} with overlap",
        plural(n, "chunk", "chunks"),
        plural(sections, "section", "sections"),
        plan.config.max_chunk_tokens,
        plan.config.overlap_tokens,
        total.checked_div(n).unwrap_or(0),
        oversized,
        overlapping
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage1;
    use koas_review_schema::stage1::ChunkConfig;

    #[test]
    fn summaries_are_short_and_informative() {
        let text = "\u{feff}---\r\nt: x\r\n---\r\n# A\r\n## A\r\n```\r\nx\r\n```\r\n## 1.2 B\r\nuse `x`\r\n";
        let s = stage1::run("d.md", text, ChunkConfig::default()).expect("runs");
        let inv = inventory(&s.stats);
        assert!(inv.starts_with("10 lines, "), "{inv}");
        assert!(
            inv.contains("YAML front matter (lines 1–3)") && inv.contains("1 code fence"),
            "{inv}"
        );
        assert!(inv.contains("CRLF") && inv.contains("BOM"), "{inv}");
        let st = structure(&s.structure);
        assert!(
            st.contains("3 headings (max depth 2") && st.contains("1 duplicate anchor,"),
            "{st}"
        );
        assert!(st.contains("1 explicitly numbered"), "{st}");
        let sum = crate::protected::summarize(&s.spans);
        let pr = protected(&s.spans, &sum);
        assert!(
            pr.contains("2 protected blocks") && pr.contains("1 code_fence"),
            "{pr}"
        );
        assert!(pr.contains("1 inline span (1 inline_code)"), "{pr}");
        let ch = chunks(&s.chunks);
        assert!(ch.starts_with("4 chunks over 4 sections"), "{ch}");
        for s in [inv, st, pr, ch] {
            assert!(s.chars().count() < 500);
        }
    }

    #[test]
    fn long_summaries_are_cut() {
        assert_eq!(cut("x".repeat(2000)).chars().count(), MAX);
    }
}
