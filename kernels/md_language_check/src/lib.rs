//! # md_language_check — Stage 2 reviewer kernel
//!
//! Spelling, grammar and French typography on the document's prose
//! (English and French, the language chosen per paragraph): misspellings
//! with ranked suggestions, doubled words, a/an, agreement and confusions,
//! missing spaces in French typography; and the rules of the project's
//! Vale styles (`styles`, read by the host from its `.vale.ini`), each
//! finding of the kind `style` naming its rule. A fix is attached when it is
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
use koas_md_scan::plugin::{self, Stage1Inputs};
use koas_md_scan::{language_check, LANGUAGE_KERNEL};
use koas_review_schema::names;

/// The kernel (see the module documentation).
#[derive(Debug, Default, Clone, Copy)]
pub struct MdLanguageCheck;

impl Kernel for MdLanguageCheck {
    fn spec(&self) -> KernelSpec {
        let spec = KernelSpec::new(LANGUAGE_KERNEL, "0.1.0")
            .stage("S2")
            .description("Language check: spelling (EN/FR, ranked suggestions), doubled words, articles, agreement, confusions, French typography, the project's Vale styles; certain fixes attached")
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
        let (section, policy): (LanguageSection, _) = plugin::settings(config)?;
        if !section.words.is_empty() {
            // A plugin reads no project file: the host reads the words
            // files into `accept` and hands an empty `words`.
            return Err(KernelError::invalid_config(format!(
                "words: {} words file(s) given to the kernel; the host reads words files \
                 (koas.toml [language] words) into `accept`, so `words` must be empty here",
                section.words.len()
            )));
        }
        let stage1 = Stage1Inputs::read(inputs, true)?;
        ctx.check_cancelled()?;
        let result = language_check(stage1.view(), &section)?;
        for line in &result.loaded {
            ctx.debug(line);
        }
        let (artifact, warnings) = stage1.findings(LANGUAGE_KERNEL, result.output, &policy);
        let certain = artifact.findings.iter().filter(|f| f.fix.is_some()).count();
        let mut out = KernelOutput::new()
            .summary(format!("{}; {certain} certain fix(es)", artifact.summary()));
        for w in warnings.into_iter().chain(result.notes) {
            out = out.warning(w);
        }
        Ok(out.artifact(names::LANGUAGE_FINDINGS, &artifact))
    }
}

koas_kernel_api::export_kernel!(MdLanguageCheck);
