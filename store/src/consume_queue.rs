//! ConsumeQueue: per (topic, queue id), the position of every message of the queue in
//! the CommitLog, as fixed 20-byte units under `consumequeue/<topic>/<queueId>/`, so a
//! pull finds its messages without reading the CommitLog, and filters by tag on the
//! unit alone.
//!
//! Queue offset N is unit N: byte N × 20 of the concatenated files, each
//! `mappedFileSizeConsumeQueue` bytes (300 000 units) and named by its first byte
//! offset (20 digits), as RocketMQ names them. A queue whose first file starts
//! mid-stream (a slave that began replicating at a file boundary of its master) has
//! its first file pre-filled with blank units up to its first unit.
//!
//! Files are sparse, as RocketMQ's are, and the writer reserves disk space 64 KiB
//! ahead of itself, so a full disk is an error on the dispatch thread rather than a
//! `SIGBUS`. Only the dispatch thread (and recovery, before it starts) writes; readers
//! see units below the published write position, which is never rewritten except by
//! truncation, which waits for them.
//!
//! Appends are idempotent by queue offset: a unit that is already there is skipped,
//! which is what lets recovery re-dispatch a range without duplicating units.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tracing::{debug, error, info, warn};

use crate::error::{Result, StoreError};
use crate::mapped_file::{FileWriter, MappedFile};
use crate::mapped_file_queue::MappedFileQueue;

mod table;
mod unit;

pub use table::{ConsumeQueueTable, is_safe_dir_name};
pub use unit::{BLANK_UNIT_SIZE, CQ_STORE_UNIT_SIZE, CqSlot, CqUnit, decode, encode_blank};

/// Disk space reserved ahead of a consume-queue writer.
const RESERVE_CHUNK: usize = 64 * 1024;
/// How long the deletion of an expired consume-queue file waits for readers
/// (RocketMQ passes 60 s for consume queues).
const DESTROY_INTERVAL_FORCIBLY_MS: u64 = 60_000;
/// Largest gap of missing units dispatch fills with blanks instead of refusing.
const MAX_BLANK_GAP: u64 = 1_000_000;

/// Which end of a run of equal store times `offset_by_time` answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BoundaryType {
    /// The first offset stored at or after the time.
    #[default]
    Lower,
    /// The last offset stored at or before the time.
    Upper,
}

/// What an append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// The unit was written.
    Written,
    /// The same unit was already there (re-dispatch after a crash).
    Duplicate,
}

#[derive(Debug, Default)]
struct WriteState {
    writer: Option<FileWriter>,
    /// End of the reserved part of the writer's file.
    reserved_to: usize,
}

/// One consume queue.
#[derive(Debug)]
pub struct ConsumeQueue {
    topic: String,
    queue_id: i32,
    files: MappedFileQueue,
    /// Queue offset of the first valid unit.
    min_offset: AtomicU64,
    /// End (offset + size) of the record of the last unit.
    max_physic_offset: AtomicU64,
    write: Mutex<WriteState>,
    destroyed: AtomicBool,
}

impl ConsumeQueue {
    /// The directory of (topic, queue id) under the consume-queue root.
    #[must_use]
    pub fn dir_of(root: &Path, topic: &str, queue_id: i32) -> PathBuf {
        root.join(topic).join(queue_id.to_string())
    }

    /// A queue without files yet (its directory is created with the first file).
    #[must_use]
    pub fn new(root: &Path, topic: &str, queue_id: i32, file_size: usize) -> Self {
        Self::with_files(
            topic,
            queue_id,
            MappedFileQueue::empty(&Self::dir_of(root, topic, queue_id), file_size),
        )
    }

    fn with_files(topic: &str, queue_id: i32, files: MappedFileQueue) -> Self {
        ConsumeQueue {
            topic: topic.to_owned(),
            queue_id,
            files,
            min_offset: AtomicU64::new(0),
            max_physic_offset: AtomicU64::new(0),
            write: Mutex::new(WriteState::default()),
            destroyed: AtomicBool::new(false),
        }
    }

    /// Loads the files of (topic, queue id) and finds where its units end (the first
    /// unit not written): RocketMQ's `ConsumeQueue.load` + `recover`. A torn unit at
    /// the end is zero-filled. Truncation to the CommitLog and the min offset come
    /// later, once the CommitLog is recovered.
    ///
    /// # Errors
    /// Files of the wrong size, gaps between files, or I/O errors.
    pub fn load(root: &Path, topic: &str, queue_id: i32, file_size: usize) -> Result<Self> {
        let files = MappedFileQueue::load(&Self::dir_of(root, topic, queue_id), file_size, None)?;
        let cq = Self::with_files(topic, queue_id, files);
        cq.recover_end()?;
        Ok(cq)
    }

    fn recover_end(&self) -> Result<()> {
        let mut st = self.write.lock();
        loop {
            let Some(last) = self.files.last() else {
                return Ok(());
            };
            let end = last.with_raw(|b| {
                b.chunks_exact(CQ_STORE_UNIT_SIZE)
                    .position(|u| matches!(decode(u), Some(CqSlot::Empty) | None))
                    .map_or(last.size() - last.size() % CQ_STORE_UNIT_SIZE, |i| {
                        i * CQ_STORE_UNIT_SIZE
                    })
            });
            if end == 0 && self.files.len() > 1 {
                // A file created for a unit that never arrived: the end is in the one
                // before, which is full.
                debug!(file = %last.path().display(), "removing empty consume queue file");
                self.files.remove_from(last.from())?;
                continue;
            }
            last.set_positions(end);
            self.files.set_where(last.from() + end as u64);
            if end < last.size() {
                let mut w = last.writer().ok_or(StoreError::Corrupt {
                    file: last.path().to_owned(),
                    offset: end as u64,
                    reason: "consume queue file already has a writer during recovery",
                })?;
                let torn = last.with_raw(|b| {
                    b.get(end..end + CQ_STORE_UNIT_SIZE)
                        .is_some_and(|u| u.iter().any(|&x| x != 0))
                });
                if torn {
                    warn!(
                        topic = %self.topic,
                        queue_id = self.queue_id,
                        offset = (last.from() + end as u64) / CQ_STORE_UNIT_SIZE as u64,
                        "zero-filling a torn consume queue unit"
                    );
                    w.truncate_to(end, end + CQ_STORE_UNIT_SIZE, Duration::ZERO)?;
                }
                last.advise_random(true);
                st.writer = Some(w);
                st.reserved_to = end;
            }
            drop(st);
            self.refresh_max_physic_offset();
            return Ok(());
        }
    }

    /// Topic.
    #[must_use]
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// Queue id.
    #[must_use]
    pub fn queue_id(&self) -> i32 {
        self.queue_id
    }

    /// Units per file.
    #[must_use]
    pub fn units_per_file(&self) -> u64 {
        (self.files.file_size() / CQ_STORE_UNIT_SIZE) as u64
    }

    /// The first readable queue offset.
    #[must_use]
    pub fn min_offset(&self) -> u64 {
        self.min_offset.load(Ordering::Acquire)
    }

    /// The next queue offset to be written (0 if the queue has no units).
    #[must_use]
    pub fn max_offset(&self) -> u64 {
        self.files.max_offset() / CQ_STORE_UNIT_SIZE as u64
    }

    /// End of the record of the last unit (0 if none).
    #[must_use]
    pub fn max_physic_offset(&self) -> u64 {
        self.max_physic_offset.load(Ordering::Acquire)
    }

    /// Whether the queue was destroyed (topic deleted); appends then fail.
    #[must_use]
    pub fn is_destroyed(&self) -> bool {
        self.destroyed.load(Ordering::Acquire)
    }

    /// The files (diagnostics, tests).
    #[must_use]
    pub fn files(&self) -> Vec<MappedFile> {
        self.files.files()
    }

    /// The slot at queue offset `q`, if readable.
    #[must_use]
    pub fn slot_at(&self, q: u64) -> Option<CqSlot> {
        let pos = q.checked_mul(CQ_STORE_UNIT_SIZE as u64)?;
        let f = self.files.find(pos)?;
        f.read_with((pos - f.from()) as usize, CQ_STORE_UNIT_SIZE, decode)
            .flatten()
    }

    /// The unit at queue offset `q`, if it is a readable message unit.
    #[must_use]
    pub fn unit_at(&self, q: u64) -> Option<CqUnit> {
        match self.slot_at(q)? {
            CqSlot::Unit(u) => Some(u),
            _ => None,
        }
    }

    /// The last unit, if any.
    #[must_use]
    pub fn last_unit(&self) -> Option<CqUnit> {
        self.max_offset()
            .checked_sub(1)
            .and_then(|q| self.unit_at(q))
    }

    /// Runs `f` over the readable units from queue offset `q` to the end of its file
    /// (RocketMQ `getIndexBuffer`); `None` if `q` is below the min offset or no file
    /// holds it.
    pub fn read_from<R>(&self, q: u64, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if q < self.min_offset() {
            return None;
        }
        let pos = q.checked_mul(CQ_STORE_UNIT_SIZE as u64)?;
        let file = self.files.find(pos)?;
        let rel = (pos - file.from()) as usize;
        let end = file.read_position();
        if rel >= end {
            return None;
        }
        file.read_with(rel, end - rel, f)
    }

    /// The first queue offset of the file after the one holding `q`.
    #[must_use]
    pub fn roll_next_file(&self, q: u64) -> u64 {
        let n = self.units_per_file();
        q + n - q % n
    }

    fn refresh_max_physic_offset(&self) {
        let v = self.last_unit().map_or(0, |u| u.end());
        self.max_physic_offset.store(v, Ordering::Release);
    }

    /// Appends `unit` at queue offset `q` (the record's QUEUEOFFSET). A unit already
    /// present at `q` is left alone (`Duplicate`); a different one there means the
    /// queue disagrees with the CommitLog, so it is cut back to `q` first. A queue
    /// without units starts at `q` (blank units fill its first file up to it); a gap
    /// after the end is filled with blank units and logged.
    ///
    /// # Errors
    /// The queue was destroyed, a file cannot be created or reserved (disk full), or a
    /// truncation waits for readers in vain.
    pub fn put(&self, unit: CqUnit, q: u64, store_timestamp: i64) -> Result<Appended> {
        let mut st = self.write.lock();
        if self.is_destroyed() {
            return Err(StoreError::Closed);
        }
        let end = self.max_offset();
        if q < end {
            if self.unit_at(q) == Some(unit) || q < self.min_offset() {
                return Ok(Appended::Duplicate);
            }
            warn!(
                topic = %self.topic,
                queue_id = self.queue_id,
                offset = q,
                end,
                "consume queue unit differs from the commit log; cutting the queue back"
            );
            self.truncate_locked(&mut st, q)?;
        }
        let end = self.max_offset();
        let unit_bytes = CQ_STORE_UNIT_SIZE as u64;
        let Some(pos) = q.checked_mul(unit_bytes) else {
            return Err(StoreError::Corrupt {
                file: self.files.dir().to_owned(),
                offset: q,
                reason: "queue offset too large for a consume queue",
            });
        };
        if self.files.is_empty() {
            // First unit of this queue, maybe mid-stream: start the file that holds
            // it and fill the units before it with blanks (RocketMQ `fillPreBlank`).
            let from = pos - pos % self.files.file_size() as u64;
            if from != pos {
                info!(
                    topic = %self.topic,
                    queue_id = self.queue_id,
                    first_offset = q,
                    "consume queue starts mid-file; filling blank units before it"
                );
            }
            self.min_offset.store(q, Ordering::Release);
            for _ in from / unit_bytes..q {
                self.append_locked(&mut st, &encode_blank(), store_timestamp, from)?;
            }
        } else if q > end {
            let gap = q - end;
            if gap > MAX_BLANK_GAP {
                error!(topic = %self.topic, queue_id = self.queue_id, offset = q, end, "consume queue gap too large; unit dropped");
                return Err(StoreError::Corrupt {
                    file: self.files.dir().to_owned(),
                    offset: q,
                    reason: "queue offset far past the end of the consume queue",
                });
            }
            error!(topic = %self.topic, queue_id = self.queue_id, offset = q, end, "gap in consume queue; filling blank units");
            for _ in 0..gap {
                self.append_locked(&mut st, &encode_blank(), store_timestamp, 0)?;
            }
        }
        self.append_locked(&mut st, &unit.encode(), store_timestamp, 0)?;
        self.max_physic_offset.store(unit.end(), Ordering::Release);
        Ok(Appended::Written)
    }

    /// Appends 20 bytes at the end; `first_from` names the first file of an empty
    /// queue.
    fn append_locked(
        &self,
        st: &mut WriteState,
        bytes: &[u8; CQ_STORE_UNIT_SIZE],
        store_timestamp: i64,
        first_from: u64,
    ) -> Result<()> {
        if st
            .writer
            .as_ref()
            .is_none_or(|w| w.remaining() < CQ_STORE_UNIT_SIZE)
        {
            if let Some(full) = st.writer.take() {
                full.file().advise_random(false);
            }
            let from = match self.files.last() {
                Some(l) => l.from() + l.size() as u64,
                None => first_from,
            };
            let dir = self.files.dir();
            fs::create_dir_all(dir).map_err(|e| StoreError::io("mkdir", dir, e))?;
            let file = MappedFile::create_sparse(dir, from, self.files.file_size())?;
            file.advise_random(true);
            self.files.push(file.clone());
            st.writer = Some(file.writer().ok_or(StoreError::Corrupt {
                file: file.path().to_owned(),
                offset: from,
                reason: "new consume queue file already has a writer",
            })?);
            st.reserved_to = 0;
        }
        let Some(w) = st.writer.as_mut() else {
            return Err(StoreError::Closed);
        };
        if w.position() + CQ_STORE_UNIT_SIZE > st.reserved_to {
            let at = w.position() - w.position() % CQ_STORE_UNIT_SIZE;
            w.file().reserve(at, RESERVE_CHUNK)?;
            st.reserved_to = at + RESERVE_CHUNK;
        }
        w.append(bytes, store_timestamp);
        Ok(())
    }

    /// Drops every unit at or after queue offset `q`.
    ///
    /// # Errors
    /// Readers hold the bytes for more than a second, or I/O fails.
    pub fn truncate_from(&self, q: u64) -> Result<()> {
        let mut st = self.write.lock();
        if q >= self.max_offset() {
            return Ok(());
        }
        self.truncate_locked(&mut st, q)
    }

    fn truncate_locked(&self, st: &mut WriteState, q: u64) -> Result<()> {
        st.writer = None;
        st.reserved_to = 0;
        let size = self.files.file_size() as u64;
        let pos = q * CQ_STORE_UNIT_SIZE as u64;
        let from = pos - pos % size;
        if pos % size == 0 {
            self.files.remove_from(from)?;
        } else {
            self.files.remove_from(from + size)?;
            if let Some(f) = self.files.find(from) {
                let rel = (pos - from) as usize;
                let mut w = f.writer().ok_or(StoreError::Corrupt {
                    file: f.path().to_owned(),
                    offset: pos,
                    reason: "consume queue file writer busy",
                })?;
                w.truncate_to(rel, f.wrote_position(), Duration::from_secs(1))?;
                f.advise_random(true);
                st.reserved_to = rel;
                st.writer = Some(w);
            }
        }
        self.files.set_where(self.files.flushed_where().min(pos));
        if q < self.min_offset() || self.files.is_empty() {
            self.min_offset.store(q, Ordering::Release);
        }
        self.refresh_max_physic_offset();
        debug!(topic = %self.topic, queue_id = self.queue_id, offset = q, "truncated consume queue");
        Ok(())
    }

    /// Drops units whose records do not end inside the CommitLog's `[.., cl_end)`
    /// (RocketMQ `truncateDirtyLogicFiles`). Returns how many were dropped.
    ///
    /// # Errors
    /// As [`truncate_from`](Self::truncate_from).
    pub fn truncate_to_commit_log(&self, cl_end: u64) -> Result<u64> {
        let max = self.max_offset();
        let min = self.min_offset();
        if self.max_physic_offset() <= cl_end {
            return Ok(0);
        }
        // Units are ordered by CommitLog offset: binary search the first one past the end.
        let (mut lo, mut hi) = (min, max);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.slot_at(mid) {
                Some(CqSlot::Unit(u)) if u.end() > cl_end => hi = mid,
                _ => lo = mid + 1,
            }
        }
        self.truncate_from(lo)?;
        Ok(max - lo)
    }

    /// Drops the last unit while `valid(unit, queue offset)` says it does not match the
    /// CommitLog (a torn unit, or one written for bytes a crash lost). Returns how many
    /// were dropped.
    ///
    /// # Errors
    /// As [`truncate_from`](Self::truncate_from).
    pub fn drop_invalid_tail(&self, mut valid: impl FnMut(&CqUnit, u64) -> bool) -> Result<u64> {
        let mut dropped = 0;
        loop {
            let max = self.max_offset();
            if max <= self.min_offset() {
                return Ok(dropped);
            }
            let q = max - 1;
            match self.slot_at(q) {
                Some(CqSlot::Unit(u)) if valid(&u, q) => return Ok(dropped),
                Some(CqSlot::Blank) => return Ok(dropped),
                _ => {
                    warn!(topic = %self.topic, queue_id = self.queue_id, offset = q, "dropping a consume queue unit that does not match the commit log");
                    self.truncate_from(q)?;
                    dropped += 1;
                }
            }
        }
    }

    /// Sets the min offset to the first unit whose record is at or after `cl_min`
    /// (RocketMQ `correctMinOffset`, which looks at the first file only; here a first
    /// file with no such unit puts the min at its end).
    pub fn correct_min_offset(&self, cl_min: u64) {
        let Some(first) = self.files.first() else {
            return;
        };
        let base = first.from() / CQ_STORE_UNIT_SIZE as u64;
        let n = (first.read_position() / CQ_STORE_UNIT_SIZE) as u64;
        let (mut lo, mut hi) = (0u64, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.slot_at(base + mid) {
                Some(CqSlot::Unit(u)) if u.commit_log_offset >= cl_min => hi = mid,
                _ => lo = mid + 1,
            }
        }
        let min = base + lo;
        if self.min_offset.swap(min, Ordering::AcqRel) != min {
            debug!(topic = %self.topic, queue_id = self.queue_id, min_offset = min, "consume queue min offset");
        }
    }

    /// The queue offset for a store time (RocketMQ `getOffsetInQueueByTime`), by binary
    /// search over the whole queue; `store_time(unit)` reads the record's store
    /// timestamp (`None` if the CommitLog no longer holds it: such units count as
    /// earlier than any time). Lower: the first offset stored at or after `timestamp`
    /// (the max offset if none). Upper: the last offset stored at or before it (the
    /// min offset if none). 0 for a queue without units.
    pub fn offset_by_time(
        &self,
        timestamp: i64,
        boundary: BoundaryType,
        mut store_time: impl FnMut(&CqUnit) -> Option<i64>,
    ) -> u64 {
        let (min, max) = (self.min_offset(), self.max_offset());
        if min >= max {
            return max;
        }
        let mut first_where = |pred: &mut dyn FnMut(i64) -> bool| {
            let (mut lo, mut hi) = (min, max);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let t = self.unit_at(mid).and_then(|u| store_time(&u));
                if t.is_some_and(&mut *pred) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            lo
        };
        match boundary {
            BoundaryType::Lower => first_where(&mut |t| t >= timestamp),
            BoundaryType::Upper => first_where(&mut |t| t > timestamp)
                .saturating_sub(1)
                .max(min),
        }
    }

    /// Syncs dirty units (at least `least_pages` pages of them, 0 = any).
    ///
    /// # Errors
    /// The sync failed.
    pub fn flush(&self, least_pages: usize) -> Result<()> {
        self.files.flush(least_pages).map(|_| ())
    }

    /// Bytes written but not yet synced.
    #[must_use]
    pub fn unflushed_bytes(&self) -> u64 {
        self.files
            .max_offset()
            .saturating_sub(self.files.flushed_where().max(self.files.min_offset()))
    }

    /// Deletes files (never the last one) whose last record lies before `cl_min`
    /// (RocketMQ `deleteExpiredFile`), then corrects the min offset. Returns how many
    /// files went.
    ///
    /// # Errors
    /// An unlink failed.
    pub fn delete_expired_files(&self, cl_min: u64, now_ms: i64) -> Result<usize> {
        let mut deleted = 0;
        while self.files.len() > 1 {
            let Some(first) = self.files.first() else {
                break;
            };
            let last_unit = first
                .read_with(
                    first.size() - CQ_STORE_UNIT_SIZE,
                    CQ_STORE_UNIT_SIZE,
                    decode,
                )
                .flatten();
            let expired = match last_unit {
                Some(CqSlot::Unit(u)) => u.commit_log_offset < cl_min,
                // Already being deleted (a hanged file) or not a unit: go on deleting.
                _ => !first.is_available(),
            };
            if !expired || !first.destroy_when_unused(now_ms, DESTROY_INTERVAL_FORCIBLY_MS)? {
                break;
            }
            self.files.drop_first(first.from());
            deleted += 1;
        }
        if deleted > 0 {
            info!(topic = %self.topic, queue_id = self.queue_id, deleted, "deleted expired consume queue files");
        }
        self.correct_min_offset(cl_min);
        Ok(deleted)
    }

    /// Deletes the queue's files and directory; later appends fail.
    ///
    /// # Errors
    /// An unlink failed.
    pub fn destroy(&self) -> Result<()> {
        let mut st = self.write.lock();
        self.destroyed.store(true, Ordering::Release);
        st.writer = None;
        self.files.remove_from(0)?;
        let dir = self.files.dir();
        match fs::remove_dir_all(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io("rmdir", dir, e)),
        }
        if let Some(topic_dir) = dir.parent() {
            // Only succeeds once the topic has no queue left.
            let _ = fs::remove_dir(topic_dir);
        }
        info!(topic = %self.topic, queue_id = self.queue_id, "consume queue destroyed");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FILE: usize = 20 * 8;

    fn unit(phy: u64) -> CqUnit {
        CqUnit {
            commit_log_offset: phy,
            size: 100,
            tags_code: phy as i64 * 3 - 7,
        }
    }

    #[test]
    fn append_roll_read_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(dir.path(), "T", 3, FILE);
        assert_eq!((cq.min_offset(), cq.max_offset()), (0, 0));
        for q in 0..20u64 {
            assert_eq!(cq.put(unit(q * 100), q, 1).unwrap(), Appended::Written);
        }
        assert_eq!(cq.put(unit(500), 5, 1).unwrap(), Appended::Duplicate);
        assert_eq!(cq.max_offset(), 20);
        assert_eq!(cq.max_physic_offset(), 19 * 100 + 100);
        assert_eq!(cq.files().len(), 3);
        assert_eq!(cq.unit_at(9), Some(unit(900)));
        assert_eq!(
            cq.read_from(6, |b| b.len()),
            Some(2 * 20),
            "to the end of its file"
        );
        assert_eq!(cq.roll_next_file(9), 16);
        let names: Vec<String> = cq
            .files()
            .iter()
            .map(|f| f.path().file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            vec![
                "00000000000000000000",
                "00000000000000000160",
                "00000000000000000320"
            ]
        );
        drop(cq);
        let cq = ConsumeQueue::load(dir.path(), "T", 3, FILE).unwrap();
        assert_eq!(cq.max_offset(), 20);
        assert_eq!(cq.max_physic_offset(), 2000);
        cq.put(unit(2000), 20, 1).unwrap();
        assert_eq!(cq.unit_at(20), Some(unit(2000)));
    }

    #[test]
    fn mid_stream_start_fills_blanks_and_sets_min() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(dir.path(), "T", 0, FILE);
        cq.put(unit(1_000_000), 11, 1).unwrap();
        assert_eq!((cq.min_offset(), cq.max_offset()), (11, 12));
        assert_eq!(cq.slot_at(8), Some(CqSlot::Blank));
        assert_eq!(cq.slot_at(10), Some(CqSlot::Blank));
        assert_eq!(cq.files()[0].from(), 160);
        assert!(cq.read_from(10, |_| ()).is_none(), "below min");
        cq.correct_min_offset(0);
        assert_eq!(cq.min_offset(), 11, "blanks never count as units");
        drop(cq);
        let cq = ConsumeQueue::load(dir.path(), "T", 0, FILE).unwrap();
        cq.correct_min_offset(0);
        assert_eq!((cq.min_offset(), cq.max_offset()), (11, 12));
    }

    #[test]
    fn mismatch_cuts_back_and_gap_fills_blanks() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(dir.path(), "T", 0, FILE);
        for q in 0..10 {
            cq.put(unit(q * 100), q, 1).unwrap();
        }
        cq.put(unit(777), 4, 1).unwrap();
        assert_eq!(cq.max_offset(), 5);
        assert_eq!(cq.unit_at(4), Some(unit(777)));
        cq.put(unit(9000), 7, 1).unwrap();
        assert_eq!(cq.slot_at(5), Some(CqSlot::Blank));
        assert_eq!(cq.max_offset(), 8);
    }

    #[test]
    fn recovery_zeroes_torn_unit_and_truncates_to_commit_log() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(dir.path(), "T", 1, FILE);
        for q in 0..12 {
            cq.put(unit(q * 100), q, 1).unwrap();
        }
        let path = cq.files()[1].path().to_owned();
        drop(cq);
        // A torn unit: offset written, size not yet.
        let mut raw = std::fs::read(&path).unwrap();
        raw[4 * 20..4 * 20 + 8].copy_from_slice(&1200u64.to_be_bytes());
        std::fs::write(&path, &raw).unwrap();
        let cq = ConsumeQueue::load(dir.path(), "T", 1, FILE).unwrap();
        assert_eq!(cq.max_offset(), 12);
        assert!(
            std::fs::read(&path).unwrap()[80..100]
                .iter()
                .all(|&b| b == 0)
        );
        assert_eq!(cq.truncate_to_commit_log(750).unwrap(), 5);
        assert_eq!(cq.max_offset(), 7);
        assert_eq!(cq.max_physic_offset(), 700);
        assert_eq!(
            cq.drop_invalid_tail(|u, q| u.commit_log_offset == q * 100 && q < 5)
                .unwrap(),
            2
        );
        assert_eq!(cq.max_offset(), 5);
        cq.truncate_from(0).unwrap();
        assert_eq!((cq.min_offset(), cq.max_offset()), (0, 0));
        cq.put(unit(5), 0, 1).unwrap();
        assert_eq!(cq.max_offset(), 1);
    }

    #[test]
    fn offset_by_time_lower_and_upper() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(dir.path(), "T", 0, FILE);
        // Store times 10, 20, 20, 20, 30, ... by queue offset.
        let times = [10i64, 20, 20, 20, 30, 40, 40, 50, 60, 70, 80];
        for (q, _) in times.iter().enumerate() {
            cq.put(unit(q as u64 * 100), q as u64, 1).unwrap();
        }
        let ts = |u: &CqUnit| Some(times[(u.commit_log_offset / 100) as usize]);
        assert_eq!(cq.offset_by_time(20, BoundaryType::Lower, ts), 1);
        assert_eq!(cq.offset_by_time(20, BoundaryType::Upper, ts), 3);
        assert_eq!(cq.offset_by_time(25, BoundaryType::Lower, ts), 4);
        assert_eq!(cq.offset_by_time(25, BoundaryType::Upper, ts), 3);
        assert_eq!(cq.offset_by_time(5, BoundaryType::Lower, ts), 0);
        assert_eq!(cq.offset_by_time(5, BoundaryType::Upper, ts), 0);
        assert_eq!(cq.offset_by_time(99, BoundaryType::Lower, ts), 11);
        assert_eq!(cq.offset_by_time(99, BoundaryType::Upper, ts), 10);
        // Units whose records are gone count as earlier than anything.
        let gone = |u: &CqUnit| (u.commit_log_offset >= 300).then(|| ts(u)).flatten();
        assert_eq!(cq.offset_by_time(5, BoundaryType::Lower, gone), 3);
    }

    #[test]
    fn expired_files_go_but_not_the_last() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(dir.path(), "T", 0, FILE);
        for q in 0..20 {
            cq.put(unit(q * 100), q, 1).unwrap();
        }
        let held = cq.files()[1].slice(0, 20).unwrap();
        assert_eq!(
            cq.delete_expired_files(1600, 0).unwrap(),
            1,
            "second file is held"
        );
        assert_eq!(cq.min_offset(), 16, "the held file is being deleted");
        assert_eq!(cq.files().len(), 2);
        drop(held);
        assert_eq!(
            cq.delete_expired_files(100_000, 1).unwrap(),
            1,
            "never the last"
        );
        assert_eq!(cq.files().len(), 1);
        assert_eq!(
            cq.min_offset(),
            20,
            "nothing of the last file is readable any more"
        );
        cq.destroy().unwrap();
        assert!(!ConsumeQueue::dir_of(dir.path(), "T", 0).exists());
        assert!(cq.put(unit(1), 20, 1).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

        /// Random appends (in order, duplicates, cuts) against a Vec model; reloading
        /// gives the same queue.
        #[test]
        fn queue_matches_model(ops in proptest::collection::vec((0u8..10, 0u64..30), 1..60)) {
            let dir = tempfile::tempdir().unwrap();
            let cq = ConsumeQueue::new(dir.path(), "M", 0, FILE);
            let mut model: Vec<CqUnit> = Vec::new();
            for (kind, n) in ops {
                match kind {
                    0..=6 => {
                        let u = unit(model.len() as u64 * 100);
                        cq.put(u, model.len() as u64, 1).unwrap();
                        model.push(u);
                    }
                    7 if !model.is_empty() => {
                        let q = n % model.len() as u64;
                        prop_assert_eq!(cq.put(model[q as usize], q, 1).unwrap(), Appended::Duplicate);
                    }
                    8 => {
                        let q = n.min(model.len() as u64);
                        cq.truncate_from(q).unwrap();
                        model.truncate(q as usize);
                    }
                    _ => {
                        cq.flush(0).unwrap();
                    }
                }
                prop_assert_eq!(cq.max_offset(), model.len() as u64);
            }
            drop(cq);
            let cq = ConsumeQueue::load(dir.path(), "M", 0, FILE).unwrap();
            prop_assert_eq!(cq.max_offset(), model.len() as u64);
            for (q, u) in model.iter().enumerate() {
                prop_assert_eq!(cq.unit_at(q as u64), Some(*u));
            }
        }
    }
}
