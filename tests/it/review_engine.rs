//! The two engine options the review commands rely on, tested through the
//! library with the real reviewer plugins (in worker processes of the
//! `koas` binary): artifacts the host provides in memory
//! (`RunOptions::provided`) and outputs whose files the host writes itself
//! (`RunOptions::host_written`).

use koas_kernel_api::hash::sha256;
use koas_orchestrator::discovery::{discover, Discovery, SearchOrigin, SearchPath};
use koas_orchestrator::engine::{self, RunError, RunOptions};
use koas_orchestrator::limits::Isolation;
use koas_orchestrator::pipeline::Pipeline;
use koas_orchestrator::prepare::prepare;
use koas_orchestrator::progress::Reporter;
use koas_orchestrator::run_record::{CacheUse, RunRecord};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const DOC: &str = "# Notes\n\nThe speling is off.\n";
const CURRENT: &str = "# Notes\n\nAdded first.\n\nThe speling is off.\n";

fn plugins() -> Discovery {
    let bin = koas_test_support::koas_bin();
    discover(&[SearchPath {
        path: bin.parent().expect("folder").to_path_buf(),
        origin: SearchOrigin::Flag,
    }])
}

fn pipeline(dir: &Path) -> Pipeline {
    std::fs::write(dir.join("doc.md"), DOC).unwrap();
    std::fs::write(
        dir.join("ops.json"),
        r#"[{"action": "replace", "kind": "typo", "target": {"line_start": 5}, "before_text": "speling", "after_text": "spelling"}]"#,
    )
    .unwrap();
    Pipeline {
        file: dir.join("p.toml"),
        name: "provided".into(),
        description: String::new(),
        kernels: [
            "md_inventory",
            "md_structure",
            "md_protected_regions",
            "md_apply_ops",
        ]
        .map(String::from)
        .to_vec(),
        kernel_paths: Vec::new(),
        workspace: dir.join("ws"),
        jobs: 2,
        inputs: [
            ("doc".to_string(), dir.join("doc.md")),
            ("ops".to_string(), dir.join("ops.json")),
        ]
        .into_iter()
        .collect(),
        config: BTreeMap::new(),
        llm: None,
        in_process: false,
        limits: Default::default(),
        prompts: None,
        config_origins: Default::default(),
    }
}

/// Default options, kernels in worker processes of the `koas` binary (this
/// test executable cannot serve as a worker).
fn new_options(jobs: usize) -> RunOptions {
    let mut opts = RunOptions::new(jobs);
    opts.isolation = Isolation::Process {
        program: koas_test_support::koas_bin().to_path_buf(),
    };
    opts
}

fn options(current: &str) -> RunOptions {
    let mut opts = new_options(2);
    opts.provided
        .insert("review_doc".into(), json!(current).into());
    opts.provided.insert(
        "review_state".into(),
        json!({"doc_name": "notes.md", "next_id": "RVW-0004", "ledger_ids": ["RVW-0001"],
               "original_hash": "sha256:00"})
        .into(),
    );
    opts.host_written.insert("edited_doc".into());
    opts
}

fn outcome_of(record: &RunRecord) -> Value {
    let hash = &record
        .kernels
        .iter()
        .find(|k| k.name == "md_apply_ops")
        .expect("ran")
        .output_hashes["apply_outcome"];
    koas_orchestrator::cache::Cache::open(&record.workspace)
        .get_value(hash)
        .expect("in the cache")
}

fn cache_use(record: &RunRecord) -> CacheUse {
    record
        .kernels
        .iter()
        .find(|k| k.name == "md_apply_ops")
        .expect("ran")
        .cache
}

#[test]
fn provided_artifacts_reach_kernels_and_key_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let p = pipeline(dir.path());
    let found = plugins();
    let prepared = prepare(&p, &found).expect("prepares: provided inputs are optional");
    let run = |current: &str| {
        engine::run(&prepared, &options(current), Arc::new(Reporter::quiet()))
            .expect("runs")
            .record
    };
    let first = run(CURRENT);
    assert_eq!(cache_use(&first), CacheUse::Miss);
    let outcome = outcome_of(&first);
    assert_eq!(outcome["doc_name"], "notes.md", "from review_state");
    assert_eq!(
        outcome["batch"]["initial_hash"],
        sha256(CURRENT),
        "the ops were applied to the provided document, not to doc.md"
    );
    assert_eq!(outcome["batch"]["applied"][0]["op"]["id"], "RVW-0004");
    let ws = p.workspace.clone();
    assert!(ws.join("stage3/apply_outcome.json").is_file());
    assert!(
        !ws.join("stage3/doc.edited.md").exists(),
        "a host-written output is not materialized"
    );
    // Same provided values: a cache hit, and restoring deleted files skips
    // the host-written one.
    std::fs::remove_file(ws.join("stage3/apply_outcome.json")).unwrap();
    let second = run(CURRENT);
    assert_eq!(cache_use(&second), CacheUse::Hit);
    assert!(ws.join("stage3/apply_outcome.json").is_file(), "restored");
    assert!(!ws.join("stage3/doc.edited.md").exists());
    let key = |r: &RunRecord| {
        r.kernels
            .iter()
            .find(|k| k.name == "md_apply_ops")
            .and_then(|k| k.input_hashes.get("review_doc").cloned().flatten())
    };
    assert_eq!(key(&first), key(&second));
    // Another provided document: another key, the kernel runs again.
    let third = run("# Notes\n\nThe speling is off.\n\nMore.\n");
    assert_eq!(cache_use(&third), CacheUse::Miss);
    assert_ne!(key(&third), key(&first));
    // Without the options, the engine writes the file as declared.
    let plain = engine::run(&prepared, &new_options(2), Arc::new(Reporter::quiet()))
        .expect("runs")
        .record;
    assert_eq!(cache_use(&plain), CacheUse::Miss);
    assert_eq!(
        std::fs::read_to_string(ws.join("stage3/doc.edited.md")).unwrap(),
        DOC,
        "a plain run applies the ops to the original (which has no line 5)"
    );
    assert_eq!(
        outcome_of(&plain)["batch"]["rejected"][0]["rejection"]["class"],
        "REJECT_RANGE"
    );
}

#[test]
fn a_provided_artifact_may_not_shadow_a_source_or_a_kernel_output() {
    let dir = tempfile::tempdir().unwrap();
    let p = pipeline(dir.path());
    let found = plugins();
    let prepared = prepare(&p, &found).expect("prepares");
    for (name, producer) in [("doc_raw", "kernel `md_inventory`"), ("doc", "[inputs]")] {
        let mut opts = new_options(1);
        opts.provided.insert(name.into(), json!("x").into());
        let err = engine::run(&prepared, &opts, Arc::new(Reporter::quiet())).unwrap_err();
        assert!(matches!(err, RunError::ProvidedConflict { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("`{name}`")) && text.contains(producer),
            "{text}"
        );
    }
    assert!(
        !p.workspace.join("stage1").exists(),
        "refused before any kernel ran"
    );
}

#[test]
fn a_source_the_host_gives_as_bytes_keys_and_reads_like_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = pipeline(dir.path());
    let found = plugins();
    let prepared = prepare(&p, &found).expect("prepares");
    let run = |opts: &RunOptions| {
        engine::run(&prepared, opts, Arc::new(Reporter::quiet()))
            .expect("runs")
            .record
    };
    let read = run(&options(CURRENT));
    // The file now holds something else: given bytes are not read again,
    // and key the source exactly as the file's bytes at that path did.
    std::fs::write(dir.path().join("doc.md"), "# Other\n").unwrap();
    let mut given = options(CURRENT);
    given
        .source_contents
        .insert("doc".into(), Arc::from(DOC.as_bytes()));
    let handed = run(&given);
    // Kernels that run at the same time are recorded in the order they
    // finish, so pair the two runs' records by name.
    assert_eq!(read.kernels.len(), handed.kernels.len());
    for a in &read.kernels {
        let b = handed
            .kernels
            .iter()
            .find(|k| k.name == a.name)
            .unwrap_or_else(|| panic!("{} ran the second time", a.name));
        assert_eq!(a.cache_key, b.cache_key, "{}", a.name);
        assert_eq!(a.input_hashes, b.input_hashes, "{}", a.name);
        assert_eq!(b.cache, CacheUse::Hit, "{}", b.name);
    }
    // Other bytes are another source (its snapshot is left alone: the
    // workspace was made from the first).
    let mut other = options(CURRENT);
    other.host_written.insert("doc_raw".into());
    other
        .source_contents
        .insert("doc".into(), Arc::from(&b"# Other\n"[..]));
    let changed = run(&other);
    let inventory = |r: &RunRecord| {
        r.kernels
            .iter()
            .find(|k| k.name == "md_inventory")
            .expect("ran")
            .cache
    };
    assert_eq!(inventory(&changed), CacheUse::Miss);
    // A source the pipeline does not have is refused.
    let mut unknown = options(CURRENT);
    unknown
        .source_contents
        .insert("notes".into(), Arc::from(DOC.as_bytes()));
    let err = engine::run(&prepared, &unknown, Arc::new(Reporter::quiet()))
        .expect_err("no [inputs] entry `notes`");
    assert!(
        matches!(err, RunError::UnknownSource(ref n) if n == "notes"),
        "{err}"
    );
}
