//! Exponential backoff with jitter for transport retries: waits grow so a
//! struggling server gets room, and jitter keeps parallel callers from
//! retrying in lockstep.

use crate::config::LlmConfig;
use std::time::Duration;

/// How long to wait between transport attempts.
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    /// Delay before the first retry.
    pub initial: Duration,
    /// Cap on the doubled delay, before jitter is added.
    pub max: Duration,
    /// Random extra delay, as a fraction of the base delay (0–1).
    pub jitter: f64,
}

impl Backoff {
    /// The backoff of a config.
    pub fn from_config(config: &LlmConfig) -> Self {
        Backoff {
            initial: Duration::from_millis(config.backoff_initial_ms),
            max: Duration::from_millis(config.backoff_max_ms),
            jitter: config.backoff_jitter,
        }
    }

    /// The delay before retry number `retry` (0-based): `initial × 2^retry`
    /// capped at `max`, plus a random `[0, jitter)` fraction of it drawn
    /// from `rng`.
    pub fn delay(&self, retry: u32, rng: &mut fastrand::Rng) -> Duration {
        let factor = 2u32.saturating_pow(retry.min(20));
        let base = self.initial.saturating_mul(factor).min(self.max);
        let extra = base.mul_f64(self.jitter.clamp(0.0, 1.0) * rng.f64());
        base + extra
    }
}

/// A random wait in `[range[0], range[1]]` milliseconds.
pub(crate) fn wait_in(range: [u64; 2], rng: &mut fastrand::Rng) -> Duration {
    let (lo, hi) = (range[0].min(range[1]), range[0].max(range[1]));
    Duration::from_millis(rng.u64(lo..=hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn backoff() -> Backoff {
        Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(8),
            jitter: 0.0,
        }
    }

    #[test]
    fn doubles_then_caps() {
        let mut rng = fastrand::Rng::with_seed(1);
        let b = backoff();
        let delays: Vec<u64> = (0..5).map(|r| b.delay(r, &mut rng).as_secs()).collect();
        assert_eq!(delays, vec![1, 2, 4, 8, 8]);
    }

    proptest! {
        #[test]
        fn jitter_stays_within_its_fraction(retry in 0u32..40, jitter in 0.0f64..=1.0, seed: u64) {
            let b = Backoff { jitter, ..backoff() };
            let mut rng = fastrand::Rng::with_seed(seed);
            let d = b.delay(retry, &mut rng);
            let base = Duration::from_secs(1).saturating_mul(2u32.saturating_pow(retry.min(20))).min(b.max);
            prop_assert!(d >= base);
            prop_assert!(d <= base + base.mul_f64(jitter) + Duration::from_nanos(1));
        }

        #[test]
        fn wait_is_inside_its_range(a in 0u64..10_000, b in 0u64..10_000, seed: u64) {
            let mut rng = fastrand::Rng::with_seed(seed);
            let d = wait_in([a, b], &mut rng).as_millis() as u64;
            prop_assert!(d >= a.min(b) && d <= a.max(b));
        }
    }
}
