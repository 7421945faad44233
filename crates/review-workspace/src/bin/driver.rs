//! `koas-review-driver`: a minimal command line over the engine's on-disk
//! workspace, used by the crash tests (which kill it at random moments)
//! and handy for scripted use. The user-facing CLI is `koas`.
//!
//! ```text
//! koas-review-driver review <workspace> <doc.md> <ops.json> [--strict]
//! koas-review-driver revert <workspace> <RVW-NNNN>...
//! koas-review-driver repair <workspace>
//! koas-review-driver status <workspace>
//! ```
//! Protected regions are read from `<doc.md>.protected.json` when present.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use koas_edit::clock::SystemClock;
use koas_edit::edit_op::parse_ops_file;
use koas_edit::revert::parse_revert_targets;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::ledger::Actor;
use koas_review_schema::stage1::ProtectedSpans;
use koas_review_workspace::{RevertRunRequest, ReviewRequest, Workspace};

fn actor() -> Actor {
    Actor {
        tool: format!("koas-review-driver {}", koas_edit::VERSION),
        operator: std::env::var("USER").unwrap_or_else(|_| "operator".into()),
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn run(args: &[String]) -> Result<String, String> {
    let command = args.join(" ");
    let clock = SystemClock;
    match args {
        [verb, ws, doc, ops, rest @ ..] if verb == "review" => {
            let ws = Workspace::new(ws);
            let doc_path = PathBuf::from(doc);
            let text = read(&doc_path)?;
            let ops = parse_ops_file(&read(Path::new(ops))?).map_err(|e| e.to_string())?;
            let protected_path = PathBuf::from(format!("{doc}.protected.json"));
            let protected: ProtectedSpans = match std::fs::read_to_string(&protected_path) {
                Ok(json) => serde_json::from_str(&json).map_err(|e| format!("{}: {e}", protected_path.display()))?,
                Err(_) => ProtectedSpans::default(),
            };
            let options = ApplyOptions {
                strict: rest.iter().any(|a| a == "--strict"),
                ..ApplyOptions::default()
            };
            let name = doc_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let out = ws
                .review(ReviewRequest {
                    doc_name: &name,
                    document: &text,
                    ops: &ops,
                    origin: koas_review_schema::apply::OpOrigin::Person,
                    protected: &protected,
                    options: &options,
                    actor: &actor(),
                    command: &command,
                    clock: &clock,
                    in_place: None,
                })
                .map_err(|e| e.to_string())?;
            Ok(format!("applied {} rejected {}", out.batch.applied.len(), out.batch.rejected.len()))
        }
        [verb, ws, ids @ ..] if verb == "revert" && !ids.is_empty() => {
            let ws = Workspace::new(ws);
            let ids = parse_revert_targets(ids).map_err(|e| e.to_string())?;
            let out = ws
                .revert(RevertRunRequest {
                    ids: &ids,
                    rationale: "driver",
                    actor: &actor(),
                    command: &command,
                    clock: &clock,
                    options: &ApplyOptions::default(),
                    in_place: None,
                })
                .map_err(|e| e.to_string())?;
            Ok(format!("reverted {}", out.entries.len()))
        }
        [verb, ws] if verb == "repair" => {
            let side = Workspace::new(ws).repair_ledger(&command, &clock).map_err(|e| e.to_string())?;
            Ok(match side {
                Some(path) => format!("torn tail moved to {}", path.display()),
                None => "nothing to repair".into(),
            })
        }
        [verb, ws] if verb == "status" => {
            let status = Workspace::new(ws).status().map_err(|e| e.to_string())?;
            serde_json::to_string_pretty(&status).map_err(|e| e.to_string())
        }
        _ => Err("usage: koas-review-driver review <ws> <doc> <ops.json> [--strict] | revert <ws> <ID>... | repair <ws> | status <ws>".into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(message) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
