//! The tally of a timer run: which messages were sent and received (so missing ones
//! and duplicates are counted, not guessed from totals), and how late or early each
//! arrived — at the consumer (its receipt, microseconds) and at the broker (the store
//! timestamp of the delivered message, milliseconds).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde::Serialize;

use super::body::TimerStamp;

/// Histograms hold microseconds up to an hour.
const MAX_US: u64 = 3_600_000_000;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3)
        .expect("3 significant figures over 1 us ..= 1 h are valid constant bounds")
}

fn record(h: &mut Histogram<u64>, us: i64) {
    let us = u64::try_from(us).unwrap_or(0).clamp(1, MAX_US);
    let _ = h.record(us);
}

/// Percentiles of a histogram of microseconds, in milliseconds (mqbench's one summary).
pub use super::super::stats::LatencySummary as Percentiles;
use super::super::stats::ms;

#[derive(Debug)]
struct Histograms {
    /// Receipt − due, for messages received at or after their due time (µs).
    late: Histogram<u64>,
    /// Due − receipt, for messages received before it (µs).
    early: Histogram<u64>,
    /// Store timestamp − due, at or after it (ms resolution, kept in µs).
    broker_late: Histogram<u64>,
    /// The interval's `late` (for progress lines).
    interval: Histogram<u64>,
}

/// Sent and received messages of one run, by index.
#[derive(Debug)]
pub struct Tally {
    run_id: u64,
    sent: Vec<AtomicBool>,
    seen: Vec<AtomicU32>,
    received: AtomicU64,
    duplicates: AtomicU64,
    foreign: AtomicU64,
    broker_early: AtomicU64,
    hist: Mutex<Histograms>,
}

/// What the tally says at the end.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Receipts {
    /// Distinct messages of the run received.
    pub received: u64,
    /// Receipts of a message already received.
    pub duplicates: u64,
    /// Messages sent OK and never received.
    pub missing: u64,
    /// Messages received before their due time (consumer clock, µs).
    pub early: u64,
    /// The earliest of those, ms before due.
    pub early_max_ms: f64,
    /// Messages the broker stored (delivered) before their due time (store timestamp,
    /// ms; the broker's clock is this host's).
    pub broker_early: u64,
    /// Messages of other runs or out of range (ignored).
    pub foreign: u64,
    /// Receipt − due at the consumer: what a long-polling consumer sees.
    pub lateness: Percentiles,
    /// Store timestamp of the delivered message − due: the broker's part (ms resolution).
    pub broker_lateness: Percentiles,
}

impl Tally {
    /// A tally of `n` messages of run `run_id`; `all_sent` marks every one as sent OK (a
    /// receive-only run).
    #[must_use]
    pub fn new(run_id: u64, n: usize, all_sent: bool) -> Self {
        Tally {
            run_id,
            sent: (0..n).map(|_| AtomicBool::new(all_sent)).collect(),
            seen: (0..n).map(|_| AtomicU32::new(0)).collect(),
            received: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            foreign: AtomicU64::new(0),
            broker_early: AtomicU64::new(0),
            hist: Mutex::new(Histograms {
                late: histogram(),
                early: histogram(),
                broker_late: histogram(),
                interval: histogram(),
            }),
        }
    }

    /// Messages in the run.
    #[must_use]
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether the run has no message.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Message `index` was sent OK.
    pub fn sent(&self, index: u64) {
        if let Some(s) = usize::try_from(index).ok().and_then(|i| self.sent.get(i)) {
            s.store(true, Ordering::Relaxed);
        }
    }

    /// Distinct messages received so far.
    #[must_use]
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Records the receipts of one pull: each stamp with its store timestamp (ms), all
    /// received at `received_us`.
    pub fn record(&self, received_us: i64, messages: &[(TimerStamp, i64)]) {
        let mut hist = self.hist.lock();
        for (stamp, store_ms) in messages {
            let slot = (stamp.run_id == self.run_id)
                .then(|| usize::try_from(stamp.index).ok())
                .flatten()
                .and_then(|i| self.seen.get(i));
            let Some(slot) = slot else {
                self.foreign.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            if slot.fetch_add(1, Ordering::Relaxed) > 0 {
                self.duplicates.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            self.received.fetch_add(1, Ordering::Relaxed);
            let late_us = received_us.saturating_sub(stamp.due_ms.saturating_mul(1000));
            if late_us < 0 {
                record(&mut hist.early, -late_us);
            } else {
                record(&mut hist.late, late_us);
                record(&mut hist.interval, late_us);
            }
            let broker_ms = store_ms.saturating_sub(stamp.due_ms);
            if broker_ms < 0 {
                self.broker_early.fetch_add(1, Ordering::Relaxed);
            } else {
                record(&mut hist.broker_late, broker_ms.saturating_mul(1000));
            }
        }
    }

    /// The lateness recorded since the last call.
    pub fn interval(&self) -> Percentiles {
        let mut hist = self.hist.lock();
        let p = Percentiles::of(&hist.interval);
        hist.interval.reset();
        p
    }

    /// The tally so far.
    #[must_use]
    pub fn receipts(&self) -> Receipts {
        let hist = self.hist.lock();
        let missing = self
            .sent
            .iter()
            .zip(&self.seen)
            .filter(|(s, r)| s.load(Ordering::Relaxed) && r.load(Ordering::Relaxed) == 0)
            .count() as u64;
        Receipts {
            received: self.received(),
            duplicates: self.duplicates.load(Ordering::Relaxed),
            missing,
            early: hist.early.len(),
            early_max_ms: if hist.early.is_empty() {
                0.0
            } else {
                ms(hist.early.max())
            },
            broker_early: self.broker_early.load(Ordering::Relaxed),
            foreign: self.foreign.load(Ordering::Relaxed),
            lateness: Percentiles::of(&hist.late),
            broker_lateness: Percentiles::of(&hist.broker_late),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(run_id: u64, index: u64, due_ms: i64) -> TimerStamp {
        TimerStamp {
            run_id,
            index,
            due_ms,
            sent_us: 0,
        }
    }

    #[test]
    fn counts_missing_duplicates_early_and_foreign() {
        let t = Tally::new(9, 4, false);
        for i in 0..4 {
            t.sent(i);
        }
        t.sent(99);
        t.record(
            1_000_500,
            &[
                (stamp(9, 0, 1000), 1000),
                (stamp(9, 1, 999), 1000),
                // Received 1.5 ms before due; stored 2 ms before it.
                (stamp(9, 2, 1002), 1000),
                (stamp(8, 3, 1000), 1000),
                (stamp(9, 7, 1000), 1000),
            ],
        );
        t.record(1_001_000, &[(stamp(9, 0, 1000), 1000)]);
        let r = t.receipts();
        assert_eq!(
            (r.received, r.duplicates, r.missing, r.foreign),
            (3, 1, 1, 2)
        );
        assert_eq!((r.early, r.broker_early), (1, 1));
        assert!((r.early_max_ms - 1.5).abs() < 0.01, "{r:?}");
        assert_eq!(r.lateness.count, 2);
        assert!((r.lateness.max_ms - 1.5).abs() < 0.01, "{r:?}");
        assert!((r.lateness.p50_ms - 0.5).abs() < 0.01, "{r:?}");
        assert_eq!(r.broker_lateness.count, 2);
        assert!((r.broker_lateness.max_ms - 1.0).abs() < 0.01, "{r:?}");
        assert_eq!(t.interval().count, 2);
        assert_eq!(t.interval().count, 0);
    }

    #[test]
    fn a_receive_only_tally_expects_every_message() {
        let t = Tally::new(1, 3, true);
        t.record(5_000_000, &[(stamp(1, 1, 4000), 4000)]);
        let r = t.receipts();
        assert_eq!((r.received, r.missing, r.early), (1, 2, 0));
        assert!((r.lateness.p50_ms - 1000.0).abs() < 1.0, "{r:?}");
        assert!(Tally::new(1, 0, true).is_empty());
    }
}
