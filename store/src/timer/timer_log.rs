//! `timerlog/`: the append-only log of timer requests (RocketMQ `TimerLog`), fixed-size
//! files named by their first byte offset like the CommitLog's. Each request is one
//! [`TimerLogUnit`]; a unit that does not fit (with room for a blank) starts the next
//! file, and the rest of the full one is a blank record.
//!
//! One writer (the timer's enqueue, under the timer's lock); readers see published
//! units only. Recovery scans from a checkpointed position, hands every unit it finds
//! to the caller (who revises the wheel with it) and cuts the log at the first torn or
//! foreign unit.

use std::fs;
use std::path::Path;
use std::time::Duration;

use parking_lot::Mutex;
use tracing::{info, warn};

use crate::error::{Result, StoreError};
use crate::mapped_file::{FileWriter, MappedFile};
use crate::mapped_file_queue::MappedFileQueue;
use crate::timer::log_unit::{
    self, Entry, MIN_BLANK_LEN, TimerLogUnit, UNIT_SIZE, encode_blank, offset_for_last_unit,
};

/// Disk space is reserved this far ahead of the writer (no `SIGBUS` on a full disk).
const RESERVE_CHUNK: usize = 64 * 1024;
/// Bytes zeroed past a recovered end, so stale units there never read as live.
const ZERO_AFTER_END: usize = 64 * 1024;

/// The timer log.
#[derive(Debug)]
pub struct TimerLog {
    files: MappedFileQueue,
    write: Mutex<Writer>,
    /// Synced units below this were released from the mapping ([`TimerLog::flush`]).
    released_to: std::sync::atomic::AtomicU64,
}

#[derive(Debug, Default)]
struct Writer {
    writer: Option<FileWriter>,
    reserved_to: usize,
}

/// Whether a magic is one of a unit's (RocketMQ `isMagicOK`: only the low four bits).
#[must_use]
pub fn is_magic_ok(magic: i32) -> bool {
    (magic | 0xF) == 0xF
}

impl TimerLog {
    /// Loads the files of `dir` (created if absent). Call [`recover`](Self::recover)
    /// before appending.
    ///
    /// # Errors
    /// Files of the wrong size or not consecutive, or I/O errors.
    pub fn load(dir: &Path, file_size: usize) -> Result<Self> {
        Ok(TimerLog {
            files: MappedFileQueue::load(dir, file_size, None)?,
            write: Mutex::new(Writer::default()),
            released_to: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The size of each file.
    #[must_use]
    pub fn file_size(&self) -> usize {
        self.files.file_size()
    }

    /// Scans from the file holding `from` to the end of the units, calling `on_unit`
    /// with each unit and its position, then cuts the log there: files after it are
    /// deleted and the bytes after it zeroed. Returns the end.
    ///
    /// # Errors
    /// I/O errors while cutting.
    pub fn recover(&self, from: u64, mut on_unit: impl FnMut(u64, &TimerLogUnit)) -> Result<u64> {
        let mut st = self.write.lock();
        st.writer = None;
        let files = self.files.files();
        let Some(first) = files
            .iter()
            .rposition(|f| f.from() <= from)
            .or((!files.is_empty()).then_some(0))
        else {
            return Ok(0);
        };
        let mut end = files[first].from();
        for file in &files[first..] {
            let (stop, at) = file.with_raw(|bytes| scan(bytes, file.from(), &mut on_unit));
            end = file.from() + at as u64;
            if stop {
                break;
            }
        }
        self.cut(&mut st, end)?;
        info!(end, "timer log recovered");
        Ok(end)
    }

    fn cut(&self, st: &mut Writer, end: u64) -> Result<()> {
        let size = self.files.file_size() as u64;
        let file_from = end - end % size;
        let doomed = self.files.remove_from(file_from + size)?;
        for f in &doomed {
            warn!(file = %f.path().display(), "timer log file past the recovered end removed");
        }
        self.files.set_where(end);
        let Some(last) = self.files.last() else {
            return Ok(());
        };
        let rel = usize::try_from(end.saturating_sub(last.from())).unwrap_or(usize::MAX);
        if rel >= last.size() {
            return Ok(());
        }
        let mut w = last.writer().ok_or(StoreError::Corrupt {
            file: last.path().to_owned(),
            offset: end,
            reason: "timer log file already has a writer during recovery",
        })?;
        w.truncate_to(rel, rel + ZERO_AFTER_END, Duration::from_secs(1))?;
        st.reserved_to = rel;
        st.writer = Some(w);
        Ok(())
    }

    /// Appends `unit`; returns its position.
    ///
    /// # Errors
    /// A new file cannot be created, or the disk is full.
    pub fn append(&self, unit: &TimerLogUnit) -> Result<u64> {
        let mut st = self.write.lock();
        let size = self.files.file_size();
        if st
            .writer
            .as_ref()
            .is_some_and(|w| w.remaining() < UNIT_SIZE + MIN_BLANK_LEN)
        {
            if let Some(mut w) = st.writer.take() {
                let left = w.remaining();
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_possible_wrap,
                    reason = "below the file size"
                )]
                let blank = encode_blank(left as i32);
                w.reserve(left)[..MIN_BLANK_LEN].copy_from_slice(&blank);
                w.publish(left, unit.write_time_ms);
            }
        }
        if st.writer.is_none() {
            let from = match self.files.last() {
                Some(l) => l.from() + l.size() as u64,
                None => self.files.flushed_where() - self.files.flushed_where() % size as u64,
            };
            let dir = self.files.dir();
            fs::create_dir_all(dir).map_err(|e| StoreError::io("mkdir", dir, e))?;
            let file = MappedFile::create_sparse(dir, from, size)?;
            self.files.push(file.clone());
            st.writer = Some(file.writer().ok_or(StoreError::Corrupt {
                file: file.path().to_owned(),
                offset: from,
                reason: "new timer log file already has a writer",
            })?);
            st.reserved_to = 0;
        }
        let reserved_to = st.reserved_to;
        let Some(w) = st.writer.as_mut() else {
            return Err(StoreError::Closed);
        };
        let mut new_reserved = reserved_to;
        if w.position() + UNIT_SIZE > reserved_to {
            w.file().reserve(w.position(), RESERVE_CHUNK)?;
            new_reserved = w.position() + RESERVE_CHUNK;
        }
        let pos = w.file().from() + w.position() as u64;
        w.append(&unit.encode(), unit.write_time_ms);
        st.reserved_to = new_reserved;
        Ok(pos)
    }

    /// The unit at `pos`, if it is one and published.
    #[must_use]
    pub fn unit_at(&self, pos: u64) -> Option<TimerLogUnit> {
        let file = self.files.find(pos)?;
        let rel = usize::try_from(pos - file.from()).ok()?;
        match file.read_with(rel, UNIT_SIZE, log_unit::decode)? {
            Ok(Entry::Unit(u)) => Some(u),
            _ => None,
        }
    }

    /// End of the published units.
    #[must_use]
    pub fn end(&self) -> u64 {
        self.files.max_offset().max(self.files.flushed_where())
    }

    /// First position held.
    #[must_use]
    pub fn min_offset(&self) -> u64 {
        self.files.min_offset()
    }

    /// Syncs what was appended, then releases the synced pages from the mapping: units
    /// are read back only when their slot comes, so a million pending timers do not
    /// stay resident in the broker (they stay in the page cache). Returns the flushed
    /// end.
    ///
    /// # Errors
    /// The sync failed.
    pub fn flush(&self) -> Result<u64> {
        let flushed = self.files.flush(0)?;
        let from = self
            .released_to
            .swap(flushed, std::sync::atomic::Ordering::AcqRel)
            .min(flushed);
        for file in self.files.files() {
            let (lo, hi) = (file.from(), file.from() + file.size() as u64);
            if hi <= from || lo >= flushed {
                continue;
            }
            let start = usize::try_from(from.saturating_sub(lo)).unwrap_or(0);
            let end = usize::try_from(flushed.min(hi) - lo).unwrap_or(0);
            file.release(start, end - start);
        }
        Ok(flushed)
    }

    /// Deletes the oldest files whose last unit points below `commit_log_min` (their
    /// messages are gone), never the newest file (RocketMQ
    /// `deleteExpiredFileByOffsetForTimerLog`). Returns how many went.
    ///
    /// # Errors
    /// An unlink failed.
    pub fn delete_expired(&self, commit_log_min: u64) -> Result<usize> {
        let Some(check_at) = offset_for_last_unit(self.files.file_size()) else {
            return Ok(0);
        };
        let files = self.files.files();
        let mut deleted = 0;
        for file in files.iter().take(files.len().saturating_sub(1)) {
            let last = file
                .read_with(check_at, UNIT_SIZE, log_unit::decode)
                .and_then(|e| match e {
                    Ok(Entry::Unit(u)) => Some(u),
                    _ => None,
                })
                .or_else(|| last_unit_of(file));
            let Some(last) = last else { break };
            if u64::try_from(last.commit_log_offset).unwrap_or(0) >= commit_log_min {
                break;
            }
            file.destroy()?;
            self.files.drop_first(file.from());
            deleted += 1;
            info!(file = %file.path().display(), "expired timer log file deleted");
        }
        Ok(deleted)
    }
}

/// Scans one file's bytes: calls `on_unit` per unit; returns whether the log ends in
/// this file (a torn or foreign unit) and where the scan stopped.
fn scan(bytes: &[u8], from: u64, on_unit: &mut impl FnMut(u64, &TimerLogUnit)) -> (bool, usize) {
    let mut at = 0;
    while at + MIN_BLANK_LEN <= bytes.len() {
        match log_unit::decode(&bytes[at..]) {
            Ok(Entry::Blank(_)) => return (false, bytes.len()),
            Ok(Entry::Unit(u)) if is_magic_ok(u.magic) => {
                on_unit(from + at as u64, &u);
                at += UNIT_SIZE;
            }
            _ => return (true, at),
        }
    }
    (true, at)
}

/// The last unit of a full file, by scanning it.
fn last_unit_of(file: &MappedFile) -> Option<TimerLogUnit> {
    let bytes = file.slice_from(0)?;
    let mut last = None;
    let _ = scan(&bytes, file.from(), &mut |_, u| last = Some(*u));
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timer::log_unit::MAGIC_DEFAULT;

    fn unit(i: i64) -> TimerLogUnit {
        TimerLogUnit {
            prev_pos: -1,
            magic: MAGIC_DEFAULT,
            write_time_ms: 1_000,
            delayed_ms: 5,
            commit_log_offset: i * 100,
            size: 100,
            topic_hash: 7,
            reserved: 0,
        }
    }

    #[test]
    fn units_append_roll_to_new_files_and_recover() {
        let dir = tempfile::tempdir().unwrap();
        // Room for 3 units and a blank.
        let size = 3 * UNIT_SIZE + MIN_BLANK_LEN + 10;
        let log = TimerLog::load(dir.path(), size).unwrap();
        assert_eq!(log.recover(0, |_, _| {}).unwrap(), 0);
        let mut positions = Vec::new();
        for i in 0..7 {
            positions.push(log.append(&unit(i)).unwrap());
        }
        assert_eq!(positions[..4], [0, 52, 104, size as u64]);
        assert_eq!(log.unit_at(positions[5]).unwrap().commit_log_offset, 500);
        assert!(log.unit_at(positions[6] + 52).is_none());
        log.flush().unwrap();
        drop(log);

        let log = TimerLog::load(dir.path(), size).unwrap();
        let mut seen = Vec::new();
        let end = log
            .recover(0, |pos, u| seen.push((pos, u.commit_log_offset)))
            .unwrap();
        assert_eq!(seen.len(), 7);
        assert_eq!(end, positions[6] + 52);
        // Appends continue at the end.
        assert_eq!(log.append(&unit(7)).unwrap(), end);
    }

    #[test]
    fn a_torn_unit_ends_the_log_and_is_zeroed() {
        let dir = tempfile::tempdir().unwrap();
        let size = 4096;
        let log = TimerLog::load(dir.path(), size).unwrap();
        log.recover(0, |_, _| {}).unwrap();
        for i in 0..3 {
            log.append(&unit(i)).unwrap();
        }
        log.flush().unwrap();
        drop(log);
        // Garble the third unit's size.
        let path = dir.path().join(crate::mapped_file::file_name(0));
        let mut bytes = fs::read(&path).unwrap();
        bytes[104..108].copy_from_slice(&7i32.to_be_bytes());
        fs::write(&path, &bytes).unwrap();
        let log = TimerLog::load(dir.path(), size).unwrap();
        let mut n = 0;
        assert_eq!(log.recover(0, |_, _| n += 1).unwrap(), 104);
        assert_eq!(n, 2);
        assert_eq!(log.append(&unit(9)).unwrap(), 104);
    }

    /// Synced units leave the broker's resident memory and read back unchanged.
    #[test]
    fn flushed_units_are_released_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let log = TimerLog::load(dir.path(), 1 << 20).unwrap();
        log.recover(0, |_, _| {}).unwrap();
        for i in 0..10_000 {
            log.append(&unit(i)).unwrap();
        }
        let resident = |log: &TimerLog| log.files.files()[0].resident_bytes().unwrap() / 4096;
        let before = resident(&log);
        let end = log.flush().unwrap();
        assert_eq!(end, 10_000 * 52);
        let after = resident(&log);
        assert!(
            before >= 120 && after <= 2,
            "resident pages {before} -> {after}"
        );
        for i in [0, 4_999, 9_999] {
            assert_eq!(
                log.unit_at(i * 52).unwrap().commit_log_offset,
                i64::try_from(i).unwrap() * 100
            );
        }
        // New units after a release append and flush as before.
        assert_eq!(log.append(&unit(10_000)).unwrap(), end);
        assert_eq!(log.flush().unwrap(), end + 52);
    }

    #[test]
    fn expired_files_go_oldest_first_but_never_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let size = 2 * UNIT_SIZE + MIN_BLANK_LEN;
        let log = TimerLog::load(dir.path(), size).unwrap();
        log.recover(0, |_, _| {}).unwrap();
        for i in 0..6 {
            log.append(&unit(i)).unwrap();
        }
        // Units point at 0, 100 | 200, 300 | 400, 500.
        assert_eq!(log.delete_expired(250).unwrap(), 1);
        assert_eq!(log.min_offset(), size as u64);
        assert_eq!(log.delete_expired(10_000).unwrap(), 1);
        assert_eq!(log.delete_expired(10_000).unwrap(), 0);
    }
}
