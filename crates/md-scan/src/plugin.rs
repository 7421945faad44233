//! What the Stage 2 check kernels share around their check: their
//! settings split from the project's findings policy, the Stage 1
//! artifacts they read, and their findings as an artifact with that
//! policy applied.

use crate::config::FindingsPolicy;
use crate::{ScanOutput, Stage1View};
use koas_kernel_api::{Inputs, KernelConfig, KernelError};
use koas_review_schema::findings::FindingsArtifact;
use koas_review_schema::names;
use koas_review_schema::stage1::{AnchorMap, ChunkPlan, ProtectedSpans, SectionIndex};
use serde::de::DeserializeOwned;

/// A check kernel's settings (`C`) and the project's findings policy
/// (`disable`, `severity`: its koas.toml `[check]`), from its config.
pub fn settings<C: DeserializeOwned>(
    config: &KernelConfig,
) -> Result<(C, FindingsPolicy), KernelError> {
    let (settings, policy) = FindingsPolicy::split_kernel_config(config.value())?;
    Ok((KernelConfig(settings).parse()?, policy))
}

/// The Stage 1 artifacts a check reads, parsed once.
#[derive(Debug)]
pub struct Stage1Inputs<'i> {
    text: &'i str,
    sections: SectionIndex,
    anchors: AnchorMap,
    protected: ProtectedSpans,
    chunks: Option<ChunkPlan>,
}

impl<'i> Stage1Inputs<'i> {
    /// Reads `doc_raw`, `section_index`, `protected_spans`, the optional
    /// `chunks` and, when `anchors`, the `anchor_map` (a check that reads
    /// no anchor gets an empty map).
    pub fn read(inputs: &'i Inputs, anchors: bool) -> Result<Self, KernelError> {
        Ok(Stage1Inputs {
            text: inputs.source_text(names::DOC_RAW)?,
            sections: inputs.parse(names::SECTION_INDEX)?,
            anchors: if anchors {
                inputs.parse(names::ANCHOR_MAP)?
            } else {
                AnchorMap::default()
            },
            protected: inputs.parse(names::PROTECTED_SPANS)?,
            chunks: inputs.parse_optional(names::CHUNKS)?,
        })
    }

    /// The view the checks read.
    pub fn view(&self) -> Stage1View<'_> {
        Stage1View {
            text: self.text,
            sections: &self.sections,
            anchors: &self.anchors,
            protected: &self.protected,
            chunks: self.chunks.as_ref(),
        }
    }

    /// The findings of `kernel`, with the project's `policy` applied
    /// (severities, kinds turned off; a comment naming one of the
    /// project's own kinds is no typo), as its artifact on this document;
    /// and the check's warnings.
    pub fn findings(
        &self,
        kernel: &str,
        mut output: ScanOutput,
        policy: &FindingsPolicy,
    ) -> (FindingsArtifact, Vec<String>) {
        policy.apply(&mut output.findings);
        output.forget_kinds(&policy.other_kinds);
        let artifact = FindingsArtifact::new(&self.protected.doc_hash, kernel, output.findings);
        (artifact, output.warnings)
    }
}
