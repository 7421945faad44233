//! Timestamps for ledger entries: RFC 3339 with microseconds, UTC
//! (`2026-02-06T14:23:01.234567+00:00`), from the system clock or from a
//! fixed, stepping clock for reproducible tests and snapshots.

use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, SecondsFormat, Utc};

/// A source of timestamps.
pub trait Clock: Send + Sync {
    /// The current time as RFC 3339 with microseconds.
    fn now(&self) -> String;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> String {
        format_timestamp(Utc::now())
    }
}

/// A clock that starts at a fixed instant and advances one second per call.
#[derive(Debug)]
pub struct SteppingClock {
    next_micros: AtomicI64,
}

impl SteppingClock {
    /// Starts at `start` (RFC 3339); falls back to 2026-01-01T00:00:00Z when
    /// `start` does not parse.
    pub fn new(start: &str) -> Self {
        let micros = DateTime::parse_from_rfc3339(start)
            .map(|t| t.with_timezone(&Utc).timestamp_micros())
            .unwrap_or(1_767_225_600_000_000);
        SteppingClock {
            next_micros: AtomicI64::new(micros),
        }
    }
}

impl Clock for SteppingClock {
    fn now(&self) -> String {
        let micros = self.next_micros.fetch_add(1_000_000, Ordering::SeqCst);
        format_timestamp(DateTime::from_timestamp_micros(micros).unwrap_or_default())
    }
}

/// Formats an instant the way the ledger stores it.
pub fn format_timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_microseconds_and_offset() {
        let stamp = SystemClock.now();
        assert_eq!(
            stamp.len(),
            "2026-02-06T14:23:01.234567+00:00".len(),
            "{stamp}"
        );
        assert!(stamp.ends_with("+00:00"));
    }

    #[test]
    fn stepping_clock_is_reproducible() {
        let clock = SteppingClock::new("2026-02-06T14:23:01.000000+00:00");
        assert_eq!(clock.now(), "2026-02-06T14:23:01.000000+00:00");
        assert_eq!(clock.now(), "2026-02-06T14:23:02.000000+00:00");
    }
}
