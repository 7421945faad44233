//! `workspace/executeCommand`: checks and fixes on the main loop; a word
//! added, a revert and a review on threads of their own, answered when
//! they are done.

use super::check::not_regular;
use super::{read_saved, Event, RunningReview, Server, COMMANDS};
use crate::transport::{self, codes};
use crate::words;
use koas_orchestrator::embed::Control;

use koas_review::api::{
    ApiError, RevertChanges, RevertRequest, ReviewRequest, Session, Sink, Told,
};
use lsp_types::ExecuteCommandParams;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, PoisonError};

impl<W: Write> Server<W> {
    pub(super) fn execute_command(
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
            "koas.fixAll" => Ok(Some(self.fix_all(&uri))),
            words::ADD_WORD => self.add_word(id, &p.arguments, path),
            "koas.revert" => self.revert(id, &p.arguments, Saved { uri, path, buffer }),
            "koas.review" => self.review(id, &p.arguments, Saved { uri, path, buffer }),
            other => Err((
                codes::INVALID_PARAMS,
                format!("unknown command {other} (known: {})", COMMANDS.join(", ")),
            )),
        }
    }

    /// `koas.fixAll`: the certain fixes of the open text, as one edit the
    /// client is asked to apply; answers how many applied.
    fn fix_all(&mut self, uri: &str) -> Value {
        let findings = self.current_findings(uri).unwrap_or_default();
        let fixed = self.fixed_text(uri, findings);
        let Some(doc) = self.docs.get(uri) else {
            return Value::Null;
        };
        let applied = fixed.as_ref().map_or(0, |(_, n)| *n);
        if let Some((text, _)) = fixed {
            let edit =
                json!({"changes": {uri: [{"range": doc.text.full_range(), "newText": text}]}});
            self.apply_edit("koas: fix all", edit);
        }
        json!({"applied": applied})
    }

    /// `koas.addWord`: the word after the URI goes to the project's words
    /// file, on a thread of its own; answered when it is written.
    fn add_word(
        &mut self,
        id: &Value,
        arguments: &[Value],
        path: PathBuf,
    ) -> Result<Option<Value>, (i64, String)> {
        let word = arguments.get(1).and_then(Value::as_str).ok_or((
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

    /// `koas.revert`: the change IDs after the URI reverted through the
    /// review API, the saved file replaced; answered when it is done.
    fn revert(
        &mut self,
        id: &Value,
        arguments: &[Value],
        doc: Saved,
    ) -> Result<Option<Value>, (i64, String)> {
        let Saved { uri, path, buffer } = doc;
        let ids: Vec<String> = arguments[1..]
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
                let session = Session::open(&global, &control, &path, None).map_err(failed)?;
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

    /// `koas.review`: the saved document reviewed in place through the
    /// review API, its kernels' steps sent as work-done progress; answered
    /// when it is done, cancellable meanwhile.
    fn review(
        &mut self,
        id: &Value,
        arguments: &[Value],
        doc: Saved,
    ) -> Result<Option<Value>, (i64, String)> {
        let Saved { uri, path, buffer } = doc;
        let options = arguments.get(1).cloned().unwrap_or(Value::Null);
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
        // The review's kernels' steps, as work-done progress.
        let sink: Sink = Arc::new(move |told: Told<'_>| {
            if let Told::Step(step) = told {
                let _ = progress_events.send(Event::ReviewProgress {
                    token: progress_token.clone(),
                    message: step.message(),
                });
            }
        });
        self.spawn_command("koas-lsp-review", move || {
            let result = saved_is(&path, &buffer, "reviewing it").and_then(|()| {
                let _ = events.send(Event::ReviewStarted {
                    token: token.clone(),
                    path: path.clone(),
                });
                let control = Control::new(cancel, None);
                Session::open(&global, &control, &path, None)
                    .and_then(|session| session.told(sink).review(&review))
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
    pub(super) fn review_started(&mut self, token: &str, path: &Path) {
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
    pub(super) fn command_done(
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
    pub(super) fn word_added(
        &mut self,
        id: Value,
        word: &str,
        result: Result<(bool, PathBuf), String>,
    ) {
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
    pub(super) fn offer_workspace_text(&mut self, uri: &str, now: String) {
        let Some(doc) = self.docs.get(uri) else {
            return;
        };
        if now == doc.text.as_str() {
            return;
        }
        let edit = json!({"changes": {uri: [{"range": doc.text.full_range(), "newText": now}]}});
        self.apply_edit("koas: the document as the review left it", edit);
    }

    pub(super) fn apply_edit(&mut self, label: &str, edit: Value) {
        let id = json!(format!("koas-{}", self.next_request));
        self.next_request += 1;
        let message = transport::request(
            &id,
            "workspace/applyEdit",
            json!({"label": label, "edit": edit}),
        );
        self.send(&message);
    }

    pub(super) fn progress(&mut self, token: &str, value: Value) {
        let message =
            transport::notification("$/progress", json!({"token": token, "value": value}));
        self.send(&message);
    }
}

/// The document a command works on: its URI, its file, and the editor's
/// text, which must be what the file holds when the command reads it.
struct Saved {
    uri: String,
    path: PathBuf,
    buffer: String,
}

/// `Ok` when the saved file is `buffer`: the review and revert work on
/// the saved file, so an unsaved buffer is refused.
pub(super) fn saved_is(path: &Path, buffer: &str, doing: &str) -> Result<(), (i64, String)> {
    if read_saved(path)? == buffer {
        Ok(())
    } else {
        Err((
            codes::INVALID_REQUEST,
            format!("save the document before {doing}: the review works on the saved file"),
        ))
    }
}
