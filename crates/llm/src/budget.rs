//! Token budgets, counted in the API's tokens (prompt + completion): one
//! per call and one for the whole run (the session).
//!
//! The per-call budget refuses only a prompt whose estimate alone exceeds
//! it; an answer that goes over it is returned and flagged, because the
//! kernel, not the host, decides what an oversized answer means.
//!
//! The per-run budget is a hard ceiling. Before a call the worst case
//! (estimated prompt tokens + `max_tokens`) is reserved against it; if it
//! does not fit, the call is not made and the session is marked
//! `SESSION_BUDGET_EXHAUSTED` for good, so no work continues after the
//! budget is spent. After the call the reservation is replaced by the real
//! usage. Reservations make the check exact under concurrency.

use crate::error::LlmError;
use std::sync::Mutex;

/// The run's token budget state.
#[derive(Debug)]
pub struct Budget {
    per_call: Option<u64>,
    per_run: Option<u64>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    used: u64,
    reserved: u64,
    exhausted: bool,
}

/// Tokens reserved for one call in flight.
#[derive(Debug)]
#[must_use = "settle or release the reservation"]
pub struct Reservation {
    amount: u64,
}

impl Budget {
    /// A budget; `0` disables a limit.
    pub fn new(per_call: u64, per_run: u64) -> Self {
        Budget {
            per_call: (per_call > 0).then_some(per_call),
            per_run: (per_run > 0).then_some(per_run),
            state: Mutex::new(State::default()),
        }
    }

    /// The per-call budget in tokens (prompt + completion); `None` when
    /// disabled.
    pub fn per_call(&self) -> Option<u64> {
        self.per_call
    }

    /// The per-run budget in tokens; `None` when disabled.
    pub fn per_run(&self) -> Option<u64> {
        self.per_run
    }

    /// Refuses a prompt whose estimated size alone exceeds the per-call
    /// budget.
    pub fn check_call(&self, estimated_prompt: u64) -> Result<(), LlmError> {
        match self.per_call {
            Some(budget) if estimated_prompt > budget => Err(LlmError::CallBudgetExceeded {
                estimated: estimated_prompt,
                budget,
            }),
            _ => Ok(()),
        }
    }

    /// `true` when `prompt + completion` exceeds the per-call budget
    /// (recorded, not refused: the kernel decides what to do with the answer).
    pub fn over_call_budget(&self, total: u64) -> bool {
        self.per_call.is_some_and(|b| total > b)
    }

    /// Reserves `worst_case` tokens against the per-run budget; once a
    /// reservation is refused, every later one is too.
    pub fn reserve(&self, worst_case: u64) -> Result<Reservation, LlmError> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(budget) = self.per_run {
            if s.exhausted || s.used + s.reserved + worst_case > budget {
                s.exhausted = true;
                return Err(LlmError::SessionBudgetExhausted {
                    used: s.used,
                    needed: worst_case,
                    budget,
                });
            }
        }
        s.reserved += worst_case;
        Ok(Reservation { amount: worst_case })
    }

    /// Replaces a reservation by the tokens really used.
    pub fn settle(&self, reservation: Reservation, used: u64) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.reserved = s.reserved.saturating_sub(reservation.amount);
        s.used += used;
    }

    /// Drops a reservation of a call that used nothing.
    pub fn release(&self, reservation: Reservation) {
        self.settle(reservation, 0);
    }

    /// Tokens really used so far, reservations in flight not included.
    pub fn used(&self) -> u64 {
        self.state.lock().map(|s| s.used).unwrap_or(0)
    }

    /// `true` once the per-run budget refused a call.
    pub fn exhausted(&self) -> bool {
        self.state.lock().map(|s| s.exhausted).unwrap_or(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn b2_refuses_the_call_that_would_exceed_it_and_stays_exhausted() {
        let b = Budget::new(0, 100);
        let r = b.reserve(60).unwrap();
        b.settle(r, 50);
        assert!(matches!(
            b.reserve(60),
            Err(LlmError::SessionBudgetExhausted { used: 50, .. })
        ));
        assert!(b.exhausted());
        assert!(b.reserve(1).is_err(), "exhaustion is final");
    }

    #[test]
    fn b1_refuses_oversized_prompts_and_flags_overruns() {
        let b = Budget::new(100, 0);
        assert!(b.check_call(100).is_ok());
        assert_eq!(
            b.check_call(101).unwrap_err().code(),
            "CALL_BUDGET_EXCEEDED"
        );
        assert!(b.over_call_budget(101));
        assert!(!Budget::new(0, 0).over_call_budget(u64::MAX));
    }

    proptest! {
        #[test]
        fn concurrent_reservations_never_exceed_b2(calls in prop::collection::vec((1u64..50, 0u64..50), 1..40)) {
            let budget = Budget::new(0, 300);
            let mut held = Vec::new();
            for (worst, _) in &calls {
                if let Ok(r) = budget.reserve(*worst) { held.push((r, *worst)); }
            }
            let reserved: u64 = held.iter().map(|(_, w)| *w).sum();
            prop_assert!(reserved <= 300);
            for ((r, worst), (_, used)) in held.into_iter().zip(&calls) {
                budget.settle(r, (*used).min(worst));
            }
            prop_assert!(budget.used() <= 300);
        }
    }
}
