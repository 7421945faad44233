use super::*;
use crate::effect::{structure_changes, Blocks};
use crate::text::LineBuf;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_op::Target;

fn op(kind: &str, after: &str) -> EditOp {
    EditOp {
        id: ChangeId::new(7).expect("id"),
        source_id: None,
        action: Action::Replace,
        target: Target {
            line_start: 3,
            line_end: 3,
            ..Target::default()
        },
        before_hash: None,
        before_text: None,
        after_text: after.into(),
        needs_attention: false,
        kind: kind.into(),
        severity: "minor".into(),
        silent: true,
        review_note: None,
        rationale: String::new(),
        summary: None,
    }
}

fn names(guarded: &Guarded) -> Vec<String> {
    guarded
        .fixes
        .iter()
        .map(|f| match f {
            Fix::ContentGuard { guard, .. } => guard.clone(),
            other => other.name().to_owned(),
        })
        .collect()
}

const EN: GuardContext = GuardContext {
    language: Language::English,
};

/// Runs the guards on `o`, an op replacing line 3 of a small document
/// whose line 3 is `before`, proposed by `origin`.
fn judge(o: &mut EditOp, before: &str, origin: OpOrigin, strict: bool) -> Guarded {
    judge_in(o, before, origin, strict, &EN)
}

fn judge_in(
    o: &mut EditOp,
    before: &str,
    origin: OpOrigin,
    strict: bool,
    ctx: &GuardContext,
) -> Guarded {
    let doc = format!("# Title\n\n{before}\n\nLast paragraph.\n");
    let buf = LineBuf::parse(&doc);
    let new: Vec<String> = o.after_text.split('\n').map(|l| format!("{l}\n")).collect();
    let structure = structure_changes(&buf, &Blocks::of(&doc), 2, 1, &new);
    let policy = ReviewPolicy::default();
    let seen = Seen {
        before,
        lines: Some((before, o.after_text.clone().leak())),
        structure: &structure,
        origin,
        strict,
        policy: &policy,
    };
    run(o, &seen, ctx)
}

fn reason_of(guarded: &Guarded, guard: &str) -> String {
    guarded
        .fixes
        .iter()
        .find_map(|f| match f {
            Fix::ContentGuard { guard: g, reason } if g == guard => Some(reason.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{guard} did not fire: {guarded:?}"))
}

#[test]
fn a_plain_typo_fix_passes_untouched() {
    let mut o = op("typo", "The policy applies to every record.");
    let guarded = judge(
        &mut o,
        "The policy aplies to every record.",
        OpOrigin::Model,
        false,
    );
    assert_eq!(guarded, Guarded::default());
    assert!(!o.needs_attention && o.silent);
    assert_eq!(o.kind, "typo");
}

#[test]
fn numbers_urls_code_identifiers_and_quotes_are_never_changed_silently() {
    let cases = [
        (
            "Records are kept 10 years.",
            "Records are kept 12 years.",
            "number '10' → '12'",
        ),
        (
            "See https://a.example/x for details.",
            "See https://b.example/x for details.",
            "URL",
        ),
        (
            "Read [the guide](guide.md#setup) first.",
            "Read [the guide](guide.md#set-up) first.",
            "link target",
        ),
        (
            "Set `max_in_flight` to four.",
            "Set `max_inflight` to four.",
            "inline code",
        ),
        (
            "The DINUM receives logs.",
            "The DNUM receives logs.",
            "identifier 'DINUM' → 'DNUM'",
        ),
        (
            "It says \"blue\" here.",
            "It says \"bleu\" here.",
            "quoted string",
        ),
        (
            "Signed on 2024-03-01 by the team.",
            "Signed on 2024-03-10 by the team.",
            "number",
        ),
    ];
    for (before, after, expect) in cases {
        let mut o = op("typo", after);
        let guarded = judge(&mut o, before, OpOrigin::Person, false);
        assert_eq!(names(&guarded), ["TOKEN_GUARD"], "{before} → {after}");
        let reason = reason_of(&guarded, "TOKEN_GUARD");
        assert!(reason.contains(expect), "{reason} should contain {expect}");
        assert!(o.needs_attention && !o.silent);
        assert_eq!(o.severity, "attention");
        let note = o.review_note.clone().expect("a note");
        assert_eq!(note.alert, Alert::Warning);
        assert!(
            note.text.starts_with("REVIEWER: RVW-0007 — changes"),
            "{}",
            note.text
        );
        // --strict refuses it.
        let mut strict = op("typo", after);
        let refused = judge(&mut strict, before, OpOrigin::Person, true);
        let (class, why) = refused.refused.expect("refused under --strict");
        assert_eq!(class, RejectClass::Guard);
        assert!(why.contains("--strict refuses"), "{why}");
    }
}

#[test]
fn text_in_another_language_becomes_a_flag() {
    let mut o = op(
        "grammar",
        "Les contrôles sont en place pour la plateforme de paiement.",
    );
    let guarded = judge(
        &mut o,
        "The controls are in place for the payment platform.",
        OpOrigin::Model,
        false,
    );
    assert_eq!(names(&guarded), ["LANGUAGE_GUARD"]);
    assert_eq!(o.action, Action::FlagOnly);
    assert!(o.needs_attention);
    // A French document, a French fix: nothing to say.
    let fr = GuardContext {
        language: Language::French,
    };
    let mut ok = op("grammar", "Les contrôles sont en place pour la plateforme.");
    let guarded = judge_in(
        &mut ok,
        "Les contrôle sont en place pour la plateforme.",
        OpOrigin::Model,
        false,
        &fr,
    );
    assert_eq!(guarded, Guarded::default());
}

#[test]
fn a_typo_that_rewrites_the_sentence_is_a_style_change_needing_attention() {
    let mut o = op("typo", "Payment data is archived by the operator.");
    let guarded = judge(
        &mut o,
        "The policy aplies to every payment record.",
        OpOrigin::Model,
        false,
    );
    assert_eq!(names(&guarded), ["MEANING_GUARD", "REWRITE_GUARD"]);
    assert_eq!(o.kind, "style");
    assert!(o.needs_attention && !o.silent);
    // A style op may rewrite: only what it says changes is told.
    let mut s = op("style", "The rule covers each payment record.");
    s.silent = false;
    let guarded = judge(
        &mut s,
        "The policy applies to each payment record.",
        OpOrigin::Model,
        false,
    );
    assert_eq!(guarded, Guarded::default());
}

#[test]
fn a_typo_that_swaps_a_function_word_is_grammar_and_stays_silent() {
    let mut o = op("typo", "The logs are sent to the server.");
    let guarded = judge(
        &mut o,
        "The logs are sent at the server.",
        OpOrigin::Model,
        false,
    );
    assert_eq!(names(&guarded), ["KIND_GUARD"]);
    assert_eq!(o.kind, "grammar");
    assert!(o.silent && !o.needs_attention && o.review_note.is_none());
    // Under a policy where grammar is not silent, the corrected op needs
    // attention.
    let policy = ReviewPolicy {
        silent_allowlist: vec!["typo".into()],
        ..ReviewPolicy::default()
    };
    let mut o = op("typo", "The logs are sent to the server.");
    let seen = Seen {
        before: "The logs are sent at the server.",
        lines: Some((
            "The logs are sent at the server.",
            "The logs are sent to the server.",
        )),
        structure: &[],
        origin: OpOrigin::Model,
        strict: false,
        policy: &policy,
    };
    run(&mut o, &seen, &EN);
    assert!(o.needs_attention && !o.silent);
}

#[test]
fn a_flipped_modal_or_a_dropped_negation_needs_attention_with_a_note() {
    let mut o = op("typo", "Access may be enforced.");
    let guarded = judge(&mut o, "Access must be enforced.", OpOrigin::Model, false);
    assert!(names(&guarded).contains(&"MEANING_GUARD".to_owned()));
    assert!(o.needs_attention && !o.silent);
    let note = o.review_note.clone().expect("a note").text;
    assert!(note.contains("modal changed: 'must' → 'may'"), "{note}");
    let mut o = op("grammar", "It does own payment routing.");
    judge(
        &mut o,
        "It does not own payment routing.",
        OpOrigin::Model,
        false,
    );
    let note = o.review_note.clone().expect("a note").text;
    assert!(note.contains("negation removed: 'not'"), "{note}");
    // French: "doit" → "peut".
    let fr = GuardContext {
        language: Language::French,
    };
    let mut o = op("typo", "Le chiffrement peut être activé.");
    judge_in(
        &mut o,
        "Le chiffrement doit être activé.",
        OpOrigin::Model,
        false,
        &fr,
    );
    let note = o.review_note.clone().expect("a note").text;
    assert!(note.contains("modal changed: 'doit' → 'peut'"), "{note}");
    // --strict refuses it.
    let mut o = op("typo", "Access may be enforced.");
    let refused = judge(&mut o, "Access must be enforced.", OpOrigin::Person, true);
    assert_eq!(refused.refused.map(|r| r.0), Some(RejectClass::Guard));
}

#[test]
fn a_models_structure_change_is_refused_unless_its_kind_declares_it() {
    // "## Payment routing" → "Payment routing", as a typo.
    let mut o = op("typo", "Payment routing");
    let refused = judge(&mut o, "## Payment routing", OpOrigin::Model, false);
    let (class, why) = refused.refused.clone().expect("refused");
    assert_eq!(class, RejectClass::Structure);
    assert!(
        why.starts_with("heading (level 2) turned into a paragraph: 'Payment routing'"),
        "{why}"
    );
    // Declared: applied with a note.
    let mut o = op("heading", "Payment routing");
    let guarded = judge(&mut o, "## Payment routing", OpOrigin::Model, false);
    assert_eq!(guarded.refused, None);
    assert!(o.needs_attention);
    assert!(o
        .review_note
        .clone()
        .expect("note")
        .text
        .contains("heading (level 2) turned into a paragraph"));
    // A person's op: applied with a note, refused under --strict.
    let mut o = op("typo", "Payment routing");
    let guarded = judge(&mut o, "## Payment routing", OpOrigin::Person, false);
    assert_eq!(names(&guarded), ["STRUCTURE_GUARD"]);
    assert!(o.needs_attention && !o.silent);
    assert_eq!(
        o.kind, "structure",
        "a typo that changes the structure is not a typo"
    );
    let mut o = op("typo", "Payment routing");
    let strict = judge(&mut o, "## Payment routing", OpOrigin::Person, true);
    assert_eq!(strict.refused.map(|r| r.0), Some(RejectClass::Guard));
}

#[test]
fn an_element_left_open_is_refused_from_a_model_whatever_its_kind() {
    for kind in ["typo", "html", "structure"] {
        let mut o = op(kind, "A paragraph ends here. <details>");
        let refused = judge(&mut o, "A paragraph ends here.", OpOrigin::Model, false);
        let (class, why) = refused.refused.expect("refused");
        assert_eq!(class, RejectClass::Structure, "{kind}");
        assert!(why.contains("<details> left open"), "{why}");
    }
    // Inline formatting is not block structure: attention, not refusal.
    let mut o = op("style", "Some **bold** words.");
    o.silent = false;
    let guarded = judge(&mut o, "Some bold words.", OpOrigin::Model, false);
    assert_eq!(guarded.refused, None);
    assert_eq!(names(&guarded), ["STRUCTURE_GUARD"]);
    assert!(o.needs_attention);
}

#[test]
fn tokens_inside_code_are_counted_once() {
    let t = protected_tokens("Run `cargo test -j 2` then retry 3 times.");
    assert_eq!(t["inline code"], ["cargo test -j 2"]);
    assert_eq!(t["number"], ["3"]);
}
