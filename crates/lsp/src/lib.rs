//! `koas lsp`: the findings of `koas check` in an editor, through the
//! Language Server Protocol on stdio.
//!
//! Diagnostics come from the same checker as `koas check` (the document's
//! `koas.toml` applied, `koas-disable` comments honoured), computed on the
//! editor's text, not the file on disk: on open, on save, and after typing
//! stops (`didChange`, debounced). Code actions apply the certain fixes
//! (`koas check --fix`) one by one or all at once, and insert a
//! `koas-disable-next-line` comment; a language finding (a misspelling,
//! a doubled word…) is shown on its word, with one quick fix per
//! suggestion and, for a misspelling, "add to the project's words"
//! ([`words`]). When the document has a review
//! workspace, hovering a changed line shows its change IDs, kind and
//! rationale, a code lens offers to revert it, and `workspace/executeCommand`
//! runs `koas.revert` and `koas.review` (with `$/progress`, cancellable).
//!
//! Whatever the editor sends, the server stays up: framing is read as
//! bytes with bounded headers and resynchronises after a bad frame
//! ([`transport`]), results are published only on the text they were
//! computed from, and the commands read files as `koas review` does
//! (regular files, size limit), off the main loop ([`server`]).
//!
//! The server is a host like `koas mcp`: it calls the reviewer's commands
//! as a library.

pub mod convert;
pub mod review;
pub mod server;
pub mod text;
pub mod transport;
pub mod words;

use clap::Args;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use std::io::BufReader;

/// `koas lsp` options.
#[derive(Debug, Args)]
#[command(after_help = "\
Speaks LSP on standard input and output (logs go to stderr). Editors start
it themselves; see the README's \"Editors\" section for Neovim, Helix and
VS Code.

Capabilities: diagnostics (open, save, and 150 ms after typing stops, on the
editor's text; documents checked in parallel, a newer edit superseding an
older check, a check over its budget reported instead of published), code actions (each certain fix, \"fix all in file\", \"disable
this kind on the next line\"; on a language finding one fix per
suggestion and \"add the word to the project's words\"), hover and code
lenses on reviewed lines, commands koas.revert, koas.review, koas.fixAll,
koas.check and koas.addWord.

Exit codes:
  0  the client sent shutdown, then exit
  1  the input ended, or exit came without shutdown
  2  the server could not start
")]
pub struct LspArgs {
    /// Accepted for clients that pass it; stdio is the only transport.
    #[arg(long)]
    pub stdio: bool,

    /// Milliseconds to wait after the last change before checking again.
    #[arg(long, value_name = "MS", default_value_t = server::DEBOUNCE.as_millis() as u64)]
    pub debounce_ms: u64,

    /// Milliseconds one check of a document may take; a slower check
    /// publishes no findings and says so in the editor's log.
    #[arg(long, value_name = "MS", default_value_t = server::CHECK_BUDGET.as_millis() as u64)]
    pub check_budget_ms: u64,

    /// How many documents are checked at once (default: 2 to 4, by cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub check_threads: Option<u16>,
}

/// Runs `koas lsp` on stdin/stdout.
pub fn execute(global: &HostOptions, args: LspArgs) -> anyhow::Result<ExitStatus> {
    let settings = server::Settings {
        global: global.clone(),
        docs_base: koas_review_schema::findings::REPOSITORY_URL.to_string(),
        debounce: std::time::Duration::from_millis(args.debounce_ms),
        check_budget: std::time::Duration::from_millis(args.check_budget_ms),
        check_threads: args
            .check_threads
            .map_or_else(server::default_check_threads, usize::from),
    };
    let input = BufReader::new(std::io::stdin());
    let output = std::io::stdout().lock();
    let clean = server::serve(input, output, settings)?;
    Ok(if clean {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
