//! Per-queue POP state (RocketMQ's `QueueLockManager` and the offset queue of
//! `PopBufferMergeService`): one pop at a time per topic, group and queue — another pop
//! skips a locked queue rather than wait — and the end of the batches popped but not yet
//! committed, where the next pop starts.

use std::collections::HashMap;

use parking_lot::Mutex;

#[derive(Debug, Default)]
struct QueueState {
    locked: bool,
    /// Where the newest popped batch ends (its offset commit may still be pending).
    in_flight_end: Option<i64>,
}

/// The pop state of every queue popped.
#[derive(Debug, Default)]
pub struct PopQueues {
    table: Mutex<HashMap<String, QueueState>>,
}

/// RocketMQ's lock key: `topic@group@queueId`.
#[must_use]
pub fn lock_key(topic: &str, group: &str, queue_id: i32) -> String {
    format!("{topic}@{group}@{queue_id}")
}

impl PopQueues {
    /// Locks the queue, or `None` when another pop holds it.
    pub fn try_lock(&self, topic: &str, group: &str, queue_id: i32) -> Option<QueueLock<'_>> {
        let key = lock_key(topic, group, queue_id);
        let mut t = self.table.lock();
        let state = t.entry(key.clone()).or_default();
        if state.locked {
            return None;
        }
        state.locked = true;
        Some(QueueLock { queues: self, key })
    }

    /// Forgets the in-flight end of a queue (its offset was reset).
    pub fn forget(&self, topic: &str, group: &str, queue_id: i32) {
        let key = lock_key(topic, group, queue_id);
        let mut t = self.table.lock();
        if let Some(s) = t.get_mut(&key) {
            s.in_flight_end = None;
        }
    }

    /// Batches up to `end` are in flight already (taken back after a restart): the
    /// next pop of the queue starts there at the earliest.
    pub fn resume_at(&self, topic: &str, group: &str, queue_id: i32, end: i64) {
        let mut t = self.table.lock();
        let s = t.entry(lock_key(topic, group, queue_id)).or_default();
        s.in_flight_end = Some(s.in_flight_end.map_or(end, |e| e.max(end)));
    }

    /// The in-flight end of a queue.
    #[must_use]
    pub fn in_flight_end(&self, topic: &str, group: &str, queue_id: i32) -> Option<i64> {
        let key = lock_key(topic, group, queue_id);
        self.table.lock().get(&key).and_then(|s| s.in_flight_end)
    }
}

/// A locked queue; unlocked when dropped.
#[derive(Debug)]
pub struct QueueLock<'a> {
    queues: &'a PopQueues,
    key: String,
}

impl QueueLock<'_> {
    /// Where the newest popped batch ends.
    #[must_use]
    pub fn in_flight_end(&self) -> Option<i64> {
        self.queues
            .table
            .lock()
            .get(&self.key)
            .and_then(|s| s.in_flight_end)
    }

    /// A batch ending at `end` was popped: the next pop starts there.
    pub fn set_in_flight_end(&self, end: i64) {
        if let Some(s) = self.queues.table.lock().get_mut(&self.key) {
            s.in_flight_end = Some(s.in_flight_end.map_or(end, |e| e.max(end)));
        }
    }

    /// Forgets the in-flight end (a reset moved the queue).
    pub fn clear_in_flight_end(&self) {
        if let Some(s) = self.queues.table.lock().get_mut(&self.key) {
            s.in_flight_end = None;
        }
    }
}

impl Drop for QueueLock<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.queues.table.lock().get_mut(&self.key) {
            s.locked = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pop_per_queue_and_the_end_moves_forward_only() {
        let q = PopQueues::default();
        let lock = q.try_lock("T", "G", 1).unwrap();
        assert!(q.try_lock("T", "G", 1).is_none());
        assert!(q.try_lock("T", "G", 2).is_some());
        assert!(q.try_lock("T", "H", 1).is_some());
        lock.set_in_flight_end(10);
        lock.set_in_flight_end(7);
        assert_eq!(lock.in_flight_end(), Some(10));
        drop(lock);
        assert_eq!(q.in_flight_end("T", "G", 1), Some(10));
        let again = q.try_lock("T", "G", 1).unwrap();
        again.clear_in_flight_end();
        assert_eq!(again.in_flight_end(), None);
    }
}
