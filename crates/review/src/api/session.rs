//! The session and its errors, which every operation uses.

use crate::common::{ReviewTarget, WorkspaceArgs};
use crate::passes::Control;
use koas_orchestrator::embed::{ExitStatus, HostOptions, Progress};
use koas_review_schema::refine::RefineEvent;
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One document's review, for the operations of this module.
pub struct Session<'a> {
    pub(super) global: &'a HostOptions,
    control: Cow<'a, Control>,
    sink: Option<Sink>,
    held: Held<'a>,
}

/// What an operation tells while it works, for whoever watches it.
#[derive(Debug, Clone, Copy)]
pub enum Told<'a> {
    /// A step of one of its kernels (started, a count of steps, done,
    /// from the cache, failed), from the kernels' threads.
    Step(&'a Progress<'a>),
    /// A step of the refine loop, as `refine/events.jsonl` records it.
    Event(&'a RefineEvent),
    /// A line a person may not need (`--quiet` hides it).
    Info(&'a str),
    /// A line a person should see (a judge whose answer was unusable, a
    /// record that could not be kept).
    Warning(&'a str),
}

/// The one place a session's operations tell what they do: every
/// kernel's steps, the refine loop's events, the lines for a person.
pub type Sink = Arc<dyn Fn(Told<'_>) + Send + Sync>;

/// The located document: the session's own, or the caller's.
enum Held<'a> {
    Owned(Box<ReviewTarget>),
    Borrowed(&'a ReviewTarget),
}

impl<'a> Session<'a> {
    /// The review of `doc` (its workspace: `workspace`, else the one
    /// beside it), run with `global` and stopped by `control`.
    pub fn open(
        global: &'a HostOptions,
        control: &'a Control,
        doc: &Path,
        workspace: Option<&Path>,
    ) -> Result<Session<'a>, ApiError> {
        let mut args = WorkspaceArgs::for_doc(doc);
        args.workspace = workspace.map(Path::to_path_buf);
        Ok(Session {
            global,
            control: Cow::Borrowed(control),
            sink: None,
            held: Held::Owned(Box::new(ReviewTarget::locate(&args)?)),
        })
    }

    /// A session over a document the command line already located.
    pub(crate) fn on(
        global: &'a HostOptions,
        control: &'a Control,
        target: &'a ReviewTarget,
    ) -> Self {
        Session {
            global,
            control: Cow::Borrowed(control),
            sink: None,
            held: Held::Borrowed(target),
        }
    }

    /// Tells `sink` what the session's operations do: each kernel's steps
    /// (besides what the control's own observer is told), the refine
    /// loop's events, the lines for a person.
    pub fn told(mut self, sink: Sink) -> Self {
        let mut control = self.control.into_owned();
        let before = control.observer.take();
        let steps = sink.clone();
        control.observer = Some(Arc::new(move |step: &Progress<'_>| {
            if let Some(before) = &before {
                before(step);
            }
            steps(Told::Step(step));
        }));
        self.control = Cow::Owned(control);
        self.sink = Some(sink);
        self
    }

    /// How the session's runs are stopped and watched.
    pub(crate) fn control(&self) -> &Control {
        &self.control
    }

    /// Tells the session's sink, if it has one.
    pub(crate) fn tell(&self, told: Told<'_>) {
        if let Some(sink) = &self.sink {
            sink(told);
        }
    }

    /// The session's sink, for work that tells it from elsewhere.
    pub(crate) fn sink(&self) -> Option<Sink> {
        self.sink.clone()
    }

    pub(crate) fn target(&self) -> &ReviewTarget {
        match &self.held {
            Held::Owned(t) => t,
            Held::Borrowed(t) => t,
        }
    }

    /// The view pass (the report, the annotated document) on `run`; a
    /// failure is worded by `say`, `partial` when `run` recorded something.
    pub(crate) fn views(
        &self,
        pipeline: &koas_orchestrator::pipeline::Pipeline,
        discovery: &koas_orchestrator::discovery::Discovery,
        run: &koas_review_workspace::PreparedRun<'_>,
        say: impl Fn(&str) -> String,
        partial: bool,
    ) -> Result<crate::passes::Views, ApiError> {
        crate::passes::run_views(
            self.global,
            &self.control,
            pipeline,
            discovery,
            run,
            None,
            &self.target().project,
        )
        .map_err(|failure| stopped_by(failure, say, partial))
    }

    /// The review workspace's folder.
    pub fn workspace(&self) -> &Path {
        self.target().root()
    }

    /// The document as its file is named.
    pub fn doc_name(&self) -> &str {
        &self.target().doc_name
    }

    /// The document's path.
    pub fn doc_path(&self) -> &Path {
        &self.target().doc_path
    }
}

/// Why an operation did not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request was refused and nothing was changed (a change reverted
    /// twice, a conflict, a kernel that refused its input).
    #[error("{reason}")]
    Refused {
        /// Why, in words a person acts on.
        reason: String,
    },
    /// What the request names is not there (an entry not in the ledger).
    #[error("{message}")]
    NotFound {
        /// What is missing, and where to look.
        message: String,
    },
    /// The run stopped before it was done: interrupted, or a kernel
    /// failed. `partial`: what was recorded before stays recorded.
    #[error("{message}")]
    Stopped {
        /// How a command line should exit.
        status: ExitStatus,
        /// What happened, and what was kept.
        message: String,
        /// Some of the work was recorded.
        partial: bool,
    },
    /// Anything else: a workspace that cannot be read or written, a
    /// document that is not there.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl From<serde_json::Error> for ApiError {
    /// An artifact that does not (de)serialize: a defect, not a refusal.
    fn from(e: serde_json::Error) -> Self {
        ApiError::Other(e.into())
    }
}

/// A pass that did not finish, as an error: `say` words its message (the
/// kernel's, or "interrupted"); `partial`: what was recorded before stays.
pub(crate) fn stopped_by(
    failure: crate::passes::RunFailure,
    say: impl Fn(&str) -> String,
    partial: bool,
) -> ApiError {
    let (status, message) = match failure {
        crate::passes::RunFailure::Kernel(message) => (crate::common::REFUSED, say(&message)),
        crate::passes::RunFailure::Interrupted => (ExitStatus::Interrupted, say("interrupted")),
    };
    ApiError::Stopped {
        status,
        message,
        partial,
    }
}

/// What a front end tells of the workspace, when an operation names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The report, when the views were refreshed.
    pub report: Option<PathBuf>,
    /// DOC was replaced: `Some(true)` when not asked for, because the
    /// review writes DOC (its last review was `--in-place`).
    pub doc_replaced: Option<bool>,
}
