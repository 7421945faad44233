//! The reviewer's artifacts of a Markdown string, as the shipped pipeline
//! (`configs/reviewer.toml`) computes them: the inputs a kernel that reads
//! them gets in a real run.
//!
//! Every artifact comes from the library call its kernel makes (`koas-md`
//! for Stage 1, `koas-md-scan` for Stage 2) with the kernel's default
//! config, under the name of [`koas_review_schema::names`]: there is no
//! second implementation to drift from the kernels (the end-to-end tests
//! compare these fixtures with what `koas run` writes).

use crate::error::FixtureError;
use koas_kernel_api::testing::TestHarness;
use koas_kernel_api::SourceFile;
use koas_md::protected;
use koas_md_scan::config::{
    FindingsPolicy, FingerprintConfig, LanguageSection, NumberingConfig, ScanConfig,
};
use koas_md_scan::{
    chunk_fingerprints, consistency_scan, language_check, numbering_control, Stage1View,
    CONSISTENCY_KERNEL, LANGUAGE_KERNEL, NUMBERING_KERNEL,
};
use koas_review_schema::findings::FindingsArtifact;
use koas_review_schema::names;
use koas_review_schema::stage1::{AnchorMap, ChunkConfig};
use serde_json::Value;

/// The path a [`Document`] has unless told otherwise: the one
/// [`TestHarness::source_text`] gives the `doc` source.
pub const DEFAULT_PATH: &str = "doc.md";

use koas_plugin_test::Artifacts;

/// A Markdown document and the reviewer's artifacts of it.
///
/// ```
/// use koas_kernel_test::Document;
/// let doc = Document::markdown("# Title\n\nSome text.\n");
/// let stage1 = doc.stage1().expect("a text document");
/// assert_eq!(stage1["section_index"]["sections"][0]["title"], "Title");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    path: String,
    text: String,
}

/// Serializes a value of the schema into an artifact.
fn value(name: &str, v: impl serde::Serialize) -> Result<(String, Value), FixtureError> {
    serde_json::to_value(v)
        .map(|v| (name.to_owned(), v))
        .map_err(|e| FixtureError::Encode {
            artifact: name.to_owned(),
            message: e.to_string(),
        })
}

impl Document {
    /// The document `text`, named [`DEFAULT_PATH`].
    pub fn markdown(text: impl Into<String>) -> Document {
        Document {
            path: DEFAULT_PATH.to_owned(),
            text: text.into(),
        }
    }

    /// The same text under another path: the path the pipeline names the
    /// file with, which `md_inventory` records in `file_stats`.
    pub fn path(mut self, path: impl Into<String>) -> Document {
        self.path = path.into();
        self
    }

    /// The document's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The `doc` source artifact, as the host describes the file.
    pub fn source(&self) -> Result<Value, FixtureError> {
        value(
            names::DOC,
            SourceFile::from_bytes(&self.path, self.text.as_bytes()),
        )
        .map(|(_, v)| v)
    }

    /// The outputs of Stage 1 (`md_inventory`, `md_structure`,
    /// `md_protected_regions`, `md_chunk`) and the `doc` source. An error
    /// where `md_inventory` fails (a document holding a NUL byte).
    pub fn stage1(&self) -> Result<Artifacts, FixtureError> {
        Ok(self.compute(false)?.0)
    }

    /// The outputs of Stage 2's deterministic kernels
    /// (`md_consistency_scan`, `md_numbering_control`,
    /// `md_language_check`, `md_fingerprint_chunk`), computed from [`Document::stage1`]'s.
    pub fn stage2(&self) -> Result<Artifacts, FixtureError> {
        Ok(self.compute(true)?.1)
    }

    /// Every artifact: the `doc` source, Stage 1 and Stage 2.
    pub fn artifacts(&self) -> Result<Artifacts, FixtureError> {
        let (mut all, stage2) = self.compute(true)?;
        all.extend(stage2);
        Ok(all)
    }

    /// A [`TestHarness`] holding every artifact of [`Document::artifacts`]
    /// as an input (a kernel gets those it declares; extra ones are
    /// ignored, as in a run).
    pub fn harness(&self) -> Result<TestHarness, FixtureError> {
        self.feed(TestHarness::new())
    }

    /// `harness` with every artifact of [`Document::artifacts`] added as
    /// an input (for a harness already configured).
    pub fn feed(&self, harness: TestHarness) -> Result<TestHarness, FixtureError> {
        Ok(self
            .artifacts()?
            .into_iter()
            .fold(harness, |h, (name, v)| h.input(&name, v)))
    }

    /// Stage 1 (with the source) and, when `stage2`, Stage 2.
    fn compute(&self, stage2: bool) -> Result<(Artifacts, Artifacts), FixtureError> {
        let text = self.text.as_str();
        // md_inventory, md_structure, md_protected_regions and md_chunk,
        // each on its own parse, as separate plugins run.
        let s1 = koas_md::stage1::run(&self.path, text, ChunkConfig::default())
            .map_err(|e| FixtureError::Document(e.to_string()))?;
        let summary = protected::summarize(&s1.spans);
        let stage1: Artifacts = [
            Ok((names::DOC.to_owned(), self.source()?)),
            value(names::DOC_RAW, text),
            value(names::DOC_HASH, &s1.stats.sha256),
            value(names::FILE_STATS, &s1.stats),
            value(names::HEADING_TREE, &s1.structure.tree),
            value(names::SECTION_INDEX, &s1.structure.sections),
            value(names::ANCHOR_MAP, &s1.structure.anchors),
            value(names::PROTECTED_SPANS, &s1.spans),
            value(names::PROTECTED_SUMMARY, &summary),
            value(names::CHUNKS, &s1.chunks),
        ]
        .into_iter()
        .collect::<Result<_, _>>()?;
        if !stage2 {
            return Ok((stage1, Artifacts::new()));
        }
        let view = |anchors| Stage1View {
            text,
            sections: &s1.structure.sections,
            anchors,
            protected: &s1.spans,
            chunks: Some(&s1.chunks),
        };
        let scan_error = |kernel: &str, e: koas_md_scan::ScanError| FixtureError::Stage2 {
            kernel: kernel.to_owned(),
            message: e.to_string(),
        };
        // The kernels' default policy (`disable`, `severity` empty).
        let policy = FindingsPolicy::default();
        let mut issues = consistency_scan(view(&s1.structure.anchors), &ScanConfig::default())
            .map_err(|e| scan_error(CONSISTENCY_KERNEL, e))?;
        policy.apply(&mut issues.findings);
        // md_numbering_control and md_fingerprint_chunk do not read the
        // anchors: they get an empty map.
        let no_anchors = AnchorMap::default();
        let mut numbering = numbering_control(view(&no_anchors), &NumberingConfig::default())
            .map_err(|e| scan_error(NUMBERING_KERNEL, e))?;
        policy.apply(&mut numbering.output.findings);
        let mut language = language_check(view(&s1.structure.anchors), &LanguageSection::default())
            .map_err(|e| scan_error(LANGUAGE_KERNEL, e))?;
        policy.apply(&mut language.output.findings);
        let prints = chunk_fingerprints(view(&no_anchors), &FingerprintConfig::default())
            .map_err(|e| scan_error(koas_md_scan::FINGERPRINT_KERNEL, e))?;
        let stage2: Artifacts = [
            value(
                names::ISSUES,
                FindingsArtifact::new(&s1.spans.doc_hash, CONSISTENCY_KERNEL, issues.findings),
            ),
            value(
                names::NUMBERING_FINDINGS,
                FindingsArtifact::new(
                    &s1.spans.doc_hash,
                    NUMBERING_KERNEL,
                    numbering.output.findings,
                ),
            ),
            value(
                names::LANGUAGE_FINDINGS,
                FindingsArtifact::new(
                    &s1.spans.doc_hash,
                    LANGUAGE_KERNEL,
                    language.output.findings,
                ),
            ),
            value(names::RENUMBER_OPS, &numbering.renumber_ops),
            value(names::CHUNK_FINGERPRINTS, &prints),
        ]
        .into_iter()
        .collect::<Result<_, _>>()?;
        Ok((stage1, stage2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_kernel_api::testing::TestHarness;

    const DOC: &str = "# Guide\n\nIntro text.\n\n## Install\n\nRun `make`.\n\n```sh\nmake\n```\n\n## Use\n\n#### Too deep\n\nText.\n";

    #[test]
    fn section_index_is_what_md_structure_returns() {
        let doc = Document::markdown(DOC);
        let stage1 = doc.stage1().expect("stage 1");
        // The kernel itself, on the `doc_raw` the fixture gives it.
        let out = TestHarness::new()
            .input(names::DOC_RAW, &stage1[names::DOC_RAW])
            .input(names::DOC_HASH, &stage1[names::DOC_HASH])
            .run(&koas_kernel_md_structure::MdStructure)
            .expect("md_structure runs");
        for name in [names::SECTION_INDEX, names::HEADING_TREE, names::ANCHOR_MAP] {
            assert_eq!(out.value(name), stage1[name], "{name}");
        }
        // And the same through a harness the document fed.
        let fed = doc
            .harness()
            .expect("harness")
            .run(&koas_kernel_md_structure::MdStructure)
            .expect("md_structure runs");
        assert_eq!(
            fed.value(names::SECTION_INDEX),
            stage1[names::SECTION_INDEX]
        );
    }

    #[test]
    fn every_stage_1_and_stage_2_artifact_is_there() {
        let doc = Document::markdown(DOC).path("guide.md");
        let all = doc.artifacts().expect("artifacts");
        let mut expected = names::STAGE_1_AND_2.to_vec();
        expected.sort_unstable();
        assert_eq!(all.keys().map(String::as_str).collect::<Vec<_>>(), expected);
        assert_eq!(all[names::FILE_STATS]["path"], "guide.md");
        assert_eq!(all[names::DOC]["path"], "guide.md");
        assert_eq!(all[names::DOC_RAW], DOC);
        // `####` under `##` skips a level: the numbering control says so.
        let kinds: Vec<&Value> = all[names::NUMBERING_FINDINGS]["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| &f["kind"])
            .collect();
        assert!(!kinds.is_empty(), "{}", all[names::NUMBERING_FINDINGS]);
        assert_eq!(
            doc.stage2().expect("stage 2").len() + doc.stage1().expect("stage 1").len(),
            all.len()
        );
    }

    #[test]
    fn a_document_md_inventory_refuses_is_an_error() {
        let err = Document::markdown("# A\n\0\n").stage1().expect_err("NUL");
        assert!(err.to_string().contains("doc.md"), "{err}");
    }
}
