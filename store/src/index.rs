//! IndexFile: find messages by key (`KEYS`, `UNIQ_KEY`) within a time range, for
//! `QUERY_MESSAGE` and `mqadmin queryMsgByKey/ById`. Files live under `index/`, named
//! by creation time (`yyyyMMddHHmmssSSS`, local time), each a hash table of
//! `maxHashSlotNum` slots whose entries chain through `prevIndex`, byte-compatible
//! with RocketMQ's.
//!
//! A file is written only by the dispatch thread and read by queries at the same time,
//! so it is a [`MappedWords`] mapping accessed with atomics: an entry is written first,
//! then its slot is published (release), then the header's count. After a `kill -9`
//! (page cache intact) the worst left behind is an entry whose slot was published but
//! not the count; [`IndexFile::repair`] takes it back. Recovery then removes the
//! entries of every record from the restart offset on ([`IndexService::undo_from`]),
//! walking the chains backwards, so re-dispatch indexes each record exactly once.
//!
//! One liberty with RocketMQ: the header's `endPhyOffset`/`endTimestamp` advance for
//! every dispatched record once its keys are in (keys or not), not per key, so the
//! index header records how far dispatch got; recovery restarts there.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};

use message::tags::{hash_code, hash_code_extend};
use parking_lot::RwLock;
use tracing::{debug, info, warn};

use crate::clock::human_millis;
use crate::error::{Result, StoreError};
use crate::mapped_file::MappedWords;

mod service;

pub use service::{IndexService, QueryOffsetResult};

/// Size of the header (RocketMQ `IndexHeader.INDEX_HEADER_SIZE`).
pub const INDEX_HEADER_SIZE: usize = 40;
/// Size of one hash slot.
pub const HASH_SLOT_SIZE: usize = 4;
/// Size of one entry.
pub const INDEX_ENTRY_SIZE: usize = 20;
/// Slot and `prevIndex` value meaning "none".
pub const INVALID_INDEX: u32 = 0;
/// Entries reserved on disk at a time ahead of the writer (about 64 KiB).
const RESERVE_ENTRIES: u32 = 3277;

/// The index hash of `topic#key`: `abs(hashCode)`, 0 if that overflows (RocketMQ
/// `indexKeyHashMethod`). Computed without building the string.
#[must_use]
pub fn key_hash(topic: &str, key: &str) -> u32 {
    let h = hash_code_extend(hash_code_extend(hash_code(topic), "#"), key);
    if h == i32::MIN { 0 } else { h.unsigned_abs() }
}

/// The index header.
///
/// | off | size | field |
/// |---|---|---|
/// | 0 | 8 | beginTimestamp: i64 BE, store time of the first entry |
/// | 8 | 8 | endTimestamp: i64 BE, store time of the last record dispatched |
/// | 16 | 8 | beginPhyOffset: i64 BE, CommitLog offset of the first entry |
/// | 24 | 8 | endPhyOffset: i64 BE, CommitLog offset of the last record dispatched |
/// | 32 | 4 | hashSlotCount: i32 BE, slots in use |
/// | 36 | 4 | indexCount: i32 BE, next entry number (starts at 1; entry 0 is unused) |
///
/// Then `maxHashSlotNum` 4-byte slots (i32 BE: the newest entry of the slot, 0 for
/// none), then `maxIndexNum` 20-byte entries ([`IndexEntry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IndexHeader {
    /// beginTimestamp.
    pub begin_timestamp: i64,
    /// endTimestamp.
    pub end_timestamp: i64,
    /// beginPhyOffset.
    pub begin_phy_offset: i64,
    /// endPhyOffset.
    pub end_phy_offset: i64,
    /// hashSlotCount.
    pub hash_slot_count: i32,
    /// indexCount.
    pub index_count: i32,
}

impl IndexHeader {
    /// The 40 header bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; INDEX_HEADER_SIZE] {
        let mut b = [0u8; INDEX_HEADER_SIZE];
        b[0..8].copy_from_slice(&self.begin_timestamp.to_be_bytes());
        b[8..16].copy_from_slice(&self.end_timestamp.to_be_bytes());
        b[16..24].copy_from_slice(&self.begin_phy_offset.to_be_bytes());
        b[24..32].copy_from_slice(&self.end_phy_offset.to_be_bytes());
        b[32..36].copy_from_slice(&self.hash_slot_count.to_be_bytes());
        b[36..40].copy_from_slice(&self.index_count.to_be_bytes());
        b
    }

    /// Decodes a header; `None` if `b` is shorter than 40 bytes.
    #[must_use]
    pub fn decode(b: &[u8]) -> Option<Self> {
        let b = b.get(..INDEX_HEADER_SIZE)?;
        let i64_at = |o: usize| b[o..o + 8].try_into().ok().map(i64::from_be_bytes);
        let i32_at = |o: usize| b[o..o + 4].try_into().ok().map(i32::from_be_bytes);
        Some(IndexHeader {
            begin_timestamp: i64_at(0)?,
            end_timestamp: i64_at(8)?,
            begin_phy_offset: i64_at(16)?,
            end_phy_offset: i64_at(24)?,
            hash_slot_count: i32_at(32)?,
            index_count: i32_at(36)?,
        })
    }
}

/// One index entry.
///
/// | off | size | field |
/// |---|---|---|
/// | 0 | 4 | keyHash: i32 BE, `abs(hashCode("topic#key"))` |
/// | 4 | 8 | phyOffset: i64 BE, CommitLog offset of the record |
/// | 12 | 4 | timeDiff: i32 BE, seconds from the header's beginTimestamp |
/// | 16 | 4 | prevIndex: i32 BE, the previous entry of the same slot (0: none) |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IndexEntry {
    /// keyHash.
    pub key_hash: i32,
    /// phyOffset.
    pub phy_offset: i64,
    /// timeDiff (seconds).
    pub time_diff: i32,
    /// prevIndex.
    pub prev_index: i32,
}

impl IndexEntry {
    /// The 20 entry bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; INDEX_ENTRY_SIZE] {
        let mut b = [0u8; INDEX_ENTRY_SIZE];
        b[0..4].copy_from_slice(&self.key_hash.to_be_bytes());
        b[4..12].copy_from_slice(&self.phy_offset.to_be_bytes());
        b[12..16].copy_from_slice(&self.time_diff.to_be_bytes());
        b[16..20].copy_from_slice(&self.prev_index.to_be_bytes());
        b
    }

    /// Decodes an entry; `None` if `b` is shorter than 20 bytes.
    #[must_use]
    pub fn decode(b: &[u8]) -> Option<Self> {
        let b = b.get(..INDEX_ENTRY_SIZE)?;
        let i32_at = |o: usize| b[o..o + 4].try_into().ok().map(i32::from_be_bytes);
        Some(IndexEntry {
            key_hash: i32_at(0)?,
            phy_offset: b[4..12].try_into().ok().map(i64::from_be_bytes)?,
            time_diff: i32_at(12)?,
            prev_index: i32_at(16)?,
        })
    }
}

/// Offsets of the header fields.
mod at {
    pub const BEGIN_TIMESTAMP: usize = 0;
    pub const END_TIMESTAMP: usize = 8;
    pub const BEGIN_PHY_OFFSET: usize = 16;
    pub const END_PHY_OFFSET: usize = 24;
    pub const HASH_SLOT_COUNT: usize = 32;
    pub const INDEX_COUNT: usize = 36;
}

/// One index file.
#[derive(Debug)]
pub struct IndexFile {
    map: MappedWords,
    name: String,
    slot_num: u32,
    index_num: u32,
    begin_timestamp: AtomicI64,
    end_timestamp: AtomicI64,
    begin_phy_offset: AtomicI64,
    end_phy_offset: AtomicI64,
    hash_slot_count: AtomicU32,
    index_count: AtomicU32,
    reserved_entries: AtomicU32,
    /// Written since the last flush.
    dirty: AtomicBool,
}

/// Size of an index file with these dimensions.
#[must_use]
pub fn file_size(slot_num: u32, index_num: u32) -> usize {
    INDEX_HEADER_SIZE + HASH_SLOT_SIZE * slot_num as usize + INDEX_ENTRY_SIZE * index_num as usize
}

impl IndexFile {
    /// Creates `dir/name`, its header starting where the previous file ended (RocketMQ
    /// passes the previous file's end offset and time, if positive).
    ///
    /// # Errors
    /// The file exists or cannot be created (disk full).
    pub fn create(
        dir: &Path,
        name: &str,
        slot_num: u32,
        index_num: u32,
        end_phy_offset: i64,
        end_timestamp: i64,
    ) -> Result<Self> {
        let size = file_size(slot_num, index_num);
        let slots_end = INDEX_HEADER_SIZE + HASH_SLOT_SIZE * slot_num as usize;
        let map = MappedWords::create(dir, name, size, slots_end)?;
        let f = Self::with_map(map, name, slot_num, index_num, IndexHeader::default());
        if end_phy_offset > 0 {
            f.set_i64(at::BEGIN_PHY_OFFSET, &f.begin_phy_offset, end_phy_offset);
            f.set_i64(at::END_PHY_OFFSET, &f.end_phy_offset, end_phy_offset);
        }
        if end_timestamp > 0 {
            f.set_i64(at::BEGIN_TIMESTAMP, &f.begin_timestamp, end_timestamp);
            f.set_i64(at::END_TIMESTAMP, &f.end_timestamp, end_timestamp);
        }
        info!(file = %f.map.path().display(), "created index file");
        Ok(f)
    }

    /// Opens an existing file and loads its header (`indexCount` ≤ 0 reads as 1).
    ///
    /// # Errors
    /// The file cannot be mapped or has another size than these dimensions give.
    pub fn open(path: &Path, slot_num: u32, index_num: u32) -> Result<Self> {
        let map = MappedWords::open(path, file_size(slot_num, index_num))?;
        let mut raw = [0u8; INDEX_HEADER_SIZE];
        for (i, chunk) in raw.chunks_exact_mut(4).enumerate() {
            let v = map.load_u32(i * 4, Ordering::Acquire).unwrap_or(0);
            chunk.copy_from_slice(&v.to_be_bytes());
        }
        let header = IndexHeader::decode(&raw).unwrap_or_default();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let f = Self::with_map(map, &name, slot_num, index_num, header);
        f.reserved_entries
            .store(f.index_count.load(Ordering::Relaxed), Ordering::Relaxed);
        Ok(f)
    }

    fn with_map(
        map: MappedWords,
        name: &str,
        slot_num: u32,
        index_num: u32,
        h: IndexHeader,
    ) -> Self {
        IndexFile {
            map,
            name: name.to_owned(),
            slot_num,
            index_num,
            begin_timestamp: AtomicI64::new(h.begin_timestamp),
            end_timestamp: AtomicI64::new(h.end_timestamp),
            begin_phy_offset: AtomicI64::new(h.begin_phy_offset),
            end_phy_offset: AtomicI64::new(h.end_phy_offset),
            hash_slot_count: AtomicU32::new(h.hash_slot_count.max(0) as u32),
            index_count: AtomicU32::new(h.index_count.max(1) as u32),
            reserved_entries: AtomicU32::new(0),
            dirty: AtomicBool::new(false),
        }
    }

    fn set_i64(&self, pos: usize, field: &AtomicI64, v: i64) {
        self.dirty.store(true, Ordering::Release);
        field.store(v, Ordering::Release);
        self.map.store_u64(pos, v as u64, Ordering::Release);
    }

    fn set_u32(&self, pos: usize, field: &AtomicU32, v: u32) {
        self.dirty.store(true, Ordering::Release);
        field.store(v, Ordering::Release);
        self.map.store_u32(pos, v, Ordering::Release);
    }

    /// File name (creation time).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Path.
    #[must_use]
    pub fn path(&self) -> &Path {
        self.map.path()
    }

    /// The header as held in memory.
    #[must_use]
    pub fn header(&self) -> IndexHeader {
        IndexHeader {
            begin_timestamp: self.begin_timestamp.load(Ordering::Acquire),
            end_timestamp: self.end_timestamp.load(Ordering::Acquire),
            begin_phy_offset: self.begin_phy_offset.load(Ordering::Acquire),
            end_phy_offset: self.end_phy_offset.load(Ordering::Acquire),
            hash_slot_count: self.hash_slot_count.load(Ordering::Acquire) as i32,
            index_count: self.index_count.load(Ordering::Acquire) as i32,
        }
    }

    /// Next entry number (entries `1..index_count` exist).
    #[must_use]
    pub fn index_count(&self) -> u32 {
        self.index_count.load(Ordering::Acquire)
    }

    /// Whether no entry fits any more.
    #[must_use]
    pub fn is_write_full(&self) -> bool {
        self.index_count() >= self.index_num
    }

    /// `endPhyOffset`.
    #[must_use]
    pub fn end_phy_offset(&self) -> i64 {
        self.end_phy_offset.load(Ordering::Acquire)
    }

    /// `endTimestamp`.
    #[must_use]
    pub fn end_timestamp(&self) -> i64 {
        self.end_timestamp.load(Ordering::Acquire)
    }

    /// `beginTimestamp`.
    #[must_use]
    pub fn begin_timestamp(&self) -> i64 {
        self.begin_timestamp.load(Ordering::Acquire)
    }

    fn slot_pos(&self, hash: u32) -> usize {
        INDEX_HEADER_SIZE + (hash % self.slot_num) as usize * HASH_SLOT_SIZE
    }

    fn entry_pos(&self, n: u32) -> usize {
        INDEX_HEADER_SIZE + self.slot_num as usize * HASH_SLOT_SIZE + n as usize * INDEX_ENTRY_SIZE
    }

    /// Entry `n` (any number below `maxIndexNum`).
    #[must_use]
    pub fn entry(&self, n: u32) -> Option<IndexEntry> {
        if n >= self.index_num {
            return None;
        }
        let p = self.entry_pos(n);
        let w = |o: usize| self.map.load_u32(p + o, Ordering::Relaxed);
        Some(IndexEntry {
            key_hash: w(0)? as i32,
            phy_offset: ((u64::from(w(4)?) << 32) | u64::from(w(8)?)) as i64,
            time_diff: w(12)? as i32,
            prev_index: w(16)? as i32,
        })
    }

    fn write_entry(&self, n: u32, e: &IndexEntry) {
        let p = self.entry_pos(n);
        let phy = e.phy_offset as u64;
        for (o, v) in [
            (0, e.key_hash as u32),
            (4, (phy >> 32) as u32),
            (8, phy as u32),
            (12, e.time_diff as u32),
            (16, e.prev_index as u32),
        ] {
            self.map.store_u32(p + o, v, Ordering::Relaxed);
        }
    }

    /// The slot of `hash`.
    #[must_use]
    pub fn slot(&self, hash: u32) -> u32 {
        self.map
            .load_u32(self.slot_pos(hash), Ordering::Acquire)
            .unwrap_or(0)
    }

    /// Adds an entry for `hash` (RocketMQ `putKey`); `Ok(false)` if the file is full.
    ///
    /// # Errors
    /// Disk space for the entry cannot be reserved.
    pub fn put_key(&self, hash: u32, phy_offset: u64, store_timestamp: i64) -> Result<bool> {
        let count = self.index_count();
        if count >= self.index_num {
            return Ok(false);
        }
        let slot_pos = self.slot_pos(hash);
        let mut slot_value = self.slot(hash);
        if slot_value == INVALID_INDEX || slot_value > count || slot_value > i32::MAX as u32 {
            slot_value = INVALID_INDEX;
        }
        let begin = self.begin_timestamp();
        let time_diff = if begin <= 0 {
            0
        } else {
            ((store_timestamp - begin) / 1000).clamp(0, i64::from(i32::MAX)) as i32
        };
        if count >= self.reserved_entries.load(Ordering::Relaxed) {
            let upto = count.saturating_add(RESERVE_ENTRIES).min(self.index_num);
            let from = self.entry_pos(count);
            self.map.reserve(from, self.entry_pos(upto) - from)?;
            self.reserved_entries.store(upto, Ordering::Relaxed);
        }
        self.write_entry(
            count,
            &IndexEntry {
                key_hash: hash as i32,
                phy_offset: phy_offset as i64,
                time_diff,
                prev_index: slot_value as i32,
            },
        );
        // Publishes the entry to queries that read the slot.
        self.map.store_u32(slot_pos, count, Ordering::Release);
        if count <= 1 {
            self.set_i64(
                at::BEGIN_PHY_OFFSET,
                &self.begin_phy_offset,
                phy_offset as i64,
            );
            self.set_i64(at::BEGIN_TIMESTAMP, &self.begin_timestamp, store_timestamp);
        }
        if slot_value == INVALID_INDEX {
            let n = self.hash_slot_count.load(Ordering::Relaxed) + 1;
            self.set_u32(at::HASH_SLOT_COUNT, &self.hash_slot_count, n);
        }
        self.set_u32(at::INDEX_COUNT, &self.index_count, count + 1);
        Ok(true)
    }

    /// Records that every key of the record at `phy_offset` is in: the header's end.
    pub fn finish_record(&self, phy_offset: u64, store_timestamp: i64) {
        self.set_i64(at::END_PHY_OFFSET, &self.end_phy_offset, phy_offset as i64);
        self.set_i64(at::END_TIMESTAMP, &self.end_timestamp, store_timestamp);
    }

    /// Whether the file's time range touches `[begin, end]` (RocketMQ `isTimeMatched`).
    #[must_use]
    pub fn is_time_matched(&self, begin: i64, end: i64) -> bool {
        let (fb, fe) = (self.begin_timestamp(), self.end_timestamp());
        (begin < fb && end > fe) || (begin >= fb && begin <= fe) || (end >= fb && end <= fe)
    }

    /// Collects the CommitLog offsets of entries with `hash` stored within
    /// `[begin, end]`, newest first, until `out` holds `max_num` (RocketMQ
    /// `selectPhyOffset`). The walk is bounded by the entry count, so a corrupt chain
    /// cannot loop.
    pub fn select(&self, hash: u32, max_num: usize, begin: i64, end: i64, out: &mut Vec<u64>) {
        let count = self.index_count();
        let first = self.slot(hash);
        if first == INVALID_INDEX || first >= count || count <= 1 {
            return;
        }
        let file_begin = self.begin_timestamp();
        let mut next = first;
        for _ in 0..count {
            if out.len() >= max_num {
                break;
            }
            let Some(e) = self.entry(next) else { break };
            if e.time_diff < 0 {
                break;
            }
            let time = file_begin + i64::from(e.time_diff) * 1000;
            if e.key_hash as u32 == hash && time >= begin && time <= end && e.phy_offset >= 0 {
                out.push(e.phy_offset as u64);
            }
            let prev = e.prev_index;
            if prev <= 0 || prev as u32 >= count || prev as u32 == next || time < begin {
                break;
            }
            next = prev as u32;
        }
    }

    /// Takes back an entry whose slot was published but not its count (a crash
    /// between the two). Returns whether there was one.
    pub fn repair(&self) -> bool {
        let count = self.index_count();
        let Some(e) = self.entry(count) else {
            return false;
        };
        if e == IndexEntry::default() {
            return false;
        }
        let hash = e.key_hash as u32;
        let repaired = self.slot(hash) == count;
        if repaired {
            let prev = if e.prev_index > 0 && (e.prev_index as u32) < count {
                e.prev_index as u32
            } else {
                INVALID_INDEX
            };
            self.map
                .store_u32(self.slot_pos(hash), prev, Ordering::Release);
            // The crash may have come before or after the slot count was bumped.
            let used = (0..self.slot_num)
                .filter(|s| {
                    let pos = INDEX_HEADER_SIZE + *s as usize * HASH_SLOT_SIZE;
                    self.map.load_u32(pos, Ordering::Relaxed).unwrap_or(0) != 0
                })
                .count() as u32;
            self.set_u32(at::HASH_SLOT_COUNT, &self.hash_slot_count, used);
            warn!(file = %self.path().display(), entry = count, "took back an index entry whose count was never published");
        }
        self.write_entry(count, &IndexEntry::default());
        repaired
    }

    /// Removes the entries of records at or after `phy_offset`, newest first,
    /// restoring each slot to the entry's predecessor; then sets the header's end to
    /// `phy_offset` (dispatch restarts there). Returns how many entries went and
    /// whether an older entry stopped the walk.
    pub fn undo_from(&self, phy_offset: u64) -> (u32, bool) {
        let mut count = self.index_count();
        let mut removed = 0;
        let mut stopped = false;
        while count > 1 {
            let n = count - 1;
            let Some(e) = self.entry(n) else { break };
            if e.phy_offset >= 0 && (e.phy_offset as u64) < phy_offset {
                stopped = true;
                break;
            }
            let hash = e.key_hash as u32;
            if self.slot(hash) == n {
                let prev = if e.prev_index > 0 && (e.prev_index as u32) < n {
                    e.prev_index as u32
                } else {
                    INVALID_INDEX
                };
                self.map
                    .store_u32(self.slot_pos(hash), prev, Ordering::Release);
                if prev == INVALID_INDEX {
                    let c = self
                        .hash_slot_count
                        .load(Ordering::Relaxed)
                        .saturating_sub(1);
                    self.set_u32(at::HASH_SLOT_COUNT, &self.hash_slot_count, c);
                }
            }
            self.set_u32(at::INDEX_COUNT, &self.index_count, n);
            self.write_entry(n, &IndexEntry::default());
            count = n;
            removed += 1;
        }
        if self.end_phy_offset() >= phy_offset as i64 || removed > 0 {
            self.set_i64(at::END_PHY_OFFSET, &self.end_phy_offset, phy_offset as i64);
        }
        (removed, stopped)
    }

    /// Syncs the file.
    ///
    /// # Errors
    /// The sync failed.
    pub fn flush(&self) -> Result<()> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let started = std::time::Instant::now();
        if let Err(e) = self.map.flush() {
            self.dirty.store(true, Ordering::Release);
            return Err(e);
        }
        debug!(file = %self.path().display(), elapsed_ms = started.elapsed().as_millis() as u64, "flushed index file");
        Ok(())
    }

    /// Deletes the file (queries holding it keep reading the mapping).
    ///
    /// # Errors
    /// The unlink failed.
    pub fn destroy(&self) -> Result<()> {
        self.map.destroy()
    }
}

/// A name for a new index file created at `now_ms`, later than `last` (so names keep
/// sorting in creation order even if the clock steps back or two files are made in
/// one millisecond).
#[must_use]
pub fn next_file_name(now_ms: i64, last: Option<&str>) -> String {
    let name = human_millis(now_ms);
    match last {
        Some(l) if name.as_str() <= l => l
            .parse::<u64>()
            .map_or_else(|_| format!("{l}1"), |v| format!("{:017}", v + 1)),
        _ => name,
    }
}

/// The index files in `dir`, oldest first (by name, as RocketMQ sorts them); leftover
/// `.tmp` files are removed.
///
/// # Errors
/// The directory cannot be read.
pub fn list_files(dir: &Path) -> Result<Vec<PathBuf>> {
    fs::create_dir_all(dir).map_err(|e| StoreError::io("mkdir", dir, e))?;
    let mut out = Vec::new();
    for e in fs::read_dir(dir).map_err(|e| StoreError::io("readdir", dir, e))? {
        let e = e.map_err(|e| StoreError::io("readdir", dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".tmp") {
            warn!(file = %e.path().display(), "removing leftover temporary index file");
            let _ = fs::remove_file(e.path());
        } else if !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()) {
            out.push(e.path());
        } else {
            warn!(file = %e.path().display(), "ignoring foreign file in the index directory");
        }
    }
    out.sort();
    Ok(out)
}

/// Shared list of files, oldest first.
type Files = RwLock<Vec<Arc<IndexFile>>>;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn key_hash_is_java_hash_code_of_topic_hash_key() {
        assert_eq!(key_hash("T", "k"), hash_code("T#k").unsigned_abs());
        assert_eq!(key_hash("中", "😀"), hash_code("中#😀").unsigned_abs());
        // "polygenelubricants" hashes to Integer.MIN_VALUE; abs overflows, RocketMQ uses 0.
        assert_eq!(key_hash("polygenelubricants", "").min(1), 1);
    }

    #[test]
    fn header_and_entry_layout() {
        let h = IndexHeader {
            begin_timestamp: 1,
            end_timestamp: 2,
            begin_phy_offset: 3,
            end_phy_offset: 4,
            hash_slot_count: 5,
            index_count: 6,
        };
        let b = h.encode();
        assert_eq!(&b[0..8], &1i64.to_be_bytes());
        assert_eq!(&b[24..32], &4i64.to_be_bytes());
        assert_eq!(&b[36..40], &6i32.to_be_bytes());
        assert_eq!(IndexHeader::decode(&b), Some(h));
        let e = IndexEntry {
            key_hash: 7,
            phy_offset: 0x0102_0304_0506_0708,
            time_diff: 9,
            prev_index: 10,
        };
        let b = e.encode();
        assert_eq!(&b[4..12], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(IndexEntry::decode(&b), Some(e));
        assert_eq!(IndexEntry::decode(&b[..19]), None);
    }

    fn file(dir: &Path, slots: u32, entries: u32) -> IndexFile {
        IndexFile::create(dir, "20240101000000000", slots, entries, 0, 0).unwrap()
    }

    #[test]
    fn put_chain_select_and_on_disk_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path(), 4, 16);
        let t0 = 1_700_000_000_000;
        // Hashes 1 and 5 share slot 1.
        assert!(f.put_key(1, 100, t0).unwrap());
        assert!(f.put_key(5, 200, t0 + 2_500).unwrap());
        assert!(f.put_key(1, 300, t0 + 4_000).unwrap());
        f.finish_record(300, t0 + 4_000);
        let mut out = vec![];
        f.select(1, 10, t0, t0 + 10_000, &mut out);
        assert_eq!(out, vec![300, 100]);
        out.clear();
        f.select(1, 1, t0, t0 + 10_000, &mut out);
        assert_eq!(out, vec![300], "max num");
        out.clear();
        f.select(1, 10, t0 + 3_000, t0 + 10_000, &mut out);
        assert_eq!(out, vec![300], "time range");
        out.clear();
        f.select(5, 10, 0, i64::MAX, &mut out);
        assert_eq!(out, vec![200]);
        assert_eq!(f.entry(2).unwrap().time_diff, 2);
        assert_eq!(f.entry(3).unwrap().prev_index, 2, "chains run per slot");
        f.flush().unwrap();
        let raw = std::fs::read(f.path()).unwrap();
        let h = IndexHeader::decode(&raw).unwrap();
        assert_eq!(
            h,
            IndexHeader {
                begin_timestamp: t0,
                end_timestamp: t0 + 4_000,
                begin_phy_offset: 100,
                end_phy_offset: 300,
                hash_slot_count: 1,
                index_count: 4,
            }
        );
        assert_eq!(
            &raw[40 + 4..40 + 8],
            &3i32.to_be_bytes(),
            "slot 1 -> entry 3"
        );
        let e3 = IndexEntry::decode(&raw[40 + 16 + 3 * 20..]).unwrap();
        assert_eq!((e3.key_hash, e3.phy_offset, e3.prev_index), (1, 300, 2));
        let again = IndexFile::open(f.path(), 4, 16).unwrap();
        assert_eq!(again.header(), h);
    }

    #[test]
    fn full_file_refuses_and_entry_zero_is_unused() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path(), 2, 3);
        assert!(f.put_key(1, 1, 1).unwrap());
        assert!(f.put_key(2, 2, 1).unwrap());
        assert!(f.is_write_full());
        assert!(!f.put_key(3, 3, 1).unwrap());
        assert_eq!(f.entry(0), Some(IndexEntry::default()));
    }

    #[test]
    fn repair_and_undo_restore_chains() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path(), 4, 32);
        for (i, h) in [1u32, 5, 1, 2, 5].iter().enumerate() {
            f.put_key(*h, 100 * (i as u64 + 1), 1000).unwrap();
            f.finish_record(100 * (i as u64 + 1), 1000);
        }
        // A crash after the slot of entry 6 was published but not the count.
        f.write_entry(
            6,
            &IndexEntry {
                key_hash: 1,
                phy_offset: 700,
                time_diff: 0,
                prev_index: 5,
            },
        );
        f.map.store_u32(f.slot_pos(1), 6, Ordering::Release);
        assert!(f.repair());
        assert_eq!(f.slot(1), 5);
        assert_eq!(f.entry(6), Some(IndexEntry::default()));
        let (removed, stopped) = f.undo_from(300);
        assert_eq!((removed, stopped), (3, true));
        assert_eq!(f.index_count(), 3);
        // Hashes 1 and 5 share slot 1, whose newest remaining entry is 2.
        assert_eq!((f.slot(1), f.slot(2)), (2, 0));
        assert_eq!(f.end_phy_offset(), 300);
        let mut out = vec![];
        f.select(1, 10, 0, i64::MAX, &mut out);
        assert_eq!(out, vec![100]);
    }

    #[test]
    fn corrupt_chains_do_not_loop() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path(), 1, 8);
        for i in 0..4 {
            f.put_key(0, i, 1).unwrap();
        }
        // Entry 2 points forward to 3: a cycle 3 -> 2 -> 3.
        let mut e = f.entry(2).unwrap();
        e.prev_index = 3;
        f.write_entry(2, &e);
        let mut out = vec![];
        f.select(0, 100, 0, i64::MAX, &mut out);
        assert!(out.len() <= 5);
    }

    #[test]
    fn names_sort_in_creation_order() {
        let a = next_file_name(1_700_000_000_000, None);
        assert_eq!(next_file_name(1_700_000_000_000, Some(&a)).len(), 17);
        assert!(next_file_name(1_700_000_000_000, Some(&a)).as_str() > a.as_str());
        assert!(next_file_name(1_600_000_000_000, Some(&a)).as_str() > a.as_str());
    }

    proptest! {
        #[test]
        fn codecs_roundtrip_and_never_panic(b in proptest::collection::vec(any::<u8>(), 0..48)) {
            if let Some(h) = IndexHeader::decode(&b) {
                prop_assert_eq!(&h.encode()[..], &b[..40]);
            }
            if let Some(e) = IndexEntry::decode(&b) {
                prop_assert_eq!(&e.encode()[..], &b[..20]);
            }
        }

        /// Random keys and times against a model of (hash, offset, time): a query
        /// returns exactly the model's matches, newest first, up to the limit.
        #[test]
        fn select_matches_model(
            puts in proptest::collection::vec((0u32..12, 0i64..60), 1..80),
            q in 0u32..12, lo in 0i64..60, span in 0i64..60, max in 1usize..20,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let f = file(dir.path(), 5, 128);
            let t0 = 1_000_000i64;
            let mut model = vec![];
            let mut time = t0;
            for (i, (h, dt)) in puts.iter().enumerate() {
                time += dt * 1000;
                f.put_key(*h, i as u64, time).unwrap();
                model.push((*h, i as u64, time));
            }
            let (begin, end) = (t0 + lo * 1000, t0 + (lo + span) * 1000);
            let mut out = vec![];
            f.select(q, max, begin, end, &mut out);
            // The chain walk stops at the first entry of the slot older than `begin`.
            let mut expect = vec![];
            for (h, off, t) in model.iter().rev() {
                if *h % 5 != q % 5 { continue; }
                if expect.len() >= max { break; }
                if *h == q && *t >= begin && *t <= end { expect.push(*off); }
                if *t < begin { break; }
            }
            prop_assert_eq!(out, expect);
        }
    }
}
