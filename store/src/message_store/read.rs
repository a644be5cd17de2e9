//! Reads: pulls (`get_message`, RocketMQ `DefaultMessageStore.getMessage`), lookups by
//! queue offset, physical offset, time and key. Message bytes are handed out as
//! zero-copy slices of the mapped CommitLog.

use std::sync::OnceLock;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;
use message::properties::{self, keys};
use message::record::{self, Record};

use super::MessageStore;
use crate::commit_log::{PhyOffset, RecordAt};
use crate::consume_queue::{BoundaryType, CQ_STORE_UNIT_SIZE, CqSlot, CqUnit, decode};

/// Outcome of a pull (RocketMQ `GetMessageStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GetMessageStatus {
    /// At least one message matched.
    Found,
    /// Units were scanned, none matched the filter.
    NoMatchedMessage,
    /// The first matching units point at CommitLog data already deleted.
    MessageWasRemoving,
    /// No consume-queue file holds the offset.
    OffsetFoundNull,
    /// The offset is past the end of the queue.
    OffsetOverflowBadly,
    /// The offset is the end of the queue (nothing new yet).
    OffsetOverflowOne,
    /// The offset is below the queue's min offset.
    OffsetTooSmall,
    /// There is no such queue.
    NoMatchedLogicQueue,
    /// The queue has no messages.
    NoMessageInQueue,
}

impl GetMessageStatus {
    /// RocketMQ's spelling (the pull response's remark).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            GetMessageStatus::Found => "FOUND",
            GetMessageStatus::NoMatchedMessage => "NO_MATCHED_MESSAGE",
            GetMessageStatus::MessageWasRemoving => "MESSAGE_WAS_REMOVING",
            GetMessageStatus::OffsetFoundNull => "OFFSET_FOUND_NULL",
            GetMessageStatus::OffsetOverflowBadly => "OFFSET_OVERFLOW_BADLY",
            GetMessageStatus::OffsetOverflowOne => "OFFSET_OVERFLOW_ONE",
            GetMessageStatus::OffsetTooSmall => "OFFSET_TOO_SMALL",
            GetMessageStatus::NoMatchedLogicQueue => "NO_MATCHED_LOGIC_QUEUE",
            GetMessageStatus::NoMessageInQueue => "NO_MESSAGE_IN_QUEUE",
        }
    }

    /// Whether `next_begin_offset` is a correction of the requested offset (RocketMQ
    /// `nextOffsetCorrection`): a slave broker without `offsetCheckInSlave` answers
    /// with the requested offset instead.
    #[must_use]
    pub fn is_offset_correction(self) -> bool {
        matches!(
            self,
            GetMessageStatus::NoMatchedLogicQueue
                | GetMessageStatus::NoMessageInQueue
                | GetMessageStatus::OffsetTooSmall
                | GetMessageStatus::OffsetOverflowOne
                | GetMessageStatus::OffsetOverflowBadly
                | GetMessageStatus::OffsetFoundNull
        )
    }
}

impl std::fmt::Display for GetMessageStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pull's filter (RocketMQ `MessageFilter`).
pub trait MessageFilter: Send + Sync {
    /// Whether a unit with this tags code may match. Units always carry one (0 for
    /// untagged messages); `None` is for a unit whose code is unknown, which RocketMQ
    /// lets through.
    fn matches_consume_queue(&self, tags_code: Option<i64>) -> bool;

    /// Whether the record (its stored bytes) matches, for filters that need more than
    /// the tags code (SQL92). Default: yes.
    fn matches_commit_log(&self, _record: &[u8]) -> bool {
        true
    }

    /// Whether the unit at `queue_offset` matches, when the filter knows without
    /// reading the record (a SQL92 filter's match index, filled at dispatch): `None` to
    /// read the record and ask [`matches_commit_log`](Self::matches_commit_log).
    /// Units answered here cost a twentieth of a unit of the pull's scan budget, so an
    /// indexed pull scans twenty times as far. Default: `None`.
    fn indexed(&self, _queue_offset: u64) -> Option<bool> {
        None
    }
}

/// The filter of a `*` subscription: everything matches.
#[derive(Debug, Clone, Copy, Default)]
pub struct MatchAll;

impl MessageFilter for MatchAll {
    fn matches_consume_queue(&self, _tags_code: Option<i64>) -> bool {
        true
    }
}

/// What a pull found.
#[derive(Debug, Clone)]
pub struct GetMessageResult {
    /// Status.
    pub status: GetMessageStatus,
    /// Where the next pull starts: past every unit scanned, matched or not, or the
    /// corrected offset.
    pub next_begin_offset: u64,
    /// The queue's min offset.
    pub min_offset: u64,
    /// The queue's max offset (next to be written).
    pub max_offset: u64,
    /// The records, each a zero-copy slice of the mapped CommitLog.
    pub messages: Vec<Bytes>,
    /// Queue offset of each record.
    pub queue_offsets: Vec<u64>,
    /// The data pulled is further behind the CommitLog's end than
    /// `accessMessageInMemoryMaxRatio` of RAM: a slave should serve this consumer.
    pub suggest_pull_from_slave: bool,
}

impl GetMessageResult {
    fn new(status: GetMessageStatus, next: u64) -> Self {
        GetMessageResult {
            status,
            next_begin_offset: next,
            min_offset: 0,
            max_offset: 0,
            messages: Vec::new(),
            queue_offsets: Vec::new(),
            suggest_pull_from_slave: false,
        }
    }

    /// Total bytes of the records.
    #[must_use]
    pub fn total_bytes(&self) -> usize {
        self.messages.iter().map(Bytes::len).sum()
    }
}

/// What a key query found (RocketMQ `QueryMessageResult`).
#[derive(Debug, Clone, Default)]
pub struct QueryMessageResult {
    /// The records, oldest first, each a zero-copy slice.
    pub messages: Vec<Bytes>,
    /// `endTimestamp` of the newest index file.
    pub index_last_update_timestamp: i64,
    /// `endPhyOffset` of the newest index file.
    pub index_last_update_phy_offset: i64,
}

/// Physical memory in bytes (`MemTotal` of `/proc/meminfo`; 8 GiB if unreadable).
#[must_use]
pub fn total_physical_memory() -> u64 {
    static TOTAL: OnceLock<u64> = OnceLock::new();
    *TOTAL.get_or_init(|| {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            })
            .map_or(8 << 30, |kib| kib * 1024)
    })
}

/// Pull limits for one call.
struct Caps {
    max_msgs: usize,
    max_bytes: Option<usize>,
    mem_bytes: usize,
    mem_count: usize,
    disk_bytes: usize,
    disk_count: usize,
}

impl Caps {
    /// RocketMQ `isTheBatchFull`: never before the first message.
    fn full(&self, size: usize, total: usize, count: usize, in_disk: bool) -> bool {
        if total == 0 || count == 0 {
            return false;
        }
        if self.max_msgs <= count || self.max_bytes.is_some_and(|m| total + size > m) {
            return true;
        }
        let (bytes, msgs) = if in_disk {
            (self.disk_bytes, self.disk_count)
        } else {
            (self.mem_bytes, self.mem_count)
        };
        total + size > bytes || count + 1 > msgs
    }
}

impl MessageStore {
    /// Pulls up to `max_msgs` messages of (topic, queue) from queue offset `offset`
    /// that pass `filter`, within RocketMQ's transfer caps (and `max_bytes`, if
    /// given; the first message always goes), scanning at most
    /// max(16000 bytes, `max_msgs` × 20) of consume queue, and never past the end of
    /// the consume-queue file holding `offset`. See [`GetMessageStatus`] for the
    /// outcomes; `next_begin_offset` is past every unit scanned.
    pub fn get_message(
        &self,
        topic: &str,
        queue_id: i32,
        offset: u64,
        max_msgs: usize,
        max_bytes: Option<usize>,
        filter: &dyn MessageFilter,
    ) -> GetMessageResult {
        let started = Instant::now();
        let r = self.get_message_inner(topic, queue_id, offset, max_msgs, max_bytes, filter);
        let s = &self.inner.stats;
        if r.status == GetMessageStatus::Found {
            s.get_found.fetch_add(1, Ordering::Relaxed);
            s.get_transferred
                .fetch_add(r.messages.len() as u64, Ordering::Relaxed);
        } else {
            s.get_miss.fetch_add(1, Ordering::Relaxed);
        }
        s.get_max_ms
            .fetch_max(started.elapsed().as_millis() as u64, Ordering::Relaxed);
        r
    }

    fn get_message_inner(
        &self,
        topic: &str,
        queue_id: i32,
        offset: u64,
        max_msgs: usize,
        max_bytes: Option<usize>,
        filter: &dyn MessageFilter,
    ) -> GetMessageResult {
        use GetMessageStatus as S;
        let i = &self.inner;
        let log = &i.commit_log;
        let max_phy = log.max_offset().0;
        let Some(cq) = i.cqs.get(topic, queue_id) else {
            return GetMessageResult::new(S::NoMatchedLogicQueue, 0);
        };
        let (min, max) = (cq.min_offset(), cq.max_offset());
        let mut r = if max == 0 {
            GetMessageResult::new(S::NoMessageInQueue, 0)
        } else if offset < min {
            GetMessageResult::new(S::OffsetTooSmall, min)
        } else if offset == max {
            GetMessageResult::new(S::OffsetOverflowOne, offset)
        } else if offset > max {
            GetMessageResult::new(S::OffsetOverflowBadly, max)
        } else {
            let c = &i.config;
            let caps = Caps {
                max_msgs,
                max_bytes,
                mem_bytes: c.max_transfer_bytes_on_message_in_memory,
                mem_count: c.max_transfer_count_on_message_in_memory,
                disk_bytes: c.max_transfer_bytes_on_message_in_disk,
                disk_count: c.max_transfer_count_on_message_in_disk,
            };
            let window = i.memory_window;
            let file_size = log.config().mapped_file_size_commit_log;
            let max_scan = 16_000usize.max(max_msgs.saturating_mul(CQ_STORE_UNIT_SIZE));
            let mut out = GetMessageResult::new(S::NoMatchedMessage, offset);
            let sampled = i.page_cache.sample_this_pull();
            let scanned = cq.read_from(offset, |buf| {
                let mut next_phy_file_start: Option<u64> = None;
                let mut max_phy_pulling = 0u64;
                let mut total = 0usize;
                let mut pos = 0usize;
                // The scan budget: a unit the filter's index answers costs 1, any other
                // CQ_STORE_UNIT_SIZE (RocketMQ's limit counts every unit scanned).
                let mut spent = 0usize;
                while pos + CQ_STORE_UNIT_SIZE <= buf.len() && spent < max_scan {
                    spent += CQ_STORE_UNIT_SIZE;
                    let unit = match decode(&buf[pos..]) {
                        Some(CqSlot::Unit(u)) => u,
                        _ => {
                            pos += CQ_STORE_UNIT_SIZE;
                            continue;
                        }
                    };
                    let phy = unit.commit_log_offset;
                    max_phy_pulling = phy;
                    if next_phy_file_start.is_some_and(|n| phy < n) {
                        pos += CQ_STORE_UNIT_SIZE;
                        continue;
                    }
                    let in_disk = max_phy.saturating_sub(phy) > window;
                    if caps.full(unit.size as usize, total, out.messages.len(), in_disk) {
                        break;
                    }
                    if !filter.matches_consume_queue(Some(unit.tags_code)) {
                        pos += CQ_STORE_UNIT_SIZE;
                        continue;
                    }
                    let queue_offset = offset + (pos / CQ_STORE_UNIT_SIZE) as u64;
                    let indexed = filter.indexed(queue_offset);
                    if indexed.is_some() {
                        spent -= CQ_STORE_UNIT_SIZE - 1;
                    }
                    if indexed == Some(false) {
                        if total == 0 {
                            out.status = S::NoMatchedMessage;
                        }
                        pos += CQ_STORE_UNIT_SIZE;
                        continue;
                    }
                    if sampled {
                        i.page_cache
                            .record(log.is_resident(PhyOffset(phy), unit.size as usize));
                    }
                    match log.read(PhyOffset(phy), unit.size as usize) {
                        None => {
                            if total == 0 {
                                out.status = S::MessageWasRemoving;
                            }
                            next_phy_file_start = Some(phy - phy % file_size + file_size);
                        }
                        Some(b) if indexed.is_none() && !filter.matches_commit_log(&b) => {
                            if total == 0 {
                                out.status = S::NoMatchedMessage;
                            }
                        }
                        Some(b) => {
                            total += b.len();
                            out.messages.push(b);
                            out.queue_offsets.push(queue_offset);
                            out.status = S::Found;
                            next_phy_file_start = None;
                        }
                    }
                    pos += CQ_STORE_UNIT_SIZE;
                }
                (pos, max_phy_pulling)
            });
            match scanned {
                Some((pos, max_phy_pulling)) => {
                    out.next_begin_offset = offset + (pos / CQ_STORE_UNIT_SIZE) as u64;
                    out.suggest_pull_from_slave = max_phy.saturating_sub(max_phy_pulling) > window;
                    out
                }
                None => GetMessageResult::new(S::OffsetFoundNull, cq.roll_next_file(offset)),
            }
        };
        r.min_offset = min;
        r.max_offset = max;
        r
    }

    fn unit(&self, topic: &str, queue_id: i32, cq_offset: u64) -> Option<CqUnit> {
        let cq = self.inner.cqs.get(topic, queue_id)?;
        if cq_offset < cq.min_offset() {
            return None;
        }
        cq.unit_at(cq_offset)
    }

    /// Store timestamp of the record at `phy` of `size` bytes (RocketMQ
    /// `pickupStoreTimestamp`); `None` if the CommitLog no longer holds it.
    #[must_use]
    pub fn pickup_store_timestamp(&self, phy: u64, size: usize) -> Option<i64> {
        let log = &self.inner.commit_log;
        if phy < log.min_offset().0 {
            return None;
        }
        let b = log.read(PhyOffset(phy), size.min(128))?;
        record::peek_store_timestamp(&b)
    }

    /// CommitLog offset of the unit at `cq_offset` of (topic, queue).
    #[must_use]
    pub fn commit_log_offset_in_queue(
        &self,
        topic: &str,
        queue_id: i32,
        cq_offset: u64,
    ) -> Option<u64> {
        self.unit(topic, queue_id, cq_offset)
            .map(|u| u.commit_log_offset)
    }

    /// The queue offset stored at `timestamp` (see
    /// [`ConsumeQueue::offset_by_time`](crate::consume_queue::ConsumeQueue::offset_by_time));
    /// 0 if there is no queue.
    #[must_use]
    pub fn offset_in_queue_by_time(
        &self,
        topic: &str,
        queue_id: i32,
        timestamp: i64,
        boundary: BoundaryType,
    ) -> u64 {
        let Some(cq) = self.inner.cqs.get(topic, queue_id) else {
            return 0;
        };
        cq.offset_by_time(timestamp, boundary, |u| {
            self.pickup_store_timestamp(u.commit_log_offset, u.size as usize)
        })
    }

    /// Store time of the oldest message of (topic, queue).
    #[must_use]
    pub fn earliest_message_time(&self, topic: &str, queue_id: i32) -> Option<i64> {
        let cq = self.inner.cqs.get(topic, queue_id)?;
        let u = cq.unit_at(cq.min_offset())?;
        self.pickup_store_timestamp(u.commit_log_offset, u.size as usize)
    }

    /// Store time of the message at `cq_offset` of (topic, queue).
    #[must_use]
    pub fn message_store_timestamp(
        &self,
        topic: &str,
        queue_id: i32,
        cq_offset: u64,
    ) -> Option<i64> {
        let u = self.unit(topic, queue_id, cq_offset)?;
        self.pickup_store_timestamp(u.commit_log_offset, u.size as usize)
    }

    /// The whole record at `phy_offset` (a zero-copy slice), if one starts there.
    #[must_use]
    pub fn look_message_by_offset(&self, phy_offset: u64) -> Option<Bytes> {
        match self.inner.commit_log.record_at(PhyOffset(phy_offset)) {
            Ok(Some(RecordAt::Message(b))) => Some(b),
            _ => None,
        }
    }

    /// `size` bytes at `phy_offset` (a zero-copy slice), if readable.
    #[must_use]
    pub fn look_message_by_offset_and_size(&self, phy_offset: u64, size: usize) -> Option<Bytes> {
        self.inner.commit_log.read(PhyOffset(phy_offset), size)
    }

    /// Messages of `topic` with key `key` (a `KEYS` entry or the `UNIQ_KEY`) stored
    /// within `[begin, end]`, at most `min(max_num, maxMsgsNumBatch)`, oldest first
    /// (RocketMQ `queryMessage`). Unlike RocketMQ, hash collisions are filtered out
    /// here: every record returned really has the key.
    #[must_use]
    pub fn query_message(
        &self,
        topic: &str,
        key: &str,
        max_num: usize,
        begin: i64,
        end: i64,
    ) -> QueryMessageResult {
        let mut out = QueryMessageResult::default();
        let Some(ix) = &self.inner.index else {
            return out;
        };
        let mut last = end;
        for _ in 0..3 {
            let mut r = ix.query(topic, key, max_num, begin, last);
            out.index_last_update_timestamp = r.index_last_update_timestamp;
            out.index_last_update_phy_offset = r.index_last_update_phy_offset;
            if r.phy_offsets.is_empty() {
                break;
            }
            r.phy_offsets.sort_unstable();
            r.phy_offsets.dedup();
            for (n, off) in r.phy_offsets.iter().enumerate() {
                let Some(b) = self.look_message_by_offset(*off) else {
                    continue;
                };
                let Ok(Some(Record::Message(m))) = record::decode(&b) else {
                    continue;
                };
                if n == 0 {
                    last = m.store_timestamp;
                }
                let props = String::from_utf8_lossy(m.properties);
                let has_key = properties::get(&props, keys::UNIQ_KEY) == Some(key)
                    || properties::get(&props, keys::KEYS)
                        .is_some_and(|ks| ks.split(' ').any(|k| k == key));
                if m.topic == topic && has_key {
                    out.messages.push(b.clone());
                }
            }
            if !out.messages.is_empty() || last < begin {
                break;
            }
        }
        out
    }

    /// Whether the message at `cq_offset` of (topic, queue) is further behind the
    /// CommitLog's end than the in-memory window (RocketMQ
    /// `checkInDiskByConsumeOffset`).
    #[must_use]
    pub fn check_in_disk_by_consume_offset(
        &self,
        topic: &str,
        queue_id: i32,
        cq_offset: u64,
    ) -> bool {
        let Some(u) = self.unit(topic, queue_id, cq_offset) else {
            return false;
        };
        self.inner
            .commit_log
            .max_offset()
            .0
            .saturating_sub(u.commit_log_offset)
            > self.inner.memory_window
    }
}
