//! The loop of `koas refine DOC` as a state machine over plain data.
//!
//! [`LoopState`] holds what the loop carries from round to round (the
//! iteration, tokens, locks, the scored states of the document, the
//! iteration records) and keeps the loop's order: the host tells it what
//! happened ([`Event`]) and [`LoopState::next`] says what to do next
//! ([`Step`]):
//!
//! 1. assess the document ([`Step::Assess`]), unless a person decided on
//!    a plan (`Event::Start(Some(…))`): the run stops, or a quality lock
//!    asks to revert the last round's changes ([`Step::Revert`]) and
//!    assess the restored document, or the stopping conditions of
//!    [`control::decide`] are weighed;
//! 2. fix the round ([`Step::Fix`]), with the changes the ledger recorded;
//! 3. verify them ([`Step::Verify`]), and revert those that fail;
//! 4. the round ends (oscillation locks, the iteration's record) and the
//!    next one is assessed, until [`Step::Stop`];
//! 5. at the end, [`LoopState::choose_best`] and [`LoopState::summary`].
//!
//! The host (the reviewer's `koas refine`) runs the passes, commits and
//! reverts through the workspace's ledger, and emits the events each step
//! leaves ([`LoopState::take_events`]) in the order they come: nothing here
//! does I/O or asks a model, so every step is tested with plain data.

use std::collections::{BTreeMap, BTreeSet};

use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::refine::{
    Criterion, FixAction, IterationRecord, RefineChange, RefineEvent, RefinePlan, RefineRouting,
    RefineState, RefineStatus, RefineSummary, RefineVerification, TokenUse,
};

use crate::control::{self, Limits, Mode, Standing};
use crate::fix::section_of_rationale;

mod round;

/// What a run is asked to do, fixed for its whole length.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Semi-auto or full-auto.
    pub mode: Mode,
    /// Limits and tolerances.
    pub limits: Limits,
    /// `--plan-only`: stop once the first plan is made.
    pub plan_only: bool,
    /// The instructions a whole-document rewrite would carry, for the
    /// token comparison of the summary.
    pub rewrite_instructions: String,
}

/// One scored state of the document.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredState {
    /// `sha256:` of the document scored.
    pub doc_hash: String,
    /// Its score.
    pub score: f64,
    /// The plan made for it.
    pub plan: RefinePlan,
    /// Changes of the ledger in effect in it.
    pub active: BTreeSet<ChangeId>,
    /// A locked criterion regressed in it (its changes were reverted): it
    /// is never returned.
    pub regressed: bool,
}

/// How the run ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    /// The status.
    pub status: RefineStatus,
    /// Why it stopped.
    pub reason: String,
}

/// One round of fixes: what it fixes, and what came of it.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Round {
    /// The plan (the judges', or the one a person decided on).
    pub plan: RefinePlan,
    /// Its routing.
    pub routing: RefineRouting,
    /// Tokens of the judges that made the plan.
    pub judge_tokens: TokenUse,
    /// A plan a person decided on: the fixers run without the judges.
    pub decided: bool,
    /// Tokens of the fixers.
    pub fix_tokens: TokenUse,
    /// The changes the ledger recorded, to verify.
    pub changes: Vec<RefineChange>,
    /// Tokens of the delta judge.
    pub verify_tokens: TokenUse,
    /// Changes that passed verification.
    pub kept: Vec<ChangeId>,
    /// Changes reverted (failed verification).
    pub reverted: Vec<String>,
}

/// What the passes of an assessment returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged<'a> {
    /// The document as assessed.
    pub document: &'a str,
    /// Tokens of the judges.
    pub tokens: TokenUse,
    /// The arbiter's plan.
    pub plan: RefinePlan,
    /// The router's routing.
    pub routing: RefineRouting,
    /// Changes of the ledger in effect.
    pub active: BTreeSet<ChangeId>,
}

/// A locked criterion regressed: the last round's changes still in
/// effect are to be reverted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QualityLock {
    /// (criterion, locked score, new score).
    pub regressions: Vec<(Criterion, f64, f64)>,
    /// The changes to revert, in the order they were made.
    pub revert: Vec<ChangeId>,
}

/// What an assessment leads to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Assessed {
    /// The run stops.
    Stop(Stop),
    /// Revert [`QualityLock::revert`], lock their sections, then assess
    /// the restored document again.
    QualityLock(QualityLock),
    /// The document is scored: decide whether to fix this round (boxed: a
    /// round is much larger than the other variants).
    Scored(Box<Round>),
}

/// A fix the ledger recorded (an applied op that changed the document).
#[derive(Debug, Clone, PartialEq)]
pub struct AppliedFix {
    /// The ledger ID.
    pub change_id: ChangeId,
    /// The op's rationale (`koas refine … of S2: …`).
    pub rationale: String,
    /// The text it replaced.
    pub before_text: Option<String>,
    /// The text it wrote.
    pub after_text: String,
    /// Lines replaced, lines written.
    pub lines: (usize, usize),
}

/// What the fix pass and the ledger did.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixed<'a> {
    /// The document the fixes addressed.
    pub document_before: &'a str,
    /// Tokens of the fixers.
    pub tokens: TokenUse,
    /// The fixes recorded, in application order.
    pub applied: Vec<AppliedFix>,
}

/// The state returned at the end of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    /// Index of the returned state among [`LoopState::states`].
    pub best: usize,
    /// Changes made after it, to revert (latest first is the revert's
    /// business).
    pub revert: Vec<ChangeId>,
}

/// What the host does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Run the assess pass (Stage 1–2, the judges, the arbiter, the
    /// router) on the current document, with [`LoopState::refine_state`];
    /// answer [`Event::Assessed`].
    Assess,
    /// Run the fix pass; answer [`Event::Fixed`]. A plan a person decided
    /// on (`decided`) gives the fixers its `routing`; otherwise they get
    /// [`LoopState::refine_state`].
    Fix {
        /// A plan a person decided on: the fixers run without the judges.
        decided: bool,
        /// The round's routing.
        routing: RefineRouting,
    },
    /// Run the verify pass on these changes; answer [`Event::Verified`].
    Verify(Vec<RefineChange>),
    /// Revert these changes through the ledger; answer [`Event::Reverted`]
    /// with the sections they changed (read before reverting).
    Revert {
        /// The changes, in the order they were made.
        changes: Vec<ChangeId>,
        /// Why, for the revert entries.
        why: RevertWhy,
    },
    /// The loop is over: choose the state to return
    /// ([`LoopState::choose_best`]) and sum up.
    Stop(Stop),
}

/// Why [`Step::Revert`] asks for a revert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevertWhy {
    /// A locked criterion regressed: the last round's changes go.
    QualityLock,
    /// The verifier failed these changes.
    FailedVerification,
}

impl RevertWhy {
    /// The reason the ledger's revert entries give.
    pub fn reason(self) -> &'static str {
        match self {
            RevertWhy::QualityLock => "koas refine: quality lock",
            RevertWhy::FailedVerification => "koas refine: failed verification",
        }
    }
}

/// A plan a person decided on (`--accept`, `--apply-plan`): the run fixes
/// it without asking the judges first.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision<'a> {
    /// The document the stored plan scored (the current one).
    pub document: &'a str,
    /// The plan as stored by the run that made it.
    pub stored: &'a RefinePlan,
    /// The plan to fix (the stored one, or the person's edit of it).
    pub plan: RefinePlan,
    /// Its routing.
    pub routing: RefineRouting,
    /// Changes of the ledger in effect.
    pub active: BTreeSet<ChangeId>,
}

/// What happened, told to [`LoopState::next`].
#[derive(Debug, Clone, PartialEq)]
pub enum Event<'a> {
    /// The run begins, with a plan a person decided on or none.
    Start(Option<Decision<'a>>),
    /// The assess pass's results; `elapsed_secs` since the run began.
    Assessed {
        /// What the judges, the arbiter and the router returned.
        judged: Judged<'a>,
        /// Seconds since the run began (the time limit).
        elapsed_secs: u64,
    },
    /// The fix pass ran and the ledger recorded its fixes.
    Fixed(Fixed<'a>),
    /// The verifier's verdicts on the round's changes.
    Verified(RefineVerification),
    /// The changes of the last [`Step::Revert`] were reverted; `sections`:
    /// the sections they had changed.
    Reverted {
        /// The sections the reverted changes had changed.
        sections: Vec<String>,
    },
}

impl Event<'_> {
    fn name(&self) -> &'static str {
        match self {
            Event::Start(_) => "the start",
            Event::Assessed { .. } => "an assessment",
            Event::Fixed(_) => "fixes",
            Event::Verified(_) => "verdicts",
            Event::Reverted { .. } => "a revert",
        }
    }
}

/// An event that answers no step the machine asked for: a host's bug.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the refine loop got {event} while it awaited {awaited}")]
pub struct OutOfOrder {
    /// What came.
    pub event: &'static str,
    /// What the last step asked for.
    pub awaited: &'static str,
}

/// Where the loop stands between two steps.
#[derive(Debug, Clone, Default)]
enum Phase {
    /// Nothing happened yet.
    #[default]
    Start,
    /// [`Step::Assess`] was asked.
    Assessing,
    /// A quality lock's changes are being reverted.
    LockReverting(QualityLock),
    /// [`Step::Fix`] was asked for this round.
    Fixing(Box<Round>),
    /// [`Step::Verify`] was asked for this round.
    Verifying(Box<Round>),
    /// The round's failed changes are being reverted.
    FailedReverting(Box<Round>),
    /// [`Step::Stop`] was given.
    Done,
}

impl Phase {
    fn awaits(&self) -> &'static str {
        match self {
            Phase::Start => "the start",
            Phase::Assessing => "an assessment",
            Phase::LockReverting(_) | Phase::FailedReverting(_) => "a revert",
            Phase::Fixing(_) => "fixes",
            Phase::Verifying(_) => "verdicts",
            Phase::Done => "nothing (the loop stopped)",
        }
    }
}

/// What the refinement loop carries between rounds.
#[derive(Debug, Clone)]
pub struct LoopState {
    settings: Settings,
    iteration: u32,
    tokens: TokenUse,
    /// Sections not edited again (oscillation, quality lock).
    locked: BTreeSet<String>,
    /// Rounds that edited each section.
    edits: BTreeMap<String, u32>,
    /// Locked criteria, at their best score.
    locks: BTreeMap<Criterion, f64>,
    states: Vec<ScoredState>,
    iterations: Vec<IterationRecord>,
    /// The last round's changes that passed verification.
    last_changes: Vec<ChangeId>,
    full_rewrite_tokens: u64,
    /// `refinement_start` was emitted.
    announced: bool,
    events: Vec<RefineEvent>,
    phase: Phase,
}

/// Whether a run that ended so returns a document (exit 0).
pub fn succeeded(status: RefineStatus) -> bool {
    matches!(
        status,
        RefineStatus::Accepted
            | RefineStatus::AcceptedWarning
            | RefineStatus::BestEffort
            | RefineStatus::Planned
    )
}

impl LoopState {
    /// A run about to assess its document for the first time.
    pub fn new(settings: Settings) -> LoopState {
        LoopState {
            settings,
            iteration: 0,
            tokens: TokenUse::default(),
            locked: BTreeSet::new(),
            edits: BTreeMap::new(),
            locks: BTreeMap::new(),
            states: Vec::new(),
            iterations: Vec::new(),
            last_changes: Vec::new(),
            full_rewrite_tokens: 0,
            announced: false,
            events: Vec::new(),
            phase: Phase::Start,
        }
    }

    /// The loop's one entry: what happened, then what to do next. An event
    /// that answers no step asked for is refused and changes nothing.
    pub fn next(&mut self, event: Event<'_>) -> Result<Step, OutOfOrder> {
        let phase = std::mem::take(&mut self.phase);
        let (phase, step) = match (phase, event) {
            (Phase::Start, Event::Start(None)) => (Phase::Assessing, Step::Assess),
            (Phase::Start, Event::Start(Some(d))) => {
                let round = self.take_decided(d.document, d.stored, d.plan, d.routing, d.active);
                self.fix_step(round)
            }
            (
                Phase::Assessing,
                Event::Assessed {
                    judged,
                    elapsed_secs,
                },
            ) => match self.assess(judged) {
                Assessed::Stop(stop) => (Phase::Done, Step::Stop(stop)),
                Assessed::QualityLock(lock) => {
                    let changes = lock.revert.clone();
                    (
                        Phase::LockReverting(lock),
                        Step::Revert {
                            changes,
                            why: RevertWhy::QualityLock,
                        },
                    )
                }
                Assessed::Scored(round) => match self.decide(&round, elapsed_secs) {
                    Some(stop) => (Phase::Done, Step::Stop(stop)),
                    None => self.fix_step(*round),
                },
            },
            (Phase::LockReverting(lock), Event::Reverted { sections }) => {
                self.quality_locked(lock, sections);
                // The restored document is assessed again.
                (Phase::Assessing, Step::Assess)
            }
            (Phase::Fixing(mut round), Event::Fixed(fixed)) => {
                self.fix(&mut round, fixed);
                if round.changes.is_empty() {
                    self.end_round(*round);
                    (Phase::Assessing, Step::Assess)
                } else {
                    let changes = round.changes.clone();
                    (Phase::Verifying(round), Step::Verify(changes))
                }
            }
            (Phase::Verifying(mut round), Event::Verified(verification)) => {
                let failing = self.verify(&mut round, verification);
                if failing.is_empty() {
                    self.end_round(*round);
                    (Phase::Assessing, Step::Assess)
                } else {
                    (
                        Phase::FailedReverting(round),
                        Step::Revert {
                            changes: failing,
                            why: RevertWhy::FailedVerification,
                        },
                    )
                }
            }
            (Phase::FailedReverting(round), Event::Reverted { .. }) => {
                self.end_round(*round);
                (Phase::Assessing, Step::Assess)
            }
            (phase, event) => {
                let refused = OutOfOrder {
                    event: event.name(),
                    awaited: phase.awaits(),
                };
                self.phase = phase;
                return Err(refused);
            }
        };
        self.phase = phase;
        Ok(step)
    }

    /// The round is fixed next: its batches and tasks are announced.
    fn fix_step(&mut self, round: Round) -> (Phase, Step) {
        self.fix_started(&round);
        let step = Step::Fix {
            decided: round.decided,
            routing: round.routing.clone(),
        };
        (Phase::Fixing(Box::new(round)), step)
    }

    /// The round being assessed or fixed (0-based).
    pub fn iteration(&self) -> u32 {
        self.iteration
    }

    /// The `refine_state` the passes get.
    pub fn refine_state(&self) -> RefineState {
        RefineState {
            iteration: self.iteration,
            locked_sections: self.locked.iter().cloned().collect(),
        }
    }

    /// Every state scored so far, in order.
    pub fn states(&self) -> &[ScoredState] {
        &self.states
    }

    /// The events left by the steps since the last call, in order.
    pub fn take_events(&mut self) -> Vec<RefineEvent> {
        std::mem::take(&mut self.events)
    }

    fn announce(&mut self, document: &str, routing: &RefineRouting) {
        if self.announced {
            return;
        }
        self.announced = true;
        self.events.push(RefineEvent::RefinementStart {
            mode: self.settings.mode.as_str().to_owned(),
            sections: crate::sections::sections_of(document)
                .into_iter()
                .map(|s| s.id)
                .collect(),
            target_sections: target_sections(routing),
        });
    }

    /// Step 5: the state the run returns. Full-auto's best effort goes
    /// back to its best state (`now`: the changes in effect; the later
    /// ones are to revert); semi-auto returns the document as it stands
    /// (`current_hash`), whose plan is the one a person decides on.
    pub fn choose_best(
        &mut self,
        status: RefineStatus,
        now: &BTreeSet<ChangeId>,
        current_hash: &str,
    ) -> Ending {
        let mut best_index = self.states.iter().rposition(|s| !s.regressed).unwrap_or(0);
        let mut revert = Vec::new();
        if self.settings.mode == Mode::FullAuto && status == RefineStatus::BestEffort {
            let candidates: Vec<(usize, f64)> = self
                .states
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.regressed && s.active.is_subset(now))
                .map(|(i, s)| (i, s.score))
                .collect();
            if let Some((best, state)) =
                control::best(&candidates).and_then(|i| Some((i, self.states.get(i)?)))
            {
                let later: Vec<ChangeId> = now.difference(&state.active).copied().collect();
                if !later.is_empty() && best != best_index {
                    revert.clone_from(&later);
                }
                self.events.push(RefineEvent::BestEffortSelected {
                    iteration: best as u32,
                    score: state.score,
                    reverted: if best != best_index {
                        later.iter().map(|i| i.to_string()).collect()
                    } else {
                        Vec::new()
                    },
                });
                best_index = best;
            }
        }
        if self.settings.mode == Mode::SemiAuto {
            if let Some(i) = self.states.iter().rposition(|s| {
                !s.regressed && koas_kernel_api::hash::same_hash(&s.doc_hash, current_hash)
            }) {
                best_index = i;
            }
        }
        Ending {
            best: best_index,
            revert,
        }
    }

    /// The plan of the state `best` (for `refine/plan.json`).
    pub fn plan_of(&self, best: usize) -> Option<&RefinePlan> {
        self.states.get(best).map(|s| &s.plan)
    }

    /// The run's summary, returning the state `best` with `changes` (the
    /// ledger's changes still in effect).
    pub fn summary(&mut self, stop: &Stop, best: usize, changes: Vec<String>) -> RefineSummary {
        let (best_score, unresolved) = self
            .states
            .get(best)
            .map(|s| (s.score, s.plan.kept.clone()))
            .unwrap_or((0.0, Vec::new()));
        if stop.status == RefineStatus::Escalated {
            self.events.push(RefineEvent::EscalationTriggered {
                reason: stop.reason.clone(),
            });
        }
        let fix_side: u64 = self
            .iterations
            .iter()
            .map(|i| i.fix_tokens.total() + i.verify_tokens.total())
            .sum();
        RefineSummary {
            mode: self.settings.mode.as_str().to_owned(),
            status: stop.status,
            stop_reason: stop.reason.clone(),
            quality_status: control::quality_status(best_score),
            best_iteration: best as u32,
            best_score,
            iterations: self.iterations.clone(),
            improvement_hints: control::hints(&unresolved),
            unresolved_issues: unresolved,
            locked_sections: self.locked.iter().cloned().collect(),
            changes,
            tokens: self.tokens,
            fix_side_tokens: fix_side,
            full_rewrite_tokens: self.full_rewrite_tokens,
        }
    }

    /// The run is over, its summary written.
    pub fn complete(&mut self, summary: &RefineSummary) {
        self.events.push(RefineEvent::RefinementComplete {
            final_score: summary.best_score,
            status: summary.status,
        });
    }
}

fn target_sections(routing: &RefineRouting) -> Vec<String> {
    routing.tasks.iter().map(|t| t.section_id.clone()).collect()
}

/// The fix routed to `section` (a patch when no task names it).
fn action_of(routing: &RefineRouting, section: &str) -> FixAction {
    routing
        .tasks
        .iter()
        .find(|t| t.section_id == section)
        .map_or(FixAction::SurgicalEdit, |t| t.action)
}

#[cfg(test)]
mod tests;
