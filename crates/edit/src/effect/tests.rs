use super::*;
use crate::lang::Language;

fn en() -> Vec<&'static Lexicon> {
    vec![lexicon(Language::English)]
}

fn fr() -> Vec<&'static Lexicon> {
    vec![lexicon(Language::French)]
}

#[test]
fn true_typo_fixes_are_typos() {
    for (old, new) in [
        (
            "The policy aplies to every record.",
            "The policy applies to every record.",
        ),
        ("We recieve the logs daily.", "We receive the logs daily."),
        ("Teh bandwith is high.", "The bandwidth is high."),
        ("It is used alot here.", "It is used a lot here."),
        ("Check the the logs.", "Check the logs."),
        (
            "Le contrôle est insufisant.",
            "Le contrôle est insuffisant.",
        ),
    ] {
        let lex = if old.starts_with("Le ") { fr() } else { en() };
        assert_eq!(edit_class(old, new, &lex), EditClass::Typo, "{old} → {new}");
        assert!(polarity_changes(old, new, &lex).is_empty(), "{old} → {new}");
    }
}

#[test]
fn spacing_case_and_punctuation_are_told_apart() {
    let lex = en();
    assert_eq!(edit_class("a  b", "a b", &lex), EditClass::Spacing);
    assert_eq!(
        edit_class("the Audit team", "the audit team", &lex),
        EditClass::Capitalization
    );
    assert_eq!(
        edit_class("However it works.", "However, it works.", &lex),
        EditClass::Punctuation
    );
}

#[test]
fn grammar_is_function_words_and_endings() {
    let lex = en();
    for (old, new) in [
        (
            "The rules is applied to a logs.",
            "The rules are applied to the logs.",
        ),
        ("He go to the office.", "He goes to the office."),
        ("Data is sent at the server.", "Data is sent to the server."),
    ] {
        assert_eq!(
            edit_class(old, new, &lex),
            EditClass::Grammar,
            "{old} → {new}"
        );
    }
    let fr = fr();
    assert_eq!(
        edit_class(
            "Les contrôle sont en place.",
            "Les contrôles sont en place.",
            &fr
        ),
        EditClass::Typo
    );
    assert_eq!(
        edit_class(
            "Elle est arrivé dans le bureau.",
            "Elle est arrivée au bureau.",
            &fr
        ),
        EditClass::Grammar
    );
}

#[test]
fn other_words_are_a_rewrite() {
    let lex = en();
    for (old, new) in [
        (
            "The server owns payment routing.",
            "The client owns payment routing.",
        ),
        ("Logs are kept.", "Logs are kept for auditors."),
        (
            "The policy applies to every record.",
            "Payment data must be archived by the operator.",
        ),
    ] {
        assert_eq!(
            edit_class(old, new, &lex),
            EditClass::Rewrite,
            "{old} → {new}"
        );
    }
}

#[test]
fn modals_negations_and_quantifiers_are_polarity_changes() {
    let lex = en();
    let described = |old: &str, new: &str| -> Vec<String> {
        polarity_changes(old, new, &lex)
            .iter()
            .map(PolarityChange::describe)
            .collect()
    };
    assert_eq!(
        described("Access must be enforced.", "Access may be enforced."),
        ["modal changed: 'must' → 'may'"]
    );
    assert_eq!(
        described(
            "It does not own payment routing.",
            "It does own payment routing."
        ),
        ["negation removed: 'not'"]
    );
    assert_eq!(
        described("It doesn't own routing.", "It does own routing."),
        ["negation removed: 'n't'"]
    );
    assert_eq!(
        described("Keep at least ten copies.", "Keep ten copies."),
        ["quantifier removed: 'at least'"]
    );
    assert_eq!(
        described("Only admins can read it.", "Admins can read it."),
        ["quantifier removed: 'only'"]
    );
    assert_eq!(
        described("The connection is safe.", "The connection is unsafe."),
        ["negation added: 'unsafe'"]
    );
    assert_eq!(
        described("Traffic will increase.", "Traffic will decrease."),
        ["direction changed: 'increase' → 'decrease'"]
    );
    // A spelling fix that makes a polarity word appear counts: "nto" may
    // have meant "into".
    assert_eq!(
        described("It is nto allowed.", "It is not allowed."),
        ["negation added: 'not'"]
    );
    let fr = fr();
    let changes = polarity_changes(
        "Le contrôle doit être fait.",
        "Le contrôle peut être fait.",
        &fr,
    );
    assert_eq!(changes[0].describe(), "modal changed: 'doit' → 'peut'");
    let changes = polarity_changes(
        "Le service n'est pas exposé.",
        "Le service est exposé.",
        &fr,
    );
    assert_eq!(changes[0].describe(), "negation removed: 'ne', 'pas'");
    // Elision and its full form are the same negation.
    assert!(polarity_changes("Il ne est pas", "Il n'est pas", &fr).is_empty());
}

#[test]
fn invisible_characters_new_to_the_text_are_found() {
    assert_eq!(
        new_invisible_char("pay\u{202E}ment", "payment").map(|(at, _, n)| (at, n)),
        Some((3, "RIGHT-TO-LEFT OVERRIDE"))
    );
    for c in ['\u{200B}', '\u{2028}', '\u{FEFF}', '\u{2066}', '\u{E0041}'] {
        assert!(
            new_invisible_char(&format!("a{c}b"), "ab").is_some(),
            "{c:?}"
        );
    }
    // Kept from the replaced text, or joining an emoji sequence: allowed.
    assert_eq!(new_invisible_char("a\u{200B}c", "a\u{200B}b"), None);
    assert_eq!(
        new_invisible_char("dev 👩\u{200D}💻 team", "dev team"),
        None
    );
    assert!(new_invisible_char("a\u{200D}b", "ab").is_some());
    assert_eq!(new_invisible_char("plain café", "plain cafe"), None);
}

fn structure(doc: &str, start: usize, old: usize, new: &[&str]) -> Vec<String> {
    let buf = LineBuf::parse(doc);
    let blocks = Blocks::of(doc);
    let new: Vec<String> = new.iter().map(|s| s.to_string()).collect();
    structure_changes(&buf, &blocks, start, old, &new)
        .into_iter()
        .map(|c| c.what)
        .collect()
}

#[test]
fn structure_is_judged_on_the_blocks_around_the_change() {
    let doc =
        "# Guide\n\n## Payment routing\n\nThe platform routes payments.\n\nSecond paragraph.\n";
    assert_eq!(
        structure(doc, 2, 1, &["Payment routing\n"]),
        ["heading (level 2) turned into a paragraph: 'Payment routing'"]
    );
    assert!(structure(doc, 4, 1, &["The platform routes all payments.\n"]).is_empty());
    // A delimiter row inserted under a sentence makes it a table header.
    let made = structure(doc, 5, 0, &["|---|\n"]);
    assert!(made.iter().any(|w| w.contains("table")), "{made:?}");
    // A blank line removed joins two paragraphs.
    let joined = structure(doc, 5, 1, &[]);
    assert_eq!(joined.len(), 1, "{joined:?}");
    assert!(joined[0].starts_with("paragraphs 2 → 1"), "{joined:?}");
    // An element opened at the end of a paragraph.
    let open = structure(doc, 6, 1, &["Second paragraph. <details>\n"]);
    assert!(open[0].contains("<details> left open"), "{open:?}");
}

#[test]
fn windows_reach_one_block_beyond_each_side() {
    let doc = "A\n\nB\n\nC\n\nD\n\nE\n";
    let blocks = Blocks::of(doc);
    // Line 4 (C): from B to D.
    assert_eq!(blocks.window(4, 5, 9), 2..7);
    // An insertion after C (at line 5, a blank line): from C to D.
    assert_eq!(blocks.window(5, 5, 9), 4..7);
    // At the top and at the end.
    assert_eq!(blocks.window(0, 1, 9), 0..3);
    assert_eq!(blocks.window(8, 9, 9), 6..9);
    assert_eq!(blocks.window(9, 9, 9), 8..9);
}
