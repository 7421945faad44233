//! Workers that die after their kernel answered: the death is the failure
//! of the kernel blamed (the one that left threads running in that
//! worker), or of the run when no kernel of this run did that work —
//! never of the kernel that happened to run next, which the pool ran
//! again on a fresh worker.

use super::{worker_exit, Completion, Engine, Failure};
use crate::progress::Shown;
use crate::run_record::{AfterAnswer, KernelStatus, WorkerDeath};
use crate::worker::{Job, LateDeath, Noticed};

/// The run record's account of when a late death was noticed.
fn after_answer(death: &LateDeath) -> AfterAnswer {
    let (noticed, next) = match &death.noticed {
        Noticed::Idle => ("between_kernels", None),
        Noticed::RightAfter => ("right_after", None),
        Noticed::During(next) => ("during_next", Some(next.clone())),
        Noticed::Describing(library) => ("during_next", Some(library.display().to_string())),
    };
    AfterAnswer {
        noticed: noticed.to_string(),
        next,
        left_threads: death.left_threads,
    }
}

impl Engine<'_> {
    /// Takes a completion's late deaths. One that blames this very kernel
    /// (its worker died right after it answered) makes it a failure before
    /// anything used its outputs: its dependants are skipped and its cache
    /// entry is dropped. The others are returned, for
    /// [`Engine::late_death`] once the completion is recorded.
    pub(super) fn own_late_death(&mut self, c: &mut Completion) -> Vec<LateDeath> {
        let Some(ticket) = c.ticket else {
            return std::mem::take(&mut c.late_deaths);
        };
        self.tickets.insert(ticket, c.kernel.clone());
        let (own, others): (Vec<LateDeath>, Vec<LateDeath>) = std::mem::take(&mut c.late_deaths)
            .into_iter()
            .partition(|d| matches!(&d.blamed, Job::Kernel { ticket: t, .. } if *t == ticket));
        if let Some(death) = own.into_iter().next() {
            if c.result.is_ok() {
                let _ = self.cache.remove_action(&c.key);
            }
            c.result = Err(Failure::Worker {
                message: death.kernel_message(),
                after_answer: Some(Box::new(after_answer(&death))),
                end: death.end,
            });
        }
        others
    }

    /// Records a worker's death after work done earlier: the failure of
    /// the kernel of this run blamed for it (recorded `failed` even though
    /// its outputs were used, and dropped from the cache so that the next
    /// run runs it again), or else of the run.
    pub(super) fn late_death(&mut self, death: LateDeath) {
        let blamed = match &death.blamed {
            Job::Kernel { ticket, .. } => self.tickets.get(ticket).cloned(),
            Job::Describe { .. } => None,
        };
        let record = blamed.and_then(|name| self.records.iter_mut().find(|r| r.name == name));
        let Some(record) = record else {
            let message = death.run_message();
            self.reporter.note(&format!("error: {message}"));
            self.worker_deaths.push(WorkerDeath {
                after: death.blamed.to_string(),
                message,
                worker: worker_exit(&death.end, Some(after_answer(&death))),
            });
            return;
        };
        if record.status != KernelStatus::Ok {
            // Already failed (or cancelled) on its own: say what it left.
            let message = death.kernel_message();
            let error = record.error.take().unwrap_or_default();
            record.error = Some(format!("{error}; then {message}"));
            return;
        }
        let message = death.kernel_message();
        record.status = KernelStatus::Failed;
        record.error = Some(message.clone());
        record.worker = Some(worker_exit(&death.end, Some(after_answer(&death))));
        if let Some(key) = &record.cache_key {
            let _ = self.cache.remove_action(key);
        }
        let name = record.name.clone();
        self.reporter
            .kernel_finished(&name, Shown::Failed, 0.0, &message);
    }

    /// Workers found dead among the idle ones when the run ends, and
    /// deaths noticed while describing libraries.
    pub(super) fn idle_deaths(&mut self) {
        let Some(workers) = self.workers.clone() else {
            return;
        };
        for death in workers.take_late_deaths() {
            self.late_death(death);
        }
    }
}
