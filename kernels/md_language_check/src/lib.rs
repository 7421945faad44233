//! # md_language_check — Stage 2 reviewer kernel
//!
//! Spelling, grammar and French typography on the document's prose
//! (English and French, the language chosen per paragraph): misspellings
//! with ranked suggestions, doubled words, a/an, agreement and confusions,
//! missing spaces in French typography. A fix is attached when it is
//! certain (one suggestion clearly right); `md_apply_ops` applies those
//! before a model reads the text, and `md_edit_plan` hands the others to
//! the model in the chunk's list of problems.
//!
//! Inputs: `doc_raw`, `section_index`, `anchor_map`, `protected_spans`,
//! and optionally `chunks` (findings then name their chunk). Output:
//! `language_findings` (`stage2/language_findings.json`). Config: the keys
//! of [`koas_md_scan::config::LanguageSection`] (`koas.toml [language]`)
//! and the findings policy (`disable`, `severity`, `other_kinds`). The
//! host reads the words files into `accept`: a plugin reads no file of
//! the project, so `words` must be empty here. The logic lives in
//! [`koas_md_scan`]; `koas check` runs the same code in-process.

use koas_kernel_api::prelude::*;
use koas_md_scan::config::{FindingsPolicy, LanguageSection};
use koas_md_scan::{language_check, Stage1View, LANGUAGE_KERNEL};
use koas_review_schema::findings::FindingsArtifact;
use koas_review_schema::names;
use koas_review_schema::stage1::{AnchorMap, ChunkPlan, ProtectedSpans, SectionIndex};

/// The kernel (see the module documentation).
#[derive(Debug, Default, Clone, Copy)]
pub struct MdLanguageCheck;

impl Kernel for MdLanguageCheck {
    fn spec(&self) -> KernelSpec {
        let spec = KernelSpec::new(LANGUAGE_KERNEL, "0.1.0")
            .stage("S2")
            .description("Language check: spelling (EN/FR, ranked suggestions), doubled words, articles, agreement, confusions, French typography; certain fixes attached")
            .input(names::DOC_RAW)
            .input(names::SECTION_INDEX)
            .input(names::ANCHOR_MAP)
            .input(names::PROTECTED_SPANS)
            .optional_input(names::CHUNKS)
            .findings_output_file(names::LANGUAGE_FINDINGS, "stage2/language_findings.json")
            .default_config(FindingsPolicy::default_kernel_config(
                serde_json::to_value(LanguageSection::default()).unwrap_or_default(),
            ));
        koas_md_scan::kinds::declare_builtin(spec, LANGUAGE_KERNEL)
    }

    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        // `disable` and `severity`: the project's koas.toml [check], applied
        // here so that every later kernel sees the same findings.
        let (settings, policy) = FindingsPolicy::split_kernel_config(config.value())?;
        let section: LanguageSection = KernelConfig(settings).parse()?;
        if !section.words.is_empty() {
            // A plugin reads no project file: the host reads the words
            // files into `accept` and hands an empty `words`.
            return Err(KernelError::invalid_config(format!(
                "words: {} words file(s) given to the kernel; the host reads words files \
                 (koas.toml [language] words) into `accept`, so `words` must be empty here",
                section.words.len()
            )));
        }
        let text = inputs.source_text(names::DOC_RAW)?;
        let sections: SectionIndex = inputs.parse(names::SECTION_INDEX)?;
        let anchors: AnchorMap = inputs.parse(names::ANCHOR_MAP)?;
        let protected: ProtectedSpans = inputs.parse(names::PROTECTED_SPANS)?;
        let chunks: Option<ChunkPlan> = inputs.parse_optional(names::CHUNKS)?;
        ctx.check_cancelled()?;
        let view = Stage1View {
            text,
            sections: &sections,
            anchors: &anchors,
            protected: &protected,
            chunks: chunks.as_ref(),
        };
        let mut result = language_check(view, &section)?;
        for line in &result.loaded {
            ctx.debug(line);
        }
        policy.apply(&mut result.output.findings);
        result.output.forget_kinds(&policy.other_kinds);
        let certain = result
            .output
            .findings
            .iter()
            .filter(|f| f.fix.is_some())
            .count();
        let artifact =
            FindingsArtifact::new(&protected.doc_hash, LANGUAGE_KERNEL, result.output.findings);
        let mut out = KernelOutput::new()
            .summary(format!("{}; {certain} certain fix(es)", artifact.summary()));
        for w in result.output.warnings {
            out = out.warning(w);
        }
        Ok(out.artifact(names::LANGUAGE_FINDINGS, &artifact))
    }
}

koas_kernel_api::export_kernel!(MdLanguageCheck);
