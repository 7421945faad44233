//! # koas-mcp — `koas mcp`, the reviewer as an MCP server
//!
//! A Model Context Protocol server on stdio (the official Rust SDK,
//! `rmcp`) whose tools are the reviewer's commands as library calls:
//! `review_md_run`, `review_md_status`, `review_md_revert`,
//! `review_md_show_change`, `check_md`, `review_md_report`,
//! `review_md_grep` (see [`tools`]).
//!
//! - stdout carries the protocol and nothing else: the commands return
//!   their answers instead of printing them, logs go to stderr;
//! - a tool that fails answers a result with `isError`, never a crash;
//! - every path is resolved against the root (`--root`, default the
//!   working directory) and refused if it leads out ([`paths`]); on
//!   Linux the kernel also confines the whole server to the root, so a
//!   symbolic link swapped during a call cannot lead an open out
//!   ([`confine`]);
//! - sovereignty is the command line's: only the server's own
//!   `--no-strict-sovereign` lets a review reach a non-local model;
//! - a call runs on a blocking thread with its own cancel flag, set when
//!   the client cancels the request; the runtime's progress steps become
//!   progress notifications when the client asked for them.

pub mod confine;
pub mod frames;
pub mod paths;
pub mod tools;

use clap::Args;
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_orchestrator::embed::{Observer, Progress};
use koas_review::Control;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// `koas mcp` flags.
#[derive(Debug, Clone, Args)]
#[command(after_help = "\
Register it in an MCP client (Claude Desktop, Claude Code, editors) as a
stdio server, e.g. in claude_desktop_config.json:

  {\"mcpServers\": {\"koas\": {\"command\": \"koas\",
                             \"args\": [\"mcp\", \"--root\", \"/path/to/docs\"]}}}

or: claude mcp add koas -- koas mcp --root /path/to/docs

Tools: review_md_run, review_md_status, review_md_revert,
review_md_show_change, check_md, review_md_report, review_md_grep.
stdout carries the protocol; logs go to stderr.")]
pub struct McpArgs {
    /// The folder every path is resolved against; a path that leads out
    /// of it (`..`, an absolute path elsewhere, a symbolic link) is
    /// refused [default: the working directory].
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// Let reviews use a non-local model endpoint or the Anthropic
    /// backend (refused by default, as on the command line; a tool
    /// argument cannot allow it).
    #[arg(long = "no-strict-sovereign")]
    pub no_strict_sovereign: bool,

    /// Refuse to start unless the kernel confines the server to --root
    /// (Linux Landlock): without it, paths are still checked before use,
    /// but a symbolic link swapped during a call is not stopped.
    #[arg(long = "require-confinement")]
    pub require_confinement: bool,
}

/// Serves MCP on stdin/stdout until the client closes the connection.
pub fn execute(global: &HostOptions, args: McpArgs) -> anyhow::Result<ExitStatus> {
    let root_dir = match &args.root {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    let root = paths::Root::new(&root_dir)
        .map_err(|e| anyhow::anyhow!("--root {}: {e}", root_dir.display()))?;
    // Before any thread exists: threads started earlier would keep their
    // rights (the runtime's threads, the blocking pool, worker processes
    // all start after this).
    let kernel_dirs: Vec<PathBuf> = koas_orchestrator::embed::search_paths(global, &[])
        .into_iter()
        .map(|s| s.path)
        .collect();
    let confinement = confine::confine(
        root.dir(),
        &confine::read_only_paths(&kernel_dirs, root.dir()),
    );
    if args.require_confinement && !confinement.is_enforced() {
        anyhow::bail!(
            "--require-confinement: the server would not be confined to {}: {}",
            root.dir().display(),
            confinement.describe()
        );
    }
    let mut global = global.clone();
    // Progress lines on stderr would only be noise in a client's log;
    // the client gets progress notifications instead.
    global.quiet = true;
    let server = KoasServer {
        ctx: tools::Ctx {
            global,
            root,
            no_strict_sovereign: args.no_strict_sovereign,
        },
    };
    eprintln!(
        "koas mcp: serving {} tools on stdio, root {}{}",
        tools::TOOLS.len(),
        server.ctx.root.dir().display(),
        if args.no_strict_sovereign {
            " (strict sovereignty OFF)"
        } else {
            ""
        }
    );
    eprintln!("koas mcp: {}", confinement.describe());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        // stdin → the framing front → the library; the library's output
        // and the front's own answers → one writer → stdout.
        let (library_in, front_out) = tokio::io::duplex(1 << 20);
        let (library_out_reader, library_out) = tokio::io::duplex(1 << 20);
        let (lines, to_stdout) = tokio::sync::mpsc::unbounded_channel();
        let reader = tokio::spawn(frames::read_client(
            tokio::io::BufReader::new(tokio::io::stdin()),
            front_out,
            lines.clone(),
        ));
        let relay = tokio::spawn(frames::read_library(
            tokio::io::BufReader::new(library_out_reader),
            lines,
        ));
        let writer = tokio::spawn(frames::write_lines(tokio::io::stdout(), to_stdout));
        let served = async {
            let service = server
                .serve((library_in, library_out))
                .await
                .map_err(|e| anyhow::anyhow!("MCP handshake failed: {e}"))?;
            service
                .waiting()
                .await
                .map_err(|e| anyhow::anyhow!("MCP service stopped: {e}"))?;
            anyhow::Ok(())
        }
        .await;
        // Every answer already written reaches stdout before the end.
        reader.abort();
        let _ = relay.await;
        let _ = writer.await;
        served
    })?;
    // Blocking calls still running (a cancelled review finishing its
    // step) must not keep the process alive once the client is gone.
    runtime.shutdown_timeout(std::time::Duration::from_secs(10));
    eprintln!("koas mcp: the client closed the connection");
    Ok(ExitStatus::Success)
}

/// The server: the tools over one root.
#[derive(Clone)]
pub struct KoasServer {
    ctx: tools::Ctx,
}

impl KoasServer {
    /// A server over `ctx`.
    pub fn new(ctx: tools::Ctx) -> KoasServer {
        KoasServer { ctx }
    }
}

/// The MCP description of a tool.
fn describe(tool: &tools::Tool) -> Tool {
    let annotations = ToolAnnotations::new()
        .read_only(!tool.writes)
        .destructive(false)
        .idempotent(!tool.writes)
        .open_world(tool.long);
    Tool::new(tool.name, tool.description, (tool.schema)()).with_annotations(annotations)
}

impl ServerHandler for KoasServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("koas", env!("CARGO_PKG_VERSION")).with_title("koas reviewer"),
            )
            .with_instructions(
                "Traceable, reversible review of Markdown documents. Paths are relative to the \
                 server's root. check_md lists problems without touching the document; review_md_run \
                 records changes (from the `ops` you give, or a configured model) as RVW-NNNN \
                 ledger entries in the document's .review/ workspace, never touching the \
                 document itself; review_md_status, review_md_grep and review_md_show_change \
                 read that ledger; review_md_revert undoes changes; review_md_report returns the \
                 report. Every answer has status (completed, error, not_found, partial), \
                 summary, workspace, and error on failure.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            tools::TOOLS.iter().map(describe).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::find(name).map(describe)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        // An unknown tool is a request that cannot be routed: a protocol
        // error. Everything after this is a tool result.
        let Some(tool) = tools::find(&name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}"),
                None,
            ));
        };
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        eprintln!("koas mcp: {name}: called");

        // Cancellation: the request's token sets the runs' flag.
        let cancel = Arc::new(AtomicBool::new(false));
        let watcher = {
            let ct = context.ct.clone();
            let flag = cancel.clone();
            let name = name.clone();
            tokio::spawn(async move {
                ct.cancelled().await;
                eprintln!(
                    "koas mcp: {name}: cancelled by the client; stopping after the current step"
                );
                flag.store(true, Ordering::SeqCst);
            })
        };

        // Progress: the runtime's steps, relayed in order by one task.
        let mut forwarder = None;
        let observer: Option<Observer> = match context.meta.get_progress_token() {
            Some(token) => {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
                let peer = context.peer.clone();
                forwarder = Some(tokio::spawn(async move {
                    let mut count = 0u32;
                    while let Some(message) = rx.recv().await {
                        count += 1;
                        let param = ProgressNotificationParam::new(token.clone(), f64::from(count))
                            .with_message(message);
                        if peer.notify_progress(param).await.is_err() {
                            break;
                        }
                    }
                }));
                let _ = tx.send(format!("{name}: started"));
                Some(Arc::new(move |step: &Progress<'_>| {
                    let _ = tx.send(step.message());
                }))
            }
            None => None,
        };
        let control = Control::new(cancel, observer);
        let ctx = self.ctx.clone();
        let joined =
            tokio::task::spawn_blocking(move || tool.call(&ctx, arguments, &control)).await;
        watcher.abort();
        // The observer was dropped with the call: the forwarder ends once
        // it has sent every step, before the result.
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        let answer = joined.unwrap_or_else(|e| {
            tools::Answer::failure(
                "error",
                &format!("the tool {name} failed unexpectedly: {e}"),
                None,
            )
        });
        // The summary may quote a document's name or a kernel's message.
        eprintln!(
            "koas mcp: {name}: {} ({})",
            answer.value["status"].as_str().unwrap_or("?"),
            koas_orchestrator::embed::escape_controls(
                answer.value["summary"].as_str().unwrap_or("")
            )
        );
        let result = if answer.is_error {
            CallToolResult::structured_error(answer.value)
        } else {
            CallToolResult::structured(answer.value)
        };
        Ok(result.into())
    }
}
