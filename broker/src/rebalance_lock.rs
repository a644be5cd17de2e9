//! Queue locks for orderly consumers (`RebalanceLockManager`): a queue belongs to one
//! client of a group at a time; a lock lapses 60 s after its last renewal
//! (`rocketmq.broker.rebalance.lockMaxLiveTime`).

use std::collections::{BTreeSet, HashMap};

use parking_lot::Mutex;
use remoting::protocol::heartbeat::MessageQueue;

use crate::clock::now_ms;

/// Default lock lifetime, ms.
pub const LOCK_MAX_LIVE_TIME_MS: i64 = 60_000;

#[derive(Debug, Clone)]
struct LockEntry {
    client_id: String,
    last_update: i64,
}

/// Locks of every group.
#[derive(Debug)]
pub struct RebalanceLockManager {
    locks: Mutex<HashMap<String, HashMap<MessageQueue, LockEntry>>>,
    max_live_ms: i64,
}

impl Default for RebalanceLockManager {
    fn default() -> Self {
        RebalanceLockManager::new(LOCK_MAX_LIVE_TIME_MS)
    }
}

impl RebalanceLockManager {
    /// Locks live `max_live_ms` after their last renewal.
    #[must_use]
    pub fn new(max_live_ms: i64) -> Self {
        RebalanceLockManager {
            locks: Mutex::new(HashMap::new()),
            max_live_ms,
        }
    }

    /// Locks (or renews) every queue that is free, expired, or already `client_id`'s;
    /// returns the queues `client_id` now holds.
    pub fn try_lock_batch(
        &self,
        group: &str,
        mqs: &BTreeSet<MessageQueue>,
        client_id: &str,
    ) -> BTreeSet<MessageQueue> {
        let now = now_ms();
        let mut locks = self.locks.lock();
        let table = locks.entry(group.to_owned()).or_default();
        let mut granted = BTreeSet::new();
        for mq in mqs {
            let free = table
                .get(mq)
                .is_none_or(|e| e.client_id == client_id || now - e.last_update > self.max_live_ms);
            if free {
                table.insert(
                    mq.clone(),
                    LockEntry {
                        client_id: client_id.to_owned(),
                        last_update: now,
                    },
                );
                granted.insert(mq.clone());
            }
        }
        granted
    }

    /// Releases the queues `client_id` holds among `mqs`.
    pub fn unlock_batch(&self, group: &str, mqs: &BTreeSet<MessageQueue>, client_id: &str) {
        let mut locks = self.locks.lock();
        if let Some(table) = locks.get_mut(group) {
            for mq in mqs {
                if table.get(mq).is_some_and(|e| e.client_id == client_id) {
                    table.remove(mq);
                }
            }
        }
    }

    /// Whether `mq` is locked by `client_id` (and the lock is live).
    #[must_use]
    pub fn is_locked(&self, group: &str, mq: &MessageQueue, client_id: &str) -> bool {
        let now = now_ms();
        self.locks
            .lock()
            .get(group)
            .and_then(|t| t.get(mq))
            .is_some_and(|e| e.client_id == client_id && now - e.last_update <= self.max_live_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mqs(ids: &[i32]) -> BTreeSet<MessageQueue> {
        ids.iter()
            .map(|&q| MessageQueue {
                topic: "T".into(),
                broker_name: "b".into(),
                queue_id: q,
            })
            .collect()
    }

    #[test]
    fn one_owner_per_queue() {
        let m = RebalanceLockManager::default();
        assert_eq!(m.try_lock_batch("g", &mqs(&[0, 1]), "c1").len(), 2);
        assert_eq!(m.try_lock_batch("g", &mqs(&[1, 2]), "c2"), mqs(&[2]));
        assert_eq!(
            m.try_lock_batch("g", &mqs(&[0, 1]), "c1").len(),
            2,
            "renewal"
        );
        // Another group is independent.
        assert_eq!(m.try_lock_batch("h", &mqs(&[0]), "c2").len(), 1);
        m.unlock_batch("g", &mqs(&[0, 2]), "c1");
        assert!(!m.is_locked("g", &mqs(&[0]).pop_first().unwrap(), "c1"));
        assert!(
            m.is_locked("g", &mqs(&[2]).pop_first().unwrap(), "c2"),
            "c1 cannot unlock c2's queue"
        );
    }

    #[test]
    fn expired_locks_can_be_taken() {
        let m = RebalanceLockManager::new(-1);
        m.try_lock_batch("g", &mqs(&[0]), "c1");
        assert_eq!(m.try_lock_batch("g", &mqs(&[0]), "c2").len(), 1);
    }
}
