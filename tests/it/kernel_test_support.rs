//! `koas-kernel-test`, the test support a kernel author dev-depends on,
//! against the real thing: its Markdown fixtures are what `koas run` of
//! the shipped reviewer pipeline computes, and its plugin harness reports
//! a kernel's outputs and failures as `koas run` does, from a worker
//! process of the real `koas`.

use crate::common::{koas, run, stderr};
use koas_kernel_test::{Document, PluginError, PluginHarness};
use koas_review_schema::names;
use koas_test_support::{build_standalone, koas_bin, repo_root, test_plugin};
use serde_json::{json, Value};

/// A small document with something for every Stage 1 and Stage 2 kernel:
/// front matter, code, a table, a level skip, a repeated paragraph.
const DOC: &str = "---\ntitle: Guide\n---\n# Guide\n\nThis paragraph is repeated on purpose in this guide.\n\n## Install\n\nRun `make` first.\n\n```sh\nmake install\n```\n\n| Step | Share |\n|------|-------|\n| one  | 60 %  |\n| two  | 30 %  |\n\n#### Too deep\n\nThis paragraph is repeated on purpose in this guide.\n\nSee section 9 for more.\n";

#[test]
fn fixtures_are_what_koas_run_of_the_reviewer_pipeline_computes() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("guide.md");
    std::fs::write(&path, DOC).expect("doc");
    let ws = dir.path().join("ws");
    let fixtures = Document::markdown(DOC)
        .path(path.display().to_string())
        .artifacts()
        .expect("fixtures");
    let pipeline = repo_root().join("configs/reviewer.toml");
    let mut compared = Vec::new();
    // The Stage 2 kernels first: the Stage 1 ones are then cache hits.
    for kernel in [
        "md_consistency_scan",
        "md_numbering_control",
        "md_language_check",
        "md_fingerprint_chunk",
        "md_inventory",
        "md_structure",
        "md_protected_regions",
        "md_chunk",
    ] {
        let out = run(koas()
            .arg("run")
            .arg(&pipeline)
            .arg("--input")
            .arg(format!("doc={}", path.display()))
            .arg("--workspace")
            .arg(&ws)
            .args(["--kernel", kernel]));
        assert_eq!(out.status.code(), Some(0), "{kernel}: {}", stderr(&out));
        let target: Value = serde_json::from_slice(&out.stdout).expect("--kernel prints JSON");
        let outputs = target["outputs"].as_object().expect("outputs");
        assert!(!outputs.is_empty(), "{target}");
        for (name, value) in outputs {
            assert_eq!(
                Some(value),
                fixtures.get(name),
                "`{name}` of {kernel} differs from the fixture"
            );
            compared.push(name.clone());
        }
    }
    // Every artifact the fixtures give, but the source, came from a kernel.
    compared.push(names::DOC.to_owned());
    compared.sort();
    assert_eq!(compared, fixtures.keys().cloned().collect::<Vec<_>>());
    // The document has findings of both Stage 2 kernels.
    for name in [names::ISSUES, names::NUMBERING_FINDINGS] {
        assert!(
            fixtures[name]["finding_count"].as_u64() > Some(0),
            "{name}: {}",
            fixtures[name]
        );
    }
}

fn word_count() -> PluginHarness {
    let folder = build_standalone(
        &repo_root().join("examples/word-count-kernel/Cargo.toml"),
        false,
    );
    PluginHarness::new(folder.join(format!(
        "{}koas_kernel_word_count{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )))
    .koas(koas_bin())
}

#[test]
fn the_plugin_harness_runs_a_built_plugin_in_a_koas_worker() {
    let harness = word_count();
    let specs = harness.kernels().expect("described");
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].name, "word_count");
    let out = harness
        .kernel("word_count")
        .source_text("doc", "one two three\n```\ncode here\n```\n")
        .config(json!({ "min_len": 3 }))
        .run()
        .expect("runs");
    assert_eq!(out.version, "0.1.0");
    assert_eq!(out.value("word_count")["words"], 3);
    assert_eq!(out.value("word_count")["code_lines_skipped"], 3);
    assert_eq!(out.summary, "3 words, 4 lines (3 code lines skipped)");
    assert!(out.warnings.is_empty());
    // A Document's artifacts feed it too (it reads the `doc` source).
    let from_doc = harness
        .kernel("word_count")
        .inputs(
            Document::markdown("# Title\n\nTwo words.\n")
                .artifacts()
                .expect("fixtures"),
        )
        .run()
        .expect("runs");
    assert_eq!(from_doc.value("word_count")["words"], 4);
    // The same in this process.
    let in_process = word_count()
        .in_process()
        .kernel("word_count")
        .source_text("doc", "one two three\n```\ncode here\n```\n")
        .config(json!({ "min_len": 3 }))
        .run()
        .expect("runs");
    assert_eq!(in_process.outputs, out.outputs);
}

#[test]
fn the_plugin_harness_refuses_what_koas_run_refuses() {
    let harness = word_count();
    let err = harness
        .kernel("word_count")
        .source_text("doc", "x")
        .config(json!({ "min_lenght": 3 }))
        .run()
        .expect_err("unknown key");
    assert_eq!(
        err.to_string(),
        "kernel `word_count`: config `min_lenght`: unknown key (known keys: ignore_code_blocks, min_len)",
    );
    let err = harness.kernel("word_count").run().expect_err("no doc");
    assert!(
        matches!(&err, PluginError::MissingInput { artifact, .. } if artifact == "doc"),
        "{err}"
    );
    let err = harness
        .kernel("word_cont")
        .run()
        .expect_err("no such kernel");
    assert!(
        err.to_string()
            .contains("exports no kernel `word_cont` (it exports: word_count)"),
        "{err}"
    );
    let err = PluginHarness::new(test_plugin("wrong-abi"))
        .koas(koas_bin())
        .kernel("anything")
        .run()
        .expect_err("wrong ABI");
    assert!(
        matches!(&err, PluginError::Discovery(m) if m.contains("koas-kernel-api 7.0.0 (ABI 999)")),
        "{err}"
    );
}

#[test]
fn a_panic_is_reported_as_koas_run_records_it() {
    let harness = PluginHarness::new(test_plugin("testkit")).koas(koas_bin());
    let err = harness
        .kernel("panicker")
        .input("doc_len", json!({ "len": 3, "words": 1 }))
        .run()
        .expect_err("panics");
    let PluginError::Failed {
        kernel, message, ..
    } = &err
    else {
        panic!("not a kernel failure: {err}");
    };
    assert_eq!(kernel, "panicker");
    // The same kernel in a `koas run`: the same message in run.json.
    let p = crate::common::Project::new("one two three", &["source_len", "panicker"], "");
    let out = p.run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let record = p.record();
    let recorded = crate::common::kernel(&record, "panicker")["error"]
        .as_str()
        .expect("an error")
        .to_owned();
    assert_eq!(message, &recorded);
    assert!(message.contains("deliberate test panic"), "{message}");
}

#[test]
fn a_crash_fails_the_kernel_not_the_test() {
    let harness = PluginHarness::new(test_plugin("hostile")).koas(koas_bin());
    let err = harness
        .kernel("hostile_abort")
        .source_text("doc", "text")
        .run()
        .expect_err("aborts");
    let text = err.to_string();
    assert!(
        text.starts_with("kernel `hostile_abort` (") && text.contains("SIGABRT"),
        "{text}"
    );
}

#[test]
fn a_finding_of_an_undeclared_kind_fails_the_kernel_as_the_host_checks_it() {
    let err = PluginHarness::new(test_plugin("undeclared-kind"))
        .koas(koas_bin())
        .kernel("undeclared_kind")
        .source_text("doc", "text")
        .run()
        .expect_err("an undeclared kind");
    let PluginError::Failed { message, .. } = &err else {
        panic!("not a kernel failure: {err}");
    };
    assert!(message.contains("surprise"), "{message}");
}
