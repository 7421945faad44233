//! The server loop: one thread reads messages, a small pool checks
//! documents, the main thread answers and publishes; `koas.review` and
//! `koas.revert` run on threads of their own (they read the saved file,
//! which may be anything a URI names). Only the main thread writes to the
//! client.
//!
//! A check's result is keyed by the document's revision: a number the
//! server gives every text it holds (each open, change, or save with
//! text), never reused, so a result is published only on the very text it
//! was computed from, even when a document is closed and opened again at
//! the same version number.

use crate::convert::{diagnostic, disable_edit, fix_edits, span_text, suggestion_title};
use crate::review::{self, Placement};
use crate::text::Text;
use crate::transport::{self, codes, Incoming};
use crate::words::{self, WordsFile};
use koas_md_scan::config::{find_project_config, ProjectConfig};
use koas_md_scan::fix::fix_until_stable;
use koas_md_scan::{Budget, CheckError, Checker};
use koas_orchestrator::embed::Progress;
use koas_orchestrator::embed::{Control, HostOptions};
use koas_review_schema::findings::{Finding, FindingKind};
use koas_reviewer::api::{ApiError, RevertChanges, RevertRequest, ReviewRequest, Session};
use koas_reviewer::input::{max_doc_bytes, read_document_bytes};
use lsp_types::{
    CodeAction, CodeActionKind, CodeActionParams, CodeLens, CodeLensParams, Command,
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
    DidSaveTextDocumentParams, ExecuteCommandParams, Hover, HoverContents, HoverParams,
    MarkupContent, MarkupKind, Position, Range, TextEdit, Uri, WorkspaceEdit,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// How long after the last keystroke a document is checked again.
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// How long one check of the editor's text may take before the server
/// gives up on it and says so (`window/logMessage`).
pub const CHECK_BUDGET: Duration = Duration::from_secs(5);

/// The commands `workspace/executeCommand` accepts.
pub const COMMANDS: [&str; 5] = [
    "koas.revert",
    "koas.review",
    "koas.fixAll",
    "koas.check",
    words::ADD_WORD,
];

/// Settings of one server.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The runtime options the reviewer's commands run with.
    pub global: HostOptions,
    /// Base URL of the documentation the diagnostics link to.
    pub docs_base: String,
    /// Debounce after `didChange`.
    pub debounce: Duration,
    /// The time budget of one check.
    pub check_budget: Duration,
    /// How many documents are checked at once.
    pub check_threads: usize,
}

/// The default number of checks at once: two (a slow document does not
/// hold up the others), more on machines with cores to spare.
pub fn default_check_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, usize::from)
        .clamp(2, 4)
}

/// What the main loop waits for.
enum Event {
    /// A message from the client, or the end of its input.
    Incoming(Option<Incoming>),
    /// A check finished.
    Checked(Checked),
    /// A review read its document and starts: progress begins.
    ReviewStarted { token: String, path: PathBuf },
    /// A review reported a step.
    ReviewProgress { token: String, message: String },
    /// A `koas.review` or `koas.revert` finished: its request id, its
    /// answer, and the file's text after it (when it could be read).
    CommandDone {
        id: Value,
        token: Option<String>,
        uri: String,
        result: Result<Value, (i64, String)>,
        now: Option<String>,
    },
    /// A `koas.addWord` finished: whether the word was new, and the file.
    WordAdded {
        id: Value,
        word: String,
        result: Result<(bool, PathBuf), String>,
    },
}

/// How one check ended.
enum Outcome {
    /// The findings of the text.
    Findings(Vec<Finding>),
    /// The checker could not run (its `koas.toml` is wrong).
    Failed(String),
    /// The check took longer than the budget; its findings are dropped.
    OverBudget(Duration),
    /// A newer text or the document's close made the check useless.
    Cancelled,
}

/// The result of a check of one revision of one document.
struct Checked {
    uri: String,
    revision: u64,
    version: i32,
    outcome: Outcome,
    elapsed: Duration,
}

/// A check to run.
struct Job {
    uri: String,
    revision: u64,
    version: i32,
    text: String,
    path: Option<PathBuf>,
    /// The workspace folder holding the document (its words file applies
    /// when no `koas.toml` does).
    root: Option<PathBuf>,
    /// Set when a newer text or a close makes this check useless.
    cancel: Arc<AtomicBool>,
}

/// An open document.
struct Doc {
    text: Text,
    version: i32,
    /// The server's number for this text (see the module's comment).
    revision: u64,
    path: Option<PathBuf>,
    /// The findings of a revision, once checked.
    findings: Option<(u64, Vec<Finding>)>,
    /// When a check is due (after typing stops).
    due: Option<Instant>,
}

/// A reviewed document: its path, where the ledger's lines were placed,
/// and its active changes.
type ReviewedDoc = (PathBuf, Placement, Vec<review::PlacedChange>);

/// A running `koas.review`.
struct RunningReview {
    cancel: Arc<AtomicBool>,
    request: Value,
    /// Its progress has begun (the document was read and is the buffer).
    started: bool,
}

/// Where a checker's settings come from: the `koas.toml` that applies,
/// else the workspace folder whose `koas-words.txt` it reads.
type CheckerKey = (Option<PathBuf>, Option<PathBuf>);

/// The files a checker was built from, with their modification times then
/// (`None`: missing).
type Stamps = Vec<(PathBuf, Option<SystemTime>)>;

/// The compiled checkers, by where their settings come from.
type CheckerCache = HashMap<CheckerKey, (Stamps, Arc<Checker>)>;

/// The checks waiting and running, shared by the pool's threads. At most
/// one check per document runs at a time, so that a slow document being
/// edited holds one thread, never all of them.
#[derive(Default)]
struct Pool {
    state: Mutex<PoolState>,
    wake: Condvar,
}

#[derive(Default)]
struct PoolState {
    /// In arrival order; at most one per document (the newest text).
    waiting: Vec<Job>,
    /// The documents being checked, with the running check's cancel flag.
    running: HashMap<String, Arc<AtomicBool>>,
    closed: bool,
}

impl Pool {
    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        // A thread that panicked mid-check left the state consistent (it
        // is only changed under the lock by the few lines here).
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a check; an older one of the same document, waiting or
    /// running, is superseded.
    fn submit(&self, job: Job) {
        let mut state = self.lock();
        state.supersede(&job.uri);
        state.waiting.push(job);
        drop(state);
        self.wake.notify_all();
    }

    /// Drops the checks of a closed document.
    fn cancel(&self, uri: &str) {
        self.lock().supersede(uri);
    }

    fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_all();
    }

    /// The next check a thread may run (none of the same document is
    /// running); `None` once the pool is closed.
    fn next(&self) -> Option<Job> {
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

    fn done(&self, uri: &str) {
        self.lock().running.remove(uri);
        // A check of the same document may have waited for this one.
        self.wake.notify_all();
    }
}

impl PoolState {
    fn supersede(&mut self, uri: &str) {
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

struct Server<W: Write> {
    out: W,
    settings: Settings,
    docs: HashMap<String, Doc>,
    pool: Arc<Pool>,
    checkers: Arc<Mutex<CheckerCache>>,
    events: Sender<Event>,
    initialized: bool,
    shutdown: bool,
    work_done_progress: bool,
    reviews: HashMap<String, RunningReview>,
    /// The workspace folders the client gave (as given and resolved).
    roots: Vec<PathBuf>,
    next_request: u64,
    next_revision: u64,
    /// Checks published, for `$/koas/checkTimes` (benchmarks, tests).
    check_times: Vec<(String, i32, Duration)>,
}

/// Serves LSP on `input`/`output` until `exit` or the end of the input.
/// `Ok(true)` when the client asked to shut down first (exit code 0).
pub fn serve<R, W>(input: R, output: W, settings: Settings) -> anyhow::Result<bool>
where
    R: BufRead + Send + 'static,
    W: Write,
{
    let (events_tx, events) = mpsc::channel::<Event>();
    {
        let events = events_tx.clone();
        std::thread::Builder::new()
            .name("koas-lsp-reader".into())
            .spawn(move || read_loop(input, events))?;
    }
    let pool = Arc::new(Pool::default());
    let checkers: Arc<Mutex<CheckerCache>> = Arc::default();
    for n in 0..settings.check_threads.max(1) {
        let events = events_tx.clone();
        let pool = pool.clone();
        let checkers = checkers.clone();
        let budget = settings.check_budget;
        std::thread::Builder::new()
            .name(format!("koas-lsp-checker-{n}"))
            .spawn(move || check_loop(n == 0, &pool, &checkers, budget, &events))?;
    }
    let mut server = Server {
        out: output,
        settings,
        docs: HashMap::new(),
        pool: pool.clone(),
        checkers,
        events: events_tx,
        initialized: false,
        shutdown: false,
        work_done_progress: false,
        reviews: HashMap::new(),
        roots: Vec::new(),
        next_request: 1,
        next_revision: 1,
        check_times: Vec::new(),
    };
    let result = server.run(&events);
    pool.close();
    result
}

fn read_loop<R: BufRead>(mut input: R, events: Sender<Event>) {
    loop {
        let message = match transport::read_message(&mut input) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("koas lsp: reading the client's messages failed: {e}");
                None
            }
        };
        let end = message.is_none();
        if events.send(Event::Incoming(message)).is_err() || end {
            return;
        }
    }
}

/// One thread of the pool: runs the checks it is given until the pool
/// closes.
fn check_loop(
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
fn run_check(checker: &Checker, job: &Job, budget: Duration) -> Outcome {
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
fn check_text(
    checker: &Checker,
    text: &str,
    path: Option<&Path>,
    root: Option<&Path>,
    budget: &Budget<'_>,
) -> Result<koas_md_scan::ScanOutput, CheckError> {
    let disk = koas_reviewer::links::Disk::new(koas_reviewer::input::DEFAULT_MAX_DOC_BYTES);
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

fn cached_checker(
    cache: &Mutex<CheckerCache>,
    doc: Option<&Path>,
    root: Option<&Path>,
) -> Result<Arc<Checker>, String> {
    // Compiling happens under the lock: the threads share one compiled
    // checker per `koas.toml` instead of each building its own.
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    checker_for(&mut cache, doc, root)
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The checker for a document: its `koas.toml` (found upward from it, as
/// `koas check` finds it) with its words files, or without one the
/// defaults with the words file of the workspace folder `root`; compiled
/// once and again when one of these files changes.
fn checker_for(
    cache: &mut CheckerCache,
    doc: Option<&Path>,
    root: Option<&Path>,
) -> Result<Arc<Checker>, String> {
    let config = doc.and_then(find_project_config);
    let root = root.filter(|_| config.is_none()).map(Path::to_path_buf);
    let key = (config, root);
    if let Some((stamps, checker)) = cache.get(&key) {
        if stamps.iter().all(|(path, when)| modified(path) == *when) {
            return Ok(checker.clone());
        }
    }
    let watched: Vec<PathBuf> = match &key {
        (Some(config), _) => std::iter::once(config.clone())
            .chain(words::files_of_config(config))
            .collect(),
        (None, root) => root
            .iter()
            .map(|r| r.join(koas_md_scan::config::DEFAULT_WORDS_FILE))
            .collect(),
    };
    // Taken before reading: a change while the checker is built makes
    // the next check build it again.
    let stamps: Stamps = watched
        .into_iter()
        .map(|p| (p.clone(), modified(&p)))
        .collect();
    let project = match &key {
        (Some(path), _) => {
            ProjectConfig::load(path).map_err(|e| format!("{}: {e}", path.display()))?
        }
        (None, root) => words::config_without_toml(root.as_deref())?,
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
fn not_regular(path: &Path) -> Option<&'static str> {
    let meta = std::fs::metadata(path).ok()?;
    (!meta.is_file()).then(|| koas_orchestrator::guarded_read::kind_of(&meta))
}

/// The saved text of a document, read as `koas review` reads it: regular
/// files only, within the document size limit. Runs on a command's own
/// thread, never on the main loop.
fn read_saved(path: &Path) -> Result<String, (i64, String)> {
    let refused = |e: anyhow::Error| (codes::INVALID_REQUEST, format!("{e:#}"));
    let limit = max_doc_bytes(None).map_err(refused)?;
    let bytes =
        read_document_bytes(path, &path.display().to_string(), limit, false).map_err(refused)?;
    String::from_utf8(bytes).map_err(|_| {
        (
            codes::INVALID_REQUEST,
            format!("{} is not UTF-8 text", path.display()),
        )
    })
}

/// A `file:` URI's path (percent-decoded); `None` for other schemes.
pub fn uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file:///p` (empty authority) or `file://localhost/p`.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let hex = |b: u8| char::from(b).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    let path = String::from_utf8(out).ok()?;
    Some(PathBuf::from(path))
}

fn parse<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, (i64, String)> {
    serde_json::from_value(value)
        .map_err(|e| (codes::INVALID_PARAMS, format!("invalid params: {e}")))
}

impl<W: Write> Server<W> {
    fn send(&mut self, message: &Value) {
        if let Err(e) = transport::write_message(&mut self.out, message) {
            eprintln!("koas lsp: writing to the client failed: {e}");
        }
    }

    fn run(&mut self, events: &Receiver<Event>) -> anyhow::Result<bool> {
        loop {
            let due = self.docs.values().filter_map(|d| d.due).min();
            let event = match due {
                Some(when) => {
                    let wait = when.saturating_duration_since(Instant::now());
                    match events.recv_timeout(wait) {
                        Ok(e) => Some(e),
                        Err(mpsc::RecvTimeoutError::Timeout) => None,
                        Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(self.shutdown),
                    }
                }
                None => match events.recv() {
                    Ok(e) => Some(e),
                    Err(_) => return Ok(self.shutdown),
                },
            };
            match event {
                None => self.start_due_checks(),
                Some(Event::Incoming(None)) => return Ok(self.shutdown),
                Some(Event::Incoming(Some(message))) => {
                    if let Some(done) = self.handle(message) {
                        return Ok(done);
                    }
                }
                Some(Event::Checked(checked)) => self.publish(checked),
                Some(Event::ReviewStarted { token, path }) => self.review_started(&token, &path),
                Some(Event::ReviewProgress { token, message }) => {
                    if self.reviews.get(&token).is_some_and(|r| r.started) {
                        self.progress(&token, json!({"kind": "report", "message": message}));
                    }
                }
                Some(Event::CommandDone {
                    id,
                    token,
                    uri,
                    result,
                    now,
                }) => self.command_done(id, token, &uri, result, now),
                Some(Event::WordAdded { id, word, result }) => self.word_added(id, &word, result),
            }
        }
    }

    /// Handles one message; `Some(code_ok)` when the server must stop.
    fn handle(&mut self, message: Incoming) -> Option<bool> {
        match message {
            Incoming::Malformed { id, code, message } => {
                eprintln!("koas lsp: malformed message: {message}");
                let answer = transport::error_response(&id, code, &message);
                self.send(&answer);
                None
            }
            Incoming::Response { .. } => None,
            Incoming::Notification { method, params } => self.notification(&method, params),
            Incoming::Request { id, method, params } => {
                let answer = if !self.initialized && method != "initialize" {
                    Err((
                        codes::SERVER_NOT_INITIALIZED,
                        format!("{method} before initialize"),
                    ))
                } else if self.shutdown {
                    Err((codes::INVALID_REQUEST, format!("{method} after shutdown")))
                } else {
                    self.request(&id, &method, params)
                };
                match answer {
                    Ok(Some(result)) => {
                        let message = transport::response(&id, result);
                        self.send(&message);
                    }
                    // Answered later (a review).
                    Ok(None) => {}
                    Err((code, text)) => {
                        let message = transport::error_response(&id, code, &text);
                        self.send(&message);
                    }
                }
                None
            }
        }
    }

    fn notification(&mut self, method: &str, params: Value) -> Option<bool> {
        match method {
            "exit" => return Some(self.shutdown),
            "initialized" => {}
            "textDocument/didOpen" => {
                if let Ok(p) = parse::<DidOpenTextDocumentParams>(params) {
                    let uri = p.text_document.uri.as_str().to_string();
                    let path = uri_path(&uri);
                    let revision = self.revision();
                    self.docs.insert(
                        uri.clone(),
                        Doc {
                            text: Text::new(p.text_document.text),
                            version: p.text_document.version,
                            revision,
                            path,
                            findings: None,
                            due: None,
                        },
                    );
                    self.check_now(&uri);
                }
            }
            "textDocument/didChange" => {
                if let Ok(p) = parse::<DidChangeTextDocumentParams>(params) {
                    let uri = p.text_document.uri.as_str().to_string();
                    let debounce = self.settings.debounce;
                    let revision = self.revision();
                    if let Some(doc) = self.docs.get_mut(&uri) {
                        for change in &p.content_changes {
                            doc.text.apply(change);
                        }
                        doc.version = p.text_document.version;
                        doc.revision = revision;
                        doc.due = Some(Instant::now() + debounce);
                    }
                }
            }
            "textDocument/didSave" => {
                if let Ok(p) = parse::<DidSaveTextDocumentParams>(params) {
                    let uri = p.text_document.uri.as_str().to_string();
                    let revision = self.revision();
                    if let (Some(text), Some(doc)) = (p.text, self.docs.get_mut(&uri)) {
                        doc.text = Text::new(text);
                        doc.revision = revision;
                    }
                    self.check_now(&uri);
                }
            }
            "textDocument/didClose" => {
                if let Ok(p) = parse::<DidCloseTextDocumentParams>(params) {
                    let uri = p.text_document.uri.as_str().to_string();
                    // Its checks are useless now; any result still on its
                    // way finds no document of its revision and is dropped.
                    self.pool.cancel(&uri);
                    self.docs.remove(&uri);
                    let message = transport::notification(
                        "textDocument/publishDiagnostics",
                        json!({"uri": uri, "diagnostics": []}),
                    );
                    self.send(&message);
                }
            }
            "window/workDoneProgress/cancel" => {
                if let Some(token) = params.get("token").and_then(token_string) {
                    if let Some(r) = self.reviews.get(&token) {
                        r.cancel.store(true, Ordering::SeqCst);
                    }
                }
            }
            "$/cancelRequest" => {
                let id = params.get("id").cloned().unwrap_or(Value::Null);
                for r in self.reviews.values() {
                    if r.request == id {
                        r.cancel.store(true, Ordering::SeqCst);
                    }
                }
            }
            // Other notifications ($/setTrace, workspace/didChange…) need
            // nothing from this server.
            _ => {}
        }
        None
    }

    fn request(
        &mut self,
        id: &Value,
        method: &str,
        params: Value,
    ) -> Result<Option<Value>, (i64, String)> {
        match method {
            "initialize" => {
                if self.initialized {
                    return Err((codes::INVALID_REQUEST, "initialize sent twice".into()));
                }
                self.initialized = true;
                self.work_done_progress = params
                    .pointer("/capabilities/window/workDoneProgress")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                self.roots = workspace_roots(&params);
                if let Some(base) = params
                    .pointer("/initializationOptions/docsBaseUrl")
                    .and_then(Value::as_str)
                {
                    self.settings.docs_base = base.to_string();
                }
                Ok(Some(json!({
                    "capabilities": {
                        "positionEncoding": "utf-16",
                        "textDocumentSync": {
                            "openClose": true,
                            "change": 2,
                            "save": {"includeText": false}
                        },
                        "codeActionProvider": {
                            "codeActionKinds": ["quickfix", "source.fixAll", "source.fixAll.koas"],
                            "resolveProvider": false
                        },
                        "hoverProvider": true,
                        "codeLensProvider": {"resolveProvider": false},
                        "executeCommandProvider": {"commands": COMMANDS, "workDoneProgress": true}
                    },
                    "serverInfo": {"name": "koas", "version": env!("CARGO_PKG_VERSION")}
                })))
            }
            "shutdown" => {
                self.shutdown = true;
                for r in self.reviews.values() {
                    r.cancel.store(true, Ordering::SeqCst);
                }
                Ok(Some(Value::Null))
            }
            "textDocument/codeAction" => {
                // The diagnostics of the context are the client's copies of
                // ours, which the server does not need; clients send them
                // in shapes of their own (Neovim 0.7 drops their ranges),
                // so they are not parsed.
                let mut params = params;
                if let Some(context) = params.get_mut("context").and_then(Value::as_object_mut) {
                    context.insert("diagnostics".into(), json!([]));
                }
                let p: CodeActionParams = parse(params)?;
                Ok(Some(self.code_actions(&p)))
            }
            "textDocument/hover" => {
                let p: HoverParams = parse(params)?;
                self.hover(&p).map(Some)
            }
            "textDocument/codeLens" => {
                let p: CodeLensParams = parse(params)?;
                self.code_lenses(&p).map(Some)
            }
            "workspace/executeCommand" => {
                let p: ExecuteCommandParams = parse(params)?;
                self.execute_command(id, p)
            }
            // For benchmarks and tests: how long each published check took.
            "$/koas/checkTimes" => Ok(Some(json!(self
                .check_times
                .iter()
                .map(
                    |(uri, v, d)| json!({"uri": uri, "version": v, "ms": d.as_secs_f64() * 1000.0})
                )
                .collect::<Vec<_>>()))),
            _ => Err((codes::METHOD_NOT_FOUND, format!("unknown method {method}"))),
        }
    }

    /// A new revision number (see the module's comment).
    fn revision(&mut self) -> u64 {
        self.next_revision += 1;
        self.next_revision
    }

    /// The workspace folder holding the document at `path`.
    fn root_for(&self, path: Option<&Path>) -> Option<PathBuf> {
        words::root_of(path?, &self.roots).cloned()
    }

    fn check_now(&mut self, uri: &str) {
        let root = self.root_for(self.docs.get(uri).and_then(|d| d.path.as_deref()));
        if let Some(doc) = self.docs.get_mut(uri) {
            doc.due = None;
            self.pool.submit(Job {
                uri: uri.to_string(),
                revision: doc.revision,
                version: doc.version,
                text: doc.text.as_str().to_string(),
                path: doc.path.clone(),
                root,
                cancel: Arc::default(),
            });
        }
    }

    fn start_due_checks(&mut self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .docs
            .iter()
            .filter(|(_, d)| d.due.is_some_and(|t| t <= now))
            .map(|(u, _)| u.clone())
            .collect();
        for uri in due {
            self.check_now(&uri);
        }
    }

    /// Publishes a check's diagnostics when the document is still open
    /// with the very text that was checked (same revision, no newer edit
    /// waiting); otherwise the result is stale and dropped.
    fn publish(&mut self, checked: Checked) {
        let Some(doc) = self.docs.get(&checked.uri) else {
            return;
        };
        if doc.revision != checked.revision || doc.due.is_some() {
            return;
        }
        let Ok(uri) = checked.uri.parse::<Uri>() else {
            return;
        };
        let whole_document = |severity: u8, message: String| {
            json!({
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "severity": severity,
                "source": "koas",
                "message": message,
            })
        };
        let diagnostics: Vec<Value> = match &checked.outcome {
            Outcome::Cancelled => return,
            Outcome::Findings(findings) => findings
                .iter()
                .filter_map(|f| {
                    serde_json::to_value(diagnostic(&doc.text, &uri, f, &self.settings.docs_base))
                        .ok()
                })
                .collect(),
            Outcome::Failed(message) => vec![whole_document(
                1,
                format!("koas could not check this document: {message}"),
            )],
            Outcome::OverBudget(limit) => {
                // The older findings would sit on text they no longer
                // describe: replaced by one note saying why there are none.
                let message = format!(
                    "koas: this document took longer than {} ms to check; its findings are not shown (koas lsp --check-budget-ms raises the limit)",
                    limit.as_millis()
                );
                vec![whole_document(3, message)]
            }
        };
        if let Outcome::OverBudget(limit) = &checked.outcome {
            let log = transport::notification(
                "window/logMessage",
                json!({"type": 2, "message": format!(
                    "koas: {} was too slow to check (over {} ms); no diagnostics for this version",
                    checked.uri,
                    limit.as_millis()
                )}),
            );
            self.send(&log);
        }
        let Some(doc) = self.docs.get_mut(&checked.uri) else {
            return;
        };
        if let Outcome::Findings(findings) = checked.outcome {
            doc.findings = Some((checked.revision, findings));
        }
        self.check_times
            .push((checked.uri.clone(), checked.version, checked.elapsed));
        let message = transport::notification(
            "textDocument/publishDiagnostics",
            json!({"uri": checked.uri, "version": checked.version, "diagnostics": diagnostics}),
        );
        self.send(&message);
    }

    /// The findings of a document as it is now (checked again when the
    /// stored ones are of an older revision).
    fn current_findings(&mut self, uri: &str) -> Option<Vec<Finding>> {
        let root = self.root_for(self.docs.get(uri).and_then(|d| d.path.as_deref()));
        let doc = self.docs.get_mut(uri)?;
        if let Some((revision, findings)) = &doc.findings {
            if *revision == doc.revision {
                return Some(findings.clone());
            }
        }
        // On the main loop: bounded by the same budget as the pool's checks.
        let limits = Budget::unlimited().with_limit(self.settings.check_budget);
        let checker = cached_checker(&self.checkers, doc.path.as_deref(), root.as_deref()).ok()?;
        let findings = check_text(
            &checker,
            doc.text.as_str(),
            doc.path.as_deref(),
            root.as_deref(),
            &limits,
        )
        .ok()?
        .findings;
        doc.findings = Some((doc.revision, findings.clone()));
        Some(findings)
    }

    /// The text of `uri` with every certain fix applied, round after round
    /// until none is left (each round's check within the check budget), and
    /// how many applied; `None` when none applies. `findings` are those of
    /// its current text.
    fn fixed_text(&self, uri: &str, findings: Vec<Finding>) -> Option<(String, usize)> {
        let root = self.root_for(self.docs.get(uri).and_then(|d| d.path.as_deref()));
        let doc = self.docs.get(uri)?;
        let checker = cached_checker(&self.checkers, doc.path.as_deref(), root.as_deref()).ok()?;
        let budget = self.settings.check_budget;
        let stable = fix_until_stable(doc.text.as_str(), findings, |text: &str| {
            let limits = Budget::unlimited().with_limit(budget);
            check_text(
                &checker,
                text,
                doc.path.as_deref(),
                root.as_deref(),
                &limits,
            )
            .map(|out| out.findings)
        })
        .ok()?;
        (stable.applied > 0).then_some((stable.outcome.text, stable.applied))
    }

    fn code_actions(&mut self, p: &CodeActionParams) -> Value {
        let uri_text = p.text_document.uri.as_str().to_string();
        let Some(findings) = self.current_findings(&uri_text) else {
            return json!([]);
        };
        let only = p.context.only.clone();
        let wanted = |kind: &CodeActionKind| {
            only.as_ref().map_or(true, |o| {
                o.iter().any(|k| kind.as_str().starts_with(k.as_str()))
            })
        };
        let fix_all = CodeActionKind::new("source.fixAll.koas");
        let fixed = if findings.iter().any(|f| f.fix.is_some())
            && (wanted(&fix_all) || wanted(&CodeActionKind::QUICKFIX))
        {
            self.fixed_text(&uri_text, findings.clone())
        } else {
            None
        };
        let Some(doc) = self.docs.get(&uri_text) else {
            return json!([]);
        };
        let uri = p.text_document.uri.clone();
        let edit = |edits: Vec<TextEdit>| WorkspaceEdit {
            changes: Some(std::collections::HashMap::from([(uri.clone(), edits)])),
            ..WorkspaceEdit::default()
        };
        let mut actions: Vec<CodeAction> = Vec::new();
        // Where "add to the project's words" writes; looked up once, at
        // the first misspelling (it reads the document's `koas.toml`).
        let mut words_file: Option<Option<WordsFile>> = None;
        for f in &findings {
            let range = crate::convert::finding_range(&doc.text, f);
            if !overlaps(range, p.range) {
                continue;
            }
            let diagnostic = diagnostic(&doc.text, &uri, f, &self.settings.docs_base);
            let word = span_text(&doc.text, f).filter(|_| f.kind.is_language());
            if wanted(&CodeActionKind::QUICKFIX) {
                if let Some(word) = word.as_ref().filter(|_| !f.suggestions.is_empty()) {
                    // One quick fix per suggestion, on the word alone; the
                    // certain one (the finding's fix is the first) preferred.
                    for (i, suggestion) in f.suggestions.iter().enumerate() {
                        actions.push(CodeAction {
                            title: suggestion_title(word, suggestion),
                            kind: Some(CodeActionKind::QUICKFIX),
                            diagnostics: Some(vec![diagnostic.clone()]),
                            edit: Some(edit(vec![TextEdit::new(range, suggestion.clone())])),
                            is_preferred: (i == 0 && f.fix.is_some()).then_some(true),
                            ..CodeAction::default()
                        });
                    }
                } else if let (Some(fix), Some(edits)) = (&f.fix, fix_edits(&doc.text, f)) {
                    actions.push(CodeAction {
                        title: format!("koas: {}", fix.description),
                        kind: Some(CodeActionKind::QUICKFIX),
                        diagnostics: Some(vec![diagnostic.clone()]),
                        edit: Some(edit(edits)),
                        is_preferred: Some(true),
                        ..CodeAction::default()
                    });
                }
                if let Some(word) = word
                    .as_deref()
                    .filter(|w| f.kind == FindingKind::Misspelling && words::valid_word(w).is_ok())
                {
                    let target = words_file.get_or_insert_with(|| {
                        let path = doc.path.as_deref()?;
                        let root = words::root_of(path, &self.roots);
                        words::of_document(path, root.map(PathBuf::as_path))
                            .ok()
                            .flatten()
                    });
                    if let Some(target) = target {
                        let title = format!(
                            "koas: add “{word}” to the project's words ({})",
                            target.rel.display()
                        );
                        actions.push(CodeAction {
                            title: title.clone(),
                            kind: Some(CodeActionKind::QUICKFIX),
                            diagnostics: Some(vec![diagnostic.clone()]),
                            command: Some(Command {
                                title,
                                command: words::ADD_WORD.into(),
                                arguments: Some(vec![json!(uri.as_str()), json!(word)]),
                            }),
                            ..CodeAction::default()
                        });
                    }
                }
                actions.push(CodeAction {
                    title: format!("koas: disable {} on the next line", f.kind.as_str()),
                    kind: Some(CodeActionKind::QUICKFIX),
                    diagnostics: Some(vec![diagnostic]),
                    edit: Some(edit(vec![disable_edit(&doc.text, f)])),
                    ..CodeAction::default()
                });
            }
        }
        if let Some((text, applied)) = fixed {
            actions.push(CodeAction {
                title: format!(
                    "koas: fix all in file ({applied} certain fix{})",
                    if applied == 1 { "" } else { "es" }
                ),
                kind: Some(fix_all),
                edit: Some(edit(vec![TextEdit::new(doc.text.full_range(), text)])),
                ..CodeAction::default()
            });
        }
        serde_json::to_value(actions).unwrap_or_else(|_| json!([]))
    }

    fn review_changes(&self, uri: &str) -> Result<Option<ReviewedDoc>, (i64, String)> {
        let Some(doc) = self.docs.get(uri) else {
            return Ok(None);
        };
        let Some(path) = doc.path.clone() else {
            return Ok(None);
        };
        match review::changes(&path, doc.text.as_str()) {
            Ok(Some((placement, changes))) => Ok(Some((path, placement, changes))),
            Ok(None) => Ok(None),
            Err(e) => Err((codes::INTERNAL_ERROR, format!("{e:#}"))),
        }
    }

    fn hover(&self, p: &HoverParams) -> Result<Value, (i64, String)> {
        let uri = p.text_document_position_params.text_document.uri.as_str();
        let line = p.text_document_position_params.position.line as usize;
        let Some((path, placement, changes)) = self.review_changes(uri)? else {
            return Ok(Value::Null);
        };
        let on_line: Vec<&review::PlacedChange> = changes
            .iter()
            .filter(|c| c.first <= line && line <= c.last)
            .collect();
        if on_line.is_empty() {
            return Ok(Value::Null);
        }
        let hover = Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value: review::hover_markdown(&path, placement, &on_line),
            }),
            range: None,
        };
        Ok(serde_json::to_value(hover).unwrap_or(Value::Null))
    }

    fn code_lenses(&self, p: &CodeLensParams) -> Result<Value, (i64, String)> {
        let uri = p.text_document.uri.as_str();
        let Some((_, placement, changes)) = self.review_changes(uri)? else {
            return Ok(json!([]));
        };
        if placement == Placement::Moved {
            return Ok(json!([]));
        }
        let lenses: Vec<CodeLens> = changes
            .iter()
            .filter(|c| !c.flag && placement == Placement::Current)
            .map(|c| CodeLens {
                range: Range::new(
                    Position::new(c.first as u32, 0),
                    Position::new(c.first as u32, 0),
                ),
                command: Some(Command {
                    title: format!("revert {} ({})", c.id, c.kind),
                    command: "koas.revert".into(),
                    arguments: Some(vec![json!(uri), json!(c.id)]),
                }),
                data: None,
            })
            .collect();
        Ok(serde_json::to_value(lenses).unwrap_or_else(|_| json!([])))
    }

    fn execute_command(
        &mut self,
        id: &Value,
        p: ExecuteCommandParams,
    ) -> Result<Option<Value>, (i64, String)> {
        let uri = p
            .arguments
            .first()
            .and_then(Value::as_str)
            .ok_or((
                codes::INVALID_PARAMS,
                format!(
                    "{}: the first argument must be the document's URI",
                    p.command
                ),
            ))?
            .to_string();
        let doc = self
            .docs
            .get(&uri)
            .ok_or((codes::INVALID_PARAMS, format!("{uri} is not open")))?;
        let path = doc
            .path
            .clone()
            .ok_or((codes::INVALID_PARAMS, format!("{uri} is not a file")))?;
        // The file is looked at (never opened) here: a FIFO or a device is
        // refused at once. Reading it is the commands' threads' work.
        if let Some(kind) = not_regular(&path) {
            return Err((
                codes::INVALID_REQUEST,
                format!(
                    "{} is {kind}, not a regular file: koas works on regular files only",
                    path.display()
                ),
            ));
        }
        let buffer = doc.text.as_str().to_string();
        match p.command.as_str() {
            "koas.check" => {
                self.check_now(&uri);
                Ok(Some(Value::Null))
            }
            "koas.fixAll" => {
                let findings = self.current_findings(&uri).unwrap_or_default();
                let fixed = self.fixed_text(&uri, findings);
                let Some(doc) = self.docs.get(&uri) else {
                    return Ok(Some(Value::Null));
                };
                let applied = fixed.as_ref().map_or(0, |(_, n)| *n);
                if let Some((text, _)) = fixed {
                    let edit = json!({"changes": {uri.clone(): [{"range": doc.text.full_range(), "newText": text}]}});
                    self.apply_edit("koas: fix all", edit);
                }
                Ok(Some(json!({"applied": applied})))
            }
            words::ADD_WORD => {
                let word = p.arguments.get(1).and_then(Value::as_str).ok_or((
                    codes::INVALID_PARAMS,
                    format!("{}: give the word after the URI", words::ADD_WORD),
                ))?;
                let word = words::valid_word(word)
                    .map_err(|e| (codes::INVALID_PARAMS, format!("{}: {e}", words::ADD_WORD)))?
                    .to_string();
                let root = self.root_for(Some(&path));
                let events = self.events.clone();
                let request = id.clone();
                // Off the main loop: it reads koas.toml and writes (and
                // fsyncs) a file of the project.
                self.spawn_command("koas-lsp-add-word", move || {
                    let result = words::of_document(&path, root.as_deref())
                        .and_then(|file| {
                            file.ok_or_else(|| {
                                "no koas.toml above the document and no workspace folder holding it: nowhere to keep the project's words".to_string()
                            })
                        })
                        .and_then(|file| {
                            words::add_word(&file, &word).map(|added| (added, file.path()))
                        });
                    let _ = events.send(Event::WordAdded {
                        id: request,
                        word,
                        result,
                    });
                })?;
                Ok(None)
            }
            "koas.revert" => {
                let ids: Vec<String> = p.arguments[1..]
                    .iter()
                    .flat_map(|a| match a {
                        Value::Array(items) => items
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect(),
                        Value::String(s) => vec![s.clone()],
                        _ => Vec::new(),
                    })
                    .collect();
                if ids.is_empty() {
                    return Err((
                        codes::INVALID_PARAMS,
                        "koas.revert: give the change IDs after the URI (\"RVW-0001\")".into(),
                    ));
                }
                let mut revert = RevertRequest::new(RevertChanges::Listed(ids));
                revert.in_place = true;
                let global = self.settings.global.clone();
                let events = self.events.clone();
                let request = id.clone();
                self.spawn_command("koas-lsp-revert", move || {
                    let result = saved_is(&path, &buffer, "reverting a change").and_then(|()| {
                        let control = Control::new(Arc::default(), None);
                        let failed = |e: ApiError| (codes::INTERNAL_ERROR, format!("{e:#}"));
                        let session =
                            Session::open(&global, &control, &path, None).map_err(failed)?;
                        let reverted = session.revert(&revert).map_err(failed)?;
                        Ok(reverted.to_json(session.workspace()))
                    });
                    let now = result.is_ok().then(|| read_saved(&path).ok()).flatten();
                    let _ = events.send(Event::CommandDone {
                        id: request,
                        token: None,
                        uri,
                        result,
                        now,
                    });
                })?;
                Ok(None)
            }
            "koas.review" => {
                let options = p.arguments.get(1).cloned().unwrap_or(Value::Null);
                let mut review = ReviewRequest {
                    in_place: true,
                    whole_json: true,
                    ..ReviewRequest::default()
                };
                review.no_llm = options
                    .get("noLlm")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                if let Some(model) = options.get("model").and_then(Value::as_str) {
                    review.llm.model = Some(model.to_string());
                }
                if let Some(backend) = options.get("backend").and_then(Value::as_str) {
                    review.llm.backend = Some(backend.to_string());
                }
                if let Some(endpoint) = options.get("endpoint").and_then(Value::as_str) {
                    review.llm.endpoints = vec![endpoint.to_string()];
                }
                let token = format!("koas-review-{}", self.next_request);
                self.next_request += 1;
                let cancel = Arc::new(AtomicBool::new(false));
                self.reviews.insert(
                    token.clone(),
                    RunningReview {
                        cancel: cancel.clone(),
                        request: id.clone(),
                        started: false,
                    },
                );
                let events = self.events.clone();
                let global = self.settings.global.clone();
                let request = id.clone();
                let progress_events = self.events.clone();
                let progress_token = token.clone();
                let observer: koas_orchestrator::embed::Observer =
                    Arc::new(move |step: &Progress<'_>| {
                        let _ = progress_events.send(Event::ReviewProgress {
                            token: progress_token.clone(),
                            message: step.message(),
                        });
                    });
                self.spawn_command("koas-lsp-review", move || {
                    let result = saved_is(&path, &buffer, "reviewing it").and_then(|()| {
                        let _ = events.send(Event::ReviewStarted {
                            token: token.clone(),
                            path: path.clone(),
                        });
                        let control = Control::new(cancel, Some(observer));
                        Session::open(&global, &control, &path, None)
                            .and_then(|session| session.review(&review))
                            .map(|reviewed| reviewed.to_json())
                            .map_err(|e| (codes::INTERNAL_ERROR, format!("{e:#}")))
                    });
                    let now = result.is_ok().then(|| read_saved(&path).ok()).flatten();
                    let _ = events.send(Event::CommandDone {
                        id: request,
                        token: Some(token),
                        uri,
                        result,
                        now,
                    });
                })?;
                Ok(None)
            }
            other => Err((
                codes::INVALID_PARAMS,
                format!("unknown command {other} (known: {})", COMMANDS.join(", ")),
            )),
        }
    }

    fn spawn_command(
        &self,
        name: &str,
        work: impl FnOnce() + Send + 'static,
    ) -> Result<(), (i64, String)> {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(work)
            .map(drop)
            .map_err(|e| (codes::INTERNAL_ERROR, e.to_string()))
    }

    /// A review read its document: its progress begins.
    fn review_started(&mut self, token: &str, path: &Path) {
        let Some(review) = self.reviews.get_mut(token) else {
            return;
        };
        review.started = true;
        if self.work_done_progress {
            let request_id = json!(format!("koas-{}", self.next_request));
            self.next_request += 1;
            let create = transport::request(
                &request_id,
                "window/workDoneProgress/create",
                json!({"token": token}),
            );
            self.send(&create);
        }
        self.progress(
            token,
            json!({"kind": "begin", "title": "koas review", "cancellable": true, "message": path.display().to_string()}),
        );
    }

    /// A command's thread finished: its progress ends, the request is
    /// answered, and the editor is offered the file as the command left it.
    fn command_done(
        &mut self,
        id: Value,
        token: Option<String>,
        uri: &str,
        result: Result<Value, (i64, String)>,
        now: Option<String>,
    ) {
        if let Some(token) = token {
            if self.reviews.remove(&token).is_some_and(|r| r.started) {
                self.progress(
                    &token,
                    json!({"kind": "end", "message": match &result {
                        Ok(v) => v["summary"].as_str().unwrap_or("done").to_string(),
                        Err((_, e)) => e.clone(),
                    }}),
                );
            }
        }
        let answer = match result {
            Ok(value) => {
                if let Some(now) = now {
                    self.offer_workspace_text(uri, now);
                }
                transport::response(&id, value)
            }
            Err((code, message)) => transport::error_response(&id, code, &message),
        };
        self.send(&answer);
    }

    /// A `koas.addWord` finished: on success every open document is
    /// checked again with the new words (the checkers are rebuilt: their
    /// settings hold the words), and the editor's log says where the word
    /// went.
    fn word_added(&mut self, id: Value, word: &str, result: Result<(bool, PathBuf), String>) {
        let answer = match result {
            Ok((added, file)) => {
                self.checkers
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clear();
                for doc in self.docs.values_mut() {
                    doc.findings = None;
                }
                let open: Vec<String> = self.docs.keys().cloned().collect();
                for uri in open {
                    self.check_now(&uri);
                }
                let said = if added {
                    format!("koas: added “{word}” to {}", file.display())
                } else {
                    format!("koas: {} already lists “{word}”", file.display())
                };
                let log = transport::notification(
                    "window/logMessage",
                    json!({"type": 3, "message": said}),
                );
                self.send(&log);
                transport::response(
                    &id,
                    json!({"added": added, "file": file.display().to_string()}),
                )
            }
            Err(e) => transport::error_response(
                &id,
                codes::INVALID_REQUEST,
                &format!("{}: “{word}” not added: {e}", words::ADD_WORD),
            ),
        };
        self.send(&answer);
    }

    /// After a revert or a review rewrote the file: the editor is asked to
    /// show the file as it is now (the buffer was the saved file).
    fn offer_workspace_text(&mut self, uri: &str, now: String) {
        let Some(doc) = self.docs.get(uri) else {
            return;
        };
        if now == doc.text.as_str() {
            return;
        }
        let edit = json!({"changes": {uri: [{"range": doc.text.full_range(), "newText": now}]}});
        self.apply_edit("koas: the document as the review left it", edit);
    }

    fn apply_edit(&mut self, label: &str, edit: Value) {
        let id = json!(format!("koas-{}", self.next_request));
        self.next_request += 1;
        let message = transport::request(
            &id,
            "workspace/applyEdit",
            json!({"label": label, "edit": edit}),
        );
        self.send(&message);
    }

    fn progress(&mut self, token: &str, value: Value) {
        let message =
            transport::notification("$/progress", json!({"token": token, "value": value}));
        self.send(&message);
    }
}

/// `Ok` when the saved file is `buffer`: the review and revert work on
/// the saved file, so an unsaved buffer is refused.
fn saved_is(path: &Path, buffer: &str, doing: &str) -> Result<(), (i64, String)> {
    if read_saved(path)? == buffer {
        Ok(())
    } else {
        Err((
            codes::INVALID_REQUEST,
            format!("save the document before {doing}: the review works on the saved file"),
        ))
    }
}

/// The workspace folders of `initialize`'s params: `workspaceFolders`,
/// else `rootUri`, else `rootPath`; each as given and, when it differs,
/// resolved (a document's URI may name either).
fn workspace_roots(params: &Value) -> Vec<PathBuf> {
    let mut given: Vec<PathBuf> = params
        .get("workspaceFolders")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.get("uri").and_then(Value::as_str).and_then(uri_path))
        .collect();
    if given.is_empty() {
        let root = params
            .get("rootUri")
            .and_then(Value::as_str)
            .and_then(uri_path)
            .or_else(|| {
                params
                    .get("rootPath")
                    .and_then(Value::as_str)
                    .map(PathBuf::from)
                    .filter(|p| p.is_absolute())
            });
        given.extend(root);
    }
    let mut roots = Vec::new();
    for root in given {
        let resolved = std::fs::canonicalize(&root).ok();
        for r in std::iter::once(root).chain(resolved) {
            if !roots.contains(&r) {
                roots.push(r);
            }
        }
    }
    roots
}

fn token_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn overlaps(a: Range, b: Range) -> bool {
    let before = |x: Position, y: Position| (x.line, x.character) < (y.line, y.character);
    !before(a.end, b.start) && !before(b.end, a.start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_folders_then_root_uri_then_root_path() {
        let folders = json!({"workspaceFolders": [{"uri": "file:///nowhere/a", "name": "a"}],
                             "rootUri": "file:///nowhere/b"});
        assert_eq!(workspace_roots(&folders), vec![PathBuf::from("/nowhere/a")]);
        let root = json!({"workspaceFolders": null, "rootUri": "file:///nowhere/b"});
        assert_eq!(workspace_roots(&root), vec![PathBuf::from("/nowhere/b")]);
        let path = json!({"rootPath": "/nowhere/c"});
        assert_eq!(workspace_roots(&path), vec![PathBuf::from("/nowhere/c")]);
        assert!(workspace_roots(&json!({"rootPath": "relative"})).is_empty());
    }

    /// Without koas.toml the workspace folder's words apply, and a change
    /// of that file rebuilds the cached checker.
    #[test]
    fn the_workspace_words_reach_the_checker_and_their_change_rebuilds_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        let doc = root.join("guide.md");
        let text = "# Notes\n\nThe team zorblets the cache every night.\n";
        let mut cache = CheckerCache::default();
        let misspelt = |cache: &mut CheckerCache| {
            checker_for(cache, Some(&doc), Some(&root))
                .expect("checker")
                .check(text)
                .expect("checked")
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::Misspelling)
        };
        assert!(misspelt(&mut cache));
        std::fs::write(
            root.join(koas_md_scan::config::DEFAULT_WORDS_FILE),
            "zorblets\n",
        )
        .expect("write");
        assert!(!misspelt(&mut cache));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            uri_path("file:///tmp/a%20b.md"),
            Some(PathBuf::from("/tmp/a b.md"))
        );
        assert_eq!(
            uri_path("file://localhost/x.md"),
            Some(PathBuf::from("/x.md"))
        );
        assert_eq!(uri_path("untitled:Untitled-1"), None);
        assert_eq!(uri_path("file:///tmp/%zz"), Some(PathBuf::from("/tmp/%zz")));
    }
}
