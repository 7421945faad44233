//! Iteration control: quality locks, oscillation locks, the stopping
//! conditions of both modes, the best iteration and what a run costs
//! against rewriting the whole document.

use std::collections::BTreeMap;

use koas_review_schema::refine::{Criterion, QualityStatus, RefineStatus, TargetedIssue};

/// Semi-auto (a person decides at the end) or full-auto (best effort).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Stops with `escalated` when the target is not met.
    SemiAuto,
    /// Returns the best iteration.
    FullAuto,
}

impl Mode {
    /// `semi-auto` or `full-auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::SemiAuto => "semi-auto",
            Mode::FullAuto => "full-auto",
        }
    }

    /// Reads `semi-auto`/`semi` or `full-auto`/`full`.
    pub fn parse(text: &str) -> Option<Mode> {
        match text.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "semi-auto" | "semi" => Some(Mode::SemiAuto),
            "full-auto" | "full" | "auto" => Some(Mode::FullAuto),
            _ => None,
        }
    }

    /// Score that accepts at once.
    pub fn accept_threshold(self) -> f64 {
        match self {
            Mode::SemiAuto => 0.90,
            Mode::FullAuto => 0.85,
        }
    }

    /// Score that accepts when no critical issue is left.
    pub fn good_enough_threshold(self) -> f64 {
        match self {
            Mode::SemiAuto => 0.85,
            Mode::FullAuto => 0.75,
        }
    }
}

/// Limits and tolerances of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Rounds of fixes at most.
    pub max_iterations: u32,
    /// Model tokens at most (prompt and completion).
    pub max_tokens: u64,
    /// Wall time at most, in seconds.
    pub timeout_secs: u64,
    /// A locked criterion may drop this much.
    pub regression_tolerance: f64,
    /// Edits of one section before it is locked.
    pub section_lock_after: u32,
    /// Smallest improvement that is not convergence.
    pub convergence_threshold: f64,
    /// Criterion score at or above which it is locked.
    pub lock_threshold: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_iterations: 3,
            max_tokens: 15_000,
            timeout_secs: 300,
            regression_tolerance: 0.05,
            section_lock_after: 2,
            convergence_threshold: 0.02,
            lock_threshold: 0.85,
        }
    }
}

/// Where a run stands when its document was just scored.
#[derive(Debug, Clone, Copy)]
pub struct Standing<'a> {
    /// Rounds of fixes done so far.
    pub iteration: u32,
    /// Scores of every state scored so far, the current one last.
    pub history: &'a [f64],
    /// A kept issue is critical.
    pub has_critical: bool,
    /// Tokens spent so far.
    pub tokens: u64,
    /// Seconds since the start.
    pub elapsed_secs: u64,
    /// The plan has something to fix.
    pub has_tasks: bool,
}

/// The improvement of the last step stayed under `threshold` twice in a
/// row.
pub fn converged(history: &[f64], threshold: f64) -> bool {
    if history.len() < 3 {
        return false;
    }
    let n = history.len();
    history[n - 1] - history[n - 2] < threshold && history[n - 2] - history[n - 3] < threshold
}

/// Whether to stop now, and how: `None` goes on with another round.
pub fn decide(mode: Mode, limits: &Limits, at: &Standing<'_>) -> Option<(RefineStatus, String)> {
    let score = at.history.last().copied().unwrap_or(0.0);
    let unmet = match mode {
        Mode::SemiAuto => RefineStatus::Escalated,
        Mode::FullAuto => RefineStatus::BestEffort,
    };
    if score >= mode.accept_threshold() {
        return Some((
            RefineStatus::Accepted,
            format!("score {score:.3} ≥ {}", mode.accept_threshold()),
        ));
    }
    if score >= mode.good_enough_threshold() && !at.has_critical {
        let status = match mode {
            Mode::SemiAuto => RefineStatus::Accepted,
            Mode::FullAuto => RefineStatus::AcceptedWarning,
        };
        return Some((
            status,
            format!(
                "score {score:.3} ≥ {} and no critical issue",
                mode.good_enough_threshold()
            ),
        ));
    }
    if at.tokens >= limits.max_tokens {
        return Some((
            unmet,
            format!("token budget spent ({} ≥ {})", at.tokens, limits.max_tokens),
        ));
    }
    if at.elapsed_secs >= limits.timeout_secs {
        return Some((unmet, format!("timeout ({} s)", limits.timeout_secs)));
    }
    if at.iteration >= limits.max_iterations {
        return Some((
            unmet,
            format!("{} iterations done (the maximum)", limits.max_iterations),
        ));
    }
    if converged(at.history, limits.convergence_threshold) {
        return Some((
            unmet,
            format!(
                "converged: the score improved less than {:.0}% twice in a row",
                limits.convergence_threshold * 100.0
            ),
        ));
    }
    if !at.has_tasks {
        return Some((unmet, "nothing left that may be fixed".into()));
    }
    None
}

/// Criteria that dropped below their lock by more than `tolerance`:
/// (criterion, locked score, new score).
pub fn regressions(
    locks: &BTreeMap<Criterion, f64>,
    scores: &BTreeMap<Criterion, f64>,
    tolerance: f64,
) -> Vec<(Criterion, f64, f64)> {
    locks
        .iter()
        .filter_map(|(c, locked)| {
            let now = scores.get(c)?;
            (*now < locked - tolerance).then_some((*c, *locked, *now))
        })
        .collect()
}

/// Locks every criterion that passed (`≥ threshold`), at its best score.
pub fn update_locks(
    locks: &mut BTreeMap<Criterion, f64>,
    scores: &BTreeMap<Criterion, f64>,
    threshold: f64,
) {
    for (c, s) in scores {
        if *s >= threshold {
            let e = locks.entry(*c).or_insert(*s);
            if *s > *e {
                *e = *s;
            }
        }
    }
}

/// The quality of a score.
pub fn quality_status(score: f64) -> QualityStatus {
    if score >= 0.85 {
        QualityStatus::Good
    } else if score >= 0.75 {
        QualityStatus::Acceptable
    } else {
        QualityStatus::BelowStandard
    }
}

/// Index of the best of `candidates` (index, score): highest score, the
/// earliest on a tie (fewer changes).
pub fn best(candidates: &[(usize, f64)]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, s) in candidates {
        if best.map_or(true, |(_, b)| *s > b) {
            best = Some((*i, *s));
        }
    }
    best.map(|(i, _)| i)
}

/// One hint per criterion with unresolved issues, most severe first.
pub fn hints(unresolved: &[TargetedIssue]) -> Vec<String> {
    let mut by: BTreeMap<Criterion, Vec<&TargetedIssue>> = BTreeMap::new();
    for i in unresolved {
        by.entry(i.criterion).or_default().push(i);
    }
    by.into_iter()
        .map(|(c, issues)| {
            let sections: std::collections::BTreeSet<&str> =
                issues.iter().map(|i| i.section_id.as_str()).collect();
            let first = issues
                .iter()
                .min_by_key(|i| i.severity)
                .map(|i| crate::arbiter::instruction_of(i))
                .unwrap_or_default();
            format!(
                "{c}: {} issue(s) in {} — e.g. {first}",
                issues.len(),
                sections.into_iter().collect::<Vec<_>>().join(", ")
            )
        })
        .collect()
}

/// Estimated tokens of asking the model to rewrite the whole document
/// with these issues: the prompt (document, issues, the instructions of
/// the patch prompt) and an answer as long as the document.
pub fn full_rewrite_tokens(document: &str, issues: &[TargetedIssue], instructions: &str) -> u64 {
    let listed: String = issues
        .iter()
        .map(|i| {
            format!(
                "- [{}] {} in {}: {}\n",
                i.severity.as_str(),
                i.criterion,
                i.section_id,
                crate::arbiter::instruction_of(i)
            )
        })
        .collect();
    let prompt =
        crate::estimate(document) + crate::estimate(&listed) + crate::estimate(instructions);
    prompt + crate::estimate(document)
}

/// What a run is expected to cost, before anything is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// Sections the judges score.
    pub sections: usize,
    /// Judges (each scores every section).
    pub judges: usize,
    /// Tokens of one assessment of the whole document.
    pub assessment: u64,
    /// The default budget: one assessment, then for each round of fixes
    /// the fixes of a few sections, their verification and the judges'
    /// second look at them (unchanged sections are answered from the
    /// cache, which costs nothing).
    pub default_budget: u64,
}

/// A judge's typical answer, in tokens (its cap is far higher; a budget
/// planned on the cap would be several times what a run spends).
const JUDGE_ANSWER_TOKENS: u64 = 250;
/// What a judge's prompt shows of the neighbouring sections, in
/// characters (three sentences either side).
const NEIGHBOUR_CHARS: usize = 600;
/// Sections fixed per round that the default budget plans for.
const SECTIONS_FIXED_PER_ROUND: u64 = 4;
/// A fix's answer and its verification, in tokens, besides re-reading
/// the section.
const FIX_TOKENS: u64 = 1_500;
/// The least default budget (a small document's run).
const LEAST_BUDGET: u64 = 15_000;

/// The cost of refining `text` with `judges` judges whose prompt template
/// has `template_chars` characters, in at most `max_iterations` rounds.
pub fn estimate(text: &str, judges: usize, template_chars: usize, max_iterations: u32) -> Estimate {
    let sections = crate::sections::sections_of(text);
    let lines = crate::sections::doc_lines(text);
    let outline: usize = sections
        .iter()
        .map(|s| s.id.len() + s.title.len() + 2)
        .sum();
    let per_section: Vec<u64> = sections
        .iter()
        .map(|s| {
            let chars = template_chars + outline + s.body_text(&lines).len() + NEIGHBOUR_CHARS;
            chars as u64 / 4 + JUDGE_ANSWER_TOKENS
        })
        .collect();
    let judges_n = judges.max(1) as u64;
    let assessment = per_section.iter().sum::<u64>() * judges_n;
    let mean = per_section.iter().sum::<u64>() / per_section.len().max(1) as u64;
    let fixed = SECTIONS_FIXED_PER_ROUND.min(sections.len() as u64);
    let round = fixed * (mean * judges_n + mean + FIX_TOKENS);
    Estimate {
        sections: sections.len(),
        judges: judges.max(1),
        assessment,
        default_budget: (assessment + u64::from(max_iterations) * round).max(LEAST_BUDGET),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_default_budget_covers_judging_and_fixing_a_thirty_section_document() {
        let mut doc = String::from("# Spec\n\nIntro text of the specification.\n\n");
        for n in 1..=30 {
            doc.push_str(&format!("## Part {n}\n\n"));
            for _ in 0..6 {
                doc.push_str("The server must answer every request within the stated time limit. ");
            }
            doc.push_str("\n\n");
        }
        let one = estimate(&doc, 1, 1545, 3);
        assert_eq!(one.sections, 31, "{one:?}");
        // Each section's prompt holds the template, the outline and the
        // section: hundreds of tokens each.
        assert!(
            one.assessment > 31 * 500 && one.assessment < 31 * 1500,
            "{one:?}"
        );
        assert!(one.default_budget > one.assessment * 2, "{one:?}");
        // The old fixed default could not cover one assessment.
        assert!(one.assessment > 15_000, "{one:?}");
        let two = estimate(&doc, 2, 1545, 3);
        assert_eq!(two.assessment, one.assessment * 2);
        // A tiny document keeps the least budget.
        assert_eq!(
            estimate("# A\n\nx\n", 1, 1545, 3).default_budget,
            LEAST_BUDGET
        );
    }

    use super::*;

    fn at(iteration: u32, history: &[f64]) -> Standing<'_> {
        Standing {
            iteration,
            history,
            has_critical: false,
            tokens: 0,
            elapsed_secs: 0,
            has_tasks: true,
        }
    }

    #[test]
    fn thresholds_of_both_modes() {
        let l = Limits::default();
        assert_eq!(
            decide(Mode::FullAuto, &l, &at(0, &[0.86])).map(|d| d.0),
            Some(RefineStatus::Accepted)
        );
        assert_eq!(
            decide(Mode::SemiAuto, &l, &at(0, &[0.86])).map(|d| d.0),
            Some(RefineStatus::Accepted)
        );
        assert_eq!(decide(Mode::SemiAuto, &l, &at(0, &[0.80])), None);
        assert_eq!(
            decide(Mode::FullAuto, &l, &at(0, &[0.80])).map(|d| d.0),
            Some(RefineStatus::AcceptedWarning)
        );
        let mut critical = at(0, &[0.80]);
        critical.has_critical = true;
        assert_eq!(decide(Mode::FullAuto, &l, &critical), None);
    }

    #[test]
    fn hard_limits_and_convergence() {
        let l = Limits::default();
        assert_eq!(
            decide(Mode::FullAuto, &l, &at(3, &[0.5, 0.6, 0.7, 0.72])).map(|d| d.0),
            Some(RefineStatus::BestEffort)
        );
        assert_eq!(
            decide(Mode::SemiAuto, &l, &at(3, &[0.5, 0.6, 0.7, 0.72])).map(|d| d.0),
            Some(RefineStatus::Escalated)
        );
        let mut spent = at(1, &[0.5, 0.6]);
        spent.tokens = 15_000;
        assert!(decide(Mode::FullAuto, &l, &spent).is_some_and(|d| d.1.contains("token")));
        assert!(converged(&[0.5, 0.51, 0.515], 0.02));
        assert!(!converged(&[0.5, 0.6, 0.61], 0.02));
        assert!(decide(Mode::FullAuto, &l, &at(2, &[0.5, 0.51, 0.515]))
            .is_some_and(|d| d.1.contains("converged")));
    }

    #[test]
    fn locks_regressions_and_best() {
        let mut locks = BTreeMap::new();
        let s1: BTreeMap<Criterion, f64> =
            [(Criterion::Clarity, 0.9), (Criterion::Tone, 0.6)].into();
        update_locks(&mut locks, &s1, 0.85);
        assert_eq!(locks.len(), 1);
        let s2: BTreeMap<Criterion, f64> =
            [(Criterion::Clarity, 0.86), (Criterion::Tone, 0.2)].into();
        assert!(regressions(&locks, &s2, 0.05).is_empty());
        let s3: BTreeMap<Criterion, f64> = [(Criterion::Clarity, 0.8)].into();
        assert_eq!(
            regressions(&locks, &s3, 0.05),
            vec![(Criterion::Clarity, 0.9, 0.8)]
        );
        assert_eq!(best(&[(0, 0.5), (1, 0.7), (2, 0.7), (3, 0.6)]), Some(1));
        assert_eq!(quality_status(0.8), QualityStatus::Acceptable);
    }
}
