//! What the review commands (`review`, `report`, `revert`, `show`, `grep`,
//! `status`) share: finding the document and its review workspace, the
//! actor and clock of ledger entries, exit codes and `--json` errors.

use anyhow::{bail, Context as _};
use clap::Args;
use koas_edit::clock::{Clock, SystemClock};
use koas_kernel_api::hash::sha256;
use koas_orchestrator::embed::ExitStatus;
use koas_orchestrator::outln;
use koas_review_schema::ledger::Actor;
use koas_review_workspace::{
    locate_workspace, BeginRequest, PreparedRun, RunKind, Workspace, WorkspaceError,
};
use std::path::{Path, PathBuf};

/// Exit codes of the review commands, shown in their `--help` (a macro so
/// that `concat!` can append it to each command's help text).
macro_rules! review_exit_codes {
    () => {
        "Exit codes:
  0    success (rejected ops are reported, they are not a failure)
  1    a kernel failed, or the request was refused: a revert that is not
       possible (already reverted, a revert, a flag, a conflict with a later
       change or with the document's content), an ID not in the ledger
  2    usage, document, ops file, pipeline or workspace error: the workspace
       is in use (the message names the holder), its ledger ends with a torn
       line (repair: koas status DOC --repair-ledger), no workspace yet
  130  interrupted with Ctrl-C (nothing half-written is left)"
    };
}
pub(crate) use review_exit_codes;

/// The exit code of a refused request (see `review_exit_codes!`).
pub const REFUSED: ExitStatus = ExitStatus::Failure;

/// The flags every review command has.
#[derive(Debug, Clone, Args)]
pub struct WorkspaceArgs {
    /// The Markdown document under review (the original, or the file an
    /// `--in-place` review replaced).
    #[arg(value_name = "DOC")]
    pub doc: PathBuf,

    /// The review workspace [default: .review/<stem>_<hash12> next to DOC,
    /// the hash being that of DOC's file name].
    #[arg(short, long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Print a JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,

    /// Refuse a document larger than this (e.g. 300M, 1G) [default:
    /// KOAS_MAX_DOC_SIZE, else 256M].
    #[arg(long, value_name = "SIZE")]
    pub max_doc_size: Option<String>,
}

impl WorkspaceArgs {
    /// `DOC` with every flag at its default.
    pub fn for_doc(doc: impl Into<PathBuf>) -> WorkspaceArgs {
        WorkspaceArgs {
            doc: doc.into(),
            workspace: None,
            json: false,
            max_doc_size: None,
        }
    }
}

/// The `--llm-*` flags of the review commands, which override the `[llm]`
/// tables: the runtime's own, so their help is that of `koas run`.
pub use koas_orchestrator::embed::LlmFlags;

/// What a review command answers, before anything is printed: the exit
/// status, the JSON object `--json` prints (`status`, `summary`,
/// `workspace`, `error` and the command's own fields) and the text it
/// prints otherwise. Messages meant for a person go to stderr as the
/// command runs; nothing reaches stdout until [`Reply::print`].
#[derive(Debug, Clone)]
pub struct Reply {
    /// The exit status.
    pub status: ExitStatus,
    /// The JSON answer.
    pub json: serde_json::Value,
    /// The text answer (may be empty).
    pub text: String,
}

impl Reply {
    /// An answer of status `status` whose text is `text`.
    pub fn new(status: ExitStatus, json: serde_json::Value, text: String) -> Reply {
        Reply { status, json, text }
    }

    /// A refusal or failure already told on stderr: `{"status": "error",
    /// "error": message, "workspace": …}` and no text.
    pub fn failed(status: ExitStatus, message: &str, workspace: &Path) -> Reply {
        Reply {
            status,
            json: serde_json::json!({
                "status": "error",
                "summary": first_line(message),
                "error": message,
                "workspace": workspace,
            }),
            text: String::new(),
        }
    }

    /// Prints the JSON answer (`json`) or the text on stdout.
    pub fn print(&self, json: bool) -> anyhow::Result<ExitStatus> {
        if json {
            print_json(&self.json)?;
        } else if !self.text.is_empty() {
            // The text quotes the document, the model and the ledger:
            // control characters are shown escaped, never obeyed.
            koas_orchestrator::out!(
                "{}",
                koas_kernel_api::terminal::escape_controls_keep_lines(&self.text)
            )?;
        }
        Ok(self.status)
    }
}

/// The first line of `message`, cut to 300 characters (summaries).
pub fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or("");
    if line.chars().count() <= 300 {
        line.to_owned()
    } else {
        let mut cut: String = line.chars().take(299).collect();
        cut.push('…');
        cut
    }
}

/// The review workspace of `doc` (which may not exist yet): the
/// automatic one next to the document.
pub fn workspace_of(doc: &Path) -> anyhow::Result<PathBuf> {
    Ok(ReviewTarget::of_doc(doc)?.root().to_path_buf())
}

/// The `--pipeline` value that means the built-in reviewer pipeline (and
/// makes a review forget the pipeline it was made with).
pub const BUILT_IN_PIPELINE: &str = "built-in";

/// A document and its review workspace.
pub struct ReviewTarget {
    /// The document as given.
    pub doc_path: PathBuf,
    /// Its text (UTF-8).
    pub text: String,
    /// Its file name (patch headers, ledger `doc`, report name).
    pub doc_name: String,
    /// Its workspace, which may not exist yet.
    pub workspace: Workspace,
    /// Its permission bits (of the link's target for a symbolic link).
    pub mode: Option<u32>,
    /// Workspaces of DOC under names an earlier koas gave them, left where
    /// they are (the one that was DOC's review was renamed to the
    /// workspace).
    pub others: Vec<PathBuf>,
    /// Its project file (`koas.toml`), checked.
    pub project: crate::project::ProjectFile,
    /// The size limit DOC was read with, which files given with it (an
    /// ops file) are read with too.
    pub max_doc_bytes: u64,
}

impl ReviewTarget {
    /// `doc` and the workspace beside it, with the default size limit.
    pub fn of_doc(doc: &Path) -> anyhow::Result<ReviewTarget> {
        ReviewTarget::locate(&WorkspaceArgs::for_doc(doc))
    }

    /// Reads DOC (a regular file of UTF-8 text, within the size limit) and
    /// finds its workspace: `-w`, or the automatic `.review/<stem>_<hash12>`
    /// named after DOC's file name (a workspace an earlier koas named after
    /// DOC's content is renamed to it, with a note on stderr).
    pub fn locate(args: &WorkspaceArgs) -> anyhow::Result<ReviewTarget> {
        let limit = crate::input::max_doc_bytes(args.max_doc_size.as_deref())?;
        let shown = format!("the document {}", args.doc.display());
        let bytes = crate::input::read_document_bytes(&args.doc, &shown, limit, false)?;
        let text = String::from_utf8(bytes).map_err(|e| {
            anyhow::anyhow!(
                "{} is not UTF-8 text (first bad byte at offset {})",
                args.doc.display(),
                e.utf8_error().valid_up_to()
            )
        })?;
        // Every review command reads koas.toml the same way: a misspelt
        // key fails `koas grep` as it fails `koas check`.
        let project = crate::project::ProjectFile::for_document(&args.doc)?;
        let doc_name = args
            .doc
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "doc.md".to_owned());
        let (root, others) = match &args.workspace {
            Some(dir) => (dir.clone(), Vec::new()),
            None => {
                let located = locate_workspace(&args.doc, &text);
                if let Some(from) = &located.migrated_from {
                    eprintln!(
                        "koas: the review workspace {} (named after an earlier version of {}) was renamed {}: workspaces are now named after the document's file name, so editing it keeps its review",
                        from.display(),
                        doc_name,
                        located.root.display()
                    );
                }
                (located.root, located.others)
            }
        };
        let mode = std::fs::metadata(&args.doc).ok().map(|m| {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                m.permissions().mode() & 0o777
            }
            #[cfg(not(unix))]
            {
                if m.permissions().readonly() {
                    0o444
                } else {
                    0o644
                }
            }
        });
        Ok(ReviewTarget {
            doc_path: args.doc.clone(),
            text,
            doc_name,
            workspace: Workspace::new(root),
            mode,
            others,
            project,
            max_doc_bytes: limit,
        })
    }

    /// For a command that writes the workspace: what it creates is made no
    /// more permissive than the document (the workspace holds copies of
    /// it), what earlier runs created is narrowed the same way, and the
    /// temporary files a killed `--in-place` left next to the document are
    /// removed.
    pub fn prepare_writes(&self) -> anyhow::Result<Vec<PathBuf>> {
        if let Some(mode) = self.mode {
            koas_orchestrator::fsio::restrict_new_files_to(mode);
            self.workspace
                .restrict_to(mode)
                .with_context(|| format!("workspace {}", self.root().display()))?;
        }
        let (dir, name) = self.in_place_target();
        Ok(koas_orchestrator::fsio::remove_stale_temp_files(
            &dir,
            name.as_deref(),
        ))
    }

    /// The folder and file name an `--in-place` write goes to (through a
    /// symbolic link, its target's).
    fn in_place_target(&self) -> (PathBuf, Option<String>) {
        let resolved =
            std::fs::canonicalize(&self.doc_path).unwrap_or_else(|_| self.doc_path.clone());
        let dir = resolved
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let name = resolved
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        (dir, name)
    }

    /// Temporary files a killed `--in-place` write left next to DOC.
    pub fn stale_doc_temp_files(&self) -> Vec<PathBuf> {
        let (dir, name) = self.in_place_target();
        koas_orchestrator::fsio::stale_temp_files(&dir, name.as_deref())
    }

    /// Fails unless the workspace was created by a review.
    pub fn require_workspace(&self) -> anyhow::Result<()> {
        let exists = self
            .workspace
            .meta()
            .with_context(|| format!("workspace {}", self.root().display()))?
            .is_some();
        if !exists {
            bail!(
                "no review workspace for {} (looked in {}); run `koas review {}` first, or give the workspace with -w",
                self.doc_path.display(),
                self.root().display(),
                self.doc_path.display()
            );
        }
        Ok(())
    }

    /// The workspace folder.
    pub fn root(&self) -> &Path {
        self.workspace.root()
    }

    /// True when the workspace exists and DOC is no version of it the
    /// review knows: DOC was edited outside koas since its last review.
    pub fn changed_outside(&self) -> anyhow::Result<bool> {
        Ok(self.workspace.meta()?.is_some() && !self.workspace.knows(&sha256(&self.text))?)
    }

    /// The file the review continues from: the workspace's current
    /// document once it has one, else DOC (a first review). Stage 1 and 2
    /// run on it, so findings describe the document as it is now.
    pub fn current_doc_path(&self) -> PathBuf {
        let edited = self
            .workspace
            .path(koas_review_workspace::paths::EDITED_DOC);
        if edited.is_file() {
            edited
        } else {
            self.doc_path.clone()
        }
    }

    /// The command that continues the review on DOC as it is now.
    pub fn rebase_command(&self) -> String {
        let mut command = format!("koas review {} --rebase", self.doc_path.display());
        if !self.others.is_empty()
            || self.root() != koas_review_workspace::auto_workspace_dir(&self.doc_path)
        {
            command.push_str(&format!(" -w {}", self.root().display()));
        }
        command
    }

    /// The error of an `--in-place` write that failed after the ledger was
    /// saved: what DOC lacks, that nothing is lost, and the command that
    /// writes it.
    pub fn not_written(&self, error: WorkspaceError) -> anyhow::Error {
        let missing = self
            .workspace
            .changes_missing_from(&sha256(&self.text))
            .ok()
            .flatten()
            .unwrap_or(0);
        let doc = self.doc_path.display();
        anyhow::anyhow!(
            "{doc} was not replaced: {error}\n  the ledger records {missing} change(s) that {doc} does not have yet: they are in the ledger and in {} (nothing is lost); `koas review {doc} --in-place` writes them once the write can succeed, and `koas status {doc}` shows the document behind its review until then",
            self.workspace
                .path(koas_review_workspace::paths::EDITED_DOC)
                .display()
        )
    }

    /// Starts a run of `kind` on the workspace, under its lock, for a
    /// command that writes: the output folders checked first, a refusal
    /// explained.
    /// The pipeline file a command on this workspace runs: `given`
    /// (`--pipeline`; `built-in` for the built-in one), else the one the
    /// review was made with, else the built-in one (`None`). A recorded
    /// file that is gone is an error: the report would silently lose its
    /// kernels' findings.
    pub fn pipeline_file(&self, given: Option<&Path>) -> anyhow::Result<Option<PathBuf>> {
        if let Some(given) = given {
            return Ok((given != Path::new(BUILT_IN_PIPELINE)).then(|| given.to_path_buf()));
        }
        match self.workspace.recorded_pipeline() {
            Some(file) if !file.is_file() => anyhow::bail!(
                "{}: the review was made with the pipeline {}, which is no longer there; pass --pipeline FILE (or --pipeline {BUILT_IN_PIPELINE})",
                self.doc_path.display(),
                file.display()
            ),
            recorded => Ok(recorded),
        }
    }

    pub fn begin_run(&self, kind: RunKind) -> anyhow::Result<PreparedRun<'_>> {
        self.prepare_writes()?;
        let command = command_line();
        self.workspace
            .begin(BeginRequest {
                doc_name: &self.doc_name,
                document: Some(&self.text),
                kind,
                command: &command,
                clock: clock(),
            })
            .map_err(|e| self.explain(e))
    }

    /// Turns a workspace error into the message a reviewer acts on: a
    /// document edited outside koas gets the exact command that continues
    /// the review on it.
    pub fn explain(&self, error: WorkspaceError) -> anyhow::Error {
        match error {
            WorkspaceError::DocumentMismatch { .. } => anyhow::anyhow!(
                "{error}\n  to continue the review on the new text, keeping the ledger:\n      {}\n  (each run of lines changed since koas last saw the file becomes a change of kind `external`, carried onto the review's current document, {}; a change whose lines were edited can then no longer be reverted on its own)",
                self.rebase_command(),
                self.workspace
                    .path(koas_review_workspace::paths::EDITED_DOC)
                    .display()
            ),
            other => anyhow::Error::new(other)
                .context(format!("review workspace {}", self.root().display())),
        }
    }
}

/// Who records ledger entries: this koas and the user running it.
pub fn actor() -> Actor {
    Actor {
        tool: format!("koas {}", env!("CARGO_PKG_VERSION")),
        operator: std::env::var("USER")
            .or_else(|_| std::env::var("USERNAME"))
            .unwrap_or_else(|_| "operator".to_owned()),
    }
}

/// The system clock (ledger timestamps, lock, report).
pub fn clock() -> &'static dyn Clock {
    &SystemClock
}

/// The command line, recorded in the workspace lock.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

/// Locates the workspace `args` name and runs `command` on it; with
/// `--json`, an error (locating included) is also printed as a JSON object.
pub fn on_workspace(
    args: &WorkspaceArgs,
    command: impl FnOnce(&ReviewTarget) -> anyhow::Result<ExitStatus>,
) -> anyhow::Result<ExitStatus> {
    let target = match ReviewTarget::locate(args) {
        Ok(t) => t,
        Err(e) => return json_errors(args.json, None, Err(e)),
    };
    let root = target.root().to_path_buf();
    json_errors(args.json, Some(&root), command(&target))
}

/// With `--json`, an error is also printed as `{"status": "error", …}` on
/// stdout so that scripts always get JSON; the error is still returned.
pub fn json_errors(
    json: bool,
    workspace: Option<&Path>,
    result: anyhow::Result<ExitStatus>,
) -> anyhow::Result<ExitStatus> {
    match result {
        Err(e) if json => {
            let mut message = e.to_string();
            for cause in e.chain().skip(1) {
                let cause = cause.to_string();
                if !message.contains(&cause) {
                    message.push_str(&format!(": {cause}"));
                }
            }
            outln!(
                "{}",
                serde_json::json!({
                    "status": "error",
                    "error": message,
                    "workspace": workspace,
                })
            )?;
            Err(e)
        }
        other => other,
    }
}

/// Prints a JSON value on stdout.
pub fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string_pretty(value)?)?;
    Ok(())
}
