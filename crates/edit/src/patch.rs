//! Standard unified diffs: generation from a line change, parsing, and
//! strict application.
//!
//! Every change the engine makes is one contiguous run of lines, so a patch
//! is one hunk with up to 3 lines of context. Lines are written byte for
//! byte (a CRLF line keeps its `\r`), and a line without a final newline is
//! followed by `\ No newline at end of file`, exactly as `git diff` writes
//! it, so `git apply` and `patch` accept the files.
//!
//! Application is strict: every context and removed line must match the
//! text at the position the hunk header names. There is no offset search
//! and no fuzz; a mismatch is an error and the text is left untouched.

use koas_review_schema::apply::{LineChange, PatchPair};
use thiserror::Error;

use crate::text::LineBuf;

/// Lines of context around a change in generated patches.
pub const CONTEXT_LINES: usize = 3;

/// The marker that follows a diff line lacking a final newline.
pub const NO_NEWLINE_MARKER: &str = "\\ No newline at end of file";

/// Applies `change` to `buf` after checking that the lines it removes are
/// exactly there.
pub fn apply_change(change: &LineChange, buf: &mut LineBuf) -> Result<(), PatchError> {
    let end = change.start + change.old.len();
    if end > buf.len() {
        return Err(PatchError::OutOfRange {
            hunk: 1,
            line: change.start + 1,
            len: buf.len(),
        });
    }
    for (offset, expected) in change.old.iter().enumerate() {
        let found = buf.raw_line(change.start + offset).unwrap_or("");
        if found != expected {
            return Err(PatchError::Mismatch {
                hunk: 1,
                line: change.start + offset + 1,
                expected: expected.clone(),
                found: found.to_owned(),
            });
        }
    }
    buf.splice(change.start, change.old.len(), change.new.clone());
    Ok(())
}

/// Renders the forward and inverse unified diffs of `change` applied to
/// `before`, with `--- a/<doc_name>` / `+++ b/<doc_name>` headers.
pub fn make_patch_pair(doc_name: &str, before: &LineBuf, change: &LineChange) -> PatchPair {
    let lines = before.lines();
    let ctx_start = change.start.saturating_sub(CONTEXT_LINES);
    let after_start = (change.start + change.old.len()).min(lines.len());
    let after_end = (after_start + CONTEXT_LINES).min(lines.len());
    let ctx_before = &lines[ctx_start..change.start.min(lines.len())];
    let ctx_after = &lines[after_start..after_end];
    PatchPair {
        forward: render_hunk(
            doc_name,
            ctx_start,
            ctx_before,
            &change.old,
            &change.new,
            ctx_after,
        ),
        inverse: render_hunk(
            doc_name,
            ctx_start,
            ctx_before,
            &change.new,
            &change.old,
            ctx_after,
        ),
    }
}

fn range_header(first_index: usize, count: usize) -> String {
    // Unified diff convention: an empty range names the line before it.
    let start = if count == 0 {
        first_index
    } else {
        first_index + 1
    };
    format!("{start},{count}")
}

fn push_line(out: &mut String, prefix: char, line: &str) {
    out.push(prefix);
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push('\n');
        out.push_str(NO_NEWLINE_MARKER);
        out.push('\n');
    }
}

fn render_hunk(
    doc_name: &str,
    first_index: usize,
    ctx_before: &[String],
    old: &[String],
    new: &[String],
    ctx_after: &[String],
) -> String {
    let old_count = ctx_before.len() + old.len() + ctx_after.len();
    let new_count = ctx_before.len() + new.len() + ctx_after.len();
    let mut out = format!(
        "--- a/{doc_name}\n+++ b/{doc_name}\n@@ -{} +{} @@\n",
        range_header(first_index, old_count),
        range_header(first_index, new_count)
    );
    for line in ctx_before {
        push_line(&mut out, ' ', line);
    }
    for line in old {
        push_line(&mut out, '-', line);
    }
    for line in new {
        push_line(&mut out, '+', line);
    }
    for line in ctx_after {
        push_line(&mut out, ' ', line);
    }
    out
}

/// What went wrong reading or applying a patch.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PatchError {
    /// The patch text is not a unified diff this module understands.
    #[error("malformed patch at patch line {line}: {reason}")]
    Malformed {
        /// 1-based line of the patch text.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A context or removed line does not match the document.
    #[error("hunk {hunk} does not apply: document line {line} is {found:?}, the patch expects {expected:?}")]
    Mismatch {
        /// 1-based hunk number.
        hunk: usize,
        /// 1-based document line.
        line: usize,
        /// Text the patch expects (with terminator).
        expected: String,
        /// Text the document has.
        found: String,
    },
    /// The hunk addresses lines past the end of the document.
    #[error("hunk {hunk} addresses line {line} but the document has {len} lines")]
    OutOfRange {
        /// 1-based hunk number.
        hunk: usize,
        /// 1-based document line.
        line: usize,
        /// Lines in the document.
        len: usize,
    },
}

/// One line of a hunk body (text includes its terminator, if it has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// Present in both versions.
    Context(String),
    /// Only in the old version.
    Remove(String),
    /// Only in the new version.
    Add(String),
}

/// One `@@` hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Old range start as written in the header.
    pub old_start: usize,
    /// Old-side line count (context and removed lines).
    pub old_count: usize,
    /// New range start as written in the header.
    pub new_start: usize,
    /// New-side line count (context and added lines).
    pub new_count: usize,
    /// The lines after the `@@` header: context, removed and added lines,
    /// in order.
    pub lines: Vec<HunkLine>,
}

impl Hunk {
    /// 0-based index of the first line of the old range.
    pub fn old_index(&self) -> usize {
        if self.old_count == 0 {
            self.old_start
        } else {
            self.old_start.saturating_sub(1)
        }
    }

    /// The old side (context + removed lines), in order.
    pub fn old_side(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }

    /// The new side (context + added lines), in order.
    pub fn new_side(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Add(t) => Some(t.clone()),
                HunkLine::Remove(_) => None,
            })
            .collect()
    }

    /// For a hunk made of context, then removed lines, then added lines,
    /// then context (the shape this module writes): the change it makes,
    /// with `start` relative to the hunk's old range. `None` for other
    /// shapes.
    pub fn as_single_change(&self) -> Option<LineChange> {
        let mut phase = 0u8;
        let (mut lead, mut old, mut new) = (0usize, Vec::new(), Vec::new());
        for line in &self.lines {
            match line {
                HunkLine::Context(_) if phase == 0 => lead += 1,
                HunkLine::Context(_) => phase = 3,
                HunkLine::Remove(t) if phase <= 1 => {
                    phase = 1;
                    old.push(t.clone());
                }
                HunkLine::Add(t) if phase <= 2 => {
                    phase = 2;
                    new.push(t.clone());
                }
                _ => return None,
            }
        }
        Some(LineChange {
            start: lead,
            old,
            new,
        })
    }
}

/// A parsed unified diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// Name after `--- ` (e.g. `a/spec.md`).
    pub old_name: String,
    /// Name after `+++ ` (e.g. `b/spec.md`).
    pub new_name: String,
    /// Hunks, in document order.
    pub hunks: Vec<Hunk>,
}

fn parse_range(text: &str, line: usize) -> Result<(usize, usize), PatchError> {
    let bad = || PatchError::Malformed {
        line,
        reason: format!("bad hunk range {text:?}"),
    };
    let (start, count) = match text.split_once(',') {
        Some((s, c)) => (s, c),
        None => (text, "1"),
    };
    Ok((
        start.parse().map_err(|_| bad())?,
        count.parse().map_err(|_| bad())?,
    ))
}

fn parse_hunk_header(text: &str, line: usize) -> Result<Hunk, PatchError> {
    let bad = |reason: &str| PatchError::Malformed {
        line,
        reason: reason.to_owned(),
    };
    let body = text
        .strip_prefix("@@ -")
        .ok_or_else(|| bad("hunk header must start with '@@ -'"))?;
    let end = body
        .find(" @@")
        .ok_or_else(|| bad("hunk header lacks closing '@@'"))?;
    let (old, new) = body[..end]
        .split_once(" +")
        .ok_or_else(|| bad("hunk header lacks '+' range"))?;
    let (old_start, old_count) = parse_range(old, line)?;
    let (new_start, new_count) = parse_range(new, line)?;
    Ok(Hunk {
        old_start,
        old_count,
        new_start,
        new_count,
        lines: Vec::new(),
    })
}

/// Parses a single-file unified diff.
pub fn parse_patch(text: &str) -> Result<Patch, PatchError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut old_name = None;
    let mut new_name = None;
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let raw = lines[index];
        let line_no = index + 1;
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        if let Some(name) = line.strip_prefix("--- ") {
            old_name = Some(name.trim_end_matches('\r').to_owned());
            index += 1;
        } else if let Some(name) = line.strip_prefix("+++ ") {
            new_name = Some(name.trim_end_matches('\r').to_owned());
            index += 1;
        } else if line.starts_with("@@ ") {
            let mut hunk = parse_hunk_header(line, line_no)?;
            index += 1;
            let (mut seen_old, mut seen_new) = (0, 0);
            while seen_old < hunk.old_count || seen_new < hunk.new_count {
                let Some(body) = lines.get(index) else {
                    return Err(PatchError::Malformed {
                        line: index + 1,
                        reason: "hunk ends before its counted lines".into(),
                    });
                };
                let (prefix, rest) = match body.chars().next() {
                    Some(c @ (' ' | '-' | '+')) => (c, body[1..].to_owned()),
                    Some('\n') => (' ', "\n".to_owned()),
                    _ => {
                        return Err(PatchError::Malformed {
                            line: index + 1,
                            reason: format!("unexpected hunk line {body:?}"),
                        })
                    }
                };
                index += 1;
                let rest = take_no_newline_marker(&lines, &mut index, rest);
                match prefix {
                    ' ' => {
                        seen_old += 1;
                        seen_new += 1;
                        hunk.lines.push(HunkLine::Context(rest));
                    }
                    '-' => {
                        seen_old += 1;
                        hunk.lines.push(HunkLine::Remove(rest));
                    }
                    _ => {
                        seen_new += 1;
                        hunk.lines.push(HunkLine::Add(rest));
                    }
                }
                if seen_old > hunk.old_count || seen_new > hunk.new_count {
                    return Err(PatchError::Malformed {
                        line: index,
                        reason: "hunk has more lines than its header counts".into(),
                    });
                }
            }
            hunks.push(hunk);
        } else if line.starts_with("diff ") || line.starts_with("index ") || line.is_empty() {
            index += 1;
        } else {
            return Err(PatchError::Malformed {
                line: line_no,
                reason: format!("unexpected line {line:?}"),
            });
        }
    }
    match (old_name, new_name) {
        (Some(old_name), Some(new_name)) => Ok(Patch {
            old_name,
            new_name,
            hunks,
        }),
        _ => Err(PatchError::Malformed {
            line: 1,
            reason: "missing '--- ' / '+++ ' file headers".into(),
        }),
    }
}

fn take_no_newline_marker(lines: &[&str], index: &mut usize, mut text: String) -> String {
    if lines.get(*index).is_some_and(|l| l.starts_with('\\')) {
        *index += 1;
        if text.ends_with('\n') {
            text.pop();
        }
    }
    text
}

/// Applies `patch` to `text` strictly. Returns the new text, or an error
/// and no change at all.
pub fn apply_patch(text: &str, patch: &Patch) -> Result<String, PatchError> {
    let mut buf = LineBuf::parse(text);
    let mut shift: isize = 0;
    for (number, hunk) in patch.hunks.iter().enumerate() {
        let hunk_no = number + 1;
        let index = hunk.old_index() as isize + shift;
        let old = hunk.old_side();
        if index < 0 || index as usize + old.len() > buf.len() {
            return Err(PatchError::OutOfRange {
                hunk: hunk_no,
                line: (index.max(0) as usize) + old.len(),
                len: buf.len(),
            });
        }
        let index = index as usize;
        for (offset, expected) in old.iter().enumerate() {
            let found = buf.raw_line(index + offset).unwrap_or("");
            if found != *expected {
                return Err(PatchError::Mismatch {
                    hunk: hunk_no,
                    line: index + offset + 1,
                    expected: (*expected).to_owned(),
                    found: found.to_owned(),
                });
            }
        }
        let new = hunk.new_side();
        shift += new.len() as isize - old.len() as isize;
        buf.splice(index, old.len(), new);
    }
    Ok(buf.to_text())
}

/// Parses then applies a patch text.
pub fn apply_patch_text(text: &str, patch: &str) -> Result<String, PatchError> {
    apply_patch(text, &parse_patch(patch)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(start: usize, old: &[&str], new: &[&str]) -> LineChange {
        LineChange {
            start,
            old: old.iter().map(|s| s.to_string()).collect(),
            new: new.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn round_trip(text: &str, change: LineChange) -> String {
        let before = LineBuf::parse(text);
        let pair = make_patch_pair("doc.md", &before, &change);
        let mut after = before.clone();
        apply_change(&change, &mut after).unwrap();
        let after_text = after.to_text();
        assert_eq!(apply_patch_text(text, &pair.forward).unwrap(), after_text);
        assert_eq!(apply_patch_text(&after_text, &pair.inverse).unwrap(), text);
        pair.forward
    }

    #[test]
    fn simple_replace_has_standard_shape() {
        let patch = round_trip("a\nb\nc\nd\ne\nf\ng\n", change(3, &["d\n"], &["D\n"]));
        assert_eq!(
            patch,
            "--- a/doc.md\n+++ b/doc.md\n@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n"
        );
    }

    #[test]
    fn crlf_lines_keep_their_carriage_returns() {
        let patch = round_trip("a\r\nb\r\nc\r\n", change(1, &["b\r\n"], &["B\r\n"]));
        assert!(patch.contains("-b\r\n+B\r\n"));
    }

    #[test]
    fn missing_final_newline_is_marked() {
        let patch = round_trip("a\nb", change(1, &["b"], &["B"]));
        assert_eq!(
            patch,
            "--- a/doc.md\n+++ b/doc.md\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n\\ No newline at end of file\n"
        );
        // Adding a final newline.
        round_trip("a\nb", change(1, &["b"], &["b\n"]));
        // Context line without newline.
        round_trip("a\nb\nc", change(0, &["a\n"], &["A\n"]));
    }

    #[test]
    fn insertion_and_deletion_at_edges() {
        round_trip("a\nb\n", change(0, &[], &["top\n"]));
        round_trip("a\nb\n", change(2, &[], &["end\n"]));
        round_trip("a\nb\n", change(0, &["a\n", "b\n"], &[]));
        round_trip("", change(0, &[], &["x\n"]));
        round_trip("x", change(0, &["x"], &[]));
    }

    #[test]
    fn apply_is_strict() {
        let pair = make_patch_pair(
            "doc.md",
            &LineBuf::parse("a\nb\nc\n"),
            &change(1, &["b\n"], &["B\n"]),
        );
        let err = apply_patch_text("a\nx\nc\n", &pair.forward).unwrap_err();
        assert!(matches!(err, PatchError::Mismatch { line: 2, .. }), "{err}");
        // Shifted content is not searched for.
        assert!(apply_patch_text("z\na\nb\nc\n", &pair.forward).is_err());
    }

    #[test]
    fn trimmed_drops_shared_lines() {
        let c = change(
            4,
            &["same\n", "old\n", "tail\n"],
            &["same\n", "new\n", "tail\n"],
        )
        .trimmed();
        assert_eq!(c, change(5, &["old\n"], &["new\n"]));
        assert!(change(0, &["a\n"], &["a\n"]).trimmed().is_noop());
    }

    #[test]
    fn parse_rejects_garbage_and_short_hunks() {
        assert!(parse_patch("hello\n").is_err());
        assert!(parse_patch("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n").is_err());
        assert!(parse_patch("--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n a\n b\n").is_err());
    }

    #[test]
    fn single_change_shape_is_recovered() {
        let before = LineBuf::parse("a\nb\nc\nd\ne\n");
        let c = change(2, &["c\n"], &["C1\n", "C2\n"]);
        let pair = make_patch_pair("doc.md", &before, &c);
        let patch = parse_patch(&pair.forward).unwrap();
        let hunk = &patch.hunks[0];
        let got = hunk.as_single_change().unwrap();
        assert_eq!(hunk.old_index() + got.start, 2);
        assert_eq!(got.old, c.old);
        assert_eq!(got.new, c.new);
    }
}
