//! `koas review DOC DOC… | DIR` and `koas refine DOC DOC… | DIR`: every
//! document in its own workspace, `--jobs` at a time, all of them drawing
//! on one pool of model requests (the LLM services of one process share the
//! servers' slots), so that a small document's idle tail is filled with
//! another's requests. One progress line for the set, a table at the end,
//! the worst exit status.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use koas_orchestrator::embed::{ExitStatus, HostOptions};
use serde_json::{json, Value};

use crate::common::{first_line, Reply, WorkspaceArgs};
use crate::passes::Control;

/// What a command does with each document of a set, and what its table
/// shows.
pub(crate) struct SetCommand<'a> {
    /// `review` or `refine`.
    pub name: &'static str,
    /// The past participle of a document that went well (`reviewed`).
    pub done: &'static str,
    /// The table's columns after the document: header and the JSON
    /// pointer of a whole number in the document's answer.
    pub columns: &'a [(&'static str, &'static str)],
    /// One document's run: its exit status and JSON answer (with
    /// `workspace`, `error` when it failed).
    #[allow(clippy::type_complexity)]
    pub one:
        &'a (dyn Fn(&HostOptions, &Control, &Path) -> anyhow::Result<(ExitStatus, Value)> + Sync),
}

/// The documents a set names: files as given, folders walked as ripgrep
/// walks them ([`crate::input::walk_folder`]: no link followed, hidden and
/// ignored entries skipped), each once; and the entries of the folders
/// that were not taken, each with its reason.
fn documents(target: &WorkspaceArgs, more: &[PathBuf]) -> crate::input::Walked {
    let mut named = vec![target.doc.clone()];
    named.extend(more.iter().cloned());
    let mut walked = crate::input::walk_documents(&named);
    let mut seen = std::collections::HashSet::new();
    walked
        .files
        .retain(|f| seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone())));
    walked
}

/// `true` when the arguments name a set rather than one document.
pub(crate) fn is_set(target: &WorkspaceArgs, more: &[PathBuf]) -> bool {
    !more.is_empty() || target.doc.is_dir()
}

/// One document's review, as the table and `--json` show it.
struct Done {
    doc: PathBuf,
    status: ExitStatus,
    json: Value,
    seconds: f64,
    /// Set for an entry of a folder that was not taken as a document.
    skipped: bool,
}

impl Done {
    /// The row of an entry that was not taken: an error when it could
    /// not be read or named, else skipped by rule (a link).
    fn skipped(entry: &crate::input::Skipped) -> Done {
        let status = if entry.reason.is_error() {
            ExitStatus::Error
        } else {
            ExitStatus::Success
        };
        Done {
            doc: entry.path.clone(),
            status,
            json: json!({
                "status": "skipped",
                "error": entry.reason.to_string(),
                "path": crate::input::shown_path(&entry.path),
            }),
            seconds: 0.0,
            skipped: true,
        }
    }

    /// A whole number of the answer (an array counts its items).
    fn number(&self, pointer: &str) -> u64 {
        match self.json.pointer(pointer) {
            Some(Value::Array(items)) => items.len() as u64,
            Some(v) => v.as_u64().unwrap_or(0),
            None => 0,
        }
    }

    fn state(&self, done: &'static str) -> &'static str {
        if self.skipped {
            return "skipped";
        }
        match self.status {
            ExitStatus::Success => done,
            ExitStatus::Failure => "failed",
            ExitStatus::Error => "error",
            ExitStatus::Interrupted => "interrupted",
        }
    }

    /// The JSON line of the document in the set's answer.
    fn entry(&self, command: &SetCommand<'_>) -> Value {
        let mut entry = json!({
            "document": crate::input::shown_path(&self.doc),
            "status": self.state(command.done),
            "exit_code": self.status.code(),
            "seconds": (self.seconds * 10.0).round() / 10.0,
            "summary": self.json.get("summary").cloned().unwrap_or(Value::Null),
            "error": self.json.get("error").cloned().unwrap_or(Value::Null),
            "workspace": self.json.get("workspace").cloned().unwrap_or(Value::Null),
        });
        if let Some(map) = entry.as_object_mut() {
            for (name, pointer) in command.columns {
                map.insert((*name).to_owned(), json!(self.number(pointer)));
            }
        }
        entry
    }
}

/// How bad an exit status is: the set exits with its documents' worst.
fn severity(status: ExitStatus) -> u8 {
    match status {
        ExitStatus::Success => 0,
        ExitStatus::Failure => 1,
        ExitStatus::Error => 2,
        ExitStatus::Interrupted => 3,
    }
}

/// Runs `command` on every document of the set and prints its table (or
/// JSON, with `--json`).
pub(crate) fn execute(
    global: &HostOptions,
    target: &WorkspaceArgs,
    more: &[PathBuf],
    jobs: Option<usize>,
    command: &SetCommand<'_>,
) -> anyhow::Result<ExitStatus> {
    let crate::input::Walked {
        files: docs,
        skipped,
    } = documents(target, more);
    if docs.is_empty() && skipped.is_empty() {
        anyhow::bail!(
            "no Markdown document (*.md, *.markdown) under {}",
            target.doc.display()
        );
    }
    let started = Instant::now();
    // One pool for the whole set: its endpoints' health carries from one
    // document to the next, and its counts cover the set.
    let _hold = koas_orchestrator::embed::hold_pools();
    let jobs = jobs.unwrap_or(4).clamp(1, docs.len().max(1));
    let results = run_set(global, &docs, jobs, command);
    // Every entry that was not taken is a row of its own, named by its
    // own path, so that the count below is the count of the rows.
    let mut done: Vec<Done> = skipped.iter().map(Done::skipped).collect();
    done.extend(results);
    let status = done
        .iter()
        .map(|d| d.status)
        .max_by_key(|s| severity(*s))
        .unwrap_or(ExitStatus::Success);
    let succeeded = done
        .iter()
        .filter(|d| d.status == ExitStatus::Success && !d.skipped)
        .count();
    let mut summary = format!(
        "{succeeded} of {} documents {} in {:.1} s, {} at a time",
        done.len(),
        command.done,
        started.elapsed().as_secs_f64(),
        jobs
    );
    if !skipped.is_empty() {
        summary.push_str(&format!(
            "; {} of them skipped (listed with the reason)",
            skipped.len()
        ));
    }
    let value = json!({
        "status": if status == ExitStatus::Success { "completed" } else { "failed" },
        "summary": summary,
        "documents": done.iter().map(|d| d.entry(command)).collect::<Vec<_>>(),
        "endpoints": koas_orchestrator::embed::pool_loads(),
    });
    Reply::new(status, value, table(&done, &summary, command)).print(target.json)
}

/// Reviews `docs`, `jobs` at a time, with one progress line.
fn run_set(
    global: &HostOptions,
    docs: &[PathBuf],
    jobs: usize,
    command: &SetCommand<'_>,
) -> Vec<Done> {
    // Each document's own messages would interleave: the set prints one
    // progress line and the table; each workspace's report has the rest.
    let quiet = HostOptions {
        quiet: true,
        ..global.clone()
    };
    // Ctrl-C stops every document; each gets a control of its own, whose
    // cache collection at its end knows only its own workspace (a shared
    // one collected the workspaces of documents still running).
    let control = Control::ctrl_c();
    let queue: Mutex<VecDeque<(usize, &PathBuf)>> = Mutex::new(docs.iter().enumerate().collect());
    let results: Mutex<Vec<(usize, Done)>> = Mutex::new(Vec::new());
    let running = AtomicUsize::new(0);
    let finished = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let progress = (!global.quiet).then(|| {
            scope.spawn(|| show_progress(command.name, docs.len(), &results, &running, &finished))
        });
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                scope.spawn(|| loop {
                    let next = queue.lock().ok().and_then(|mut q| q.pop_front());
                    let Some((i, doc)) = next else { break };
                    if control.interrupted() {
                        let done = interrupted(doc);
                        if let Ok(mut r) = results.lock() {
                            r.push((i, done));
                        }
                        continue;
                    }
                    running.fetch_add(1, Ordering::SeqCst);
                    let done = one_doc(&quiet, &Control::ctrl_c(), command, doc);
                    running.fetch_sub(1, Ordering::SeqCst);
                    if let Ok(mut r) = results.lock() {
                        r.push((i, done));
                    }
                })
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
        finished.store(true, Ordering::SeqCst);
        if let Some(p) = progress {
            let _ = p.join();
        }
    });
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, d)| d).collect()
}

fn interrupted(doc: &Path) -> Done {
    Done {
        doc: doc.to_path_buf(),
        status: ExitStatus::Interrupted,
        json: json!({"status": "interrupted", "error": "interrupted before its review started"}),
        seconds: 0.0,
        skipped: false,
    }
}

/// One document, run like `koas <command> DOC` with the set's flags.
fn one_doc(global: &HostOptions, control: &Control, command: &SetCommand<'_>, doc: &Path) -> Done {
    let started = Instant::now();
    let (status, json) = (command.one)(global, control, doc).unwrap_or_else(|e| {
        let message = koas_orchestrator::embed::error_chain(&e, ": ");
        (
            ExitStatus::Error,
            json!({"status": "error", "error": message}),
        )
    });
    Done {
        doc: doc.to_path_buf(),
        status,
        json,
        seconds: started.elapsed().as_secs_f64(),
        skipped: false,
    }
}

/// The set's progress on stderr: redrawn on a terminal, a line every ten
/// seconds otherwise, until `finished`.
fn show_progress(
    name: &str,
    total: usize,
    results: &Mutex<Vec<(usize, Done)>>,
    running: &AtomicUsize,
    finished: &AtomicBool,
) {
    let tty = std::io::stderr().is_terminal();
    let every = if tty {
        Duration::from_millis(500)
    } else {
        Duration::from_secs(10)
    };
    let started = Instant::now();
    let mut last = Instant::now();
    while !finished.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        if last.elapsed() < every {
            continue;
        }
        last = Instant::now();
        let (done, tokens) = results.lock().map_or((0, 0), |r| {
            (
                r.len(),
                r.iter()
                    .map(|(_, d)| d.number("/model/tokens"))
                    .sum::<u64>(),
            )
        });
        let line = progress_line(
            name,
            total,
            done,
            running.load(Ordering::SeqCst),
            tokens,
            started.elapsed(),
        );
        let mut err = std::io::stderr().lock();
        if tty {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }
    if tty {
        let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
    }
}

/// `koas review: 3/20 documents done, 2 in progress · http://a: 4/4 in
/// flight, 37 answered · 12,000 tokens · about 40 s left`.
fn progress_line(
    name: &str,
    total: usize,
    done: usize,
    running: usize,
    tokens: u64,
    elapsed: Duration,
) -> String {
    let mut line = format!("koas {name}: {done}/{total} documents done, {running} in progress");
    for e in koas_orchestrator::embed::pool_loads() {
        line.push_str(&format!(
            " · {}: {}/{} in flight, {} answered{}",
            e.url,
            e.in_flight,
            e.slots,
            e.answered,
            if e.up { "" } else { " (down, retried later)" }
        ));
    }
    if tokens > 0 {
        line.push_str(&format!(" · {tokens} tokens (documents done)"));
    }
    if done > 0 && done < total {
        let left = elapsed.as_secs_f64() * (total - done) as f64 / done as f64;
        line.push_str(&format!(" · about {left:.0} s left"));
    }
    line
}

/// The table the set prints: a line per document, then the summary.
fn table(done: &[Done], summary: &str, command: &SetCommand<'_>) -> String {
    let name = |d: &Done| crate::input::shown_path(&d.doc);
    let width = done.iter().map(|d| name(d).len()).max().unwrap_or(8).max(8);
    let mut t = format!("{:<width$}", "document");
    for (header, _) in command.columns {
        t.push_str(&format!("  {header:>8}"));
    }
    t.push_str(&format!("  {:>7}  status\n", "seconds"));
    for d in done {
        t.push_str(&format!("{:<width$}", name(d)));
        for (_, pointer) in command.columns {
            t.push_str(&format!("  {:>8}", d.number(pointer)));
        }
        t.push_str(&format!("  {:>7.1}  {}", d.seconds, d.state(command.done)));
        if let Some(error) = d.json.get("error").and_then(Value::as_str) {
            t.push_str(&format!(": {}", first_line(error)));
        }
        t.push('\n');
    }
    t.push_str(&format!("koas {}: {summary}\n", command.name));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_status_wins() {
        let worst = [ExitStatus::Success, ExitStatus::Error, ExitStatus::Failure]
            .into_iter()
            .max_by_key(|s| severity(*s));
        assert_eq!(worst, Some(ExitStatus::Error));
    }

    #[test]
    fn the_progress_line_counts_documents_and_estimates_what_is_left() {
        let line = progress_line("review", 20, 5, 2, 1200, Duration::from_secs(10));
        assert!(
            line.starts_with("koas review: 5/20 documents done, 2 in progress"),
            "{line}"
        );
        assert!(line.contains("1200 tokens (documents done)"), "{line}");
        assert!(line.ends_with("about 30 s left"), "{line}");
        assert!(!progress_line("refine", 2, 0, 2, 0, Duration::from_secs(1)).contains("left"));
    }
}
