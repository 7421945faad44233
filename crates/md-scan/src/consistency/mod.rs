//! `md_consistency_scan`: AI leftovers, duplicated paragraphs, broken
//! section references (English and French), numerical contradictions,
//! table structure and percentage sums, terminology drift, and broken
//! link fragments.
//!
//! Every detector reads the [`Document`] (lines, Stage 1 artifacts, prose
//! view), the parser facts and the tables, and appends findings. Nothing
//! inside a protected region is reported, except that the table detectors
//! do look at the tables Stage 1 protects (they are about those tables).

mod ai_leftovers;
mod close_anchors;
mod duplicates;
mod file_links;
mod glued_headings;
mod link_anchors;
pub mod links;
mod numeric_claims;
mod percentages;
mod references;
mod table_structure;
mod terminology;

use crate::budget::Budget;
use crate::config::ScanConfig;
use crate::document::Document;
use crate::gate::Warm;
use crate::markdown::MarkdownFacts;
use crate::tables::Table;
use crate::ScanError;
use koas_review_schema::findings::{Finding, FindingKind};
use rayon::prelude::*;

pub(crate) use link_anchors::percent_decode;
pub use link_anchors::TargetAnchors;

/// What the host tells of the files around the document: the link check
/// across files runs only with it.
#[derive(Clone, Copy)]
pub(crate) struct Neighbours<'a> {
    /// The file system's answers.
    pub targets: &'a dyn links::LinkTargets,
    /// The document's file name (`guide.md`), for the page's URL folder.
    pub name: Option<&'a str>,
}

/// The kernel name findings of this scan carry.
pub const KERNEL: &str = koas_project::CONSISTENCY_KERNEL;

/// A consistency scan with its configuration compiled (regexes built once).
pub struct ConsistencyScan {
    config: ScanConfig,
    ai: ai_leftovers::AiLeftovers,
    terms: terminology::Terminology,
    anchors: link_anchors::ExtraAnchors,
}

impl ConsistencyScan {
    /// Checks and compiles a configuration.
    pub fn new(config: &ScanConfig) -> Result<Self, ScanError> {
        if config.claim_min > config.claim_max {
            return Err(ScanError::InvalidConfig {
                key: "claim_min".into(),
                reason: format!(
                    "{} is larger than claim_max = {}",
                    config.claim_min, config.claim_max
                ),
            });
        }
        if config.percent_min.is_nan()
            || config.percent_max.is_nan()
            || config.percent_min > config.percent_max
        {
            return Err(ScanError::InvalidConfig {
                key: "percent_min".into(),
                reason: format!(
                    "{} is larger than percent_max = {}",
                    config.percent_min, config.percent_max
                ),
            });
        }
        Ok(ConsistencyScan {
            config: config.clone(),
            ai: ai_leftovers::AiLeftovers::new(config)?,
            terms: terminology::Terminology::new(config)?,
            anchors: link_anchors::ExtraAnchors::new(&config.extra_anchors)?,
        })
    }

    /// Compiles ahead, as pieces of work, the regexes `text` may need.
    pub fn warm<'a>(&'a self, text: &'a str, jobs: &mut Vec<Warm<'a>>) {
        if self.config.terminology_drift {
            self.terms.warm(text, jobs);
        }
        numeric_claims::warm(text, jobs);
        references::warm(text, jobs);
        ai_leftovers::warm(text, jobs);
    }

    /// Runs every detector; findings are unsorted and not yet located. A
    /// detector that finds `budget` spent stops (its findings partial: the
    /// caller discards them).
    pub fn run(
        &self,
        doc: &Document<'_>,
        facts: &MarkdownFacts,
        tables: &[Table],
        neighbours: Option<Neighbours<'_>>,
        budget: &Budget<'_>,
    ) -> Vec<Finding> {
        // The detectors are independent: they run in parallel (on the
        // threads the caller's work leaves free), and their findings are
        // put together in this order whatever order they finish in.
        type Detector<'d> = &'d (dyn Fn(&mut Vec<Finding>) + Sync);
        let config = &self.config;
        let detectors: [Detector<'_>; 8] = [
            &|out| self.ai.detect(doc, out),
            &|out| duplicates::detect(doc, facts, config, out),
            &|out| references::detect(doc, config, out),
            &|out| {
                numeric_claims::detect(doc, tables, config, out);
                numeric_claims::detect_lists(doc, facts, config, out);
            },
            &|out| {
                numeric_claims::detect_prose(doc, config, out);
                numeric_claims::detect_sections(doc, config, out);
                table_structure::detect(doc, tables, out);
                percentages::detect(tables, config, out);
            },
            &|out| {
                if config.terminology_drift {
                    self.terms.detect(doc, out);
                }
            },
            &|out| link_anchors::detect(doc, facts, &self.anchors, budget, out),
            &|out| {
                if let Some(n) = neighbours {
                    file_links::detect(doc, facts, n.name, n.targets, &self.anchors, budget, out);
                }
            },
        ];
        let (found, glued) = rayon::join(
            || {
                detectors
                    .par_iter()
                    .map(|detect| {
                        let mut out = Vec::new();
                        if !budget.expired() {
                            detect(&mut out);
                        }
                        out
                    })
                    .collect::<Vec<Vec<Finding>>>()
            },
            || glued_headings::detect(doc, facts),
        );
        let mut out: Vec<Finding> = found.into_iter().flatten().collect();
        // A paragraph repeated after a lost heading is that heading's
        // defect, reported once as such.
        out.retain(|f| {
            f.kind != FindingKind::DuplicateParagraph || !glued.followers.contains(&f.line)
        });
        out.extend(glued.findings);
        out
    }
}
