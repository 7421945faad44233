//! A careless model that labels every edit `typo`, through the real
//! binary: a dropped negation, a flipped modal, a heading's `##` removed,
//! a list item's marker removed, a table made under a sentence, an HTML
//! element left open, an invisible character, a number where a text
//! belongs. In English and in French, each is refused or applied with
//! attention and a note naming what changed; never silent. A model that
//! fixes only true typos still lands every one, silently. And a review run
//! again records nothing twice: a dismissed flag and a reverted change
//! stay so.

use crate::review_common::{assert_code, edit_model, llm_flags, stderr, stdout, Scratch};
use koas_test_support::model::ScriptedModel;
use serde_json::{json, Value};

/// A model that answers each edit request with the ops of every needle
/// found in the chunk it is shown, and summaries to the pyramid.
fn model_with(ops: Vec<(&'static str, Value)>) -> ScriptedModel {
    edit_model(move |chunk| {
        ops.iter()
            .filter(|(needle, _)| chunk.contains(needle))
            .map(|(_, op)| op.clone())
            .collect()
    })
}

fn review(s: &Scratch, model: &ScriptedModel) -> (std::process::Output, Value) {
    let mut args = vec!["review".to_owned(), "doc.md".to_owned()];
    args.extend(llm_flags(model, 2));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    s.koas_json(&args)
}

fn typo(before: &str, after: Value) -> Value {
    json!({"action": "replace", "line": 1, "before_text": before, "after_text": after,
           "kind": "typo", "severity": "minor", "rationale": "typo"})
}

/// One language's careless review: the document, and per class the
/// needle, the op and what must come of it.
struct Case {
    doc: &'static str,
    negation: (&'static str, &'static str, &'static str),
    modal: (&'static str, &'static str, &'static str),
    heading: &'static str,
    item: &'static str,
    sentence: &'static str,
    closing: &'static str,
    invisible: (&'static str, &'static str),
    typed: &'static str,
}

const EN: Case = Case {
    doc: "# Operations handbook\n\n## Payment routing\n\nThe platform does not own payment routing.\n\n## Access\n\nAccess must be enforced for every account.\n\n## Steps\n\n- Open the console.\n- Check the alerts.\n- Close the ticket.\n\n## Notes\n\nThe rules apply to everyone.\n\nSome closing words here.\n",
    negation: (
        "does not own",
        "does own",
        "negation removed: 'not'",
    ),
    modal: (
        "must be enforced",
        "may be enforced",
        "modal changed: 'must' → 'may'",
    ),
    heading: "## Access",
    item: "- Check the alerts.",
    sentence: "The rules apply to everyone.",
    closing: "Some closing words here.",
    invisible: ("Open the console.", "Open the con\u{200B}sole."),
    typed: "Close the ticket.",
};

const FR: Case = Case {
    doc: "# Manuel d'exploitation\n\n## Routage des paiements\n\nLa plateforme ne gère pas le routage des paiements.\n\n## Accès\n\nL'accès doit être contrôlé pour chaque compte.\n\n## Étapes\n\n- Ouvrir la console.\n- Vérifier les alertes.\n- Fermer le ticket.\n\n## Notes\n\nLes règles s'appliquent à tous.\n\nQuelques mots de conclusion ici.\n",
    negation: (
        "ne gère pas le",
        "gère le",
        "negation removed: 'ne', 'pas'",
    ),
    modal: (
        "doit être contrôlé",
        "peut être contrôlé",
        "modal changed: 'doit' → 'peut'",
    ),
    heading: "## Accès",
    item: "- Vérifier les alertes.",
    sentence: "Les règles s'appliquent à tous.",
    closing: "Quelques mots de conclusion ici.",
    invisible: ("Ouvrir la console.", "Ouvrir la con\u{202E}sole."),
    typed: "Fermer le ticket.",
};

fn careless_review_is_never_silent(case: &Case) {
    let heading_text = case.heading.trim_start_matches("## ");
    let item_text = case.item.trim_start_matches("- ");
    let ops = vec![
        (
            case.negation.0,
            typo(case.negation.0, json!(case.negation.1)),
        ),
        (case.modal.0, typo(case.modal.0, json!(case.modal.1))),
        (case.heading, typo(case.heading, json!(heading_text))),
        (case.item, typo(case.item, json!(item_text))),
        (
            case.sentence,
            typo(
                case.sentence,
                json!(format!("| {} |\n|---|", case.sentence)),
            ),
        ),
        (
            case.closing,
            typo(case.closing, json!(format!("{} <details>", case.closing))),
        ),
        (
            case.invisible.0,
            typo(case.invisible.0, json!(case.invisible.1)),
        ),
        (case.typed, typo(case.typed, json!(12345))),
    ];
    let m = model_with(ops);
    let s = Scratch::new();
    s.write("doc.md", case.doc);
    let (out, v) = review(&s, &m);
    assert_code(&out, 0, "careless review");
    let log = v["apply_log"].as_array().expect("apply log").clone();
    let record = |needle: &str| -> Value {
        log.iter()
            .find(|r| {
                r["reason"].as_str().is_some_and(|t| t.contains(needle))
                    || r["fixes"].to_string().contains(needle)
            })
            .cloned()
            .unwrap_or_else(|| panic!("no apply log record mentions {needle:?}: {v}"))
    };
    // Meaning: applied, with attention and a note naming the change.
    let notes = v["notes"].as_array().expect("notes").clone();
    for (_, _, says) in [case.negation, case.modal] {
        let r = record(says);
        assert_eq!(r["status"], "applied", "{r}");
        assert!(
            notes
                .iter()
                .any(|n| n["text"].as_str().is_some_and(|t| t.contains(says))),
            "a note says {says:?}: {notes:?}"
        );
    }
    // Structure: refused, each with what it would have done.
    for says in [
        "heading (level 2) turned into a paragraph".to_owned(),
        format!("list item removed, its text joined the text around it: '{item_text}'"),
        "table".to_owned(),
        "<details> left open".to_owned(),
    ] {
        let r = record(&says);
        assert_eq!(r["status"], "rejected", "{says}: {r}");
        assert_eq!(r["reject"], "REJECT_STRUCTURE", "{says}: {r}");
    }
    // The invisible character: refused.
    let r = record("invisible character");
    assert_eq!(r["reject"], "REJECT_OTHER", "{r}");
    // The number where a text belongs: never written.
    let edited =
        std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited");
    assert!(!edited.contains("12345"), "{edited}");
    assert!(edited.contains(case.typed), "{edited}");
    // The document's structure is intact, and nothing that changed it
    // is silent.
    assert!(edited.contains(case.heading) && edited.contains(case.item));
    assert!(!edited.contains("<details>") && !edited.contains("|---|"));
    assert!(!edited.contains('\u{200B}') && !edited.contains('\u{202E}'));
    let ledger: Vec<Value> = std::fs::read_to_string(s.workspace().join("review/ledger.jsonl"))
        .expect("ledger")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a ledger line"))
        .collect();
    assert_eq!(ledger.len(), 2, "the two meaning changes: {ledger:?}");
    for entry in &ledger {
        assert_eq!(entry["silent"], false, "{entry}");
        assert_eq!(entry["needs_attention"], true, "{entry}");
    }
    let summary = stderr(&out);
    assert!(!summary.contains("panicked"), "{summary}");
}

#[test]
fn a_careless_models_harmful_typos_are_refused_or_flagged_in_english() {
    careless_review_is_never_silent(&EN);
}

#[test]
fn a_careless_models_harmful_typos_are_refused_or_flagged_in_french() {
    careless_review_is_never_silent(&FR);
}

/// A clean document, and the same with true typos planted (one a line),
/// with the fixes a good model proposes (their line numbers all wrong).
struct Typos {
    clean: &'static str,
    planted: &'static str,
    fixes: &'static [(&'static str, &'static str)],
}

const TYPOS_EN: Typos = Typos {
    clean: "# Setup\n\nThe request was received on Monday.\n\nThe environment is ready.\n\n## Build\n\nBuild each module separately.\n\nThe error occurred in one step.\n\nRun the tests after the build.\n",
    planted: "# Setup\n\nThe request was recieved on Monday.\n\nThe enviroment is ready.\n\n## Build\n\nBuild each module seperately.\n\nThe error occured in one step.\n\nRun teh tests after the build.\n",
    fixes: &[
        ("recieved", "received"),
        ("enviroment", "environment"),
        ("seperately", "separately"),
        ("occured", "occurred"),
        ("teh tests", "the tests"),
    ],
};

const TYPOS_FR: Typos = Typos {
    clean: "# Installation\n\nLe contrôle est insuffisant.\n\nCet environnement est prêt.\n\n## Poste\n\nLe poste de développement est prêt.\n\nLa page d'accueil est en ligne.\n",
    planted: "# Installation\n\nLe contrôle est insufisant.\n\nCet environement est prêt.\n\n## Poste\n\nLe poste de developpement est prêt.\n\nLa page d'acceuil est en ligne.\n",
    fixes: &[
        ("insufisant", "insuffisant"),
        ("environement", "environnement"),
        ("developpement", "développement"),
        ("acceuil", "accueil"),
    ],
};

fn true_typos_land_silently(typos: &Typos) {
    let ops: Vec<(&'static str, Value)> = typos
        .fixes
        .iter()
        .enumerate()
        .map(|(i, (wrong, right))| {
            (
                *wrong,
                json!({"action": "replace", "line": 40 + i, "before_text": wrong,
                       "after_text": right, "kind": "typo", "severity": "minor",
                       "rationale": "spelling"}),
            )
        })
        .collect();
    let m = model_with(ops);
    let s = Scratch::new();
    s.write("doc.md", typos.planted);
    let (out, v) = review(&s, &m);
    assert_code(&out, 0, "review of true typos");
    assert_eq!(v["total_changes"], typos.fixes.len(), "{v}");
    assert_eq!(v["guards"], json!({}), "no guard fires: {v}");
    let edited =
        std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited");
    assert_eq!(edited, typos.clean, "every fix, and no other byte");
    let ledger =
        std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("ledger");
    for line in ledger.lines() {
        let entry: Value = serde_json::from_str(line).expect("entry");
        assert_eq!(entry["silent"], true, "{entry}");
        assert_eq!(entry["kind"], "typo", "{entry}");
        assert!(entry["review_note"].is_null(), "{entry}");
    }
}

#[test]
fn a_model_that_fixes_only_true_typos_lands_every_fix_silently() {
    true_typos_land_silently(&TYPOS_EN);
    true_typos_land_silently(&TYPOS_FR);
}

#[test]
fn a_review_run_again_records_nothing_twice_and_keeps_what_was_dismissed_and_reverted() {
    let doc = "# Retention\n\n## Scope\n\nThe policy aplies to every record.\n\n## Rules\n\nRecords are kept for ten years.\n\nThe archive is reviewed each year.\n";
    let m = model_with(vec![
        (
            "## Scope",
            json!({"action": "replace", "line": 2, "before_text": "aplies", "after_text": "applies",
                   "kind": "typo", "severity": "minor", "rationale": "spelling"}),
        ),
        (
            "## Rules",
            json!({"action": "flag_only", "line": 3, "before_text": "Records are kept for ten years.",
                   "kind": "consistency", "severity": "attention",
                   "rationale": "The retention period differs from the archive policy."}),
        ),
        (
            "## Rules",
            json!({"action": "flag_only", "line": 5, "before_text": "The archive is reviewed each year.",
                   "kind": "clarity", "severity": "attention",
                   "rationale": "Who reviews the archive, and against what?"}),
        ),
    ]);
    let s = Scratch::new();
    s.write("doc.md", doc);
    let ledger_lines = |s: &Scratch| {
        std::fs::read_to_string(s.workspace().join("review/ledger.jsonl"))
            .expect("ledger")
            .lines()
            .count()
    };
    let (out, v) = review(&s, &m);
    assert_code(&out, 0, "first review");
    assert_eq!(
        (v["total_changes"].as_u64(), v["flags"].as_u64()),
        (Some(1), Some(2)),
        "{v}"
    );
    let first = ledger_lines(&s);
    assert_eq!(first, 3);
    for run in 2..=3 {
        let mut args = vec!["-q".to_owned(), "review".to_owned(), "doc.md".to_owned()];
        args.extend(llm_flags(&m, 2));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = s.koas(&args);
        assert_code(&out, 0, "a review run again");
        assert_eq!(ledger_lines(&s), first, "run {run}: {}", stdout(&out));
        assert!(
            stdout(&out).contains("2 already in the ledger"),
            "run {run}: {}",
            stdout(&out)
        );
        assert!(
            stdout(&out)
                .contains("known:     2 op(s) whose effect is already in the ledger (2 flagged)"),
            "run {run}: {}",
            stdout(&out)
        );
    }
    // A person dismisses a flag and reverts the typo fix: both decisions
    // stay made however many times the review runs.
    let out = s.koas(&["-q", "dismiss", "doc.md", "RVW-0003"]);
    assert_code(&out, 0, "dismiss");
    let out = s.koas(&["-q", "revert", "doc.md", "RVW-0001"]);
    assert_code(&out, 0, "revert");
    let decided = ledger_lines(&s);
    assert_eq!(decided, first + 2);
    for _ in 0..2 {
        let (out, v) = review(&s, &m);
        assert_code(&out, 0, "review after the decisions");
        assert_eq!(ledger_lines(&s), decided, "{v}");
        let known: Vec<(String, String)> = v["apply_log"]
            .as_array()
            .expect("apply log")
            .iter()
            .filter(|r| r["status"] == "known")
            .map(|r| {
                (
                    r["matches"].as_str().unwrap_or("").to_owned(),
                    r["known_as"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        assert_eq!(
            known,
            [
                ("RVW-0001".to_owned(), "reverted".to_owned()),
                ("RVW-0002".to_owned(), "flagged".to_owned()),
                ("RVW-0003".to_owned(), "dismissed".to_owned()),
            ],
            "{v}"
        );
        let edited =
            std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited");
        assert!(edited.contains("aplies"), "the revert stays: {edited}");
    }
}

/// A person's op that leaves a code fence open at the end of the document
/// is refused as the same op is in mid-document (it was applied with
/// attention, and its review note landed inside the open block), with or
/// without `--strict`; the document is unchanged.
#[test]
fn a_persons_op_that_ends_the_document_with_an_open_fence_is_refused_as_in_mid_document() {
    let doc = "# Notes\n\nThe last paragraph of the notes.\n";
    let ops = json!([{"action": "replace", "kind": "typo", "target": {"line_start": 3},
        "before_text": "The last paragraph of the notes.",
        "after_text": "The last paragraph of the notes.\n\n```sh"}]);
    for strict in [false, true] {
        let s = Scratch::new();
        s.write("doc.md", doc);
        s.write("ops.json", &ops.to_string());
        let mut args = vec!["review", "doc.md", "--ops", "ops.json"];
        if strict {
            args.push("--strict");
        }
        let (out, v) = s.koas_json(&args);
        assert_code(&out, 0, "review of the person's op");
        // Under --strict the structure guard refuses it first.
        let expected = if strict {
            "REJECT_GUARD"
        } else {
            "REJECT_PROTECTED"
        };
        assert_eq!(
            v["apply_log"][0]["reject"], expected,
            "strict {strict}: {v}"
        );
        assert_eq!(v["total_changes"], 0, "strict {strict}: {v}");
        assert_eq!(
            std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited"),
            doc,
            "strict {strict}"
        );
    }
}
