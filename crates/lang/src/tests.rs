//! The checks on whole documents: languages per paragraph, the
//! vocabulary rules, certain fixes, what gets loaded.

use super::*;
use std::sync::LazyLock;

static CHECKER: LazyLock<Checker> =
    LazyLock::new(|| Checker::new(LanguageConfig::default(), Vocabulary::default()));

fn paras(texts: &[&'static str]) -> Vec<Paragraph<'static>> {
    texts
        .iter()
        .map(|t| Paragraph {
            text: t,
            heading: false,
        })
        .collect()
}

fn found(report: &Report, texts: &[&str]) -> Vec<(String, Vec<String>, bool, bool)> {
    report
        .issues
        .iter()
        .map(|i| {
            (
                texts[i.paragraph][i.start..i.end].to_owned(),
                i.suggestions.clone(),
                i.certain,
                i.likely,
            )
        })
        .collect()
}

#[test]
fn slips_are_found_and_the_certain_ones_fixed() {
    let texts = [
        "The server explains the addresses it serves and the retry policy.",
        "Teh client then explians which adresses it retries.",
    ];
    let report = CHECKER.check(&paras(&texts), &[]).expect("checks");
    let got = found(&report, &texts);
    let words: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(words, ["Teh", "explians", "adresses"], "{got:?}");
    for (word, suggestions, certain, likely) in &got {
        assert!(*certain && *likely, "{word}: {got:?}");
        let want = match word.as_str() {
            "Teh" => "The",
            "explians" => "explains",
            _ => "addresses",
        };
        assert_eq!(suggestions[0], want, "{got:?}");
    }
    assert_eq!(report.languages, [Some(Lang::En), Some(Lang::En)]);
}

#[test]
fn a_fix_is_not_certain_when_the_document_points_nowhere() {
    // Nothing else in the document says which word "explians" meant.
    let texts = ["The tool explians nothing of this."];
    let report = CHECKER.check(&paras(&texts), &[]).expect("checks");
    let got = found(&report, &texts);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        !got[0].2 && got[0].3,
        "reported, likely, not certain: {got:?}"
    );
    assert!(got[0].1.contains(&"explains".to_owned()), "{got:?}");
}

#[test]
fn names_terms_repeated_words_and_identifiers_are_vocabulary() {
    let texts = [
        "The kubelet talks to Zorblax and the kubelet restarts pods.",
        "Deploy with frobnicate, as the glossary says; set maxRetries and MY_VAR.",
        "Zorblax is the name of the scheduler.",
    ];
    let terms = vec!["frobnicate".to_owned()];
    let report = CHECKER.check(&paras(&texts), &terms).expect("checks");
    assert!(report.issues.is_empty(), "{:?}", found(&report, &texts));
}

#[test]
fn project_words_are_accepted_and_rejected_words_reported() {
    let words = Vocabulary::new(
        &["zorbification".to_owned()],
        &["utilize".to_owned()],
        "test",
    )
    .expect("valid");
    let checker = Checker::new(LanguageConfig::default(), words);
    let texts = ["We utilize zorbification in the system."];
    let report = checker.check(&paras(&texts), &[]).expect("checks");
    let got = found(&report, &texts);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "utilize");
}

#[test]
fn each_paragraph_is_checked_in_its_own_language() {
    let texts = [
        "Le serveur explique les adresses et la maison des utilisateurs.",
        "The server explains the addresses of the users in the house.",
        "La maisson du serveur est dans le centre de données.",
    ];
    let report = CHECKER.check(&paras(&texts), &[]).expect("checks");
    assert_eq!(
        report.languages,
        [Some(Lang::Fr), Some(Lang::En), Some(Lang::Fr)]
    );
    let got = found(&report, &texts);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "maisson");
    assert_eq!(got[0].1[0], "maison");
    assert!(got[0].2, "maison is used elsewhere: certain");
}

#[test]
fn french_rules_elision_doubled_words_and_typography() {
    let texts = ["Le arbre de de la forêt est beau : vrai!"];
    let report = CHECKER.check(&paras(&texts), &[]).expect("checks");
    let kinds: Vec<(IssueKind, String)> = report
        .issues
        .iter()
        .map(|i| (i.kind, texts[0][i.start..i.end].to_owned()))
        .collect();
    assert_eq!(
        kinds,
        [
            (IssueKind::Article, "Le arbre".to_owned()),
            (IssueKind::RepeatedWord, " de".to_owned()),
            (IssueKind::Typography, "!".to_owned()),
        ]
    );
    let off = Checker::new(
        LanguageConfig {
            typography: false,
            ..LanguageConfig::default()
        },
        Vocabulary::default(),
    );
    let report = off.check(&paras(&texts), &[]).expect("checks");
    assert!(report
        .issues
        .iter()
        .all(|i| i.kind != IssueKind::Typography));
}

#[test]
fn nothing_is_loaded_for_a_document_that_needs_nothing() {
    let checker = Checker::new(LanguageConfig::default(), Vocabulary::default());
    let report = checker.check(&[], &[]).expect("checks");
    assert!(report.loaded.is_empty());
    let texts = ["The server explains the addresses."];
    let report = checker.check(&paras(&texts), &[]).expect("checks");
    let langs: Vec<Lang> = report.loaded.iter().map(|(l, _)| *l).collect();
    assert_eq!(langs, [Lang::En], "an English text loads English only");
    let report = checker.check(&paras(&texts), &[]).expect("checks");
    assert!(report.loaded.is_empty(), "loaded once per checker");
}

#[test]
fn a_language_left_out_of_the_configuration_is_not_checked() {
    let checker = Checker::new(
        LanguageConfig {
            languages: vec![Lang::Fr],
            ..LanguageConfig::default()
        },
        Vocabulary::default(),
    );
    let texts = ["Teh server explians the adresses of the users."];
    let report = checker.check(&paras(&texts), &[]).expect("checks");
    assert!(report.issues.is_empty());
    assert_eq!(report.languages, [None]);
}

/// The check runs on every core; one thread reading the paragraphs in
/// order must find the same issues, with the same suggestions and
/// verdicts (the first occurrence of a word decides, whichever thread
/// judges it).
#[test]
fn every_core_finds_what_one_thread_finds() {
    let mut texts: Vec<&'static str> = Vec::new();
    for _ in 0..40 {
        texts.extend([
            "The server explains the addresses it serves and the retry policy.",
            "Le serveur explique les adresses qu'il sert ; le client réessaie.",
            "Frobnik and the frobnik gateway route the zorblet twice twice.",
            "## Existing Behavior",
            "Le cache est invalidé par un webhook lors du build, une fois.",
        ]);
    }
    // Slips written once (a word written again is the document's own).
    texts.insert(
        7,
        "Teh client then explians which adresses it retries, *Frobnik* said.",
    );
    texts.insert(90, "Le serveur expliqe les adreses de la passerelle.");
    texts.insert(150, "## Eisting Behavior");
    let mut paragraphs = paras(&texts);
    for p in &mut paragraphs {
        p.heading = p.text.starts_with('#');
    }
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool");
        // A checker per run: each loads its dictionaries itself.
        let checker = Checker::new(LanguageConfig::default(), Vocabulary::default());
        let report = pool
            .install(|| checker.check(&paragraphs, &[]))
            .expect("checks");
        let loaded: Vec<Lang> = report.loaded.iter().map(|(l, _)| *l).collect();
        (report.issues, report.languages, loaded)
    };
    let one = run(1);
    let slips = one.0.iter().filter(|i| i.kind == IssueKind::Misspelling);
    assert!(slips.count() >= 5, "{:?}", one.0);
    assert!(one.2.contains(&Lang::Fr), "{:?}", one.2);
    for threads in [2, 4] {
        let many = run(threads);
        assert_eq!(many.0, one.0, "{threads} threads");
        assert_eq!(many.1, one.1, "{threads} threads");
        let (mut a, mut b) = (many.2.clone(), one.2.clone());
        a.sort();
        b.sort();
        assert_eq!(a, b, "each dictionary loaded once, by one thread");
    }
}

#[test]
fn prefetch_loads_french_for_french_text_only_and_changes_no_finding() {
    let french = "Le serveur explique les adresses qu’il sert et la politique de reprise.";
    let texts = [
        french,
        "Le client explique ensuite les adressess qu’il reprend.",
    ];
    let english = Checker::new(LanguageConfig::default(), Vocabulary::default());
    english.prefetch("The server explains the addresses it serves and the retry policy.");
    assert!(english.french.get().is_none(), "English text loads nothing");
    let no_french = LanguageConfig {
        languages: vec![Lang::En],
        ..LanguageConfig::default()
    };
    let unchecked = Checker::new(no_french, Vocabulary::default());
    unchecked.prefetch(french);
    assert!(unchecked.french.get().is_none(), "French is not checked");

    let fetched = Checker::new(LanguageConfig::default(), Vocabulary::default());
    fetched.prefetch(&texts.join("\n\n"));
    assert!(fetched.french.get().is_some());
    let lazy = Checker::new(LanguageConfig::default(), Vocabulary::default());
    let (a, b) = (
        fetched.check(&paras(&texts), &[]).unwrap(),
        lazy.check(&paras(&texts), &[]).unwrap(),
    );
    assert_eq!(a.issues, b.issues);
    assert!(!a.issues.is_empty());
    let french_loads = |r: &Report| r.loaded.iter().filter(|(l, _)| *l == Lang::Fr).count();
    assert_eq!(french_loads(&a), 0, "the check did not load it");
    assert_eq!(french_loads(&b), 1);
}
