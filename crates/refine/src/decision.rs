//! A person's decision after a semi-auto run escalated: which issues of
//! the stored plan to fix. The decided plan goes to the fixers without
//! asking the judges again; the fixes are verified like any other.

use std::collections::{BTreeMap, BTreeSet};

use koas_review_schema::refine::{FixAction, RefinePlan, SectionTask, TargetedIssue};

use crate::arbiter::task_instructions;
use crate::sections::DocSection;

/// Why a stored plan cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    /// The document changed since the plan was made: its quotes and
    /// sections may no longer be there.
    #[error("the plan was made for another version of the document (plan {plan}, document now {current}); make a new plan with `koas refine DOC --plan-only`")]
    Stale {
        /// The plan's document hash.
        plan: String,
        /// The current document's hash.
        current: String,
    },
    /// An accepted ID names no issue of the plan.
    #[error("issue `{id}` is not in the plan; its issues are: {known}")]
    UnknownIssue {
        /// The ID given.
        id: String,
        /// The plan's issue IDs.
        known: String,
    },
    /// A task or issue of the plan names a section the document lacks.
    #[error("the plan names section `{0}`, which the document does not have")]
    UnknownSection(String),
    /// Nothing would be fixed.
    #[error("nothing to fix: {0}")]
    Empty(&'static str),
}

/// The plan to fix: `plan` as stored (a person may have edited its tasks)
/// when `accepted` is `None`, else one task per section of the accepted
/// issues. An accepted issue may be one the arbiter filtered out (the
/// judges disagreed) or one of a section locked during the run: the
/// person overrides both. `current_hash` is the `sha256:` of the
/// document the fixes will address.
pub fn decided_plan(
    plan: &RefinePlan,
    accepted: Option<&[String]>,
    sections: &[DocSection],
    current_hash: &str,
) -> Result<RefinePlan, DecisionError> {
    if !koas_kernel_api::hash::same_hash(&plan.doc_hash, current_hash) {
        return Err(DecisionError::Stale {
            plan: plan.doc_hash.clone(),
            current: current_hash.to_owned(),
        });
    }
    let by_id: BTreeMap<&str, &DocSection> = sections.iter().map(|s| (s.id.as_str(), s)).collect();
    let Some(accepted) = accepted else {
        if let Some(t) = plan
            .tasks
            .iter()
            .find(|t| !by_id.contains_key(t.section_id.as_str()))
        {
            return Err(DecisionError::UnknownSection(t.section_id.clone()));
        }
        if plan.tasks.is_empty() {
            return Err(DecisionError::Empty("the plan has no task"));
        }
        let mut decided = plan.clone();
        decided.skipped_locked.clear();
        return Ok(decided);
    };
    let chosen = chosen_issues(plan, accepted, &by_id)?;
    let mut per_section: BTreeMap<usize, Vec<TargetedIssue>> = BTreeMap::new();
    for issue in &chosen {
        if let Some(s) = by_id.get(issue.section_id.as_str()) {
            per_section.entry(s.index).or_default().push(issue.clone());
        }
    }
    let mut decided = plan.clone();
    decided.kept = chosen.clone();
    decided.has_critical = chosen
        .iter()
        .any(|i| i.severity == koas_review_schema::refine::IssueSeverity::Critical);
    decided.skipped_locked.clear();
    decided.tasks = Vec::new();
    for (index, mut issues) in per_section {
        let Some(section) = sections.iter().find(|s| s.index == index) else {
            continue;
        };
        // Most severe first, then in the priority order of the criteria.
        issues.sort_by_key(|i| (i.severity, i.criterion));
        let Some(priority) = issues.iter().map(|i| i.severity).min() else {
            continue;
        };
        // The constraints the arbiter set for the section still hold.
        let constraints: Vec<String> = plan
            .tasks
            .iter()
            .find(|t| t.section_id == section.id)
            .map(|t| t.constraints.clone())
            .unwrap_or_default()
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        decided.tasks.push(SectionTask {
            section_id: section.id.clone(),
            section_title: section.title.clone(),
            index,
            action: if issues
                .iter()
                .any(|i| i.fix_action == FixAction::RegenerateSection)
            {
                FixAction::RegenerateSection
            } else {
                FixAction::SurgicalEdit
            },
            instructions: task_instructions(&issues),
            constraints,
            priority,
            issues,
            consistency_check: false,
        });
    }
    Ok(decided)
}

/// The issues of `plan` (kept or filtered out) that `accepted` names,
/// each once, in the order named.
fn chosen_issues(
    plan: &RefinePlan,
    accepted: &[String],
    by_id: &BTreeMap<&str, &DocSection>,
) -> Result<Vec<TargetedIssue>, DecisionError> {
    let pool: Vec<&TargetedIssue> = plan
        .kept
        .iter()
        .chain(plan.filtered.iter().map(|f| &f.issue))
        .collect();
    let mut chosen: Vec<TargetedIssue> = Vec::new();
    for id in accepted {
        let id = id.trim();
        if id.is_empty() || chosen.iter().any(|i| i.id == id) {
            continue;
        }
        let Some(issue) = pool.iter().find(|i| i.id == id) else {
            let mut known: Vec<&str> = pool.iter().map(|i| i.id.as_str()).collect();
            known.dedup();
            return Err(DecisionError::UnknownIssue {
                id: id.to_owned(),
                known: if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                },
            });
        };
        if !by_id.contains_key(issue.section_id.as_str()) {
            return Err(DecisionError::UnknownSection(issue.section_id.clone()));
        }
        chosen.push((*issue).clone());
    }
    if chosen.is_empty() {
        return Err(DecisionError::Empty("no issue was accepted"));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sections::sections_of;
    use koas_review_schema::refine::{
        Criterion, FilteredIssue, IssueScope, IssueSeverity, RefinePlan,
    };

    const DOC: &str = "# A\n\nOne.\n\n# B\n\nTwo.\n\n# C\n\nThree.\n";

    fn issue(id: &str, section: &str, c: Criterion, s: IssueSeverity) -> TargetedIssue {
        TargetedIssue {
            id: id.into(),
            judge: "judge".into(),
            section_id: section.into(),
            criterion: c,
            severity: s,
            fix_action: FixAction::SurgicalEdit,
            start_quote: None,
            end_quote: None,
            scope: IssueScope::Section,
            description: format!("problem {id}"),
            fix_instructions: format!("fix {id}"),
        }
    }

    fn plan() -> RefinePlan {
        let sections = sections_of(DOC);
        let kept = vec![
            issue(
                "J1-1",
                &sections[0].id,
                Criterion::Clarity,
                IssueSeverity::Minor,
            ),
            issue(
                "J1-2",
                &sections[2].id,
                Criterion::Consistency,
                IssueSeverity::Major,
            ),
        ];
        RefinePlan {
            doc_hash: koas_kernel_api::hash::sha256(DOC),
            kept: kept.clone(),
            filtered: vec![FilteredIssue {
                issue: issue(
                    "J2-1",
                    &sections[1].id,
                    Criterion::Tone,
                    IssueSeverity::Minor,
                ),
                reason: "raised by one judge".into(),
            }],
            tasks: vec![SectionTask {
                section_id: sections[0].id.clone(),
                section_title: "A".into(),
                index: 0,
                action: FixAction::SurgicalEdit,
                instructions: vec!["[minor] clarity: fix J1-1".into()],
                constraints: vec!["tone should not degrade".into()],
                priority: IssueSeverity::Minor,
                issues: vec![kept[0].clone()],
                consistency_check: false,
            }],
            skipped_locked: vec![sections[2].id.clone()],
            section_count: 3,
            ..RefinePlan::default()
        }
    }

    #[test]
    fn the_plan_as_stored_is_applied_whole() {
        let s = sections_of(DOC);
        let d =
            decided_plan(&plan(), None, &s, &koas_kernel_api::hash::sha256(DOC)).expect("decided");
        assert_eq!(d.tasks, plan().tasks);
        assert!(d.skipped_locked.is_empty());
    }

    #[test]
    fn accepted_issues_make_the_tasks_filtered_and_locked_ones_included() {
        let s = sections_of(DOC);
        let ids = ["J2-1".to_owned(), "J1-2".to_owned()];
        let d = decided_plan(&plan(), Some(&ids), &s, &koas_kernel_api::hash::sha256(DOC))
            .expect("decided");
        let tasks: Vec<(&str, usize)> = d
            .tasks
            .iter()
            .map(|t| (t.section_id.as_str(), t.issues.len()))
            .collect();
        // In document order; the first section's issue was not accepted.
        assert_eq!(tasks, [(s[1].id.as_str(), 1), (s[2].id.as_str(), 1)]);
        assert_eq!(d.tasks[1].instructions, ["[major] consistency: fix J1-2"]);
        assert_eq!(
            d.kept.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(),
            ["J2-1", "J1-2"]
        );
        assert!(!d.has_critical);
    }

    #[test]
    fn a_stale_plan_an_unknown_id_or_nothing_accepted_is_refused() {
        let s = sections_of(DOC);
        let other = koas_kernel_api::hash::sha256("# A\n\nChanged.\n");
        assert!(matches!(
            decided_plan(&plan(), None, &s, &other),
            Err(DecisionError::Stale { .. })
        ));
        let now = koas_kernel_api::hash::sha256(DOC);
        let err = decided_plan(&plan(), Some(&["J9-9".to_owned()]), &s, &now).expect_err("unknown");
        assert!(err.to_string().contains("J1-1, J1-2, J2-1"), "{err}");
        assert!(matches!(
            decided_plan(&plan(), Some(&[" ".to_owned()]), &s, &now),
            Err(DecisionError::Empty(_))
        ));
        let mut empty = plan();
        empty.tasks.clear();
        assert!(matches!(
            decided_plan(&empty, None, &s, &now),
            Err(DecisionError::Empty(_))
        ));
    }
}
