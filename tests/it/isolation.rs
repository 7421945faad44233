//! Kernels run isolated, with limits: every hostile kernel of the
//! `hostile` test plugin (abort, `exit(0)`, a null write, a stack overflow,
//! an endless loop, a huge allocation, a huge answer, floods of warnings
//! and log lines, writes to runtime files) costs its own run only. `koas`
//! exits 1 (never 0, 134 or 139), `run.json` names the kernel with its
//! worker's signal or exit status and stderr, its dependant is skipped,
//! the independent branch finishes, and the lock is released.

use crate::common::*;
use koas_test_support::{test_plugin, test_plugin_folder};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

const DOC: &str = "hello world, this document has some words in it\n";

/// A project running one hostile kernel, its dependant `hostile_after`
/// and the testkit's independent chain `source_len → threshold →
/// report_long`; `extra` is appended to the pipeline file.
fn hostile(kernel: &str, extra: &str) -> Project {
    Project::new(
        DOC,
        &[
            "source_len",
            "threshold",
            "report_long",
            kernel,
            "hostile_after",
        ],
        extra,
    )
}

/// Builds `koas` and the test plugins now, so that a test can time a run.
fn built() {
    koas_test_support::koas_bin();
    test_plugin("hostile");
}

/// `koas run` of the project with the hostile plugins too.
fn run_hostile(p: &Project, args: &[&str]) -> Output {
    let hostile = test_plugin("hostile");
    let raw = test_plugin("hostile-raw");
    let mut all = vec![
        "--kernel-path",
        hostile.to_str().expect("utf-8 path"),
        "--kernel-path",
        raw.to_str().expect("utf-8 path"),
    ];
    all.extend_from_slice(args);
    p.run(&all)
}

/// `koas run` of `p`'s pipeline in its folder with the testkit and hostile
/// plugins, not started yet.
fn hostile_command(p: &Project) -> std::process::Command {
    let mut c = koas();
    c.arg("run")
        .arg(p.pipeline())
        .arg("--kernel-path")
        .arg(test_plugin("testkit"))
        .arg("--kernel-path")
        .arg(test_plugin("hostile"))
        .current_dir(p.dir.path());
    c
}

/// Every file under `dir` with its bytes, `.koas/` (the cache) left out.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let path = e.path();
            if path.is_dir() {
                if e.file_name() != ".koas" {
                    stack.push(path);
                }
            } else {
                let rel = path.strip_prefix(dir).expect("inside").to_path_buf();
                out.insert(rel, std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    out
}

/// Checks what every hostile run must leave: exit 1, the kernel failed
/// with `error_has` in its error, its dependant skipped, the independent
/// branch done, no lock, no file but the run's own written, and a next
/// run that starts. Returns the kernel's record.
fn assert_contained(p: &Project, kernel: &str, out: &Output, error_has: &[&str]) -> Value {
    assert_eq!(
        out.status.code(),
        Some(1),
        "{kernel}: koas must exit 1, not die or succeed; stderr: {}",
        stderr(out)
    );
    let record = p.record();
    assert_eq!(record["status"], "failed");
    assert_eq!(record["isolation"], "process");
    let k = kernel_of(&record, kernel).clone();
    assert_eq!(k["status"], "failed", "{k}");
    let error = k["error"].as_str().expect("an error");
    for part in error_has {
        assert!(error.contains(part), "{kernel}: `{part}` not in: {error}");
    }
    let after = kernel_of(&record, "hostile_after");
    assert_eq!(after["status"], "skipped");
    assert!(after["skipped_reason"]
        .as_str()
        .expect("reason")
        .contains(&format!("`{kernel}` failed")));
    for independent in ["source_len", "threshold", "report_long"] {
        assert_eq!(
            kernel_of(&record, independent)["status"],
            "ok",
            "{independent}"
        );
    }
    let err = stderr(out);
    assert!(
        err.contains(&format!("error: kernel `{kernel}`")),
        "koas names the failed kernel: {err}"
    );
    assert!(!p.ws().join(".lock").exists(), "the lock is released");
    let mut written: Vec<String> = files(&p.ws())
        .keys()
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(
        written,
        ["out/doc_len.json", "reports/long.txt", "run.json"],
        "{kernel} left no file of its own"
    );
    // The workspace is usable: the next run starts (the independent
    // branch comes from the cache).
    let again = run_hostile(p, &["--until", "report_long"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    k
}

fn kernel_of<'a>(record: &'a Value, name: &str) -> &'a Value {
    kernel(record, name)
}

#[test]
fn an_abort_is_a_failed_kernel_with_its_signal() {
    let p = hostile("hostile_abort", "");
    let out = run_hostile(&p, &[]);
    let k = assert_contained(
        &p,
        "hostile_abort",
        &out,
        &["killed by signal 6 (SIGABRT)", "worker process"],
    );
    assert_eq!(k["worker"]["cause"], "crashed");
    assert_eq!(k["worker"]["signal_name"], "SIGABRT");
    assert!(k["worker"]["pid"].as_u64().is_some());
}

#[test]
fn exit_zero_in_a_kernel_is_a_failure_not_a_silent_success() {
    let p = hostile("hostile_exit0", "");
    let out = run_hostile(&p, &[]);
    let k = assert_contained(
        &p,
        "hostile_exit0",
        &out,
        &["exited with status 0", "before it answered"],
    );
    assert_eq!(k["worker"]["cause"], "exited");
    assert_eq!(k["worker"]["exit_code"], 0);
}

#[test]
fn a_null_pointer_write_is_a_failed_kernel() {
    let p = hostile("hostile_null_write", "");
    let out = run_hostile(&p, &[]);
    let k = assert_contained(
        &p,
        "hostile_null_write",
        &out,
        &["killed by signal 11 (SIGSEGV)"],
    );
    assert_eq!(k["worker"]["signal_name"], "SIGSEGV");
}

#[test]
fn a_stack_overflow_is_a_failed_kernel_with_its_stderr() {
    let p = hostile("hostile_stack_overflow", "");
    let out = run_hostile(&p, &[]);
    let k = assert_contained(&p, "hostile_stack_overflow", &out, &["killed by signal"]);
    assert_eq!(k["worker"]["cause"], "crashed");
    assert!(
        k["worker"]["stderr_tail"]
            .as_str()
            .expect("stderr")
            .contains("overflowed its stack"),
        "{k}"
    );
}

#[test]
fn an_endless_loop_is_stopped_by_the_timeout_flag_or_the_pipeline() {
    let p = hostile("hostile_endless_loop", "");
    built();
    let start = Instant::now();
    let out = run_hostile(&p, &["--kernel-timeout", "1"]);
    assert!(start.elapsed() < Duration::from_secs(20), "stopped in time");
    let k = assert_contained(
        &p,
        "hostile_endless_loop",
        &out,
        &["time limit of 1 s", "--kernel-timeout", "was killed"],
    );
    assert_eq!(k["worker"]["cause"], "timed_out");
    assert_eq!(k["worker"]["signal_name"], "SIGKILL");

    // The same from the pipeline file, for that kernel only.
    let p = hostile(
        "hostile_endless_loop",
        "[limits.hostile_endless_loop]\ntimeout = 1",
    );
    let out = run_hostile(&p, &[]);
    let k = assert_contained(&p, "hostile_endless_loop", &out, &["time limit of 1 s"]);
    assert_eq!(k["worker"]["cause"], "timed_out");
}

#[test]
fn a_huge_allocation_fails_under_the_memory_cap() {
    // 20 GiB by default, over the default cap of 8192 MB.
    let p = hostile("hostile_huge_allocation", "");
    let out = run_hostile(&p, &[]);
    let k = assert_contained(
        &p,
        "hostile_huge_allocation",
        &out,
        &["ran out of memory", "limit of 8192 MB"],
    );
    assert_eq!(k["worker"]["cause"], "out_of_memory");
    assert!(k["worker"]["stderr_tail"]
        .as_str()
        .expect("stderr")
        .contains("memory allocation of 21474836480 bytes failed"));

    // 1 GiB under --kernel-memory 256.
    let p = hostile("hostile_huge_allocation", "");
    let out = run_hostile(
        &p,
        &[
            "--kernel-memory",
            "256",
            "--set",
            "hostile_huge_allocation.mb=1024",
        ],
    );
    assert_contained(
        &p,
        "hostile_huge_allocation",
        &out,
        &["ran out of memory", "limit of 256 MB", "--kernel-memory"],
    );
}

#[test]
fn a_memory_limit_below_what_the_worker_needs_fails_the_kernel_by_name() {
    // A sane kernel under `memory = 1` in its own [limits] table: it must
    // fail, saying which limit and why, not pass because its few
    // allocations fit in memory the worker had already mapped.
    let p = hostile(
        "hostile_huge_allocation",
        "[limits.hostile_huge_allocation]\nmemory = 300\n[limits.source_len]\nmemory = 1",
    );
    let out = run_hostile(&p, &["--set", "hostile_huge_allocation.mb=1024"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let record = p.record();
    let source = kernel_of(&record, "source_len");
    assert_eq!(source["status"], "failed", "{source}");
    let error = source["error"].as_str().expect("an error");
    for part in [
        "memory limit of 1 MB",
        "`memory` in the pipeline's [limits]",
        "before any kernel code runs",
        "the kernel was not run",
    ] {
        assert!(error.contains(part), "`{part}` not in: {error}");
    }
    assert_eq!(kernel_of(&record, "threshold")["status"], "skipped");
    // The huge allocation under its own small (but workable) limit.
    let huge = kernel_of(&record, "hostile_huge_allocation");
    assert_eq!(huge["worker"]["cause"], "out_of_memory", "{huge}");
    assert!(huge["error"]
        .as_str()
        .expect("an error")
        .contains("under the limit of 300 MB"));
    let err = stderr(&out);
    assert!(
        err.contains("error: kernel `source_len`") && err.contains("memory limit of 1 MB"),
        "{err}"
    );
    assert!(!p.ws().join(".lock").exists(), "the lock is released");

    // --kernel-memory 1: every kernel fails the same way (the libraries
    // still load, so the message is about the limit, not a library).
    let p = Project::new(DOC, &["source_len", "threshold", "report_long"], "");
    let out = p.run(&["--kernel-memory", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let error = kernel_of(&p.record(), "source_len")["error"]
        .as_str()
        .expect("an error")
        .to_string();
    assert!(error.contains("memory limit of 1 MB"), "{error}");
    assert!(stderr(&out).contains("--kernel-memory"), "{}", stderr(&out));
}

#[test]
fn a_huge_answer_is_refused_at_the_output_cap() {
    let p = hostile("hostile_huge_output", "[limits]\noutput = 16");
    built();
    let start = Instant::now();
    let out = run_hostile(&p, &["--set", "hostile_huge_output.mb=40"]);
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_contained(
        &p,
        "hostile_huge_output",
        &out,
        &["(40.0 MB) of output", "over the limit of 16 MB"],
    );
    let size = std::fs::metadata(p.ws().join("run.json"))
        .expect("run.json")
        .len();
    assert!(size < 100_000, "run.json is {size} bytes");
}

#[test]
fn summaries_warnings_and_log_lines_are_capped() {
    // `hostile_raw` speaks the ABI by hand: nothing trims what it sends.
    let p = Project::new(DOC, &["source_len", "hostile_raw"], "");
    let out = run_hostile(&p, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let record = p.record();
    let k = kernel(&record, "hostile_raw");
    assert_eq!(k["status"], "ok");
    assert_eq!(k["summary"].as_str().expect("summary").chars().count(), 500);
    let warnings = k["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 101, "100 kept and one counting the rest");
    let first = warnings[0].as_str().expect("text");
    assert!(
        first.len() < 2200 && first.contains("the limit is 2000"),
        "{}",
        &first[first.len() - 80..]
    );
    assert!(warnings[100]
        .as_str()
        .expect("text")
        .contains("4901 more warnings were dropped"));
    let log = k["log"].as_array().expect("log");
    assert_eq!(log.len(), 201);
    assert!(
        log[0].as_str().expect("line").len() < 2200,
        "a 2 MB line is cut"
    );
    assert!(log[200]
        .as_str()
        .expect("line")
        .contains("more log lines were not kept"));
    let size = std::fs::metadata(p.ws().join("run.json"))
        .expect("run.json")
        .len();
    assert!(size < 200_000, "run.json is {size} bytes");
    let err = stderr(&out);
    let shown = err
        .lines()
        .filter(|l| l.starts_with("koas: hostile_raw: "))
        .count();
    assert!(shown <= 1002, "{shown} lines printed");
    assert!(err.contains("further log lines are not shown"));
    assert!(err.len() < 3_000_000, "stderr is {} bytes", err.len());
}

#[test]
fn runtime_files_are_refused_to_the_file_api() {
    let p = hostile("hostile_write_files", "");
    let ws = p.ws();
    std::fs::create_dir_all(ws.join("review")).expect("ws");
    std::fs::write(ws.join("workspace.json"), "{\"state\": 1}\n").expect("state");
    std::fs::write(ws.join("review/ledger.jsonl"), "{\"entry\": 1}\n").expect("ledger");
    let before = files(p.dir.path());
    let out = run_hostile(&p, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let record = p.record();
    let k = kernel(&record, "hostile_write_files");
    let hash = k["output_hashes"]["hostile_out"].as_str().expect("output");
    let results = koas_orchestrator::cache::Cache::open(&ws)
        .get_value(hash)
        .expect("cached");
    for path in [".lock", "run.json", "workspace.json", "review/ledger.jsonl"] {
        let result = results[path].as_str().expect("a result");
        assert!(
            result.starts_with("refused: kernel `hostile_write_files` may not write")
                && result.contains(&format!("`{path}`")),
            "{path}: {result}"
        );
    }
    assert!(results[".lock"]
        .as_str()
        .unwrap_or("")
        .contains("the workspace lock"));
    assert!(results["run.json"]
        .as_str()
        .unwrap_or("")
        .contains("the run record"));
    let after = files(p.dir.path());
    for (file, bytes) in &before {
        if file.ends_with(".lock") {
            continue;
        }
        assert_eq!(after.get(file), Some(bytes), "{} changed", file.display());
    }
    assert!(!record.to_string().contains("hostile kernel"));
    assert!(
        !ws.join(".lock").exists(),
        "the run's lock, untouched, is released"
    );
}

#[test]
fn a_kernel_writes_its_scratch_folder_and_declared_paths_only() {
    let p = hostile(
        "hostile_write_files",
        "[config.hostile_write_files]\npaths = [\"scratch/hostile_write_files/a.txt\", \"streamed/deep/b.txt\", \"scratch/other/c.txt\", \"notes.txt\", \"out/doc_len.json\"]",
    );
    let out = run_hostile(&p, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let record = p.record();
    let k = kernel(&record, "hostile_write_files");
    let results = koas_orchestrator::cache::Cache::open(&p.ws())
        .get_value(k["output_hashes"]["hostile_out"].as_str().expect("output"))
        .expect("cached");
    assert_eq!(results["scratch/hostile_write_files/a.txt"], "written");
    assert_eq!(results["streamed/deep/b.txt"], "written");
    for refused in ["scratch/other/c.txt", "notes.txt"] {
        assert!(
            results[refused].as_str().unwrap_or("").contains(
                "a kernel writes only below its scratch folder `scratch/hostile_write_files/`"
            ),
            "{refused}: {}",
            results[refused]
        );
    }
    assert!(results["out/doc_len.json"]
        .as_str()
        .unwrap_or("")
        .contains("declared output file of kernel `source_len`"));
    assert_eq!(
        std::fs::read_to_string(p.ws().join("streamed/deep/b.txt")).expect("written"),
        "replaced by a hostile kernel\n"
    );
    assert!(!p.ws().join("scratch/other").exists() && !p.ws().join("notes.txt").exists());
    let files_written = k["files_written"].as_array().expect("listed");
    assert_eq!(files_written.len(), 2, "{files_written:?}");
}

#[test]
fn declaring_a_runtime_file_is_refused_before_anything_runs() {
    for (kernel, path, what) in [
        ("hostile_declares_lock", ".lock", "the workspace lock"),
        ("hostile_declares_run_record", "run.json", "the run record"),
    ] {
        let p = hostile(kernel, "");
        let out = run_hostile(&p, &[]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("kernel `{kernel}` declares"))
                && err.contains(&format!("`{path}`"))
                && err.contains(what),
            "{err}"
        );
        assert!(!p.ws().join(".lock").exists());
        assert!(!p.ws().join("run.json").exists(), "nothing ran");
    }
}

#[test]
fn a_plugin_that_aborts_while_describing_itself_is_reported_not_fatal() {
    let folder = test_plugin_folder(&["hostile-describe", "testkit"]);
    let out = run(koas()
        .args(["kernels", "--json", "--kernel-path"])
        .arg(folder.path()));
    // Reported, not fatal: the listing ends, exit 1 for the skipped one.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert!(
        stdout(&out).contains("\"source_len\""),
        "the others are listed"
    );
    let problems = v["problems"].as_array().expect("problems");
    let problem = problems
        .iter()
        .find(|p| {
            p["path"]
                .as_str()
                .is_some_and(|p| p.contains("hostile_describe"))
        })
        .expect("the aborting plugin is reported");
    assert_eq!(problem["problem"], "load_failed");
    assert!(
        problem["message"]
            .as_str()
            .expect("message")
            .contains("killed by signal 6 (SIGABRT)"),
        "{problem}"
    );
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_a_kernel_that_ignores_cancellation() {
    let p = hostile("hostile_endless_loop", "");
    let mut child = hostile_command(&p)
        .arg("--verbose")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Wait until the loop runs: its worker is a child of koas.
    let start = Instant::now();
    let worker = loop {
        if let Some(pid) = worker_of(child.id()) {
            break pid;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no worker");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(300));
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let interrupted = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s.code();
        }
        assert!(
            interrupted.elapsed() < Duration::from_secs(15),
            "koas did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(130));
    let record = p.record();
    assert_eq!(record["status"], "cancelled");
    let k = kernel(&record, "hostile_endless_loop");
    assert_eq!(k["status"], "cancelled");
    assert_eq!(k["worker"]["cause"], "cancel_ignored");
    assert!(k["error"]
        .as_str()
        .expect("error")
        .contains("did not stop within 3 s"));
    assert!(!process_runs(worker), "worker {worker} outlived koas");
    assert!(!p.ws().join(".lock").exists());
}

#[cfg(unix)]
#[test]
fn a_killed_koas_leaves_no_worker_running() {
    let p = hostile("hostile_endless_loop", "");
    let mut child = hostile_command(&p)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    let worker = loop {
        if let Some(pid) = worker_of(child.id()) {
            break pid;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no worker");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("SIGKILL koas");
    child.wait().expect("reaped");
    let killed = Instant::now();
    while process_runs(worker) {
        assert!(
            killed.elapsed() < Duration::from_secs(10),
            "worker {worker} still runs after koas was killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The dead run's lock does not block the next run.
    let out = run_hostile(&p, &["--until", "report_long"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// The pid a forking hostile kernel wrote to `file`, waiting for it (the
/// worker writes it right after the fork).
#[cfg(unix)]
fn forked_pid(file: &Path) -> u32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no pid in {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `pid` no longer runs (gone, or a zombie waiting for init):
/// it was killed, not left to sleep out its 60 s.
#[cfg(unix)]
fn assert_ends(pid: u32, what: &str) {
    let start = Instant::now();
    while process_runs(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{what} (pid {pid}) still runs after koas exited"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A hostile fork kernel's project: its child sleeps 60 s and its pid
/// goes to `child.pid` in the project folder.
#[cfg(unix)]
fn forking(kernel: &str) -> (Project, PathBuf) {
    let p = hostile(
        kernel,
        &format!("[config.{kernel}]\nchild_secs = 60\npid_file = \"PID_FILE\""),
    );
    let pid_file = p.dir.path().join("child.pid");
    let text = std::fs::read_to_string(p.pipeline()).expect("pipeline");
    let path = pid_file.to_str().expect("utf-8 path");
    std::fs::write(p.pipeline(), text.replace("PID_FILE", path)).expect("pipeline");
    (p, pid_file)
}

#[cfg(unix)]
#[test]
fn a_plugin_that_forks_then_crashes_is_a_crash_at_once_and_its_child_dies() {
    built();
    for (kernel, cause, says) in [
        (
            "hostile_fork_then_crash",
            "crashed",
            "killed by signal 6 (SIGABRT) while the kernel ran (a crash in the plugin)",
        ),
        (
            "hostile_fork_then_exit",
            "exited",
            "exited with status 0 while the kernel ran",
        ),
    ] {
        let (p, pid_file) = forking(kernel);
        // The forked child keeps the worker's pipes open for 60 s, past
        // the 30 s timeout: waiting for the pipe to close would take 60 s
        // and call the crash a timeout.
        let start = Instant::now();
        let out = run_hostile(&p, &["--kernel-timeout", "30"]);
        let took = start.elapsed();
        assert!(
            took < Duration::from_secs(25),
            "{kernel}: koas took {took:?}: it waited for the forked child"
        );
        let child = forked_pid(&pid_file);
        assert_ends(child, &format!("the child {kernel} forked"));
        let k = assert_contained(&p, kernel, &out, &[says]);
        let error = k["error"].as_str().expect("error");
        assert!(!error.contains("time limit"), "{kernel}: {error}");
        assert_eq!(k["worker"]["cause"], cause, "{k}");
        let worker = u32::try_from(k["worker"]["pid"].as_u64().expect("pid")).expect("a pid");
        assert!(!process_runs(worker), "the worker {worker} was reaped");
        // Reported when the worker died, not when its child did (the
        // kernel's own time, well under the child's 60 s and the timeout).
        let ms = k["end_ms"].as_f64().expect("end") - k["start_ms"].as_f64().expect("start");
        assert!(ms < 20_000.0, "{kernel} was reported after {ms} ms");
    }
}

#[cfg(unix)]
#[test]
fn nothing_a_plugin_forked_outlives_koas() {
    built();
    // A kernel that forks and returns: its child lives on in the idle
    // worker's process group until koas exits, and not longer.
    let (p, pid_file) = forking("hostile_fork_then_return");
    let out = run_hostile(&p, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_ends(forked_pid(&pid_file), "the child of a kernel that returned");

    // koas killed with SIGKILL while the kernel loops after forking: the
    // worker sees its stdin close and kills its group.
    let (p, pid_file) = forking("hostile_fork_then_loop");
    let mut koas_run = hostile_command(&p)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let child = forked_pid(&pid_file);
    let worker = worker_of(koas_run.id()).expect("the worker runs");
    koas_run.kill().expect("SIGKILL koas");
    koas_run.wait().expect("reaped");
    assert_ends(worker, "the worker of a killed koas");
    assert_ends(child, "the child forked in the worker of a killed koas");
}

#[test]
fn a_worker_that_dies_between_kernels_fails_the_kernel_that_left_the_thread() {
    // `hostile_leftover_exit` returns at once and leaves a thread that
    // calls exit(0) 300 ms later, while `hostile_after` (its dependant,
    // 1.5 s long) runs in the same worker (--jobs 1: one worker). The
    // death is `hostile_leftover_exit`'s; `hostile_after` runs again on a
    // fresh worker and succeeds.
    let p = hostile(
        "hostile_leftover_exit",
        "[config.hostile_leftover_exit]\ndelay_ms = 300\n[config.hostile_after]\nsleep_ms = 1500",
    );
    for (attempt, args) in [
        ("first run", &["--jobs", "1"][..]),
        ("--no-cache", &["--jobs", "1", "--no-cache"][..]),
    ] {
        let out = run_hostile(&p, args);
        assert_eq!(out.status.code(), Some(1), "{attempt}: {}", stderr(&out));
        let record = p.record();
        assert_eq!(record["status"], "failed");
        let k = kernel(&record, "hostile_leftover_exit");
        assert_eq!(k["status"], "failed", "{attempt}: {k}");
        let error = k["error"].as_str().expect("error");
        assert!(
            error.starts_with("it answered, but then its worker process")
                && error.contains("exited with status 0"),
            "{attempt}: {error}"
        );
        assert_eq!(k["worker"]["cause"], "exited");
        assert_eq!(k["worker"]["exit_code"], 0);
        let noticed = k["worker"]["after_answer"]["noticed"]
            .as_str()
            .expect("after_answer");
        assert!(
            ["during_next", "between_kernels", "right_after"].contains(&noticed),
            "{noticed}"
        );
        #[cfg(target_os = "linux")]
        assert_eq!(k["worker"]["after_answer"]["left_threads"], 1, "{k}");
        for fine in ["hostile_after", "source_len", "threshold", "report_long"] {
            assert_eq!(
                kernel(&record, fine)["status"],
                "ok",
                "{attempt}: {fine} is not blamed"
            );
        }
        // `hostile_after` ran in another process than the one that died
        // (its output is in the cache unless --no-cache).
        let after = kernel(&record, "hostile_after");
        let hash = after["output_hashes"]["after_hostile"]
            .as_str()
            .expect("output");
        if let Ok(v) = koas_orchestrator::cache::Cache::open(&p.ws()).get_value(hash) {
            assert_ne!(v["pid"].as_u64(), k["worker"]["pid"].as_u64());
        } else {
            assert_eq!(attempt, "--no-cache", "the output is cached");
        }
        let err = stderr(&out);
        assert!(
            err.contains("error: kernel `hostile_leftover_exit`")
                && !err.contains("kernel `hostile_after`")
                && !err.contains("hostile_after: FAILED"),
            "{attempt}: {err}"
        );
        assert!(!p.ws().join(".lock").exists());
    }
    // Its failure is not cached: a cached run runs it again. (Then nothing
    // runs after it, so its worker's death comes after koas is done.)
    let out = run_hostile(&p, &["--jobs", "1"]);
    let record = p.record();
    assert_eq!(
        kernel(&record, "hostile_leftover_exit")["cache"],
        "miss",
        "{}",
        stderr(&out)
    );
    assert_eq!(kernel(&record, "hostile_after")["cache"], "hit");
}

#[test]
fn a_worker_ended_by_what_a_library_left_running_is_the_runs_failure_named_as_such() {
    // `leftover-describe`'s spec() leaves a thread that calls exit(0) 300 ms
    // later, in the worker that describes it during discovery; that worker
    // then serves the run (--jobs 1) while `hostile_after` sleeps 1.5 s. No
    // kernel of the run left that thread: the death is the run's, named
    // after the library, and no kernel is blamed.
    let p = Project::new(
        DOC,
        &["source_len", "hostile_flood", "hostile_after"],
        "[config.hostile_after]\nsleep_ms = 1500",
    );
    // Descriptions are not remembered here: the library is described (and
    // its thread started) in this run.
    let descriptions = tempfile::tempdir().expect("tempdir");
    let out = run(hostile_command(&p)
        .arg("--kernel-path")
        .arg(test_plugin("leftover-describe"))
        .args(["--jobs", "1"])
        .env("KOAS_CACHE_DIR", descriptions.path()));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let record = p.record();
    assert_eq!(record["status"], "failed");
    for name in ["source_len", "hostile_flood", "hostile_after"] {
        assert_eq!(kernel(&record, name)["status"], "ok", "{name}: {err}");
    }
    let deaths = record["worker_deaths"].as_array().expect("worker_deaths");
    assert_eq!(deaths.len(), 1, "{deaths:?}");
    let death = &deaths[0];
    let after = death["after"].as_str().expect("after");
    assert!(
        after.starts_with("loading and describing") && after.contains("leftover_describe"),
        "{after}"
    );
    let message = death["message"].as_str().expect("message");
    assert!(
        message.starts_with("a worker process (pid ") && message.contains("exited with status 0"),
        "{message}"
    );
    assert_eq!(death["worker"]["cause"], "exited");
    #[cfg(target_os = "linux")]
    assert_eq!(
        death["worker"]["after_answer"]["left_threads"], 1,
        "{death}"
    );
    assert!(
        err.contains("error: a worker process") && !err.contains("FAILED"),
        "{err}"
    );
}

/// The pid of a `koas __koas-worker` child of `parent`, if any.
#[cfg(unix)]
fn worker_of(parent: u32) -> Option<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{parent}/task")).ok()?;
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("__koas-worker"))
        })
}

/// `true` while `pid` is a live (not zombie) process.
#[cfg(unix)]
fn process_runs(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the parenthesised command name.
        stat.rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

#[test]
fn in_process_mode_still_runs_kernels_inside_koas() {
    let p = Project::new(
        DOC,
        &["source_len", "threshold", "report_long", "writer"],
        "",
    );
    let out = p.run(&["--in-process"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let record = p.record();
    assert_eq!(record["isolation"], "none");
    assert_eq!(kernel(&record, "report_long")["status"], "ok");
    // The file rules hold in-process too.
    let p = Project::new(
        DOC,
        &["source_len", "writer"],
        "isolation = \"none\"\n[config.writer]\npath = \"run.json\"",
    );
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let record = p.record();
    assert_eq!(record["isolation"], "none");
    assert!(kernel(&record, "writer")["error"]
        .as_str()
        .expect("error")
        .contains("may not write `run.json`: it is the run record"));
    // What isolation is for: in-process, an abort takes koas down.
    let p = hostile("hostile_abort", "");
    let out = run_hostile(&p, &["--in-process"]);
    assert_eq!(out.status.code(), None, "killed by a signal in-process");
}

/// The artifact of a `where_*` kernel: the pid and whether it ran in a
/// worker.
fn where_ran(p: &Project, record: &Value, kernel_name: &str) -> (u64, bool) {
    let k = kernel(record, kernel_name);
    let hash = k["output_hashes"][format!("{kernel_name}_out")]
        .as_str()
        .expect("output");
    let v = koas_orchestrator::cache::Cache::open(&p.ws())
        .get_value(hash)
        .expect("cached");
    (
        v["pid"].as_u64().expect("pid"),
        v["in_worker"].as_bool().expect("in_worker"),
    )
}

#[test]
fn one_worker_serves_the_kernels_of_a_run_and_discovery() {
    // One job: the kernels run one after the other, all in the worker
    // that described the libraries.
    let p = Project::new(DOC, &["source_len", "where_a", "where_b"], "");
    let out = run_hostile(&p, &["--jobs", "1", "--no-cache"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let record = p.record();
    let a = where_ran(&p, &record, "where_a");
    let b = where_ran(&p, &record, "where_b");
    assert!(a.1 && b.1, "both ran in a worker: {a:?} {b:?}");
    assert_eq!(a.0, b.0, "the same worker ran both");

    // After a crash the next kernel gets a fresh worker; the run goes on.
    let p = Project::new(
        DOC,
        &["where_a", "hostile_abort", "hostile_after", "where_b"],
        "",
    );
    let out = run_hostile(&p, &["--jobs", "1", "--no-cache"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let record = p.record();
    assert_eq!(kernel(&record, "hostile_abort")["status"], "failed");
    let a = where_ran(&p, &record, "where_a");
    let b = where_ran(&p, &record, "where_b");
    assert!(a.1 && b.1);
    let crash = kernel(&record, "hostile_abort");
    let crashed = crash["worker"]["pid"].as_u64().expect("pid");
    let crashed_at = crash["start_ms"].as_f64().expect("start");
    let mut after_the_crash = 0;
    for (name, (pid, _)) in [("where_a", a), ("where_b", b)] {
        if kernel(&record, name)["start_ms"].as_f64().expect("start") > crashed_at {
            after_the_crash += 1;
            assert_ne!(pid, crashed, "{name} ran in the worker that crashed");
        }
    }
    assert!(after_the_crash > 0, "a kernel ran after the crash");

    // --in-process: koas itself runs them.
    let p = Project::new(DOC, &["where_a", "where_b"], "");
    let out = run_hostile(&p, &["--in-process"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let record = p.record();
    let a = where_ran(&p, &record, "where_a");
    assert!(!a.1, "in koas, not a worker");
    assert_eq!(a, where_ran(&p, &record, "where_b"));
}
