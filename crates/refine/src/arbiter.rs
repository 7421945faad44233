//! The arbiter: the judges' verdicts consolidated into one plan.
//!
//! Agreement is Krippendorff's alpha (interval) over the judges × units
//! score matrix, a unit being one criterion of one section. Issues are
//! filtered by it, clustered by section and criterion, and opposed
//! requests in one section (one asks to add, the other to cut) are
//! resolved by the criteria's priority: the higher one's fix is kept, the
//! lower criterion becomes a constraint.

use std::collections::{BTreeMap, BTreeSet};

use koas_review_schema::refine::{
    AgreementLevel, ConflictResolution, Criterion, FilteredIssue, FixAction, IssueSeverity,
    JudgeVerdict, RefinePlan, RefineState, RefineVerdicts, SectionTask, TargetedIssue,
};

use crate::alpha::{krippendorff_alpha, Level};
use crate::sections::DocSection;

/// α at or above which every issue is kept.
pub const HIGH_AGREEMENT: f64 = 0.80;
/// α at or above which issues raised by two judges are kept.
pub const MODERATE_AGREEMENT: f64 = 0.67;

/// The agreement level of `alpha` with `judges` usable verdicts.
pub fn agreement_level(alpha: Option<f64>, judges: usize) -> AgreementLevel {
    match alpha {
        // One judge, or judges that agree without any variation.
        None if judges <= 1 => AgreementLevel::High,
        None => AgreementLevel::High,
        Some(a) if a >= HIGH_AGREEMENT => AgreementLevel::High,
        Some(a) if a >= MODERATE_AGREEMENT => AgreementLevel::Moderate,
        Some(_) => AgreementLevel::Low,
    }
}

fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

const ADD_WORDS: &[&str] = &[
    "add",
    "expand",
    "elaborate",
    "more detail",
    "include",
    "extend",
    "explain more",
    "ajouter",
    "développer",
];
const CUT_WORDS: &[&str] = &[
    "simplify",
    "shorten",
    "remove",
    "cut",
    "condense",
    "concise",
    "trim",
    "fewer",
    "simplifier",
    "raccourcir",
    "supprimer",
];

fn asks(issue: &TargetedIssue, words: &[&str]) -> bool {
    let text = format!("{} {}", issue.fix_instructions, issue.description).to_lowercase();
    words.iter().any(|w| {
        text.split(|c: char| !c.is_alphanumeric() && c != ' ')
            .any(|piece| piece.contains(w))
    })
}

/// True when one issue asks to add and the other to cut.
pub fn opposed(a: &TargetedIssue, b: &TargetedIssue) -> bool {
    (asks(a, ADD_WORDS) && asks(b, CUT_WORDS)) || (asks(a, CUT_WORDS) && asks(b, ADD_WORDS))
}

/// The instruction of an issue: its fix instructions, else its
/// description.
pub fn instruction_of(issue: &TargetedIssue) -> String {
    let text = if issue.fix_instructions.trim().is_empty() {
        issue.description.trim()
    } else {
        issue.fix_instructions.trim()
    };
    text.trim_end_matches('.').to_owned()
}

/// A task's instruction lines, one per issue: `[severity] criterion: what
/// to do`.
pub fn task_instructions(issues: &[TargetedIssue]) -> Vec<String> {
    issues
        .iter()
        .map(|i| {
            format!(
                "[{}] {}: {}",
                i.severity.as_str(),
                i.criterion,
                instruction_of(i)
            )
        })
        .collect()
}

/// Consolidates the verdicts on the document whose sections are
/// `sections`.
pub fn consolidate(
    verdicts: &RefineVerdicts,
    sections: &[DocSection],
    state: &RefineState,
) -> RefinePlan {
    let usable: Vec<&JudgeVerdict> = verdicts
        .verdicts
        .iter()
        .filter(|v| v.sections.iter().any(|s| !s.scores.is_empty()))
        .collect();
    let mut plan = RefinePlan {
        doc_hash: verdicts.doc_hash.clone(),
        section_count: sections.len(),
        ..RefinePlan::default()
    };
    if usable.is_empty() {
        plan.no_assessment = Some(match &verdicts.skipped {
            Some(reason) => format!("no judge was asked: {reason}"),
            None => "no judge gave a readable verdict".to_owned(),
        });
        return plan;
    }
    plan.judges = usable.iter().map(|v| v.judge.clone()).collect();
    let level = agreement(&mut plan, &usable, sections);
    scores(&mut plan, &usable, sections);
    let kept = filter_issues(&mut plan, &usable, sections, level);
    plan.has_critical = kept.iter().any(|i| i.severity == IssueSeverity::Critical);
    let locked: BTreeSet<&str> = state.locked_sections.iter().map(String::as_str).collect();
    for section in sections {
        section_task(&mut plan, section, &kept, &locked);
    }
    plan.kept = kept;
    plan
}

/// The judges' agreement: the matrix of judges × (section, criterion)
/// scores (units nobody scored left out), Krippendorff's alpha over it
/// when two judges or more answered, and the level it gives.
fn agreement(
    plan: &mut RefinePlan,
    usable: &[&JudgeVerdict],
    sections: &[DocSection],
) -> AgreementLevel {
    let mut units = Vec::new();
    for s in sections {
        for c in Criterion::ALL {
            units.push((s.id.clone(), c));
        }
    }
    let mut matrix = Vec::new();
    for v in usable {
        let by_section: BTreeMap<&str, &BTreeMap<Criterion, f64>> = v
            .sections
            .iter()
            .map(|s| (s.section_id.as_str(), &s.scores))
            .collect();
        matrix.push(
            units
                .iter()
                .map(|(s, c)| by_section.get(s.as_str()).and_then(|m| m.get(c)).copied())
                .collect::<Vec<_>>(),
        );
    }
    let scored: Vec<usize> = (0..units.len())
        .filter(|u| matrix.iter().any(|row| row[*u].is_some()))
        .collect();
    plan.units = scored
        .iter()
        .map(|u| format!("{}/{}", units[*u].0, units[*u].1))
        .collect();
    plan.matrix = matrix
        .iter()
        .map(|row| scored.iter().map(|u| row[*u]).collect())
        .collect();
    plan.alpha = if usable.len() >= 2 {
        krippendorff_alpha(&plan.matrix, Level::Interval)
    } else {
        None
    };
    let level = agreement_level(plan.alpha, usable.len());
    plan.agreement = Some(level);
    plan.flagged_for_review = level == AgreementLevel::Low;
    level
}

/// The judges' mean score of each section and criterion, of each
/// criterion over the sections, and of the document.
fn scores(plan: &mut RefinePlan, usable: &[&JudgeVerdict], sections: &[DocSection]) {
    for s in sections {
        let mut per = BTreeMap::new();
        for c in Criterion::ALL {
            let values = usable.iter().filter_map(|v| {
                v.sections
                    .iter()
                    .find(|x| x.section_id == s.id)
                    .and_then(|x| x.scores.get(&c))
                    .copied()
            });
            if let Some(m) = mean(values) {
                per.insert(c, m);
            }
        }
        if !per.is_empty() {
            plan.section_scores.insert(s.id.clone(), per);
        }
    }
    for c in Criterion::ALL {
        if let Some(m) = mean(
            plan.section_scores
                .values()
                .filter_map(|m| m.get(&c).copied()),
        ) {
            plan.criteria_scores.insert(c, m);
        }
    }
    plan.score = mean(plan.criteria_scores.values().copied()).unwrap_or(0.0);
}

/// The issues kept at this level of agreement; the others go to
/// `plan.filtered` with the reason (an unknown section, one judge alone
/// under moderate agreement, not critical under low agreement).
fn filter_issues(
    plan: &mut RefinePlan,
    usable: &[&JudgeVerdict],
    sections: &[DocSection],
    level: AgreementLevel,
) -> Vec<TargetedIssue> {
    let known: BTreeSet<&str> = sections.iter().map(|s| s.id.as_str()).collect();
    let all: Vec<&TargetedIssue> = usable.iter().flat_map(|v| v.issues.iter()).collect();
    let mut raisers: BTreeMap<(String, Criterion), BTreeSet<String>> = BTreeMap::new();
    for i in &all {
        raisers
            .entry((i.section_id.clone(), i.criterion))
            .or_default()
            .insert(i.judge.clone());
    }
    let mut kept: Vec<TargetedIssue> = Vec::new();
    for issue in all {
        let reason = if !known.contains(issue.section_id.as_str()) {
            Some(format!("no section `{}` in the document", issue.section_id))
        } else {
            match level {
                AgreementLevel::High => None,
                AgreementLevel::Moderate => {
                    let n = raisers
                        .get(&(issue.section_id.clone(), issue.criterion))
                        .map_or(0, BTreeSet::len);
                    (n < 2).then(|| {
                        format!(
                            "raised by one judge while the judges agree only moderately (α {:.3})",
                            plan.alpha.unwrap_or(0.0)
                        )
                    })
                }
                AgreementLevel::Low => (issue.severity != IssueSeverity::Critical).then(|| {
                    format!(
                        "not critical while the judges disagree (α {:.3} < {MODERATE_AGREEMENT})",
                        plan.alpha.unwrap_or(0.0)
                    )
                }),
            }
        };
        match reason {
            Some(reason) => plan.filtered.push(FilteredIssue {
                issue: issue.clone(),
                reason,
            }),
            None => kept.push(issue.clone()),
        }
    }
    kept
}

/// The task of one section: its kept issues clustered by criterion, the
/// most severe of each cluster as its representative, opposed
/// representatives resolved in priority order (the lower one becomes a
/// constraint). Nothing for a section without issues; a locked section's
/// issues are named in `plan.skipped_locked`.
fn section_task(
    plan: &mut RefinePlan,
    section: &DocSection,
    kept: &[TargetedIssue],
    locked: &BTreeSet<&str>,
) {
    let mut clusters: BTreeMap<Criterion, Vec<TargetedIssue>> = BTreeMap::new();
    for i in kept.iter().filter(|i| i.section_id == section.id) {
        clusters.entry(i.criterion).or_default().push(i.clone());
    }
    if clusters.is_empty() {
        return;
    }
    if locked.contains(section.id.as_str()) {
        plan.skipped_locked.push(section.id.clone());
        return;
    }
    // Representatives: the most severe issue of each cluster, in
    // priority order (BTreeMap order is the hierarchy).
    let mut reps: Vec<TargetedIssue> = clusters
        .values()
        .filter_map(|c| c.iter().min_by_key(|i| i.severity).cloned())
        .collect();
    let constraints = resolve_conflicts(plan, section, &mut reps);
    let Some(priority) = reps.iter().map(|i| i.severity).min() else {
        return;
    };
    let action = if reps
        .iter()
        .any(|i| i.fix_action == FixAction::RegenerateSection)
    {
        FixAction::RegenerateSection
    } else {
        FixAction::SurgicalEdit
    };
    plan.tasks.push(SectionTask {
        section_id: section.id.clone(),
        section_title: section.title.clone(),
        index: section.index,
        action,
        instructions: task_instructions(&reps),
        constraints,
        priority,
        issues: reps,
        consistency_check: false,
    });
}

/// Of two opposed representatives the one first in the hierarchy is
/// kept and the other becomes a constraint ("X should not degrade"):
/// recorded in `plan.conflicts`, moved to `plan.filtered`. Returns the
/// constraints.
fn resolve_conflicts(
    plan: &mut RefinePlan,
    section: &DocSection,
    reps: &mut Vec<TargetedIssue>,
) -> Vec<String> {
    let mut constraints = Vec::new();
    let mut dropped: BTreeSet<String> = BTreeSet::new();
    for a in 0..reps.len() {
        for b in a + 1..reps.len() {
            if dropped.contains(&reps[a].id) || dropped.contains(&reps[b].id) {
                continue;
            }
            if opposed(&reps[a], &reps[b]) {
                // `a` comes first in the hierarchy.
                let resolution = format!(
                    "{}. CONSTRAINT: {} should not degrade",
                    instruction_of(&reps[a]),
                    reps[b].criterion
                );
                plan.conflicts.push(ConflictResolution {
                    section_id: section.id.clone(),
                    kept: reps[a].id.clone(),
                    constrained: reps[b].id.clone(),
                    resolution,
                });
                constraints.push(format!("{} should not degrade", reps[b].criterion));
                dropped.insert(reps[b].id.clone());
            }
        }
    }
    for id in &dropped {
        if let Some(pos) = reps.iter().position(|r| &r.id == id) {
            let issue = reps.remove(pos);
            plan.filtered.push(FilteredIssue {
                issue,
                reason:
                    "conflicts with a higher-priority issue of the section; kept as a constraint"
                        .to_owned(),
            });
        }
    }
    constraints
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sections::sections_of;
    use koas_review_schema::refine::{IssueScope, JudgeVerdict, SectionScores, TokenUse};

    pub(crate) fn issue(
        id: &str,
        judge: &str,
        section: &str,
        c: Criterion,
        s: IssueSeverity,
        fix: &str,
    ) -> TargetedIssue {
        TargetedIssue {
            id: id.into(),
            judge: judge.into(),
            section_id: section.into(),
            criterion: c,
            severity: s,
            fix_action: FixAction::SurgicalEdit,
            start_quote: None,
            end_quote: None,
            scope: IssueScope::Section,
            description: String::new(),
            fix_instructions: fix.into(),
        }
    }

    fn verdict(judge: &str, scores: &[(&str, f64)], issues: Vec<TargetedIssue>) -> JudgeVerdict {
        JudgeVerdict {
            judge: judge.into(),
            sections: scores
                .iter()
                .map(|(s, base)| SectionScores {
                    section_id: (*s).into(),
                    scores: Criterion::ALL
                        .iter()
                        .enumerate()
                        .map(|(i, c)| (*c, (base - 0.05 * i as f64).clamp(0.0, 1.0)))
                        .collect(),
                })
                .collect(),
            issues,
            unreadable: vec![],
            tokens: TokenUse::default(),
        }
    }

    const DOC: &str = "# A\n\nOne.\n\n# B\n\nTwo.\n\n# C\n\nThree.\n";

    #[test]
    fn agreeing_judges_keep_every_issue() {
        let s = sections_of(DOC);
        let v = RefineVerdicts {
            verdicts: vec![
                verdict(
                    "j1",
                    &[("S1", 0.9), ("S2", 0.5), ("S3", 0.8)],
                    vec![issue(
                        "J1-1",
                        "j1",
                        "S2",
                        Criterion::Clarity,
                        IssueSeverity::Minor,
                        "Say it plainly",
                    )],
                ),
                verdict("j2", &[("S1", 0.9), ("S2", 0.52), ("S3", 0.79)], vec![]),
            ],
            ..Default::default()
        };
        let plan = consolidate(&v, &s, &RefineState::default());
        assert!(plan.alpha.expect("alpha") > 0.8, "{:?}", plan.alpha);
        assert_eq!(plan.agreement, Some(AgreementLevel::High));
        assert_eq!(plan.kept.len(), 1);
        assert_eq!(plan.tasks.len(), 1);
        assert_eq!(plan.tasks[0].section_id, "S2");
        assert_eq!(plan.units.len(), 18);
    }

    #[test]
    fn disagreeing_judges_keep_only_critical_issues_and_flag_the_plan() {
        let s = sections_of(DOC);
        let v = RefineVerdicts {
            verdicts: vec![
                verdict(
                    "j1",
                    &[("S1", 0.95), ("S2", 0.2), ("S3", 0.9)],
                    vec![
                        issue(
                            "J1-1",
                            "j1",
                            "S2",
                            Criterion::Consistency,
                            IssueSeverity::Critical,
                            "Fix the number",
                        ),
                        issue(
                            "J1-2",
                            "j1",
                            "S3",
                            Criterion::Clarity,
                            IssueSeverity::Minor,
                            "Plainer",
                        ),
                    ],
                ),
                verdict(
                    "j2",
                    &[("S1", 0.2), ("S2", 0.95), ("S3", 0.3)],
                    vec![issue(
                        "J2-1",
                        "j2",
                        "S1",
                        Criterion::Tone,
                        IssueSeverity::Major,
                        "Less casual",
                    )],
                ),
            ],
            ..Default::default()
        };
        let plan = consolidate(&v, &s, &RefineState::default());
        assert!(plan.alpha.expect("alpha") < MODERATE_AGREEMENT);
        assert!(plan.flagged_for_review);
        let kept: Vec<&str> = plan.kept.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(kept, ["J1-1"]);
        assert_eq!(plan.filtered.len(), 2);
    }

    #[test]
    fn moderate_agreement_keeps_issues_two_judges_raised() {
        let s = sections_of(DOC);
        let rows = |j: &str, issues| JudgeVerdict {
            judge: j.into(),
            sections: vec![],
            issues,
            unreadable: vec![],
            tokens: TokenUse::default(),
        };
        let mut a = rows(
            "j1",
            vec![
                issue(
                    "J1-1",
                    "j1",
                    "S2",
                    Criterion::Clarity,
                    IssueSeverity::Minor,
                    "x",
                ),
                issue(
                    "J1-2",
                    "j1",
                    "S3",
                    Criterion::Tone,
                    IssueSeverity::Minor,
                    "y",
                ),
            ],
        );
        let mut b = rows(
            "j2",
            vec![issue(
                "J2-1",
                "j2",
                "S2",
                Criterion::Clarity,
                IssueSeverity::Major,
                "x2",
            )],
        );
        // Scores chosen for α ≈ 0.7: mostly agreeing, one unit apart.
        let score = |vals: &[f64]| -> Vec<SectionScores> {
            ["S1", "S2", "S3"]
                .iter()
                .zip(vals)
                .map(|(s, v)| SectionScores {
                    section_id: (*s).into(),
                    scores: [(Criterion::Clarity, *v)].into_iter().collect(),
                })
                .collect()
        };
        a.sections = score(&[0.9, 0.5, 0.7]);
        b.sections = score(&[0.8, 0.4, 0.9]);
        let v = RefineVerdicts {
            verdicts: vec![a, b],
            ..Default::default()
        };
        let plan = consolidate(&v, &s, &RefineState::default());
        let alpha = plan.alpha.expect("alpha");
        assert_eq!(plan.agreement, Some(AgreementLevel::Moderate), "α {alpha}");
        let kept: BTreeSet<&str> = plan.kept.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(kept, ["J1-1", "J2-1"].into_iter().collect());
        // One task for S2, its representative the more severe issue.
        assert_eq!(plan.tasks.len(), 1);
        assert_eq!(plan.tasks[0].issues[0].id, "J2-1");
    }

    #[test]
    fn opposed_requests_are_resolved_by_priority() {
        let s = sections_of(DOC);
        let v = RefineVerdicts {
            verdicts: vec![verdict(
                "j1",
                &[("S1", 0.9), ("S2", 0.6), ("S3", 0.9)],
                vec![
                    issue(
                        "J1-1",
                        "j1",
                        "S2",
                        Criterion::Completeness,
                        IssueSeverity::Major,
                        "Add more details about funnel stages",
                    ),
                    issue(
                        "J1-2",
                        "j1",
                        "S2",
                        Criterion::Clarity,
                        IssueSeverity::Minor,
                        "Simplify the language, too complex",
                    ),
                    issue(
                        "J1-3",
                        "j1",
                        "S2",
                        Criterion::Terminology,
                        IssueSeverity::Minor,
                        "Use 'record' throughout",
                    ),
                ],
            )],
            ..Default::default()
        };
        let plan = consolidate(&v, &s, &RefineState::default());
        assert_eq!(plan.conflicts.len(), 1, "{:?}", plan.conflicts);
        let c = &plan.conflicts[0];
        assert_eq!((c.kept.as_str(), c.constrained.as_str()), ("J1-2", "J1-1"));
        assert_eq!(
            c.resolution,
            "Simplify the language, too complex. CONSTRAINT: completeness should not degrade"
        );
        let task = &plan.tasks[0];
        assert_eq!(task.constraints, ["completeness should not degrade"]);
        let ids: Vec<&str> = task.issues.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["J1-2", "J1-3"]);
    }

    #[test]
    fn locked_sections_get_no_task_and_unreadable_verdicts_no_plan() {
        let s = sections_of(DOC);
        let v = RefineVerdicts {
            verdicts: vec![verdict(
                "j1",
                &[("S2", 0.5)],
                vec![issue(
                    "J1-1",
                    "j1",
                    "S2",
                    Criterion::Clarity,
                    IssueSeverity::Minor,
                    "x",
                )],
            )],
            ..Default::default()
        };
        let state = RefineState {
            iteration: 1,
            locked_sections: vec!["S2".into()],
        };
        let plan = consolidate(&v, &s, &state);
        assert!(plan.tasks.is_empty());
        assert_eq!(plan.skipped_locked, ["S2"]);
        let none = consolidate(&RefineVerdicts::default(), &s, &state);
        assert!(none.no_assessment.is_some());
    }
}
