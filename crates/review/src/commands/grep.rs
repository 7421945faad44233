//! `koas grep [PATTERN] DOC -k KIND -s SEVERITY --silent B --reverts B`:
//! search a document's ledger, like grep: exit 0 when an entry matches,
//! 1 when none does, 2 on an error.

use crate::api::{GrepRequest, Session};
use crate::common::{on_workspace, Reply, ReviewTarget, WorkspaceArgs};
use crate::passes::Control;
use anyhow::bail;
use clap::Args;
use koas_edit::query::render_table;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_review_schema::ledger::LedgerEntry;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
#[command(after_help = "\
Every filter must match. PATTERN (a regular expression) is matched against
the entry's ID, summary and rationale; without it every entry passes the
pattern. Output: a header, then one line per entry in aligned columns: ID,
time, action, kind, severity, tier (silent / attention / revert, and
dismissed for a dismissed flag), summary.

Severities: the ledger uses the review words; -s accepts them and the
words of `koas check` and the reports, which name the same levels:
  koas check   ledger (grep, show)
  info         minor
  warning      attention, deletion (a removal)
  error        critical
A review word matches itself; a check word matches its level.

Examples:
  koas grep bandwidth spec.md               # a word in summaries or rationales
  koas grep spec.md -s attention            # no pattern: filters only
  koas grep spec.md -s error                # = -s critical
  koas grep 'RVW-00(1|2)' spec.md -k terminology
  koas grep spec.md --reverts true --json

The older order `koas grep DOC PATTERN` still works, with a warning.

Exit codes:
  0    at least one entry matches
  1    no entry matches
  2    usage, document or workspace error (no workspace yet, an invalid
       PATTERN or severity, a torn ledger is only a warning)
  130  interrupted with Ctrl-C")]
pub struct GrepArgs {
    /// `[PATTERN] DOC`: a regular expression (optional), then the Markdown
    /// document whose ledger is searched.
    #[arg(value_name = "[PATTERN] DOC", num_args = 1..=2, required = true)]
    pub positional: Vec<PathBuf>,

    /// The review workspace [default: the one koas finds for DOC].
    #[arg(short, long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Print a JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,

    /// Refuse a document larger than this (e.g. 300M, 1G) [default:
    /// KOAS_MAX_DOC_SIZE, else 256M].
    #[arg(long, value_name = "SIZE")]
    pub max_doc_size: Option<String>,

    /// Only this kind (e.g. typo, terminology, logic_flow).
    #[arg(short, long, value_name = "KIND")]
    pub kind: Option<String>,

    /// Only this severity: minor, attention, deletion, critical, or the
    /// `koas check` words info, warning, error (see below).
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
    /// The pattern and the document's arguments.
    fn split(&self) -> anyhow::Result<(Option<String>, WorkspaceArgs)> {
        let (pattern, doc) = pattern_and_doc(&self.positional)?;
        Ok((
            pattern,
            WorkspaceArgs {
                doc,
                workspace: self.workspace.clone(),
                json: self.json,
                max_doc_size: self.max_doc_size.clone(),
            },
        ))
    }
}

/// The pattern and the document of `[PATTERN] DOC`, accepting the older
/// `DOC PATTERN` order (with a warning) when only that reading names an
/// existing file.
fn pattern_and_doc(positional: &[PathBuf]) -> anyhow::Result<(Option<String>, PathBuf)> {
    let text = |p: &Path| p.to_string_lossy().into_owned();
    match positional {
        [doc] => Ok((None, doc.clone())),
        [first, second] => {
            if !second.is_file() && first.is_file() {
                eprintln!(
                    "warning: `koas grep DOC PATTERN` is deprecated; write `koas grep {} {}` (pattern first, like grep)",
                    shell_word(&text(second)),
                    shell_word(&text(first))
                );
                Ok((Some(text(second)), first.clone()))
            } else {
                Ok((Some(text(first)), second.clone()))
            }
        }
        _ => bail!("expected `koas grep [PATTERN] DOC`"),
    }
}

/// `word`, quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

pub fn execute(global: &HostOptions, args: GrepArgs) -> anyhow::Result<ExitStatus> {
    let (pattern, target) = args.split()?;
    on_workspace(&target, |t| {
        search(global, &args, pattern.as_deref(), t)?.print(args.json)
    })
}

fn search(
    global: &HostOptions,
    args: &GrepArgs,
    pattern: Option<&str>,
    target: &ReviewTarget,
) -> anyhow::Result<Reply> {
    let request = GrepRequest {
        pattern: pattern.map(str::to_owned),
        kind: args.kind.clone(),
        severity: args.severity.clone(),
        silent: args.silent,
        reverts: args.reverts,
    };
    let control = Control::ctrl_c();
    let found = match Session::on(global, &control, target).grep(&request) {
        Ok(found) => found,
        Err(e) => return super::stopped(e, target.root()),
    };
    let status = if found.entries.is_empty() {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    };
    let text = if found.entries.is_empty() {
        String::new()
    } else {
        let shown: Vec<&LedgerEntry> = found.entries.iter().collect();
        render_table(&shown, |e| {
            let flag = e.change_id().filter(|id| found.dismissed.contains(id));
            flag.map(|_| "dismissed".to_owned())
        })
    };
    if found.entries.is_empty() && !args.json {
        eprintln!(
            "koas grep: no entry matches ({} entries in the ledger)",
            found.in_ledger
        );
    }
    if let Some(torn) = found.torn_tail.as_ref().filter(|_| !args.json) {
        eprintln!(
            "warning: the ledger ends with a torn line at byte {} ({}); run `koas status {} --repair-ledger`",
            torn.offset,
            torn.reason,
            target.doc_path.display()
        );
    }
    Ok(Reply::new(status, found.to_json(target.root()), text))
}
