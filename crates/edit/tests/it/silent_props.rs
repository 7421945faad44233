//! Property test: whatever an op says it is, when it is recorded silent it
//! left the document's Markdown structure and its polarity words (in the
//! document's language) as they were. Random careless edits (a character
//! added or removed, markers stripped or added, a word swapped for a
//! negation or a modal, a line split or joined, HTML and fences opened)
//! are proposed as `typo`, `grammar`, `punctuation`… on real documents,
//! by a model or a person, one op a batch; the whole document is parsed
//! before and after each applied op, independently of the guards' own
//! window.

use std::collections::BTreeSet;
use std::path::PathBuf;

use koas_edit::apply::{apply_batch, batch_states, BatchInput};
use koas_edit::lexicon::polarity_words_of;
use koas_md::shape::{compare, shape_of};
use koas_review_schema::apply::{ApplyOptions, OpOrigin};
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::stage1::ProtectedSpans;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use serde_json::json;

/// The repository's own documents, and the shared corpus's real ones
/// when it is present.
fn documents() -> Vec<(String, String)> {
    let root = koas_test_support::repo_root();
    let mut paths: Vec<PathBuf> = vec![
        root.join("examples/spec-example.md"),
        root.join("examples/audit-fr.md"),
        root.join("tests/fixtures/review/controle_acces.md"),
        root.join("tests/fixtures/review/retention_policy.md"),
    ];
    let corpus = koas_test_support::corpus::shared_files("corpus/real", &["md"]);
    if corpus.is_empty() {
        eprintln!("silent_props: the shared corpus is absent; the repository's own documents only");
    }
    // The two smallest real documents keep each case fast.
    let mut corpus: Vec<(u64, PathBuf)> = corpus
        .into_iter()
        .filter(|p| !p.ends_with("README.md"))
        .map(|p| {
            (
                std::fs::metadata(&p).map(|m| m.len()).unwrap_or(u64::MAX),
                p,
            )
        })
        .collect();
    corpus.sort();
    paths.extend(corpus.into_iter().take(2).map(|(_, p)| p));
    paths
        .into_iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
            (p.display().to_string(), text)
        })
        .collect()
}

/// A position in a line, whatever its length.
#[derive(Debug, Clone, Copy)]
struct Pos(u64);

impl Pos {
    fn index(self, len: usize) -> usize {
        (self.0 % len.max(1) as u64) as usize
    }
}

/// What a careless edit does to a line.
#[derive(Debug, Clone)]
enum Mutation {
    /// Inserts this text at a char position.
    Insert(Pos, &'static str),
    /// Removes the char at a position.
    Remove(Pos),
    /// Swaps two neighbouring chars.
    Swap(Pos),
    /// Replaces a word with this one.
    Word(Pos, &'static str),
    /// Removes a word.
    DropWord(Pos),
    /// Strips the line's leading markers (`#`, `-`, `>`, digits, spaces).
    StripMarkers,
    /// Puts this before the line.
    Prefix(&'static str),
    /// Joins the line with the next one.
    JoinNext,
}

const INSERTS: &[&str] = &[
    "#",
    "*",
    "_",
    "|",
    "-",
    ">",
    "<",
    "`",
    "[",
    "]",
    "~",
    " ",
    "a",
    "e",
    "s",
    "1",
    "\n",
    "\n\n",
    "<details>",
    "</div>",
    "|---|",
    "\n---",
    "\n|---|---|",
    "```",
    "\n```\n",
    "<!--",
    "**",
    "![x](y.png)",
    "[^1]",
    "  \n",
    "\\",
];
const WORDS: &[&str] = &[
    "not",
    "never",
    "no",
    "must",
    "may",
    "should",
    "can",
    "all",
    "only",
    "every",
    "more",
    "less",
    "before",
    "after",
    "enable",
    "disable",
    "pas",
    "ne",
    "doit",
    "peut",
    "tous",
    "jamais",
    "plus",
    "moins",
    "the",
    "a",
    "an",
    "le",
    "la",
    "des",
    "record",
    "policy",
    "system",
    "contrôle",
    "données",
    "bandwidth",
    "unsafe",
    "insecure",
];
const PREFIXES: &[&str] = &[
    "# ", "## ", "### ", "- ", "* ", "1. ", "> ", "    ", "| ", "<div>",
];
const KINDS: &[&str] = &[
    "typo",
    "spelling",
    "grammar",
    "punctuation",
    "spacing",
    "capitalization",
    "style",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<u64>(), proptest::sample::select(INSERTS))
            .prop_map(|(i, s)| Mutation::Insert(Pos(i), s)),
        any::<u64>().prop_map(|i| Mutation::Remove(Pos(i))),
        any::<u64>().prop_map(|i| Mutation::Swap(Pos(i))),
        (any::<u64>(), proptest::sample::select(WORDS))
            .prop_map(|(i, w)| Mutation::Word(Pos(i), w)),
        any::<u64>().prop_map(|i| Mutation::DropWord(Pos(i))),
        Just(Mutation::StripMarkers),
        proptest::sample::select(PREFIXES).prop_map(Mutation::Prefix),
        Just(Mutation::JoinNext),
    ]
}

/// The op a mutation of line `line` (1-based) of `lines` makes, or `None`
/// when it changes nothing.
fn op_for(lines: &[&str], line: usize, m: &Mutation, kind: &str) -> Option<serde_json::Value> {
    let text = lines[line - 1];
    let chars: Vec<char> = text.chars().collect();
    let words: Vec<&str> = text.split(' ').collect();
    let mut end = line;
    let after: String = match m {
        Mutation::Insert(i, s) => {
            let at = i.index(chars.len() + 1);
            let mut c = chars.clone();
            let tail: Vec<char> = c.split_off(at);
            format!(
                "{}{s}{}",
                c.iter().collect::<String>(),
                tail.iter().collect::<String>()
            )
        }
        Mutation::Remove(i) if !chars.is_empty() => {
            let mut c = chars.clone();
            c.remove(i.index(chars.len()));
            c.into_iter().collect()
        }
        Mutation::Swap(i) if chars.len() > 1 => {
            let mut c = chars.clone();
            let at = i.index(chars.len() - 1);
            c.swap(at, at + 1);
            c.into_iter().collect()
        }
        Mutation::Word(i, w) if !words.is_empty() => {
            let mut ws = words.clone();
            let at = i.index(ws.len());
            ws[at] = w;
            ws.join(" ")
        }
        Mutation::DropWord(i) if words.len() > 1 => {
            let mut ws = words.clone();
            ws.remove(i.index(ws.len()));
            ws.join(" ")
        }
        Mutation::StripMarkers => text
            .trim_start_matches(|c: char| "#->*+ 0123456789.|".contains(c))
            .to_owned(),
        Mutation::Prefix(p) => format!("{p}{text}"),
        Mutation::JoinNext if line < lines.len() => {
            end = line + 1;
            format!("{text} {}", lines[line])
        }
        _ => return None,
    };
    let before = lines[line - 1..end].join("\n");
    if after == before || after.trim().is_empty() {
        return None;
    }
    Some(
        json!({"action": "replace", "kind": kind, "severity": "minor",
        "target": {"line_start": line, "line_end": end},
        "before_text": before, "after_text": after}),
    )
}

/// Applies the op of mutation `m` of line `line` (1-based) of document
/// `text` and checks every applied op recorded silent; returns how many
/// silent ops were checked.
fn check(
    name: &str,
    text: &str,
    line: usize,
    m: &Mutation,
    kind: &str,
    origin: OpOrigin,
) -> Result<usize, TestCaseError> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(op) = op_for(&lines, line, m, kind) else {
        return Ok(0);
    };
    let (regions, _) = koas_md::stage1::protected_spans_for(text, ProtectedSpans::default());
    let ops = vec![op];
    let outcome = apply_batch(BatchInput {
        doc_name: "doc.md",
        text,
        ops: &ops,
        protected: &regions,
        ledger_ids: &BTreeSet::new(),
        first_id: ChangeId::first(),
        options: &ApplyOptions::default(),
        origins: &[origin],
        known: Default::default(),
    });
    let changed: Vec<_> = outcome
        .applied
        .iter()
        .filter(|a| a.change.is_some())
        .collect();
    let mut checked = 0;
    for ((before, after), applied) in batch_states(&outcome, text).zip(changed) {
        if !applied.op.silent {
            continue;
        }
        checked += 1;
        let structure = compare(&shape_of(&before, true), &shape_of(&after, true));
        prop_assert!(
            structure.is_empty(),
            "{name} line {line}: silent op {:?} ({}) changed the structure: {structure:?}",
            ops[0],
            applied.op.kind
        );
        prop_assert_eq!(
            polarity_words_of(&before),
            polarity_words_of(&after),
            "{} line {}: silent op {:?} changed polarity words",
            name,
            line,
            ops[0]
        );
    }
    Ok(checked)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn an_op_recorded_silent_changes_neither_structure_nor_polarity(
        doc in any::<Index>(),
        line in any::<Index>(),
        m in mutation(),
        kind in proptest::sample::select(KINDS),
        model in any::<bool>(),
    ) {
        let docs = documents();
        let (name, text) = &docs[doc.index(docs.len())];
        let line = line.index(text.lines().count()) + 1;
        let origin = if model { OpOrigin::Model } else { OpOrigin::Person };
        check(name, text, line, &m, kind, origin)?;
    }
}

/// The property is not vacuous: over every line of the repository's
/// documents, the small edits a typo fix makes (two letters swapped, a
/// letter removed) are recorded silent many times, and each passes the
/// check.
#[test]
fn many_small_edits_are_recorded_silent_and_each_keeps_structure_and_polarity() {
    let mut checked = 0;
    for (name, text) in documents().iter().take(4) {
        for line in 1..=text.lines().count() {
            for m in [
                Mutation::Swap(Pos(line as u64 * 7)),
                Mutation::Remove(Pos(line as u64 * 3)),
            ] {
                checked += check(name, text, line, &m, "typo", OpOrigin::Model)
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
    eprintln!("silent_props: {checked} silent ops checked on whole documents");
    assert!(checked >= 100, "only {checked} silent ops were checked");
}
