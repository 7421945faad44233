//! The circuit breaker: when most recent chunks gave answers the ladder
//! could not read, the structured prompt is not working for this model,
//! and the remaining chunks get the plain-text prompt.

use std::collections::VecDeque;

/// A rolling window of parse outcomes.
#[derive(Debug, Clone)]
pub struct CircuitBreaker {
    window: usize,
    threshold: f64,
    outcomes: VecDeque<bool>,
    tripped: bool,
}

impl CircuitBreaker {
    /// A breaker over the last `window` chunks that trips at `threshold`
    /// (0–1) failures.
    pub fn new(window: usize, threshold: f64) -> CircuitBreaker {
        CircuitBreaker {
            window: window.max(1),
            threshold,
            outcomes: VecDeque::new(),
            tripped: false,
        }
    }

    /// Records one chunk; `true` when this record trips the breaker.
    ///
    /// The rate is judged once half the window is filled, so that a short
    /// document whose every chunk fails still switches prompts, and one
    /// early failure does not.
    pub fn record(&mut self, parsed: bool) -> bool {
        self.outcomes.push_back(parsed);
        while self.outcomes.len() > self.window {
            self.outcomes.pop_front();
        }
        if self.tripped || self.outcomes.len() * 2 < self.window {
            return false;
        }
        let failures = self.outcomes.iter().filter(|ok| !**ok).count();
        if failures as f64 >= self.threshold * self.outcomes.len() as f64 {
            self.tripped = true;
            return true;
        }
        false
    }

    /// `true` once tripped (it stays tripped for the run).
    pub fn tripped(&self) -> bool {
        self.tripped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trips_at_sixty_percent_over_the_window() {
        let mut b = CircuitBreaker::new(20, 0.6);
        for _ in 0..9 {
            assert!(!b.record(false), "judged before half the window");
        }
        assert!(b.record(false));
        assert!(b.tripped());
        let mut b = CircuitBreaker::new(20, 0.6);
        // 11 failures in 20 (55 %): not tripped.
        for i in 0..20 {
            assert!(!b.record(i % 2 == 0 && i < 18), "at {i}");
        }
        // One more pushes a success out of the window: 12 in 20.
        assert!(b.record(false));
        assert!(b.tripped());
    }
}
