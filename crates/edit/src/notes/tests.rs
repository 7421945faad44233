use super::*;
use crate::clock::SteppingClock;
use crate::session::MemorySession;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_op::{Alert, ReviewPolicy};
use koas_review_schema::ledger::Actor;
use koas_review_schema::stage1::ProtectedSpan;
use koas_review_schema::stage1::{BlockKind, ProtectedSpans};
use serde_json::{json, Value};

/// Options without the content guards: these tests are about other
/// things, with synthetic edits a guard would flag.
fn unguarded() -> ApplyOptions {
    let mut o = ApplyOptions::default();
    o.normalize.content_guards = false;
    o
}

fn actor() -> Actor {
    Actor {
        tool: "koas-review test".into(),
        operator: "tester".into(),
    }
}

fn session_with(text: &str, ops: Vec<Value>, protected: &ProtectedSpans) -> MemorySession {
    let mut s = MemorySession::new("doc.md", text);
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    let out = s
        .apply(&ops, protected, &unguarded(), &actor(), &clock, "run")
        .unwrap();
    assert!(out.rejected.is_empty(), "{:?}", out.rejected);
    s
}

#[test]
fn note_goes_after_the_paragraph_with_blank_lines() {
    let text = "# T\n\nFirst line of para.\nSecond line of para.\n\nNext para.\n";
    let s = session_with(
        text,
        vec![
            json!({"action": "replace", "kind": "terminology", "severity": "attention",
            "target": {"line_start": 3}, "after_text": "First line, reworded.",
            "rationale": "Clearer wording."}),
        ],
        &ProtectedSpans::default(),
    );
    let out = annotate(
        &s.text,
        &s.entries,
        &ProtectedSpans::default(),
        &ReviewPolicy::default(),
    );
    assert_eq!(
        out.text,
        "# T\n\nFirst line, reworded.\nSecond line of para.\n\n> [!WARNING]\n> REVIEWER: RVW-0001 — Clearer wording.\n\nNext para.\n"
    );
    assert_eq!(out.notes[0].after_line, 4);
}

#[test]
fn alert_follows_severity_and_silent_changes_get_none() {
    let text = "a\n\nb\n\nc\n";
    let s = session_with(
        text,
        vec![
            json!({"action": "replace", "kind": "typo", "target": {"line_start": 1}, "after_text": "A"}),
            json!({"action": "delete", "target": {"line_start": 3}}),
            json!({"action": "replace", "kind": "logic", "severity": "critical", "target": {"line_start": 5}, "after_text": "C"}),
        ],
        &ProtectedSpans::default(),
    );
    let out = annotate(
        &s.text,
        &s.entries,
        &ProtectedSpans::default(),
        &ReviewPolicy::default(),
    );
    let alerts: Vec<Alert> = out.notes.iter().map(|n| n.alert).collect();
    assert_eq!(alerts, vec![Alert::Caution, Alert::Important]);
    assert!(out
        .text
        .contains("> [!CAUTION]\n> REVIEWER: RVW-0002 — flagged for attention\n"));
    assert!(!out.text.contains("RVW-0001"));
}

#[test]
fn never_inside_a_protected_block_and_keeps_crlf() {
    let text = "Intro\r\n```\r\ncode\r\n```\r\nTail\r\n";
    let protected = ProtectedSpans {
        blocks: vec![ProtectedSpan::from_lines(BlockKind::CodeFence, 2, 4)],
        inlines: vec![],
        ..Default::default()
    };
    let s = session_with(
        text,
        vec![
            json!({"action": "replace", "kind": "terminology", "target": {"line_start": 1}, "after_text": "Introduction"}),
        ],
        &protected,
    );
    let out = annotate(&s.text, &s.entries, &protected, &ReviewPolicy::default());
    assert_eq!(
        out.text,
        "Introduction\r\n\r\n> [!NOTE]\r\n> REVIEWER: RVW-0001 — flagged for attention\r\n\r\n```\r\ncode\r\n```\r\nTail\r\n"
    );
    // A change inside the block (allowed: it needs attention) gets its note
    // after the block, not inside it.
    let s = session_with(
        text,
        vec![
            json!({"action": "replace", "kind": "code", "target": {"line_start": 3}, "after_text": "code2"}),
        ],
        &protected,
    );
    let out = annotate(&s.text, &s.entries, &protected, &ReviewPolicy::default());
    assert_eq!(
        out.text,
        "Intro\r\n```\r\ncode2\r\n```\r\n\r\n> [!NOTE]\r\n> REVIEWER: RVW-0001 — flagged for attention\r\n\r\nTail\r\n"
    );
}

#[test]
fn reverted_changes_lose_their_note_and_missing_final_newline_is_kept() {
    let text = "one\n\ntwo";
    let mut s = session_with(
        text,
        vec![
            json!({"action": "replace", "kind": "terminology", "target": {"line_start": 1}, "after_text": "ONE"}),
            json!({"action": "replace", "kind": "terminology", "target": {"line_start": 3}, "after_text": "TWO"}),
        ],
        &ProtectedSpans::default(),
    );
    let out = annotate(
        &s.text,
        &s.entries,
        &ProtectedSpans::default(),
        &ReviewPolicy::default(),
    );
    assert!(out
        .text
        .ends_with("TWO\n\n> [!NOTE]\n> REVIEWER: RVW-0002 — flagged for attention"));
    assert_eq!(out.notes.len(), 2);
    let clock = SteppingClock::new("2026-01-02T00:00:00Z");
    s.revert(&[ChangeId::new(2).unwrap()], "", &actor(), &clock, "r")
        .unwrap();
    let out = annotate(
        &s.text,
        &s.entries,
        &ProtectedSpans::default(),
        &ReviewPolicy::default(),
    );
    assert_eq!(out.notes.len(), 1);
    assert_eq!(
        out.text,
        "ONE\n\n> [!NOTE]\n> REVIEWER: RVW-0001 — flagged for attention\n\ntwo"
    );
}

#[test]
fn notes_follow_later_line_shifts() {
    let text = "p1\n\np2\n\np3\n";
    let mut s = session_with(
        text,
        vec![
            json!({"action": "replace", "kind": "terminology", "target": {"line_start": 5}, "after_text": "P3"}),
        ],
        &ProtectedSpans::default(),
    );
    let clock = SteppingClock::new("2026-01-02T00:00:00Z");
    s.apply(
        &[json!({"action": "insert", "kind": "grammar", "target": {"line_start": 1, "line_end": 1}, "after_text": "\nadded\nlines"})],
        &ProtectedSpans::default(),
        &unguarded(),
        &actor(),
        &clock,
        "run2",
    )
    .unwrap();
    let out = annotate(
        &s.text,
        &s.entries,
        &ProtectedSpans::default(),
        &ReviewPolicy::default(),
    );
    let n = out
        .notes
        .iter()
        .find(|n| n.id == ChangeId::first())
        .unwrap();
    assert_eq!(n.after_line, 8, "{}", out.text);
    assert!(out.text.contains("P3\n\n> [!NOTE]\n> REVIEWER: RVW-0001"));
}

#[test]
fn heading_changes_get_the_note_right_after_the_heading() {
    let text = "# Old title\nBody text.\n";
    let s = session_with(
        text,
        vec![
            json!({"action": "replace", "kind": "structure", "target": {"line_start": 1}, "after_text": "# New title"}),
        ],
        &ProtectedSpans::default(),
    );
    let out = annotate(
        &s.text,
        &s.entries,
        &ProtectedSpans::default(),
        &ReviewPolicy::default(),
    );
    assert_eq!(
        out.text,
        "# New title\n\n> [!NOTE]\n> REVIEWER: RVW-0001 — flagged for attention\n\nBody text.\n"
    );
}

/// The walk `settle` did before `paragraph_ends`: line by line to the end
/// of the paragraph, for every note.
fn settle_by_walking(doc: &LineBuf, place: &Placement<'_>, mut line: usize) -> usize {
    let content = |l: usize| doc.content(l - 1).unwrap_or("");
    for _ in 0..=doc.len() {
        let before = line;
        if let Some(block) = place.block(line) {
            line = block.line_end as usize;
        } else if line > 0 && !is_blank(content(line)) && !is_atx_heading(content(line)) {
            while line < doc.len()
                && !is_blank(content(line + 1))
                && !is_atx_heading(content(line + 1))
                && place.block(line + 1).is_none()
            {
                line += 1;
            }
        }
        if let Some(end) = place.inline_end(line) {
            line = end;
        }
        if line == before {
            break;
        }
    }
    line.min(doc.len())
}

proptest::proptest! {
    /// Precomputed paragraph ends place every note where walking the
    /// paragraph did, whatever the lines and protected blocks.
    #[test]
    fn paragraph_ends_place_notes_like_the_walk(
        kinds in proptest::collection::vec(0u8..4, 0..40),
        blocks in proptest::collection::vec((1u32..45, 0u32..4), 0..4),
        no_final_newline: bool,
    ) {
        let mut text: String = kinds
            .iter()
            .map(|k| match k {
                0 => "\n",
                1 => "# Heading\n",
                2 => "   \n",
                _ => "prose line\n",
            })
            .collect();
        if no_final_newline {
            text.pop();
        }
        let doc = LineBuf::parse(&text);
        let spans = ProtectedSpans {
            blocks: blocks
                .iter()
                .map(|&(start, len)| ProtectedSpan::from_lines(BlockKind::CodeFence, start, start + len))
                .collect(),
            ..ProtectedSpans::default()
        };
        let place = Placement::new(&spans, doc.len());
        let ends = paragraph_ends(&doc, &place);
        for line in 0..=doc.len() {
            proptest::prop_assert_eq!(
                settle(&doc, &place, &ends, line),
                settle_by_walking(&doc, &place, line),
                "line {}", line
            );
        }
    }
}

/// The forms a hostile note must never show unescaped.
const RAW_FORMS: [&str; 5] = ["<script", "<img", "![", "](javascript:", "](http"];

/// `form` occurs in `text` without a backslash before it.
fn shows_unescaped(text: &str, form: &str) -> bool {
    text.match_indices(form)
        .any(|(at, _)| !text[..at].ends_with('\\'))
}

#[test]
fn a_hostile_note_is_shown_escaped_and_kept_as_written_in_the_ledger() {
    let note = "<script>alert(1)</script> <img src=x onerror=alert(1)>\n# not a heading\n![x](http://tracker/p.png) [y](javascript:alert(1))";
    let text = "# T\n\nA line.\n\nNext.\n";
    let s = session_with(
        text,
        vec![
            json!({"action": "flag_only", "kind": "style", "severity": "attention",
            "needs_attention": true, "target": {"line_start": 3},
            "review_note": {"alert": "WARNING", "text": format!("REVIEWER: RVW-0001 — {note}")}}),
        ],
        &ProtectedSpans::default(),
    );
    let out = annotate(
        &s.text,
        &s.entries,
        &ProtectedSpans::default(),
        &ReviewPolicy::default(),
    );
    for raw in RAW_FORMS {
        assert!(!shows_unescaped(&out.text, raw), "{raw} in {}", out.text);
    }
    assert!(out.text.contains(
        "> [!WARNING]\n> REVIEWER: RVW-0001 — &lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt;\n> \\# not a heading\n> !\\[x\\](http://tracker/p.png) \\[y\\](javascript:alert(1))\n"
    ), "{}", out.text);
    // The ledger and the placed note are data: as written.
    let written = s.entries[0].review_note.as_ref().map(|n| n.text.as_str());
    assert!(written.is_some_and(|t| t.contains("<script>alert(1)</script>")));
    assert!(out.notes[0].text.contains("<img src=x onerror=alert(1)>"));
}

/// The regions of `text`, as Stage 1 detects them.
fn detected(text: &str) -> ProtectedSpans {
    koas_md::stage1::protected_spans_for(text, ProtectedSpans::default()).0
}

/// The 1-based lines of `text` holding a note's `REVIEWER:` line that a
/// code block (fenced or indented) holds.
fn notes_in_code(text: &str) -> Vec<usize> {
    let spans = detected(text);
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains("REVIEWER: RVW-"))
        .map(|(i, _)| i + 1)
        .filter(|&line| {
            spans.blocks.iter().any(|b| {
                matches!(b.kind, BlockKind::CodeFence | BlockKind::IndentedCode)
                    && (b.line_start as usize) <= line
                    && line <= b.line_end as usize
            })
        })
        .collect()
}

#[test]
fn a_note_is_never_placed_inside_a_fence_left_open_at_the_end() {
    // The document ends inside an unclosed fence; a person's change of a
    // line in it (allowed with attention) gets its note before the fence.
    for opener in ["```", "~~~", "````", "   ```", "```rust", "~~~ python"] {
        let text = format!("# T\n\nIntro.\n\n{opener}\ncode one\ncode two\n");
        let protected = detected(&text);
        let s = session_with(
            &text,
            vec![
                json!({"action": "replace", "kind": "code", "target": {"line_start": 6}, "after_text": "code 1"}),
            ],
            &protected,
        );
        let out = annotate(&s.text, &s.entries, &protected, &ReviewPolicy::default());
        assert_eq!(
            out.text,
            format!("# T\n\nIntro.\n\n> [!NOTE]\n> REVIEWER: RVW-0001 — flagged for attention\n\n{opener}\ncode 1\ncode two\n"),
            "{opener:?}"
        );
        assert_eq!(out.notes[0].after_line, 4);
        assert!(notes_in_code(&out.text).is_empty(), "{}", out.text);
    }
    // A closed fence at the end keeps its note after it.
    let text = "Intro.\n\n```\ncode\n```\n";
    let protected = detected(text);
    let s = session_with(
        text,
        vec![
            json!({"action": "replace", "kind": "code", "target": {"line_start": 4}, "after_text": "code2"}),
        ],
        &protected,
    );
    let out = annotate(&s.text, &s.entries, &protected, &ReviewPolicy::default());
    assert_eq!(out.notes[0].after_line, 5);
}

/// Lines a generated document is made of: prose, headings, blank lines,
/// list items, indented code, quotes, and fences of every form (closed
/// or not, depending on what follows).
const LINES: [&str; 14] = [
    "prose line",
    "",
    "# Heading",
    "- item",
    "    indented code",
    "> quoted",
    "```",
    "~~~",
    "````",
    "   ```",
    "```rust",
    "~~~ text",
    "> ```",
    "- ```",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// For any document and any person's ops the batch accepts, no note
    /// of the annotated document lands inside a code block.
    #[test]
    fn no_note_lands_inside_a_code_block(
        kinds in proptest::collection::vec(0usize..LINES.len(), 1..24),
        ops in proptest::collection::vec((0usize..24, proptest::collection::vec(0usize..LINES.len(), 1..3)), 1..4),
        no_final_newline: bool,
    ) {
        let mut text: String = kinds.iter().map(|&k| format!("{}\n", LINES[k])).collect();
        if no_final_newline {
            text.pop();
        }
        let lines = kinds.len();
        let ops: Vec<Value> = ops
            .iter()
            .map(|(line, after)| {
                let after: Vec<&str> = after.iter().map(|&k| LINES[k]).collect();
                json!({"action": "replace", "kind": "correction",
                    "target": {"line_start": line % lines + 1},
                    "after_text": after.join("\n"), "needs_attention": true,
                    "rationale": "a person's edit"})
            })
            .collect();
        let protected = detected(&text);
        let mut s = MemorySession::new("doc.md", &text);
        let clock = SteppingClock::new("2026-01-01T00:00:00Z");
        // A person's ops (the session's default origin), content guards off
        // so that more of them are applied.
        let _ = s.apply(&ops, &protected, &unguarded(), &actor(), &clock, "run");
        let now = detected(&s.text);
        let out = annotate(&s.text, &s.entries, &now, &ReviewPolicy::default());
        proptest::prop_assert!(
            notes_in_code(&out.text).is_empty(),
            "notes in code at {:?}:\n{}", notes_in_code(&out.text), out.text
        );
    }
}
