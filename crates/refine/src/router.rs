//! The router: the fix each task gets, and the batches the fixes run in.

use koas_review_schema::refine::{
    Criterion, FixAction, IssueSeverity, RefinePlan, RefineRouting, SectionTask,
};

/// Below this structure score the document needs a full rewrite.
pub const STRUCTURE_FLOOR: f64 = 0.6;
/// Above this share of sections with a critical issue, too.
pub const CRITICAL_CEILING: f64 = 0.4;

/// The fix one task needs: a section rewrite for a major factual or
/// consistency problem or a critical gap, else a surgical edit.
pub fn route_task(task: &SectionTask) -> FixAction {
    let regenerate = task.issues.iter().any(|i| {
        (i.criterion == Criterion::Consistency
            && matches!(i.severity, IssueSeverity::Critical | IssueSeverity::Major))
            || (i.criterion == Criterion::Completeness && i.severity == IssueSeverity::Critical)
    });
    if regenerate {
        FixAction::RegenerateSection
    } else {
        FixAction::SurgicalEdit
    }
}

/// Groups section positions into batches: each position goes to the
/// first batch holding no neighbour of it (so `[1, 3, 4, 7]` gives
/// `[[1, 3, 7], [4]]`).
pub fn non_adjacent_batches(indices: &[usize]) -> Vec<Vec<usize>> {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut batches: Vec<Vec<usize>> = Vec::new();
    for i in sorted {
        let slot = batches
            .iter()
            .position(|b| b.iter().all(|j| i.abs_diff(*j) > 1));
        match slot {
            Some(k) => batches[k].push(i),
            None => batches.push(vec![i]),
        }
    }
    batches
}

/// Routes every task of `plan`.
pub fn route(plan: &RefinePlan) -> RefineRouting {
    let structure_score = plan
        .criteria_scores
        .get(&Criterion::Structure)
        .copied()
        .unwrap_or(1.0);
    let critical_sections = plan
        .kept
        .iter()
        .filter(|i| i.severity == IssueSeverity::Critical)
        .map(|i| i.section_id.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let critical_ratio = if plan.section_count == 0 {
        0.0
    } else {
        critical_sections as f64 / plan.section_count as f64
    };
    let mut routing = RefineRouting {
        doc_hash: plan.doc_hash.clone(),
        structure_score,
        critical_ratio,
        ..RefineRouting::default()
    };
    if plan.no_assessment.is_none() && structure_score < STRUCTURE_FLOOR {
        routing.full_regenerate = Some(format!(
            "the structure scores {structure_score:.2} (< {STRUCTURE_FLOOR}): the document needs a rewrite, not targeted fixes"
        ));
        return routing;
    }
    if critical_ratio > CRITICAL_CEILING && plan.section_count > 1 {
        routing.full_regenerate = Some(format!(
            "{critical_sections} of {} sections have a critical issue (> {:.0}%): the document needs a rewrite, not targeted fixes",
            plan.section_count,
            CRITICAL_CEILING * 100.0
        ));
        return routing;
    }
    route_tasks_into(plan, routing)
}

/// Routes every task of `plan` without the whole-document verdict: the
/// plan a person decided on after an escalation is fixed as decided.
pub fn route_tasks(plan: &RefinePlan) -> RefineRouting {
    let structure_score = plan
        .criteria_scores
        .get(&Criterion::Structure)
        .copied()
        .unwrap_or(1.0);
    route_tasks_into(
        plan,
        RefineRouting {
            doc_hash: plan.doc_hash.clone(),
            structure_score,
            decided: true,
            ..RefineRouting::default()
        },
    )
}

fn route_tasks_into(plan: &RefinePlan, mut routing: RefineRouting) -> RefineRouting {
    let mut tasks: Vec<SectionTask> = plan.tasks.clone();
    for t in &mut tasks {
        t.action = route_task(t);
    }
    // A regenerated section may no longer agree with the one after it.
    let regenerated: Vec<usize> = tasks
        .iter()
        .filter(|t| t.action == FixAction::RegenerateSection)
        .map(|t| t.index)
        .collect();
    for t in &mut tasks {
        if regenerated.iter().any(|r| r + 1 == t.index) {
            t.consistency_check = true;
        }
    }
    let by_index = |i: usize| {
        tasks
            .iter()
            .find(|t| t.index == i)
            .map(|t| t.section_id.clone())
            .unwrap_or_default()
    };
    let patches: Vec<usize> = tasks
        .iter()
        .filter(|t| t.action == FixAction::SurgicalEdit)
        .map(|t| t.index)
        .collect();
    for batch in non_adjacent_batches(&patches) {
        routing
            .batches
            .push(batch.into_iter().map(by_index).collect());
    }
    let mut regen = regenerated;
    regen.sort_unstable();
    for i in regen {
        routing.batches.push(vec![by_index(i)]);
    }
    routing.tasks = tasks;
    routing
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::refine::{IssueScope, TargetedIssue};

    fn task(index: usize, issues: Vec<(Criterion, IssueSeverity)>) -> SectionTask {
        SectionTask {
            section_id: format!("S{index}"),
            section_title: String::new(),
            index,
            action: FixAction::SurgicalEdit,
            instructions: vec![],
            constraints: vec![],
            priority: IssueSeverity::Minor,
            issues: issues
                .into_iter()
                .enumerate()
                .map(|(n, (c, s))| TargetedIssue {
                    id: format!("J1-{n}"),
                    judge: "j1".into(),
                    section_id: format!("S{index}"),
                    criterion: c,
                    severity: s,
                    fix_action: FixAction::SurgicalEdit,
                    start_quote: None,
                    end_quote: None,
                    scope: IssueScope::Section,
                    description: String::new(),
                    fix_instructions: String::new(),
                })
                .collect(),
            consistency_check: false,
        }
    }

    #[test]
    fn batches_of_the_design_example() {
        assert_eq!(
            non_adjacent_batches(&[1, 3, 4, 7]),
            vec![vec![1, 3, 7], vec![4]]
        );
        assert_eq!(non_adjacent_batches(&[2, 3, 4]), vec![vec![2, 4], vec![3]]);
        assert!(non_adjacent_batches(&[]).is_empty());
    }

    #[test]
    fn factual_problems_regenerate_and_style_is_patched() {
        let t = task(1, vec![(Criterion::Consistency, IssueSeverity::Major)]);
        assert_eq!(route_task(&t), FixAction::RegenerateSection);
        let t = task(1, vec![(Criterion::Consistency, IssueSeverity::Minor)]);
        assert_eq!(route_task(&t), FixAction::SurgicalEdit);
        let t = task(1, vec![(Criterion::Completeness, IssueSeverity::Critical)]);
        assert_eq!(route_task(&t), FixAction::RegenerateSection);
        let t = task(1, vec![(Criterion::Clarity, IssueSeverity::Critical)]);
        assert_eq!(route_task(&t), FixAction::SurgicalEdit);
    }

    #[test]
    fn regenerations_run_alone_after_the_patches_and_flag_the_next_section() {
        let plan = RefinePlan {
            section_count: 10,
            tasks: vec![
                task(1, vec![(Criterion::Clarity, IssueSeverity::Minor)]),
                task(2, vec![(Criterion::Consistency, IssueSeverity::Major)]),
                task(3, vec![(Criterion::Tone, IssueSeverity::Minor)]),
                task(4, vec![(Criterion::Tone, IssueSeverity::Minor)]),
                task(7, vec![(Criterion::Clarity, IssueSeverity::Minor)]),
            ],
            ..RefinePlan::default()
        };
        let r = route(&plan);
        assert_eq!(
            r.batches,
            vec![
                vec!["S1".to_string(), "S3".into(), "S7".into()],
                vec!["S4".into()],
                vec!["S2".into()]
            ]
        );
        let flagged: Vec<&str> = r
            .tasks
            .iter()
            .filter(|t| t.consistency_check)
            .map(|t| t.section_id.as_str())
            .collect();
        assert_eq!(flagged, ["S3"]);
    }

    #[test]
    fn a_broken_structure_is_a_full_rewrite_verdict() {
        let mut plan = RefinePlan {
            section_count: 3,
            tasks: vec![task(1, vec![(Criterion::Clarity, IssueSeverity::Minor)])],
            ..RefinePlan::default()
        };
        plan.criteria_scores.insert(Criterion::Structure, 0.4);
        let r = route(&plan);
        assert!(r.full_regenerate.is_some());
        assert!(r.batches.is_empty());
    }
}
