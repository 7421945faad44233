//! One module per command: its clap arguments and its `execute`.

pub mod check;
mod check_pipeline;
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

use crate::common::{on_workspace, Reply, ReviewTarget, WorkspaceArgs};
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

/// The library's way to run `command`: the answer is returned, not
/// printed.
pub(crate) fn run_on<A: OnWorkspace>(
    global: &HostOptions,
    control: &Control,
    args: &A,
    command: Command<A>,
) -> anyhow::Result<Reply> {
    command(global, control, args, &ReviewTarget::locate(args.target())?)
}
