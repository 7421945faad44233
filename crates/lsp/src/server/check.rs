//! The check pool: a few threads check the editor's texts, newest first,
//! each against the project's checker (rebuilt when its `koas.toml` or
//! words change), within a time budget.

use super::{CheckerCache, Event, Outcome, Stamps};
use crate::words::{self};
use koas_md_scan::config::{find_project_config, ProjectConfig};
use koas_md_scan::{Budget, CheckError, Checker};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// The result of a check of one revision of one document.
pub(super) struct Checked {
    pub(super) uri: String,
    pub(super) revision: u64,
    pub(super) version: i32,
    pub(super) outcome: Outcome,
    pub(super) elapsed: Duration,
}

/// A check to run.
pub(super) struct Job {
    pub(super) uri: String,
    pub(super) revision: u64,
    pub(super) version: i32,
    pub(super) text: String,
    pub(super) path: Option<PathBuf>,
    /// The workspace folder holding the document (its words file applies
    /// when no `koas.toml` does).
    pub(super) root: Option<PathBuf>,
    /// Set when a newer text or a close makes this check useless.
    pub(super) cancel: Arc<AtomicBool>,
}

/// The checks waiting and running, shared by the pool's threads. At most
/// one check per document runs at a time, so that a slow document being
/// edited holds one thread, never all of them.
#[derive(Default)]
pub(super) struct Pool {
    pub(super) state: Mutex<PoolState>,
    pub(super) wake: Condvar,
}

#[derive(Default)]
pub(super) struct PoolState {
    /// In arrival order; at most one per document (the newest text).
    pub(super) waiting: Vec<Job>,
    /// The documents being checked, with the running check's cancel flag.
    pub(super) running: HashMap<String, Arc<AtomicBool>>,
    pub(super) closed: bool,
}

impl Pool {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        // A thread that panicked mid-check left the state consistent (it
        // is only changed under the lock by the few lines here).
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a check; an older one of the same document, waiting or
    /// running, is superseded.
    pub(super) fn submit(&self, job: Job) {
        let mut state = self.lock();
        state.supersede(&job.uri);
        state.waiting.push(job);
        drop(state);
        self.wake.notify_all();
    }

    /// Drops the checks of a closed document.
    pub(super) fn cancel(&self, uri: &str) {
        self.lock().supersede(uri);
    }

    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_all();
    }

    /// The next check a thread may run (none of the same document is
    /// running); `None` once the pool is closed.
    pub(super) fn next(&self) -> Option<Job> {
        let mut state = self.lock();
        loop {
            if state.closed {
                return None;
            }
            let free = state
                .waiting
                .iter()
                .position(|j| !state.running.contains_key(&j.uri));
            if let Some(i) = free {
                let job = state.waiting.remove(i);
                state.running.insert(job.uri.clone(), job.cancel.clone());
                return Some(job);
            }
            state = self
                .wake
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    pub(super) fn done(&self, uri: &str) {
        self.lock().running.remove(uri);
        // A check of the same document may have waited for this one.
        self.wake.notify_all();
    }
}

impl PoolState {
    pub(super) fn supersede(&mut self, uri: &str) {
        self.waiting.retain(|j| {
            if j.uri == uri {
                j.cancel.store(true, Ordering::Relaxed);
            }
            j.uri != uri
        });
        if let Some(cancel) = self.running.get(uri) {
            cancel.store(true, Ordering::Relaxed);
        }
    }
}

/// One thread of the pool: runs the checks it is given until the pool
/// closes.
pub(super) fn check_loop(
    warm_up: bool,
    pool: &Pool,
    checkers: &Mutex<CheckerCache>,
    budget: Duration,
    events: &Sender<Event>,
) {
    // While the client initializes: compile the checks' patterns (built
    // once per process), so the first document opened is not the one
    // that pays for them.
    if warm_up {
        if let Ok(checker) = cached_checker(checkers, None, None) {
            let _ = checker.check(
                "# Warm-up\n\nSee [a](#b) and Table 1.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
            );
        }
    }
    while let Some(job) = pool.next() {
        let start = Instant::now();
        let outcome = match cached_checker(checkers, job.path.as_deref(), job.root.as_deref()) {
            Err(e) => Outcome::Failed(e),
            Ok(checker) => run_check(&checker, &job, budget),
        };
        pool.done(&job.uri);
        let checked = Checked {
            uri: job.uri,
            revision: job.revision,
            version: job.version,
            outcome,
            elapsed: start.elapsed(),
        };
        if events.send(Event::Checked(checked)).is_err() {
            return;
        }
    }
}

/// Checks one text within the budget: a newer text of the document or
/// its close (the job's cancel flag) stops the check, and so does the
/// deadline; either way no findings come of it.
pub(super) fn run_check(checker: &Checker, job: &Job, budget: Duration) -> Outcome {
    let limits = Budget::unlimited()
        .with_limit(budget)
        .with_cancel(&job.cancel);
    match check_text(
        checker,
        &job.text,
        job.path.as_deref(),
        job.root.as_deref(),
        &limits,
    ) {
        Ok(out) => Outcome::Findings(out.findings),
        Err(CheckError::Cancelled) => Outcome::Cancelled,
        Err(CheckError::OverBudget { limit }) => Outcome::OverBudget(limit),
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// Checks `text` within `budget`; when it is the text of the file at
/// `path`, its links to other files are looked up on disk, inside the
/// workspace folder `root` (else inside the file's project root), as they
/// are now.
pub(super) fn check_text(
    checker: &Checker,
    text: &str,
    path: Option<&Path>,
    root: Option<&Path>,
    budget: &Budget<'_>,
) -> Result<koas_md_scan::ScanOutput, CheckError> {
    let disk = koas_review::links::Disk::new(koas_review::input::DEFAULT_MAX_DOC_BYTES);
    let around = path.and_then(|p| match root {
        Some(root) => disk.around_in(p, root),
        None => disk.around(p),
    });
    let name = path.and_then(Path::file_name).and_then(|n| n.to_str());
    match &around {
        Some(around) => checker.check_linked_within(text, name, around, budget),
        None => checker.check_within(text, budget),
    }
}

pub(super) fn cached_checker(
    cache: &Mutex<CheckerCache>,
    doc: Option<&Path>,
    root: Option<&Path>,
) -> Result<Arc<Checker>, String> {
    // Compiling happens under the lock: the threads share one compiled
    // checker per `koas.toml` instead of each building its own.
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    checker_for(&mut cache, doc, root)
}

pub(super) fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The checker for a document: its `koas.toml` (found upward from it, as
/// `koas check` finds it) with its words files, or without one the
/// defaults with the words file of the workspace folder `root`; compiled
/// once and again when one of these files changes.
pub(super) fn checker_for(
    cache: &mut CheckerCache,
    doc: Option<&Path>,
    root: Option<&Path>,
) -> Result<Arc<Checker>, String> {
    let config = doc.and_then(find_project_config);
    let root = root.filter(|_| config.is_none()).map(Path::to_path_buf);
    let vale = doc
        .filter(|_| config.is_none())
        .and_then(Path::parent)
        .and_then(koas_md_scan::config::find_vale_config);
    let key = (config, root, vale);
    if let Some((stamps, checker)) = cache.get(&key) {
        if stamps.iter().all(|(path, when)| modified(path) == *when) {
            return Ok(checker.clone());
        }
    }
    let watched: Vec<PathBuf> = match &key {
        (Some(config), _, _) => std::iter::once(config.clone())
            .chain(words::files_of_config(config))
            .collect(),
        (None, root, vale) => root
            .iter()
            .map(|r| r.join(koas_md_scan::config::DEFAULT_WORDS_FILE))
            .chain(vale.iter().flat_map(|ini| {
                let folder = ini.parent().unwrap_or(Path::new("."));
                koas_md_scan::config::ValeSection::default().files(folder)
            }))
            .collect(),
    };
    // Taken before reading: a change while the checker is built makes
    // the next check build it again.
    let stamps: Stamps = watched
        .into_iter()
        .map(|p| (p.clone(), modified(&p)))
        .collect();
    let project = match &key {
        (Some(path), _, _) => {
            ProjectConfig::load(path).map_err(|e| format!("{}: {e}", path.display()))?
        }
        (None, root, vale) => {
            let mut config = words::config_without_toml(root.as_deref())?;
            if let Some(folder) = vale.as_deref().and_then(Path::parent) {
                config.read_vale(folder)?;
            }
            config
        }
    };
    let checker = Arc::new(Checker::new(&project).map_err(|e| match &key.0 {
        Some(path) => format!("{}: {e}", path.display()),
        None => e.to_string(),
    })?);
    cache.insert(key, (stamps, checker.clone()));
    Ok(checker)
}

/// What `path` is when it exists and is not a regular file (a FIFO, a
/// device, a folder): the commands refuse such a document.
pub(super) fn not_regular(path: &Path) -> Option<&'static str> {
    let meta = std::fs::metadata(path).ok()?;
    (!meta.is_file()).then(|| koas_orchestrator::guarded_read::kind_of(&meta))
}
