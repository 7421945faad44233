//! The review commands end to end through the real `koas` binary and the
//! reviewer plugins, on this crate's own fixture documents: review with a
//! fixed ops file, then show / grep / status / report / revert, and the
//! refusals (double revert, revert of a revert, conflict, lock, torn
//! ledger, --strict), --in-place.

use crate::review_common::{assert_code, code, stderr, stdout, tree, Scratch};
use koas_test_support::{git_apply_check, git_available};
use serde_json::Value;
use std::collections::BTreeSet;

const DOC: &str = "retention_policy.md";
const OPS: &str = "retention_policy.ops.json";

fn ids(entries: &Value) -> Vec<String> {
    entries
        .as_array()
        .expect("array")
        .iter()
        .map(|e| e["id"].as_str().expect("id").to_owned())
        .collect()
}

/// Reviews the English fixture with its ops; returns the scratch folder and
/// the `--json` summary.
fn reviewed() -> (Scratch, Value) {
    let s = Scratch::with_fixture(DOC);
    let (out, v) = s.koas_json(&["review", DOC, "--ops", OPS]);
    assert_code(&out, 0, "review");
    (s, v)
}

#[test]
fn review_records_every_op_with_patches_ledger_log_report_and_notes() {
    let (s, v) = reviewed();
    let ws = s.workspace();
    assert!(ws
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("retention_policy_"));
    assert_eq!(v["status"], "completed");
    assert_eq!(v["total_changes"], 7, "{v:#}");
    assert_eq!(v["flags"], 1);
    assert_eq!(v["rejected"], 6);
    // The rejection classes, each with a reason (REJECT_SCHEMA_ID needs
    // NOTE_ID_FIX off: see the test below; REJECT_LEDGER cannot happen
    // when the engine allocates the IDs).
    let classes: BTreeSet<&str> = crate::common::strings_of(&v["apply_log"], "reject")
        .into_iter()
        .collect();
    let expected: BTreeSet<&str> = [
        "REJECT_HASH",
        "REJECT_SCHEMA_NOTE",
        "REJECT_PROTECTED",
        "REJECT_RANGE",
        "REJECT_OTHER",
    ]
    .into();
    assert_eq!(classes, expected, "{v:#}");
    for record in v["apply_log"].as_array().unwrap() {
        if record["status"] == "rejected" {
            assert!(
                // A rejected op has no change ID: it is named by position.
                record["reason"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("op {}: ", record["op_index"]))
                    && record.get("id").is_none(),
                "{record}"
            );
        }
    }
    // The incoming id is never trusted.
    assert_eq!(v["applied_ids"][0], "RVW-0001");
    // The reviewer's workspace layout: the files that tools and people
    // look for after a review are all there.
    for rel in [
        "stage1/doc.raw.md",
        "stage1/outline.json",
        "stage1/protected_spans.json",
        "stage2/coherence_issues.json",
        "stage3/doc.edited.md",
        "stage3/doc.REVIEWED.md",
        "stage3/apply_log.jsonl",
        "stage3/REVIEW_retention_policy.md",
        "review/ledger.jsonl",
        "review/REVIEW_retention_policy.md",
        "review/patches/RVW-0001.patch",
        "review/patches/RVW-0001.inverse.patch",
    ] {
        assert!(ws.join(rel).is_file(), "missing {rel}");
    }
    assert!(!ws.join(".lock").exists(), "the lock is released");
    assert!(
        !ws.join("review/REVIEW.md").exists(),
        "the generic report file is not written in a workspace"
    );
    assert_eq!(
        std::fs::read(ws.join("stage1/doc.raw.md")).unwrap(),
        s.read(DOC)
    );
    assert_eq!(
        s.read(DOC),
        std::fs::read(crate::review_common::fixtures().join(DOC)).unwrap(),
        "DOC untouched without --in-place"
    );
    let ledger = std::fs::read_to_string(ws.join("review/ledger.jsonl")).unwrap();
    assert_eq!(
        ledger.lines().count(),
        8,
        "one entry per applied op and flag"
    );
    let fixed: Value = serde_json::from_str(ledger.lines().nth(7).unwrap()).unwrap();
    // Op 11, after six rejected ops that took no ID.
    assert_eq!(fixed["id"], "RVW-0008");
    assert_eq!(
        fixed["review_note"]["text"], "REVIEWER: RVW-0008 — shorter.",
        "NOTE_ID_FIX"
    );
    assert!(
        fixed["fixes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "NOTE_ID_FIX"),
        "{fixed}"
    );
    let first: Value = serde_json::from_str(ledger.lines().next().unwrap()).unwrap();
    for field in koas_review_schema::ledger::LEDGER_FIELDS {
        assert!(first.get(field).is_some(), "ledger field {field} missing");
    }
    assert_eq!(first["source_id"], "LLM-7");
    assert_eq!(first["scope"]["anchor"], "2-retention-periods");
    assert_eq!(first["actor"]["operator"], "reviewer");
    let edited = std::fs::read_to_string(ws.join("stage3/doc.edited.md")).unwrap();
    assert!(edited.contains("is written, not when") && !edited.contains("As an AI"));
    assert!(
        edited.contains("| application | 45 days | hot |"),
        "attention op on a table"
    );
    assert!(
        edited.contains("| access | 90 days | warm |"),
        "silent op on a table refused"
    );
    let reviewed = std::fs::read_to_string(ws.join("stage3/doc.REVIEWED.md")).unwrap();
    assert!(
        reviewed.contains("> [!CAUTION]\n> REVIEWER: RVW-0004 — Repeats the first sentence"),
        "{reviewed}"
    );
    assert!(
        reviewed.contains("> [!IMPORTANT]\n> REVIEWER: RVW-0006 —"),
        "{reviewed}"
    );
    let report = std::fs::read_to_string(ws.join("review/REVIEW_retention_policy.md")).unwrap();
    assert_eq!(
        report,
        std::fs::read_to_string(ws.join("stage3/REVIEW_retention_policy.md")).unwrap()
    );
    for needle in [
        "| Kernel `md_apply_ops` |",
        "| Original hash | `sha256:",
        "## Changes by section",
        "### 2. Retention periods (lines",
        "## Ledger (chronological)",
        "## Findings on the current document",
        "ai_leftover",
        "## Rejected ops (last run)",
    ] {
        assert!(report.contains(needle), "report lacks {needle}:\n{report}");
    }
    // Forward patches apply with git to the state they were made on: the
    // first one to the original.
    if git_available() {
        let patch = std::fs::read(ws.join("review/patches/RVW-0001.patch")).unwrap();
        git_apply_check(DOC, s.read(DOC), &patch).expect("git apply --check");
    }
    // Human output names the workspace, the report and the rejections.
    let s2 = Scratch::with_fixture(DOC);
    let out = s2.koas(&["-q", "review", DOC, "--ops", OPS]);
    assert_code(&out, 0, "human review");
    let text = stdout(&out);
    assert!(
        text.starts_with(
            "koas review: retention_policy.md: 14 ops: 7 applied, 1 flagged, 6 rejected"
        ),
        "{text}"
    );
    assert!(text.contains("rejected REJECT_HASH: op 10: "), "{text}");
    assert!(
        text.contains("report:    ./.review/retention_policy_"),
        "{text}"
    );
}

#[test]
fn show_grep_status_and_report_read_the_ledger() {
    let (s, _) = reviewed();
    let out = s.koas(&["-q", "show", DOC, "RVW-0003", "--patch"]);
    assert_code(&out, 0, "show");
    let text = stdout(&out);
    for needle in [
        "ID:          RVW-0003",
        "Kind:        reference",
        "Severity:    attention",
        "Silent:      false",
        "Rationale:   Section 7 does not exist",
        "Scope:       3-deletion S1.3.p3",
        "Hash before: sha256:",
        "--- a/retention_policy.md\n+++ b/retention_policy.md\n",
        "-approval workflow.",
    ] {
        assert!(text.contains(needle), "show lacks {needle}:\n{text}");
    }
    let (_, v) = s.koas_json(&["show", DOC, "RVW-0003", "--patch"]);
    assert_eq!(v["change"]["severity"], "attention");
    assert!(v["patch"]
        .as_str()
        .unwrap()
        .starts_with("--- a/retention_policy.md"));
    let out = s.koas(&["-q", "show", DOC, "RVW-0077"]);
    assert_code(&out, 1, "show of an unknown ID");
    assert!(
        stderr(&out).contains("RVW-0077 is not in the ledger"),
        "{}",
        stderr(&out)
    );
    let out = s.koas(&["-q", "show", DOC, "banana"]);
    assert_code(&out, 2, "show of a malformed ID");

    let (_, v) = s.koas_json(&["grep", DOC, "-s", "attention"]);
    assert_eq!(ids(&v["entries"]), vec!["RVW-0003", "RVW-0007"]);
    let (_, v) = s.koas_json(&["grep", DOC, "--silent", "true"]);
    assert_eq!(ids(&v["entries"]), vec!["RVW-0001"]);
    let (_, v) = s.koas_json(&["grep", DOC, "-k", "ai_leftover"]);
    assert_eq!(ids(&v["entries"]), vec!["RVW-0002"]);
    let (_, v) = s.koas_json(&["grep", DOC, "migration"]);
    assert_eq!(ids(&v["entries"]), vec!["RVW-0005"]);
    let (_, v) = s.koas_json(&["grep", DOC, "--reverts", "true"]);
    assert_eq!(v["total"], 0);
    let out = s.koas(&["-q", "grep", DOC, "-k", "typo"]);
    assert!(stdout(&out).starts_with("ID  "), "{}", stdout(&out));
    assert!(
        stdout(&out)
            .lines()
            .nth(1)
            .unwrap_or("")
            .starts_with("RVW-0001  "),
        "{}",
        stdout(&out)
    );
    let out = s.koas(&["-q", "grep", DOC, "("]);
    assert_code(&out, 2, "invalid regex");

    let (_, v) = s.koas_json(&["status", DOC]);
    assert_eq!(v["status"], "ok");
    assert_eq!(
        v["stages_completed"],
        serde_json::json!(["stage1", "stage2", "stage3"])
    );
    assert_eq!(v["counts"]["total_changes"], 7);
    assert_eq!(v["document_state"], "consistent");
    assert!(v["torn_tail"].is_null() && v["locked_by"].is_null());
    let out = s.koas(&["-q", "status", DOC]);
    assert!(stdout(&out).contains("lock:      free"), "{}", stdout(&out));

    let ws = s.workspace();
    std::fs::remove_file(ws.join("review/REVIEW_retention_policy.md")).unwrap();
    let out = s.koas(&["-q", "report", DOC]);
    assert_code(&out, 0, "report");
    assert!(stdout(&out)
        .trim_end()
        .ends_with("review/REVIEW_retention_policy.md"));
    assert!(
        ws.join("review/REVIEW_retention_policy.md").is_file(),
        "rewritten"
    );
    let (_, v) = s.koas_json(&["report", DOC]);
    assert_eq!(v["counts"]["flags"], 1);
    let out = s.koas(&["-q", "report", DOC, "--print"]);
    // The document's name is escaped in the heading like any text the
    // engine did not write (`_` → `\_`).
    assert!(stdout(&out).starts_with("# Review report — retention\\_policy.md"));
}

#[test]
fn revert_single_bulk_double_and_all_give_back_the_original_bytes() {
    let (s, _) = reviewed();
    let ws = s.workspace();
    let original = s.read(DOC);
    let (out, v) = s.koas_json(&["revert", DOC, "RVW-0003"]);
    assert_code(&out, 0, "single revert");
    assert_eq!(v["total_reverted"], 1);
    assert_eq!(v["reverts"][0]["id"], "REVERT-RVW-0003");
    assert!(ws.join("review/patches/REVERT-RVW-0003.patch").is_file());
    assert!(ws
        .join("review/patches/REVERT-RVW-0003.inverse.patch")
        .is_file());
    // Double revert and revert of a revert: refused, nothing touched.
    let before = tree(&ws, &[".koas", "run.json"]);
    for (args, needle) in [
        (vec!["revert", DOC, "RVW-0003"], "already reverted"),
        (
            vec!["revert", DOC, "REVERT-RVW-0003"],
            "cannot itself be reverted",
        ),
        (vec!["revert", DOC, "RVW-0006"], "nothing to revert"),
        (
            vec!["revert", DOC, "RVW-0001", "RVW-0042"],
            "RVW-0042 is not in the ledger",
        ),
    ] {
        let mut all = vec!["-q"];
        all.extend(args.iter().copied());
        let out = s.koas(&all);
        assert_code(&out, 1, needle);
        assert!(stderr(&out).contains(needle), "{}", stderr(&out));
        // The refusal as the command words it: what, then that nothing
        // changed; its JSON says refused, with nothing reverted.
        assert!(
            stderr(&out).starts_with("error: revert refused: ")
                && stderr(&out).trim_end().ends_with("(nothing was changed)"),
            "{}",
            stderr(&out)
        );
        let (_, v) = s.koas_json(&args);
        assert_eq!(v["status"], "refused", "{v}");
        assert_eq!(v["total_reverted"], 0, "{v}");
        assert!(
            v["error"].as_str().is_some_and(|e| e.contains(needle)),
            "{v}"
        );
        assert_eq!(
            tree(&ws, &[".koas", "run.json"]),
            before,
            "{needle}: something was written"
        );
    }
    let (out, v) = s.koas_json(&["revert", DOC, "RVW-0001", "RVW-0002"]);
    assert_code(&out, 0, "bulk");
    assert_eq!(
        ids(&v["reverts"]),
        vec!["REVERT-RVW-0002", "REVERT-RVW-0001"],
        "latest first"
    );
    let out = s.koas(&["-q", "revert", DOC, "--all", "--reason", "rollback"]);
    assert_code(&out, 0, "all");
    assert!(
        stdout(&out).contains("4 changes reverted"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        std::fs::read(ws.join("stage3/doc.edited.md")).unwrap(),
        original
    );
    let (_, v) = s.koas_json(&["grep", DOC, "--reverts", "true"]);
    assert_eq!(v["total"], 7);
    assert_eq!(v["entries"][6]["rationale"], "rollback");
    let report = std::fs::read_to_string(ws.join("review/REVIEW_retention_policy.md")).unwrap();
    assert!(report.contains("reverted (REVERT-RVW-0003)"), "{report}");
    let (out, v) = s.koas_json(&["revert", DOC, "--all"]);
    assert_code(&out, 0, "nothing left");
    assert_eq!(v["total_reverted"], 0);
}

#[test]
fn conflicts_are_refused_and_touch_nothing() {
    let s = Scratch::with_fixture("controle_acces.md");
    let doc = "controle_acces.md";
    let out = s.koas(&["-q", "review", doc, "--ops", "controle_acces.ops.json"]);
    assert_code(&out, 0, "review");
    // A second review rewrites the lines RVW-0003 changed (27–28 of the
    // current document, which lost line 8).
    s.write(
        "again.json",
        r#"[{"action": "replace", "kind": "style", "target": {"line_start": 26},
             "after_text": "Les scripts d'extraction n'ont pas été analysés.", "rationale": "Plus court."}]"#,
    );
    let out = s.koas(&["-q", "review", doc, "--ops", "again.json"]);
    assert_code(&out, 0, "second review");
    let ws = s.workspace();
    let before = tree(&ws, &[".koas", "run.json"]);
    let out = s.koas(&["-q", "revert", doc, "RVW-0003"]);
    assert_code(&out, 1, "conflict");
    assert!(
        stderr(&out).contains("RVW-0008 changed the same lines afterwards; revert RVW-0008 first"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        tree(&ws, &[".koas", "run.json"]),
        before,
        "a refused revert wrote something"
    );
    // In order, it works.
    let out = s.koas(&["-q", "revert", doc, "RVW-0008", "RVW-0003"]);
    assert_code(&out, 0, "revert in order");

    // The edited document changed outside koas: refused, nothing touched.
    let edited = ws.join("stage3/doc.edited.md");
    let mut bytes = std::fs::read(&edited).unwrap();
    bytes.extend_from_slice(b"Ajout manuel.\n");
    std::fs::write(&edited, &bytes).unwrap();
    let before = tree(&ws, &[".koas", "run.json"]);
    let out = s.koas(&["-q", "revert", doc, "RVW-0001"]);
    assert_code(&out, 2, "diverged document");
    assert!(
        stderr(&out).contains("matches no state recorded in the ledger"),
        "{}",
        stderr(&out)
    );
    assert_eq!(tree(&ws, &[".koas", "run.json"]), before);
    let (_, v) = s.koas_json(&["status", doc]);
    assert_eq!(v["status"], "diverged");
}

#[test]
fn a_live_lock_holder_is_named_and_the_run_refused() {
    let (s, _) = reviewed();
    let ws = s.workspace();
    let mut holder = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("sleep runs");
    let lock = serde_json::json!({
        "pid": holder.id(),
        "hostname": koas_orchestrator::lock::hostname(),
        "command": "koas review retention_policy.md --ops other.json",
        "started_at": "2026-01-01T00:00:00.000000+00:00",
    });
    std::fs::write(ws.join(".lock"), lock.to_string()).unwrap();
    let before = tree(&ws, &[".koas", "run.json", ".lock"]);
    let out = s.koas(&["-q", "review", DOC, "--ops", OPS]);
    let text = stderr(&out);
    assert_code(&out, 2, "locked");
    assert!(
        text.contains(&format!("pid {}", holder.id()))
            && text.contains("koas review retention_policy.md --ops other.json")
            && text.contains("is in use by"),
        "{text}"
    );
    let out = s.koas(&["-q", "revert", DOC, "RVW-0001"]);
    assert_code(&out, 2, "locked revert");
    let (_, v) = s.koas_json(&["status", DOC]);
    assert_eq!(v["status"], "locked");
    assert_eq!(v["locked_by"]["pid"], holder.id());
    assert_eq!(tree(&ws, &[".koas", "run.json", ".lock"]), before);
    let _ = holder.kill();
    let _ = holder.wait();
    // The holder is gone: its stale lock is taken over.
    let (out, v) = s.koas_json(&["review", DOC]);
    assert_code(&out, 0, "stale lock taken over");
    assert_eq!(
        v["took_over_stale_lock"]["command"],
        "koas review retention_policy.md --ops other.json"
    );
}

#[test]
fn a_torn_ledger_tail_is_reported_refused_repaired_and_its_ids_never_reused() {
    let (s, _) = reviewed();
    let ws = s.workspace();
    let ledger = ws.join("review/ledger.jsonl");
    let mut bytes = std::fs::read(&ledger).unwrap();
    let intact = bytes.len();
    bytes.extend_from_slice(br#"{"id":"RVW-0142","doc":"retention_pol"#);
    std::fs::write(&ledger, &bytes).unwrap();
    let (_, v) = s.koas_json(&["status", DOC]);
    assert_eq!(v["status"], "torn_ledger");
    assert_eq!(v["torn_tail"]["offset"], intact);
    let out = s.koas(&["-q", "status", DOC]);
    assert!(stdout(&out).contains("--repair-ledger"), "{}", stdout(&out));
    let (_, v) = s.koas_json(&["grep", DOC]);
    assert_eq!(v["total"], 8, "entries before the torn line are read");
    assert!(!v["torn_tail"].is_null());
    for args in [
        vec!["review", DOC, "--ops", OPS],
        vec!["revert", DOC, "RVW-0001"],
    ] {
        let mut all = vec!["-q"];
        all.extend(args.iter().copied());
        let out = s.koas(&all);
        assert_code(&out, 2, "torn ledger");
        assert!(stderr(&out).contains("torn line"), "{}", stderr(&out));
        assert_eq!(std::fs::read(&ledger).unwrap(), bytes, "nothing appended");
    }
    let (out, v) = s.koas_json(&["status", DOC, "--repair-ledger"]);
    assert_code(&out, 0, "repair");
    let side = v["repaired_to"].as_str().expect("side file");
    assert!(std::fs::read_to_string(s.path(side))
        .unwrap()
        .contains("RVW-0142"));
    assert_eq!(std::fs::read(&ledger).unwrap().len(), intact);
    s.write(
        "more.json",
        r#"[{"action": "flag_only", "target": {"line_start": 9}, "rationale": "again"}]"#,
    );
    let (out, v) = s.koas_json(&["review", DOC, "--ops", "more.json"]);
    assert_code(&out, 0, "after repair");
    assert_eq!(
        v["applied_ids"][0], "RVW-0143",
        "allocation continues past the torn ID"
    );
}

#[test]
fn strict_refuses_protected_edits_that_attention_would_allow() {
    let s = Scratch::with_fixture(DOC);
    s.write(
        "protected.json",
        r#"[
          {"action": "replace", "kind": "data", "severity": "attention", "target": {"line_start": 25},
           "after_text": "| application | 60 days | hot |", "rationale": "new period"},
          {"action": "replace", "kind": "command", "target": {"line_start": 36}, "needs_attention": true,
           "after_text": "purge-logs --older-than 180d --class access"},
          {"action": "replace", "kind": "naming", "target": {"line_start": 33}, "needs_attention": true,
           "before_text": "`purge-logs`", "after_text": "`logs-purge`"},
          {"action": "replace", "kind": "typo", "target": {"line_start": 9},
           "before_text": "defines", "after_text": "sets"}
        ]"#,
    );
    let (out, v) = s.koas_json(&[
        "review",
        DOC,
        "--ops",
        "protected.json",
        "--strict",
        // The fixture's planted "writen" has a certain fix: not this test's.
        "--no-check-fixes",
        "-w",
        "strict-ws",
    ]);
    assert_code(&out, 0, "strict");
    assert_eq!(v["total_changes"], 1, "{v:#}");
    let protected: Vec<&str> = v["apply_log"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["reject"] == "REJECT_PROTECTED")
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    assert_eq!(protected.len(), 3, "{v:#}");
    assert!(protected.iter().any(|r| r.contains("table")));
    assert!(protected.iter().any(|r| r.contains("code_fence")));
    assert!(protected.iter().any(|r| r.contains("inline_code")));
    let edited = std::fs::read_to_string(s.path("strict-ws/stage3/doc.edited.md")).unwrap();
    assert!(
        edited.contains("| application | 30 days | hot |") && edited.contains("`purge-logs` job")
    );
    // Without --strict they need attention and a note, and are applied.
    let (out, v) = s.koas_json(&[
        "review",
        DOC,
        "--ops",
        "protected.json",
        "--no-check-fixes",
        "-w",
        "lenient-ws",
    ]);
    assert_code(&out, 0, "lenient");
    assert_eq!(v["total_changes"], 4, "{v:#}");
    let touching = v["apply_log"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["touches_protected"]
                .as_array()
                .is_some_and(|t| !t.is_empty())
        })
        .count();
    assert_eq!(touching, 3);
}

#[test]
fn in_place_replaces_the_document_only_on_success_and_reverts_in_place() {
    let s = Scratch::with_fixture(DOC);
    let original = s.read(DOC);
    // A failing run (the pipeline file is invalid) leaves DOC alone.
    s.write(
        "broken.toml",
        "name = \"reviewer\"\nkernels = [\"md_apply_ops\", \"no_such_kernel\"]\n",
    );
    let out = s.koas(&[
        "-q",
        "review",
        DOC,
        "--ops",
        OPS,
        "--in-place",
        "--pipeline",
        "broken.toml",
    ]);
    assert_code(&out, 2, "broken pipeline");
    assert_eq!(s.read(DOC), original);
    // (The fixture's planted "writen" has a certain fix: not applied here.)
    let out = s.koas(&["-q", "review", DOC, "--in-place", "--no-check-fixes"]);
    assert_code(&out, 0, "in place, no ops");
    assert_eq!(s.read(DOC), original, "no change, same bytes");
    s.write(
        "one.json",
        r#"[{"action": "replace", "kind": "typo", "target": {"line_start": 47}, "before_text": "archive", "after_text": "archived file"}]"#,
    );
    let ws = s.workspace();
    let out = s.koas(&["-q", "review", DOC, "--ops", "one.json", "--in-place"]);
    assert_code(&out, 0, "in place");
    let replaced = s.read(DOC);
    assert_eq!(
        replaced,
        std::fs::read(ws.join("stage3/doc.edited.md")).unwrap()
    );
    assert!(String::from_utf8_lossy(&replaced).contains("archived file"));
    // DOC is now the edited version: its workspace is still found.
    let (out, v) = s.koas_json(&["status", DOC]);
    assert_code(&out, 0, "status after in place");
    assert_eq!(
        v["workspace"].as_str().unwrap(),
        ws.strip_prefix(s.dir.path())
            .map(|p| format!("./{}", p.display()))
            .unwrap()
    );
    let out = s.koas(&["-q", "revert", DOC, "--all", "--in-place"]);
    assert_code(&out, 0, "revert in place");
    let restored = s.read(DOC);
    let fixture = std::fs::read(crate::review_common::fixtures().join(DOC)).unwrap();
    assert_eq!(restored, fixture, "every byte of the original is back");
}

#[test]
fn without_ops_the_deterministic_stages_run_and_the_report_says_so() {
    let s = Scratch::with_fixture("controle_acces.md");
    let out = s.koas(&["-q", "review", "controle_acces.md"]);
    assert_code(&out, 0, "no ops");
    assert!(
        stdout(&out).contains("no model and no ops: deterministic stages only, 0 changes"),
        "{}",
        stdout(&out)
    );
    let ws = s.workspace();
    let report = std::fs::read_to_string(ws.join("review/REVIEW_controle_acces.md")).unwrap();
    assert!(
        report.to_lowercase().contains("no ops were given"),
        "{report}"
    );
    assert!(report.contains("No changes."));
    assert!(
        report.contains("broken_reference"),
        "Stage 2 findings are listed:\n{report}"
    );
    assert_eq!(
        std::fs::read(ws.join("stage3/doc.edited.md")).unwrap(),
        s.read("controle_acces.md")
    );
    assert_eq!(
        std::fs::metadata(ws.join("review/ledger.jsonl"))
            .map(|m| m.len())
            .unwrap_or(0),
        0
    );
}

#[test]
fn usage_errors_name_the_file_and_exit_2() {
    let s = Scratch::with_fixture(DOC);
    let out = s.koas(&["-q", "review", "missing.md"]);
    assert_code(&out, 2, "missing doc");
    assert!(stderr(&out).contains("missing.md"), "{}", stderr(&out));
    s.write("bad.json", "{not json");
    let out = s.koas(&["-q", "review", DOC, "--ops", "bad.json"]);
    assert_code(&out, 2, "bad ops");
    assert!(stderr(&out).contains("bad.json"), "{}", stderr(&out));
    assert!(
        !s.path(".review").exists(),
        "nothing created for a bad ops file"
    );
    let (out, v) = s.koas_json(&["status", DOC]);
    assert_code(&out, 2, "no workspace");
    assert_eq!(v["status"], "error");
    assert!(
        v["error"].as_str().unwrap().contains("run `koas review"),
        "{v}"
    );
    let out = s.koas(&["-q", "revert", DOC]);
    assert_code(&out, 2, "revert without IDs");
    let out = s.koas(&["review", "--help"]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("Exit codes:") && stdout(&out).contains("--strict"));
}

#[test]
fn with_note_id_fix_off_a_note_naming_another_change_is_reject_schema_id() {
    let s = Scratch::with_fixture(DOC);
    let config =
        std::fs::read_to_string(koas_test_support::repo_root().join("configs/reviewer.toml"))
            .unwrap()
            .replace(
                "strict = false ",
                "normalize = { note_id_fix = false }\nstrict = false ",
            );
    s.write("pipeline.toml", &config);
    let (out, v) = s.koas_json(&["review", DOC, "--ops", OPS, "--pipeline", "pipeline.toml"]);
    assert_code(&out, 0, "custom pipeline");
    let record = v["apply_log"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["op_index"] == 11)
        .unwrap();
    assert_eq!(record["reject"], "REJECT_SCHEMA_ID", "{record}");
    assert!(
        record["reason"]
            .as_str()
            .unwrap()
            .contains("REVIEWER: RVW-0007"),
        "{record}"
    );
}

#[test]
fn a_plain_pipeline_run_previews_stage3_and_records_nothing() {
    let s = Scratch::with_fixture(DOC);
    let config = koas_test_support::repo_root().join("configs/reviewer.toml");
    let config = config.to_string_lossy();
    let out = s.koas(&["-q", "run", &config, "-w", "plain"]);
    assert_code(&out, 0, "koas run configs/reviewer.toml");
    let report = std::fs::read_to_string(s.path("plain/review/REVIEW.md")).unwrap();
    assert!(
        report.starts_with("# Review report — spec-example.md"),
        "{report}"
    );
    assert!(
        report.to_lowercase().contains("no ops were given"),
        "{report}"
    );
    assert!(
        !s.path("plain/review/ledger.jsonl").exists(),
        "a plain run records nothing"
    );
    let doc_input = format!("doc={}", s.path(DOC).display());
    let ops_input = format!("ops={}", s.path(OPS).display());
    let out = s.koas(&[
        "-q", "run", &config, "-w", "preview", "--input", &doc_input, "--input", &ops_input,
    ]);
    assert_code(&out, 0, "koas run with ops");
    let report = std::fs::read_to_string(s.path("preview/review/REVIEW.md")).unwrap();
    assert!(report.contains("Preview from a pipeline run"), "{report}");
    assert!(
        report.contains("| RVW-0001 | preview (not recorded) |"),
        "{report}"
    );
    let edited = std::fs::read_to_string(s.path("preview/stage3/doc.edited.md")).unwrap();
    assert!(
        edited.contains("is written, not when"),
        "the preview applies the ops"
    );
    assert!(
        std::fs::read_to_string(s.path("preview/stage3/doc.REVIEWED.md"))
            .unwrap()
            .contains("> [!CAUTION]")
    );
    assert!(!s.path("preview/review/ledger.jsonl").exists());
    assert_eq!(
        s.read(DOC),
        std::fs::read(crate::review_common::fixtures().join(DOC)).unwrap()
    );
}

#[test]
fn the_certain_fixes_of_the_checks_become_ledger_entries_and_revert() {
    let s = Scratch::new();
    let doc = "# Guide\n\nIntro.\n\n#### Install\n\nRun the installer.\n\n##\n\nThe end.\n";
    s.write("doc.md", doc);
    let (out, v) = s.koas_json(&["review", "doc.md", "--no-llm"]);
    assert_code(&out, 0, "review");
    let edited =
        std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited");
    assert!(edited.contains("\n## Install\n"), "{edited}");
    assert!(!edited.contains("\n##\n"), "{edited}");
    let ledger =
        std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("ledger");
    // The skip is one change; the empty heading goes with its blank line.
    assert!(ledger.lines().count() >= 2, "{ledger}\n{v}");
    assert!(ledger.contains("heading_level_skip"), "{ledger}");
    assert!(ledger.contains("empty_heading"), "{ledger}");
    let out = s.koas(&["-q", "revert", "doc.md", "--all"]);
    assert_code(&out, 0, "revert --all");
    let current =
        std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited");
    assert_eq!(current, doc);

    // Opted out: no change.
    let t = Scratch::new();
    t.write("doc.md", doc);
    let (out, v) = t.koas_json(&["review", "doc.md", "--no-llm", "--no-check-fixes"]);
    assert_code(&out, 0, "review --no-check-fixes");
    assert_eq!(v["total_changes"], 0, "{v}");
}
