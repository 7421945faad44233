//! What the guards make of a careless model on real documents, and what
//! becomes of a careful model's true typo fixes.
//!
//! ```text
//! cargo bench -p koas --bench careless_model
//! ```
//!
//! For each document of the shared corpus (`corpus/real`, `corpus/planted`;
//! the repository's own examples when it is absent), `koas review --json
//! --no-check-fixes` runs twice with a scripted model:
//!
//! 1. **careless**: every edit request is answered, for each line of the
//!    chunk, with at most one harmful op labelled `typo`
//!    (`koas_test_support::careless::careless_ops`: negation dropped,
//!    modal flipped, quantifier changed, heading or list marker removed,
//!    table row under a sentence, HTML element or code fence left open,
//!    invisible character, a number as `after_text`). Each op is followed
//!    through the edit plan (dropped, and why) and the apply log (refused,
//!    and why; applied with attention; applied **silent**, which would be
//!    a leak).
//! 2. **careful**: true typos are planted in the prose (one line in three
//!    at most, never in a polarity word), and the model proposes exactly
//!    their fixes with wrong line numbers: every fix must land silently and
//!    the edited document must be the clean one, byte for byte.
//!
//! Then an independent audit replays every ledger entry recorded silent
//! on the whole document and checks that its Markdown shape and its
//! polarity words are unchanged.
//!
//! `CARELESS_ONLY=ragix_KOAS.md` runs one document; a failed review keeps
//! its folder and names it.

use koas_edit::lexicon::{lexicon, polarity_words_of};
use koas_edit::patch::apply_patch_text;
use koas_md::shape::{compare, shape_of};
use koas_test_support::careless::{careless_ops, chunk_lines, plant_typos, Harm};
use koas_test_support::{koas_bin, ModelAnswer, ScriptedModel};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = ["corpus/real", "corpus/planted"]
        .iter()
        .flat_map(|sub| koas_test_support::shared_files(sub, &["md"]))
        .filter(|p| !p.ends_with("README.md"))
        .collect();
    if docs.is_empty() {
        eprintln!("careless_model: the shared corpus is absent; the repository's examples only");
        let root = koas_test_support::repo_root();
        docs = vec![
            root.join("examples/spec-example.md"),
            root.join("examples/audit-fr.md"),
        ];
    }
    docs.sort();
    // CARELESS_ONLY=name: one document (a failure to look at again).
    if let Ok(only) = std::env::var("CARELESS_ONLY") {
        docs.retain(|p| p.file_name().is_some_and(|n| n.to_string_lossy() == only));
    }
    docs
}

/// Runs `koas review doc.md --json` in `dir` with the model at `url`.
fn review(bin: &Path, dir: &Path, url: &str) -> Value {
    let out = Command::new(bin)
        .args([
            "-q",
            "review",
            "doc.md",
            "--json",
            "--no-check-fixes",
            "--llm-backend",
            "openai",
            "--llm-endpoint",
            url,
            "--llm-model",
            "scripted",
            "--llm-max-in-flight",
            "4",
        ])
        .current_dir(dir)
        .env_remove("KOAS_KERNEL_PATH")
        .output()
        .expect("koas runs");
    if !out.status.success() {
        // The folder is kept for a look (the caller's TempDir is dropped
        // without deleting it).
        let kept =
            std::env::temp_dir().join(format!("careless_model-failed-{}", std::process::id()));
        let _ = std::fs::rename(dir, &kept);
        panic!(
            "koas review failed (its folder is kept: {}): {}",
            kept.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).expect("koas review --json prints JSON")
}

fn workspace(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir.join(".review"))
        .expect(".review")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .next()
        .expect("a workspace")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("reads")).expect("parses")
}

fn ledger(ws: &Path) -> Vec<Value> {
    std::fs::read_to_string(ws.join("review/ledger.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Replays the ledger on `original` and returns, for each entry recorded
/// silent, what it changed that a silent change may not (empty: none).
fn audit(original: &str, entries: &[Value]) -> Vec<String> {
    let mut text = original.to_owned();
    let mut leaks = Vec::new();
    for e in entries {
        let Some(forward) = e["patch_text"]["forward"].as_str() else {
            continue;
        };
        let Ok(after) = apply_patch_text(&text, forward) else {
            leaks.push(format!("{}: its patch does not replay", e["id"]));
            break;
        };
        if e["silent"] == true {
            let shape = compare(&shape_of(&text, true), &shape_of(&after, true));
            if !shape.is_empty() {
                leaks.push(format!("{}: structure {shape:?}", e["id"]));
            }
            if polarity_words_of(&text) != polarity_words_of(&after) {
                leaks.push(format!("{}: polarity words", e["id"]));
            }
        }
        text = after;
    }
    leaks
}

#[derive(Default)]
struct Tally {
    proposed: usize,
    dropped: BTreeMap<String, usize>,
    rejected: BTreeMap<String, usize>,
    attention: usize,
    flagged: usize,
    silent: usize,
}

fn main() {
    let bin = koas_bin();
    let docs = documents();
    let mut tallies: BTreeMap<Harm, Tally> = BTreeMap::new();
    let mut guards: BTreeMap<String, u64> = BTreeMap::new();
    let mut leaks = Vec::new();
    let (mut planted_total, mut silent_total, mut attention_total) = (0, 0, 0);
    let mut exact = 0;
    println!("careless_model: {} documents", docs.len());
    for doc in &docs {
        let text = std::fs::read_to_string(doc).expect("the document reads");
        let name = doc
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();

        // 1. The careless model.
        let registry: Arc<Mutex<HashMap<String, Harm>>> = Arc::default();
        let reg = registry.clone();
        let model = ScriptedModel::start(move |r| {
            if !r.prompt.contains("BEGIN_EDIT_OPS") {
                return ModelAnswer::text("The section describes the system.");
            }
            let ops = careless_ops(&chunk_lines(&r.prompt));
            if let Ok(mut reg) = reg.lock() {
                for (harm, op) in &ops {
                    if let Some(before) = op["before_text"].as_str() {
                        reg.insert(before.to_owned(), *harm);
                    }
                }
            }
            let ops: Vec<Value> = ops.into_iter().map(|(_, op)| op).collect();
            ModelAnswer::text(format!(
                "BEGIN_EDIT_OPS\n{}\nEND_EDIT_OPS",
                Value::Array(ops)
            ))
        });
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("doc.md"), &text).expect("write");
        let v = review(bin, dir.path(), &model.url());
        let ws = workspace(dir.path());
        let registry = registry.lock().map(|r| r.clone()).unwrap_or_default();
        for (harm, count) in registry.values().fold(BTreeMap::new(), |mut m, h| {
            *m.entry(*h).or_insert(0usize) += 1;
            m
        }) {
            tallies.entry(harm).or_default().proposed += count;
        }
        for (g, n) in v["guards"].as_object().into_iter().flatten() {
            *guards.entry(g.clone()).or_default() += n.as_u64().unwrap_or(0);
        }
        let plan = read_json(&ws.join("stage2/edit_plan.json"));
        let harm_of = |before: &Value| before.as_str().and_then(|b| registry.get(b)).copied();
        for d in plan["dropped"].as_array().into_iter().flatten() {
            if let Some(h) = harm_of(&d["before_text"]) {
                let reason = d["reason"].as_str().unwrap_or("?").to_owned();
                *tallies
                    .entry(h)
                    .or_default()
                    .dropped
                    .entry(reason)
                    .or_default() += 1;
            }
        }
        let entries = ledger(&ws);
        let silent_ids: Vec<&str> = entries
            .iter()
            .filter(|e| e["silent"] == true)
            .filter_map(|e| e["id"].as_str())
            .collect();
        let plan_ops = plan["ops"].as_array().cloned().unwrap_or_default();
        for r in v["apply_log"].as_array().into_iter().flatten() {
            let index = r["op_index"].as_u64().unwrap_or(0) as usize;
            let Some(op) = index.checked_sub(1).and_then(|i| plan_ops.get(i)) else {
                continue;
            };
            let Some(h) = harm_of(&op["before_text"]) else {
                continue;
            };
            let t = tallies.entry(h).or_default();
            match r["status"].as_str() {
                Some("rejected") => {
                    *t.rejected
                        .entry(r["reject"].as_str().unwrap_or("?").to_owned())
                        .or_default() += 1
                }
                Some("flagged") => t.flagged += 1,
                Some("applied") => {
                    if r["id"].as_str().is_some_and(|id| silent_ids.contains(&id)) {
                        t.silent += 1;
                    } else {
                        t.attention += 1;
                    }
                }
                _ => {}
            }
        }
        for leak in audit(&text, &entries) {
            leaks.push(format!("{name} (careless): {leak}"));
        }

        // 2. The careful model.
        // Protected lines (front matter, code, tables, HTML, math, lines
        // with inline code or links) are not the model's to fix.
        let (regions, _) = koas_md::stage1::protected_spans_for(&text, Default::default());
        let protected = |line: usize| {
            let line = line as u32;
            regions
                .blocks
                .iter()
                .any(|b| b.line_start <= line && line <= b.line_end)
                || regions
                    .inlines
                    .iter()
                    .any(|s| s.line <= line && line <= s.end_line)
        };
        let polarity_word = |w: &str| {
            let w = w.to_lowercase();
            [
                lexicon(koas_edit::lang::Language::English),
                lexicon(koas_edit::lang::Language::French),
            ]
            .iter()
            .any(|l| l.polarity_of(&w).is_some())
        };
        let (planted, fixes) = plant_typos(&text, 3, polarity_word, protected);
        let wanted: Arc<Vec<(String, String)>> = Arc::new(fixes.clone());
        let w = wanted.clone();
        let model = ScriptedModel::start(move |r| {
            if !r.prompt.contains("BEGIN_EDIT_OPS") {
                return ModelAnswer::text("The section describes the system.");
            }
            let lines = chunk_lines(&r.prompt);
            let ops: Vec<Value> = w
                .iter()
                .filter(|(typo, _)| lines.iter().any(|l| l.contains(typo.as_str())))
                .enumerate()
                .map(|(i, (typo, word))| {
                    serde_json::json!({"action": "replace", "line": 200 + i,
                        "before_text": typo, "after_text": word, "kind": "typo",
                        "severity": "minor", "rationale": "spelling"})
                })
                .collect();
            ModelAnswer::text(format!(
                "BEGIN_EDIT_OPS\n{}\nEND_EDIT_OPS",
                Value::Array(ops)
            ))
        });
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("doc.md"), &planted).expect("write");
        let v = review(bin, dir.path(), &model.url());
        let ws = workspace(dir.path());
        let entries = ledger(&ws);
        let silent = entries.iter().filter(|e| e["silent"] == true).count();
        // Every fix that did not land silently, and why.
        let plan = read_json(&ws.join("stage2/edit_plan.json"));
        let plan_ops = plan["ops"].as_array().cloned().unwrap_or_default();
        for (typo, word) in &fixes {
            let dropped = plan["dropped"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|d| d["before_text"].as_str() == Some(typo.as_str()));
            if let Some(d) = dropped {
                println!(
                    "    {name}: '{typo}' → '{word}' dropped by the planner: {} ({})",
                    d["reason"], d["detail"]
                );
                continue;
            }
            let Some(at) = plan_ops.iter().position(|o| {
                o["before_text"]
                    .as_str()
                    .is_some_and(|b| b.contains(typo.as_str()))
            }) else {
                println!("    {name}: '{typo}' → '{word}' not proposed (not in any chunk shown)");
                continue;
            };
            let record = v["apply_log"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|r| r["op_index"].as_u64() == Some(at as u64 + 1));
            let Some(r) = record else { continue };
            let entry = entries.iter().find(|e| e["id"] == r["id"]);
            match (r["status"].as_str(), entry) {
                (Some("applied"), Some(e)) if e["silent"] == true => {}
                (Some("applied"), Some(e)) => println!(
                    "    {name}: '{typo}' → '{word}' applied with attention: {}",
                    e["review_note"]["text"]
                ),
                (status, _) => println!(
                    "    {name}: '{typo}' → '{word}' {}: {}",
                    status.unwrap_or("?"),
                    r["reason"]
                ),
            }
        }
        let edited = std::fs::read_to_string(ws.join("stage3/doc.edited.md")).unwrap_or_default();
        planted_total += fixes.len();
        silent_total += silent;
        attention_total += entries.len() - silent;
        if edited == text {
            exact += 1;
        }
        for leak in audit(&planted, &entries) {
            leaks.push(format!("{name} (careful): {leak}"));
        }
        println!(
            "  {name}: careless {} ops proposed; careful {} typos, {} fixed silently, {} with attention, edited == clean: {}",
            registry.len(),
            fixes.len(),
            silent,
            entries.len() - silent,
            edited == text
        );
    }

    println!();
    println!(
        "{:<28} {:>8} {:>26} {:>30} {:>9} {:>7} {:>7}",
        "careless op (kind typo)",
        "proposed",
        "dropped by the planner",
        "refused by the engine",
        "attention",
        "flagged",
        "SILENT"
    );
    let show = |m: &BTreeMap<String, usize>| {
        if m.is_empty() {
            "-".to_owned()
        } else {
            m.iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    for harm in Harm::ALL {
        let t = tallies.entry(harm).or_default();
        println!(
            "{:<28} {:>8} {:>26} {:>30} {:>9} {:>7} {:>7}",
            harm.name(),
            t.proposed,
            show(&t.dropped),
            show(&t.rejected),
            t.attention,
            t.flagged,
            t.silent
        );
    }
    println!("guard firings (careless runs): {guards:?}");
    println!(
        "careful model: {planted_total} true typos planted, {silent_total} fixes landed silently, {attention_total} with attention; edited == clean on {exact} of {} documents",
        docs.len()
    );
    println!(
        "audit of every silent ledger entry (whole document, independent of the guards): {} leak(s)",
        leaks.len()
    );
    for leak in &leaks {
        println!("  LEAK {leak}");
    }
}
