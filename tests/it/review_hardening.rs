//! Failures an adversarial probe found in the review commands, each
//! through the real `koas` binary: private documents made public by
//! `--in-place` and the workspace, symbolic links replaced, temporary files
//! left by a killed run and a `status` that did not say so, FIFOs and
//! devices read forever, ops that wrote control characters or opened a
//! code fence, a lock record of a dead process shown as its holder, and
//! Ctrl-C ending koas by the signal.

use crate::review_common::{assert_code, finish_within, stderr, Scratch};
use koas_test_support::koas_bin;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A pid no process has (above Linux's largest `pid_max`).
const DEAD_PID: u32 = 999_999_999;

fn document() -> String {
    let mut text = String::from("# Handbook\n\n");
    for s in 1..=4 {
        text.push_str(&format!(
            "## Part {s}\n\nThe bandwith of part {s} is high.\n\n```sh\nrun --part {s}\n```\n\n"
        ));
    }
    text
}

fn write_ops(s: &Scratch, name: &str, ops: Value) {
    s.write(name, &ops.to_string());
}

fn typo_op() -> Value {
    json!([{"action": "replace", "kind": "typo", "target": {"line_start": 5},
            "before_text": "bandwith", "after_text": "bandwidth"}])
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Every path under `dir` (itself included) with group or other access.
#[cfg(unix)]
fn too_open(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        if mode(&path) & 0o077 != 0 {
            out.push(format!("{:o} {}", mode(&path), path.display()));
        }
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("read dir") {
                stack.push(entry.expect("entry").path());
            }
        }
    }
    out
}

/// Waits for `child`, killing it when it runs past a generous bound (the
/// FIFO case hung forever before the fix): a hang guard, not a timing.
fn finish(child: std::process::Child, what: &str) -> Output {
    finish_within(child, Duration::from_secs(120), what)
}

#[cfg(unix)]
#[test]
fn in_place_keeps_a_private_document_private_and_so_is_its_workspace() {
    let s = Scratch::new();
    s.write("secret.md", &document());
    set_mode(&s.path("secret.md"), 0o600);
    write_ops(&s, "ops.json", typo_op());
    let out = s.koas(&[
        "-q",
        "review",
        "secret.md",
        "--ops",
        "ops.json",
        "--in-place",
    ]);
    assert_code(&out, 0, "review --in-place");
    assert!(String::from_utf8_lossy(&s.read("secret.md")).contains("bandwidth"));
    assert_eq!(
        mode(&s.path("secret.md")),
        0o600,
        "the document's mode is kept"
    );
    let review_dir = s.path(".review");
    assert_eq!(
        too_open(&review_dir),
        Vec::<String>::new(),
        "workspace copies"
    );
    let out = s.koas(&["-q", "revert", "secret.md", "--all", "--in-place"]);
    assert_code(&out, 0, "revert --in-place");
    assert_eq!(String::from_utf8_lossy(&s.read("secret.md")), document());
    assert_eq!(mode(&s.path("secret.md")), 0o600, "kept by revert too");
    assert_eq!(too_open(&review_dir), Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn a_workspace_made_before_the_document_became_private_is_narrowed() {
    let s = Scratch::new();
    s.write("doc.md", &document());
    set_mode(&s.path("doc.md"), 0o644);
    let out = s.koas(&["-q", "review", "doc.md"]);
    assert_code(&out, 0, "review of a public document");
    set_mode(&s.path("doc.md"), 0o600);
    let out = s.koas(&["-q", "report", "doc.md"]);
    assert_code(&out, 0, "report");
    assert_eq!(too_open(&s.path(".review")), Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn in_place_through_a_symbolic_link_writes_its_target_and_keeps_the_link() {
    let s = Scratch::new();
    std::fs::create_dir(s.path("real")).expect("mkdir");
    s.write("real/doc.md", &document());
    set_mode(&s.path("real/doc.md"), 0o640);
    std::os::unix::fs::symlink("real/doc.md", s.path("link.md")).expect("symlink");
    write_ops(&s, "ops.json", typo_op());
    let out = s.koas(&["-q", "review", "link.md", "--ops", "ops.json", "--in-place"]);
    assert_code(&out, 0, "review --in-place through a link");
    let link = std::fs::symlink_metadata(s.path("link.md")).expect("link");
    assert!(link.file_type().is_symlink(), "the link is still a link");
    let target = String::from_utf8_lossy(&s.read("real/doc.md")).into_owned();
    assert!(target.contains("bandwidth"), "the target was edited");
    assert_eq!(mode(&s.path("real/doc.md")), 0o640);
}

#[test]
fn a_killed_in_place_write_is_reported_by_status_and_cleaned_by_the_next_run() {
    let s = Scratch::new();
    s.write("doc.md", &document());
    write_ops(&s, "ops.json", typo_op());
    let out = s.koas(&["-q", "review", "doc.md", "--ops", "ops.json"]);
    assert_code(&out, 0, "review");
    // What a review killed just before its in-place rename leaves, and a
    // workspace write killed the same way.
    let beside = s.path(&format!(".doc.md.tmp-{DEAD_PID}-0"));
    std::fs::write(&beside, "half of the new version").expect("temp");
    let inside = s
        .workspace()
        .join(format!("stage3/.doc.edited.md.tmp-{DEAD_PID}-3"));
    std::fs::write(&inside, "half").expect("temp");
    let (_, v) = s.koas_json(&["status", "doc.md"]);
    assert_eq!(v["status"], "interrupted", "{v:#}");
    let listed: Vec<&str> = v["stale_temp_files"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    let out = s.koas(&["status", "doc.md"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("temporary file"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = s.koas(&["-q", "review", "doc.md"]);
    assert_code(&out, 0, "next review");
    assert!(
        !beside.exists() && !inside.exists(),
        "temporary files removed"
    );
    let (_, v) = s.koas_json(&["status", "doc.md"]);
    assert_eq!(v["status"], "ok", "{v:#}");
}

#[test]
fn status_does_not_name_a_dead_process_as_the_lock_holder() {
    let s = Scratch::new();
    s.write("doc.md", &document());
    assert_code(&s.koas(&["-q", "review", "doc.md"]), 0, "review");
    let ws = s.workspace();
    let record = json!({
        "pid": DEAD_PID,
        "hostname": koas_orchestrator::lock::hostname(),
        "command": "koas review doc.md (killed)",
        "started_at": "2026-01-01T00:00:00.000000+00:00",
    });
    std::fs::write(ws.join(".lock"), record.to_string()).expect("lock record");
    let (_, v) = s.koas_json(&["status", "doc.md"]);
    assert!(v["locked_by"].is_null(), "{v:#}");
    assert_eq!(v["stale_lock"]["pid"], DEAD_PID);
    let out = s.koas(&["status", "doc.md"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("lock:      free (a stale record"), "{text}");
    // The next run takes it over and releases it.
    assert_code(&s.koas(&["-q", "review", "doc.md"]), 0, "takeover");
    assert!(!ws.join(".lock").exists());
}

#[cfg(unix)]
#[test]
fn check_and_review_refuse_a_fifo_instead_of_waiting_forever() {
    let s = Scratch::new();
    let fifo = s.path("pipe.md");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|st| st.success()) {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    for args in [&["check", "pipe.md"][..], &["-q", "review", "pipe.md"][..]] {
        let child = s
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("koas starts");
        let out = finish(child, &format!("koas {args:?} on a FIFO"));
        assert_code(&out, 2, "FIFO");
        assert!(stderr(&out).contains("FIFO"), "{}", stderr(&out));
    }
    // An ops file is read the same way, before anything is written.
    s.write("doc.md", &document());
    let child = s
        .command(&["-q", "review", "doc.md", "--ops", "pipe.md"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("koas starts");
    let out = finish(child, "koas review --ops FIFO");
    assert_code(&out, 2, "ops file FIFO");
    assert!(
        stderr(&out).contains("the ops file pipe.md is a FIFO"),
        "{}",
        stderr(&out)
    );
    assert!(!s.path(".review").exists(), "nothing was created");
}

#[cfg(unix)]
#[test]
fn devices_and_documents_over_the_limit_are_refused_naming_the_limit() {
    let s = Scratch::new();
    for args in [
        &["check", "/dev/zero"][..],
        &["-q", "review", "/dev/urandom"][..],
    ] {
        let child = s
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("koas starts");
        let out = finish(child, &format!("koas {args:?}"));
        assert_code(&out, 2, "device");
        assert!(
            stderr(&out).contains("character device"),
            "{}",
            stderr(&out)
        );
    }
    s.write("big.md", &"Some prose.\n".repeat(200));
    let out = s
        .command(&["check", "big.md"])
        .env("KOAS_MAX_DOC_SIZE", "1K")
        .output()
        .expect("koas runs");
    assert_code(&out, 2, "over the limit");
    assert!(
        stderr(&out).contains("over the limit of 1.0 KiB"),
        "{}",
        stderr(&out)
    );
    let out = s.koas(&["-q", "review", "big.md", "--max-doc-size", "1K"]);
    assert_code(&out, 2, "review over the limit");
    assert!(stderr(&out).contains("--max-doc-size"), "{}", stderr(&out));
    assert!(!s.path(".review").exists(), "nothing was created");
    // Standard input is capped too.
    let mut child = s
        .command(&["check", "-", "--max-doc-size", "1K"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("koas starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        // koas stops reading at the limit: a closed pipe ends the writer.
        for _ in 0..1000 {
            if stdin.write_all(&[b'a'; 1024]).is_err() {
                break;
            }
        }
    });
    let out = finish(child, "koas check - over the limit");
    let _ = writer.join();
    assert_code(&out, 2, "stdin over the limit");
    assert!(stderr(&out).contains("over the limit"), "{}", stderr(&out));
}

/// Reviews `ops` (a person's ops file) on the document, returning the
/// `--json` summary.
fn review_with(s: &Scratch, ops: Value, extra: &[&str]) -> Value {
    write_ops(s, "ops.json", ops);
    let mut args = vec!["review", "doc.md", "--ops", "ops.json"];
    args.extend_from_slice(extra);
    let (out, v) = s.koas_json(&args);
    assert_code(&out, 0, "review");
    v
}

fn rejections(v: &Value) -> Vec<(String, String)> {
    v["apply_log"]
        .as_array()
        .expect("apply log")
        .iter()
        .filter_map(|r| {
            Some((
                r["reject"].as_str()?.to_owned(),
                r["reason"].as_str().unwrap_or("").to_owned(),
            ))
        })
        .collect()
}

#[test]
fn control_characters_in_after_text_are_refused() {
    let s = Scratch::new();
    s.write("doc.md", &document());
    let v = review_with(
        &s,
        json!([{"action": "replace", "kind": "typo", "target": {"line_start": 5},
                "before_text": "bandwith", "after_text": "band\u{0}width"}]),
        &[],
    );
    let rejected = rejections(&v);
    assert_eq!(rejected.len(), 1, "{v:#}");
    assert_eq!(rejected[0].0, "REJECT_OTHER");
    assert!(rejected[0].1.contains("U+0000"), "{}", rejected[0].1);
    assert_eq!(String::from_utf8_lossy(&s.read("doc.md")), document());
    // The edited document is still a document.
    let edited = s.workspace().join("stage3/doc.edited.md");
    let out = s.koas(&[
        "check",
        edited.to_str().expect("utf-8"),
        "--fail-on",
        "never",
    ]);
    assert_code(&out, 0, "check of the edited document");
}

#[test]
fn an_op_that_opens_a_code_fence_is_refused_with_or_without_strict() {
    for strict in [false, true] {
        let s = Scratch::new();
        s.write("doc.md", &document());
        let extra: &[&str] = if strict { &["--strict"] } else { &[] };
        let v = review_with(
            &s,
            json!([{"action": "replace", "kind": "style", "target": {"line_start": 5},
                    "after_text": "More\n```\ntext", "rationale": "r"}]),
            extra,
        );
        let rejected = rejections(&v);
        assert_eq!(rejected.len(), 1, "strict {strict}: {v:#}");
        if strict && rejected[0].0 == "REJECT_GUARD" {
            // --strict refuses it earlier, for the tokens of the line it
            // drops; refused either way, nothing written.
            assert!(rejected[0].1.contains("--strict"), "{}", rejected[0].1);
        } else {
            assert_eq!(rejected[0].0, "REJECT_PROTECTED");
            assert!(
                rejected[0].1.contains("opens or closes a protected region"),
                "{}",
                rejected[0].1
            );
        }
        assert_eq!(v["total_changes"], 0);
    }
}

#[test]
fn a_persons_edit_of_code_needs_attention_and_a_note_and_never_passes_strict() {
    let s = Scratch::new();
    s.write("doc.md", &document());
    // Line 8 is `run --part 1`, inside the first code fence.
    let code_edit = |attention: bool| {
        json!([{"action": "replace", "kind": "correction", "target": {"line_start": 8},
                "after_text": "run --part 1 --dry-run", "needs_attention": attention,
                "rationale": "the dry run comes first"}])
    };
    let v = review_with(&s, code_edit(false), &["--strict"]);
    assert_eq!(rejections(&v)[0].0, "REJECT_PROTECTED", "{v:#}");
    let v = review_with(&s, code_edit(true), &["--strict"]);
    assert_eq!(rejections(&v)[0].0, "REJECT_PROTECTED", "{v:#}");
    let v = review_with(&s, code_edit(false), &[]);
    assert_eq!(rejections(&v)[0].0, "REJECT_PROTECTED", "{v:#}");
    let v = review_with(&s, code_edit(true), &[]);
    assert!(rejections(&v).is_empty(), "{v:#}");
    assert_eq!(v["total_changes"], 1);
    let annotated =
        std::fs::read_to_string(s.workspace().join("stage3/doc.REVIEWED.md")).expect("annotated");
    assert!(annotated.contains("REVIEWER: RVW-"), "flagged with a note");
}

/// Waits until process `pid` catches SIGINT (its handler is installed, as
/// `/proc/PID/status` shows) or has created `lock`, whichever comes first:
/// from then on a Ctrl-C must end it with 130 and leave no lock. (Before
/// that, a signal lands while the dynamic loader is still at work, before
/// any program code runs, which no program can handle.) Elsewhere than on
/// Linux, returns at once.
#[cfg(unix)]
fn wait_until_interruptible(pid: u32, lock: &Path) {
    let status = format!("/proc/{pid}/status");
    if !Path::new(&status).exists() {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline && !lock.exists() {
        let Ok(text) = std::fs::read_to_string(&status) else {
            return; // the process already ended
        };
        let caught = text
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok());
        if caught.is_some_and(|mask| mask & (1 << (SIGINT - 1)) != 0) {
            return;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// SIGINT's number (2 on every Unix).
#[cfg(unix)]
const SIGINT: u32 = 2;

/// Sends SIGINT to `pid` with the `kill` command.
#[cfg(unix)]
fn interrupt(pid: u32) {
    let _ = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status();
}

#[cfg(unix)]
#[test]
fn ctrl_c_at_any_moment_ends_with_130_or_success_and_leaves_no_lock() {
    use std::os::unix::process::ExitStatusExt;
    let s = Scratch::new();
    let mut text = String::from("# Long\n\n");
    for i in 0..3000 {
        text.push_str(&format!("Line {i} with the bandwith.\n\n"));
    }
    s.write("doc.md", &text);
    write_ops(&s, "ops.json", json!([]));
    for delay_ms in [0u64, 2, 5, 10, 20, 40, 80, 160, 320, 640] {
        let _ = std::fs::remove_dir_all(s.path("ws"));
        let child = s
            .command(&["-q", "review", "doc.md", "--ops", "ops.json", "-w", "ws"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("koas starts");
        wait_until_interruptible(child.id(), &s.path("ws/.lock"));
        std::thread::sleep(Duration::from_millis(delay_ms));
        interrupt(child.id());
        let out = finish(child, "interrupted review");
        assert_eq!(
            out.status.signal(),
            None,
            "after {delay_ms} ms koas was ended by a signal: {}",
            stderr(&out)
        );
        let code = out.status.code();
        assert!(
            code == Some(130) || code == Some(0),
            "after {delay_ms} ms: {code:?}: {}",
            stderr(&out)
        );
        assert!(
            !s.path("ws/.lock").exists(),
            "after {delay_ms} ms the lock was left"
        );
    }
}

#[test]
fn concurrent_reviews_pass_the_lock_one_at_a_time() {
    let s = Scratch::new();
    s.write("doc.md", &document());
    // The same flag on the same text is recorded once: whichever review
    // gets the lock first records it, the others find it in the ledger.
    write_ops(
        &s,
        "ops.json",
        json!([{"action": "flag_only", "target": {"line_start": 5}, "rationale": "check"}]),
    );
    assert_code(&s.koas(&["-q", "review", "doc.md", "-w", "ws"]), 0, "first");
    let mut recorded = 0;
    for round in 0..3 {
        let children: Vec<_> = (0..8)
            .map(|_| {
                s.command(&["-q", "review", "doc.md", "--ops", "ops.json", "-w", "ws"])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("koas starts")
            })
            .collect();
        for child in children {
            let out = finish(child, "concurrent review");
            match out.status.code() {
                Some(0) => recorded += 1,
                Some(2) => assert!(stderr(&out).contains("is in use by"), "{}", stderr(&out)),
                other => panic!("round {round}: exit {other:?}: {}", stderr(&out)),
            }
        }
    }
    assert!(recorded >= 3, "at least one review per round got the lock");
    let ledger = std::fs::read_to_string(s.path("ws/review/ledger.jsonl")).expect("ledger");
    assert_eq!(ledger.lines().count(), 1, "{ledger}");
    let (_, v) = s.koas_json(&["status", "doc.md", "-w", "ws"]);
    assert_eq!(v["status"], "ok", "{v:#}");
    assert!(!s.path("ws/.lock").exists());
}

/// `form` occurs in `text` without a backslash before it (`\](…` is text).
fn shows_unescaped(text: &str, form: &str) -> bool {
    text.match_indices(form)
        .any(|(at, _)| !text[..at].ends_with('\\'))
}

#[test]
fn html_and_links_in_a_persons_ops_are_shown_escaped_in_the_report_and_the_annotated_document() {
    let s = Scratch::new();
    s.write("doc.md", &document());
    let script = "<script>alert(1)</script>";
    let img = "<img src=x onerror=alert(1)>";
    write_ops(
        &s,
        "ops.json",
        json!([
            {"action": "replace", "kind": "typo", "severity": "attention", "needs_attention": true,
             "target": {"line_start": 5}, "before_text": "bandwith", "after_text": "bandwidth",
             "rationale": format!("{script} {img}"),
             "review_note": {"alert": "WARNING", "text": format!("REVIEWER: RVW-0001 — {script} {img}")}},
            // No note: the engine writes one from the rationale, which the
            // report's summary shows too.
            {"action": "flag_only", "kind": "style", "severity": "attention",
             "needs_attention": true, "target": {"line_start": 13},
             "rationale": format!("{img} ![x](http://tracker/p.png) [y](javascript:alert(1))")},
        ]),
    );
    let out = s.koas(&["-q", "review", "doc.md", "--ops", "ops.json"]);
    assert_code(&out, 0, "review --ops");
    let ws = s.workspace();
    let report = std::fs::read_to_string(ws.join("review/REVIEW_doc.md")).expect("the report");
    let reviewed =
        std::fs::read_to_string(ws.join("stage3/doc.REVIEWED.md")).expect("annotated document");
    for (name, text) in [("report", &report), ("annotated document", &reviewed)] {
        for raw in ["<script", "<img", "![", "](javascript:", "](http"] {
            assert!(!shows_unescaped(text, raw), "{raw} in the {name}:\n{text}");
        }
        assert!(
            text.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{name}:\n{text}"
        );
        assert!(
            text.contains("!\\[x\\](http://tracker/p.png) \\[y\\](javascript:alert(1))"),
            "{name}:\n{text}"
        );
    }
    assert!(
        reviewed.contains(
            "> [!WARNING]\n> REVIEWER: RVW-0001 — &lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt;\n"
        ),
        "{reviewed}"
    );
    // The ledger is data: the note as the person wrote it.
    let ledger = std::fs::read_to_string(ws.join("review/ledger.jsonl")).expect("ledger");
    let first: Value =
        serde_json::from_str(ledger.lines().next().expect("an entry")).expect("JSON");
    assert_eq!(
        first["review_note"]["text"],
        format!("REVIEWER: RVW-0001 — {script} {img}")
    );
}

/// Runs `script` (sh) with DISK a tmpfs of `size` mounted for it alone
/// (a user and mount namespace of its own: `unshare -rm`); `None` when
/// the machine does not allow it.
#[cfg(target_os = "linux")]
fn on_a_small_disk(s: &Scratch, size: &str, script: &str) -> Option<Output> {
    std::fs::create_dir_all(s.path("disk")).expect("mkdir");
    let wrapped = format!("mount -t tmpfs -o size={size} tmpfs \"$DISK\" || exit 97\n{script}");
    let out = Command::new("unshare")
        .args(["-rm", "sh", "-c", &wrapped])
        .current_dir(s.dir.path())
        .env("DISK", s.path("disk"))
        .env("KOAS", koas_bin())
        .env_remove("KOAS_KERNEL_PATH")
        .env_remove("KOAS_JOBS")
        .env_remove("KOAS_WORKSPACE")
        .env("NO_COLOR", "1")
        .env("USER", "reviewer")
        .output()
        .ok()?;
    if out.status.code() == Some(97)
        || (out.status.code() == Some(1)
            && out.stdout.is_empty()
            && stderr(&out).contains("unshare"))
    {
        eprintln!(
            "SKIPPED: no tmpfs in a user namespace here: {}",
            stderr(&out)
        );
        return None;
    }
    Some(out)
}

#[cfg(target_os = "linux")]
#[test]
fn regression_a_full_disk_at_the_in_place_write_says_what_was_recorded_and_status_says_the_document_is_behind(
) {
    let s = Scratch::new();
    // Two pages of text on a two-page disk: the document fits, the copy
    // that would replace it does not.
    let mut doc = document();
    while doc.len() < 7000 {
        doc.push_str("Filler text that makes the handbook longer than one page.\n\n");
    }
    s.write("doc.md", &doc);
    write_ops(&s, "ops.json", typo_op());
    let script = r#"
cp doc.md "$DISK/doc.md" || exit 98
"$KOAS" -q review "$DISK/doc.md" -w ws --ops ops.json --in-place > review.out 2> review.err
echo $? > review.code
"$KOAS" -q status "$DISK/doc.md" -w ws --json > status.json 2>&1
"$KOAS" status "$DISK/doc.md" -w ws > status.txt 2>&1
cp "$DISK/doc.md" doc.after-full-disk.md
# Room again: the next --in-place review writes what was recorded.
mount -o remount,size=1m "$DISK" || exit 99
"$KOAS" -q review "$DISK/doc.md" -w ws --in-place > again.out 2> again.err
echo $? > again.code
"$KOAS" -q status "$DISK/doc.md" -w ws --json > status-after.json 2>&1
cp "$DISK/doc.md" doc.final.md
"#;
    let Some(out) = on_a_small_disk(&s, "8k", script) else {
        return;
    };
    assert!(out.status.success(), "script: {out:?}");
    let read = |name: &str| String::from_utf8(s.read(name)).expect("utf-8");
    assert_ne!(read("review.code").trim(), "0", "the review failed");
    let err = read("review.err");
    for needle in [
        "was not replaced",
        "No space left on device",
        "the ledger records 1 change(s) that",
        "nothing is lost",
        "--in-place` writes them",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert_eq!(read("doc.after-full-disk.md"), doc, "DOC untouched");
    let status: Value = serde_json::from_str(&read("status.json")).expect("status json");
    assert_eq!(status["status"], "interrupted", "{status:#}");
    assert_eq!(status["document_behind_by"], 1, "{status:#}");
    assert_eq!(status["in_place_interrupted"], true, "{status:#}");
    assert_eq!(status["counts"]["total_changes"], 1, "{status:#}");
    let text = read("status.txt");
    assert!(
        text.contains("is 1 change(s) behind its review: an `--in-place` review recorded them but did not write"),
        "{text}"
    );
    // "consistent" is said of the workspace's copy only, never of DOC.
    assert!(
        text.contains("edited document consistent; DOC is 1 change(s) behind (an --in-place write did not happen)"),
        "{text}"
    );
    // The next --in-place run delivers the change.
    assert_eq!(read("again.code").trim(), "0", "{}", read("again.err"));
    assert_eq!(
        read("doc.final.md"),
        doc.replace("bandwith of part 1", "bandwidth of part 1")
    );
    let after: Value = serde_json::from_str(&read("status-after.json")).expect("status json");
    assert_eq!(after["status"], "ok", "{after:#}");
    assert_eq!(after["document_behind_by"], 0, "{after:#}");
    assert_eq!(after["in_place_interrupted"], false, "{after:#}");
}

/// The handbook reviewed once with the typo op, without --in-place.
fn reviewed_once() -> Scratch {
    let s = Scratch::new();
    s.write("doc.md", &document());
    write_ops(&s, "ops.json", typo_op());
    let out = s.koas(&["-q", "review", "doc.md", "--ops", "ops.json"]);
    assert_code(&out, 0, "review");
    s
}

#[test]
fn a_killed_in_place_review_leaves_status_saying_the_document_is_behind() {
    // A review without --in-place keeps the change in the workspace: DOC
    // is behind by choice, and status says so without alarm.
    let s = reviewed_once();
    let (_, v) = s.koas_json(&["status", "doc.md"]);
    assert_eq!(
        (v["status"].clone(), v["document_behind_by"].clone()),
        (json!("ok"), json!(1)),
        "{v:#}"
    );
    let text = String::from_utf8_lossy(&s.koas(&["status", "doc.md"]).stdout).into_owned();
    assert!(
        text.contains("note:      doc.md is 1 change(s) behind its review"),
        "{text}"
    );
    // What an --in-place review killed after saving its ledger leaves:
    // its pending mark (the ledger and the workspace are as above).
    let mark = s.workspace().join("review/in-place.pending");
    std::fs::write(&mark, json!({"doc": "doc.md", "pid": DEAD_PID}).to_string()).expect("mark");
    let (_, v) = s.koas_json(&["status", "doc.md"]);
    assert_eq!(v["status"], "interrupted", "{v:#}");
    assert_eq!(v["in_place_interrupted"], true, "{v:#}");
    assert!(
        v["summary"].as_str().is_some_and(
            |t| t.contains("DOC is 1 change(s) behind (an --in-place write did not happen)")
        ),
        "{v:#}"
    );
    let text = String::from_utf8_lossy(&s.koas(&["status", "doc.md"]).stdout).into_owned();
    assert!(
        text.contains("problem:   doc.md is 1 change(s) behind its review"),
        "{text}"
    );
    assert!(
        text.contains("`koas review doc.md --in-place` writes them"),
        "{text}"
    );
    // The command it names does it.
    assert_code(
        &s.koas(&["-q", "review", "doc.md", "--in-place"]),
        0,
        "in place",
    );
    assert!(String::from_utf8(s.read("doc.md"))
        .expect("utf-8")
        .contains("bandwidth of part 1"));
    assert!(!mark.exists(), "the mark is cleared once DOC is written");
    let (_, v) = s.koas_json(&["status", "doc.md"]);
    assert_eq!(
        (v["status"].clone(), v["document_behind_by"].clone()),
        (json!("ok"), json!(0)),
        "{v:#}"
    );
}

#[test]
fn regression_orphan_patch_files_are_counted_by_status_and_removed_before_the_next_run_writes() {
    let s = reviewed_once();
    // What failed saves leave: patches written, ledger not.
    let patches = s.workspace().join("review/patches");
    for n in 2..=178 {
        std::fs::write(patches.join(format!("RVW-{n:04}.patch")), "x".repeat(100)).expect("orphan");
    }
    let (_, v) = s.koas_json(&["status", "doc.md"]);
    assert_eq!(v["status"], "interrupted", "{v:#}");
    assert_eq!(
        v["orphan_patches"].as_array().map(Vec::len),
        Some(177),
        "{v:#}"
    );
    assert_eq!(v["orphan_patch_bytes"], 17_700);
    let text = String::from_utf8_lossy(&s.koas(&["status", "doc.md"]).stdout).into_owned();
    assert!(
        text.contains("177 patch files (17700 bytes) no ledger entry refers to"),
        "{text}"
    );
    assert!(!text.contains("harmless"), "{text}");
    let out = s.koas(&["review", "doc.md"]);
    assert_code(&out, 0, "next review");
    assert!(
        stderr(&out).contains("removed 177 patch files (17700 bytes) a failed run left"),
        "{}",
        stderr(&out)
    );
    let left: Vec<String> = std::fs::read_dir(&patches)
        .expect("patches")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    assert_eq!(left.len(), 2, "only RVW-0001's two patches stay: {left:?}");
    let (_, v) = s.koas_json(&["status", "doc.md"]);
    assert_eq!(v["status"], "ok", "{v:#}");
}

#[cfg(unix)]
#[test]
fn ctrl_c_during_a_rebase_says_the_hand_edits_were_recorded() {
    // The bug: "interrupted (nothing was recorded)" while the rebase's
    // external entry was in the ledger.
    use koas_test_support::model::{ModelAnswer, ModelRequest, ScriptedModel};
    let s = Scratch::new();
    s.write("doc.md", &document());
    write_ops(
        &s,
        "ops.json",
        json!([{"action": "replace", "kind": "typo", "target": {"line_start": 5},
                "before_text": "bandwith", "after_text": "bandwidth"}]),
    );
    let first = s.koas(&["-q", "review", "doc.md", "--ops", "ops.json", "--in-place"]);
    assert_code(&first, 0, "first review");
    let text = String::from_utf8(s.read("doc.md")).expect("utf-8");
    s.write("doc.md", &format!("{text}\nA line of my own.\n"));
    // A model that answers only once the test has interrupted koas.
    let (on_ask, asked) = std::sync::mpsc::channel::<()>();
    let on_ask = std::sync::Mutex::new(on_ask);
    let model = ScriptedModel::start(move |_r: &ModelRequest| {
        if let Ok(tell) = on_ask.lock() {
            let _ = tell.send(());
        }
        std::thread::sleep(Duration::from_secs(2));
        ModelAnswer::text("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS")
    });
    let mut args = vec!["review", "doc.md", "--rebase", "--skip-pyramid"];
    let flags = crate::review_common::llm_flags(&model, 1);
    args.extend(flags.iter().map(String::as_str));
    let child = s
        .command(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("koas starts");
    asked
        .recv_timeout(Duration::from_secs(120))
        .expect("the model was asked");
    interrupt(child.id());
    let out = finish(child, "interrupted rebase");
    assert_code(&out, 130, "interrupted");
    let ledger =
        std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("ledger");
    assert!(
        ledger.contains("\"external\""),
        "the hand edit is recorded: {ledger}"
    );
    assert!(
        stderr(&out).contains(
            "only the hand edits were recorded (RVW-0002, kind external); no review change was recorded"
        ),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&out).contains("nothing was recorded"),
        "{}",
        stderr(&out)
    );
}
