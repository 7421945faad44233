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

use crate::convert::diagnostic;
use crate::review::{self, Placement};
use crate::text::Text;
use crate::transport::{self, codes, Incoming};
use crate::words::{self};
use koas_md_scan::Checker;
use koas_orchestrator::embed::HostOptions;
use koas_review::input::{max_doc_bytes, read_document_bytes};
use koas_review_schema::findings::Finding;
use lsp_types::{
    CodeActionParams, CodeLensParams, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DidSaveTextDocumentParams, ExecuteCommandParams, HoverParams,
    Position, Range, Uri,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

mod actions;
mod check;
mod commands;

use check::{check_loop, Checked, Job, Pool};
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
/// else the workspace folder whose `koas-words.txt` it reads and the
/// `.vale.ini` found upward from the document.
type CheckerKey = (Option<PathBuf>, Option<PathBuf>, Option<PathBuf>);

/// The files a checker was built from, with their modification times then
/// (`None`: missing).
type Stamps = Vec<(PathBuf, Option<SystemTime>)>;

/// The compiled checkers, by where their settings come from.
type CheckerCache = HashMap<CheckerKey, (Stamps, Arc<Checker>)>;

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
    use super::check::checker_for;
    use super::*;
    use koas_review_schema::findings::FindingKind;

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
