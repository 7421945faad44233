//! One module per command: its clap arguments and its `execute`.

pub mod check;
pub mod dismiss;
pub mod grep;
pub mod llm_eval;
pub mod new;
pub mod refine;
pub mod report;
pub mod revert;
pub mod review;
mod set;
pub mod show;
pub mod status;

use crate::common::{on_workspace, Reply, ReviewTarget, WorkspaceArgs, REFUSED};
use crate::passes::Control;
use koas_orchestrator::embed::{ExitStatus, HostOptions};

/// A command's arguments that name a document's review workspace.
pub(crate) trait OnWorkspace {
    /// The document and workspace flags.
    fn target(&self) -> &WorkspaceArgs;
}

/// A command's work on a located workspace: it answers, the caller prints.
pub(crate) type Command<A> = fn(&HostOptions, &Control, &A, &ReviewTarget) -> anyhow::Result<Reply>;

/// The command line's way to run `command`: on the workspace of
/// `args`, stopped by Ctrl-C, its answer printed.
pub(crate) fn execute_on<A: OnWorkspace>(
    global: &HostOptions,
    args: &A,
    command: Command<A>,
) -> anyhow::Result<ExitStatus> {
    on_workspace(args.target(), |target| {
        command(global, &Control::ctrl_c(), args, target)?.print(args.target().json)
    })
}

/// A run that stopped before it was done, as the command line tells it:
/// the message on stderr, `{"status": "error" | "partial", …}` and the
/// exit status; any other error goes up to the binary.
pub(crate) fn stopped(
    error: crate::api::ApiError,
    workspace: &std::path::Path,
) -> anyhow::Result<Reply> {
    use crate::api::ApiError;
    match error {
        ApiError::Stopped {
            status,
            message,
            partial,
        } => {
            // A plugin or a model's server may have written the message.
            let shown = koas_kernel_api::terminal::escape_controls_keep_lines(&message);
            if status == koas_orchestrator::embed::ExitStatus::Interrupted {
                eprintln!("koas: {shown}");
            } else {
                eprintln!("error: {shown}");
            }
            let mut reply = Reply::failed(status, &message, workspace);
            if partial {
                reply.json["status"] = serde_json::json!("partial");
            }
            Ok(reply)
        }
        ApiError::Refused { reason } => {
            eprintln!("error: {reason}\n  (nothing was changed)");
            Ok(Reply::failed(REFUSED, &reason, workspace))
        }
        ApiError::NotFound { message } => {
            eprintln!("error: {message}");
            let mut reply = Reply::failed(REFUSED, &message, workspace);
            reply.json["status"] = serde_json::json!("not_found");
            Ok(reply)
        }
        ApiError::Other(e) => Err(e),
    }
}
