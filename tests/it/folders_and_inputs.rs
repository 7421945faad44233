//! Folder reviews walked like ripgrep walks them, `koas run`'s guarded
//! inputs, a person's op that opens a code fence at the end, and
//! `MODEL_MISMATCH` said once: regression tests through the real `koas`
//! binary.

// ---- Folders walked like ripgrep walks them (item 5) ----

mod folders {
    use crate::review_common::{stderr, stdout, Scratch};
    use serde_json::Value;
    use std::path::Path;
    use std::process::Output;

    /// `true` when this process runs as root (a file it creates is root's),
    /// for whom mode 000 does not stop reading.
    #[cfg(unix)]
    fn running_as_root(s: &Scratch) -> bool {
        use std::os::unix::fs::MetadataExt;
        s.write(".whoami", "");
        let uid = std::fs::metadata(s.path(".whoami"))
            .expect("metadata")
            .uid();
        let _ = std::fs::remove_file(s.path(".whoami"));
        uid == 0
    }

    #[cfg(unix)]
    fn chmod(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    /// `koas -q review ARGS --no-llm --json` in the scratch folder, as the
    /// user `uid` when given; the exit code and the parsed answer.
    fn review_folder(s: &Scratch, args: &[&str], uid: Option<u32>) -> (Output, Value) {
        let mut all = vec!["-q", "review"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--no-llm", "--json"]);
        let mut command = s.command(&all);
        command.env("HOME", s.dir.path());
        #[cfg(unix)]
        if let Some(uid) = uid {
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(uid);
        }
        let out = command.output().expect("koas runs");
        let value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "no JSON ({e}):\nstdout:\n{}\nstderr:\n{}",
                stdout(&out),
                stderr(&out)
            )
        });
        (out, value)
    }

    /// The rows of a set's answer: (document, status, error).
    fn rows(v: &Value) -> Vec<(String, String, String)> {
        v["documents"]
            .as_array()
            .expect("documents")
            .iter()
            .map(|d| {
                (
                    d["document"].as_str().unwrap_or("").to_owned(),
                    d["status"].as_str().unwrap_or("").to_owned(),
                    d["error"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    }

    /// A subfolder that cannot be read is a row named by its own path
    /// (not `.`), the documents after it are still reviewed, and the final
    /// line counts every row. Tests run as root, whom mode 000 does not
    /// stop: as root the review runs as the user `nobody` (uid 65534, the
    /// scratch tree opened to it), which the folder's mode does stop. Where
    /// root cannot drop privileges the unreadable case is not exercised and
    /// the test says so on stderr.
    #[cfg(unix)]
    #[test]
    fn an_unreadable_subfolder_is_named_and_the_files_after_it_are_still_reviewed() {
        let s = Scratch::new();
        for f in [
            "docs/a.md",
            "docs/b_locked/x.md",
            "docs/c.md",
            "docs/d/e.md",
        ] {
            s.write(f, "# Title\n\nSome text.\n");
        }
        // As root, the review runs as `nobody` when root may drop its
        // privileges here (a container without CAP_SETUID may not).
        let uid = running_as_root(&s).then_some(65534).filter(|&uid| {
            use std::os::unix::process::CommandExt;
            let dropped = std::process::Command::new("true").uid(uid).gid(uid).status();
            if !dropped.as_ref().is_ok_and(|s| s.success()) {
                eprintln!("root cannot drop privileges here ({dropped:?}): mode 000 does not stop root, so the unreadable folder is not exercised");
                return false;
            }
            true
        });
        if running_as_root(&s) && uid.is_none() {
            return;
        }
        if uid.is_some() {
            for dir in ["", "docs", "docs/d"] {
                chmod(&s.path(dir), 0o777);
            }
        }
        chmod(&s.path("docs/b_locked"), 0o000);
        let (out, v) = review_folder(&s, &["docs"], uid);
        chmod(&s.path("docs/b_locked"), 0o755);
        let rows = rows(&v);
        let err = stderr(&out);
        let names: Vec<&str> = rows.iter().map(|(d, ..)| d.as_str()).collect();
        assert_eq!(
            names,
            ["docs/b_locked", "docs/a.md", "docs/c.md", "docs/d/e.md"],
            "{v:#}\n{err}"
        );
        assert_eq!(rows[0].1, "skipped");
        assert!(rows[0].2.contains("cannot be read"), "{:?}", rows[0]);
        assert!(
            rows[1..].iter().all(|(_, status, _)| status == "reviewed"),
            "{rows:?}"
        );
        let summary = v["summary"].as_str().expect("summary");
        assert!(
            summary.starts_with("3 of 4 documents reviewed"),
            "{summary}"
        );
        assert!(summary.contains("1 of them skipped"), "{summary}");
        // An entry that cannot be read is an error of the command.
        assert_eq!(out.status.code(), Some(2), "{err}");
    }

    /// A file name that is not UTF-8 is a row of its own, its bytes shown
    /// escaped, and counted; it is no longer skipped without a word.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_name_that_is_not_utf8_is_reported() {
        use std::os::unix::ffi::OsStrExt;
        let s = Scratch::new();
        s.write("docs/a.md", "# Title\n\nSome text.\n");
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9.md");
        std::fs::write(s.path("docs").join(name), "# T\n").expect("a non-UTF-8 name");
        let (out, v) = review_folder(&s, &["docs"], None);
        let rows = rows(&v);
        assert_eq!(rows.len(), 2, "{v:#}");
        let odd = rows
            .iter()
            .find(|(d, ..)| d == "docs/caf\\xe9.md")
            .unwrap_or_else(|| panic!("the odd name is a row: {rows:?}"));
        assert_eq!(odd.1, "skipped");
        assert!(odd.2.contains("not UTF-8"), "{odd:?}");
        let summary = v["summary"].as_str().expect("summary");
        assert!(
            summary.starts_with("1 of 2 documents reviewed"),
            "{summary}"
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    }

    /// `sub/loop -> ..` is not followed: one row says it is a link, the
    /// walk ends, no error cascades (it was followed 40 levels deep, 88
    /// rows, 82 errors). Hidden and ignored files are skipped by rule.
    #[cfg(unix)]
    #[test]
    fn a_link_loop_in_a_folder_is_not_followed() {
        let s = Scratch::new();
        for f in [
            "docs/a.md",
            "docs/sub/b.md",
            "docs/.hidden.md",
            "docs/skipped.md",
        ] {
            s.write(f, "# Title\n\nSome text.\n");
        }
        s.write("docs/.ignore", "skipped.md\n");
        std::os::unix::fs::symlink("..", s.path("docs/sub/loop")).expect("symlink");
        let (out, v) = review_folder(&s, &["docs"], None);
        let rows = rows(&v);
        let names: Vec<&str> = rows.iter().map(|(d, ..)| d.as_str()).collect();
        assert_eq!(
            names,
            ["docs/sub/loop", "docs/a.md", "docs/sub/b.md"],
            "{v:#}"
        );
        assert_eq!(rows[0].1, "skipped");
        assert!(rows[0].2.contains("symbolic link"), "{:?}", rows[0]);
        let summary = v["summary"].as_str().expect("summary");
        assert!(
            summary.starts_with("2 of 3 documents reviewed"),
            "{summary}"
        );
        // A link skipped by rule is no error.
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        // The text table names the link too, and agrees with its rows.
        let out = s.koas(&["review", "docs", "--no-llm"]);
        let table = stdout(&out);
        assert!(table.contains("docs/sub/loop"), "{table}");
        assert!(table.contains("2 of 3 documents reviewed"), "{table}");
        assert!(!table.contains("(folder)"), "{table}");
    }
}

// ---- `koas run` guards its inputs and releases its lock (item 6) ----

mod run_inputs {
    use crate::common::{koas, stderr, Project};
    use crate::review_common::finish_within;
    use koas_test_support::test_plugin;
    use std::path::Path;
    use std::process::{Child, Stdio};
    use std::time::{Duration, Instant};

    /// A project whose `[inputs] doc` names `doc`, running `kernels`.
    fn project_reading(doc: &str, kernels: &[&str]) -> Project {
        let p = Project::new("hello world\n", kernels, "");
        let list: Vec<String> = kernels.iter().map(|k| format!("\"{k}\"")).collect();
        std::fs::write(
            p.pipeline(),
            format!(
                "name = \"test\"\nkernels = [{}]\nworkspace = \"ws\"\n[inputs]\ndoc = \"{doc}\"\n",
                list.join(", ")
            ),
        )
        .expect("pipeline");
        p
    }

    /// `koas run` of `p` with the testkit and hostile plugins, started.
    fn start(p: &Project, args: &[&str]) -> Child {
        koas()
            .arg("run")
            .arg(p.pipeline())
            .arg("--kernel-path")
            .arg(test_plugin("testkit"))
            .arg("--kernel-path")
            .arg(test_plugin("hostile"))
            .args(args)
            .current_dir(p.dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("koas starts")
    }

    /// `doc = "/dev/zero"` grew to 22 GB: it is refused before anything is
    /// read, naming the file.
    #[cfg(unix)]
    #[test]
    fn koas_run_refuses_dev_zero_as_an_input() {
        koas_test_support::koas_bin();
        let p = project_reading("/dev/zero", &["source_len"]);
        let started = Instant::now();
        let out = finish_within(
            start(&p, &[]),
            Duration::from_secs(60),
            "koas run /dev/zero",
        );
        let err = stderr(&out);
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert!(out.status.code().is_some(), "ended by a signal: {err}");
        assert!(err.contains("/dev/zero"), "{err}");
        assert!(
            err.contains("a character device, not a regular file"),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_secs(60));
        assert!(!p.ws().join(".lock").exists(), "the lock was left");
    }

    /// An input over `--max-input-size` is refused, naming the limit.
    #[test]
    fn koas_run_refuses_an_input_over_the_size_limit() {
        let p = project_reading("doc.md", &["source_len"]);
        let out = p.run(&["--max-input-size", "4"]);
        let err = stderr(&out);
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("doc.md"), "{err}");
        assert!(err.contains("over the limit of 4 bytes"), "{err}");
        assert!(err.contains("--max-input-size"), "{err}");
        let out = p.run(&[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }

    /// `doc = "fifo.md"` blocked forever holding the workspace lock: it is
    /// refused without blocking, and the lock is free afterwards.
    #[cfg(unix)]
    #[test]
    fn koas_run_refuses_a_fifo_input_without_blocking_and_frees_the_lock() {
        koas_test_support::koas_bin();
        let p = project_reading("fifo.md", &["source_len"]);
        let made = std::process::Command::new("mkfifo")
            .arg(p.dir.path().join("fifo.md"))
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let out = finish_within(start(&p, &[]), Duration::from_secs(60), "koas run fifo.md");
        let err = stderr(&out);
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("fifo.md"), "{err}");
        assert!(
            err.contains("a FIFO (named pipe), not a regular file"),
            "{err}"
        );
        assert!(!p.ws().join(".lock").exists(), "the lock was left");
        // The lock is free: the next run (of a regular file) goes through.
        std::fs::remove_file(p.dir.path().join("fifo.md")).expect("rm fifo");
        std::fs::write(p.dir.path().join("fifo.md"), "now a file\n").expect("write");
        let out = p.run(&[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }

    /// SIGTERM printed "interrupt received" and the run went on holding its
    /// lock. A kernel that never looks at cancellation, in this process
    /// (`--in-process`: no worker to kill), no longer keeps koas alive:
    /// it exits with 130 at the deadline and its lock is removed.
    #[cfg(unix)]
    #[test]
    fn sigterm_during_a_blocked_run_releases_the_lock_and_exits() {
        koas_test_support::koas_bin();
        test_plugin("hostile");
        let p = project_reading("doc.md", &["hostile_endless_loop"]);
        let child = start(&p, &["--in-process"]);
        let lock = p.ws().join(".lock");
        let waiting = Instant::now();
        while !lock.exists() {
            assert!(waiting.elapsed() < Duration::from_secs(60), "no lock taken");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Let the kernel start its loop.
        std::thread::sleep(Duration::from_millis(500));
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        let out = finish_within(child, Duration::from_secs(40), "koas run after SIGTERM");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(130), "{err}");
        assert!(err.contains("interrupt received"), "{err}");
        assert!(!Path::new(&lock).exists(), "the lock was left");
    }
}

// ---- A person's op opening a code fence on the last line (item 7) ----

mod fences {
    use crate::review_common::{assert_code, Scratch};
    use serde_json::{json, Value};

    /// The ten fence variants of the finding.
    const OPENERS: [&str; 10] = [
        "```",
        "~~~",
        "````",
        "~~~~~",
        " ```",
        "   ```",
        "```rust",
        "~~~ python {.numberLines}",
        "```` text",
        "  ~~~sh",
    ];

    const DOC: &str = "# Title\n\nThe first paragraph.\n\nThe last line.\n";

    /// `koas review doc.md --ops ops.json --json` with `ops`.
    fn review_ops(s: &Scratch, ops: Value) -> Value {
        s.write("ops.json", &ops.to_string());
        let (out, v) = s.koas_json(&["review", "doc.md", "--ops", "ops.json"]);
        assert_code(&out, 0, "review");
        v
    }

    /// The reject classes of the apply log.
    fn rejects(v: &Value) -> Vec<String> {
        v["apply_log"]
            .as_array()
            .expect("apply log")
            .iter()
            .filter_map(|r| r["reject"].as_str().map(str::to_owned))
            .collect()
    }

    /// A person's op that opens a fence was applied with attention on the
    /// last line, refused (REJECT_PROTECTED) in mid-document: both are
    /// refused now, for each of the ten variants.
    #[test]
    fn a_persons_op_opening_a_fence_on_the_last_line_is_refused_like_mid_document() {
        for opener in OPENERS {
            for line in [3, 5] {
                let s = Scratch::new();
                s.write("doc.md", DOC);
                let v = review_ops(
                    &s,
                    json!([{"action": "replace", "kind": "correction",
                            "target": {"line_start": line},
                            "after_text": format!("Changed.\n{opener}"),
                            "needs_attention": true, "rationale": "a person's edit"}]),
                );
                assert_eq!(
                    rejects(&v),
                    ["REJECT_PROTECTED"],
                    "{opener:?} on line {line}: {v:#}"
                );
                assert_eq!(v["total_changes"], 0, "{opener:?} on line {line}");
            }
        }
    }

    /// The review note landed inside the open code block of
    /// `doc.REVIEWED.md`; it now goes before a fence the document leaves
    /// open, never inside it.
    #[test]
    fn no_review_note_lands_inside_a_code_block() {
        let s = Scratch::new();
        s.write(
            "doc.md",
            "# Title\n\nThe first paragraph.\n\n```sh\nrun --fast\nrun --slow\n",
        );
        let v = review_ops(
            &s,
            json!([{"action": "replace", "kind": "correction", "target": {"line_start": 6},
                    "after_text": "run --faster", "needs_attention": true,
                    "rationale": "a person's edit of code"}]),
        );
        assert_eq!(v["total_changes"], 1, "{v:#}");
        let annotated = std::fs::read_to_string(s.workspace().join("stage3/doc.REVIEWED.md"))
            .expect("annotated");
        let note = annotated.find("REVIEWER: RVW-").expect("a note");
        let fence = annotated.find("```sh").expect("the fence");
        assert!(
            note < fence,
            "the note is before the open fence:\n{annotated}"
        );
    }
}

// ---- MODEL_MISMATCH said once (written by the coordinator; keep at the end) ----

mod model_mismatch {
    use crate::review_common::{stderr, Scratch};
    use koas_test_support::model::{ModelAnswer, ScriptedModel};

    /// Endpoints serving different models: the cause is told once (which
    /// endpoint serves what), the closing error once with what to do, and
    /// no line blames a server that is down.
    #[test]
    fn model_mismatch_is_said_once_with_what_to_do() {
        let a = ScriptedModel::start(|_| ModelAnswer::text("unused"));
        let b = ScriptedModel::start_as("another-model", |_| ModelAnswer::text("unused"));
        let s = Scratch::new();
        let mut doc = String::from("# Handbook\n\n");
        for i in 0..30 {
            doc.push_str(&format!(
                "## Part {i}\n\nPart {i} explains how teh service works.\n\n"
            ));
        }
        s.write("doc.md", &doc);
        s.write(
            "koas.toml",
            "[llm]\nbackoff_initial_ms = 10\nbackoff_max_ms = 20\n",
        );
        let out = s.koas(&[
            "review",
            "doc.md",
            "--llm-backend",
            "openai",
            "--llm-endpoint",
            &a.url(),
            "--llm-endpoint",
            &b.url(),
            "--llm-model",
            "scripted",
            "--llm-max-in-flight",
            "6",
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!((a.calls(), b.calls()), (0, 0), "nothing was asked: {err}");
        let detail = format!("{} (serves another-model)", b.url());
        assert_eq!(
            err.matches(&detail).count(),
            1,
            "the cause, told once:\n{err}"
        );
        assert_eq!(err.matches("aborted earlier").count(), 0, "{err}");
        assert_eq!(err.matches("session aborted").count(), 0, "{err}");
        assert!(!err.contains("server is back"), "no server is down:\n{err}");
        assert_eq!(
            err.matches("list only endpoints that serve the model")
                .count(),
            1,
            "what to do, once:\n{err}"
        );
        // The cause line and the closing error: nothing else names it.
        assert_eq!(err.matches("MODEL_MISMATCH").count(), 2, "{err}");
    }
}
