//! A change's forward patch, side by side: rows, the changed words
//! highlighted, long lines and diffs cut.

use super::*;

/// Cuts `text` at `max` characters.
pub(super) fn clip(text: &str, max: usize) -> (&str, bool) {
    match text.char_indices().nth(max) {
        Some((at, _)) => (&text[..at], true),
        None => (text, false),
    }
}

/// A line without its terminator.
pub(super) fn bare(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// One side-by-side row.
pub(super) struct Row<'t> {
    old: Option<(usize, &'t str)>,
    new: Option<(usize, &'t str)>,
    changed: bool,
}

/// The rows of a unified diff, side by side: context on both sides,
/// removed lines paired with added lines in order.
pub(super) fn diff_rows(patch: &koas_edit::patch::Patch) -> Vec<Row<'_>> {
    let mut rows = Vec::new();
    for hunk in &patch.hunks {
        // A side with no line counts from the line before the hunk.
        let mut old_no = if hunk.old_count == 0 {
            hunk.old_start + 1
        } else {
            hunk.old_start
        };
        let mut new_no = if hunk.new_count == 0 {
            hunk.new_start + 1
        } else {
            hunk.new_start
        };
        let mut removed: Vec<(usize, &str)> = Vec::new();
        let mut added: Vec<(usize, &str)> = Vec::new();
        for line in &hunk.lines {
            match line {
                HunkLine::Remove(t) => {
                    removed.push((old_no, t.as_str()));
                    old_no += 1;
                }
                HunkLine::Add(t) => {
                    added.push((new_no, t.as_str()));
                    new_no += 1;
                }
                HunkLine::Context(t) => {
                    pair_into(&mut rows, &mut removed, &mut added);
                    rows.push(Row {
                        old: Some((old_no, t.as_str())),
                        new: Some((new_no, t.as_str())),
                        changed: false,
                    });
                    old_no += 1;
                    new_no += 1;
                }
            }
        }
        pair_into(&mut rows, &mut removed, &mut added);
    }
    rows
}

pub(super) fn pair_into<'t>(
    rows: &mut Vec<Row<'t>>,
    removed: &mut Vec<(usize, &'t str)>,
    added: &mut Vec<(usize, &'t str)>,
) {
    let n = removed.len().max(added.len());
    for i in 0..n {
        rows.push(Row {
            old: removed.get(i).copied(),
            new: added.get(i).copied(),
            changed: true,
        });
    }
    removed.clear();
    added.clear();
}

/// The byte range of `a` and of `b` between their common prefix and
/// suffix, widened to whole words: what a paired line changed.
pub(super) fn changed_span(a: &str, b: &str) -> ((usize, usize), (usize, usize)) {
    let mut prefix: usize = a
        .chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum();
    let mut suffix: usize = a[prefix..]
        .chars()
        .rev()
        .zip(b[prefix..].chars().rev())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum();
    // The prefix and suffix are the same text in both lines, so widening
    // them in `a` widens them in `b`.
    while let Some(c) = a[..prefix]
        .chars()
        .next_back()
        .filter(|c| c.is_alphanumeric())
    {
        prefix -= c.len_utf8();
    }
    while let Some(c) = a[a.len() - suffix..]
        .chars()
        .next()
        .filter(|c| c.is_alphanumeric())
    {
        suffix -= c.len_utf8();
    }
    ((prefix, a.len() - suffix), (prefix, b.len() - suffix))
}

/// `a` and `b` as HTML text, each with the words it changed from the
/// other highlighted (`<span class="hl">`), as the report shows a changed
/// line: for other pages in the report's style.
pub fn highlighted_pair(a: &str, b: &str) -> (String, String) {
    let (in_a, in_b) = changed_span(a, b);
    let mut x = String::new();
    push_cell_text(&mut x, a, Some(in_a), usize::MAX);
    let mut y = String::new();
    push_cell_text(&mut y, b, Some(in_b), usize::MAX);
    (x, y)
}

/// Writes one diff cell's text, the changed span highlighted.
pub(super) fn push_cell_text(
    out: &mut String,
    text: &str,
    span: Option<(usize, usize)>,
    max: usize,
) {
    let (shown, cut) = clip(text, max);
    match span {
        Some((from, to)) if from < to && to <= shown.len() && (from, to) != (0, shown.len()) => {
            push_escaped(out, &shown[..from]);
            out.push_str("<span class=\"hl\">");
            push_escaped(out, &shown[from..to]);
            out.push_str("</span>");
            push_escaped(out, &shown[to..]);
        }
        _ => push_escaped(out, shown),
    }
    if cut {
        out.push_str("<span class=\"muted\"> … (line cut)</span>");
    }
}

pub(super) fn write_diff(
    out: &mut String,
    patch_text: &str,
    limits: &HtmlLimits,
    show_cmd: &str,
) -> bool {
    let Ok(patch) = parse_patch(patch_text) else {
        return false;
    };
    let rows = diff_rows(&patch);
    let _ = writeln!(
        out,
        "<table class=\"diff\"><colgroup><col class=\"lnc\"><col><col class=\"lnc\"><col></colgroup><tr><th colspan=\"2\">Before</th><th colspan=\"2\">After</th></tr>"
    );
    for row in rows.iter().take(limits.max_diff_rows) {
        out.push_str("<tr>");
        let spans = match (row.old, row.new) {
            (Some((_, a)), Some((_, b))) if row.changed => {
                let (x, y) = changed_span(bare(a), bare(b));
                (Some(x), Some(y))
            }
            _ => (None, None),
        };
        for (side, cell, span) in [("del", row.old, spans.0), ("add", row.new, spans.1)] {
            match cell {
                Some((no, text)) => {
                    let class = if row.changed { side } else { "ctx" };
                    let _ = write!(out, "<td class=\"ln\">{no}</td><td class=\"text {class}\">");
                    push_cell_text(out, bare(text), span, limits.max_line_chars);
                    out.push_str("</td>");
                }
                None => out.push_str("<td class=\"ln\"></td><td class=\"text\"></td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    if rows.len() > limits.max_diff_rows {
        let _ = writeln!(
            out,
            "<tr class=\"more\"><td colspan=\"4\">… {} more row(s): <code class=\"cmd\">{}</code> prints the whole patch</td></tr>",
            rows.len() - limits.max_diff_rows,
            escape(show_cmd)
        );
    }
    let _ = writeln!(out, "</table>");
    true
}
