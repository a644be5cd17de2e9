//! The match index of a registered SQL92 filter: one bit per queue offset, set at
//! dispatch by evaluating the filter on the arriving message's properties, so a pull
//! with that filter skips the messages that do not match without reading them from the
//! CommitLog (and, since a skipped unit costs almost nothing, scans twenty times as far
//! per pull; see `store::MessageFilter::indexed`).
//!
//! This is sluice's answer to RocketMQ's bloom filter in ConsumeQueueExt
//! (`enableCalcFilterBitMap`): the same work at dispatch (every registered filter of the
//! topic evaluated once per message), but exact — no false positives, so a matching
//! bit needs no second evaluation and a clear bit is a certain skip — and in memory, so
//! the on-disk format stays RocketMQ's. It covers the messages dispatched since the
//! filter was registered, up to [`MAX_OFFSETS`] per queue (older ones drop off the
//! front); anything outside is evaluated on its record, as RocketMQ evaluates messages
//! stored before its filter data was born. It starts empty after a restart.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::RwLock;

/// Offsets a queue's bits cover at most: 4 Mi offsets, 512 KiB per queue and filter.
pub const MAX_OFFSETS: u64 = 1 << 22;

/// One filter's bits, per queue.
#[derive(Debug, Default)]
pub struct MatchIndex {
    queues: RwLock<HashMap<i32, Arc<QueueBits>>>,
}

impl MatchIndex {
    /// Records whether the message at `queue_offset` of `queue_id` matches (called in
    /// queue-offset order per queue, by dispatch).
    pub fn record(&self, queue_id: i32, queue_offset: u64, matched: bool) {
        let existing = self.queues.read().get(&queue_id).cloned();
        let bits = existing
            .unwrap_or_else(|| Arc::clone(self.queues.write().entry(queue_id).or_default()));
        bits.record(queue_offset, matched);
    }

    /// The bits of one queue, if any message of it was recorded.
    #[must_use]
    pub fn queue(&self, queue_id: i32) -> Option<Arc<QueueBits>> {
        self.queues.read().get(&queue_id).cloned()
    }
}

/// The bits of one queue: offsets `start .. start + len`.
#[derive(Debug, Default)]
pub struct QueueBits {
    inner: RwLock<Bits>,
}

#[derive(Debug, Default)]
struct Bits {
    start: u64,
    len: u64,
    words: VecDeque<u64>,
}

impl QueueBits {
    fn record(&self, offset: u64, matched: bool) {
        let mut b = self.inner.write();
        if b.len == 0 || offset != b.start + b.len {
            // First, or not the next one (re-dispatch after a truncation): start over.
            b.words.clear();
            b.start = offset;
            b.len = 0;
        }
        let at = b.len;
        if at % 64 == 0 {
            b.words.push_back(0);
        }
        if matched {
            let word = usize::try_from(at / 64).unwrap_or(usize::MAX);
            if let Some(w) = b.words.get_mut(word) {
                *w |= 1 << (at % 64);
            }
        }
        b.len += 1;
        if b.len > MAX_OFFSETS {
            b.words.pop_front();
            b.start += 64;
            b.len -= 64;
        }
    }

    /// Whether the message at `offset` matches, if the bits cover it.
    #[must_use]
    pub fn get(&self, offset: u64) -> Option<bool> {
        let b = self.inner.read();
        let at = offset.checked_sub(b.start).filter(|at| *at < b.len)?;
        let word = b.words.get(usize::try_from(at / 64).ok()?)?;
        Some(word & (1 << (at % 64)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_what_was_recorded_in_order() {
        let ix = MatchIndex::default();
        assert!(ix.queue(0).is_none());
        for o in 100..300u64 {
            ix.record(0, o, o % 3 == 0);
        }
        let q = ix.queue(0).unwrap();
        assert_eq!(q.get(99), None);
        assert_eq!(q.get(300), None);
        for o in 100..300u64 {
            assert_eq!(q.get(o), Some(o % 3 == 0), "{o}");
        }
        // Another queue is its own.
        ix.record(1, 5, true);
        assert_eq!(ix.queue(1).unwrap().get(5), Some(true));
        assert_eq!(q.get(5), None);
        // A gap or a step back starts over.
        ix.record(0, 500, true);
        assert_eq!((q.get(299), q.get(500)), (None, Some(true)));
        ix.record(0, 10, false);
        assert_eq!((q.get(500), q.get(10)), (None, Some(false)));
    }

    #[test]
    fn old_offsets_drop_off_the_front() {
        let q = QueueBits::default();
        for o in 0..(MAX_OFFSETS + 100) {
            q.record(o, o % 2 == 1);
        }
        assert_eq!(q.get(0), None);
        assert_eq!(q.get(MAX_OFFSETS + 99), Some(true));
        assert_eq!(q.get(MAX_OFFSETS + 98), Some(false));
        let first = (0..).find(|&o| q.get(o).is_some()).unwrap();
        assert!(first > 0 && first <= 128, "{first}");
    }
}
