//! `md_pyramid` through the plugin glue (the TestHarness round-trips JSON
//! like the host), with real Stage 1 artifacts and a scripted model.

use koas_kernel_api::testing::TestHarness;
use koas_kernel_api::{Kernel, KernelOutput};
use koas_kernel_md_pyramid::MdPyramid;
use koas_review_schema::names;
use koas_review_schema::pyramid::{Glossary, Pyramid, PyramidStatus};
use koas_review_schema::stage1::ChunkConfig;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const DOC: &str = "# Audit de la plateforme\n\nLe présent rapport décrit les contrôles de la plateforme de paiement.\n\n## Périmètre\n\nLe périmètre couvre le service de paiement (SP) et ses journaux.\n\n## Constats\n\nLes journaux sont conservés douze mois.\n\n### Journaux\n\nLa Direction Interministérielle du Numérique (DINUM) reçoit les journaux.\n";

fn prompts() -> [(&'static str, String); 3] {
    let read = |name: &str| {
        std::fs::read_to_string(koas_test_support::repo_root().join(format!("prompts/{name}.tera")))
            .expect("the repository's prompt template")
    };
    [
        ("pyramid_leaf", read("pyramid_leaf")),
        ("pyramid_parent", read("pyramid_parent")),
        ("pyramid_abstract", read("pyramid_abstract")),
    ]
}

fn harness(text: &str) -> TestHarness {
    let s = koas_md::stage1::run("audit.md", text, ChunkConfig::default()).expect("stage 1");
    let mut h = TestHarness::new()
        .source_text(names::DOC_RAW, text)
        .input(names::SECTION_INDEX, &s.structure.sections)
        .input(names::CHUNKS, &s.chunks)
        .input(names::FILE_STATS, &s.stats);
    for (name, text) in prompts() {
        h = h.prompt(name, &text);
    }
    h
}

fn pyramid(out: &KernelOutput) -> Pyramid {
    serde_json::from_value(out.value(names::PYRAMID)).expect("pyramid")
}

fn counting_model(
    calls: Arc<AtomicUsize>,
) -> impl Fn(&koas_kernel_api::LlmRequest) -> Result<String, String> {
    move |r| {
        calls.fetch_add(1, Ordering::SeqCst);
        assert_eq!(r.role, "pyramid");
        assert!(
            r.prompt.contains("français"),
            "the prompt names the document's language: {}",
            r.prompt
        );
        // Another prompt, another summary (as a real model would write).
        let tag = &koas_kernel_api::hash::sha256(&r.prompt)[7..13];
        Ok(format!("Résumé {tag} : le texte décrit la plateforme."))
    }
}

#[test]
fn builds_every_level_in_the_documents_language_then_reuses_it() {
    let calls = Arc::new(AtomicUsize::new(0));
    let out = harness(DOC)
        .llm(counting_model(calls.clone()))
        .run(&MdPyramid)
        .expect("runs");
    let p = pyramid(&out);
    assert_eq!(p.status, PyramidStatus::Built);
    assert_eq!(p.language, "fr");
    let ids: Vec<(&str, u8)> = p
        .nodes
        .iter()
        .map(|n| (n.node_id.as_str(), n.level))
        .collect();
    assert_eq!(
        ids,
        // The single `#` is the document's title: its sections are level 1.
        [("DOC", 0), ("S1.1", 1), ("S1.2", 1), ("S1.2.1", 2)]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert!(p
        .nodes
        .iter()
        .all(|n| !n.fallback && n.summary.starts_with("Résumé")));
    let md: String = out.parse(names::PYRAMID_MD).expect("markdown");
    assert!(
        md.contains("## DOC Audit de la plateforme") && md.contains("### S1.2 Constats"),
        "{md}"
    );
    let glossary: Glossary = serde_json::from_value(out.value(names::GLOSSARY)).expect("glossary");
    let terms: Vec<&str> = glossary.terms.iter().map(|t| t.term.as_str()).collect();
    assert!(
        terms.contains(&"DINUM") && terms.contains(&"SP"),
        "{terms:?}"
    );

    // The host hands the kernel its last pyramid: nothing changed, no call.
    let again = Arc::new(AtomicUsize::new(0));
    let out2 = harness(DOC)
        .previous(names::PYRAMID, &p)
        .llm(counting_model(again.clone()))
        .run(&MdPyramid)
        .expect("runs");
    assert_eq!(again.load(Ordering::SeqCst), 0);
    assert_eq!(pyramid(&out2).nodes, p.nodes);

    // One leaf edited: its path to the root, nothing else.
    let edited = DOC.replace("reçoit les journaux", "reçoit chaque mois les journaux");
    let third = Arc::new(AtomicUsize::new(0));
    let out3 = harness(&edited)
        .previous(names::PYRAMID, &p)
        .llm(counting_model(third.clone()))
        .run(&MdPyramid)
        .expect("runs");
    assert_eq!(third.load(Ordering::SeqCst), 3, "S1.2.1, S1.2, DOC");
    assert_eq!(pyramid(&out3).stats.reused, 1);
}

#[test]
fn empty_and_boilerplate_answers_become_marked_fallbacks() {
    let out = harness(DOC)
        .llm(|r| {
            if r.prompt.contains("Section: Journaux") {
                Ok("Bien sûr, voici le résumé :".into())
            } else if r.prompt.contains("Section: Périmètre") {
                Ok(String::new())
            } else {
                Ok("Le texte décrit la plateforme.".into())
            }
        })
        .run(&MdPyramid)
        .expect("runs");
    let p = pyramid(&out);
    let leaf = p.node("S1.2.1").expect("S1.2.1");
    assert!(leaf.fallback);
    assert_eq!(
        leaf.summary,
        "La Direction Interministérielle du Numérique (DINUM) reçoit les journaux."
    );
    assert!(p.node("S1.1").expect("S1.1").fallback);
    assert_eq!(p.stats.fallbacks, 2);
    assert!(
        out.warnings.iter().any(|w| w.contains("fallbacks")),
        "{:?}",
        out.warnings
    );
}

#[test]
fn without_a_model_the_pyramid_is_skipped_not_failed() {
    let out = harness(DOC)
        .run(&MdPyramid)
        .expect("a run without LLM succeeds");
    let p = pyramid(&out);
    assert_eq!(p.status, PyramidStatus::Skipped);
    assert_eq!(p.skipped_reason.as_deref(), Some("no LLM configured"));
    assert!(p.nodes.is_empty());
    let out = harness(DOC)
        .config(json!({"skip": true, "skip_reason": "--no-llm"}))
        .llm(|_| panic!("a skipped pyramid asks nothing"))
        .run(&MdPyramid)
        .expect("runs");
    assert_eq!(pyramid(&out).skipped_reason.as_deref(), Some("--no-llm"));
}

#[test]
fn the_spec_declares_prompts_and_incrementality() {
    let spec = MdPyramid.spec();
    assert!(spec.uses_llm && spec.incremental);
    assert_eq!(
        spec.prompts,
        ["pyramid_leaf", "pyramid_parent", "pyramid_abstract"]
    );
    assert!(spec.validate().is_ok());
    let err = harness(DOC)
        .config(json!({"levels": 7}))
        .llm(|_| Ok("x".into()))
        .run(&MdPyramid)
        .expect_err("levels outside 1-4");
    assert!(err.message.contains("pyramid_levels"), "{}", err.message);
}

/// A generated document of `headings` sections.
fn large_document(headings: usize) -> String {
    (0..headings)
        .map(|i| format!("## Section {i}\n\nLe texte de la section {i} décrit un contrôle.\n\n"))
        .collect()
}

#[test]
fn without_a_model_a_large_document_is_skipped_before_any_prompt_is_read() {
    // No prompt template is provided: reading one, let alone rendering
    // it for each of the 3,000 sections, would fail the run.
    let text = large_document(3_000);
    let s = koas_md::stage1::run("big.md", &text, ChunkConfig::default()).expect("stage 1");
    let out = TestHarness::new()
        .source_text(names::DOC_RAW, &text)
        .input(names::SECTION_INDEX, &s.structure.sections)
        .input(names::CHUNKS, &s.chunks)
        .run(&MdPyramid)
        .expect("a run without a model skips, whatever its prompts");
    let p = pyramid(&out);
    assert_eq!(p.status, PyramidStatus::Skipped);
    assert_eq!(p.skipped_reason.as_deref(), Some("no LLM configured"));
    assert_eq!(out.summary, "pyramid skipped: no LLM configured");
    // The glossary needs no model: it is still listed.
    let glossary: Glossary = serde_json::from_value(out.value(names::GLOSSARY)).expect("glossary");
    assert_eq!(glossary.doc_hash, p.doc_hash);
}

#[test]
fn a_model_identity_without_a_backend_is_still_a_skipped_pyramid() {
    // A host that names a model it cannot reach: the pyramid asks, meets
    // "no backend" and is skipped all the same.
    let out = harness(DOC)
        .input(
            koas_kernel_api::LLM_INPUT,
            json!({"models": {"default": "m"}}),
        )
        .run(&MdPyramid)
        .expect("runs");
    let p = pyramid(&out);
    assert_eq!(p.status, PyramidStatus::Skipped);
    assert_eq!(p.skipped_reason.as_deref(), Some("no LLM configured"));
}
