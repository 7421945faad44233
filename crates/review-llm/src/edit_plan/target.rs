//! Placing a model's proposal on the document's real lines.
//!
//! The model's line numbers are never trusted: a proposal is placed where
//! its `before_text` occurs, exactly once, in the chunk's own lines (first
//! exactly, then with runs of whitespace compared as one space). A
//! proposal whose text is ambiguous or absent is dropped, or kept as a
//! `flag_only` on the chunk when it carries a rationale worth a person's
//! look; one whose text belongs to another chunk is dropped (that chunk
//! proposes it, or not). Ops on protected lines are dropped.

use crate::ladder::{EditAction, RawEditOp};
use koas_kernel_api::hash::sha256;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_op::{Action, Alert, EditOp, ReviewNote, ReviewPolicy, Target};
use koas_review_schema::edit_plan::DroppedProposal;
use koas_review_schema::stage1::ProtectedSpans;

use super::mask::{has_placeholder_shape, Masked};

/// The shortest rationale that makes an unplaceable proposal worth a
/// `flag_only`.
const MIN_FLAG_RATIONALE: usize = 12;

/// The document as lines, for placing proposals.
pub struct DocLines<'a> {
    /// Line contents without terminators (index 0 = line 1).
    pub lines: Vec<&'a str>,
}

impl<'a> DocLines<'a> {
    /// Splits `text` into lines (`\n`, a trailing `\r` dropped).
    pub fn new(text: &'a str) -> DocLines<'a> {
        let mut lines: Vec<&str> = text
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .collect();
        if text.ends_with('\n') {
            lines.pop();
        }
        DocLines { lines }
    }

    /// Lines `a..=b` joined with `\n`.
    pub fn text(&self, a: u32, b: u32) -> String {
        let lo = (a.max(1) - 1) as usize;
        let hi = (b as usize).min(self.lines.len());
        self.lines
            .get(lo..hi.max(lo))
            .map(|l| l.join("\n"))
            .unwrap_or_default()
    }

    /// Number of lines.
    pub fn len(&self) -> u32 {
        u32::try_from(self.lines.len()).unwrap_or(u32::MAX)
    }

    /// `true` for an empty document.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// Where a text occurs in a piece of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occurrence {
    /// Once, at this byte range.
    Unique(usize, usize),
    /// Several times.
    Ambiguous(usize),
    /// Not at all.
    Absent,
}

/// Finds `needle` in `haystack`: exactly, else with whitespace runs
/// compared as one space.
pub fn find(haystack: &str, needle: &str) -> Occurrence {
    let needle = needle.trim();
    if needle.is_empty() {
        return Occurrence::Absent;
    }
    let exact: Vec<usize> = haystack.match_indices(needle).map(|(i, _)| i).collect();
    match exact.len() {
        1 => return Occurrence::Unique(exact[0], exact[0] + needle.len()),
        n if n > 1 => return Occurrence::Ambiguous(n),
        _ => {}
    }
    // Whitespace-insensitive: collapse runs, remembering where each
    // collapsed byte came from.
    let (flat, map) = collapse(haystack);
    let (flat_needle, _) = collapse(needle);
    let found: Vec<usize> = flat.match_indices(&flat_needle).map(|(i, _)| i).collect();
    match found.len() {
        0 => Occurrence::Absent,
        1 => {
            let start = map[found[0]];
            let last = found[0] + flat_needle.len() - 1;
            let end_char = map[last];
            let end = end_char
                + haystack[end_char..]
                    .chars()
                    .next()
                    .map_or(1, char::len_utf8);
            Occurrence::Unique(start, end)
        }
        n => Occurrence::Ambiguous(n),
    }
}

fn collapse(text: &str) -> (String, Vec<usize>) {
    let mut flat = String::with_capacity(text.len());
    let mut map = Vec::with_capacity(text.len());
    let mut in_space = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if !in_space {
                flat.push(' ');
                map.push(i);
            }
            in_space = true;
        } else {
            in_space = false;
            let before = flat.len();
            flat.push(c);
            for _ in before..flat.len() {
                map.push(i);
            }
        }
    }
    (flat, map)
}

/// Where a piece of the document is and what it holds.
pub struct PieceView<'a> {
    /// The piece's ID.
    pub id: &'a str,
    /// Its section's anchor.
    pub anchor: &'a str,
    /// First line.
    pub line_start: u32,
    /// Last line.
    pub line_end: u32,
    /// Its text (lines joined by `\n`).
    pub text: &'a str,
    /// The plain-text projection the model saw after policy D, line for
    /// line with `text`, if any.
    pub projection: Option<&'a str>,
}

impl PieceView<'_> {
    /// The document lines spanned by bytes `a..b` of `text`.
    fn lines_of(&self, text: &str, a: usize, b: usize) -> (u32, u32) {
        let count = |upto: usize| {
            let bytes = &text.as_bytes()[..upto.min(text.len())];
            u32::try_from(bytes.iter().filter(|b| **b == b'\n').count()).unwrap_or(0)
        };
        let first = self.line_start + count(a);
        let last = self.line_start + count(b.saturating_sub(1).max(a));
        (first, last.min(self.line_end))
    }
}

/// A proposal turned into an op (its ID still to allocate), and the
/// message of its review note (the ID is prefixed once allocated).
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    /// The op, `id` a placeholder.
    pub op: EditOp,
    /// The review note's text after `REVIEWER: RVW-NNNN — `.
    pub note: Option<String>,
    /// `true` when it was downgraded to `flag_only` because it could not
    /// be placed.
    pub downgraded: bool,
}

/// What became of one proposal.
#[derive(Debug, Clone, PartialEq)]
pub enum Placement {
    /// An op.
    Op(Box<Placed>),
    /// Dropped, with a reason.
    Dropped(DroppedProposal),
}

fn severity_of(raw: Option<&str>) -> &'static str {
    match raw.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
        Some("critical" | "blocker" | "error" | "high") => "critical",
        Some("attention" | "major" | "warning" | "medium" | "important") => "attention",
        Some("deletion") => "deletion",
        _ => "minor",
    }
}

/// Lines of a note shorter than this are not compared with the chunk: a
/// short phrase may be quoted on purpose.
const MIN_ECHO_LINE: usize = 20;

/// `true` when most of a note's lines (of some length) are the chunk's own
/// text, whitespace aside: a model that copies its input back has found
/// nothing. Seen with small models on most chunks of a long document.
fn echoes_the_chunk(note: &str, chunk: &str) -> bool {
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let chunk = squeeze(chunk);
    let lines: Vec<String> = note
        .lines()
        .map(squeeze)
        .filter(|l| l.chars().count() >= MIN_ECHO_LINE)
        .collect();
    let copied = lines.iter().filter(|l| chunk.contains(l.as_str())).count();
    copied > 0 && copied * 10 >= lines.len() * 6
}

/// A sentence (of some length) that a note says at least this many times
/// is a model looping, not a finding.
const REPEATS: usize = 3;

/// The first sentence said [`REPEATS`] times or more in `note`, if any.
fn repeated_sentence(note: &str) -> Option<String> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for sentence in note.split(['.', '\n', '!', '?', ',']) {
        let s = sentence.split_whitespace().collect::<Vec<_>>().join(" ");
        if s.chars().count() < MIN_ECHO_LINE / 2 {
            continue;
        }
        let n = seen.entry(s.to_lowercase()).or_insert(0);
        *n += 1;
        if *n >= REPEATS {
            return Some(s);
        }
    }
    None
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// Places one raw proposal (its texts still masked) on `piece`.
pub fn place(
    raw: &RawEditOp,
    masked: &Masked,
    piece: &PieceView<'_>,
    doc: &DocLines<'_>,
    doc_text_index: &[(u32, u32, &str)],
    spans: Option<&ProtectedSpans>,
    policy: &ReviewPolicy,
) -> Placement {
    match place_op(raw, masked, piece, doc, doc_text_index, spans, policy) {
        Ok(placed) => Placement::Op(Box::new(placed)),
        Err(dropping) => Placement::Dropped(DroppedProposal {
            chunk_id: piece.id.to_owned(),
            action: raw.action.as_str().to_owned(),
            before_text: raw
                .before_text
                .as_ref()
                .map(|b| masked.unmask(b))
                .filter(|b| !b.is_empty()),
            reason: dropping.reason.to_owned(),
            detail: dropping.detail,
        }),
    }
}

/// Why a proposal is dropped: the reason recorded in the plan, and a
/// detail for people.
struct Dropping {
    reason: &'static str,
    detail: String,
}

fn dropping(reason: &'static str, detail: impl Into<String>) -> Dropping {
    Dropping {
        reason,
        detail: detail.into(),
    }
}

/// [`place`], a dropped proposal as an error.
fn place_op(
    raw: &RawEditOp,
    masked: &Masked,
    piece: &PieceView<'_>,
    doc: &DocLines<'_>,
    doc_text_index: &[(u32, u32, &str)],
    spans: Option<&ProtectedSpans>,
    policy: &ReviewPolicy,
) -> Result<Placed, Dropping> {
    let (before, after) = unmasked_texts(raw, masked)?;
    let rationale = raw.rationale.clone().unwrap_or_default();
    let worth_flag = rationale.trim().chars().count() >= MIN_FLAG_RATIONALE;
    let action = match raw.action {
        EditAction::Replace => Action::Replace,
        EditAction::Insert => Action::Insert,
        EditAction::Delete => Action::Delete,
        EditAction::FlagOnly => Action::FlagOnly,
    };
    if action == Action::Replace && before.trim() == after.trim() && !before.trim().is_empty() {
        return Err(dropping("no_change", "after_text equals before_text"));
    }
    let found = Found::locate(piece, &before);
    if found.located.is_none() && action != Action::FlagOnly {
        check_unplaced(
            &found,
            action,
            worth_flag,
            piece,
            doc,
            doc_text_index,
            &before,
        )?;
    }
    let settled = Settled::of(&found, action, piece);
    let action = settled.action;
    if action == Action::FlagOnly {
        check_flag_note(&rationale, piece, masked)?;
    }
    let (line_start, line_end) = (settled.line_start, settled.line_end);
    if spans.is_some_and(|s| s.overlaps_lines(line_start, line_end)) && action != Action::FlagOnly {
        return Err(dropping(
            "protected",
            format!("lines {line_start}–{line_end} are protected"),
        ));
    }
    let review = Review::of(raw, &settled, &found, &rationale, policy);
    let after_text = match action {
        Action::Replace | Action::Insert => after.trim_end_matches('\n').to_owned(),
        _ => String::new(),
    };
    if matches!(action, Action::Replace | Action::Insert) && after_text.trim().is_empty() {
        return Err(dropping(
            "no_change",
            format!("a {} with no after_text", action.as_str()),
        ));
    }
    let target_text = doc.text(line_start, line_end);
    let op = EditOp {
        id: ChangeId::first(),
        source_id: None,
        action,
        target: Target {
            chunk_id: piece.id.to_owned(),
            anchor: piece.anchor.to_owned(),
            node_path: String::new(),
            line_start: line_start as usize,
            line_end: line_end as usize,
        },
        before_hash: Some(sha256(&target_text)),
        before_text: match action {
            Action::FlagOnly => settled.before_text,
            _ => settled.before_text.or(Some(target_text)),
        },
        after_text,
        needs_attention: review.needs_attention,
        silent: !review.needs_attention && policy.is_silent_kind(&review.kind),
        kind: review.kind,
        severity: review.severity,
        review_note: review.note.as_ref().map(|_| ReviewNote {
            alert: review.alert,
            text: String::new(),
        }),
        rationale,
        summary: None,
    };
    Ok(Placed {
        op,
        note: review.note,
        downgraded: settled.downgraded,
    })
}

/// The proposal's before and after texts, unmasked. The model must keep
/// what was masked: a placeholder in its before text missing from its
/// after text would delete math, a table, code; and a placeholder it made
/// up stands for nothing.
fn unmasked_texts(raw: &RawEditOp, masked: &Masked) -> Result<(String, String), Dropping> {
    let before_masked = raw.before_text.clone().unwrap_or_default();
    let after_masked = raw.after_text.clone().unwrap_or_default();
    if matches!(raw.action, EditAction::Replace) {
        if let Some(lost) = masked
            .placeholders_in(&before_masked)
            .find(|p| !after_masked.contains(p))
        {
            return Err(dropping(
                "masked_content_lost",
                format!("the proposal removes {lost}, masked content it never saw"),
            ));
        }
    }
    let before = masked.unmask(&before_masked);
    let after = masked.unmask(&after_masked);
    if has_placeholder_shape(&after) && !has_placeholder_shape(&before) {
        return Err(dropping(
            "masked_content_lost",
            "the proposed text holds a placeholder that stands for nothing",
        ));
    }
    Ok((before, after))
}

/// Where a proposal's before text is in the piece.
struct Found {
    /// How often it occurs in the piece's text (`None`: it has no before
    /// text).
    occurrence: Option<Occurrence>,
    /// It was found only in the plain-text projection the model saw.
    projected: bool,
    /// Its lines and the piece's text there, when it occurs once.
    located: Option<(u32, u32, String)>,
}

impl Found {
    /// Looks for `before` in the piece's text, then in its projection.
    fn locate(piece: &PieceView<'_>, before: &str) -> Found {
        let mut projected = false;
        let mut occurrence = if before.trim().is_empty() {
            None
        } else {
            Some(find(piece.text, before))
        };
        if matches!(occurrence, Some(Occurrence::Absent)) {
            if let Some(projection) = piece.projection {
                if let Occurrence::Unique(a, b) = find(projection, before) {
                    let (first, last) = piece.lines_of(projection, a, b);
                    projected = true;
                    occurrence = Some(Occurrence::Unique(
                        line_offset(piece.text, first - piece.line_start),
                        line_end_offset(piece.text, last - piece.line_start),
                    ));
                }
            }
        }
        let located = match occurrence {
            Some(Occurrence::Unique(a, b)) => {
                let (first, last) = piece.lines_of(piece.text, a, b);
                Some((first, last, piece.text[a..b].to_owned()))
            }
            _ => None,
        };
        Found {
            occurrence,
            projected,
            located,
        }
    }

    /// The reason a proposal that could not be placed would be dropped.
    fn why_not(&self) -> &'static str {
        match self.occurrence {
            None => "no_anchor",
            Some(Occurrence::Ambiguous(_)) => "ambiguous",
            _ => "not_found",
        }
    }
}

/// A change whose text was not placed is dropped when the text belongs to
/// another chunk (that chunk owns it), or when its rationale is too short
/// to be worth a flag.
fn check_unplaced(
    found: &Found,
    action: Action,
    worth_flag: bool,
    piece: &PieceView<'_>,
    doc: &DocLines<'_>,
    doc_text_index: &[(u32, u32, &str)],
    before: &str,
) -> Result<(), Dropping> {
    let why_not = found.why_not();
    if why_not == "not_found" {
        if let Some((start, _, id)) = doc_text_index.iter().find(|(s, e, id)| {
            *id != piece.id && matches!(find(&doc.text(*s, *e), before), Occurrence::Unique(..))
        }) {
            return Err(dropping(
                "other_chunk",
                format!("the text is in chunk {id} (from line {start}), not in this one"),
            ));
        }
    }
    if worth_flag {
        return Ok(());
    }
    let detail = match found.occurrence {
        None => format!("a {} needs a before_text to anchor it", action.as_str()),
        Some(Occurrence::Ambiguous(n)) => format!("before_text occurs {n} times in the chunk"),
        _ => "before_text is not in the chunk".to_owned(),
    };
    Err(dropping(why_not, detail))
}

/// Where the op lands and what it does. A flag_only, or a change
/// downgraded to one, may sit on the chunk's first line when its text is
/// not found; a change found only in the projection becomes a flag.
struct Settled {
    action: Action,
    line_start: u32,
    line_end: u32,
    before_text: Option<String>,
    /// A change turned into a flag_only.
    downgraded: bool,
}

impl Settled {
    fn of(found: &Found, action: Action, piece: &PieceView<'_>) -> Settled {
        let (action, line_start, line_end, before_text, downgraded) = match (&found.located, action)
        {
            (Some((a, b, text)), act) if !found.projected || act == Action::FlagOnly => {
                (act, *a, *b, Some(text.clone()), false)
            }
            (Some((a, b, text)), _) => (Action::FlagOnly, *a, *b, Some(text.clone()), true),
            (None, Action::FlagOnly) => (
                Action::FlagOnly,
                piece.line_start,
                piece.line_start,
                None,
                false,
            ),
            (None, _) => (
                Action::FlagOnly,
                piece.line_start,
                piece.line_start,
                None,
                true,
            ),
        };
        Settled {
            action,
            line_start,
            line_end,
            before_text,
            downgraded,
        }
    }
}

/// A flag's note must say what is wrong: one that copies the chunk back,
/// or says one sentence over and over, is dropped.
fn check_flag_note(
    rationale: &str,
    piece: &PieceView<'_>,
    masked: &Masked,
) -> Result<(), Dropping> {
    // The model saw the masked text (placeholders for code, math) or
    // the plain-text projection: it may copy any of them back.
    let seen = [
        Some(piece.text),
        Some(masked.text.as_str()),
        piece.projection,
    ];
    if seen
        .into_iter()
        .flatten()
        .any(|text| echoes_the_chunk(rationale, text))
    {
        return Err(dropping(
            "echo",
            "the note repeats the chunk's own text instead of saying what is wrong",
        ));
    }
    if let Some(sentence) = repeated_sentence(rationale) {
        return Err(dropping(
            "repetitive",
            format!(
                "the note repeats one sentence again and again: {}",
                clip(&sentence, 80)
            ),
        ));
    }
    Ok(())
}

/// How a placed op is reviewed: its kind and severity, whether it needs
/// attention, and its note's alert and message.
struct Review {
    kind: String,
    severity: String,
    needs_attention: bool,
    alert: Alert,
    /// The note's message, for an op that needs attention.
    note: Option<String>,
}

impl Review {
    fn of(
        raw: &RawEditOp,
        settled: &Settled,
        found: &Found,
        rationale: &str,
        policy: &ReviewPolicy,
    ) -> Review {
        let (action, downgraded) = (settled.action, settled.downgraded);
        let kind = raw
            .kind
            .as_deref()
            .map(|k| k.trim().to_ascii_lowercase())
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| "style".to_owned());
        let mut severity = severity_of(raw.severity.as_deref()).to_owned();
        if action == Action::Delete {
            severity = "deletion".to_owned();
        }
        let needs_attention =
            matches!(action, Action::Delete | Action::FlagOnly) || severity != "minor";
        let alert = match action {
            Action::Delete => Alert::Caution,
            _ if downgraded => Alert::Warning,
            _ => policy.alert_for(&severity).unwrap_or(Alert::Note),
        };
        let note = needs_attention.then(|| {
            let base = if rationale.trim().is_empty() {
                format!("{} proposed by the model", action.as_str())
            } else {
                clip(rationale.trim(), 300)
            };
            match (action, downgraded) {
                (Action::Delete, _) => format!("deletion proposed: {base}"),
                (_, true) => format!(
                    "a {} was proposed but could not be placed safely ({}): {base}",
                    raw.action.as_str(),
                    if found.projected {
                        "made on a plain-text projection"
                    } else {
                        found.why_not()
                    }
                ),
                _ => base,
            }
        });
        Review {
            kind,
            severity,
            needs_attention,
            alert,
            note,
        }
    }
}

fn line_offset(text: &str, line: u32) -> usize {
    if line == 0 {
        return 0;
    }
    text.match_indices('\n')
        .nth(line as usize - 1)
        .map_or(text.len(), |(i, _)| i + 1)
}

fn line_end_offset(text: &str, line: u32) -> usize {
    text.match_indices('\n')
        .nth(line as usize)
        .map_or(text.len(), |(i, _)| i)
}

/// Gives a placed op its ID and writes its review note.
pub fn finish(placed: &Placed, id: ChangeId) -> EditOp {
    let mut op = placed.op.clone();
    op.id = id;
    if let (Some(note), Some(message)) = (op.review_note.as_mut(), placed.note.as_ref()) {
        note.text = format!("REVIEWER: {id} — {message}");
    }
    op
}

/// The note message of an op of a previous plan (its text without the
/// `REVIEWER: RVW-NNNN — ` prefix), so that a reused op gets a new ID.
pub fn note_message(op: &EditOp) -> Option<String> {
    let text = &op.review_note.as_ref()?.text;
    let rest = text.strip_prefix("REVIEWER: ").unwrap_or(text);
    let rest = match rest.split_once(" — ") {
        Some((id, message)) if ChangeId::parse(id).is_ok() => message,
        _ => rest,
    };
    Some(rest.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ladder::extract_edit_ops;
    use koas_review_schema::stage1::{BlockKind, ProtectedSpan};

    const DOC: &str = "# Title\n\nThe bandwith of the system is high.\n\nLogs are kept a year.\nLogs are kept a year.\n\nAnother chunk says teh thing.\n";

    fn run(answer: &str) -> Vec<Placement> {
        run_with(answer, None)
    }

    fn run_with(answer: &str, spans: Option<&ProtectedSpans>) -> Vec<Placement> {
        let doc = DocLines::new(DOC);
        let text = doc.text(1, 6);
        let piece = PieceView {
            id: "c1",
            anchor: "title",
            line_start: 1,
            line_end: 6,
            text: &text,
            projection: None,
        };
        let index = [(1u32, 6u32, "c1"), (7, 8, "c2")];
        let masked = Masked {
            text: text.clone(),
            ..Masked::default()
        };
        extract_edit_ops(answer)
            .ops
            .iter()
            .map(|raw| {
                place(
                    raw,
                    &masked,
                    &piece,
                    &doc,
                    &index,
                    spans,
                    &ReviewPolicy::default(),
                )
            })
            .collect()
    }

    fn op(p: &Placement) -> &EditOp {
        match p {
            Placement::Op(placed) => &placed.op,
            Placement::Dropped(d) => panic!("dropped: {d:?}"),
        }
    }

    fn reason(p: &Placement) -> &str {
        match p {
            Placement::Dropped(d) => &d.reason,
            Placement::Op(o) => panic!("placed: {o:?}"),
        }
    }

    #[test]
    fn wrong_missing_and_relative_line_numbers_land_on_the_text() {
        for lines in [
            "",
            r#", "line": 1"#,
            r#", "line": 99"#,
            r#", "lines": "2-3""#,
        ] {
            let answer = format!(
                r#"[{{"action": "replace", "before_text": "bandwith"{lines}, "after_text": "bandwidth", "kind": "typo"}}]"#
            );
            let got = run(&answer);
            let o = op(&got[0]);
            assert_eq!((o.target.line_start, o.target.line_end), (3, 3), "{lines}");
            assert_eq!(o.before_text.as_deref(), Some("bandwith"));
            assert_eq!(
                o.before_hash.as_deref(),
                Some(sha256("The bandwith of the system is high.").as_str())
            );
            assert!(o.silent && !o.needs_attention);
        }
    }

    #[test]
    fn whitespace_differences_still_place_the_op() {
        let got = run(
            r#"[{"action": "replace", "before_text": "The  bandwith\nof the system", "after_text": "The bandwidth of the system"}]"#,
        );
        assert_eq!(
            op(&got[0]).before_text.as_deref(),
            Some("The bandwith of the system")
        );
    }

    #[test]
    fn ambiguous_absent_and_foreign_text() {
        let got = run(r#"[
            {"action": "replace", "before_text": "Logs are kept a year.", "after_text": "Logs are kept one year."},
            {"action": "replace", "before_text": "Logs are kept a year.", "after_text": "x", "rationale": "The retention period is stated twice."},
            {"action": "replace", "before_text": "nowhere at all", "after_text": "x"},
            {"action": "replace", "before_text": "teh thing", "after_text": "the thing"},
            {"action": "insert", "after_text": "New line."}
        ]"#);
        assert_eq!(reason(&got[0]), "ambiguous");
        let flagged = op(&got[1]);
        assert_eq!(flagged.action, Action::FlagOnly);
        assert!(flagged.needs_attention);
        assert_eq!(flagged.target.line_start, 1);
        assert_eq!(reason(&got[2]), "not_found");
        assert_eq!(reason(&got[3]), "other_chunk");
        assert_eq!(reason(&got[4]), "no_anchor");
    }

    #[test]
    fn regression_a_note_that_copies_the_chunk_back_is_dropped_as_an_echo() {
        // SmolLM2-135M on seed 000: the "finding" was the chunk's own list.
        let got = run(
            "The bandwith of the system is high.\n\nLogs are kept a year.\nLogs   are kept a year.",
        );
        assert_eq!(reason(&got[0]), "echo");
        // A note that quotes the text to say what is wrong is a finding.
        let got = run(
            r#"[{"action": "flag_only", "before_text": "Logs are kept a year.", "rationale": "The sentence 'The bandwith of the system is high.' gives no figure."}]"#,
        );
        assert_eq!(op(&got[0]).action, Action::FlagOnly);
        assert!(!echoes_the_chunk("Too short.", "Too short."));
        // A model looping on one sentence has found nothing either.
        let got = run("1\nThe document's language is English. The document's language is English. The document's language is English. The document");
        assert_eq!(reason(&got[0]), "repetitive");
        assert_eq!(
            repeated_sentence("The figure is wrong. The figure in table 2 is wrong."),
            None
        );
        assert!(echoes_the_chunk(
            "Logs are kept a year.\nThe bandwith of the system is high.\nThis is wrong somehow, I think.",
            DOC
        ));
    }

    #[test]
    fn protected_lines_and_deletions() {
        let spans = ProtectedSpans {
            doc_hash: String::new(),
            line_count: 8,
            blocks: vec![ProtectedSpan::from_lines(BlockKind::Table, 5, 6)],
            inlines: vec![],
        };
        let got = run_with(
            r#"[{"action": "delete", "before_text": "Logs are kept a year.\nLogs are kept a year."},
                {"action": "delete", "before_text": "The bandwith of the system is high."}]"#,
            Some(&spans),
        );
        assert_eq!(reason(&got[0]), "protected");
        let Placement::Op(placed) = &got[1] else {
            panic!("{:?}", got[1])
        };
        let o = finish(placed, ChangeId::new(7).expect("id"));
        assert_eq!(o.severity, "deletion");
        assert!(o.needs_attention);
        let note = o.review_note.expect("note");
        assert_eq!(note.alert, Alert::Caution);
        assert!(
            note.text.starts_with("REVIEWER: RVW-0007 — deletion"),
            "{}",
            note.text
        );
        assert_eq!(
            note_message(&o_with(&note.text)).as_deref(),
            Some(&note.text["REVIEWER: RVW-0007 — ".len()..])
        );
    }

    fn o_with(text: &str) -> EditOp {
        let mut o = op(&run(r#"[{"action": "flag_only", "rationale": "look"}]"#)[0]).clone();
        o.review_note = Some(ReviewNote {
            alert: Alert::Note,
            text: text.to_owned(),
        });
        o
    }

    #[test]
    fn masked_content_is_restored_and_never_lost() {
        let doc = DocLines::new("Energy $E=mc^2$ is teh law.\n");
        let text = doc.text(1, 1);
        let masked = super::super::mask::mask_math(&text);
        let piece = PieceView {
            id: "c",
            anchor: "",
            line_start: 1,
            line_end: 1,
            text: &text,
            projection: None,
        };
        let place_one = |answer: &str| {
            let raw = &extract_edit_ops(answer).ops[0];
            place(
                raw,
                &masked,
                &piece,
                &doc,
                &[],
                None,
                &ReviewPolicy::default(),
            )
        };
        let got = place_one(
            r#"[{"action": "replace", "before_text": "[MATH_0] is teh law", "after_text": "[MATH_0] is the law"}]"#,
        );
        let o = op(&got);
        assert_eq!(o.before_text.as_deref(), Some("$E=mc^2$ is teh law"));
        assert_eq!(o.after_text, "$E=mc^2$ is the law");
        let got = place_one(
            r#"[{"action": "replace", "before_text": "[MATH_0] is teh law", "after_text": "It is the law"}]"#,
        );
        assert_eq!(reason(&got), "masked_content_lost");
    }

    #[test]
    fn find_reports_occurrences() {
        assert_eq!(find("a b a", "b"), Occurrence::Unique(2, 3));
        assert_eq!(find("a b a", "a"), Occurrence::Ambiguous(2));
        assert_eq!(find("a b a", "c"), Occurrence::Absent);
        assert_eq!(find("é  b\nc", "é b c"), Occurrence::Unique(0, 7));
    }
}
