//! Crash test through real processes: `koas review --ops` and `koas
//! revert` are killed with SIGKILL at random moments, in a loop. After
//! every kill:
//!
//! 1. the ledger parses, or its torn last line is reported (and then
//!    repaired with `koas status --repair-ledger`);
//! 2. the edited document is either the version before the run or the
//!    version after it — never a mix — and the workspace is never
//!    "diverged";
//! 3. the next run succeeds (bringing the document up to date if the kill
//!    fell between the ledger and the document) and allocates IDs after
//!    every ID seen before (ledger, patch files, torn side files).
//!
//! At the end, reverting everything gives back the original bytes.
//! The seed is printed; set `KOAS_CRASH_SEED` to replay a run.

use crate::review_common::{assert_code, stdout, Scratch};
use koas_kernel_api::hash::sha256;
use koas_test_support::Rng;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

/// Iterations (alternating review and revert), bounded by [`BUDGET`].
const MAX_ROUNDS: usize = 24;
/// Wall-clock budget of the kill loop.
const BUDGET: Duration = Duration::from_secs(20);

/// Kills made whatever the budget: a loaded machine makes each round
/// slower, not the test weaker.
const MIN_ROUNDS: usize = 4;

fn document() -> String {
    let mut text = String::from("# Operations handbook\n\n");
    for s in 1..=60 {
        text.push_str(&format!("## Section {s}\n\n"));
        for p in 0..2 {
            for l in 0..6 {
                text.push_str(&format!(
                    "Paragraph {p} of section {s}, line {l}: records are kept and purged on schedule.\n"
                ));
            }
            text.push('\n');
        }
        if s % 10 == 0 {
            text.push_str("```sh\npurge --dry-run\n```\n\n");
        }
    }
    text
}

fn sha(bytes: &[u8]) -> String {
    sha256(bytes)
}

/// Ops on distinct prose lines of `current`: whole-line replaces, inserts,
/// deletes and flags.
fn ops_for(current: &str, round: usize, rng: &mut Rng) -> Value {
    let lines: Vec<&str> = current.lines().collect();
    let mut candidates: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("Paragraph") || l.starts_with("Revised"))
        .map(|(i, _)| i + 1)
        .collect();
    let mut picked = BTreeSet::new();
    while picked.len() < 60 && !candidates.is_empty() {
        let i = rng.below(candidates.len());
        let line = candidates.swap_remove(i);
        // Keep a free line between picks so that no two ops overlap.
        if !picked.contains(&(line - 1)) && !picked.contains(&(line + 1)) {
            picked.insert(line);
        }
    }
    let ops: Vec<Value> = picked
        .iter()
        .enumerate()
        .map(|(k, &line)| match k % 6 {
            0..=2 => json!({"action": "replace", "kind": "typo", "target": {"line_start": line},
                             "after_text": format!("Revised line {round}.{k}.")}),
            3 => json!({"action": "insert", "kind": "clarity", "target": {"line_start": line, "line_end": line},
                        "after_text": format!("Revised insertion {round}.{k}."), "rationale": "added"}),
            4 => json!({"action": "delete", "target": {"line_start": line}, "rationale": "removed"}),
            _ => json!({"action": "flag_only", "target": {"line_start": line}, "rationale": "check"}),
        })
        .collect();
    Value::Array(ops)
}

/// Every change ID the workspace ever used: ledger, patch file names,
/// apply log, torn side files.
fn seen_ids(ws: &Path) -> Option<u32> {
    let mut texts = Vec::new();
    for rel in ["review/ledger.jsonl", "stage3/apply_log.jsonl"] {
        if let Ok(bytes) = std::fs::read(ws.join(rel)) {
            texts.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    for dir in ["review/patches", "review"] {
        if let Ok(read) = std::fs::read_dir(ws.join(dir)) {
            for entry in read.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                texts.push(name.clone());
                if name.contains(".torn-") {
                    texts.push(std::fs::read_to_string(entry.path()).unwrap_or_default());
                }
            }
        }
    }
    let re = regex::Regex::new(r"RVW-(\d{4,})").expect("regex");
    texts
        .iter()
        .flat_map(|t| {
            re.captures_iter(t)
                .filter_map(|c| c[1].parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .max()
}

fn current_doc(ws: &Path, original: &[u8]) -> Vec<u8> {
    std::fs::read(ws.join("stage3/doc.edited.md")).unwrap_or_else(|_| original.to_vec())
}

/// The `doc_hash_after` of the last ledger entry, if the ledger parses
/// that far.
fn last_hash_after(ws: &Path) -> Option<String> {
    let text = std::fs::read_to_string(ws.join("review/ledger.jsonl")).ok()?;
    let last = text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())?;
    last["doc_hash_after"].as_str().map(str::to_owned)
}

#[derive(Default, Debug)]
struct Tally {
    before_commit: usize,
    behind_ledger: usize,
    after_commit: usize,
    torn: usize,
    finished: usize,
}

/// Checks the three properties after a kill, repairs a torn tail, and runs
/// the recovery (`koas review` without ops). Returns the next ID the
/// workspace must allocate.
fn check_after_kill(
    s: &Scratch,
    doc: &str,
    pre_doc: &[u8],
    pre_ledger_len: u64,
    tally: &mut Tally,
) {
    let ws = s.path("ws");
    let ws_arg = ws.display().to_string();
    // 1. The ledger parses, or its torn tail is reported.
    let (out, status) = s.koas_json(&["status", doc, "-w", &ws_arg]);
    assert_code(&out, 0, "status after a kill");
    if !status["torn_tail"].is_null() {
        tally.torn += 1;
        assert_eq!(status["status"], "torn_ledger");
        let (out, repaired) = s.koas_json(&["status", doc, "-w", &ws_arg, "--repair-ledger"]);
        assert_code(&out, 0, "repair");
        assert!(repaired["torn_tail"].is_null(), "{repaired}");
    }
    // 2. The document is the old version or the new one.
    assert_ne!(status["document_state"], "diverged", "{status}");
    let on_disk = current_doc(&ws, pre_doc);
    let ledger_len = std::fs::metadata(ws.join("review/ledger.jsonl")).map_or(0, |m| m.len());
    let is_old = on_disk == pre_doc;
    let is_new = last_hash_after(&ws).is_some_and(|h| h == sha(&on_disk));
    assert!(
        is_old || is_new,
        "the edited document is neither the version before the run nor the one after it"
    );
    if ledger_len == pre_ledger_len {
        tally.before_commit += 1;
    } else if is_old && !is_new {
        tally.behind_ledger += 1;
        assert_eq!(status["document_state"], "behind_ledger", "{status}");
    } else {
        tally.after_commit += 1;
    }
    // 3. The next run succeeds and brings the document up to date.
    let out = s.koas(&["-q", "review", doc, "-w", &ws_arg]);
    assert_code(&out, 0, "recovery run");
    let (_, status) = s.koas_json(&["status", doc, "-w", &ws_arg]);
    assert_eq!(status["document_state"], "consistent", "{status}");
    assert_eq!(status["status"], "ok", "{status}");
    assert!(
        status["damaged_patches"]
            .as_array()
            .is_some_and(|d| d.is_empty()),
        "{status}"
    );
}

#[test]
fn sigkill_during_review_and_revert_never_corrupts_the_workspace() {
    let seed = std::env::var("KOAS_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0x9e37_79b9, |d| d.as_nanos() as u64)
                | 1
        });
    println!("crash test seed: {seed} (KOAS_CRASH_SEED={seed} replays it)");
    let mut rng = Rng(seed);
    let s = Scratch::new();
    let doc = "handbook.md";
    let original = document();
    s.write(doc, &original);
    let ws = s.path("ws");
    let ws_arg = ws.display().to_string();

    // A first run (it fills the Stage 1/2 cache), then a timed one: the
    // kills are spread over the duration of such a run, which is then
    // tracked on every run that is not killed.
    let first_ops = ops_for(&original, 0, &mut rng);
    s.write("ops.json", &first_ops.to_string());
    let out = s.koas(&["-q", "review", doc, "--ops", "ops.json", "-w", &ws_arg]);
    assert_code(&out, 0, "first review");
    let current = current_doc(&ws, original.as_bytes());
    s.write(
        "ops.json",
        &ops_for(&String::from_utf8_lossy(&current), 1000, &mut rng).to_string(),
    );
    let started = Instant::now();
    let out = s.koas(&["-q", "review", doc, "--ops", "ops.json", "-w", &ws_arg]);
    let mut full = started.elapsed();
    assert_code(&out, 0, "second review");
    println!("a review takes {full:?}");

    let mut tally = Tally::default();
    let loop_start = Instant::now();
    let mut rounds = 0;
    // At least MIN_ROUNDS whatever the machine's load; more while the
    // budget lasts.
    while rounds < MAX_ROUNDS && (rounds < MIN_ROUNDS || loop_start.elapsed() < BUDGET) {
        rounds += 1;
        let pre_doc = current_doc(&ws, original.as_bytes());
        let pre_ledger_len =
            std::fs::metadata(ws.join("review/ledger.jsonl")).map_or(0, |m| m.len());
        let max_seen = seen_ids(&ws).unwrap_or(0);
        let reviewing = rounds % 2 == 1;
        let mut cmd = if reviewing {
            let ops = ops_for(&String::from_utf8_lossy(&pre_doc), rounds, &mut rng);
            s.write("ops.json", &ops.to_string());
            s.command(&["-q", "review", doc, "--ops", "ops.json", "-w", &ws_arg])
        } else {
            let (_, active) = s.koas_json(&["grep", doc, "-w", &ws_arg, "--reverts", "false"]);
            let mut ids: Vec<String> = active["entries"]
                .as_array()
                .expect("entries")
                .iter()
                .filter(|e| e["action"] != "flag_only")
                .map(|e| e["id"].as_str().expect("id").to_owned())
                .collect();
            let (_, reverts) = s.koas_json(&["grep", doc, "-w", &ws_arg, "--reverts", "true"]);
            let reverted: BTreeSet<String> = reverts["entries"]
                .as_array()
                .expect("entries")
                .iter()
                .map(|e| e["reverted_id"].as_str().expect("reverted_id").to_owned())
                .collect();
            ids.retain(|id| !reverted.contains(id));
            // The latest active changes: a later change never blocks them.
            let n = (1 + rng.below(40)).min(ids.len());
            let chosen: Vec<String> = ids.split_off(ids.len() - n);
            let mut args = vec![
                "-q".to_owned(),
                "revert".into(),
                doc.into(),
                "-w".into(),
                ws_arg.clone(),
            ];
            if chosen.is_empty() {
                args.push("--all".into());
            } else {
                args.extend(chosen);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            s.command(&args)
        };
        // Half of the kills are spread over the whole run, half over the
        // part where the outcome is committed.
        let span = full.as_micros() as u64;
        let delay = if rng.below(2) == 0 {
            rng.next() % span.max(1)
        } else {
            span / 2 + rng.next() % (span * 2 / 5).max(1)
        };
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("koas starts");
        std::thread::sleep(Duration::from_micros(delay));
        let finished = child.try_wait().expect("try_wait").is_some();
        if finished {
            tally.finished += 1;
        } else {
            child.kill().expect("SIGKILL");
        }
        let _ = child.wait();
        check_after_kill(&s, doc, &pre_doc, pre_ledger_len, &mut tally);
        // The next review allocates after every ID seen before the kill
        // and after the recovery.
        let before_next = seen_ids(&ws).unwrap_or(0).max(max_seen);
        if reviewing {
            let current = current_doc(&ws, original.as_bytes());
            let ops = ops_for(&String::from_utf8_lossy(&current), 100 + rounds, &mut rng);
            s.write("ops.json", &ops.to_string());
            let started = Instant::now();
            let (out, v) = s.koas_json(&["review", doc, "--ops", "ops.json", "-w", &ws_arg]);
            full = (full + started.elapsed()) / 2;
            assert_code(&out, 0, "review after recovery");
            let first = v["applied_ids"][0].as_str().expect("an op applied");
            let first: u32 = first.trim_start_matches("RVW-").parse().expect("id");
            assert!(
                first > before_next,
                "RVW-{first:04} was allocated, but RVW-{before_next:04} had been seen"
            );
        }
    }
    println!("{rounds} kills: {tally:?}");
    assert!(rounds >= MIN_ROUNDS, "the loop ran only {rounds} rounds");

    // Everything reverted gives back the original bytes.
    let out = s.koas(&["-q", "revert", doc, "--all", "-w", &ws_arg]);
    assert_code(&out, 0, &format!("final revert --all\n{}", stdout(&out)));
    assert_eq!(
        std::fs::read(ws.join("stage3/doc.edited.md")).expect("edited"),
        original.as_bytes(),
        "reverting everything gives back the original"
    );
}
