//! The steps of one round: the judges' verdict assessed, the plan decided,
//! fixed, verified, and the round's end.

use super::*;

impl LoopState {
    /// Step 1 for a plan a person decided on (`--accept`,
    /// `--apply-plan`): no judge is asked; the stored plan scored this
    /// very document, so its locks hold for the fixes that follow.
    pub(super) fn take_decided(
        &mut self,
        document: &str,
        stored: &RefinePlan,
        plan: RefinePlan,
        routing: RefineRouting,
        active: BTreeSet<ChangeId>,
    ) -> Round {
        self.announce(document, &routing);
        control::update_locks(
            &mut self.locks,
            &stored.criteria_scores,
            self.settings.limits.lock_threshold,
        );
        self.states.push(ScoredState {
            doc_hash: stored.doc_hash.clone(),
            score: stored.score,
            plan: stored.clone(),
            active,
            regressed: false,
        });
        Round {
            plan,
            routing,
            decided: true,
            ..Round::default()
        }
    }

    /// Step 1: the judges, the arbiter and the router assessed the
    /// document.
    pub(super) fn assess(&mut self, judged: Judged<'_>) -> Assessed {
        let Judged {
            document,
            tokens,
            plan,
            routing,
            active,
        } = judged;
        self.tokens.add(&tokens);
        self.announce(document, &routing);
        // The judges of this assessment scored the last round's result.
        if let Some(record) = self.iterations.last_mut() {
            record.judge_tokens.add(&tokens);
        }
        if let Some(why) = &plan.no_assessment {
            return Assessed::Stop(Stop {
                status: RefineStatus::NoAssessment,
                reason: why.clone(),
            });
        }
        self.events.push(RefineEvent::ArbiterConsolidation {
            iteration: self.iteration,
            alpha: plan.alpha,
            score: plan.score,
            kept: plan.kept.len(),
            filtered: plan.filtered.len(),
            target_sections: target_sections(&routing),
        });
        // Quality locks: a locked criterion that dropped reverts the last
        // round's changes, and their sections are not edited again.
        let regressions = control::regressions(
            &self.locks,
            &plan.criteria_scores,
            self.settings.limits.regression_tolerance,
        );
        let revert: Vec<ChangeId> = self
            .last_changes
            .iter()
            .copied()
            .filter(|id| active.contains(id))
            .collect();
        if !regressions.is_empty() && !revert.is_empty() {
            self.states.push(ScoredState {
                doc_hash: plan.doc_hash.clone(),
                score: plan.score,
                plan,
                active,
                regressed: true,
            });
            return Assessed::QualityLock(QualityLock {
                regressions,
                revert,
            });
        }
        control::update_locks(
            &mut self.locks,
            &plan.criteria_scores,
            self.settings.limits.lock_threshold,
        );
        match self
            .states
            .iter_mut()
            .find(|s| !s.regressed && s.doc_hash == plan.doc_hash)
        {
            Some(s) => s.plan = plan.clone(),
            None => self.states.push(ScoredState {
                doc_hash: plan.doc_hash.clone(),
                score: plan.score,
                plan: plan.clone(),
                active,
                regressed: false,
            }),
        }
        if let Some(why) = &routing.full_regenerate {
            return Assessed::Stop(Stop {
                status: RefineStatus::FullRegenerate,
                reason: why.clone(),
            });
        }
        if self.settings.plan_only {
            return Assessed::Stop(Stop {
                status: RefineStatus::Planned,
                reason: "--plan-only".to_owned(),
            });
        }
        Assessed::Scored(Box::new(Round {
            plan,
            routing,
            judge_tokens: tokens,
            ..Round::default()
        }))
    }

    /// After a [`QualityLock`]'s changes were reverted: `sections` (the
    /// sections they changed) are locked, the reverts recorded in the last
    /// iteration's record.
    pub(super) fn quality_locked(&mut self, lock: QualityLock, sections: Vec<String>) {
        let reverted: Vec<String> = lock.revert.iter().map(|i| i.to_string()).collect();
        self.events.push(RefineEvent::QualityLockTriggered {
            iteration: self.iteration.saturating_sub(1),
            regressions: lock.regressions,
            reverted: reverted.clone(),
        });
        if let Some(record) = self.iterations.last_mut() {
            record.reverted.extend(reverted);
        }
        for s in sections {
            if self.locked.insert(s.clone()) {
                self.events.push(RefineEvent::SectionLocked {
                    section_id: s,
                    reason: "its change made a locked criterion regress".into(),
                });
            }
        }
        self.last_changes.clear();
    }

    /// Step 2: whether to stop at the scored document of `round`, and how
    /// (`None`: fix it). `elapsed_secs` is the time since the run began.
    pub(super) fn decide(&mut self, round: &Round, elapsed_secs: u64) -> Option<Stop> {
        let history: Vec<f64> = self
            .states
            .iter()
            .filter(|s| !s.regressed)
            .map(|s| s.score)
            .collect();
        let standing = Standing {
            iteration: self.iteration,
            history: &history,
            has_critical: round.plan.has_critical,
            tokens: self.tokens.total(),
            elapsed_secs,
            has_tasks: !round.routing.tasks.is_empty(),
        };
        let (status, reason) =
            control::decide(self.settings.mode, &self.settings.limits, &standing)?;
        if reason.starts_with("converged") {
            self.events.push(RefineEvent::ConvergenceDetected {
                iteration: self.iteration,
            });
        }
        Some(Stop { status, reason })
    }

    /// Step 3, before the fix pass: every batch and task is announced
    /// (the fix kernel runs all batches in one pass; their ends are told
    /// once the ledger holds their changes).
    pub(super) fn fix_started(&mut self, round: &Round) {
        for (b, batch) in round.routing.batches.iter().enumerate() {
            self.events.push(RefineEvent::BatchStarted {
                iteration: self.iteration,
                batch_index: b,
                sections: batch.clone(),
            });
            for section in batch {
                self.events.push(RefineEvent::TaskStarted {
                    iteration: self.iteration,
                    batch_index: b,
                    section_id: section.clone(),
                    task_type: action_of(&round.routing, section),
                });
            }
        }
    }

    /// Step 3, once the ledger recorded the fixes: they become the
    /// round's changes to verify.
    pub(super) fn fix(&mut self, round: &mut Round, fixed: Fixed<'_>) {
        self.tokens.add(&fixed.tokens);
        round.fix_tokens = fixed.tokens;
        self.full_rewrite_tokens += control::full_rewrite_tokens(
            fixed.document_before,
            &round.plan.kept,
            &self.settings.rewrite_instructions,
        );
        let mut changes: Vec<RefineChange> = Vec::new();
        for a in fixed.applied {
            let section_id = section_of_rationale(&a.rationale).unwrap_or_default();
            let task = round
                .routing
                .tasks
                .iter()
                .find(|t| t.section_id == section_id);
            let action = task.map_or(FixAction::SurgicalEdit, |t| t.action);
            self.events.push(RefineEvent::PatchApplied {
                iteration: self.iteration,
                section_id: section_id.clone(),
                change_id: a.change_id.to_string(),
                task_type: action,
                diff_summary: format!("{} line(s) replaced by {}", a.lines.0, a.lines.1),
                content: a.after_text.clone(),
            });
            changes.push(RefineChange {
                change_id: a.change_id.to_string(),
                section_id,
                action,
                before_text: a.before_text.unwrap_or_default(),
                after_text: a.after_text,
                issues: task.map(|t| t.issues.clone()).unwrap_or_default(),
            });
        }
        for (b, batch) in round.routing.batches.iter().enumerate() {
            self.events.push(RefineEvent::BatchComplete {
                iteration: self.iteration,
                batch_index: b,
                changes: changes
                    .iter()
                    .filter(|c| batch.contains(&c.section_id))
                    .map(|c| c.change_id.clone())
                    .collect(),
            });
        }
        round.changes = changes;
    }

    /// Step 4: the verifier's verdicts on the round's changes. Returns the
    /// changes that failed, to revert through the ledger.
    pub(super) fn verify(
        &mut self,
        round: &mut Round,
        verification: RefineVerification,
    ) -> Vec<ChangeId> {
        round.verify_tokens = verification.tokens;
        self.tokens.add(&verification.tokens);
        let mut failed = Vec::new();
        for v in verification.changes {
            let id = EntryId::parse(&v.change_id);
            self.events.push(RefineEvent::VerificationResult {
                iteration: self.iteration,
                section_id: v.section_id,
                change_id: v.change_id,
                passed: v.passed,
                reason: v.reason,
            });
            // A verdict on an ID that is no change of the ledger names
            // nothing to keep or revert.
            let Ok(EntryId::Change(id)) = id else {
                continue;
            };
            if v.passed {
                round.kept.push(id);
            } else {
                failed.push(id);
            }
        }
        round.reverted.extend(failed.iter().map(|i| i.to_string()));
        failed
    }

    /// The round is over (its failed changes reverted): a section edited
    /// in `section_lock_after` rounds is locked (oscillation), the round
    /// recorded, the next one begins.
    pub(super) fn end_round(&mut self, round: Round) {
        let edited: BTreeSet<&String> = round.changes.iter().map(|c| &c.section_id).collect();
        for s in edited {
            let n = self.edits.entry(s.clone()).or_default();
            *n += 1;
            if *n >= self.settings.limits.section_lock_after && self.locked.insert(s.clone()) {
                self.events.push(RefineEvent::SectionLocked {
                    section_id: s.clone(),
                    reason: format!("edited {n} times"),
                });
            }
        }
        self.last_changes = round.kept;
        let tokens =
            round.judge_tokens.total() + round.fix_tokens.total() + round.verify_tokens.total();
        self.iterations.push(IterationRecord {
            iteration: self.iteration,
            score: round.plan.score,
            criteria_scores: round.plan.criteria_scores.clone(),
            issues: round.plan.kept.len(),
            judge_tokens: round.judge_tokens,
            fix_tokens: round.fix_tokens,
            verify_tokens: round.verify_tokens,
            applied: round.changes.iter().map(|c| c.change_id.clone()).collect(),
            reverted: round.reverted,
        });
        self.events.push(RefineEvent::IterationComplete {
            iteration: self.iteration,
            score: round.plan.score,
            tokens,
        });
        self.iteration += 1;
    }
}
