//! Apply/revert round trips on real documents: the shared corpus (real
//! documents, planted-defect documents and the seeds) when `../shared` is
//! present, and the crate's own fixtures always.

use koas_test_support::shared_files;

use koas_edit::apply::batch_states;
use koas_edit::clock::SteppingClock;
use koas_edit::patch::apply_patch_text;
use koas_edit::session::MemorySession;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_op::Action;
use koas_review_schema::stage1::ProtectedSpans;

fn round_trip(name: &str, text: &str, ops: usize, seed: u64, git_checks: usize) {
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    let actor = crate::common::actor();
    let mut session = MemorySession::new(name, text);
    let planned = koas_test_support::generated_ops(text, ops, seed);
    let out = session
        .apply(
            &planned,
            &ProtectedSpans::default(),
            &ApplyOptions::default(),
            &actor,
            &clock,
            "r",
        )
        .unwrap();
    // Random ops on tables and lists may break the structure around them
    // (a rewritten table row ends the table): those are refused, and do
    // not count against the engine.
    let refused = out
        .rejected
        .iter()
        .filter(|r| r.rejection.class != koas_review_schema::rejection::RejectClass::Protected)
        .count();
    assert!(
        refused * 10 <= planned.len(),
        "{name}: too many rejections: {:?}",
        out.rejected
            .iter()
            .map(|r| &r.rejection.reason)
            .take(5)
            .collect::<Vec<_>>()
    );
    let states: Vec<(String, String)> = batch_states(&out, text).collect();
    let pairs: Vec<_> = out
        .applied
        .iter()
        .filter_map(|a| a.patches.as_ref())
        .collect();
    for (index, ((before, after), pair)) in states.iter().zip(&pairs).enumerate() {
        assert_eq!(
            &apply_patch_text(before, &pair.forward).unwrap(),
            after,
            "{name} op {index}"
        );
        if index < git_checks && koas_test_support::git_available() {
            koas_test_support::git_apply_check(name, before, &pair.forward)
                .unwrap_or_else(|e| panic!("{name}: git apply --check refused op {index}: {e}"));
        }
    }
    let changes: Vec<ChangeId> = session
        .entries
        .iter()
        .filter(|e| e.action != Action::FlagOnly)
        .filter_map(|e| e.change_id())
        .collect();

    // Bulk revert of everything.
    let mut bulk = session.clone();
    bulk.revert(&changes, "", &actor, &clock, "bulk").unwrap();
    assert!(
        bulk.text == text,
        "{name}: bulk revert did not restore the original bytes"
    );

    // One at a time, oldest first (within one batch any order is allowed).
    let mut single = session.clone();
    for id in &changes {
        single.revert(&[*id], "", &actor, &clock, "one").unwrap();
    }
    assert!(
        single.text == text,
        "{name}: single reverts did not restore the original bytes"
    );
}

#[test]
fn shared_corpus_round_trips() {
    if koas_test_support::shared_dir("shared_corpus_round_trips").is_none() {
        return;
    }
    let mut files = shared_files("corpus/real", &["md"]);
    files.extend(shared_files("corpus/planted", &["md"]));
    files.extend(shared_files("seeds", &["txt"]));
    assert!(!files.is_empty(), "the shared corpus has no documents");
    for (index, path) in files.iter().enumerate() {
        let text = std::fs::read_to_string(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let lines = text.lines().count();
        round_trip(&name, &text, (lines / 8).clamp(3, 150), 7 + index as u64, 2);
    }
}

#[test]
fn fixture_round_trips_including_crlf_variants() {
    for name in ["retention_spec.md", "audit_fr.md"] {
        let text = crate::common::fixture(name);
        round_trip(name, &text, 12, 3, 3);
        let crlf = text.replace('\n', "\r\n");
        round_trip(name, &crlf, 12, 5, 3);
        let no_final = text.trim_end_matches('\n').to_owned();
        round_trip(name, &no_final, 12, 11, 3);
    }
}

fn corpus_documents() -> Vec<(String, String)> {
    let mut docs: Vec<(String, String)> = ["retention_spec.md", "audit_fr.md"]
        .iter()
        .map(|n| (n.to_string(), crate::common::fixture(n)))
        .collect();
    for sub in ["corpus/real", "corpus/planted"] {
        for path in shared_files(sub, &["md"]) {
            if let Ok(text) = std::fs::read_to_string(&path) {
                docs.push((
                    path.file_name().unwrap().to_string_lossy().into_owned(),
                    text,
                ));
            }
        }
    }
    docs
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..proptest::prelude::ProptestConfig::default() })]

    /// Random corpus document (the shared corpus when present, else the
    /// crate's fixtures), random op sequence: apply all, revert all, same
    /// bytes.
    #[test]
    fn random_ops_on_random_corpus_documents(pick in proptest::prelude::any::<proptest::sample::Index>(), count in 1usize..60, seed in proptest::prelude::any::<u64>()) {
        let docs = corpus_documents();
        let (name, text) = &docs[pick.index(docs.len())];
        round_trip(name, text, count, seed, 1);
    }
}
