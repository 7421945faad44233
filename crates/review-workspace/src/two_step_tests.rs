//! The two-step API: begin, compute elsewhere, commit after a replay check.

use super::*;
use koas_edit::apply::{apply_batch, BatchInput};
use koas_edit::revert::{plan_reverts, RevertRequest};
use koas_review_schema::apply::{ApplyOptions, BatchOutcome};
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_op::Action;
use koas_review_schema::revert::RevertPlan;

/// A change made to an outcome before it is committed.
type Tamper<T> = Box<dyn Fn(&mut T)>;

fn begin<'w>(ws: &'w Workspace, document: Option<&str>) -> Result<PreparedRun<'w>, WorkspaceError> {
    let clock = SteppingClock::new("2026-03-03T10:00:00Z");
    ws.begin(BeginRequest {
        doc_name: "spec.md",
        document,
        kind: RunKind::Review,
        command: "koas review spec.md --ops ops.json",
        clock: &clock,
    })
}

fn batch_for(run: &PreparedRun<'_>, ops: &[Value]) -> BatchOutcome {
    apply_batch(BatchInput {
        doc_name: "spec.md",
        text: run.current_text(),
        ops,
        protected: &regions(),
        ledger_ids: &run.ledger_ids(),
        first_id: run.next_id(),
        options: &ApplyOptions::default(),
        origins: &[koas_review_schema::apply::OpOrigin::Person; 64],
        known: Default::default(),
    })
}

fn commit(run: &mut PreparedRun<'_>, batch: BatchOutcome) -> Result<ReviewOutcome, WorkspaceError> {
    let clock = SteppingClock::new("2026-03-03T10:00:00Z");
    run.commit_review(
        batch,
        regions(),
        &CommitContext {
            actor: &actor(),
            clock: &clock,
            options: &ApplyOptions::default(),
        },
    )
}

#[test]
fn a_precomputed_batch_commits_like_a_review() {
    let one = tempfile::tempdir().unwrap();
    let two = tempfile::tempdir().unwrap();
    let (a, b) = (Workspace::new(one.path()), Workspace::new(two.path()));
    let direct = review(&a, DOC, vec![typo(), attention()]).unwrap();
    let mut run = begin(&b, Some(DOC)).unwrap();
    assert_eq!(run.next_id(), ChangeId::first());
    let batch = batch_for(&run, &[typo(), attention()]);
    let committed = commit(&mut run, batch).unwrap();
    assert_eq!(run.current_text(), direct.batch.final_text);
    assert_eq!(run.entries().len(), 2);
    assert!(
        b.root().join(".lock").exists(),
        "held until the run is dropped"
    );
    drop(run);
    assert!(!b.root().join(".lock").exists());
    assert_eq!(committed.batch, direct.batch);
    for rel in [
        paths::EDITED_DOC,
        paths::REVIEWED_DOC,
        "review/patches/RVW-0002.patch",
    ] {
        assert_eq!(
            fs::read(a.path(rel)).unwrap(),
            fs::read(b.path(rel)).unwrap(),
            "{rel}"
        );
    }
    let next = begin(&b, Some(DOC)).unwrap();
    assert_eq!(next.next_id().to_string(), "RVW-0003");
}

/// Every tampering is refused and leaves the workspace byte for byte as it
/// was.
#[test]
fn tampered_batches_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    review(&ws, DOC, vec![typo()]).unwrap();
    let before = snapshot(dir.path());
    let tamperings: Vec<(&str, Tamper<BatchOutcome>)> = vec![
        (
            "initial hash",
            Box::new(|b| b.initial_hash = "sha256:00".into()),
        ),
        (
            "hash after",
            Box::new(|b| b.applied[0].doc_hash_after = "sha256:00".into()),
        ),
        (
            "patch",
            Box::new(|b| {
                if let Some(p) = b.applied[0].patches.as_mut() {
                    p.forward.push(' ');
                }
            }),
        ),
        (
            "change",
            Box::new(|b| {
                if let Some(c) = b.applied[0].change.as_mut() {
                    c.old = vec!["not there\n".into()];
                }
            }),
        ),
        ("final text", Box::new(|b| b.final_text.push('x'))),
        (
            "reused id",
            Box::new(|b| b.applied[0].op.id = ChangeId::first()),
        ),
        (
            "duplicate id",
            Box::new(|b| {
                let first = b.applied[0].op.id;
                b.applied[1].op.id = first;
            }),
        ),
        (
            "missing note",
            Box::new(|b| {
                b.applied[1].op.needs_attention = true;
                b.applied[1].op.review_note = None;
            }),
        ),
        (
            "flag with a change",
            Box::new(|b| {
                b.applied[0].op.action = Action::FlagOnly;
            }),
        ),
    ];
    for (what, tamper) in tamperings {
        let mut run = begin(&ws, Some(DOC)).unwrap();
        let mut batch = batch_for(
            &run,
            &[
                attention(),
                json!({"action": "replace", "kind": "typo",
            "target": {"line_start": 1}, "after_text": "# Specification"}),
            ],
        );
        assert_eq!(batch.applied.len(), 2, "{:?}", batch.rejected);
        tamper(&mut batch);
        let err = commit(&mut run, batch).expect_err(what);
        assert!(
            matches!(
                err,
                WorkspaceError::UntrustedOutcome {
                    what: "apply outcome",
                    ..
                }
            ),
            "{what}: {err}"
        );
        assert!(err.to_string().contains("nothing was written"), "{err}");
        drop(run);
        assert_eq!(snapshot(dir.path()), before, "{what} wrote something");
    }
}

#[test]
fn a_precomputed_revert_plan_commits_and_tampering_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    review(&ws, DOC, vec![typo(), attention()]).unwrap();
    let plan_for = |run: &PreparedRun<'_>, ids: &[u32]| {
        let ids: Vec<ChangeId> = ids.iter().map(|&n| ChangeId::new(n).unwrap()).collect();
        plan_reverts(RevertRequest {
            doc_name: "spec.md",
            current_text: run.current_text(),
            entries: run.entries(),
            ids: &ids,
            read_patch: &|_| Err("no files".into()),
        })
        .unwrap()
    };
    let clock = SteppingClock::new("2026-03-04T10:00:00Z");
    let ctx = CommitContext {
        actor: &actor(),
        clock: &clock,
        options: &ApplyOptions::default(),
    };
    let before = snapshot(dir.path());
    let tamperings: Vec<(&str, Tamper<RevertPlan>)> = vec![
        ("order", Box::new(|p| p.reverts.reverse())),
        (
            "original copy",
            Box::new(|p| p.reverts[0].original.summary.push('!')),
        ),
        (
            "restored text",
            Box::new(|p| p.reverts[0].change.new = vec!["other\n".into()]),
        ),
        (
            "hash before",
            Box::new(|p| p.reverts[1].doc_hash_before = "sha256:00".into()),
        ),
        ("final text", Box::new(|p| p.final_text.clear())),
        (
            "twice",
            Box::new(|p| {
                let first = p.reverts[0].clone();
                p.reverts.push(first);
            }),
        ),
    ];
    for (what, tamper) in tamperings {
        let mut run = begin(&ws, None).unwrap();
        let mut plan = plan_for(&run, &[1, 2]);
        tamper(&mut plan);
        let err = run.commit_revert(plan, "test", &ctx).expect_err(what);
        assert!(
            matches!(
                err,
                WorkspaceError::UntrustedOutcome {
                    what: "revert plan",
                    ..
                }
            ),
            "{what}: {err}"
        );
        drop(run);
        assert_eq!(snapshot(dir.path()), before, "{what} wrote something");
    }
    let mut run = begin(&ws, None).unwrap();
    let plan = plan_for(&run, &[1, 2]);
    let out = run.commit_revert(plan, "test", &ctx).unwrap();
    assert_eq!(out.entries.len(), 2);
    assert_eq!(run.current_text(), DOC);
    let target = dir.path().join("in-place.md");
    run.replace_in_place(&target).unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), DOC);
    drop(run);
    // A revert of an already reverted change is refused by the check too.
    let mut run = begin(&ws, None).unwrap();
    let stale = {
        let dir2 = tempfile::tempdir().unwrap();
        let other = Workspace::new(dir2.path());
        review(&other, DOC, vec![typo(), attention()]).unwrap();
        let r = begin(&other, None).unwrap();
        plan_for(&r, &[1])
    };
    let err = run.commit_revert(stale, "test", &ctx).unwrap_err();
    assert!(err.to_string().contains("already reverted"), "{err}");
}

#[test]
fn begin_checks_the_document_the_lock_and_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path().join("ws"));
    let err = begin(&ws, None).unwrap_err();
    assert!(matches!(err, WorkspaceError::NotInitialized(_)), "{err}");
    review(&ws, DOC, vec![typo()]).unwrap();
    let err = begin(&ws, Some("# Another document\n")).unwrap_err();
    assert!(
        matches!(err, WorkspaceError::DocumentMismatch { .. }),
        "{err}"
    );
    let edited = ws.current_text().unwrap();
    let run = begin(&ws, Some(&edited)).expect("the current version is accepted");
    let err = begin(&ws, Some(DOC)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&format!("pid {}", std::process::id()))
            && text.contains("koas review spec.md"),
        "{text}"
    );
    drop(run);
    begin(&ws, Some(DOC)).expect("lock released");
}

#[test]
fn an_outcome_that_hides_a_meaning_or_structure_change_as_silent_is_refused() {
    let doc = "# Spec\n\n## Routing\n\nThe platform does not own payment routing.\n";
    for (op, says) in [
        (
            json!({"action": "replace", "kind": "typo", "target": {"line_start": 5},
                "before_text": "does not own", "after_text": "does own"}),
            "negation",
        ),
        (
            json!({"action": "replace", "kind": "typo", "target": {"line_start": 3},
                "before_text": "## Routing", "after_text": "Routing"}),
            "Markdown structure",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path());
        let mut run = begin(&ws, Some(doc)).unwrap();
        let mut batch = apply_batch(BatchInput {
            doc_name: "spec.md",
            text: run.current_text(),
            ops: std::slice::from_ref(&op),
            protected: &Default::default(),
            ledger_ids: &run.ledger_ids(),
            first_id: run.next_id(),
            options: &ApplyOptions::default(),
            origins: &[koas_review_schema::apply::OpOrigin::Person],
            known: Default::default(),
        });
        assert_eq!(batch.applied.len(), 1, "{:?}", batch.rejected);
        assert!(batch.applied[0].op.needs_attention, "the engine flags it");
        // A plugin that says it is a silent typo.
        let claimed = &mut batch.applied[0].op;
        claimed.silent = true;
        claimed.needs_attention = false;
        claimed.review_note = None;
        claimed.kind = "typo".into();
        let err = commit(&mut run, batch).expect_err("refused");
        assert!(err.to_string().contains("recorded silent"), "{err}");
        assert!(err.to_string().contains(says), "{err}");
    }
}
