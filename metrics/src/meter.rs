//! The meters bumped where the work happens: an add or two on relaxed atomics, no lock,
//! no allocation. Histograms have fixed upper bounds (RocketMQ's views set them per
//! metric; the ones it uses are here).

use std::sync::atomic::{AtomicU64, Ordering};

/// `rocketmq_message_size`: 1 KiB, 4 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB.
pub const MESSAGE_SIZE_BYTES: &[u64] = &[1024, 4096, 524_288, 1_048_576, 2_097_152, 4_194_304];
/// `rocketmq_rpc_latency`, milliseconds.
pub const RPC_LATENCY_MS: &[u64] = &[1, 3, 5, 7, 10, 100, 1000, 2000, 3000];
/// `rocketmq_finish_message_latency`, seconds (RocketMQ records seconds under a ms unit).
pub const FINISH_LATENCY_S: &[u64] = &[5, 60, 600, 3600, 43_200, 86_400];
/// `rocketmq_topic_create_execution_time`, `..._consumer_group_create_...`, milliseconds.
pub const CREATE_TIME_MS: &[u64] = &[10, 100, 1000, 3000, 5000];
/// `rocketmq_delay_message_latency`, seconds.
pub const DELAY_LATENCY_S: &[u64] = &[60, 600, 3600, 43_200, 86_400, 259_200];
/// sluice's fsync and HA-ack latencies, microseconds (a disk's fsync is 50 µs – 50 ms).
pub const LATENCY_US: &[u64] = &[
    50, 100, 250, 500, 1000, 2500, 5000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000,
];
/// sluice's group-commit sizes: messages made durable by one flush.
pub const GROUP_SIZE: &[u64] = &[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096];

/// A monotonic count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`.
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds one.
    #[inline]
    pub fn inc(&self) {
        self.add(1);
    }

    /// The count so far.
    #[must_use]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Observations counted into buckets with fixed upper bounds (inclusive, as Prometheus'
/// `le`), plus their sum; the count is the buckets' (one atomic add fewer per observation).
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [u64],
    /// One per bound, then the overflow (+Inf) bucket; not cumulative.
    buckets: Box<[AtomicU64]>,
    sum: AtomicU64,
}

/// A histogram's figures at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// Sum of the observations.
    pub sum: u64,
    /// Number of observations.
    pub count: u64,
    /// (upper bound, observations in this bucket alone); the last bound is `f64::MAX`
    /// (+Inf).
    pub buckets: Vec<(f64, u64)>,
}

impl Histogram {
    /// An empty histogram with these upper bounds (ascending).
    #[must_use]
    pub fn new(bounds: &'static [u64]) -> Self {
        Histogram {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
        }
    }

    /// Records one observation.
    #[inline]
    pub fn observe(&self, value: u64) {
        let idx = self
            .bounds
            .iter()
            .position(|&b| value <= b)
            .unwrap_or(self.bounds.len());
        self.buckets[idx].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
    }

    /// Records `n` observations of the same value (a batch of equal-sized messages).
    #[inline]
    pub fn observe_n(&self, value: u64, n: u64) {
        let idx = self
            .bounds
            .iter()
            .position(|&b| value <= b)
            .unwrap_or(self.bounds.len());
        self.buckets[idx].fetch_add(n, Ordering::Relaxed);
        self.sum
            .fetch_add(value.saturating_mul(n), Ordering::Relaxed);
    }

    /// The figures now. Taken bucket by bucket while others may record: the count is
    /// the buckets' sum, so a scrape never shows more observations than buckets.
    #[must_use]
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut buckets: Vec<(f64, u64)> = self
            .bounds
            .iter()
            .zip(self.buckets.iter())
            .map(|(&b, n)| (b as f64, n.load(Ordering::Relaxed)))
            .collect();
        let overflow = self.buckets[self.bounds.len()].load(Ordering::Relaxed);
        buckets.push((f64::MAX, overflow));
        HistogramSnapshot {
            sum: self.sum.load(Ordering::Relaxed),
            count: buckets.iter().map(|(_, n)| n).sum(),
            buckets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive_and_overflow_goes_to_inf() {
        let h = Histogram::new(RPC_LATENCY_MS);
        h.observe(0);
        h.observe(1);
        h.observe(2);
        h.observe(3000);
        h.observe(3001);
        h.observe_n(7, 3);
        let s = h.snapshot();
        assert_eq!(s.count, 8);
        assert_eq!(s.sum, 1 + 2 + 3000 + 3001 + 21);
        assert_eq!(s.buckets[0], (1.0, 2));
        assert_eq!(s.buckets[1], (3.0, 1));
        assert_eq!(s.buckets[3], (7.0, 3));
        assert_eq!(s.buckets[8], (3000.0, 1));
        assert_eq!(s.buckets[9], (f64::MAX, 1));
    }

    #[test]
    fn counters_add() {
        let c = Counter::default();
        c.inc();
        c.add(41);
        assert_eq!(c.get(), 42);
    }
}
