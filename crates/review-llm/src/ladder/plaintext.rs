//! Level 5, `plaintext_regex`: the plain-text op formats.
//!
//! Two formats are recognised:
//!
//! ```text
//! [RVW] action=replace / lines=12-14 / before="old text" / after="new text" / rationale="why"
//! ```
//!
//! (fields may also be on separate lines; values are `"quoted"` with `\"`
//! escapes, or bare up to the next ` / ` or end of line), and one-line
//! directives that name a line range:
//!
//! ```text
//! replace: lines 12-14: "old text" -> "new text" (why)
//! delete: line 7 — duplicated sentence
//! flag: lines 3-4: the claim needs a source
//! insert: line 9: "text to insert"
//! ```

use super::op::{parse_line_range, EditAction, RawEditOp};
use super::Found;
use regex::Regex;
use std::sync::OnceLock;

fn field_re() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\b(action|lines|line|before|after|kind|severity|rationale|reason)\s*=\s*")
            .ok()
    })
    .as_ref()
}

fn directive_re() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?mi)^[ \t]*(?:[-*•][ \t]*)?(replace|delete|flag|insert)[ \t]*:[ \t]*(?:lines?|l\.?)[ \t]*(\d+)(?:[ \t]*(?:-|–|to|\.\.)[ \t]*(\d+))?[ \t]*[:,]?[ \t]*(.*)$",
        )
        .ok()
    })
    .as_ref()
}

fn quoted_pair_re() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r#"^"((?:[^"\\]|\\.)*)"\s*(?:->|=>|→)\s*"((?:[^"\\]|\\.)*)"\s*(.*)$"#).ok()
    })
    .as_ref()
}

fn quoted_re() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r#"^"((?:[^"\\]|\\.)*)"\s*(.*)$"#).ok())
        .as_ref()
}

/// Extracts ops in either plain-text format; fails when none is found.
pub(crate) fn extract(text: &str) -> Result<Found, String> {
    let mut ops = rvw_blocks(text);
    if ops.is_empty() {
        ops = directives(text);
    }
    if ops.is_empty() {
        return Err("no [RVW] blocks or replace:/delete:/flag:/insert: lines".to_string());
    }
    Ok(Found::ops(ops, 0))
}

fn rvw_blocks(text: &str) -> Vec<RawEditOp> {
    let Some(re) = field_re() else {
        return Vec::new();
    };
    text.split("[RVW]")
        .skip(1)
        .filter_map(|block| rvw_block(block, re))
        .collect()
}

fn rvw_block(block: &str, re: &Regex) -> Option<RawEditOp> {
    let mut op = RawEditOp::new(EditAction::FlagOnly);
    let mut action = None;
    let mut pos = 0;
    while let Some(m) = re.captures_at(block, pos) {
        let (key, whole) = (m.get(1)?, m.get(0)?);
        let (value, end) = read_value(block, whole.end());
        pos = end.max(whole.end());
        match key.as_str().to_ascii_lowercase().as_str() {
            "action" => action = EditAction::parse(&value),
            "lines" | "line" => {
                if let Some((a, b)) = parse_line_range(&value) {
                    op.line_start = Some(a);
                    op.line_end = Some(b);
                }
            }
            "before" => op.before_text = Some(value),
            "after" => op.after_text = Some(value),
            "kind" => op.kind = Some(value),
            "severity" => op.severity = Some(value),
            _ => op.rationale = Some(value),
        }
    }
    op.action = action?;
    Some(op)
}

/// Reads a field value starting at `start`: a `"quoted"` string (with `\"`,
/// `\\` and `\n` escapes) or a bare word up to ` / ` or end of line.
/// Returns the value and the index after it.
fn read_value(block: &str, start: usize) -> (String, usize) {
    let rest = &block[start..];
    if let Some(inner) = rest.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = inner.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, e)) => value.push(e),
                    None => {}
                },
                '"' => return (value, start + 1 + i + 1),
                c => value.push(c),
            }
        }
        return (value, block.len());
    }
    let line_end = rest.find('\n').unwrap_or(rest.len());
    let end = rest[..line_end].find(" /").unwrap_or(line_end);
    (rest[..end].trim().to_string(), start + end)
}

fn directives(text: &str) -> Vec<RawEditOp> {
    let Some(re) = directive_re() else {
        return Vec::new();
    };
    re.captures_iter(text)
        .filter_map(|c| {
            let action = EditAction::parse(c.get(1)?.as_str())?;
            let start: u64 = c.get(2)?.as_str().parse().ok()?;
            let end: u64 = match c.get(3) {
                Some(m) => m.as_str().parse().ok()?,
                None => start,
            };
            let mut op = RawEditOp::new(action);
            op.line_start = Some(start);
            op.line_end = Some(end);
            fill_directive_text(&mut op, c.get(4).map_or("", |m| m.as_str()).trim());
            Some(op)
        })
        .collect()
}

fn fill_directive_text(op: &mut RawEditOp, rest: &str) {
    let clean = |s: &str| {
        let s = s
            .trim()
            .trim_start_matches(['—', '-', ':', '('])
            .trim_end_matches(')');
        (!s.trim().is_empty()).then(|| s.trim().to_string())
    };
    if let Some(c) = quoted_pair_re().and_then(|re| re.captures(rest)) {
        op.before_text = c.get(1).map(|m| unescape(m.as_str()));
        op.after_text = c.get(2).map(|m| unescape(m.as_str()));
        op.rationale = c.get(3).and_then(|m| clean(m.as_str()));
    } else if let Some(c) = quoted_re().and_then(|re| re.captures(rest)) {
        let text = c.get(1).map(|m| unescape(m.as_str()));
        if op.action == EditAction::Insert {
            op.after_text = text;
        } else {
            op.before_text = text;
        }
        op.rationale = c.get(2).and_then(|m| clean(m.as_str()));
    } else {
        op.rationale = clean(rest);
    }
}

fn unescape(s: &str) -> String {
    s.replace("\\\"", "\"")
        .replace("\\n", "\n")
        .replace("\\\\", "\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_compile() {
        assert!(field_re().is_some());
        assert!(directive_re().is_some());
        assert!(quoted_pair_re().is_some());
        assert!(quoted_re().is_some());
    }

    #[test]
    fn rvw_blocks_single_line_and_multi_line() {
        let text = "[RVW] action=replace / lines=12-14 / before=\"a / b\" / after=\"say \\\"c\\\"\" / rationale=\"why\"\n\n[RVW]\naction=delete\nlines=20-21\nreason=duplicate paragraph\n";
        let found = extract(text).unwrap();
        assert_eq!(found.ops.len(), 2);
        let a = &found.ops[0];
        assert_eq!(a.action, EditAction::Replace);
        assert_eq!((a.line_start, a.line_end), (Some(12), Some(14)));
        assert_eq!(a.before_text.as_deref(), Some("a / b"));
        assert_eq!(a.after_text.as_deref(), Some("say \"c\""));
        let b = &found.ops[1];
        assert_eq!(b.action, EditAction::Delete);
        assert_eq!(b.rationale.as_deref(), Some("duplicate paragraph"));
    }

    #[test]
    fn rvw_block_without_action_is_skipped() {
        assert!(extract("[RVW] lines=3 / after=\"x\"").is_err());
    }

    #[test]
    fn directive_lines() {
        let text = "Edits:\n- replace: lines 12-14: \"colour\" -> \"color\" (US spelling)\n* delete: line 7 — duplicated\nflag: l. 3 to 4: needs a source\ninsert: line 9: \"New sentence.\"\nFlag: this is not a directive";
        let found = extract(text).unwrap();
        assert_eq!(found.ops.len(), 4);
        assert_eq!(found.ops[0].after_text.as_deref(), Some("color"));
        assert_eq!(found.ops[0].rationale.as_deref(), Some("US spelling"));
        assert_eq!(found.ops[1].rationale.as_deref(), Some("duplicated"));
        assert_eq!(
            (found.ops[2].line_start, found.ops[2].line_end),
            (Some(3), Some(4))
        );
        assert_eq!(found.ops[3].after_text.as_deref(), Some("New sentence."));
    }
}
