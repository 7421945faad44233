//! The entry points the kernels and `koas check` share: each takes the
//! document and its Stage 1 artifacts and returns finished results
//! (suppression comments applied, findings located and sorted), so that a
//! plugin run and an in-process run give identical output.

use crate::budget::{Budget, CheckError};
use crate::config::{
    FingerprintConfig, LanguageSection, NumberingConfig, ProjectConfig, ScanConfig,
};
use crate::consistency::links::LinkTargets;
use crate::consistency::{ConsistencyScan, Neighbours};
use crate::document::{Document, Stage1View};
use crate::fingerprint::fingerprint_chunks;
use crate::language::LanguageCheck;
use crate::markdown;
use crate::numbering::NumberingControl;
use crate::stage1::Stage1Artifacts;
use crate::suppress::Suppressions;
use crate::tables::find_tables;
use crate::ScanError;
use koas_review_schema::findings::{sort_findings, Finding};
use koas_review_schema::fingerprint::ChunkFingerprints;
use koas_review_schema::numbering::RenumberOp;
use koas_review_schema::stage1::ChunkConfig;
use rayon::prelude::*;

/// Findings plus the warnings met while producing them (e.g. an unknown
/// kind in a suppression comment).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScanOutput {
    /// The findings, sorted by line.
    pub findings: Vec<Finding>,
    /// Problems worth telling the user that are not findings.
    pub warnings: Vec<String>,
    /// `(line, word)` of each suppression comment's word that is not a
    /// built-in kind (each also has its warning).
    pub unknown_kinds: Vec<(u32, String)>,
    /// The findings a `koas-disable…` comment silences, sorted by line:
    /// not reported, but listed as suppressed where a format says so
    /// (SARIF), so that a dashboard shows them dismissed, not gone.
    pub suppressed: Vec<Finding>,
}

impl ScanOutput {
    /// Drops the warnings about suppression comments that name one of
    /// `known` (kinds other kernels of the run declare): not typos.
    pub fn forget_kinds(&mut self, known: &[String]) {
        let (known_here, unknown): (Vec<_>, Vec<_>) = std::mem::take(&mut self.unknown_kinds)
            .into_iter()
            .partition(|(_, w)| known.contains(w));
        for (line, word) in &known_here {
            let text = unknown_kind_warning(*line, word);
            self.warnings.retain(|w| *w != text);
        }
        self.unknown_kinds = unknown;
    }
}

fn unknown_kind_warning(line: u32, word: &str) -> String {
    format!("line {line}: suppression comment names unknown kind {word:?}; it silences nothing")
}

/// What the numbering checks return once finished.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NumberingOutput {
    /// Findings (located and sorted) and warnings.
    pub output: ScanOutput,
    /// Suggested caption renumbering (the `renumber_ops` artifact); empty
    /// when the captions are in order.
    pub renumber_ops: Vec<RenumberOp>,
}

fn suppression_warnings(s: &Suppressions) -> Vec<String> {
    s.unknown_kinds
        .iter()
        .map(|(line, word)| unknown_kind_warning(*line, word))
        .collect()
}

/// A check's findings, located and sorted, with those a suppression
/// comment silences apart.
#[derive(Debug, Default)]
struct Kept {
    findings: Vec<Finding>,
    suppressed: Vec<Finding>,
}

fn finish(doc: &Document<'_>, suppressions: &Suppressions, mut findings: Vec<Finding>) -> Kept {
    let suppressed = suppressions.take_suppressed(&mut findings);
    let locate = |findings: Vec<Finding>| {
        let mut located: Vec<Finding> = findings.into_iter().map(|f| doc.locate(f)).collect();
        sort_findings(&mut located);
        located
    };
    Kept {
        findings: locate(findings),
        suppressed: locate(suppressed),
    }
}

fn consistency_on(
    doc: &Document<'_>,
    scan: &ConsistencyScan,
    suppressions: &Suppressions,
    parsed: Option<markdown::ParsedFacts>,
    neighbours: Option<Neighbours<'_>>,
    budget: &Budget<'_>,
) -> Kept {
    let facts = markdown::collect_with(doc, parsed);
    if budget.expired() {
        return Kept::default();
    }
    let tables = find_tables(doc);
    finish(
        doc,
        suppressions,
        scan.run(doc, &facts, &tables, neighbours, budget),
    )
}

fn numbering_on(
    doc: &Document<'_>,
    control: &NumberingControl,
    suppressions: &Suppressions,
    budget: &Budget<'_>,
) -> (Kept, Vec<RenumberOp>) {
    let report = control.run(doc, budget);
    (
        finish(doc, suppressions, report.findings),
        report.renumber_ops,
    )
}

/// `md_consistency_scan`: every consistency detector.
pub fn consistency_scan(
    view: Stage1View<'_>,
    config: &ScanConfig,
) -> Result<ScanOutput, ScanError> {
    let scan = ConsistencyScan::new(config)?;
    let doc = Document::new(view)?;
    let suppressions = Suppressions::parse(&doc);
    let kept = consistency_on(&doc, &scan, &suppressions, None, None, &Budget::unlimited());
    Ok(ScanOutput {
        findings: kept.findings,
        warnings: suppression_warnings(&suppressions),
        unknown_kinds: suppressions.unknown_kinds.clone(),
        suppressed: kept.suppressed,
    })
}

/// `md_numbering_control`: heading levels, caption numbering, missing
/// targets, and renumbering proposals.
pub fn numbering_control(
    view: Stage1View<'_>,
    config: &NumberingConfig,
) -> Result<NumberingOutput, ScanError> {
    let control = NumberingControl::new(config)?;
    let doc = Document::new(view)?;
    let suppressions = Suppressions::parse(&doc);
    let (kept, renumber_ops) = numbering_on(&doc, &control, &suppressions, &Budget::unlimited());
    Ok(NumberingOutput {
        output: ScanOutput {
            findings: kept.findings,
            warnings: suppression_warnings(&suppressions),
            unknown_kinds: suppressions.unknown_kinds.clone(),
            suppressed: kept.suppressed,
        },
        renumber_ops,
    })
}

fn language_on(
    doc: &Document<'_>,
    check: &LanguageCheck,
    path: Option<&str>,
    suppressions: &Suppressions,
    budget: &Budget<'_>,
) -> Result<(Kept, Vec<String>), ScanError> {
    match check.run(doc, path, &|| budget.expired())? {
        Some((findings, loaded)) => Ok((finish(doc, suppressions, findings), loaded)),
        // Stopped for the budget: the caller discards partial results.
        None => Ok((Kept::default(), Vec::new())),
    }
}

/// What the language checks return: findings and warnings, and the time
/// each dictionary took to load (for the kernel's log).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LanguageOutput {
    /// Findings (located and sorted) and warnings.
    pub output: ScanOutput,
    /// `"English dictionary loaded in 0.1 ms"`, one line a dictionary.
    pub loaded: Vec<String>,
    /// What of the project's Vale styles is not acted on, one line each.
    pub notes: Vec<String>,
}

/// `md_language_check`: spelling, grammar and French typography.
pub fn language_check(
    view: Stage1View<'_>,
    config: &LanguageSection,
) -> Result<LanguageOutput, ScanError> {
    let check = LanguageCheck::new(config)?;
    let doc = Document::new(view)?;
    let suppressions = Suppressions::parse(&doc);
    let (kept, loaded) = language_on(&doc, &check, None, &suppressions, &Budget::unlimited())?;
    Ok(LanguageOutput {
        output: ScanOutput {
            findings: kept.findings,
            warnings: suppression_warnings(&suppressions),
            unknown_kinds: suppressions.unknown_kinds.clone(),
            suppressed: kept.suppressed,
        },
        loaded,
        notes: check.style_notes().to_vec(),
    })
}

/// `md_fingerprint_chunk`: one fingerprint per chunk of the view's plan.
pub fn chunk_fingerprints(
    view: Stage1View<'_>,
    config: &FingerprintConfig,
) -> Result<ChunkFingerprints, ScanError> {
    let doc = Document::new(view)?;
    let tables = find_tables(&doc);
    fingerprint_chunks(&doc, &tables, config)
}

/// `koas check` with a project config compiled once (regexes built), to
/// check any number of documents, from any number of threads.
pub struct Checker {
    scan: ConsistencyScan,
    control: NumberingControl,
    language: LanguageCheck,
    project: ProjectConfig,
    /// Whether a document has warmed the regexes (see [`Checker::check`]).
    warmed: std::sync::atomic::AtomicBool,
}

impl Checker {
    /// What of the project's Vale styles is not acted on, one line each
    /// (see [`LanguageCheck::style_notes`]).
    pub fn style_notes(&self) -> &[String] {
        self.language.style_notes()
    }

    /// Compiles the project config; a bad pattern or value is an error.
    pub fn new(project: &ProjectConfig) -> Result<Self, ScanError> {
        Ok(Checker {
            scan: ConsistencyScan::new(&project.scan)?,
            control: NumberingControl::new(&project.numbering)?,
            language: LanguageCheck::new(&project.language)?,
            project: project.clone(),
            warmed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Stage 1 and the Stage 2 checks (consistency, numbering, language)
    /// on one document, in-process, then
    /// the project's disabled kinds and severities applied.
    pub fn check(&self, text: &str) -> Result<ScanOutput, ScanError> {
        self.run(text, None, &Budget::unlimited())
    }

    /// [`Checker::check`] with the links to other files checked too:
    /// `targets` tells what is on disk around the document, whose file
    /// name is `name` (see [`crate::links`]).
    pub fn check_linked(
        &self,
        text: &str,
        name: Option<&str>,
        targets: &dyn LinkTargets,
    ) -> Result<ScanOutput, ScanError> {
        self.run(
            text,
            Some(Neighbours { targets, name }),
            &Budget::unlimited(),
        )
    }

    /// [`Checker::check_linked`] within `budget` (see
    /// [`Checker::check_within`]).
    pub fn check_linked_within(
        &self,
        text: &str,
        name: Option<&str>,
        targets: &dyn LinkTargets,
        budget: &Budget<'_>,
    ) -> Result<ScanOutput, CheckError> {
        budget.check()?;
        let output = self.run(text, Some(Neighbours { targets, name }), budget)?;
        budget.check()?;
        Ok(output)
    }

    /// [`Checker::check`] within `budget`: the editor's way to stop a check
    /// that a newer edit superseded ([`Budget::with_cancel`]) or that runs
    /// past its time ([`Budget::with_limit`]). The budget is polled between
    /// stages, at each detector's start and inside the loops of the
    /// detectors whose work grows with the document; once it is spent the
    /// check stops and returns [`CheckError::Cancelled`] or
    /// [`CheckError::OverBudget`], never partial findings. (Stage 1's
    /// parse is not interrupted: it is linear and runs first.)
    pub fn check_within(&self, text: &str, budget: &Budget<'_>) -> Result<ScanOutput, CheckError> {
        budget.check()?;
        let output = self.run(text, None, budget)?;
        // A detector that saw the budget spent stopped early: its findings
        // are partial, so none are returned.
        budget.check()?;
        Ok(output)
    }

    fn run(
        &self,
        text: &str,
        neighbours: Option<Neighbours<'_>>,
        budget: &Budget<'_>,
    ) -> Result<ScanOutput, ScanError> {
        // While Stage 1 runs, the other core compiles the regexes this text
        // may need and loads its French dictionary (before the checks ask
        // for them; neither changes a result).
        let mut warm: Vec<crate::gate::Warm<'_>> = Vec::new();
        // Only the first document warms: later ones of the run find most
        // of what they need compiled, and a pass over each one's text
        // for the rest would cost a run of many documents more than it
        // saves. An empty text needs nothing (and would build its gates'
        // automata for nothing).
        if !text.is_empty() && !self.warmed.swap(true, std::sync::atomic::Ordering::Relaxed) {
            // The longest job first: a French document's dictionary.
            let language = &self.language;
            warm.push(Box::new(move || language.prefetch(text)));
            self.scan.warm(text, &mut warm);
            self.control.warm(text, &mut warm);
            crate::words::warm(text, &mut warm);
            crate::markdown::warm(text, &mut warm);
        }
        // What the parser alone tells (paragraphs, lists, fragment links)
        // is read from Stage 1's own parse, not from a second one.
        let mut facts = markdown::FactsReader::default();
        let (stage1, ()) = rayon::join(
            || {
                Stage1Artifacts::compute_observed(
                    text,
                    ChunkConfig::default(),
                    |index, event, range| facts.read(index, event, range),
                )
            },
            || warm.par_iter().for_each(|job| job()),
        );
        let parsed = facts.finish();
        if budget.expired() {
            return Ok(ScanOutput::default());
        }
        let doc = Document::new(stage1.view(text))?;
        let suppressions = Suppressions::parse(&doc);
        let name = neighbours.as_ref().and_then(|n| n.name);
        // The checks read the same document and nothing else: in parallel.
        let (consistency, (numbering, language)) = rayon::join(
            || consistency_on(&doc, &self.scan, &suppressions, parsed, neighbours, budget),
            || {
                rayon::join(
                    || numbering_on(&doc, &self.control, &suppressions, budget).0,
                    || language_on(&doc, &self.language, name, &suppressions, budget),
                )
            },
        );
        let language = language?.0;
        let (mut findings, mut suppressed) = (consistency.findings, consistency.suppressed);
        for kept in [numbering, language] {
            findings.extend(kept.findings);
            suppressed.extend(kept.suppressed);
        }
        let policy = self.project.check.policy();
        policy.apply(&mut findings);
        // A kind the project turns off is not shown as suppressed either.
        policy.apply(&mut suppressed);
        sort_findings(&mut findings);
        sort_findings(&mut suppressed);
        Ok(ScanOutput {
            findings,
            warnings: suppression_warnings(&suppressions),
            unknown_kinds: suppressions.unknown_kinds.clone(),
            suppressed,
        })
    }
}

/// `koas check` on one document: [`Checker::new`] then [`Checker::check`].
pub fn check_document(text: &str, project: &ProjectConfig) -> Result<ScanOutput, ScanError> {
    Checker::new(project)?.check(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    fn checker() -> Checker {
        Checker::new(&ProjectConfig::default()).expect("default config")
    }

    #[test]
    fn a_budget_that_is_never_spent_gives_what_check_gives() {
        let text = "# T\n\n## 3. Capacity\n\nSee [x](#7-capacity).\n";
        let flag = AtomicBool::new(false);
        let budget = Budget::unlimited()
            .with_cancel(&flag)
            .with_limit(Duration::from_secs(3600));
        let c = checker();
        let within = c.check_within(text, &budget).expect("within budget");
        assert_eq!(within, c.check(text).expect("check"));
        assert_eq!(within.findings.len(), 1, "{within:?}");
    }

    #[test]
    fn a_spent_budget_is_a_distinct_error_not_partial_findings() {
        let text = "# T\n\nSee [x](#nowhere).\n";
        let flag = AtomicBool::new(true);
        let c = checker();
        let cancelled = c.check_within(text, &Budget::unlimited().with_cancel(&flag));
        assert!(
            matches!(cancelled, Err(CheckError::Cancelled)),
            "{cancelled:?}"
        );
        let over = c.check_within(text, &Budget::unlimited().with_limit(Duration::ZERO));
        assert!(
            matches!(over, Err(CheckError::OverBudget { limit }) if limit == Duration::ZERO),
            "{over:?}"
        );
    }

    /// A check cancelled while it runs stops well before it would have
    /// finished: the detectors poll the flag inside their loops.
    #[test]
    fn cancelling_a_running_check_stops_it_early() {
        let mut text = String::from("# Doc\n\n");
        for i in 0..800 {
            text.push_str(&format!(
                "## Section {i} about retries\n\nSee [s](#section-{i}-about-retrys) and \
                 Figure {i} and Table {i}, 12% of 40 units.\n\n"
            ));
        }
        let c = checker();
        let started = Instant::now();
        let full = c.check(&text).expect("check");
        let full_time = started.elapsed();
        assert!(!full.findings.is_empty());
        let flag = AtomicBool::new(false);
        let budget = Budget::unlimited().with_cancel(&flag);
        let stop_after = full_time / 10;
        let (result, stopped_in) = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(stop_after);
                flag.store(true, Ordering::Relaxed);
            });
            let started = Instant::now();
            let result = c.check_within(&text, &budget);
            (result, started.elapsed())
        });
        eprintln!(
            "full check {full_time:?}; cancelled after {stop_after:?}, returned in {stopped_in:?}"
        );
        assert!(matches!(result, Err(CheckError::Cancelled)), "{result:?}");
        assert!(
            stopped_in < full_time / 2,
            "cancelled at {stop_after:?}, returned at {stopped_in:?} of {full_time:?}"
        );
    }
}
