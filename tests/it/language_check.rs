//! Issue 46: language_check.
//!
//! Slips planted the way people slip (two letters swapped, one dropped, a
//! vowel changed) in a clean document of ours
//! (`tests/fixtures/language/planted-slips.md`), each in a word the
//! document uses elsewhere: `koas check` reports each on its word with the
//! word as first suggestion, and `koas check --fix` writes back exactly the
//! clean document. `scripts/lang-recall.py` measures the same on real
//! documents.

use crate::review_common::{assert_code, stdout, Scratch};
use serde_json::Value;
use std::path::Path;

/// The clean fixture: no finding of any kind.
fn clean() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/language/planted-slips.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A planted slip: 1-based line, the word, what it became.
struct Slip {
    line: usize,
    word: &'static str,
    slipped: &'static str,
}

const SLIPS: &[Slip] = &[
    // Two adjacent letters swapped.
    Slip {
        line: 4,
        word: "request",
        slipped: "reqeust",
    },
    // A letter dropped.
    Slip {
        line: 10,
        word: "configuration",
        slipped: "configuraton",
    },
    // A vowel changed.
    Slip {
        line: 25,
        word: "server",
        slipped: "sarver",
    },
];

/// The clean text with the slips planted (the first whole-word
/// occurrence on each slip's line), and each slip's 1-based character
/// columns `column..column_end`.
fn planted(clean: &str) -> (String, Vec<(u64, u64)>) {
    let mut lines: Vec<String> = clean.split('\n').map(str::to_owned).collect();
    let mut spans = Vec::new();
    for s in SLIPS {
        let line = &mut lines[s.line - 1];
        let at = line
            .match_indices(s.word)
            .map(|(i, _)| i)
            .find(|&i| {
                let before = line[..i].chars().next_back();
                let after = line[i + s.word.len()..].chars().next();
                !before.is_some_and(char::is_alphanumeric)
                    && !after.is_some_and(char::is_alphanumeric)
            })
            .unwrap_or_else(|| panic!("`{}` is on line {} of the fixture", s.word, s.line));
        line.replace_range(at..at + s.word.len(), s.slipped);
        let column = line[..at].chars().count() as u64 + 1;
        spans.push((column, column + s.slipped.chars().count() as u64));
    }
    (lines.join("\n"), spans)
}

fn check_json(scratch: &Scratch, name: &str) -> Vec<Value> {
    let out = scratch.koas(&[
        "check",
        "--no-config",
        "--quiet",
        "--fail-on",
        "never",
        "--format",
        "json",
        name,
    ]);
    assert_code(&out, 0, "koas check --format json");
    let findings: Value = serde_json::from_str(&stdout(&out)).expect("koas check prints JSON");
    findings.as_array().expect("a JSON array").clone()
}

#[test]
fn misspelling_of_planted_slips_on_their_word_with_suggestions_and_fix() {
    let clean = clean();
    let scratch = Scratch::new();
    scratch.write("clean.md", &clean);
    let none = check_json(&scratch, "clean.md");
    assert!(none.is_empty(), "the clean fixture has findings: {none:#?}");

    let (text, spans) = planted(&clean);
    scratch.write("doc.md", &text);
    let findings = check_json(&scratch, "doc.md");
    let clean_lines: Vec<&str> = clean.split('\n').collect();
    for (s, &(column, column_end)) in SLIPS.iter().zip(&spans) {
        let f = findings
            .iter()
            .find(|f| f["line"] == s.line as u64 && f["kind"] == "misspelling")
            .unwrap_or_else(|| {
                panic!(
                    "`{}` not reported on line {}: {findings:#?}",
                    s.slipped, s.line
                )
            });
        assert_eq!(
            (f["column"].as_u64(), f["column_end"].as_u64()),
            (Some(column), Some(column_end)),
            "the span of `{}`: {f:#}",
            s.slipped
        );
        assert_eq!(
            f["suggestions"][0], s.word,
            "best suggestion for `{}`",
            s.slipped
        );
        let edits = f["fix"]["edits"].as_array().expect("a certain fix");
        assert_eq!(edits.len(), 1, "one line edited: {f:#}");
        assert_eq!(edits[0]["line"], s.line as u64);
        assert_eq!(
            edits[0]["after"],
            clean_lines[s.line - 1],
            "the fix of `{}`",
            s.slipped
        );
    }
    assert_eq!(findings.len(), SLIPS.len(), "only the slips: {findings:#?}");
}

#[test]
fn misspelling_fix_restores_planted_slips_and_changes_no_other_line() {
    let clean = clean();
    let (text, _) = planted(&clean);
    // LF and CRLF: the fix keeps every other line, endings included.
    for (name, ending) in [("lf.md", "\n"), ("crlf.md", "\r\n")] {
        let scratch = Scratch::new();
        scratch.write(name, &text.replace('\n', ending));
        let out = scratch.koas(&["check", "--no-config", "--fix", name]);
        assert_code(&out, 0, "koas check --fix");
        let fixed = String::from_utf8(scratch.read(name)).expect("UTF-8");
        let want = clean.replace('\n', ending);
        if fixed != want {
            let diff: Vec<String> = want
                .split('\n')
                .zip(fixed.split('\n'))
                .enumerate()
                .filter(|(_, (a, b))| a != b)
                .map(|(i, (a, b))| format!("line {}: {a:?} -> {b:?}", i + 1))
                .collect();
            panic!(
                "{name}: --fix did not give back the clean document:\n{}",
                diff.join("\n")
            );
        }
    }
}
