//! A document as the Stage 2 checks see it: its lines, the Stage 1
//! artifacts describing them, and the "prose" view of each line with every
//! protected region blanked out.

use crate::ScanError;
use koas_md::LineIndex;
use koas_review_schema::findings::Finding;
use koas_review_schema::names;
use koas_review_schema::stage1::{
    AnchorMap, BlockKind, ChunkPlan, LineNo, ProtectedSpans, SectionEntry, SectionIndex,
};

/// The document text and the Stage 1 artifacts the checks read.
#[derive(Debug, Clone, Copy)]
pub struct Stage1View<'a> {
    /// The exact document text (`doc_raw`).
    pub text: &'a str,
    /// `section_index` from `md_structure`: where each section starts and
    /// ends, and its explicit number, if any.
    pub sections: &'a SectionIndex,
    /// `anchor_map` from `md_structure`.
    pub anchors: &'a AnchorMap,
    /// `protected_spans` from `md_protected_regions`.
    pub protected: &'a ProtectedSpans,
    /// `chunks` from `md_chunk`, when available (findings then name their
    /// chunk).
    pub chunks: Option<&'a ChunkPlan>,
}

/// A document indexed for the checks.
pub struct Document<'a> {
    /// The Stage 1 artifacts the view was built from.
    pub stage1: Stage1View<'a>,
    /// Line boundaries of `stage1.text`, for 1-based line lookups.
    pub index: LineIndex<'a>,
    block_kind: Vec<Option<BlockKind>>,
    heading_line: Vec<bool>,
    masked: Vec<Option<String>>,
}

impl<'a> Document<'a> {
    /// Indexes the document and checks that the artifacts describe it (same
    /// line count).
    pub fn new(stage1: Stage1View<'a>) -> Result<Self, ScanError> {
        let index = LineIndex::new(stage1.text);
        let lines = index.line_count();
        let check = |artifact: &str, count: LineNo| {
            if count == lines {
                Ok(())
            } else {
                Err(ScanError::InconsistentInput {
                    artifact: artifact.to_string(),
                    reason: format!("it describes {count} lines, the document has {lines}"),
                })
            }
        };
        if stage1.sections.doc_hash != stage1.protected.doc_hash {
            return Err(ScanError::InconsistentInput {
                artifact: names::PROTECTED_SPANS.into(),
                reason: format!(
                    "it was computed for document {}, section_index for {}",
                    stage1.protected.doc_hash, stage1.sections.doc_hash
                ),
            });
        }
        check(names::SECTION_INDEX, stage1.sections.line_count)?;
        check(names::PROTECTED_SPANS, stage1.protected.line_count)?;
        if let Some(chunks) = stage1.chunks {
            check("chunks", chunks.line_count)?;
        }
        let n = lines as usize;
        let mut block_kind = vec![None; n + 1];
        for b in &stage1.protected.blocks {
            for l in b.line_start..=b.line_end.min(lines) {
                if let Some(slot) = block_kind.get_mut(l as usize) {
                    slot.get_or_insert(b.kind);
                }
            }
        }
        let mut heading_line = vec![false; n + 1];
        for s in &stage1.sections.sections {
            for l in s.line_start..=s.heading_line_end.min(lines) {
                if let Some(slot) = heading_line.get_mut(l as usize) {
                    *slot = true;
                }
            }
        }
        let masked = mask_inline_spans(&index, stage1.protected);
        Ok(Document {
            stage1,
            index,
            block_kind,
            heading_line,
            masked,
        })
    }

    /// Number of lines (a final line without a line ending counts).
    pub fn line_count(&self) -> LineNo {
        self.index.line_count()
    }

    /// The raw text of `line` (no line ending).
    pub fn line(&self, line: LineNo) -> &'a str {
        self.index.line_text(line)
    }

    /// The kind of protected block covering `line`, if any.
    pub fn block_kind(&self, line: LineNo) -> Option<BlockKind> {
        self.block_kind.get(line as usize).copied().flatten()
    }

    /// `true` when `line` belongs to a heading.
    pub fn is_heading(&self, line: LineNo) -> bool {
        self.heading_line
            .get(line as usize)
            .copied()
            .unwrap_or(false)
    }

    /// The text of `line` as prose: `None` inside a protected block, else
    /// the line with every protected inline span (code, math, URLs)
    /// replaced by spaces of the same byte length.
    pub fn prose(&self, line: LineNo) -> Option<&str> {
        if self.block_kind(line).is_some() {
            return None;
        }
        match self.masked.get(line as usize) {
            Some(Some(m)) => Some(m.as_str()),
            _ => Some(self.line(line)),
        }
    }

    /// The 1-based column, in characters, of byte `offset` of `line`
    /// (an offset past the end or inside a character counts to its end).
    pub fn column(&self, line: LineNo, offset: usize) -> u32 {
        let text = self.line(line);
        let mut end = offset.min(text.len());
        while end > 0 && !text.is_char_boundary(end) {
            end -= 1;
        }
        u32::try_from(text[..end].chars().count() + 1).unwrap_or(u32::MAX)
    }

    /// The section whose own content holds `line` (the last section that
    /// starts at or before it), or `None` in the preamble.
    pub fn section_at(&self, line: LineNo) -> Option<&'a SectionEntry> {
        let sections = &self.stage1.sections.sections;
        let after = sections.partition_point(|s| s.line_start <= line);
        after.checked_sub(1).and_then(|i| sections.get(i))
    }

    /// The ID of the chunk owning `line`, when a chunk plan was given.
    pub fn chunk_at(&self, line: LineNo) -> Option<&'a str> {
        let chunks = &self.stage1.chunks?.chunks;
        let after = chunks.partition_point(|c| c.line_start <= line);
        let chunk = chunks.get(after.checked_sub(1)?)?;
        (line <= chunk.line_end).then_some(chunk.chunk_id.as_str())
    }

    /// Fills a finding's section, anchor and chunk from its line.
    pub fn locate(&self, mut finding: Finding) -> Finding {
        if let Some(s) = self.section_at(finding.line) {
            finding.section_id = Some(s.id.clone());
            finding.anchor = Some(s.anchor.clone());
        }
        finding.chunk_id = self.chunk_at(finding.line).map(str::to_string);
        finding
    }
}

/// For each line touched by an inline protected span, the line with the
/// span's bytes replaced by spaces (`None` for untouched lines). Replacing
/// byte for byte keeps offsets and UTF-8 validity.
fn mask_inline_spans(index: &LineIndex<'_>, protected: &ProtectedSpans) -> Vec<Option<String>> {
    let mut masked: Vec<Option<String>> = vec![None; index.line_count() as usize + 1];
    for span in &protected.inlines {
        let (Ok(start), Ok(end)) = (
            usize::try_from(span.byte_start),
            usize::try_from(span.byte_end),
        ) else {
            continue;
        };
        for line in span.line..=span.end_line.min(index.line_count()) {
            let line_start = index.line_start(line);
            let line_end = index.line_content_end(line);
            let (s, e) = (start.max(line_start), end.min(line_end));
            if s >= e {
                continue;
            }
            let Some(slot) = masked.get_mut(line as usize) else {
                continue;
            };
            let text = slot.get_or_insert_with(|| index.line_text(line).to_string());
            let (rs, re) = (s - line_start, e - line_start);
            if text.is_char_boundary(rs) && text.is_char_boundary(re) && re <= text.len() {
                text.replace_range(rs..re, &" ".repeat(re - rs));
            }
        }
    }
    masked
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Builds the Stage 1 artifacts of a test document with `koas-md`.
    use crate::stage1::Stage1Artifacts;

    /// Runs Stage 1 on `text` and keeps the artifacts alive for a view.
    pub fn stage1(text: &str) -> Stage1Artifacts {
        Stage1Artifacts::compute(text)
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::stage1;
    use super::*;

    #[test]
    fn prose_blanks_protected_inline_spans_and_hides_blocks() {
        let text = "# T\n\nUse `see Section 9` here.\n\n```\ncode\n```\n";
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("consistent");
        let prose = doc.prose(3).expect("prose line");
        assert!(!prose.contains("Section 9"), "{prose}");
        assert_eq!(prose.len(), doc.line(3).len());
        assert_eq!(doc.prose(6), None, "inside the fence");
        assert!(doc.is_heading(1) && !doc.is_heading(3));
        assert_eq!(doc.section_at(3).map(|s| s.id.as_str()), Some("S1"));
    }

    #[test]
    fn artifacts_of_another_document_are_refused() {
        let s1 = stage1("# A\n\ntext\n");
        let other = "# A\n\ntext\n\nmore\n";
        let err = Document::new(s1.view(other)).err().expect("refused");
        assert!(err.to_string().contains("section_index"), "{err}");
        let s2 = stage1("# B\n\ntext\n");
        let mixed = Stage1View {
            protected: &s2.protected,
            ..s1.view("# A\n\ntext\n")
        };
        let err = Document::new(mixed).err().expect("refused");
        assert!(err.to_string().contains("protected_spans"), "{err}");
    }
}
