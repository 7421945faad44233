//! `md_edit_plan` through the plugin glue (the TestHarness round-trips JSON
//! like the host), with real Stage 1 artifacts, the repository's prompts
//! and scripted models.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use koas_kernel_api::testing::TestHarness;
use koas_kernel_api::{Kernel, KernelOutput, LlmRequest};
use koas_kernel_md_edit_plan::MdEditPlan;
use koas_review_schema::edit_plan::{ChunkStatus, ChunkVerdict, EditPlan, EditPlanStatus};
use koas_review_schema::fingerprint::{
    ChunkFeatures, ChunkFingerprint, ChunkFingerprints, FingerprintConfig,
};
use koas_review_schema::names;
use koas_review_schema::stage1::ChunkConfig;
use serde_json::json;

const DOC: &str = "# Audit de la plateforme\n\nLe présent rapport décrit les controles de la plateforme de paiement.\n\n## Périmètre\n\nLe périmètre couvre le service de paiement et ses journaux.\n\n```sh\nrm -rf /tmp/controles\n```\n\n## Constats\n\nLes journaux sont conservés douze mois dans l'archive.\n";

fn harness(text: &str) -> TestHarness {
    let s = koas_md::stage1::run("audit.md", text, ChunkConfig::default()).expect("stage 1");
    let mut h = TestHarness::new()
        .source_text(names::DOC_RAW, text)
        .input(names::SECTION_INDEX, &s.structure.sections)
        .input(names::CHUNKS, &s.chunks)
        .input(names::PROTECTED_SPANS, &s.spans)
        // The edit plan alone: the pyramid built with it has its own test.
        .config(json!({"skip_pyramid": true}));
    for name in [
        "review",
        "review_plain",
        "regenerate",
        "tutor_validate",
        "pyramid_leaf",
        "pyramid_parent",
        "pyramid_abstract",
    ] {
        let path = koas_test_support::repo_root().join(format!("prompts/{name}.tera"));
        let text = std::fs::read_to_string(path).expect("the repository's prompt template");
        h = h.prompt(name, &text);
    }
    h
}

fn plan(out: &KernelOutput) -> EditPlan {
    serde_json::from_value(out.value(names::EDIT_PLAN)).expect("edit plan")
}

/// Fixes "controles" wherever it is shown, with a wrong line number, and
/// tries to edit the protected code block too (shown as a placeholder).
fn worker(calls: Arc<AtomicUsize>) -> impl Fn(&LlmRequest) -> Result<String, String> {
    move |r| {
        calls.fetch_add(1, Ordering::SeqCst);
        assert_eq!(r.role, "edit");
        assert!(r.prompt.contains("français"), "{}", r.prompt);
        // The end marker, then the prompt's headings: an answer that
        // writes one is copying its prompt.
        assert_eq!(r.stop_markers[0], "END_EDIT_OPS");
        assert!(r.stop_markers.contains(&"Text to review (".to_owned()));
        assert!(r.stop_markers[1..]
            .iter()
            .all(|m| koas_review_llm::edit_plan::ECHOES.contains(&m.as_str())
                && r.prompt.contains(m.as_str())));
        assert_eq!(r.complete_after, ["BEGIN_EDIT_OPS"]);
        assert_eq!(
            r.prose_until,
            Some(koas_review_llm::edit_plan::PROSE_ANSWER_CHARS)
        );
        if r.prompt.contains("décrit les controles") {
            Ok("BEGIN_EDIT_OPS\n[{\"action\": \"replace\", \"line\": 1, \"before_text\": \"les controles\", \"after_text\": \"les contrôles\", \"kind\": \"typo\"}]\nEND_EDIT_OPS".into())
        } else if r.prompt.contains("[[CODE_BLOCK_0]]") {
            assert!(!r.prompt.contains("rm -rf"), "{}", r.prompt);
            Ok("BEGIN_EDIT_OPS\n[{\"action\": \"replace\", \"before_text\": \"[[CODE_BLOCK_0]]\", \"after_text\": \"[[CODE_BLOCK_0]] contrôles\"}]\nEND_EDIT_OPS".into())
        } else {
            Ok("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS".into())
        }
    }
}

#[test]
fn plans_in_the_documents_language_streams_artifacts_and_reuses_them() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut h = harness(DOC).llm(worker(calls.clone()));
    let out = h.run(&MdEditPlan).expect("runs");
    let p = plan(&out);
    assert_eq!(p.status, EditPlanStatus::Complete);
    assert_eq!(p.language, "fr");
    assert_eq!(p.ops.len(), 1, "{p:?}");
    let op = &p.ops[0];
    assert_eq!(op.id.to_string(), "RVW-0001");
    assert_eq!(op.target.line_start, 3);
    assert_eq!(op.after_text, "les contrôles");
    assert!(
        p.dropped.iter().any(|d| d.reason == "protected"),
        "{:?}",
        p.dropped
    );
    let n = p.chunks.len();
    assert_eq!(calls.load(Ordering::SeqCst), n);
    // Every chunk left its raw answer and one status line.
    let status =
        String::from_utf8(h.file("stage2/ops/status.jsonl").expect("status")).expect("utf-8");
    let lines: Vec<ChunkStatus> = status
        .lines()
        .map(|l| serde_json::from_str(l).expect("a status line"))
        .collect();
    assert_eq!(lines.len(), n);
    for s in &lines {
        let raw = h
            .file(&format!("stage2/ops/{}.raw.txt", s.chunk_id))
            .expect("raw answer");
        assert!(String::from_utf8_lossy(&raw).contains("BEGIN_EDIT_OPS"));
        assert_eq!(s.method, "tagged_payload");
    }
    assert!(out.summary.contains("1 in the plan"), "{}", out.summary);

    // The host hands the kernel its last plan: nothing changed, no call.
    let again = Arc::new(AtomicUsize::new(0));
    let out2 = harness(DOC)
        .previous(names::EDIT_PLAN, &p)
        .llm(worker(again.clone()))
        .run(&MdEditPlan)
        .expect("runs");
    assert_eq!(again.load(Ordering::SeqCst), 0);
    assert_eq!(plan(&out2).ops, p.ops);
    assert_eq!(plan(&out2).stats.reused as usize, n);
}

#[test]
fn ids_continue_after_the_ledger() {
    let ledger = json!([{
        "id": "RVW-0041", "doc": "audit.md", "doc_hash_before": "sha256:00", "doc_hash_after": "sha256:01",
        "timestamp": "2026-01-01T00:00:00Z", "actor": {"tool": "koas", "operator": "t"},
        "scope": {"anchor": "", "node_path": ""}, "kind": "typo", "severity": "minor", "silent": true,
        "summary": "s", "rationale": "", "patch_forward": "p", "patch_inverse": "q",
        "review_note": null, "is_revert": false, "reverted_id": ""
    }]);
    let entries: Vec<koas_review_schema::ledger::LedgerEntry> =
        serde_json::from_value(ledger).expect("a ledger entry");
    let out = harness(DOC)
        .input(names::LEDGER, &entries)
        .llm(worker(Arc::new(AtomicUsize::new(0))))
        .run(&MdEditPlan)
        .expect("runs");
    assert_eq!(plan(&out).ops[0].id.to_string(), "RVW-0042");
}

#[test]
fn the_tutor_is_asked_when_configured_and_its_failure_rejects() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let out = harness(DOC)
        .config(json!({"tutor_model": "big", "skip_pyramid": true}))
        .llm(move |r| {
            log.lock().expect("lock").push(r.role.clone());
            if r.role == "tutor" {
                Err("tutor endpoint refused".into())
            } else {
                worker(Arc::new(AtomicUsize::new(0)))(r)
            }
        })
        .run(&MdEditPlan)
        .expect("runs");
    let p = plan(&out);
    assert!(p.ops.is_empty(), "fail-safe: {:?}", p.ops);
    assert!(p
        .chunks
        .iter()
        .any(|c| c.verdict == ChunkVerdict::TutorFailed));
    assert!(seen.lock().expect("lock").iter().any(|r| r == "tutor"));
}

#[test]
fn a_degenerate_chunk_leaves_masks_and_an_exemplar() {
    let text = "# Résultats\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n| 5 | 6 |\n\nLes résultats 🚀 sont dans le tableau et la formule $x^2$ les résume.\n";
    let s = koas_md::stage1::run("r.md", text, ChunkConfig::default()).expect("stage 1");
    let fp = ChunkFingerprints {
        doc_hash: s.doc_hash.clone(),
        chunk_count: 1,
        triggered_count: 1,
        config: FingerprintConfig::default(),
        fingerprints: s
            .chunks
            .chunks
            .iter()
            .map(|c| ChunkFingerprint {
                chunk_id: c.chunk_id.clone(),
                section_id: c.section_id.clone(),
                line_start: c.line_start,
                line_end: c.line_end,
                features: ChunkFeatures::default(),
                triggers_recipe: true,
                triggers: vec!["table_rows".into()],
            })
            .collect(),
    };
    let mut h = harness(text)
        .input(names::CHUNK_FINGERPRINTS, &fp)
        .llm(|_| Ok("      \n\n     ".into()));
    let out = h.run(&MdEditPlan).expect("runs");
    let p = plan(&out);
    let c = &p.chunks[0];
    assert_eq!(c.verdict, ChunkVerdict::Degenerate);
    let policies: Vec<&str> = c
        .adaptive_escalation
        .iter()
        .map(|e| e.policy.as_str())
        .collect();
    // Less context (A) renders the same prompt for this small chunk: the
    // request after it is nudged warmer, not sent again the same.
    assert_eq!(
        policies,
        ["A", "retry", "C"],
        "no markdown to strip: D does not fire"
    );
    let id = &c.chunk_id;
    for file in [
        format!("stage2/masks/{id}_MATH.json"),
        format!("stage2/masks/{id}_PROTECTED.json"),
        format!("stage2/masks/{id}_EMOJI.json"),
        format!("stage2/masks/{id}_recipe.json"),
        format!("stage2/exemplars/{id}.json"),
        format!("stage2/ops/{id}.attempt3.raw.txt"),
    ] {
        assert!(h.file(&file).is_some(), "{file} in {:?}", h.files());
    }
    // The table was never shown: its placeholder and what it stands for.
    let table = String::from_utf8(
        h.file(&format!("stage2/masks/{id}_PROTECTED.json"))
            .expect("mask"),
    )
    .expect("utf-8");
    assert!(
        table.contains("[[TABLE_BLOCK_0]]") && table.contains("| a | b |"),
        "{table}"
    );
}

#[test]
fn without_a_model_the_plan_is_skipped_not_failed() {
    let mut h = harness(DOC);
    let out = h.run(&MdEditPlan).expect("a run without LLM succeeds");
    let p = plan(&out);
    assert_eq!(p.status, EditPlanStatus::Skipped);
    assert_eq!(p.reason.as_deref(), Some("no LLM configured"));
    assert!(h.files().is_empty(), "{:?}", h.files());
    let out = harness(DOC)
        .config(json!({"skip": true, "skip_reason": "--no-llm"}))
        .llm(|_| panic!("a skipped plan asks nothing"))
        .run(&MdEditPlan)
        .expect("runs");
    assert_eq!(plan(&out).reason.as_deref(), Some("--no-llm"));
}

#[test]
fn a_spent_budget_gives_a_partial_plan() {
    let out = harness(DOC)
        .config(json!({"in_flight": 1, "skip_pyramid": true}))
        .llm(|r| {
            if r.prompt.contains("décrit les controles") {
                worker(Arc::new(AtomicUsize::new(0)))(r)
            } else {
                Err("SESSION_BUDGET_EXHAUSTED: 150000 tokens used".into())
            }
        })
        .run(&MdEditPlan)
        .expect("runs");
    let p = plan(&out);
    assert_eq!(p.status, EditPlanStatus::Partial);
    assert_eq!(p.ops.len(), 1);
    assert!(
        out.summary.contains("SESSION_BUDGET_EXHAUSTED"),
        "{}",
        out.summary
    );
    assert!(out.warnings.iter().any(|w| w.contains("stopped asking")));
}

#[test]
fn the_spec_declares_prompts_inputs_and_incrementality() {
    let spec = MdEditPlan.spec();
    assert!(spec.uses_llm && spec.incremental);
    assert_eq!(
        spec.prompts,
        [
            "pyramid_leaf",
            "pyramid_parent",
            "pyramid_abstract",
            "review",
            "review_plain",
            "regenerate",
            "tutor_validate"
        ]
    );
    assert!(spec.validate().is_ok());
    let err = harness(DOC)
        .config(json!({"breaker_threshold": 3.0, "skip_pyramid": true}))
        .llm(|_| Ok("[]".into()))
        .run(&MdEditPlan)
        .expect_err("a share above 1");
    assert!(err.message.contains("breaker_threshold"), "{}", err.message);
}

#[test]
fn without_a_model_a_large_document_is_skipped_before_any_prompt_is_read() {
    // No prompt template is provided: reading one, let alone rendering
    // one per chunk of this 3,000-section document, would fail the run.
    let text: String = (0..3_000)
        .map(|i| format!("## Section {i}\n\nLe texte de la section {i} décrit un controle.\n\n"))
        .collect();
    let s = koas_md::stage1::run("big.md", &text, ChunkConfig::default()).expect("stage 1");
    let mut h = TestHarness::new()
        .source_text(names::DOC_RAW, &text)
        .input(names::SECTION_INDEX, &s.structure.sections)
        .input(names::CHUNKS, &s.chunks)
        .input(names::PROTECTED_SPANS, &s.spans);
    let out = h
        .run(&MdEditPlan)
        .expect("a run without a model skips, whatever its prompts");
    let p = plan(&out);
    assert_eq!(p.status, EditPlanStatus::Skipped);
    assert_eq!(p.reason.as_deref(), Some("no LLM configured"));
    assert_eq!(out.summary, "edit plan skipped: no LLM configured");
    assert!(h.files().is_empty(), "{:?}", h.files());
}

#[test]
fn a_model_identity_without_a_backend_is_still_a_skipped_plan() {
    // A host that names a model it cannot reach: the plan asks, meets
    // "no backend" and is skipped all the same, writing nothing.
    let mut h = harness(DOC).input(
        koas_kernel_api::LLM_INPUT,
        json!({"models": {"default": "m"}}),
    );
    let out = h.run(&MdEditPlan).expect("runs");
    let p = plan(&out);
    assert_eq!(p.status, EditPlanStatus::Skipped);
    assert_eq!(p.reason.as_deref(), Some("no LLM configured"));
    assert!(h.files().is_empty(), "{:?}", h.files());
}

#[test]
fn uncertain_language_findings_reach_the_prompt_and_certain_ones_do_not() {
    use koas_review_schema::findings::{Finding, FindingKind, FindingsArtifact, Fix, FixEdit};
    let line3 = DOC.lines().nth(2).expect("line 3");
    let line15 = DOC.lines().nth(14).expect("line 15");
    let unsure = Finding::new(
        FindingKind::Misspelling,
        "md_language_check",
        3,
        3,
        "“controles” is not in the French dictionary (close: “contrôles”, “contrôle”); if it is right, add it to the project's words",
        line3,
    )
    .with_suggestions(vec!["contrôles".into(), "contrôle".into()]);
    let certain = Finding::new(
        FindingKind::Misspelling,
        "md_language_check",
        15,
        15,
        "“conservés” fixed before",
        line15,
    )
    .with_fix(Fix {
        description: "x → y".into(),
        edits: vec![FixEdit {
            line: 15,
            before: line15.into(),
            after: Some(line15.replace("douze", "12")),
        }],
    });
    let artifact = FindingsArtifact::new("sha256:00", "md_language_check", vec![unsure, certain]);
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let seen = prompts.clone();
    harness(DOC)
        .input(names::LANGUAGE_FINDINGS, &artifact)
        .llm(move |r| {
            seen.lock().expect("prompts").push(r.prompt.clone());
            Ok("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS".into())
        })
        .run(&MdEditPlan)
        .expect("runs");
    let prompts = prompts.lock().expect("prompts");
    let asked: Vec<&String> = prompts
        .iter()
        .filter(|p| p.contains("Problems an automatic check found"))
        .collect();
    // The chunk's first prompt and its retry after the empty answer:
    // language hints are in every tier.
    assert!(!asked.is_empty(), "{prompts:#?}");
    assert!(asked[0].contains("misspelling"), "{}", asked[0]);
    assert!(asked[0].contains("“controles”"), "{}", asked[0]);
    assert!(
        prompts.iter().all(|p| !p.contains("fixed before")),
        "{prompts:#?}"
    );
}

/// The reviewer pipeline's kernel builds the pyramid with the plan, over
/// one stream: summaries and edit requests both reach the model, and a
/// chunk's prompt carries its section's summary.
#[test]
fn the_pyramid_is_built_with_the_plan_and_feeds_its_prompts() {
    let roles = Arc::new(Mutex::new(Vec::<String>::new()));
    let with_summary = Arc::new(AtomicUsize::new(0));
    let (seen, summarized) = (roles.clone(), with_summary.clone());
    let mut h = harness(DOC).config(json!({})).llm(move |r: &LlmRequest| {
        if let Ok(mut v) = seen.lock() {
            v.push(r.role.clone());
        }
        if r.role == "pyramid" {
            return Ok("Cette partie décrit un contrôle de la plateforme.".into());
        }
        if r.prompt
            .contains("Summary of this section:\nCette partie décrit")
        {
            summarized.fetch_add(1, Ordering::SeqCst);
        }
        Ok("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS".into())
    });
    let out = h.run(&MdEditPlan).expect("runs");
    let pyramid: koas_review_schema::pyramid::Pyramid =
        serde_json::from_value(out.value(names::PYRAMID)).expect("pyramid");
    assert_eq!(
        pyramid.status,
        koas_review_schema::pyramid::PyramidStatus::Built
    );
    assert!(pyramid.abstract_node().is_some(), "{pyramid:?}");
    assert!(out.value(names::GLOSSARY).is_object());
    assert!(out.value(names::PYRAMID_MD).is_string());
    let roles = roles.lock().map(|r| r.clone()).unwrap_or_default();
    assert!(roles.iter().any(|r| r == "pyramid"), "{roles:?}");
    assert!(roles.iter().any(|r| r == "edit"), "{roles:?}");
    assert_eq!(plan(&out).status, EditPlanStatus::Complete);
    // The chunks of "Périmètre" and "Constats" read their section's summary.
    assert!(with_summary.load(Ordering::SeqCst) >= 2);
}
