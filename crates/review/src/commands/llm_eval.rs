//! `koas llm eval`: how well a model reviews, measured on documents whose
//! defects are known. Each clean document gets a planted copy (seeded);
//! each model reviews every copy exactly as `koas review` would (same
//! prompts, ladder, guards, concurrency); what it proposed is scored
//! against the clean original.

use crate::api::{ReviewRequest, Session};
use crate::common::{ReviewTarget, WorkspaceArgs};
use crate::passes::Control;
use anyhow::{bail, Context as _};
use clap::Args;
use koas_eval::plant::{plant, Lang, PlantedDoc};
use koas_eval::score::{score, Guarded, Proposal};
use koas_eval::scoreboard::{self, DocRun, Evaluation, ModelRuns};
use koas_orchestrator::embed::{ExitStatus, HostOptions, LlmFlags};
use koas_review_schema::apply::{ApplyLogRecord, OpStatus};
use koas_review_schema::change_id::EntryId;
use koas_review_workspace::paths;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `koas llm eval` options.
#[derive(Debug, Args)]
#[command(after_help = "\
Plants defects (misspellings, doubled words, agreement errors, wrong
counts, broken anchors) in clean documents with a seeded generator, has each
--model review every planted copy as `koas review` would, and scores what it
proposed against the original: defects fixed, partly fixed or missed, and
changes where nothing was planted (harm), by what the guards did with them:
refused, flagged, or silent (silent harm must be 0).

The planted copies and their review workspaces are kept under --out: running
again with the same documents, seed and model reuses them (no model call).

Examples:
  koas llm eval --llm-endpoint http://localhost:8080 --model qwen2.5:7b --model mistral:7b
  koas llm eval --docs my-docs/ --lang fr --samples 3 --json

Exit codes:
  0  every model was measured
  1  a review failed (its documents are missing from the scores)
  2  usage or I/O error
")]
pub struct EvalArgs {
    /// A model to measure (repeat to compare several on the same planted
    /// set) [default: the configured model].
    #[arg(long = "model", value_name = "MODEL")]
    pub models: Vec<String>,

    /// A folder of clean Markdown documents [default: the bundled English
    /// and French documents].
    #[arg(long, value_name = "DIR")]
    pub docs: Option<PathBuf>,

    /// Languages to evaluate (en, fr).
    #[arg(long, value_delimiter = ',', default_value = "en,fr")]
    pub lang: Vec<String>,

    /// The planting seed: the same seed plants the same defects.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Defects planted per document (bounds the cost).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub samples: usize,

    /// Where the planted copies and their reviews are kept.
    #[arg(long, value_name = "DIR", default_value = ".koas/eval")]
    pub out: PathBuf,

    /// The model server, as for `koas review`.
    #[command(flatten)]
    pub llm: LlmFlags,

    /// Print the scores as JSON.
    #[arg(long)]
    pub json: bool,

    /// Also write the scores, the defect kinds, the format compliance and
    /// every planted defect with each model's result as an HTML page (the
    /// review report's style, no script).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// One clean document to plant.
struct Source {
    name: String,
    lang: Lang,
    text: String,
}

fn lang_of(name: &str) -> anyhow::Result<Lang> {
    match name.trim().to_ascii_lowercase().as_str() {
        "en" => Ok(Lang::En),
        "fr" => Ok(Lang::Fr),
        other => bail!("--lang {other}: expected en or fr"),
    }
}

/// French or English, by the share of common function words.
fn guess_lang(text: &str) -> Lang {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphabetic())
        .map(str::to_lowercase)
        .collect();
    let count = |set: &[&str]| words.iter().filter(|w| set.contains(&w.as_str())).count();
    if count(&["le", "la", "les", "des", "est", "une", "dans", "et"])
        > count(&["the", "of", "and", "is", "to", "in", "a"])
    {
        Lang::Fr
    } else {
        Lang::En
    }
}

fn sources(args: &EvalArgs, langs: &[Lang]) -> anyhow::Result<Vec<Source>> {
    let mut out = Vec::new();
    match &args.docs {
        None => {
            for (name, lang, text) in koas_eval::BUNDLED {
                out.push(Source {
                    name: (*name).to_string(),
                    lang: *lang,
                    text: (*text).to_string(),
                });
            }
        }
        Some(dir) => {
            let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
                .with_context(|| format!("--docs {}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
                .collect();
            paths.sort();
            if paths.is_empty() {
                bail!("--docs {}: no .md file there", dir.display());
            }
            for path in paths {
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("{}", path.display()))?;
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push(Source {
                    lang: guess_lang(&text),
                    name,
                    text,
                });
            }
        }
    }
    out.retain(|s| langs.contains(&s.lang));
    if out.is_empty() {
        bail!("no document in the languages asked for");
    }
    Ok(out)
}

/// A model name as a folder name.
fn slug(model: &str) -> String {
    model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The proposals of the review in `target`'s workspace, placed on the
/// planted copy's lines: every op of the apply log, with what the guards
/// did (a rejected op was refused; a flagged op, or an applied one that is
/// not silent, was flagged; an applied silent one went through quietly).
fn proposals(target: &ReviewTarget) -> anyhow::Result<Vec<Proposal>> {
    let log_path = target.workspace.path(paths::APPLY_LOG);
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    let ledger = target.workspace.ledger()?;
    let silent: BTreeMap<String, bool> = ledger
        .entries()
        .iter()
        .filter(|e| matches!(e.id, EntryId::Change(_)))
        .map(|e| (e.id.to_string(), e.silent))
        .collect();
    let mut out = Vec::new();
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let record: ApplyLogRecord = serde_json::from_str(line).with_context(|| {
            format!(
                "{}: a record that is not an apply log record",
                log_path.display()
            )
        })?;
        let Some((first, last)) = record.lines else {
            continue;
        };
        // A flag the model asked for (its prose answers become such
        // notes) changes nothing; a change the guards stopped is refused,
        // and one they let through is flagged (not silent) or silent.
        let (guarded, change) = match record.status {
            OpStatus::Known => continue,
            OpStatus::Flagged => (Guarded::Flagged, false),
            OpStatus::Rejected => (Guarded::Refused, true),
            OpStatus::Applied => {
                let id = record.id.map(|i| i.to_string()).unwrap_or_default();
                if silent.get(&id).copied().unwrap_or(false) {
                    (Guarded::Silent, true)
                } else {
                    (Guarded::Flagged, true)
                }
            }
        };
        out.push(Proposal {
            first,
            last: last.max(first),
            guarded,
            change,
        });
    }
    Ok(out)
}

fn review_one(
    global: &HostOptions,
    args: &EvalArgs,
    model: Option<&str>,
    planted: &PlantedDoc,
    lang: Lang,
) -> anyhow::Result<DocRun> {
    let dir = args
        .out
        .join(slug(model.unwrap_or("configured")))
        .join(format!("seed{}-n{}", args.seed, args.samples));
    std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
    let path = dir.join(&planted.name);
    let target_args = WorkspaceArgs::for_doc(&path);
    // A finished review of the same planted text is reused.
    let same_text = std::fs::read_to_string(&path).is_ok_and(|t| t == planted.text);
    let reuse = same_text
        && ReviewTarget::locate(&target_args)
            .ok()
            .is_some_and(|t| t.workspace.path(paths::APPLY_LOG).is_file());
    let mut reply_model = Value::Null;
    if !reuse {
        std::fs::write(&path, &planted.text).with_context(|| format!("{}", path.display()))?;
        let mut review = ReviewRequest {
            llm: args.llm.clone(),
            // The model alone is measured: the certain fixes `koas check`
            // knows (a broken anchor's) are not applied for it.
            no_check_fixes: true,
            ..ReviewRequest::default()
        };
        if let Some(model) = model {
            review.llm.model = Some(model.to_string());
        }
        let control = Control::ctrl_c();
        let reviewed = Session::open(global, &control, &path, None)
            .and_then(|session| session.review(&review))
            .map_err(|e| anyhow::anyhow!("{}: {e:#}", planted.name))?;
        // The eval's record keeps the model's figures as the review's
        // JSON answer gives them.
        reply_model = reviewed.to_json()["model"].clone();
    }
    let target = ReviewTarget::locate(&target_args)?;
    let result = std::fs::read_to_string(target.current_doc_path()).unwrap_or_default();
    let proposals = proposals(&target)?;
    let score = score(planted, &result, &proposals);
    let notes = score.notes;
    // Format compliance: how the edit plan's answers were read.
    let plan: Value = std::fs::read_to_string(target.root().join("stage2/edit_plan.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let stats = &plan["stats"];
    let ladder: BTreeMap<String, u64> = stats["methods"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    Ok(DocRun {
        doc: planted.name.clone(),
        ladder,
        degenerate: stats["degenerate"].as_u64().unwrap_or(0),
        chunks: stats["chunks"].as_u64().unwrap_or(0),
        lang: Some(lang),
        score,
        proposals: proposals.len() - notes,
        notes,
        calls: reply_model["calls"].as_u64().unwrap_or(0),
        tokens: reply_model["tokens"].as_u64().unwrap_or(0),
        seconds: reply_model["seconds"].as_f64().unwrap_or(0.0),
        reused: reuse,
    })
}

/// `koas llm eval`.
pub fn execute(global: &HostOptions, args: EvalArgs) -> anyhow::Result<ExitStatus> {
    let langs: Vec<Lang> = args
        .lang
        .iter()
        .map(|l| lang_of(l))
        .collect::<anyhow::Result<_>>()?;
    let sources = sources(&args, &langs)?;
    let planted: Vec<(PlantedDoc, Lang)> = sources
        .iter()
        .map(|s| {
            (
                plant(&s.name, &s.text, s.lang, args.seed, args.samples),
                s.lang,
            )
        })
        .collect();
    let models: Vec<Option<String>> = if args.models.is_empty() {
        vec![args.llm.model.clone()]
    } else {
        args.models.iter().cloned().map(Some).collect()
    };
    let mut measured = Vec::new();
    let mut failed = Vec::new();
    for model in &models {
        let name = model.clone().unwrap_or_else(|| "configured".into());
        let mut runs = Vec::new();
        for (doc, lang) in &planted {
            if !global.quiet {
                eprintln!(
                    "koas llm eval: {name}: {} ({} defects)",
                    doc.name,
                    doc.defects.len()
                );
            }
            match review_one(global, &args, model.as_deref(), doc, *lang) {
                Ok(run) => runs.push(run),
                Err(e) => failed.push(format!("{name}: {e:#}")),
            }
        }
        measured.push(ModelRuns { model: name, runs });
    }
    let all: Vec<scoreboard::Row> = measured.iter().flat_map(scoreboard::rows).collect();
    if args.json {
        let value = json!({
            "seed": args.seed,
            "samples": args.samples,
            "documents": planted.iter().map(|(d, _)| json!({"name": d.name, "defects": d.defects})).collect::<Vec<_>>(),
            "rows": all,
            "failed": failed,
        });
        koas_orchestrator::out!("{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        koas_orchestrator::out!("{}", scoreboard::table(&all))?;
        for f in &failed {
            eprintln!("koas llm eval: {f}");
        }
    }
    // The page last: the scores are printed even if it cannot be written.
    if let Some(path) = &args.html {
        let documents: Vec<PlantedDoc> = planted.iter().map(|(d, _)| d.clone()).collect();
        let page = scoreboard::html(&Evaluation {
            seed: args.seed,
            samples: args.samples,
            documents: &documents,
            models: &measured,
            rows: &all,
            failed: &failed,
            generator: concat!("koas ", env!("CARGO_PKG_VERSION")),
        });
        crate::html_report::write(path, &page)?;
        if !global.quiet {
            eprintln!("koas llm eval: wrote {}", path.display());
        }
    }
    Ok(if failed.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
