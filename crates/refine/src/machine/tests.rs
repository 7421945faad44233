//! Every step of the loop with plain data: plans, routings, verdicts and
//! change IDs as the passes and the ledger would give them.

use super::*;
use koas_review_schema::refine::{
    ChangeVerification, IssueScope, IssueSeverity, QualityStatus, SectionTask, TargetedIssue,
};

const DOC: &str = "# A\n\nOne.\n\n# B\n\nTwo.\n";

fn settings(mode: Mode) -> Settings {
    Settings {
        mode,
        limits: Limits::default(),
        plan_only: false,
        rewrite_instructions: "Rewrite it.".into(),
    }
}

fn id(n: u32) -> ChangeId {
    ChangeId::new(n).expect("id")
}

fn ids(ns: &[u32]) -> BTreeSet<ChangeId> {
    ns.iter().map(|n| id(*n)).collect()
}

fn tokens(total: u64) -> TokenUse {
    TokenUse {
        calls: 1,
        cached_calls: 0,
        prompt_tokens: total,
        completion_tokens: 0,
    }
}

fn issue(id: &str, section: &str, severity: IssueSeverity) -> TargetedIssue {
    TargetedIssue {
        id: id.into(),
        judge: "judge".into(),
        section_id: section.into(),
        criterion: Criterion::Clarity,
        severity,
        fix_action: FixAction::SurgicalEdit,
        start_quote: None,
        end_quote: None,
        scope: IssueScope::Section,
        description: format!("problem {id}"),
        fix_instructions: format!("fix {id}"),
    }
}

fn task(section: &str, action: FixAction) -> SectionTask {
    SectionTask {
        section_id: section.into(),
        section_title: section.into(),
        index: 0,
        action,
        instructions: vec![],
        constraints: vec![],
        priority: IssueSeverity::Minor,
        issues: vec![issue("J1-1", section, IssueSeverity::Minor)],
        consistency_check: false,
    }
}

/// A plan of the document `hash` scoring `score` on every criterion
/// given, with one kept issue in `S1`.
fn plan(hash: &str, score: f64, criteria: &[(Criterion, f64)]) -> RefinePlan {
    RefinePlan {
        doc_hash: hash.into(),
        score,
        criteria_scores: criteria.iter().copied().collect(),
        kept: vec![issue("J1-1", "S1", IssueSeverity::Minor)],
        ..RefinePlan::default()
    }
}

/// A routing with one patch of each section given, one batch.
fn routing(sections: &[&str]) -> RefineRouting {
    RefineRouting {
        tasks: sections
            .iter()
            .map(|s| task(s, FixAction::SurgicalEdit))
            .collect(),
        batches: if sections.is_empty() {
            vec![]
        } else {
            vec![sections.iter().map(|s| s.to_string()).collect()]
        },
        ..RefineRouting::default()
    }
}

fn judged(plan: RefinePlan, routing: RefineRouting, active: BTreeSet<ChangeId>) -> Judged<'static> {
    Judged {
        document: DOC,
        tokens: tokens(100),
        plan,
        routing,
        active,
    }
}

fn scored(assessed: Assessed) -> Round {
    match assessed {
        Assessed::Scored(round) => *round,
        other => panic!("not scored: {other:?}"),
    }
}

fn applied(n: u32, section: &str) -> AppliedFix {
    AppliedFix {
        change_id: id(n),
        rationale: format!("koas refine SURGICAL_EDIT of {section}: [minor] clarity: fix"),
        before_text: Some("old".into()),
        after_text: "new".into(),
        lines: (1, 2),
    }
}

fn verdict(n: u32, section: &str, passed: bool) -> ChangeVerification {
    ChangeVerification {
        change_id: id(n).to_string(),
        section_id: section.into(),
        heuristic_failures: vec![],
        warnings: vec![],
        delta: vec![],
        passed,
        reason: (!passed).then(|| "not fixed".to_owned()),
    }
}

fn kinds(events: &[RefineEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(e).expect("event")["type"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// A whole round on `S1`: assessed at `score`, fixed with `changes`,
/// the ones in `failing` rejected by the verifier.
fn round_trip(
    m: &mut LoopState,
    hash: &str,
    score: f64,
    active: &[u32],
    changes: &[u32],
    failing: &[u32],
) -> Vec<ChangeId> {
    let criteria = [(Criterion::Clarity, score)];
    let mut round = scored(m.assess(judged(
        plan(hash, score, &criteria),
        routing(&["S1"]),
        ids(active),
    )));
    assert_eq!(m.decide(&round, 0), None);
    m.fix_started(&round);
    m.fix(
        &mut round,
        Fixed {
            document_before: DOC,
            tokens: tokens(10),
            applied: changes.iter().map(|n| applied(*n, "S1")).collect(),
        },
    );
    let failed = m.verify(
        &mut round,
        RefineVerification {
            changes: changes
                .iter()
                .map(|n| verdict(*n, "S1", !failing.contains(n)))
                .collect(),
            tokens: tokens(5),
        },
    );
    m.end_round(round);
    failed
}

#[test]
fn the_first_assessment_announces_the_run_and_records_the_scored_state() {
    let mut m = LoopState::new(settings(Mode::FullAuto));
    let round = scored(m.assess(judged(
        plan("sha256:a", 0.5, &[(Criterion::Clarity, 0.5)]),
        routing(&["S1"]),
        ids(&[]),
    )));
    assert_eq!(round.judge_tokens, tokens(100));
    assert!(!round.decided);
    assert_eq!(round.routing.tasks.len(), 1);
    let events = m.take_events();
    assert_eq!(
        kinds(&events),
        ["refinement_start", "arbiter_consolidation"]
    );
    let sections: Vec<String> = crate::sections::sections_of(DOC)
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(
        events[0],
        RefineEvent::RefinementStart {
            mode: "full-auto".into(),
            sections,
            target_sections: vec!["S1".into()],
        }
    );
    assert_eq!(m.states().len(), 1);
    assert_eq!(m.states()[0].score, 0.5);
    assert!(m.take_events().is_empty(), "events are taken once");
    // The same document assessed again (nothing was changed) keeps one
    // state, with the new plan.
    let again = plan("sha256:a", 0.5, &[(Criterion::Clarity, 0.5)]);
    scored(m.assess(judged(again, routing(&[]), ids(&[]))));
    assert_eq!(m.states().len(), 1);
    assert_eq!(kinds(&m.take_events()), ["arbiter_consolidation"]);
}

#[test]
fn assess_stops_on_no_assessment_a_full_rewrite_or_plan_only() {
    let mut m = LoopState::new(settings(Mode::FullAuto));
    let mut none = plan("sha256:a", 0.0, &[]);
    none.no_assessment = Some("no judge answered".into());
    assert_eq!(
        m.assess(judged(none, routing(&["S1"]), ids(&[]))),
        Assessed::Stop(Stop {
            status: RefineStatus::NoAssessment,
            reason: "no judge answered".into(),
        })
    );
    // The run was announced, nothing was scored.
    assert_eq!(kinds(&m.take_events()), ["refinement_start"]);
    assert!(m.states().is_empty());

    let mut m = LoopState::new(settings(Mode::FullAuto));
    let mut rewrite = routing(&["S1"]);
    rewrite.full_regenerate = Some("structure 0.40 < 0.6".into());
    let stop = m.assess(judged(plan("sha256:a", 0.4, &[]), rewrite, ids(&[])));
    assert!(
        matches!(&stop, Assessed::Stop(s) if s.status == RefineStatus::FullRegenerate),
        "{stop:?}"
    );
    assert_eq!(m.states().len(), 1, "the state is scored before it stops");

    let mut m = LoopState::new(Settings {
        plan_only: true,
        ..settings(Mode::SemiAuto)
    });
    assert_eq!(
        m.assess(judged(
            plan("sha256:a", 0.4, &[]),
            routing(&["S1"]),
            ids(&[])
        )),
        Assessed::Stop(Stop {
            status: RefineStatus::Planned,
            reason: "--plan-only".into(),
        })
    );
}

#[test]
fn a_locked_criterion_that_regresses_reverts_the_last_rounds_kept_changes() {
    let mut m = LoopState::new(settings(Mode::FullAuto));
    // Round 0: clarity 0.9 is locked; RVW-0001 is kept, RVW-0002 fails.
    let failed = round_trip(&mut m, "sha256:a", 0.7, &[], &[1, 2], &[2]);
    assert_eq!(failed, [id(2)]);
    m.take_events();
    // (A lock needs a criterion at 0.85: the next assessment sets one.)
    let mut round = scored(m.assess(judged(
        plan(
            "sha256:b",
            0.72,
            &[(Criterion::Clarity, 0.9), (Criterion::Tone, 0.5)],
        ),
        routing(&["S2"]),
        ids(&[1]),
    )));
    assert_eq!(m.decide(&round, 0), None);
    m.fix(
        &mut round,
        Fixed {
            document_before: DOC,
            tokens: tokens(10),
            applied: vec![applied(3, "S2")],
        },
    );
    m.verify(
        &mut round,
        RefineVerification {
            changes: vec![verdict(3, "S2", true)],
            tokens: tokens(5),
        },
    );
    m.end_round(round);
    m.take_events();
    // Clarity drops from 0.9 to 0.8 (> 0.05): RVW-0003 is reverted.
    let lock = match m.assess(judged(
        plan("sha256:c", 0.65, &[(Criterion::Clarity, 0.8)]),
        routing(&["S2"]),
        ids(&[1, 3]),
    )) {
        Assessed::QualityLock(lock) => lock,
        other => panic!("no lock: {other:?}"),
    };
    assert_eq!(lock.revert, [id(3)]);
    assert_eq!(lock.regressions, [(Criterion::Clarity, 0.9, 0.8)]);
    assert!(m.states().last().is_some_and(|s| s.regressed));
    m.quality_locked(lock, vec!["S2".into()]);
    let events = m.take_events();
    assert_eq!(
        kinds(&events),
        [
            "arbiter_consolidation",
            "quality_lock_triggered",
            "section_locked"
        ]
    );
    assert!(matches!(
        events[1],
        RefineEvent::QualityLockTriggered { iteration: 1, .. }
    ));
    assert_eq!(m.refine_state().locked_sections, ["S2"]);
    assert_eq!(m.iteration(), 2, "the restored document is assessed again");
    // The restored document: the same regression, but no change of the
    // last round is left to revert, so it is scored.
    let round = scored(m.assess(judged(
        plan("sha256:b", 0.72, &[(Criterion::Clarity, 0.8)]),
        routing(&[]),
        ids(&[1]),
    )));
    assert_eq!(round.plan.doc_hash, "sha256:b");
    let summary = m.summary(
        &Stop {
            status: RefineStatus::BestEffort,
            reason: "test".into(),
        },
        0,
        vec![],
    );
    assert_eq!(summary.iterations[1].reverted, ["RVW-0003"]);
    assert_eq!(summary.iterations[0].reverted, ["RVW-0002"]);
}

#[test]
fn decide_stops_at_the_target_the_limits_convergence_or_nothing_to_fix() {
    let stop_of = |mode: Mode, limits: Limits, scores: &[f64], tasks: &[&str], elapsed: u64| {
        let mut m = LoopState::new(Settings {
            limits,
            ..settings(mode)
        });
        let mut last = None;
        for (i, s) in scores.iter().enumerate() {
            let round = scored(m.assess(judged(
                plan(&format!("sha256:{i}"), *s, &[]),
                routing(tasks),
                ids(&[]),
            )));
            last = Some(m.decide(&round, elapsed));
            if i + 1 < scores.len() {
                m.end_round(round);
            }
        }
        (last.flatten(), m.take_events())
    };
    let limits = Limits::default();
    let (stop, _) = stop_of(Mode::FullAuto, limits, &[0.86], &["S1"], 0);
    assert_eq!(stop.map(|s| s.status), Some(RefineStatus::Accepted));
    let (stop, _) = stop_of(Mode::FullAuto, limits, &[0.8], &["S1"], 0);
    assert_eq!(stop.map(|s| s.status), Some(RefineStatus::AcceptedWarning));
    let (stop, _) = stop_of(Mode::SemiAuto, limits, &[0.8], &["S1"], 0);
    assert_eq!(stop, None);
    let (stop, _) = stop_of(Mode::SemiAuto, limits, &[0.5], &["S1"], 300);
    assert_eq!(
        stop,
        Some(Stop {
            status: RefineStatus::Escalated,
            reason: "timeout (300 s)".into()
        })
    );
    let (stop, _) = stop_of(Mode::FullAuto, limits, &[0.5], &[], 0);
    assert_eq!(
        stop,
        Some(Stop {
            status: RefineStatus::BestEffort,
            reason: "nothing left that may be fixed".into()
        })
    );
    let (stop, _) = stop_of(Mode::FullAuto, limits, &[0.5, 0.6, 0.65, 0.7], &["S1"], 0);
    assert!(
        stop.as_ref()
            .is_some_and(|s| s.reason == "3 iterations done (the maximum)"),
        "{stop:?}"
    );
    let (stop, events) = stop_of(Mode::FullAuto, limits, &[0.5, 0.51, 0.515], &["S1"], 0);
    assert!(
        stop.as_ref()
            .is_some_and(|s| s.reason.starts_with("converged")),
        "{stop:?}"
    );
    assert_eq!(
        kinds(&events).last().map(String::as_str),
        Some("convergence_detected")
    );
    // The tokens of every pass count against the budget.
    let small = Limits {
        max_tokens: 100,
        ..limits
    };
    let (stop, _) = stop_of(Mode::FullAuto, small, &[0.5], &["S1"], 0);
    assert_eq!(
        stop.map(|s| s.reason),
        Some("token budget spent (100 ≥ 100)".to_owned())
    );
}

#[test]
fn fix_turns_the_recorded_fixes_into_changes_and_reports_the_batches() {
    let mut m = LoopState::new(settings(Mode::FullAuto));
    let mut r = routing(&["S1", "S3"]);
    r.tasks[1].action = FixAction::RegenerateSection;
    let mut round = scored(m.assess(judged(plan("sha256:a", 0.5, &[]), r, ids(&[]))));
    m.take_events();
    m.fix_started(&round);
    let started = m.take_events();
    assert_eq!(
        kinds(&started),
        ["batch_started", "task_started", "task_started"]
    );
    assert!(matches!(
        &started[2],
        RefineEvent::TaskStarted { section_id, task_type: FixAction::RegenerateSection, .. } if section_id == "S3"
    ));
    let mut foreign = applied(2, "S9");
    foreign.rationale = "a person's edit".into();
    m.fix(
        &mut round,
        Fixed {
            document_before: DOC,
            tokens: tokens(40),
            applied: vec![applied(1, "S3"), foreign],
        },
    );
    assert_eq!(round.fix_tokens, tokens(40));
    assert_eq!(round.changes.len(), 2);
    assert_eq!(round.changes[0].section_id, "S3");
    assert_eq!(round.changes[0].action, FixAction::RegenerateSection);
    assert_eq!(round.changes[0].before_text, "old");
    assert_eq!(round.changes[0].issues.len(), 1);
    // A rationale that names no section: a patch of no known task.
    assert_eq!(round.changes[1].section_id, "");
    assert_eq!(round.changes[1].action, FixAction::SurgicalEdit);
    let events = m.take_events();
    assert_eq!(
        kinds(&events),
        ["patch_applied", "patch_applied", "batch_complete"]
    );
    assert_eq!(
        events[0],
        RefineEvent::PatchApplied {
            iteration: 0,
            section_id: "S3".into(),
            change_id: "RVW-0001".into(),
            task_type: FixAction::RegenerateSection,
            diff_summary: "1 line(s) replaced by 2".into(),
            content: "new".into(),
        }
    );
    assert_eq!(
        events[2],
        RefineEvent::BatchComplete {
            iteration: 0,
            batch_index: 0,
            changes: vec!["RVW-0001".into()],
        }
    );
    let expected = control::full_rewrite_tokens(DOC, &round.plan.kept, "Rewrite it.");
    let summary = m.summary(
        &Stop {
            status: RefineStatus::BestEffort,
            reason: String::new(),
        },
        0,
        vec![],
    );
    assert_eq!(summary.full_rewrite_tokens, expected);
    assert_eq!(summary.tokens.total(), 140);
}

#[test]
fn verify_keeps_what_passed_and_asks_to_revert_what_failed() {
    let mut m = LoopState::new(settings(Mode::FullAuto));
    let mut round = Round::default();
    let mut junk = verdict(9, "S1", false);
    junk.change_id = "not-an-id".into();
    let failed = m.verify(
        &mut round,
        RefineVerification {
            changes: vec![verdict(1, "S1", true), verdict(2, "S2", false), junk],
            tokens: tokens(7),
        },
    );
    assert_eq!(failed, [id(2)]);
    assert_eq!(round.kept, [id(1)]);
    assert_eq!(round.reverted, ["RVW-0002"]);
    assert_eq!(round.verify_tokens, tokens(7));
    // Every verdict is told, the unreadable ID too.
    assert_eq!(
        kinds(&m.take_events()),
        [
            "verification_result",
            "verification_result",
            "verification_result"
        ]
    );
}

#[test]
fn end_round_records_the_iteration_and_locks_a_section_edited_twice() {
    let mut m = LoopState::new(settings(Mode::FullAuto));
    round_trip(&mut m, "sha256:a", 0.5, &[], &[1], &[]);
    let events = m.take_events();
    assert_eq!(
        kinds(&events).last().map(String::as_str),
        Some("iteration_complete")
    );
    assert_eq!(
        events.last(),
        Some(&RefineEvent::IterationComplete {
            iteration: 0,
            score: 0.5,
            tokens: 115,
        })
    );
    assert!(m.refine_state().locked_sections.is_empty());
    assert_eq!(m.iteration(), 1);
    round_trip(&mut m, "sha256:b", 0.6, &[1], &[2], &[2]);
    // A change that failed verification still edited its section.
    assert_eq!(m.refine_state().locked_sections, ["S1"]);
    assert!(m.take_events().contains(&RefineEvent::SectionLocked {
        section_id: "S1".into(),
        reason: "edited 2 times".into(),
    }));
    let summary = m.summary(
        &Stop {
            status: RefineStatus::BestEffort,
            reason: String::new(),
        },
        1,
        vec![],
    );
    let first = &summary.iterations[0];
    // The judges of round 1 scored round 0's result: counted in both.
    assert_eq!(first.judge_tokens.total(), 200);
    assert_eq!(first.applied, ["RVW-0001"]);
    assert_eq!(summary.iterations[1].reverted, ["RVW-0002"]);
    assert_eq!(summary.fix_side_tokens, 30);
    assert_eq!(summary.locked_sections, ["S1"]);
}

#[test]
fn a_decided_plan_is_fixed_without_judges_under_the_stored_plans_locks() {
    let mut m = LoopState::new(settings(Mode::SemiAuto));
    let stored = plan("sha256:a", 0.7, &[(Criterion::Clarity, 0.95)]);
    let mut decided = stored.clone();
    decided.kept.clear();
    let round = m.take_decided(DOC, &stored, decided.clone(), routing(&["S2"]), ids(&[4]));
    assert!(round.decided);
    assert_eq!(round.judge_tokens, TokenUse::default());
    assert_eq!(round.plan, decided);
    assert_eq!(m.states()[0].plan, stored);
    assert_eq!(m.states()[0].active, ids(&[4]));
    assert_eq!(kinds(&m.take_events()), ["refinement_start"]);
    m.end_round(round);
    assert_eq!(kinds(&m.take_events()), ["iteration_complete"]);
    // The stored plan's clarity is locked and drops, but the round kept
    // no change (RVW-0004 is older): nothing to revert, it is scored.
    let next = m.assess(judged(
        plan("sha256:b", 0.7, &[(Criterion::Clarity, 0.5)]),
        routing(&["S1"]),
        ids(&[4]),
    ));
    assert!(matches!(next, Assessed::Scored(_)), "{next:?}");
    assert_eq!(
        kinds(&m.take_events()),
        ["arbiter_consolidation"],
        "announced once"
    );
}

#[test]
fn full_auto_best_effort_returns_the_best_state_and_reverts_later_changes() {
    let mut m = LoopState::new(settings(Mode::FullAuto));
    round_trip(&mut m, "sha256:a", 0.5, &[], &[1], &[]);
    round_trip(&mut m, "sha256:b", 0.7, &[1], &[2], &[]);
    scored(m.assess(judged(
        plan("sha256:c", 0.6, &[]),
        routing(&["S1"]),
        ids(&[1, 2]),
    )));
    m.take_events();
    let ending = m.choose_best(RefineStatus::BestEffort, &ids(&[1, 2]), "sha256:c");
    assert_eq!(
        ending,
        Ending {
            best: 1,
            revert: vec![id(2)]
        }
    );
    assert_eq!(
        m.take_events(),
        [RefineEvent::BestEffortSelected {
            iteration: 1,
            score: 0.7,
            reverted: vec!["RVW-0002".into()],
        }]
    );
    // Accepted: the last state stands, nothing reverted.
    let ending = m.choose_best(RefineStatus::AcceptedWarning, &ids(&[1, 2]), "sha256:c");
    assert_eq!(
        ending,
        Ending {
            best: 2,
            revert: vec![]
        }
    );
    let stop = Stop {
        status: RefineStatus::BestEffort,
        reason: "3 iterations done (the maximum)".into(),
    };
    let summary = m.summary(&stop, 1, vec!["RVW-0001".into()]);
    assert_eq!(summary.best_iteration, 1);
    assert_eq!(summary.best_score, 0.7);
    assert_eq!(summary.quality_status, QualityStatus::BelowStandard);
    assert_eq!(summary.unresolved_issues.len(), 1);
    assert_eq!(summary.improvement_hints.len(), 1);
    assert_eq!(summary.changes, ["RVW-0001"]);
    assert!(m.take_events().is_empty(), "no escalation in full-auto");
    assert_eq!(m.plan_of(1).map(|p| p.doc_hash.as_str()), Some("sha256:b"));
    m.complete(&summary);
    assert_eq!(
        m.take_events(),
        [RefineEvent::RefinementComplete {
            final_score: 0.7,
            status: RefineStatus::BestEffort,
        }]
    );
}

#[test]
fn semi_auto_returns_the_document_as_it_stands_and_escalates() {
    let mut m = LoopState::new(settings(Mode::SemiAuto));
    round_trip(&mut m, "sha256:a", 0.6, &[], &[1], &[]);
    scored(m.assess(judged(
        plan("sha256:b", 0.5, &[]),
        routing(&["S1"]),
        ids(&[1]),
    )));
    m.take_events();
    let ending = m.choose_best(RefineStatus::Escalated, &ids(&[1]), "sha256:b");
    assert_eq!(
        ending,
        Ending {
            best: 1,
            revert: vec![]
        }
    );
    // A document no state scored: the last state that did not regress.
    let ending = m.choose_best(RefineStatus::Escalated, &ids(&[1]), "sha256:z");
    assert_eq!(ending.best, 1);
    assert!(m.take_events().is_empty());
    let stop = Stop {
        status: RefineStatus::Escalated,
        reason: "timeout (300 s)".into(),
    };
    let summary = m.summary(&stop, 1, vec![]);
    assert_eq!(summary.mode, "semi-auto");
    assert_eq!(
        m.take_events(),
        [RefineEvent::EscalationTriggered {
            reason: "timeout (300 s)".into()
        }]
    );
    assert!(!succeeded(summary.status));
    assert!(succeeded(RefineStatus::Planned));
}

#[test]
fn a_run_that_scored_nothing_summarises_to_zero() {
    let mut m = LoopState::new(settings(Mode::FullAuto));
    let ending = m.choose_best(RefineStatus::NoAssessment, &ids(&[]), "sha256:a");
    assert_eq!(
        ending,
        Ending {
            best: 0,
            revert: vec![]
        }
    );
    let stop = Stop {
        status: RefineStatus::NoAssessment,
        reason: "no judge answered".into(),
    };
    let summary = m.summary(&stop, ending.best, vec![]);
    assert_eq!(summary.best_score, 0.0);
    assert!(summary.unresolved_issues.is_empty());
    assert!(m.plan_of(0).is_none());
}

#[test]
fn the_section_of_a_change_is_read_from_its_rationale() {
    assert_eq!(
        section_of_rationale("koas refine SURGICAL_EDIT of S2: [minor] clarity: x"),
        Some("S2".into())
    );
    assert_eq!(section_of_rationale("koas review: typo"), None);
    assert_eq!(
        section_of_rationale("koas refine SURGICAL_EDIT of S2"),
        None
    );
}

/// The host's side of a run, as `koas refine` plays it: each step
/// answered with what the passes and the ledger would give.
#[test]
fn next_drives_a_run_assess_fix_verify_revert_lock_and_stop() {
    let mut m = LoopState::new(settings(Mode::FullAuto));
    assert_eq!(m.next(Event::Start(None)), Ok(Step::Assess));
    // Round 0: S1 is routed; the fixes are RVW-0001 and RVW-0002.
    let criteria = [(Criterion::Clarity, 0.7)];
    let step = m
        .next(Event::Assessed {
            judged: judged(plan("sha256:a", 0.7, &criteria), routing(&["S1"]), ids(&[])),
            elapsed_secs: 0,
        })
        .expect("assessed");
    assert_eq!(
        step,
        Step::Fix {
            decided: false,
            routing: routing(&["S1"]),
        }
    );
    let Ok(Step::Verify(changes)) = m.next(Event::Fixed(Fixed {
        document_before: DOC,
        tokens: tokens(10),
        applied: vec![applied(1, "S1"), applied(2, "S1")],
    })) else {
        panic!("the round's changes are verified");
    };
    assert_eq!(changes.len(), 2);
    // The verifier fails RVW-0002: it is reverted, then the next round
    // is assessed.
    let step = m
        .next(Event::Verified(RefineVerification {
            changes: vec![verdict(1, "S1", true), verdict(2, "S1", false)],
            tokens: tokens(5),
        }))
        .expect("verified");
    assert_eq!(
        step,
        Step::Revert {
            changes: vec![id(2)],
            why: RevertWhy::FailedVerification,
        }
    );
    assert_eq!(m.iteration(), 0, "the round ends once its reverts are done");
    assert_eq!(
        m.next(Event::Reverted { sections: vec![] }),
        Ok(Step::Assess)
    );
    assert_eq!(m.iteration(), 1);
    // Round 1 locks clarity at 0.9 and keeps RVW-0003 in S2.
    let locked = [(Criterion::Clarity, 0.9)];
    m.next(Event::Assessed {
        judged: judged(plan("sha256:b", 0.72, &locked), routing(&["S2"]), ids(&[1])),
        elapsed_secs: 1,
    })
    .expect("assessed");
    m.next(Event::Fixed(Fixed {
        document_before: DOC,
        tokens: tokens(10),
        applied: vec![applied(3, "S2")],
    }))
    .expect("fixed");
    assert_eq!(
        m.next(Event::Verified(RefineVerification {
            changes: vec![verdict(3, "S2", true)],
            tokens: tokens(5),
        })),
        Ok(Step::Assess),
        "nothing failed: straight to the next assessment"
    );
    // Clarity regresses: RVW-0003 goes, S2 is locked, the restored
    // document is assessed again.
    let step = m
        .next(Event::Assessed {
            judged: judged(
                plan("sha256:c", 0.65, &[(Criterion::Clarity, 0.8)]),
                routing(&["S2"]),
                ids(&[1, 3]),
            ),
            elapsed_secs: 2,
        })
        .expect("assessed");
    assert_eq!(
        step,
        Step::Revert {
            changes: vec![id(3)],
            why: RevertWhy::QualityLock,
        }
    );
    assert_eq!(
        m.next(Event::Reverted {
            sections: vec!["S2".into()]
        }),
        Ok(Step::Assess)
    );
    assert_eq!(m.refine_state().locked_sections, ["S2"]);
    // No judge answers: the run stops.
    let mut none = plan("sha256:b", 0.0, &[]);
    none.no_assessment = Some("no judge answered".into());
    assert_eq!(
        m.next(Event::Assessed {
            judged: judged(none, routing(&[]), ids(&[1])),
            elapsed_secs: 3,
        }),
        Ok(Step::Stop(Stop {
            status: RefineStatus::NoAssessment,
            reason: "no judge answered".into(),
        }))
    );
    // Every step left its events, in order.
    let events = kinds(&m.take_events());
    assert_eq!(events.first().map(String::as_str), Some("refinement_start"));
    assert!(
        events.contains(&"quality_lock_triggered".to_owned()),
        "{events:?}"
    );
    assert_eq!(
        events.iter().filter(|e| *e == "iteration_complete").count(),
        2
    );
}

#[test]
fn next_fixes_a_decided_plan_without_asking_the_judges() {
    let mut m = LoopState::new(settings(Mode::SemiAuto));
    let stored = plan("sha256:a", 0.6, &[(Criterion::Clarity, 0.6)]);
    let step = m
        .next(Event::Start(Some(Decision {
            document: DOC,
            stored: &stored,
            plan: stored.clone(),
            routing: routing(&["S1"]),
            active: ids(&[]),
        })))
        .expect("started");
    assert_eq!(
        step,
        Step::Fix {
            decided: true,
            routing: routing(&["S1"]),
        }
    );
    // No fix was recorded: nothing to verify, the result is assessed.
    assert_eq!(
        m.next(Event::Fixed(Fixed {
            document_before: DOC,
            tokens: tokens(10),
            applied: vec![],
        })),
        Ok(Step::Assess)
    );
    assert_eq!(
        kinds(&m.take_events()),
        [
            "refinement_start",
            "batch_started",
            "task_started",
            "batch_complete",
            "iteration_complete"
        ]
    );
}

#[test]
fn an_event_out_of_order_is_refused_and_changes_nothing() {
    let mut m = LoopState::new(settings(Mode::FullAuto));
    let early = m.next(Event::Verified(RefineVerification::default()));
    assert_eq!(
        early,
        Err(OutOfOrder {
            event: "verdicts",
            awaited: "the start",
        })
    );
    assert_eq!(m.next(Event::Start(None)), Ok(Step::Assess));
    assert_eq!(
        m.next(Event::Reverted { sections: vec![] }),
        Err(OutOfOrder {
            event: "a revert",
            awaited: "an assessment",
        })
    );
    assert!(m.take_events().is_empty());
    // Still awaiting the assessment.
    assert!(matches!(
        m.next(Event::Assessed {
            judged: judged(plan("sha256:a", 0.5, &[]), routing(&["S1"]), ids(&[])),
            elapsed_secs: 0,
        }),
        Ok(Step::Fix { .. })
    ));
}
