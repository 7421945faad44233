//! Crash test: the driver binary runs `review --ops` and `revert` on a
//! workspace and is killed with SIGKILL at random moments, in a loop.
//! After every kill:
//! - the ledger parses, or its torn tail is reported (then repaired);
//! - the edited document is a complete version recorded in the ledger
//!   (the original or some entry's `doc_hash_after`), never a mix;
//! - the stale lock of the killed process does not block the next run;
//! - a later run allocates IDs never used before, and rebuilds any patch
//!   file the kill lost from the ledger's copy.
//!
//! At the end, reverting every change gives back the original bytes.
//!
//! `KOAS_CRASH_ITERATIONS` sets the number of iterations (default 20).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use koas_kernel_api::hash::sha256;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::edit_op::Action;
use koas_review_workspace::ledger::Ledger;
use koas_review_workspace::{paths, Workspace};

const DRIVER: &str = env!("CARGO_BIN_EXE_koas-review-driver");

fn document() -> String {
    let mut text = String::from("# Crash test document\n\n");
    for section in 0..40 {
        text.push_str(&format!("## Section {section}\n\n"));
        for para in 0..6 {
            for line in 0..6 {
                text.push_str(&format!(
                    "Section {section} paragraph {para} line {line} says something précis about item{}.\n",
                    section * 100 + para * 10 + line
                ));
            }
            text.push('\n');
        }
    }
    text
}

fn driver(args: &[&str]) -> std::process::Child {
    Command::new(DRIVER)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("driver starts")
}

fn run_to_end(args: &[&str]) -> String {
    let out = driver(args).wait_with_output().expect("driver runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "driver {args:?} failed: {stderr}");
    stderr
}

/// Every ID that appears anywhere in the workspace.
fn ids_on_disk(ws: &Workspace) -> BTreeSet<ChangeId> {
    let mut ids = BTreeSet::new();
    if let Ok(read) = std::fs::read_dir(ws.patches_dir()) {
        for entry in read.flatten() {
            ids.extend(ChangeId::scan(&entry.file_name().to_string_lossy()));
        }
    }
    for rel in [paths::LEDGER, paths::APPLY_LOG] {
        if let Ok(bytes) = std::fs::read(ws.path(rel)) {
            ids.extend(ChangeId::scan(&String::from_utf8_lossy(&bytes)));
        }
    }
    ids
}

fn check_invariants(ws: &Workspace, raw_hash: &str, iteration: usize) -> bool {
    let ledger = match Ledger::open(&ws.path(paths::LEDGER)) {
        Ok(ledger) => ledger,
        Err(e) => panic!("iteration {iteration}: the ledger does not parse: {e}"),
    };
    let torn = ledger.torn_tail().is_some();
    if torn {
        let status = ws.status().expect("status works on a torn ledger");
        assert!(
            status.torn_tail.is_some(),
            "iteration {iteration}: torn tail not reported by status"
        );
    }
    if let Ok(bytes) = std::fs::read(ws.path(paths::EDITED_DOC)) {
        let text = String::from_utf8(bytes).expect("edited document is UTF-8");
        let hash = sha256(&text);
        let known = hash == raw_hash || ledger.entries().iter().any(|e| e.doc_hash_after == hash);
        assert!(
            known,
            "iteration {iteration}: doc.edited.md is not a version recorded in the ledger"
        );
    }
    torn
}

#[test]
fn sigkill_at_random_moments_never_corrupts_the_workspace() {
    let iterations: usize = std::env::var("KOAS_CRASH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let doc_path = dir.path().join("doc.md");
    let ops_path = dir.path().join("ops.json");
    let ws_path = dir.path().join("ws");
    let text = document();
    std::fs::write(&doc_path, &text).unwrap();
    let raw_hash = sha256(&text);
    let ws = Workspace::new(&ws_path);
    let (doc, ops, wsp) = (
        doc_path.to_str().unwrap(),
        ops_path.to_str().unwrap(),
        ws_path.to_str().unwrap(),
    );
    let mut rng = koas_test_support::Rng(0x5eed_c0ffee);

    // Calibrate: one complete run.
    std::fs::write(
        &ops_path,
        serde_json::to_string(&koas_test_support::generated_ops(&text, 60, 1)).unwrap(),
    )
    .unwrap();
    let started = Instant::now();
    run_to_end(&["review", wsp, doc, ops]);
    let full_run = started.elapsed().max(Duration::from_millis(5));

    let (mut kills, mut torn_seen, mut fresh_checks) = (0, 0, 0);
    for iteration in 0..iterations {
        let current = ws.current_text().expect("current document readable");
        let ledger = ws.ledger().unwrap();
        let active: Vec<String> = ledger
            .entries()
            .iter()
            .filter(|e| e.action != Action::FlagOnly)
            .filter_map(|e| e.change_id())
            .filter(|id| ledger.revert_of(*id).is_none())
            .map(|id| id.to_string())
            .collect();
        let revert = active.len() > 4 && rng.below(3) == 0;
        let mut args: Vec<String> = if revert {
            let mut picked: Vec<String> = active
                .iter()
                .rev()
                .take(1 + rng.below(active.len().min(40)))
                .cloned()
                .collect();
            picked.sort();
            let mut a = vec!["revert".to_owned(), wsp.to_owned()];
            a.extend(picked);
            a
        } else {
            let planned = koas_test_support::generated_ops(&current, 60, rng.next());
            std::fs::write(&ops_path, serde_json::to_string(&planned).unwrap()).unwrap();
            vec!["review".into(), wsp.into(), doc.into(), ops.into()]
        };
        let ids_before = ids_on_disk(&ws);
        let uninterrupted = iteration % 6 == 5;
        let arg_refs: Vec<&str> = args.iter_mut().map(|s| s.as_str()).collect();
        if uninterrupted {
            run_to_end(&arg_refs);
            // A complete run continues with fresh IDs.
            let ledger = ws.ledger().unwrap();
            for entry in ledger.entries() {
                if let Some(id) = entry.change_id() {
                    if !ids_before.contains(&id) {
                        assert!(
                            ids_before.iter().all(|old| *old < id),
                            "iteration {iteration}: {id} is not fresh (seen before: max {:?})",
                            ids_before.iter().max()
                        );
                    }
                }
            }
            fresh_checks += 1;
        } else {
            let mut child = driver(&arg_refs);
            let delay = full_run.mul_f64(rng.below(1000) as f64 / 1000.0);
            std::thread::sleep(delay);
            if child.try_wait().unwrap().is_none() {
                kills += 1;
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        if check_invariants(&ws, &raw_hash, iteration) {
            torn_seen += 1;
            run_to_end(&["repair", wsp]);
            assert!(
                !check_invariants(&ws, &raw_hash, iteration),
                "repair left a torn tail"
            );
        }
    }

    // Settle: a complete empty review rolls the document forward if needed.
    std::fs::write(&ops_path, "[]").unwrap();
    run_to_end(&["review", wsp, doc, ops]);
    let status = ws.status().unwrap();
    assert_eq!(status.document_state, "consistent");
    assert!(
        status.damaged_patches.is_empty(),
        "patch files not rebuilt: {:?}",
        status.damaged_patches
    );
    assert!(
        ws.root().join(".lock").exists().then_some(()).is_none(),
        "lock released"
    );

    // Undo everything: the original bytes come back.
    let ledger = ws.ledger().unwrap();
    let mut active: Vec<String> = ledger
        .entries()
        .iter()
        .filter(|e| e.action != Action::FlagOnly)
        .filter_map(|e| e.change_id())
        .filter(|id| ledger.revert_of(*id).is_none())
        .map(|id| id.to_string())
        .collect();
    if !active.is_empty() {
        let mut args = vec!["revert".to_owned(), wsp.to_owned()];
        args.append(&mut active);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        run_to_end(&refs);
    }
    let edited = std::fs::read_to_string(ws.path(paths::EDITED_DOC)).unwrap();
    assert!(
        edited == text,
        "reverting everything did not restore the original"
    );
    println!(
        "crash test: {iterations} iterations, {kills} killed mid-run, {torn_seen} torn tails repaired, {fresh_checks} fresh-ID checks, full run {:?}",
        full_run
    );
    assert!(
        kills > 0,
        "no run was actually interrupted; the timing calibration is off"
    );
    let _ = Path::new(doc);
}
