//! The kernel through the test harness, with real Stage 1 artifacts.

use koas_kernel_api::testing::TestHarness;
use koas_kernel_api::{ErrorKind, Kernel};
use koas_kernel_md_language_check::MdLanguageCheck;
use koas_md_scan::stage1::Stage1Artifacts;
use serde_json::{json, Value};

/// "explains" and "the" appear spelled right elsewhere: their slips have
/// a certain fix. "frobnicat" points at no word of the document. The
/// code block's words are not prose (and a slip used in code would be the
/// document's vocabulary: none of the prose's slips is there).
const DOC: &str = "# Guide\n\n## Intro\n\nThis page explains the setup and the the options.\n\nTeh server explians the options it adresses. It addresses the rest.\n\nThe tool can frobnicat the queue.\n\n```sh\nmake instal --verbse\n```\n";

fn harness(text: &str) -> TestHarness {
    let s1 = Stage1Artifacts::compute(text);
    TestHarness::new()
        .input("doc_raw", text)
        .input("section_index", &s1.sections)
        .input("anchor_map", &s1.anchors)
        .input("protected_spans", &s1.protected)
        .input("chunks", &s1.chunks)
}

fn findings(out: &koas_kernel_api::KernelOutput) -> Vec<Value> {
    out.value("language_findings")["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn misspellings_are_reported_with_certain_fixes_and_chunk_ids() {
    let mut h = harness(DOC);
    let out = h.run(&MdLanguageCheck).expect("runs");
    let found = findings(&out);
    let on = |word: &str| {
        found
            .iter()
            .find(|f| f["message"].as_str().is_some_and(|m| m.contains(word)))
            .unwrap_or_else(|| panic!("no finding on {word}: {found:#?}"))
            .clone()
    };
    for (word, right) in [
        ("Teh", "The"),
        ("explians", "explains"),
        ("adresses", "addresses"),
    ] {
        let f = on(word);
        assert_eq!(f["kind"], "misspelling", "{f:#}");
        assert_eq!(f["line"], 7, "{f:#}");
        assert_eq!(f["kernel"], "md_language_check");
        assert!(
            f["chunk_id"]
                .as_str()
                .is_some_and(|c| c.starts_with("intro_")),
            "{f:#}"
        );
        assert_eq!(f["suggestions"][0], right, "{f:#}");
        assert!(f["fix"]["edits"][0]["after"].as_str().is_some(), "{f:#}");
    }
    let doubled = found
        .iter()
        .find(|f| f["kind"] == "repeated_word")
        .expect("the the");
    assert_eq!(doubled["line"], 5);
    // A word nothing in the document points at: reported, never fixed.
    let unsure = on("frobnicat");
    assert!(unsure["fix"].is_null(), "{unsure:#}");
    // The code block is not prose.
    assert!(found.iter().all(|f| f["line"] != 12), "{found:#?}");
    let artifact = out.value("language_findings");
    assert_eq!(artifact["kernel"], "md_language_check");
    assert!(out.summary.contains("certain fix"), "{}", out.summary);
    // The dictionary load time goes to the kernel's log.
    assert!(
        h.logs()
            .iter()
            .any(|(_, line)| line.contains("dictionary loaded in")),
        "{:?}",
        h.logs()
    );
}

#[test]
fn policy_and_settings_are_applied() {
    let out = harness(DOC)
        .config(json!({"disable": ["repeated_word"], "severity": {"misspelling": "error"}}))
        .run(&MdLanguageCheck)
        .expect("runs");
    let found = findings(&out);
    assert!(!found.is_empty());
    assert!(
        found.iter().all(|f| f["kind"] != "repeated_word"),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .filter(|f| f["kind"] == "misspelling")
            .all(|f| f["severity"] == "error"),
        "{found:#?}"
    );
    // The project's words are never misspellings.
    let out = harness(DOC)
        .config(json!({"accept": ["frobnicat"]}))
        .run(&MdLanguageCheck)
        .expect("runs");
    let found = findings(&out);
    assert!(
        found
            .iter()
            .all(|f| !f["message"].as_str().unwrap_or("").contains("frobnicat")),
        "{found:#?}"
    );
    let out = harness(DOC)
        .config(json!({"spelling": false}))
        .run(&MdLanguageCheck)
        .expect("runs");
    assert!(findings(&out).iter().all(|f| f["kind"] != "misspelling"));
}

#[test]
fn words_files_and_unknown_keys_are_config_errors() {
    let err = harness(DOC)
        .config(json!({"words": ["styles/accept.txt"]}))
        .run(&MdLanguageCheck)
        .expect_err("words files are the host's");
    assert_eq!(err.kind, ErrorKind::InvalidConfig);
    assert!(err.message.contains("words"), "{}", err.message);
    let err = harness(DOC)
        .config(json!({"typo": 1}))
        .run(&MdLanguageCheck)
        .expect_err("unknown key");
    assert_eq!(err.kind, ErrorKind::InvalidConfig);
    let err = harness(DOC)
        .config(json!({"accept": ["(bad"]}))
        .run(&MdLanguageCheck)
        .expect_err("bad pattern");
    assert_eq!(err.kind, ErrorKind::InvalidConfig);
}

#[test]
fn spec_declares_the_language_kinds_and_default_config() {
    let spec = MdLanguageCheck.spec();
    let default = &spec.default_config;
    for key in [
        "languages",
        "accept",
        "words",
        "disable",
        "severity",
        "other_kinds",
    ] {
        assert!(default.get(key).is_some(), "{key}: {default:#}");
    }
    let spec_json = serde_json::to_string(&spec).expect("json");
    for kind in ["misspelling", "repeated_word", "typography"] {
        assert!(spec_json.contains(kind), "{kind}: {spec_json}");
    }
}

#[test]
fn artifacts_of_another_document_are_refused() {
    let err = harness(DOC)
        .input("doc_raw", "# Other\n")
        .run(&MdLanguageCheck)
        .expect_err("mismatch");
    assert_eq!(err.kind, ErrorKind::InvalidInput);
}
