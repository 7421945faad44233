//! A check's time budget: a deadline, a cancel flag, or both. The editor
//! path gives one to [`Checker::check_within`](crate::Checker::check_within)
//! so that a check a newer edit superseded, or one that outlives the
//! editor's patience, stops early instead of holding a core.
//!
//! The checks poll [`Budget::expired`] between stages, at the start of
//! every detector and inside the loops of the detectors whose work grows
//! with the document; once it answers `true` they stop, and the check
//! returns [`CheckError::Cancelled`] or [`CheckError::OverBudget`] instead
//! of partial findings.

use crate::ScanError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use thiserror::Error;

/// How long a check may run and whether it is still wanted.
#[derive(Debug, Clone, Copy, Default)]
pub struct Budget<'a> {
    /// Past this instant the check is over budget.
    deadline: Option<(Instant, Duration)>,
    /// Once `true` the check is cancelled (e.g. a newer edit superseded
    /// the text being checked).
    cancel: Option<&'a AtomicBool>,
}

impl<'a> Budget<'a> {
    /// No deadline and no flag: the check always runs to its end.
    pub fn unlimited() -> Self {
        Budget::default()
    }

    /// A budget of `limit` from now.
    pub fn with_limit(mut self, limit: Duration) -> Self {
        // An instant too far to represent is no deadline at all.
        self.deadline = Instant::now().checked_add(limit).map(|at| (at, limit));
        self
    }

    /// Also stops the check once `flag` is `true` (set it from any thread).
    pub fn with_cancel(mut self, flag: &'a AtomicBool) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// Why the check must stop now, if it must: cancelled first (a
    /// cancelled check's result is not wanted at all), then over budget.
    pub fn interrupted(&self) -> Option<Interrupt> {
        if self.cancel.is_some_and(|f| f.load(Ordering::Relaxed)) {
            return Some(Interrupt::Cancelled);
        }
        match self.deadline {
            Some((at, limit)) if Instant::now() >= at => Some(Interrupt::OverBudget(limit)),
            _ => None,
        }
    }

    /// `true` once the check should stop (cheap enough to call per item:
    /// one atomic load and, with a deadline, one clock read).
    pub fn expired(&self) -> bool {
        self.interrupted().is_some()
    }

    /// `Err` when the check must stop.
    pub(crate) fn check(&self) -> Result<(), CheckError> {
        match self.interrupted() {
            None => Ok(()),
            Some(Interrupt::Cancelled) => Err(CheckError::Cancelled),
            Some(Interrupt::OverBudget(limit)) => Err(CheckError::OverBudget { limit }),
        }
    }
}

/// Why a budgeted check stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// The cancel flag was set.
    Cancelled,
    /// The deadline (of this length) passed.
    OverBudget(Duration),
}

/// What stops a budgeted check: a scan error, or its budget.
#[derive(Debug, Error)]
pub enum CheckError {
    /// The config or the Stage 1 artifacts are wrong (as for
    /// [`Checker::check`](crate::Checker::check)).
    #[error(transparent)]
    Scan(#[from] ScanError),
    /// The cancel flag was set before the check finished; no findings.
    #[error("the check was cancelled")]
    Cancelled,
    /// The check ran past its deadline; no findings.
    #[error("the check ran over its time budget of {} ms", limit.as_millis())]
    OverBudget {
        /// The budget it was given.
        limit: Duration,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_expires_by_flag_or_deadline_and_says_which() {
        let flag = AtomicBool::new(false);
        let b = Budget::unlimited().with_cancel(&flag);
        assert!(!b.expired());
        flag.store(true, Ordering::Relaxed);
        assert_eq!(b.interrupted(), Some(Interrupt::Cancelled));
        assert!(matches!(b.check(), Err(CheckError::Cancelled)));
        let b = Budget::unlimited().with_limit(Duration::ZERO);
        assert_eq!(b.interrupted(), Some(Interrupt::OverBudget(Duration::ZERO)));
        let b = Budget::unlimited().with_limit(Duration::from_secs(3600));
        assert!(b.check().is_ok());
        assert!(Budget::unlimited()
            .with_limit(Duration::MAX)
            .check()
            .is_ok());
    }
}
