//! Bytes moved in the last whole second (RocketMQ's `FlowMonitor`, reported as
//! `transferredByteInSecond` by `mqadmin haStatus`), counted without a ticking thread:
//! the writer adds into the current second, a reader takes the previous one.

use std::sync::atomic::{AtomicU64, Ordering};

/// A per-second byte counter. One writer (the HA event loop), any readers.
#[derive(Debug, Default)]
pub(crate) struct ByteRate {
    /// The second (since the epoch) `current` counts.
    second: AtomicU64,
    current: AtomicU64,
    /// The whole second before `second`.
    previous: AtomicU64,
}

impl ByteRate {
    /// Counts `n` bytes moved at `now_ms`.
    pub(crate) fn add(&self, n: u64, now_ms: u64) {
        let now = now_ms / 1000;
        let second = self.second.load(Ordering::Relaxed);
        if now != second {
            let last = if now == second + 1 {
                self.current.load(Ordering::Relaxed)
            } else {
                0
            };
            self.previous.store(last, Ordering::Relaxed);
            self.current.store(0, Ordering::Relaxed);
            self.second.store(now, Ordering::Release);
        }
        self.current.fetch_add(n, Ordering::Relaxed);
    }

    /// Bytes moved in the whole second before `now_ms` (0 when idle since).
    pub(crate) fn last_second(&self, now_ms: u64) -> u64 {
        let now = now_ms / 1000;
        let second = self.second.load(Ordering::Acquire);
        if now == second {
            self.previous.load(Ordering::Relaxed)
        } else if now == second + 1 {
            self.current.load(Ordering::Relaxed)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_the_previous_whole_second() {
        let r = ByteRate::default();
        assert_eq!(r.last_second(10_000), 0);
        r.add(100, 10_100);
        r.add(50, 10_900);
        assert_eq!(r.last_second(10_950), 0, "second 10 is not over");
        assert_eq!(r.last_second(11_000), 150);
        r.add(7, 11_500);
        assert_eq!(r.last_second(11_600), 150);
        assert_eq!(r.last_second(12_000), 7);
        assert_eq!(r.last_second(13_000), 0, "idle for a whole second");
        r.add(1, 15_000);
        assert_eq!(r.last_second(15_001), 0, "a gap forgets the old second");
    }
}
