//! `md_numbering_control`: heading level continuity, numbered headings
//! (gaps, duplicates, references to labelled numbers no heading carries),
//! figure/table/equation numbering (gaps, duplicates) and references to
//! figures, tables and equations that do not exist. Also proposes
//! renumbering operations.

mod captions;
mod heading_levels;
mod heading_numbers;
mod renumber;

pub(crate) use captions::CaptionScan;
use koas_review_schema::numbering::RenumberOp;

use crate::budget::Budget;
use crate::config::NumberingConfig;
use crate::document::Document;
use crate::ScanError;
use koas_review_schema::findings::Finding;

/// The kernel name findings of these checks carry.
pub const KERNEL: &str = koas_project::NUMBERING_KERNEL;

/// What the numbering checks return.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NumberingReport {
    /// The findings (unsorted, not yet located).
    pub findings: Vec<Finding>,
    /// Suggested renumbering of captions; empty when they are in order.
    pub renumber_ops: Vec<RenumberOp>,
    /// Captions found, indexed by [`CaptionKind`] as `usize` (figure,
    /// table, equation).
    pub caption_counts: [usize; 3],
}

/// The numbering checks with their configuration compiled.
pub struct NumberingControl {
    config: NumberingConfig,
    captions: CaptionScan,
    /// `accept_level_skips`, parsed.
    accepted_skips: Vec<(u8, u8)>,
}

impl NumberingControl {
    /// Compiles a configuration.
    pub fn new(config: &NumberingConfig) -> Result<Self, ScanError> {
        let accepted_skips =
            heading_levels::accepted_skips(&config.accept_level_skips).map_err(|reason| {
                ScanError::InvalidConfig {
                    key: "accept_level_skips".into(),
                    reason,
                }
            })?;
        Ok(NumberingControl {
            config: config.clone(),
            captions: CaptionScan::new(config)?,
            accepted_skips,
        })
    }

    /// Compiles ahead, as pieces of work, the regexes `text` may need.
    pub fn warm<'a>(&'a self, text: &'a str, jobs: &mut Vec<crate::gate::Warm<'a>>) {
        self.captions.warm(text, jobs);
    }

    /// Runs every numbering check the config enables; stops between checks
    /// once `budget` is spent (the report is then partial: the caller
    /// discards it).
    pub fn run(&self, doc: &Document<'_>, budget: &Budget<'_>) -> NumberingReport {
        let mut report = NumberingReport::default();
        if self.config.check_heading_levels {
            heading_levels::detect(doc, &self.accepted_skips, &mut report.findings);
        } else {
            heading_levels::detect_empty(doc, &mut report.findings);
        }
        if budget.expired() {
            return report;
        }
        heading_numbers::detect(doc, &mut report.findings);
        if budget.expired() {
            return report;
        }
        let (captions, refs) = self.captions.collect(doc);
        if budget.expired() {
            return report;
        }
        let captions = captions::merge_alt_captions(doc, captions, &mut report.findings);
        for c in &captions {
            report.caption_counts[c.kind as usize] += 1;
        }
        captions::check_sequences(doc, &captions, &mut report.findings);
        if budget.expired() {
            return report;
        }
        captions::check_references(
            doc,
            &captions,
            &refs,
            self.config.missing_target_needs_captions,
            &mut report.findings,
        );
        report.renumber_ops = renumber::propose(&captions, &refs);
        report
    }
}
