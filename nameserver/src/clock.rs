//! The wall clock, behind a trait so broker expiry and the "not ready yet" window
//! can be tested without sleeping.
//!
//! Route logic itself takes `now` as an argument (it stays sans-io); the clock is
//! what the processor and the expiry scan read `now` from.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, as Java's `System.currentTimeMillis()`.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current time in ms since the epoch.
    fn now_millis(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A clock that only moves when told to (tests).
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock reading `now_ms`.
    #[must_use]
    pub fn new(now_ms: i64) -> Self {
        ManualClock(AtomicI64::new(now_ms))
    }

    /// Moves the clock forward by `ms`.
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock.
    pub fn set(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks() {
        assert!(SystemClock.now_millis() > 1_600_000_000_000);
        let c = ManualClock::new(10);
        c.advance(5);
        assert_eq!(c.now_millis(), 15);
        c.set(1);
        assert_eq!(c.now_millis(), 1);
    }
}
