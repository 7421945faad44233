//! `koas grep DOC [PATTERN] -k KIND -s SEVERITY --silent B --reverts B`:
//! search the ledger.

use crate::common::{on_workspace, review_exit_codes, Reply, ReviewTarget, WorkspaceArgs};
use anyhow::Context as _;
use clap::Args;
use koas_orchestrator::cli::{ExitStatus, Global};
use koas_review::query::{grep, render_line, GrepFilter};
use serde_json::json;
use std::fmt::Write as _;

#[derive(Debug, Args)]
#[command(after_help = concat!("\
Every filter must match. One line per entry: ID, time, action, kind,
severity, tier (silent / attention / revert), summary.

Examples:
  koas grep spec.md -s attention            # changes that need attention
  koas grep spec.md -k terminology          # terminology changes
  koas grep spec.md \"bandwidth\"             # a word in summaries or rationales
  koas grep spec.md --reverts true          # reverts only
  koas grep spec.md --silent false --json

", review_exit_codes!()))]
pub struct GrepArgs {
    #[command(flatten)]
    pub target: WorkspaceArgs,

    /// Regular expression matched against the ID, the summary and the
    /// rationale.
    #[arg(value_name = "PATTERN")]
    pub pattern: Option<String>,

    /// Only this kind (e.g. typo, terminology, logic_flow).
    #[arg(short, long, value_name = "KIND")]
    pub kind: Option<String>,

    /// Only this severity (minor, attention, deletion, critical).
    #[arg(short, long, value_name = "SEVERITY")]
    pub severity: Option<String>,

    /// Only silent (true) or non-silent (false) entries.
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub silent: Option<bool>,

    /// Only reverts (true) or only non-reverts (false).
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub reverts: Option<bool>,
}

impl GrepArgs {
    /// `koas grep DOC` (every entry).
    pub fn new(target: WorkspaceArgs) -> GrepArgs {
        GrepArgs {
            target,
            pattern: None,
            kind: None,
            severity: None,
            silent: None,
            reverts: None,
        }
    }
}

pub fn execute(_global: &Global, args: GrepArgs) -> anyhow::Result<ExitStatus> {
    on_workspace(&args.target, |target| {
        search(&args, target)?.print(args.target.json)
    })
}

/// `koas grep` as a library call: the answer is returned, not printed.
pub fn run(args: &GrepArgs) -> anyhow::Result<Reply> {
    search(args, &ReviewTarget::locate(&args.target)?)
}

fn search(args: &GrepArgs, target: &ReviewTarget) -> anyhow::Result<Reply> {
    target.require_workspace()?;
    let filter = GrepFilter::new(
        args.pattern.as_deref(),
        args.kind.as_deref(),
        args.severity.as_deref(),
        args.silent,
        args.reverts,
    )
    .with_context(|| {
        format!(
            "invalid PATTERN {:?}",
            args.pattern.as_deref().unwrap_or("")
        )
    })?;
    let ledger = target
        .workspace
        .ledger()
        .with_context(|| format!("review workspace {}", target.root().display()))?;
    let found = grep(ledger.entries(), &filter);
    let value = json!({
        "status": "completed",
        "summary": format!("{} of {} entries match", found.len(), ledger.entries().len()),
        "workspace": target.root(),
        "total": found.len(),
        "entries": found,
        "torn_tail": ledger.torn_tail(),
    });
    let mut text = String::new();
    for entry in &found {
        writeln!(text, "{}", render_line(entry))?;
    }
    if found.is_empty() && !args.target.json {
        eprintln!(
            "koas grep: no entry matches ({} entries in the ledger)",
            ledger.entries().len()
        );
    }
    if let Some(torn) = ledger.torn_tail().filter(|_| !args.target.json) {
        eprintln!(
            "warning: the ledger ends with a torn line at byte {} ({}); run `koas status {} --repair-ledger`",
            torn.offset,
            torn.reason,
            target.doc_path.display()
        );
    }
    Ok(Reply::new(ExitStatus::Success, value, text))
}
