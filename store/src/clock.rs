//! The store's clock: the seam that lets expiry and cleanup run under test time.
//!
//! Cleanup decides by wall-clock age (`fileReservedTime`), by the local hour
//! (`deleteWhen`) and paces itself with sleeps (`deleteCommitLogFilesInterval`); the
//! tests of those rules need to move time at will, so they go through [`Clock`]. The
//! put path keeps reading the system clock directly: store timestamps are data, and a
//! trait call there would buy nothing.

use std::fmt::Debug;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{Datelike, Local, TimeZone, Timelike};
use parking_lot::Mutex;

/// Time as the store's services see it.
pub trait Clock: Send + Sync + Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;

    /// Pauses the calling service thread (pacing between deletions).
    fn sleep(&self, d: Duration);
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        system_now_ms()
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// Milliseconds since the epoch from the system clock.
#[must_use]
pub fn system_now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A clock that only moves when told to; `sleep` advances it and is recorded, so tests
/// can check pacing without waiting.
#[derive(Debug)]
pub struct ManualClock {
    now: AtomicI64,
    sleeps: Mutex<Vec<Duration>>,
}

impl ManualClock {
    /// A clock reading `now_ms`.
    #[must_use]
    pub fn new(now_ms: i64) -> Self {
        ManualClock {
            now: AtomicI64::new(now_ms),
            sleeps: Mutex::new(Vec::new()),
        }
    }

    /// Sets the time.
    pub fn set(&self, now_ms: i64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }

    /// Moves the time forward.
    pub fn advance(&self, d: Duration) {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        self.now.fetch_add(ms, Ordering::SeqCst);
    }

    /// The sleeps taken so far (and forgets them).
    pub fn take_sleeps(&self) -> Vec<Duration> {
        std::mem::take(&mut *self.sleeps.lock())
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }

    fn sleep(&self, d: Duration) {
        self.sleeps.lock().push(d);
        self.advance(d);
    }
}

/// The local hour (0..=23) at `ms`, as RocketMQ's `deleteWhen` check reads it.
#[must_use]
pub fn local_hour(ms: i64) -> u32 {
    Local
        .timestamp_millis_opt(ms)
        .earliest()
        .map_or(0, |t| t.hour())
}

/// `yyyyMMddHHmmssSSS` in local time, RocketMQ's `timeMillisToHumanString` (the name
/// of an index file).
#[must_use]
pub fn human_millis(ms: i64) -> String {
    match Local.timestamp_millis_opt(ms).earliest() {
        Some(t) => format!(
            "{:04}{:02}{:02}{:02}{:02}{:02}{:03}",
            t.year(),
            t.month(),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            t.timestamp_subsec_millis()
        ),
        None => format!("{:017}", ms.max(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_on_sleep() {
        let c = ManualClock::new(1_000);
        c.sleep(Duration::from_millis(100));
        c.advance(Duration::from_secs(1));
        assert_eq!(c.now_ms(), 2_100);
        assert_eq!(c.take_sleeps(), vec![Duration::from_millis(100)]);
        assert!(c.take_sleeps().is_empty());
    }

    #[test]
    fn human_millis_is_17_digits_and_sorts_by_time() {
        let a = human_millis(1_700_000_000_123);
        let b = human_millis(1_700_000_000_124);
        let c = human_millis(1_800_000_000_000);
        assert_eq!(a.len(), 17);
        assert!(a.bytes().all(|b| b.is_ascii_digit()));
        assert!(a.ends_with("123"));
        assert!(a < b && b < c);
        assert!(local_hour(1_700_000_000_000) < 24);
    }
}
