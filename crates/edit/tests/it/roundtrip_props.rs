//! Property tests over random documents and random op sequences:
//! apply-then-revert gives back the original bytes (in reverse order, in a
//! bulk, and in any order the rules allow), no applied op changes a byte of
//! a protected region in strict mode, every forward patch applies to the
//! state it was made on (checked with `git apply` too) and its inverse
//! undoes it.

use std::collections::VecDeque;

use koas_edit::apply::batch_states;
use koas_edit::clock::SteppingClock;
use koas_edit::linemap::LineEdit;
use koas_edit::patch::apply_patch_text;
use koas_edit::protected::mapped_through;
use koas_edit::revert::RevertError;
use koas_edit::session::MemorySession;
use koas_edit::text::LineBuf;
use koas_review_schema::apply::{ApplyOptions, BatchOutcome};
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_op::Action;
use koas_review_schema::stage1::{
    BlockKind, InlineKind, InlineSpan, ProtectedSpan, ProtectedSpans,
};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Value};

const WORDS: &[&str] = &[
    "the",
    "système",
    "données",
    "naïve",
    "review",
    "Ωmega",
    "throughput",
    "lärm",
    "🚀",
    "clé",
    "audit",
    "paragraph",
    "Ünïcode",
    "retention",
    "purge",
];

#[derive(Debug, Clone)]
enum Block {
    Heading(u8, Vec<usize>),
    Para(Vec<(Vec<usize>, bool)>),
    Fence(usize),
    Table(usize),
    Blank,
}

#[derive(Debug, Clone)]
struct DocSpec {
    blocks: Vec<Block>,
    crlf: bool,
    final_newline: bool,
    bom: bool,
}

fn block() -> impl Strategy<Value = Block> {
    let words = prop::collection::vec(0..WORDS.len(), 1..8);
    prop_oneof![
        (1u8..4, words.clone()).prop_map(|(l, w)| Block::Heading(l, w)),
        prop::collection::vec((words, any::<bool>()), 1..4).prop_map(Block::Para),
        (1usize..4).prop_map(Block::Fence),
        (1usize..4).prop_map(Block::Table),
        Just(Block::Blank),
    ]
}

fn doc_spec() -> impl Strategy<Value = DocSpec> {
    (
        prop::collection::vec(block(), 1..14),
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(blocks, crlf, final_newline, bom)| DocSpec {
            blocks,
            crlf,
            final_newline,
            bom,
        })
}

struct Doc {
    text: String,
    regions: ProtectedSpans,
    /// Strings that must survive in strict mode.
    protected_texts: Vec<String>,
}

fn render(spec: &DocSpec) -> Doc {
    let mut lines: Vec<String> = Vec::new();
    let mut blocks = Vec::new();
    let mut inline_tokens: Vec<(usize, String)> = Vec::new();
    let mut unique = 0usize;
    for block in &spec.blocks {
        unique += 1;
        match block {
            Block::Heading(level, words) => {
                let text: Vec<&str> = words.iter().map(|&i| WORDS[i]).collect();
                lines.push(format!(
                    "{} {} {unique}",
                    "#".repeat(*level as usize),
                    text.join(" ")
                ));
            }
            Block::Para(ps) => {
                for (words, with_code) in ps {
                    let mut text: Vec<String> =
                        words.iter().map(|&i| WORDS[i].to_owned()).collect();
                    if *with_code {
                        let token = format!("`code_{unique}_{}`", lines.len());
                        text.insert(text.len() / 2, token.clone());
                        inline_tokens.push((lines.len() + 1, token));
                    }
                    lines.push(text.join(" "));
                }
                lines.push(String::new());
            }
            Block::Fence(n) => {
                let start = lines.len() + 1;
                lines.push("```text".into());
                for i in 0..*n {
                    lines.push(format!("fence {unique} body {i}"));
                }
                lines.push("```".into());
                blocks.push(ProtectedSpan::from_lines(
                    BlockKind::CodeFence,
                    (start) as u32,
                    (lines.len()) as u32,
                ));
            }
            Block::Table(rows) => {
                let start = lines.len() + 1;
                lines.push(format!("| key {unique} | value |"));
                lines.push("|---|---|".into());
                for r in 0..*rows {
                    lines.push(format!("| r{unique}.{r} | {} |", WORDS[r % WORDS.len()]));
                }
                blocks.push(ProtectedSpan::from_lines(
                    BlockKind::Table,
                    (start) as u32,
                    (lines.len()) as u32,
                ));
            }
            Block::Blank => lines.push(String::new()),
        }
    }
    let eol = if spec.crlf { "\r\n" } else { "\n" };
    let mut text = String::new();
    if spec.bom {
        text.push('\u{feff}');
    }
    text.push_str(&lines.join(eol));
    if spec.final_newline {
        text.push_str(eol);
    }
    let buf = LineBuf::parse(&text);
    let offsets = buf.line_offsets();
    let inline = inline_tokens
        .iter()
        .map(|(line, token)| {
            let line_start = offsets[line - 1];
            let within = buf
                .raw_line(line - 1)
                .unwrap_or("")
                .find(token.as_str())
                .unwrap_or(0);
            let raw = buf.raw_line(line - 1).unwrap_or("");
            let col_start = raw[..within].chars().count() + 1;
            InlineSpan {
                kind: InlineKind::InlineCode,
                line: (*line) as u32,
                column: (col_start) as u32,
                end_line: (*line) as u32,
                end_column: (col_start + token.chars().count() - 1) as u32,
                byte_start: (line_start + within) as u64,
                byte_end: (line_start + within + token.len()) as u64,
            }
        })
        .collect();
    let mut protected_texts: Vec<String> = blocks
        .iter()
        .map(|b| {
            (b.line_start as usize..=b.line_end as usize)
                .map(|l| buf.content(l - 1).unwrap_or("").to_owned())
                .collect::<Vec<_>>()
                .join(eol)
        })
        .collect();
    protected_texts.extend(inline_tokens.iter().map(|(_, t)| t.clone()));
    Doc {
        text,
        regions: ProtectedSpans {
            blocks,
            inlines: inline,
            ..Default::default()
        },
        protected_texts,
    }
}

type OpSpec = (u8, Index, usize, bool, Index);

fn op_specs() -> impl Strategy<Value = Vec<OpSpec>> {
    prop::collection::vec(
        (
            0u8..6,
            any::<Index>(),
            1usize..3,
            any::<bool>(),
            any::<Index>(),
        ),
        1..10,
    )
}

fn to_ops(specs: &[OpSpec], text: &str) -> Vec<Value> {
    let buf = LineBuf::parse(text);
    let n = buf.len().max(1);
    specs
        .iter()
        .map(|(kind, line, span, attention, word)| {
            let start = line.index(n) + 1;
            let end = (start + span - 1).min(n);
            let content = buf.content(start - 1).unwrap_or("");
            let words: Vec<&str> = content.split_whitespace().filter(|w| content.matches(*w).count() == 1).collect();
            let after = format!("nouveau {} ✓", WORDS[word.index(WORDS.len())]);
            let mut op = match kind {
                0 if !words.is_empty() => json!({"action": "replace", "kind": "typo", "target": {"line_start": start},
                    "before_text": words[word.index(words.len())], "after_text": after}),
                0 | 1 => json!({"action": "replace", "kind": "style", "target": {"line_start": start, "line_end": end}, "after_text": after}),
                2 => json!({"action": "insert", "kind": "grammar", "target": {"line_start": start, "line_end": start}, "after_text": format!("{after}\n\nsecond")}),
                3 => json!({"action": "insert", "kind": "grammar", "target": {"line_start": 0, "line_end": 0}, "after_text": after}),
                4 => json!({"action": "delete", "target": {"line_start": start, "line_end": end}}),
                _ => json!({"action": "flag_only", "target": {"line_start": start}, "rationale": "look"}),
            };
            if *attention {
                op["needs_attention"] = json!(true);
            }
            op
        })
        .collect()
}

fn check_patch_chain(
    initial: &str,
    out: &BatchOutcome,
    git_budget: &mut usize,
) -> Result<(), TestCaseError> {
    let states: Vec<(String, String)> = batch_states(out, initial).collect();
    let with_patches: Vec<_> = out
        .applied
        .iter()
        .filter_map(|a| a.patches.as_ref())
        .collect();
    prop_assert_eq!(states.len(), with_patches.len());
    for ((before, after), pair) in states.iter().zip(&with_patches) {
        prop_assert_eq!(
            &apply_patch_text(before, &pair.forward)
                .map_err(|e| TestCaseError::fail(e.to_string()))?,
            after
        );
        prop_assert_eq!(
            &apply_patch_text(after, &pair.inverse)
                .map_err(|e| TestCaseError::fail(e.to_string()))?,
            before
        );
        if *git_budget > 0 && koas_test_support::git_available() {
            *git_budget -= 1;
            koas_test_support::git_apply_check("doc.md", before, &pair.forward).map_err(|e| {
                TestCaseError::fail(format!(
                    "git apply --check refused:\n{e}\n--- patch ---\n{}",
                    pair.forward
                ))
            })?;
            let by_git = koas_test_support::git_apply("doc.md", after, &pair.inverse)
                .map_err(TestCaseError::fail)?;
            prop_assert_eq!(&by_git, before, "git's inverse application differs");
        }
    }
    Ok(())
}

fn edits_of(out: &BatchOutcome) -> Vec<LineEdit> {
    out.applied
        .iter()
        .filter_map(|a| a.change.as_ref())
        .map(|c| LineEdit {
            start: c.start,
            old_len: c.old.len(),
            new_len: c.new.len(),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn apply_then_revert_restores_every_byte(
        spec in doc_spec(),
        first in op_specs(),
        second in op_specs(),
        strict in any::<bool>(),
        order_seed in any::<u64>(),
    ) {
        let doc = render(&spec);
        let options = ApplyOptions { strict, ..ApplyOptions::default() };
        let clock = SteppingClock::new("2026-01-01T00:00:00Z");
        let actor = crate::common::actor();
        let mut session = MemorySession::new("doc.md", &doc.text);
        let mut git_budget = 2;

        let out1 = session.apply(&to_ops(&first, &doc.text), &doc.regions, &options, &actor, &clock, "r1").unwrap();
        check_patch_chain(&doc.text, &out1, &mut git_budget)?;
        let after_first = session.text.clone();
        let regions2 = mapped_through(&doc.regions, &edits_of(&out1), &LineBuf::parse(&after_first));
        let out2 = session.apply(&to_ops(&second, &after_first), &regions2, &options, &actor, &clock, "r2").unwrap();
        check_patch_chain(&after_first, &out2, &mut git_budget)?;

        // Protected regions.
        let all_applied: Vec<_> = out1.applied.iter().chain(&out2.applied).collect();
        for applied in &all_applied {
            if !applied.touches_protected.is_empty() {
                prop_assert!(!strict, "strict mode applied an op touching {:?}", applied.touches_protected);
                prop_assert!(applied.op.needs_attention && applied.op.review_note.is_some());
            }
        }
        if all_applied.iter().all(|a| a.touches_protected.is_empty()) {
            for protected in &doc.protected_texts {
                prop_assert!(session.text.contains(protected.as_str()), "protected text {:?} changed:\n{}", protected, session.text);
            }
        }

        // Every change, in one bulk revert.
        let changes: Vec<ChangeId> = session
            .entries
            .iter()
            .filter(|e| e.action != Action::FlagOnly)
            .filter_map(|e| e.change_id())
            .collect();
        let mut bulk = session.clone();
        let plan = bulk.revert(&changes, "", &actor, &clock, "bulk").map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&bulk.text, &doc.text);
        if let Some(first_revert) = plan.reverts.first() {
            if git_budget > 0 && koas_test_support::git_available() {
                let before = session.text.clone();
                koas_test_support::git_apply_check("doc.md", &before, &first_revert.patches.forward).map_err(TestCaseError::fail)?;
            }
        }

        // One at a time in a pseudo-random order; refused reverts must
        // change nothing and are retried later.
        let mut single = session.clone();
        let mut queue: VecDeque<ChangeId> = changes.iter().copied().collect();
        let mut rng = koas_test_support::Rng(order_seed | 1);
        let mut spins = 0;
        while let Some(id) = {
            // Random order, but after a refusal try the others first.
            if !queue.is_empty() && spins == 0 {
                let k = rng.below(queue.len());
                queue.swap(0, k);
            }
            queue.pop_front()
        } {
            let snapshot = single.clone();
            match single.revert(&[id], "", &actor, &clock, "one") {
                Ok(_) => spins = 0,
                Err(RevertError::Conflict { .. } | RevertError::AfterUnterminatedEnd { .. }) => {
                    prop_assert_eq!(&single, &snapshot, "a refused revert changed something");
                    queue.push_back(id);
                    spins += 1;
                    prop_assert!(spins <= queue.len(), "every remaining revert is refused: no order works");
                }
                Err(other) => return Err(TestCaseError::fail(other.to_string())),
            }
        }
        prop_assert_eq!(&single.text, &doc.text);
    }
}
