//! Orderly POP (RocketMQ 5's `ConsumerOrderInfoManager`): a queue popped with
//! `order=true` is locked to its last batch until every message of it is acked or its
//! invisible time passes; acks move the offset to the first message not acked; a batch
//! that becomes visible again is read from that offset, each message's delivery count
//! one higher. No checkpoint is written: the batch lives here, and the offset committed
//! at pop time is its start, so a crash can only deliver it again, in order.
//!
//! Kept in `config/consumerOrderInfo.json` as RocketMQ writes it (fastjson, integer map
//! keys bare), flushed with the consumer offsets.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use remoting::config_file::ConfigFileError;
use remoting::fastjson;
use remoting::protocol::pop::{PopOffsetInfo, RetryFlag};
use serde::{Deserialize, Serialize};

use crate::persist;

/// One queue's last orderly batch (`OrderInfo`), fields in fastjson's order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OrderInfo {
    /// The pop's attempt id: the same attempt is not blocked by its own batch.
    #[serde(rename = "a", skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
    /// Ack bits by index.
    #[serde(rename = "cm")]
    pub commit_offset_bit: i64,
    /// Invisible time of the batch, ms.
    #[serde(rename = "i", skip_serializing_if = "Option::is_none")]
    pub invisible_time: Option<i64>,
    /// When it was last popped or acked.
    #[serde(rename = "l")]
    pub last_consume_timestamp: i64,
    /// `[first offset, second − first, ...]`.
    #[serde(rename = "o")]
    pub offset_list: Vec<i64>,
    /// Deliveries before this one, of the offsets delivered before.
    #[serde(
        rename = "oc",
        with = "fastjson::bare_keys",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub offset_consumed_count: BTreeMap<i64, i32>,
    /// Visible-again times set by a change of invisible time.
    #[serde(
        rename = "ot",
        with = "fastjson::bare_keys",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub offset_next_visible_time: BTreeMap<i64, i64>,
    /// When the batch was popped.
    #[serde(rename = "popTime")]
    pub pop_time: i64,
}

impl OrderInfo {
    fn new(
        attempt_id: Option<&str>,
        pop_time: i64,
        invisible_time: i64,
        offsets: &[i64],
        now: i64,
    ) -> Self {
        let mut list = Vec::with_capacity(offsets.len());
        if let Some(first) = offsets.first() {
            list.push(*first);
            list.extend(offsets[1..].iter().map(|o| o - first));
        }
        OrderInfo {
            attempt_id: attempt_id.map(str::to_owned),
            commit_offset_bit: 0,
            invisible_time: Some(invisible_time),
            last_consume_timestamp: now,
            offset_list: list,
            offset_consumed_count: BTreeMap::new(),
            offset_next_visible_time: BTreeMap::new(),
            pop_time,
        }
    }

    /// Queue offset of the message at `index`.
    #[must_use]
    pub fn queue_offset(&self, index: usize) -> i64 {
        match index {
            0 => self.offset_list[0],
            i => self.offset_list[0] + self.offset_list[i],
        }
    }

    fn acked(&self, index: usize) -> bool {
        index < 64 && self.commit_offset_bit & (1i64 << index) != 0
    }

    /// When the message at `index` is visible again.
    fn next_visible(&self, index: usize) -> i64 {
        let offset = self.queue_offset(index);
        self.offset_next_visible_time
            .get(&offset)
            .copied()
            .unwrap_or_else(|| self.pop_time + self.invisible_time.unwrap_or(0))
    }

    /// RocketMQ's `needBlock`: an un-acked message still invisible, unless this is the
    /// same attempt.
    fn blocks(&self, attempt_id: Option<&str>, now: i64) -> bool {
        if self.offset_list.is_empty() {
            return false;
        }
        if self.attempt_id.is_some() && self.attempt_id.as_deref() == attempt_id {
            return false;
        }
        (0..self.offset_list.len()).any(|i| !self.acked(i) && now < self.next_visible(i))
    }

    /// When the batch stops blocking (`None`: it does not block).
    fn unblocks_at(&self, now: i64) -> Option<i64> {
        (0..self.offset_list.len())
            .filter(|i| !self.acked(*i))
            .map(|i| self.next_visible(i))
            .filter(|t| now < *t)
            .min()
    }

    /// The first offset not acked, or past the batch when all are.
    fn next_offset(&self) -> i64 {
        let n = self.offset_list.len();
        match (0..n).find(|i| !self.acked(*i)) {
            Some(i) => self.queue_offset(i),
            None => self.queue_offset(n - 1) + 1,
        }
    }
}

/// What an orderly ack did (RocketMQ's `commitAndNext` results).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderedAck {
    /// The group's offset is now this.
    Commit(i64),
    /// The ack is for another batch than the queue's last one: nothing changes.
    StaleBatch,
    /// The offset is not in the batch.
    NotInBatch,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(transparent)]
struct Queues(#[serde(with = "fastjson::bare_keys")] BTreeMap<i32, OrderInfo>);

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct OrderInfoFile {
    table: BTreeMap<String, Queues>,
}

impl OrderInfoFile {
    fn info(&self, topic: &str, group: &str, queue_id: i32) -> Option<&OrderInfo> {
        self.table
            .get(&key(topic, group))
            .and_then(|q| q.0.get(&queue_id))
    }

    fn info_mut(&mut self, topic: &str, group: &str, queue_id: i32) -> Option<&mut OrderInfo> {
        self.table
            .get_mut(&key(topic, group))
            .and_then(|q| q.0.get_mut(&queue_id))
    }
}

/// The orderly batches of every `topic@group` and queue.
#[derive(Debug)]
pub struct ConsumerOrderInfo {
    table: Mutex<OrderInfoFile>,
    dirty: AtomicBool,
    path: PathBuf,
}

fn key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

impl ConsumerOrderInfo {
    /// Loads `path` (absent: nothing locked).
    ///
    /// # Errors
    /// The file exists and neither it nor its `.bak` parses.
    pub fn load(path: PathBuf) -> Result<Self, ConfigFileError> {
        let table = persist::load(&path)?.unwrap_or_default();
        Ok(ConsumerOrderInfo {
            table: Mutex::new(table),
            dirty: AtomicBool::new(false),
            path,
        })
    }

    /// Records the batch popped at `pop_time` from the queue and adds its order counts
    /// to `info` (`update`).
    #[allow(
        clippy::too_many_arguments,
        reason = "RocketMQ's update, field for field"
    )]
    pub fn update(
        &self,
        attempt_id: Option<&str>,
        retry: RetryFlag,
        topic: &str,
        group: &str,
        queue_id: i32,
        pop_time: i64,
        invisible_time: i64,
        offsets: &[i64],
        info: &mut PopOffsetInfo,
    ) {
        let now = crate::clock::now_ms();
        let mut t = self.table.lock();
        let queues = t.table.entry(key(topic, group)).or_default();
        let mut fresh = OrderInfo::new(attempt_id, pop_time, invisible_time, offsets, now);
        if let Some(old) = queues.0.get(&queue_id) {
            if old.attempt_id.is_some() && old.attempt_id == fresh.attempt_id {
                fresh.offset_consumed_count = old.offset_consumed_count.clone();
            } else {
                let before: Vec<i64> = (0..old.offset_list.len())
                    .map(|i| old.queue_offset(i))
                    .collect();
                for o in offsets {
                    if before.contains(o) {
                        let count = old.offset_consumed_count.get(o).map_or(1, |c| c + 1);
                        fresh.offset_consumed_count.insert(*o, count);
                    }
                }
            }
        }
        let mut min = i32::MAX;
        for (offset, count) in &fresh.offset_consumed_count {
            info.add_order_count(retry, queue_id, *offset, *count);
            min = min.min(*count);
        }
        if fresh.offset_consumed_count.len() != fresh.offset_list.len() {
            min = 0;
        }
        info.add_queue_order_count(retry, queue_id, min);
        queues.0.insert(queue_id, fresh);
        self.dirty.store(true, Ordering::Release);
    }

    /// Whether the queue is locked to a batch another attempt popped.
    #[must_use]
    pub fn blocked(
        &self,
        attempt_id: Option<&str>,
        topic: &str,
        group: &str,
        queue_id: i32,
    ) -> bool {
        let now = crate::clock::now_ms();
        self.table
            .lock()
            .info(topic, group, queue_id)
            .is_some_and(|o| o.blocks(attempt_id, now))
    }

    /// When the queue's batch stops blocking (to hold a pop no longer than that).
    #[must_use]
    pub fn unblocks_at(&self, topic: &str, group: &str, queue_id: i32) -> Option<i64> {
        let now = crate::clock::now_ms();
        self.table
            .lock()
            .info(topic, group, queue_id)
            .and_then(|o| o.unblocks_at(now))
    }

    /// Forgets the queue's batch (its offset was reset).
    pub fn clear(&self, topic: &str, group: &str, queue_id: i32) {
        let mut t = self.table.lock();
        if let Some(q) = t.table.get_mut(&key(topic, group)) {
            if q.0.remove(&queue_id).is_some() {
                self.dirty.store(true, Ordering::Release);
            }
        }
    }

    /// Acks `offset` of the batch popped at `pop_time` (`commitAndNext`).
    pub fn ack(
        &self,
        topic: &str,
        group: &str,
        queue_id: i32,
        offset: i64,
        pop_time: i64,
    ) -> OrderedAck {
        let mut t = self.table.lock();
        let Some(info) = t.info_mut(topic, group, queue_id) else {
            return OrderedAck::Commit(offset + 1);
        };
        if info.offset_list.is_empty() {
            return OrderedAck::NotInBatch;
        }
        if info.pop_time != pop_time {
            return OrderedAck::StaleBatch;
        }
        let Some(i) = (0..info.offset_list.len()).find(|i| info.queue_offset(*i) == offset) else {
            return OrderedAck::NotInBatch;
        };
        if i < 64 {
            info.commit_offset_bit |= 1i64 << i;
        }
        info.last_consume_timestamp = crate::clock::now_ms();
        self.dirty.store(true, Ordering::Release);
        OrderedAck::Commit(info.next_offset())
    }

    /// Sets when `offset` of the batch popped at `pop_time` is visible again
    /// (`updateNextVisibleTime`); false when the batch is not the queue's last.
    pub fn set_next_visible(
        &self,
        topic: &str,
        group: &str,
        queue_id: i32,
        offset: i64,
        pop_time: i64,
        next_visible: i64,
    ) -> bool {
        let mut t = self.table.lock();
        let Some(info) = t.info_mut(topic, group, queue_id) else {
            return false;
        };
        if info.pop_time != pop_time {
            return false;
        }
        info.offset_next_visible_time.insert(offset, next_visible);
        self.dirty.store(true, Ordering::Release);
        true
    }

    /// Writes the file if anything changed since the last flush.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn flush(&self) -> Result<(), ConfigFileError> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let bytes = {
            let t = self.table.lock();
            fastjson::to_vec(&*t, fastjson::KeyStyle::Fastjson).map_err(|e| {
                ConfigFileError::Corrupt {
                    path: self.path.clone(),
                    reason: e.to_string(),
                }
            })?
        };
        remoting::config_file::write_atomic(&self.path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manager() -> (tempfile::TempDir, ConsumerOrderInfo) {
        let dir = tempfile::tempdir().unwrap();
        let m = ConsumerOrderInfo::load(dir.path().join("consumerOrderInfo.json")).unwrap();
        (dir, m)
    }

    #[test]
    fn a_batch_blocks_its_queue_until_acked_and_acks_move_the_offset() {
        let (_d, m) = manager();
        let now = crate::clock::now_ms();
        let mut info = PopOffsetInfo::default();
        m.update(
            Some("a1"),
            RetryFlag::Normal,
            "T",
            "G",
            0,
            now,
            60_000,
            &[5, 6, 8],
            &mut info,
        );
        assert!(m.blocked(Some("a2"), "T", "G", 0));
        assert!(
            !m.blocked(Some("a1"), "T", "G", 0),
            "the same attempt is not blocked"
        );
        assert!(!m.blocked(None, "T", "G", 1));
        assert_eq!(m.ack("T", "G", 0, 6, now), OrderedAck::Commit(5));
        assert_eq!(m.ack("T", "G", 0, 5, now), OrderedAck::Commit(8));
        assert_eq!(m.ack("T", "G", 0, 7, now), OrderedAck::NotInBatch);
        assert_eq!(m.ack("T", "G", 0, 8, now - 1), OrderedAck::StaleBatch);
        assert!(m.blocked(Some("a2"), "T", "G", 0));
        assert_eq!(m.ack("T", "G", 0, 8, now), OrderedAck::Commit(9));
        assert!(!m.blocked(Some("a2"), "T", "G", 0));
        assert_eq!(info.order_count_info().as_deref(), Some("0 0 0"));
    }

    #[test]
    fn a_batch_popped_again_counts_deliveries_and_persists_as_rocketmq_writes_it() {
        let (dir, m) = manager();
        let past = crate::clock::now_ms() - 10_000;
        let mut info = PopOffsetInfo::default();
        m.update(
            Some("a1"),
            RetryFlag::Normal,
            "T",
            "G",
            1,
            past,
            1000,
            &[3, 4],
            &mut info,
        );
        assert!(!m.blocked(Some("a2"), "T", "G", 1), "invisible time over");
        let mut again = PopOffsetInfo::default();
        m.update(
            Some("a2"),
            RetryFlag::Normal,
            "T",
            "G",
            1,
            past + 5000,
            60_000,
            &[4, 5],
            &mut again,
        );
        assert_eq!(again.order_count_info().as_deref(), Some("0 qo1%4 1;0 1 0"));
        assert!(m.set_next_visible("T", "G", 1, 4, past + 5000, 0));
        assert!(m.unblocks_at("T", "G", 1).is_some());
        m.flush().unwrap();
        let text = std::fs::read_to_string(dir.path().join("consumerOrderInfo.json")).unwrap();
        assert!(
            text.contains(r#"{"table":{"T@G":{1:{"a":"a2","cm":0,"i":60000,"l":"#),
            "{text}"
        );
        assert!(
            text.contains(r#""o":[4,1],"oc":{4:1},"ot":{4:0},"popTime":"#),
            "{text}"
        );
        let back = ConsumerOrderInfo::load(dir.path().join("consumerOrderInfo.json")).unwrap();
        assert!(back.blocked(Some("x"), "T", "G", 1));
    }
}
