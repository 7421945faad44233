use super::*;
use crate::patch::apply_patch_text;
use koas_kernel_api::hash::sha256;
use koas_review_schema::apply::OpOrigin;
use koas_review_schema::apply::{
    ApplyOptions, BatchOutcome, Fix, KnownAs, KnownOp, NormalizeOptions, OpStatus,
};
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_op::Action;
use koas_review_schema::rejection::{RejectClass, Rejection};
use koas_review_schema::stage1::{BlockKind, InlineKind, ProtectedSpans};
use koas_review_schema::stage1::{InlineSpan, ProtectedSpan};
use serde_json::json;

const DOC: &str = "# Title\n\
\n\
The bandwith of the system is high.\n\
\n\
```sh\n\
run --fast\n\
```\n\
\n\
Use `cfg` to set it up.\n\
Last line.\n";

fn regions() -> ProtectedSpans {
    let start_byte = DOC.find("`cfg`").unwrap();
    ProtectedSpans {
        blocks: vec![ProtectedSpan::from_lines(BlockKind::CodeFence, 5, 7)],
        inlines: vec![InlineSpan {
            kind: InlineKind::InlineCode,
            line: 9,
            column: 5,
            end_line: 9,
            end_column: 9,
            byte_start: (start_byte) as u64,
            byte_end: (start_byte + 5) as u64,
        }],
        ..Default::default()
    }
}

fn run_with(
    text: &str,
    ops: Vec<Value>,
    options: &ApplyOptions,
    ledger: &BTreeSet<ChangeId>,
) -> BatchOutcome {
    let protected = if text == DOC {
        regions()
    } else {
        ProtectedSpans::default()
    };
    apply_batch(BatchInput {
        doc_name: "doc.md",
        text,
        ops: &ops,
        protected: &protected,
        ledger_ids: ledger,
        first_id: ChangeId::new(10).unwrap(),
        options,
        origins: &vec![OpOrigin::Person; ops.len()],
        known: Default::default(),
    })
}

fn run(ops: Vec<Value>) -> BatchOutcome {
    run_with(DOC, ops, &ApplyOptions::default(), &BTreeSet::new())
}

fn only_rejection(outcome: &BatchOutcome) -> &Rejection {
    assert!(
        outcome.applied.is_empty(),
        "unexpected applied: {:?}",
        outcome.applied
    );
    assert_eq!(outcome.rejected.len(), 1);
    &outcome.rejected[0].rejection
}

fn typo_fix() -> Value {
    json!({"action": "replace", "kind": "typo",
           "target": {"line_start": 3, "line_end": 3},
           "before_text": "The bandwith of the system is high.",
           "after_text": "The bandwidth of the system is high."})
}

#[test]
fn applies_a_typo_fix_with_patches_and_hashes() {
    let out = run(vec![typo_fix()]);
    assert!(out.rejected.is_empty(), "{:?}", out.rejected);
    let a = &out.applied[0];
    assert_eq!(a.op.id.to_string(), "RVW-0010");
    assert!(a.op.silent);
    assert_eq!(a.doc_hash_before, sha256(DOC));
    assert_eq!(a.doc_hash_after, sha256(&out.final_text));
    assert!(out.final_text.contains("The bandwidth of"));
    let patches = a.patches.as_ref().unwrap();
    assert_eq!(
        apply_patch_text(DOC, &patches.forward).unwrap(),
        out.final_text
    );
    assert_eq!(
        apply_patch_text(&out.final_text, &patches.inverse).unwrap(),
        DOC
    );
    assert_eq!(out.next_id, ChangeId::new(11).unwrap());
    let log = out.log_records("run-1");
    assert_eq!(log[0].status, OpStatus::Applied);
    assert!(log[0].fixes.iter().any(|f| f.name() == "HASH_RECOMPUTE"));
}

#[test]
fn rejects_hash_mismatch() {
    let out = run(vec![
        json!({"action": "replace", "target": {"line_start": 3},
        "before_hash": sha256("older text"), "after_text": "x"}),
    ]);
    let r = only_rejection(&out);
    assert_eq!(r.class, RejectClass::Hash);
    assert!(
        r.reason.starts_with("op 1: ") && r.reason.contains("re-plan"),
        "{}",
        r.reason
    );

    let out = run(vec![
        json!({"action": "replace", "target": {"line_start": 3},
        "before_text": "Completely different words here", "after_text": "x"}),
    ]);
    assert_eq!(only_rejection(&out).class, RejectClass::Hash);
}

#[test]
fn rejects_missing_note_when_note_inject_is_off() {
    let options = ApplyOptions {
        normalize: NormalizeOptions {
            note_inject: false,
            ..NormalizeOptions::default()
        },
        ..ApplyOptions::default()
    };
    let attention = json!({"action": "replace", "kind": "terminology", "target": {"line_start": 3},
        "after_text": "The throughput of the system is high."});
    let out = run_with(DOC, vec![attention], &options, &BTreeSet::new());
    let r = only_rejection(&out);
    assert_eq!(r.class, RejectClass::SchemaNote);
    assert!(r.reason.contains("needs_attention"), "{}", r.reason);

    let delete = json!({"action": "delete", "target": {"line_start": 10}});
    let out = run_with(DOC, vec![delete], &options, &BTreeSet::new());
    assert_eq!(only_rejection(&out).class, RejectClass::SchemaNote);
}

#[test]
fn rejects_delete_with_wrong_alert_or_no_attention() {
    let out = run(vec![
        json!({"action": "delete", "target": {"line_start": 10},
        "review_note": {"alert": "WARNING", "text": "REVIEWER: RVW-0010 — drop"}}),
    ]);
    let r = only_rejection(&out);
    assert_eq!(r.class, RejectClass::SchemaNote);
    assert!(r.reason.contains("CAUTION"));
    let out = run(vec![
        json!({"action": "delete", "needs_attention": false, "target": {"line_start": 10}}),
    ]);
    assert_eq!(only_rejection(&out).class, RejectClass::SchemaNote);
}

#[test]
fn rejects_note_without_its_id_when_id_fix_is_off() {
    let options = ApplyOptions {
        normalize: NormalizeOptions {
            note_id_fix: false,
            ..NormalizeOptions::default()
        },
        ..ApplyOptions::default()
    };
    let op = json!({"action": "replace", "kind": "terminology", "target": {"line_start": 3},
        "after_text": "The throughput of the system is high.",
        "review_note": {"alert": "WARNING", "text": "REVIEWER: RVW-0999 — wording"}});
    let out = run_with(DOC, vec![op], &options, &BTreeSet::new());
    let r = only_rejection(&out);
    assert_eq!(r.class, RejectClass::SchemaId);
    assert!(r.reason.contains("REVIEWER: RVW-0010"), "{}", r.reason);
    // A note without the REVIEWER: prefix is a note-schema problem.
    let op = json!({"action": "replace", "kind": "terminology", "target": {"line_start": 3},
        "after_text": "The throughput of the system is high.",
        "review_note": {"alert": "WARNING", "text": "wording"}});
    let out = run_with(DOC, vec![op], &options, &BTreeSet::new());
    assert_eq!(only_rejection(&out).class, RejectClass::SchemaNote);
}

#[test]
fn rejects_id_already_in_ledger() {
    let ledger: BTreeSet<ChangeId> = [ChangeId::new(10).unwrap()].into();
    let out = run_with(DOC, vec![typo_fix()], &ApplyOptions::default(), &ledger);
    let r = only_rejection(&out);
    assert_eq!(r.class, RejectClass::Ledger);
    assert!(r.reason.contains("already in the ledger"));
}

#[test]
fn rejects_protected_edits_in_strict_mode_and_unflagged_ones_otherwise() {
    let into_fence = json!({"action": "replace", "kind": "typo", "target": {"line_start": 6},
        "after_text": "run --slow"});
    let out = run(vec![into_fence.clone()]);
    let r = only_rejection(&out);
    assert_eq!(r.class, RejectClass::Protected);
    assert!(r.reason.contains("code_fence at lines 5–7"), "{}", r.reason);
    assert!(r.reason.contains("needs_attention"), "{}", r.reason);

    // Non-strict: allowed with attention + note.
    let mut flagged = into_fence.clone();
    flagged["needs_attention"] = json!(true);
    let out = run(vec![flagged.clone()]);
    assert_eq!(out.applied.len(), 1, "{:?}", out.rejected);
    assert!(!out.applied[0].touches_protected.is_empty());

    // Strict: refused even then.
    let strict = ApplyOptions {
        strict: true,
        ..ApplyOptions::default()
    };
    let out = run_with(DOC, vec![flagged], &strict, &BTreeSet::new());
    let r = only_rejection(&out);
    assert_eq!(r.class, RejectClass::Protected);
    assert!(r.reason.contains("--strict"));
}

#[test]
fn inline_spans_are_byte_precise() {
    let strict = ApplyOptions {
        strict: true,
        ..ApplyOptions::default()
    };
    // Changing words next to inline code is fine.
    let beside = json!({"action": "replace", "kind": "typo", "target": {"line_start": 9},
        "before_text": "set it up", "after_text": "configure it"});
    let out = run_with(DOC, vec![beside], &strict, &BTreeSet::new());
    assert_eq!(out.applied.len(), 1, "{:?}", out.rejected);
    // Changing the inline code is not.
    let inside = json!({"action": "replace", "kind": "typo", "target": {"line_start": 9},
        "before_text": "`cfg`", "after_text": "`conf`"});
    let out = run_with(DOC, vec![inside], &strict, &BTreeSet::new());
    assert_eq!(only_rejection(&out).class, RejectClass::Protected);
}

#[test]
fn rejects_bad_ranges_and_overlaps() {
    let out = run(vec![
        json!({"action": "replace", "target": {"line_start": 40, "line_end": 41}, "after_text": "x"}),
    ]);
    let r = only_rejection(&out);
    assert_eq!(r.class, RejectClass::Range);
    assert!(
        r.reason.contains("past the end of the document (10 lines)"),
        "{}",
        r.reason
    );
    let out = run(vec![
        json!({"action": "replace", "target": {"line_start": 4, "line_end": 3}, "after_text": "x"}),
    ]);
    assert_eq!(only_rejection(&out).class, RejectClass::Range);

    let overlapping = json!({"action": "replace", "kind": "typo", "target": {"line_start": 2, "line_end": 3},
        "after_text": "\nThe bandwidth of the system is very high."});
    let out = run(vec![typo_fix(), overlapping]);
    assert_eq!(out.applied.len(), 1);
    let r = &out.rejected[0].rejection;
    assert_eq!(r.class, RejectClass::Range);
    assert!(
        r.reason.contains("overlap op 1 (RVW-0010) at line 3"),
        "{}",
        r.reason
    );
}

#[test]
fn rejects_other_problems() {
    let out = run(vec![
        json!({"action": "rewrite", "target": {"line_start": 3}}),
    ]);
    assert_eq!(only_rejection(&out).class, RejectClass::Other);
    let out = run(vec![
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 10}, "after_text": "Last line."}),
    ]);
    let r = only_rejection(&out);
    assert_eq!(r.class, RejectClass::Other);
    assert!(r.reason.contains("changes nothing"));
}

#[test]
fn strict_refuses_a_changed_number_and_otherwise_it_needs_attention() {
    let op = json!({"action": "replace", "kind": "typo", "target": {"line_start": 10}, "before_text": "Last line.", "after_text": "Last 2 lines."});
    let strict = ApplyOptions {
        strict: true,
        ..ApplyOptions::default()
    };
    let out = run_with(DOC, vec![op.clone()], &strict, &BTreeSet::new());
    let r = only_rejection(&out);
    assert_eq!(r.class, RejectClass::Guard);
    assert!(r.reason.contains("number '2' added"), "{}", r.reason);
    let out = run(vec![op]);
    assert!(out.rejected.is_empty(), "{:?}", out.rejected);
    let applied = &out.applied[0];
    assert!(applied.op.needs_attention);
    assert!(applied.fixes.iter().any(|f| f.name() == "TOKEN_GUARD"));
}

#[test]
fn every_rejection_class_is_reachable() {
    // Guard against a class silently becoming dead: each test above covers
    // one; this lists them so a new class fails here until it gets a test.
    let covered = [
        RejectClass::Hash,
        RejectClass::SchemaNote,
        RejectClass::SchemaId,
        RejectClass::Ledger,
        RejectClass::Protected,
        RejectClass::Range,
        RejectClass::Other,
        RejectClass::Guard,
        RejectClass::Structure,
    ];
    assert_eq!(covered.to_vec(), RejectClass::ALL.to_vec());
}

fn run_as(text: &str, ops: Vec<Value>, origin: OpOrigin) -> BatchOutcome {
    apply_batch(BatchInput {
        doc_name: "doc.md",
        text,
        ops: &ops,
        protected: &ProtectedSpans::default(),
        ledger_ids: &BTreeSet::new(),
        first_id: ChangeId::new(10).unwrap(),
        options: &ApplyOptions::default(),
        origins: &vec![origin; ops.len()],
        known: Default::default(),
    })
}

#[test]
fn a_models_heading_removed_is_refused_a_persons_is_applied_with_a_note() {
    let doc = "# Guide\n\n## Payment routing\n\nThe platform routes payments.\n";
    let op = json!({"action": "replace", "kind": "typo", "target": {"line_start": 3},
        "before_text": "## Payment routing", "after_text": "Payment routing"});
    let out = run_as(doc, vec![op.clone()], OpOrigin::Model);
    let r = only_rejection(&out);
    assert_eq!(r.class, RejectClass::Structure);
    assert!(
        r.reason
            .starts_with("op 1: heading (level 2) turned into a paragraph: 'Payment routing'"),
        "{}",
        r.reason
    );
    let out = run_as(doc, vec![op], OpOrigin::Person);
    assert!(out.rejected.is_empty(), "{:?}", out.rejected);
    let applied = &out.applied[0];
    assert!(applied.op.needs_attention && !applied.op.silent);
    assert!(applied.fixes.iter().any(|f| f.name() == "STRUCTURE_GUARD"));
    let note = applied.op.review_note.clone().expect("a note").text;
    assert!(
        note.contains("heading (level 2) turned into a paragraph"),
        "{note}"
    );
}

#[test]
fn invisible_characters_are_refused_for_every_origin_unless_already_there() {
    let doc = "# Guide\n\nThe payment platform.\n\nA zero\u{200B}width join.\n";
    for origin in [OpOrigin::Person, OpOrigin::Model] {
        for c in ['\u{202E}', '\u{200B}', '\u{2028}', '\u{FEFF}'] {
            let op = json!({"action": "replace", "kind": "typo", "target": {"line_start": 3},
                "before_text": "payment", "after_text": format!("pay{c}ment")});
            let out = run_as(doc, vec![op], origin);
            let r = only_rejection(&out);
            assert_eq!(r.class, RejectClass::Other, "{c:?}");
            assert!(r.reason.contains("invisible character"), "{}", r.reason);
        }
    }
    // A zero-width space the line already held may stay.
    let keep = json!({"action": "replace", "kind": "typo", "target": {"line_start": 5},
        "before_text": "A zero\u{200B}width join.", "after_text": "A zero\u{200B}width joint."});
    let out = run_as(doc, vec![keep], OpOrigin::Model);
    assert!(out.rejected.is_empty(), "{:?}", out.rejected);
}

#[test]
fn normalization_fixes_are_logged() {
    let op = json!({"id": "llm-1", "action": "replace", "kind": "terminology",
        "target": {"line_start": 3},
        "before_text": "The bandwith of the system is high.",
        "before_hash": sha256("masked [TERM] text"),
        "after_text": "The throughput of the system is high.",
        "needs_attention": true});
    let out = run(vec![op]);
    let log = out.log_records("r");
    let names: Vec<_> = log[0].fixes.iter().map(Fix::name).collect();
    assert_eq!(names, vec!["HASH_RECOMPUTE", "NOTE_INJECT"]);
    assert_eq!(log[0].source_id.as_deref(), Some("llm-1"));

    let op = json!({"action": "replace", "kind": "terminology", "target": {"line_start": 3},
        "after_text": "The throughput of the system is high.",
        "review_note": {"alert": "WARNING", "text": "aligned with Section 2"}});
    let out = run(vec![op]);
    let a = &out.applied[0];
    assert!(a.fixes.iter().any(|f| f.name() == "NOTE_ID_FIX"));
    assert_eq!(
        a.op.review_note.as_ref().unwrap().text,
        "REVIEWER: RVW-0010 — aligned with Section 2"
    );
}

#[test]
fn blank_line_guard_in_a_batch() {
    let off_by_one = json!({"action": "replace", "kind": "typo", "target": {"line_start": 2},
        "before_text": "The bandwith of the system is high.",
        "after_text": "The bandwidth of the system is high."});
    let out = run(vec![off_by_one]);
    assert_eq!(out.applied.len(), 1, "{:?}", out.rejected);
    assert!(
        out.final_text.contains("\n\nThe bandwidth of"),
        "blank line kept"
    );
    assert!(out.applied[0]
        .fixes
        .iter()
        .any(|f| f.name() == "BLANK_LINE_GUARD"));

    let hallucinated = json!({"action": "replace", "kind": "typo", "target": {"line_start": 8},
        "before_text": "Nothing like this exists anywhere.",
        "after_text": "Invented content."});
    let out = run(vec![hallucinated]);
    assert_eq!(out.applied.len(), 1);
    assert_eq!(out.applied[0].op.action, Action::FlagOnly);
    assert!(out.applied[0].change.is_none());
    assert_eq!(out.final_text, DOC);
    assert_eq!(out.log_records("r")[0].status, OpStatus::Flagged);
}

#[test]
fn later_ops_land_where_they_were_planned() {
    let ops = vec![
        json!({"action": "insert", "kind": "grammar", "target": {"line_start": 1, "line_end": 1},
               "after_text": "\nIntro one.\nIntro two."}),
        json!({"action": "delete", "target": {"line_start": 4, "line_end": 4}}),
        typo_fix(),
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 10},
               "after_text": "Final line."}),
    ];
    let out = run(ops.clone());
    assert_eq!(out.applied.len(), 4, "{:?}", out.rejected);
    let expected = "# Title\n\nIntro one.\nIntro two.\n\nThe bandwidth of the system is high.\n```sh\nrun --fast\n```\n\nUse `cfg` to set it up.\nFinal line.\n";
    assert_eq!(out.final_text, expected);
    // Each forward patch applies to the state it was made on; inverses undo.
    let states: Vec<(String, String)> = batch_states(&out, DOC).collect();
    assert_eq!(states.len(), 4);
    for ((before, after), a) in states.iter().zip(&out.applied) {
        let p = a.patches.as_ref().unwrap();
        assert_eq!(&apply_patch_text(before, &p.forward).unwrap(), after);
        assert_eq!(&apply_patch_text(after, &p.inverse).unwrap(), before);
        assert_eq!(sha256(before), a.doc_hash_before);
    }
    // Undo everything in reverse order.
    let mut text = out.final_text.clone();
    for a in out.applied.iter().rev() {
        text = apply_patch_text(&text, &a.patches.as_ref().unwrap().inverse).unwrap();
    }
    assert_eq!(text, DOC);
}

#[test]
fn crlf_bom_and_missing_final_newline_survive() {
    let text = "\u{feff}# Título\r\n\r\nPrimera línea.\r\nÚltima línea";
    let ops = vec![
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 1}, "after_text": "# Título nuevo"}),
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 3}, "after_text": "Primera línea corregida."}),
        json!({"action": "insert", "kind": "grammar", "target": {"line_start": 4, "line_end": 4}, "after_text": "Añadida."}),
    ];
    let out = run_with(text, ops, &ApplyOptions::default(), &BTreeSet::new());
    assert_eq!(out.applied.len(), 3, "{:?}", out.rejected);
    assert_eq!(
        out.final_text,
        "\u{feff}# Título nuevo\r\n\r\nPrimera línea corregida.\r\nÚltima línea\r\nAñadida."
    );
    let mut back = out.final_text.clone();
    for a in out.applied.iter().rev() {
        back = apply_patch_text(&back, &a.patches.as_ref().unwrap().inverse).unwrap();
    }
    assert_eq!(back, text);
}

#[test]
fn rejected_ops_take_no_id_and_the_ids_stay_dense() {
    let out = run(vec![
        json!({"action": "replace", "target": {"line_start": 99}, "after_text": "x"}),
        json!({"action": "replace", "target": {"line_start": 3},
               "before_text": "bandwith", "after_text": "bandwidth"}),
        json!({"action": "banana", "target": {"line_start": 1}}),
        json!({"action": "replace", "target": {"line_start": 10},
               "before_text": "Last", "after_text": "Final"}),
    ]);
    let ids: Vec<String> = out.applied.iter().map(|a| a.op.id.to_string()).collect();
    assert_eq!(ids, ["RVW-0010", "RVW-0011"]);
    assert_eq!(out.next_id, ChangeId::new(12).unwrap());
    assert!(out.rejected.iter().all(|r| r.id.is_none()));
    let log = out.log_records("run-1");
    assert_eq!(log[0].id, None);
    assert!(log[0].reason.as_deref().unwrap_or("").starts_with("op 1: "));
}

#[test]
fn a_delete_leaves_no_double_blank_line_and_reverts_exactly() {
    let text = "# T\n\nOne.\n\nTwo.\n\nThree.\n";
    let out = run_with(
        text,
        vec![json!({"action": "delete", "target": {"line_start": 5}, "before_text": "Two."})],
        &ApplyOptions::default(),
        &BTreeSet::new(),
    );
    assert_eq!(
        out.final_text, "# T\n\nOne.\n\nThree.\n",
        "{:?}",
        out.rejected
    );
    let patches = out.applied[0].patches.as_ref().expect("patches");
    assert_eq!(
        apply_patch_text(&out.final_text, &patches.inverse).expect("inverse applies"),
        text
    );
    assert!(out.applied[0]
        .summary
        .ends_with("(and the blank line after it)"));
}

fn known_change(id: u32, old: &str, new: &str) -> koas_review_schema::review::KnownChange {
    koas_review_schema::review::KnownChange {
        id: ChangeId::new(id).unwrap(),
        old: old.split_inclusive('\n').map(str::to_owned).collect(),
        new: new.split_inclusive('\n').map(str::to_owned).collect(),
    }
}

fn run_known(text: &str, ops: &[Value], origin: OpOrigin, known: Known<'_>) -> BatchOutcome {
    apply_batch(BatchInput {
        doc_name: "doc.md",
        text,
        ops,
        protected: &ProtectedSpans::default(),
        ledger_ids: &BTreeSet::new(),
        first_id: ChangeId::new(10).unwrap(),
        options: &ApplyOptions::default(),
        origins: &vec![origin; ops.len()],
        known,
    })
}

fn only_known(outcome: &BatchOutcome) -> &KnownOp {
    assert!(outcome.applied.is_empty(), "{:?}", outcome.applied);
    assert!(outcome.rejected.is_empty(), "{:?}", outcome.rejected);
    assert_eq!(outcome.known.len(), 1);
    &outcome.known[0]
}

#[test]
fn an_op_that_makes_a_reverted_change_again_is_known_whoever_proposes_it() {
    let op = json!({"action": "replace", "target": {"line_start": 3},
        "before_text": "The bandwith of the system is high.",
        "after_text": "The bandwidth of the system is high.",
        "kind": "typo", "severity": "minor", "rationale": "typo"});
    let reverted = [known_change(
        4,
        "The bandwith of the system is high.\n",
        "The bandwidth of the system is high.\n",
    )];
    for origin in [OpOrigin::Model, OpOrigin::Person] {
        let out = run_known(
            DOC,
            std::slice::from_ref(&op),
            origin,
            Known {
                reverted: &reverted,
                ..Known::default()
            },
        );
        let known = only_known(&out);
        assert_eq!(known.matches, ChangeId::new(4).unwrap());
        assert_eq!(known.known_as, KnownAs::Reverted);
        assert_eq!(out.final_text, DOC);
        let log = out.log_records("r");
        assert_eq!(log[0].status, OpStatus::Known);
        assert_eq!(log[0].known_as, Some(KnownAs::Reverted));
        assert_eq!(log[0].id, None, "a known op takes no ID");
    }
    // A person's op that says `"again": true` makes it again; a model's
    // cannot.
    let mut again = op.clone();
    again["again"] = json!(true);
    for (origin, applied) in [(OpOrigin::Person, 1), (OpOrigin::Model, 0)] {
        let out = run_known(
            DOC,
            std::slice::from_ref(&again),
            origin,
            Known {
                reverted: &reverted,
                ..Known::default()
            },
        );
        assert_eq!(out.applied.len(), applied, "{origin:?}");
    }
    // Another fix of the same line is a new change.
    let other = json!({"action": "replace", "kind": "typo", "target": {"line_start": 3},
        "before_text": "bandwith", "after_text": "bandwidths"});
    let out = run_known(
        DOC,
        &[other],
        OpOrigin::Model,
        Known {
            reverted: &reverted,
            ..Known::default()
        },
    );
    assert_eq!(out.applied.len(), 1, "{:?}", out.rejected);
}

#[test]
fn an_ops_file_given_again_finds_its_changes_made() {
    // The first run applied RVW-0010 (typo) and RVW-0011 (an insertion).
    let ops = vec![
        typo_fix(),
        json!({"action": "insert", "kind": "style", "target": {"line_start": 10, "line_end": 10},
            "after_text": "An added closing line.", "needs_attention": true,
            "review_note": {"alert": "NOTE", "text": "REVIEWER: added"}}),
    ];
    let first = run_known(DOC, &ops, OpOrigin::Person, Known::default());
    assert_eq!(first.applied.len(), 2, "{:?}", first.rejected);
    let applied: Vec<_> = first
        .applied
        .iter()
        .map(|a| {
            let c = a.change.clone().expect("a change").trimmed();
            koas_review_schema::review::KnownChange {
                id: a.op.id,
                old: c.old,
                new: c.new,
            }
        })
        .collect();
    let again = run_known(
        &first.final_text,
        &ops,
        OpOrigin::Person,
        Known {
            applied: &applied,
            ..Known::default()
        },
    );
    assert!(again.applied.is_empty(), "{:?}", again.applied);
    assert!(again.rejected.is_empty(), "{:?}", again.rejected);
    let matched: Vec<(ChangeId, KnownAs)> = again
        .known
        .iter()
        .map(|k| (k.matches, k.known_as))
        .collect();
    assert_eq!(
        matched,
        [
            (ChangeId::new(10).unwrap(), KnownAs::Applied),
            (ChangeId::new(11).unwrap(), KnownAs::Applied)
        ]
    );
    assert_eq!(again.final_text, first.final_text);
    // Without the ledger's knowledge, the typo op is refused as before and
    // the insertion is made twice: the knowledge is what keeps it once.
    let blind = run_known(&first.final_text, &ops, OpOrigin::Person, Known::default());
    assert_eq!(blind.rejected[0].rejection.class, RejectClass::Hash);
}

#[test]
fn the_same_flag_on_the_same_text_is_recorded_once_and_a_dismissed_one_stays_dismissed() {
    let flag = json!({"action": "flag_only", "kind": "clarity", "target": {"line_start": 3},
        "rationale": "Which system?"});
    let first = run_known(
        DOC,
        &[flag.clone(), flag.clone()],
        OpOrigin::Model,
        Known::default(),
    );
    assert_eq!(
        first.applied.len(),
        1,
        "the same flag twice in a batch is one"
    );
    assert_eq!(first.known[0].matches, first.applied[0].op.id);
    let hash = first.applied[0]
        .flagged_hash
        .clone()
        .expect("a flag keeps its lines' hash");
    assert_eq!(
        hash,
        koas_kernel_api::hash::sha256_of_parts(["The bandwith of the system is high.\n"])
    );
    for (dismissed, known_as) in [(false, KnownAs::Flagged), (true, KnownAs::Dismissed)] {
        let flags = [koas_review_schema::review::KnownFlag {
            id: ChangeId::new(3).unwrap(),
            lines_hash: hash.clone(),
            kind: "clarity".into(),
            dismissed,
        }];
        // The same flag moved down by lines added above it.
        let moved = format!("# Added\n\n{DOC}");
        let mut flag_moved = flag.clone();
        flag_moved["target"]["line_start"] = json!(5);
        let out = run_known(
            &moved,
            &[flag_moved],
            OpOrigin::Model,
            Known {
                flags: &flags,
                ..Known::default()
            },
        );
        let known = only_known(&out);
        assert_eq!(
            (known.matches, known.known_as),
            (ChangeId::new(3).unwrap(), known_as)
        );
        // Another kind on the same lines is another flag.
        let mut other = flag.clone();
        other["kind"] = json!("consistency");
        let out = run_known(
            DOC,
            &[other],
            OpOrigin::Model,
            Known {
                flags: &flags,
                ..Known::default()
            },
        );
        assert_eq!(out.applied.len(), 1);
    }
}

/// The ten fence openers of the finding: backticks and tildes, longer
/// fences, indented by up to three spaces, with info strings.
const FENCE_OPENERS: [&str; 10] = [
    "```",
    "~~~",
    "````",
    "~~~~~",
    " ```",
    "   ```",
    "```rust",
    "~~~ python {.numberLines}",
    "```` text",
    "  ~~~sh",
];

/// A person's op writing `after_text` over `line`, with attention and a
/// note, as an ops file gives it.
fn persons_op(line: usize, after_text: &str) -> Value {
    json!({"action": "replace", "kind": "correction", "target": {"line_start": line},
        "after_text": after_text, "needs_attention": true,
        "rationale": "a person's edit"})
}

#[test]
fn a_persons_op_opening_a_fence_on_the_last_line_is_refused_as_in_mid_document() {
    let text = "# T\n\nPara one.\n\nLast line.\n";
    for opener in FENCE_OPENERS {
        for line in [3, 5] {
            let out = run_with(
                text,
                vec![persons_op(line, &format!("Changed.\n{opener}"))],
                &ApplyOptions::default(),
                &BTreeSet::new(),
            );
            let r = only_rejection(&out);
            assert_eq!(r.class, RejectClass::Protected, "{opener:?} on line {line}");
            assert!(r.reason.contains("opens or closes"), "{}", r.reason);
            if line == 5 {
                assert!(r.reason.contains("end of the document"), "{}", r.reason);
            }
        }
        // The same opener without a final newline in the document.
        let out = run_with(
            "# T\n\nLast line.",
            vec![persons_op(3, opener)],
            &ApplyOptions::default(),
            &BTreeSet::new(),
        );
        assert_eq!(
            only_rejection(&out).class,
            RejectClass::Protected,
            "{opener:?}"
        );
    }
}

#[test]
fn a_closed_fence_at_the_end_and_an_edit_before_an_open_one_are_applied() {
    let text = "# T\n\nPara one.\n\nLast line.\n";
    let closed = run_with(
        text,
        vec![persons_op(5, "Last line:\n\n```sh\nrun\n```")],
        &ApplyOptions::default(),
        &BTreeSet::new(),
    );
    assert_eq!(closed.applied.len(), 1, "{:?}", closed.rejected);
    // A document that already ends inside an open fence keeps it: an
    // edit before it changes nothing after its own lines.
    let open = "# T\n\nPara one.\n\n```\ncode\n";
    let out = run_with(
        open,
        vec![persons_op(3, "Para one, reworded.")],
        &ApplyOptions::default(),
        &BTreeSet::new(),
    );
    assert_eq!(out.applied.len(), 1, "{:?}", out.rejected);
}
