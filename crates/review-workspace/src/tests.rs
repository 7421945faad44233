use super::*;
use koas_edit::clock::SteppingClock;
use koas_kernel_api::hash::sha256;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::ledger::Actor;
use koas_review_schema::review::ReportMeta;
use koas_review_schema::stage1::{BlockKind, ProtectedSpan};
use serde_json::json;
use std::collections::BTreeMap;

const DOC: &str = "# Spec\n\nThe bandwith is high.\n\n```\ncode\n```\n\nAnother paragraph here.\n";

fn actor() -> Actor {
    Actor {
        tool: "koas-review test".into(),
        operator: "tester".into(),
    }
}

fn regions() -> ProtectedSpans {
    ProtectedSpans {
        blocks: vec![ProtectedSpan::from_lines(BlockKind::CodeFence, 5, 7)],
        ..Default::default()
    }
}

fn review(
    ws: &Workspace,
    document: &str,
    ops: Vec<Value>,
) -> Result<ReviewOutcome, WorkspaceError> {
    let clock = SteppingClock::new("2026-03-01T10:00:00Z");
    ws.review(ReviewRequest {
        doc_name: "spec.md",
        document,
        ops: &ops,
        origin: koas_review_schema::apply::OpOrigin::Person,
        protected: &regions(),
        options: &ApplyOptions::default(),
        actor: &actor(),
        command: "koas review spec.md --ops ops.json",
        clock: &clock,
        in_place: None,
    })
}

fn revert(ws: &Workspace, ids: &[u32]) -> Result<RevertRunOutcome, WorkspaceError> {
    let clock = SteppingClock::new("2026-03-02T10:00:00Z");
    let ids: Vec<ChangeId> = ids.iter().map(|&n| ChangeId::new(n).unwrap()).collect();
    ws.revert(RevertRunRequest {
        ids: &ids,
        rationale: "operator request",
        actor: &actor(),
        command: "koas revert spec.md",
        clock: &clock,
        options: &ApplyOptions::default(),
        in_place: None,
    })
}

fn typo() -> Value {
    json!({"action": "replace", "kind": "typo", "target": {"line_start": 3}, "before_text": "bandwith", "after_text": "bandwidth"})
}

fn attention() -> Value {
    json!({"action": "replace", "kind": "terminology", "target": {"line_start": 9},
           "after_text": "Another paragraph, reworded.", "rationale": "Clearer."})
}

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.clone(), fs::read(&path).unwrap());
            }
        }
    }
    out
}

#[test]
fn review_writes_the_section13_layout() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path().join("ws"));
    let out = review(
        &ws,
        DOC,
        vec![typo(), attention(), json!({"action": "bogus"})],
    )
    .unwrap();
    assert_eq!(out.entries.len(), 2);
    assert_eq!(out.batch.rejected.len(), 1);
    for rel in [
        paths::RAW_DOC,
        paths::EDITED_DOC,
        paths::REVIEWED_DOC,
        paths::APPLY_LOG,
        paths::LEDGER,
        paths::META,
        "review/patches/RVW-0001.patch",
        "review/patches/RVW-0001.inverse.patch",
        "review/patches/RVW-0002.patch",
    ] {
        assert!(ws.path(rel).exists(), "missing {rel}");
    }
    assert!(!ws.root().join(".lock").exists(), "lock released");
    assert_eq!(fs::read_to_string(ws.path(paths::RAW_DOC)).unwrap(), DOC);
    let edited = fs::read_to_string(ws.path(paths::EDITED_DOC)).unwrap();
    assert!(edited.contains("bandwidth") && edited.contains("reworded"));
    let reviewed = fs::read_to_string(ws.path(paths::REVIEWED_DOC)).unwrap();
    assert!(
        reviewed.contains("> [!NOTE]\n> REVIEWER: RVW-0002 — Clearer."),
        "{reviewed}"
    );
    let log = fs::read_to_string(ws.path(paths::APPLY_LOG)).unwrap();
    assert_eq!(log.lines().count(), 3);
    assert!(log.contains("REJECT_OTHER"));
    let summary = out.summary_json();
    assert_eq!(summary["total_changes"], 2);
    assert_eq!(summary["rejected"], 1);
    assert_eq!(summary["apply_log"][2]["reject"], "REJECT_OTHER");
    let status = ws.status().unwrap();
    assert_eq!(status.document_state, "consistent");
    assert_eq!(status.counts.total_changes, 2);
    assert!(status.orphan_patches.is_empty());
}

#[test]
fn ids_continue_across_runs_and_rejected_ops_take_none() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    review(&ws, DOC, vec![typo(), json!({"action": "bogus"})]).unwrap();
    let out = review(&ws, DOC, vec![attention()]).unwrap();
    assert_eq!(
        out.entries[0].id.to_string(),
        "RVW-0002",
        "the rejected op of the first run took no ID"
    );
}

#[test]
fn the_last_run_log_is_the_last_runs_records_only() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    review(&ws, DOC, vec![typo(), json!({"action": "bogus"})]).unwrap();
    let first = ws.last_run_log().unwrap();
    assert_eq!(first.len(), 2);
    review(&ws, DOC, vec![attention()]).unwrap();
    let last = ws.last_run_log().unwrap();
    assert_eq!(last.len(), 1, "{last:?}");
    assert_ne!(last[0].run_id, first[0].run_id);
    assert_eq!(last[0].op_index, 1);
    // A torn last line (a crash mid-append) is skipped, not a new run.
    let mut log = fs::OpenOptions::new()
        .append(true)
        .open(ws.path(paths::APPLY_LOG))
        .unwrap();
    std::io::Write::write_all(&mut log, b"{\"run_id\": \"torn").unwrap();
    assert_eq!(ws.last_run_log().unwrap(), last);
}

#[test]
fn a_crash_after_the_ledger_append_is_rolled_forward() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    review(&ws, DOC, vec![typo()]).unwrap();
    let after_first = fs::read_to_string(ws.path(paths::EDITED_DOC)).unwrap();
    review(&ws, DOC, vec![attention()]).unwrap();
    let after_second = fs::read_to_string(ws.path(paths::EDITED_DOC)).unwrap();
    // Simulate a crash between the ledger append and the document write.
    fs::write(ws.path(paths::EDITED_DOC), &after_first).unwrap();
    assert_eq!(ws.status().unwrap().document_state, "behind_ledger");
    assert_eq!(ws.current_text().unwrap(), after_second);
    let out = review(&ws, DOC, vec![]).unwrap();
    assert_eq!(
        out.recovery,
        Some(Recovery {
            rolled_forward: vec![EntryId::Change(ChangeId::new(2).unwrap())]
        })
    );
    assert_eq!(
        fs::read_to_string(ws.path(paths::EDITED_DOC)).unwrap(),
        after_second
    );
}

#[test]
fn a_document_edited_outside_koas_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    review(&ws, DOC, vec![typo()]).unwrap();
    fs::write(ws.path(paths::EDITED_DOC), "hand edited\n").unwrap();
    assert!(matches!(
        review(&ws, DOC, vec![]),
        Err(WorkspaceError::Diverged { .. })
    ));
    assert_eq!(ws.status().unwrap().document_state, "diverged");
    // And a document that is neither the original nor the current one.
    let dir2 = tempfile::tempdir().unwrap();
    let ws2 = Workspace::new(dir2.path());
    review(&ws2, DOC, vec![typo()]).unwrap();
    assert!(matches!(
        review(&ws2, "other\n", vec![]),
        Err(WorkspaceError::DocumentMismatch { .. })
    ));
}

#[test]
fn a_torn_ledger_blocks_runs_until_repaired_and_ids_stay_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    review(&ws, DOC, vec![typo()]).unwrap();
    // A crash mid-append of RVW-0002's line.
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(ws.path(paths::LEDGER))
        .unwrap();
    std::io::Write::write_all(&mut file, br#"{"id":"RVW-0002","doc":"spec"#).unwrap();
    drop(file);
    let before = snapshot(dir.path());
    let err = review(&ws, DOC, vec![attention()]).unwrap_err();
    assert!(matches!(err, WorkspaceError::TornLedger { .. }), "{err}");
    assert!(err.to_string().contains("repair"));
    assert_eq!(snapshot(dir.path()), before, "nothing written");
    assert!(matches!(
        revert(&ws, &[1]),
        Err(WorkspaceError::TornLedger { .. })
    ));
    assert!(ws.status().unwrap().torn_tail.is_some());

    let clock = SteppingClock::new("2026-03-03T00:00:00Z");
    let side = ws.repair_ledger("koas repair", &clock).unwrap().unwrap();
    assert!(fs::read_to_string(side).unwrap().contains("RVW-0002"));
    let out = review(&ws, DOC, vec![attention()]).unwrap();
    assert_eq!(out.entries[0].id.to_string(), "RVW-0003");
}

#[test]
fn a_held_lock_refuses_a_second_run_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    let clock = SteppingClock::new("2026-03-01T00:00:00Z");
    let _held = ws
        .lock("koas review spec.md (other terminal)", &clock)
        .unwrap();
    let err = review(&ws, DOC, vec![typo()]).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("other terminal"), "{message}");
    assert!(
        message.contains(&format!("pid {}", std::process::id())),
        "{message}"
    );
}

#[test]
fn revert_through_the_workspace_and_conflicts_touch_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    review(&ws, DOC, vec![typo(), attention()]).unwrap();
    let out = revert(&ws, &[2]).unwrap();
    assert_eq!(out.entries[0].id.to_string(), "REVERT-RVW-0002");
    assert_eq!(out.summary_json()["total_reverted"], 1);
    assert!(ws.path("review/patches/REVERT-RVW-0002.patch").exists());
    let reviewed = fs::read_to_string(ws.path(paths::REVIEWED_DOC)).unwrap();
    assert!(
        !reviewed.contains("RVW-0002"),
        "note of a reverted change is gone"
    );
    let before = snapshot(dir.path());
    assert!(matches!(
        revert(&ws, &[2]),
        Err(WorkspaceError::Revert(RevertError::AlreadyReverted { .. }))
    ));
    assert_eq!(snapshot(dir.path()), before);
    revert(&ws, &[1]).unwrap();
    assert_eq!(fs::read_to_string(ws.path(paths::EDITED_DOC)).unwrap(), DOC);
}

#[test]
fn in_place_replaces_the_original_and_the_workspace_is_found_again() {
    let dir = tempfile::tempdir().unwrap();
    let doc_path = dir.path().join("spec.md");
    fs::write(&doc_path, DOC).unwrap();
    let ws = Workspace::new(locate_workspace(&doc_path, DOC).root);
    assert!(ws
        .root()
        .ends_with(format!(".review/spec_{}", &sha256("spec.md")[7..19])));
    let clock = SteppingClock::new("2026-03-01T10:00:00Z");
    ws.review(ReviewRequest {
        doc_name: "spec.md",
        document: DOC,
        ops: &[typo()],
        origin: koas_review_schema::apply::OpOrigin::Person,
        protected: &regions(),
        options: &ApplyOptions::default(),
        actor: &actor(),
        command: "koas review spec.md --in-place",
        clock: &clock,
        in_place: Some(&doc_path),
    })
    .unwrap();
    let replaced = fs::read_to_string(&doc_path).unwrap();
    assert!(replaced.contains("bandwidth"));
    assert_eq!(locate_workspace(&doc_path, &replaced).root, ws.root());
    // The edited document given back is accepted as the current version.
    review(&ws, &replaced, vec![attention()]).unwrap();
}

#[test]
fn strict_mode_and_protected_regions_follow_the_document() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    // First run inserts two lines above the fence: regions given for the
    // original must be mapped onto the current document on the next run.
    review(&ws, DOC, vec![json!({"action": "insert", "kind": "grammar", "target": {"line_start": 1, "line_end": 1}, "after_text": "\nIntro."})]).unwrap();
    let clock = SteppingClock::new("2026-03-01T10:00:00Z");
    let strict = ApplyOptions {
        strict: true,
        ..ApplyOptions::default()
    };
    let out = ws
        .review(ReviewRequest {
            doc_name: "spec.md",
            document: DOC,
            ops: &[json!({"action": "replace", "kind": "typo", "target": {"line_start": 8}, "after_text": "code2"})],
            origin: koas_review_schema::apply::OpOrigin::Person,
            protected: &regions(),
            options: &strict,
            actor: &actor(),
            command: "koas review --strict",
            clock: &clock,
            in_place: None,
        })
        .unwrap();
    assert_eq!(out.batch.rejected.len(), 1);
    assert!(
        out.batch.rejected[0].rejection.reason.contains("lines 7–9"),
        "{}",
        out.batch.rejected[0].rejection.reason
    );
}

#[test]
fn orphan_patches_are_reported_and_their_ids_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    review(&ws, DOC, vec![typo()]).unwrap();
    // A run that died after writing patches but before the ledger.
    fs::write(ws.path("review/patches/RVW-0007.patch"), "--- a/spec.md\n").unwrap();
    let status = ws.status().unwrap();
    assert_eq!(
        status.orphan_patches,
        vec!["review/patches/RVW-0007.patch".to_string()]
    );
    let out = review(&ws, DOC, vec![attention()]).unwrap();
    assert_eq!(out.entries[0].id.to_string(), "RVW-0008");
    // The next run removed it before writing, and its ID stays retired.
    assert!(!ws.path("review/patches/RVW-0007.patch").exists());
    assert!(ws.status().unwrap().orphan_patches.is_empty());
    let out = review(&ws, DOC, vec![typo()]).unwrap();
    assert!(out.entries.iter().all(|e| e.id.to_string() != "RVW-0007"));
}

#[test]
fn lost_patch_files_are_rebuilt_from_the_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    review(&ws, DOC, vec![typo(), attention()]).unwrap();
    let forward = ws.path("review/patches/RVW-0001.patch");
    let original = fs::read(&forward).unwrap();
    fs::remove_file(&forward).unwrap();
    fs::write(ws.path("review/patches/RVW-0002.inverse.patch"), b"").unwrap();
    let status = ws.status().unwrap();
    assert_eq!(
        status.damaged_patches,
        vec![
            "review/patches/RVW-0001.patch".to_string(),
            "review/patches/RVW-0002.inverse.patch".to_string()
        ]
    );
    revert(&ws, &[2]).unwrap();
    assert_eq!(fs::read(&forward).unwrap(), original);
    assert!(ws.status().unwrap().damaged_patches.is_empty());
}

#[test]
fn report_is_written_in_both_places() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    review(&ws, DOC, vec![typo(), attention()]).unwrap();
    let meta = ReportMeta {
        generated_at: "2026-03-01T12:00:00+00:00".into(),
        tool: "koas test".into(),
        kernels: vec![("md_apply_ops".into(), "1.1.0".into())],
        doc_name: "spec.md".into(),
        original_hash: sha256(DOC),
        current_hash: sha256(ws.current_text().unwrap()),
        notice: None,
    };
    let sections = vec![SectionEntry::from_lines("S1", "Spec", 1, 9)];
    let text = ws.write_report(&meta, &sections, &[]).unwrap();
    assert!(text.contains("### Spec (lines 1–9)"));
    assert_eq!(
        fs::read_to_string(ws.path("review/REVIEW_spec.md")).unwrap(),
        text
    );
    assert_eq!(
        fs::read_to_string(ws.path("stage3/REVIEW_spec.md")).unwrap(),
        text
    );
}

#[path = "two_step_tests.rs"]
mod two_step;

fn begin_following<'w>(
    ws: &'w Workspace,
    document: &str,
    rebase: bool,
) -> Result<PreparedRun<'w>, WorkspaceError> {
    let clock = SteppingClock::new("2026-03-03T10:00:00Z");
    ws.begin_following(
        BeginRequest {
            doc_name: "spec.md",
            document: Some(document),
            kind: RunKind::Review,
            command: "koas review spec.md",
            clock: &clock,
        },
        &Follow {
            rebase,
            actor: &actor(),
            options: &ApplyOptions::default(),
        },
    )
}

#[test]
fn a_hand_edit_is_refused_then_recorded_as_external_changes_and_the_ledger_kept() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    review(&ws, DOC, vec![typo(), attention()]).unwrap();
    let current = ws.current_text().unwrap();
    // The user edits the reviewed text: the typo fix's line and a new line.
    let edited = current
        .replace("The bandwidth is high.", "The bandwidth is very high.")
        .replace("# Spec\n", "Draft.\n# Spec\n");
    let before = snapshot(dir.path());
    let err = begin_following(&ws, &edited, false).unwrap_err();
    assert!(
        matches!(err, WorkspaceError::DocumentMismatch { changes: 2, .. }),
        "{err}"
    );
    assert_eq!(snapshot(dir.path()), before, "a refusal writes nothing");
    let run = begin_following(&ws, &edited, true).unwrap();
    assert_eq!(run.current_text(), edited);
    let rebased: Vec<String> = run.rebased().iter().map(|i| i.to_string()).collect();
    assert_eq!(rebased, ["RVW-0003", "RVW-0004"]);
    assert_eq!(run.next_id().to_string(), "RVW-0005");
    drop(run);
    let ledger = ws.ledger().unwrap();
    assert_eq!(ledger.entries().len(), 4, "the ledger is kept and grows");
    assert!(ledger.entries()[2..]
        .iter()
        .all(|e| e.kind == EXTERNAL_KIND));
    let status = ws.status().unwrap();
    assert_eq!(status.document_state, "consistent");
    let blocked: Vec<(String, String)> = status
        .not_revertible
        .iter()
        .map(|b| (b.id.to_string(), b.by.to_string()))
        .collect();
    assert_eq!(blocked, [("RVW-0001".to_owned(), "RVW-0004".to_owned())]);
    // The change the user did not touch still reverts; the other is refused.
    assert!(matches!(
        revert(&ws, &[1]),
        Err(WorkspaceError::Revert(RevertError::Conflict { .. }))
    ));
    revert(&ws, &[2]).unwrap();
    assert!(ws.current_text().unwrap().contains("very high"));
}

#[test]
fn with_no_change_recorded_a_hand_edit_is_followed_without_asking() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    review(&ws, DOC, vec![]).unwrap();
    let edited = DOC.replace("Another paragraph here.", "Another paragraph, by hand.");
    let run = begin_following(&ws, &edited, false).unwrap();
    assert_eq!(run.rebased().len(), 1);
    assert_eq!(run.current_text(), edited);
}

#[test]
fn a_workspace_named_after_the_content_is_renamed_and_others_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let doc_path = dir.path().join("spec.md");
    fs::write(&doc_path, DOC).unwrap();
    let old = dir
        .path()
        .join(".review")
        .join(format!("spec_{}", &sha256(DOC)[7..19]));
    review(&Workspace::new(&old), DOC, vec![typo()]).unwrap();
    // A second, empty one, as an earlier koas started beside an edited copy.
    let stray = dir.path().join(".review/spec_0123456789ab");
    review(&Workspace::new(&stray), "# Spec\n", vec![]).unwrap();
    // A folder of another document is never taken.
    let foreign = dir.path().join(".review/spec_ba9876543210");
    fs::create_dir_all(&foreign).unwrap();
    fs::write(
        foreign.join(paths::META),
        r#"{"doc_name":"spec.markdown","original_hash":"sha256:00","created_at":"t"}"#,
    )
    .unwrap();
    let located = locate_workspace(&doc_path, DOC);
    assert_eq!(located.root, auto_workspace_dir(&doc_path));
    assert_eq!(located.migrated_from.as_deref(), Some(old.as_path()));
    assert_eq!(located.others, std::slice::from_ref(&stray));
    assert!(!old.exists());
    assert_eq!(
        Workspace::new(&located.root)
            .ledger()
            .unwrap()
            .entries()
            .len(),
        1
    );
    assert!(foreign.exists() && stray.exists());
    // Found again, with nothing more to move.
    let again = locate_workspace(&doc_path, "edited\n");
    assert_eq!(again.root, located.root);
    assert_eq!(again.migrated_from, None);
}
