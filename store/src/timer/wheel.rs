//! `timerwheel`: one file of [`Slot`]s, RocketMQ's `TimerWheel`. Slot `i` covers the
//! delivery times whose period (`time / precision`) is `i` modulo the slot count;
//! it points at the newest unit of the period in the timer log (the head of the
//! `prev_pos` list) and at the oldest.
//!
//! The slot count is fixed (two weeks of seconds, whatever the precision), so the file
//! is always 38 707 200 bytes, as RocketMQ's is. RocketMQ keeps a heap copy of the
//! whole file and copies it to the mapping once a second; sluice writes the mapping
//! itself, through aligned atomic words, so a `kill -9` loses no slot update and the
//! file is resident only where slots are used.

use std::path::Path;
use std::sync::atomic::Ordering;

use crate::error::Result;
use crate::mapped_file::MappedWords;
use crate::timer::slot::{SLOT_SIZE, Slot};

/// Days of one-second slots in the wheel (`TIMER_WHEEL_TTL_DAY`); the file holds
/// twice this many.
pub const TTL_DAYS: i64 = 7;
/// Slots of the wheel's half (`slotsTotal`): [`TTL_DAYS`] of seconds.
pub const SLOTS_TOTAL: i64 = TTL_DAYS * 24 * 3600;
/// Slots left between the read time and the write time's wrap (`TIMER_BLANK_SLOTS`).
pub const BLANK_SLOTS: i64 = 60;
/// Size of the `timerwheel` file.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "38 MB"
)]
pub const WHEEL_FILE_SIZE: usize = (SLOTS_TOTAL * 2) as usize * SLOT_SIZE;

/// The mapped wheel.
#[derive(Debug)]
pub struct TimerWheel {
    words: MappedWords,
    precision_ms: i64,
}

impl TimerWheel {
    /// Opens (or creates, sparse but reserved) `path`.
    ///
    /// # Errors
    /// The file has another size than [`WHEEL_FILE_SIZE`], or I/O fails.
    pub fn open(path: &Path, precision_ms: i64) -> Result<Self> {
        let words = if path.exists() {
            MappedWords::open(path, WHEEL_FILE_SIZE)?
        } else {
            let dir = path.parent().unwrap_or_else(|| Path::new("."));
            let name = path
                .file_name()
                .map_or_else(|| "timerwheel".into(), |n| n.to_string_lossy());
            std::fs::create_dir_all(dir)
                .map_err(|e| crate::error::StoreError::io("mkdir", dir, e))?;
            MappedWords::create(dir, &name, WHEEL_FILE_SIZE, WHEEL_FILE_SIZE)?
        };
        Ok(TimerWheel {
            words,
            precision_ms: precision_ms.max(1),
        })
    }

    /// The precision (ms) the wheel is indexed with.
    #[must_use]
    pub fn precision_ms(&self) -> i64 {
        self.precision_ms
    }

    /// The period of `time_ms`.
    #[must_use]
    pub fn period(&self, time_ms: i64) -> i64 {
        time_ms.div_euclid(self.precision_ms)
    }

    /// The start of the period of `time_ms`.
    #[must_use]
    pub fn period_start(&self, time_ms: i64) -> i64 {
        self.period(time_ms) * self.precision_ms
    }

    fn pos(&self, time_ms: i64) -> usize {
        let index = self.period(time_ms).rem_euclid(SLOTS_TOTAL * 2);
        usize::try_from(index).unwrap_or(0) * SLOT_SIZE
    }

    /// The raw slot where `time_ms` falls, whatever period it holds.
    #[must_use]
    pub fn raw_slot(&self, time_ms: i64) -> Slot {
        let at = self.pos(time_ms);
        let u64_at = |off: usize| {
            #[allow(clippy::cast_possible_wrap, reason = "Java longs")]
            let v = self
                .words
                .load_u64(at + off, Ordering::Acquire)
                .unwrap_or(0) as i64;
            v
        };
        let u32_at = |off: usize| {
            #[allow(clippy::cast_possible_wrap, reason = "Java ints")]
            let v = self
                .words
                .load_u32(at + off, Ordering::Acquire)
                .unwrap_or(0) as i32;
            v
        };
        Slot {
            period: u64_at(0),
            first_pos: u64_at(8),
            last_pos: u64_at(16),
            num: u32_at(24),
            magic: u32_at(28),
        }
    }

    /// The slot of `time_ms`'s period; empty (positions −1) when the wheel holds another
    /// period there (RocketMQ `getSlot`).
    #[must_use]
    pub fn slot(&self, time_ms: i64) -> Slot {
        let raw = self.raw_slot(time_ms);
        if raw.period == self.period(time_ms) {
            raw
        } else {
            Slot::empty(self.period(time_ms))
        }
    }

    /// Writes the slot of `time_ms`'s period.
    pub fn put(&self, time_ms: i64, first_pos: i64, last_pos: i64, num: i32, magic: i32) {
        let at = self.pos(time_ms);
        #[allow(clippy::cast_sign_loss, reason = "Java longs, stored as their bits")]
        {
            // The period last: a reader never pairs a new period with old positions.
            self.words
                .store_u64(at + 8, first_pos as u64, Ordering::Release);
            self.words
                .store_u64(at + 16, last_pos as u64, Ordering::Release);
            self.words.store_u32(at + 24, num as u32, Ordering::Release);
            self.words
                .store_u32(at + 28, magic as u32, Ordering::Release);
            self.words
                .store_u64(at, self.period(time_ms) as u64, Ordering::Release);
        }
    }

    /// Units in the periods from `from_ms` to `to_ms` (at most the whole wheel): RocketMQ's
    /// `getAllNum` scans the whole wheel; units are never filed further ahead than the
    /// roll window, so the caller bounds the scan there and the rest of the file is
    /// never touched.
    #[must_use]
    pub fn pending_between(&self, from_ms: i64, to_ms: i64) -> i64 {
        let first = self.period(from_ms);
        let periods = (self.period(to_ms) - first + 1).clamp(0, SLOTS_TOTAL * 2);
        (0..periods)
            .map(|i| {
                let t = (first + i) * self.precision_ms;
                let s = self.raw_slot(t);
                if s.period == first + i {
                    i64::from(s.num)
                } else {
                    0
                }
            })
            .sum()
    }

    /// Syncs the mapping.
    ///
    /// # Errors
    /// The sync failed.
    pub fn flush(&self) -> Result<()> {
        self.words.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_found_by_period_and_stale_periods_read_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timerwheel");
        let w = TimerWheel::open(&path, 1000).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 38_707_200);
        let t = 1_764_600_000_500;
        assert_eq!(w.slot(t).last_pos, -1);
        w.put(t, 52, 104, 2, 0);
        let s = w.slot(t - 500);
        assert_eq!(
            (s.period, s.first_pos, s.last_pos, s.num),
            (t / 1000, 52, 104, 2)
        );
        // Two weeks later the same slot index holds an old period: empty.
        let later = t + SLOTS_TOTAL * 2 * 1000;
        assert_eq!(w.slot(later).last_pos, -1);
        assert_eq!(w.raw_slot(later).last_pos, 104);
        assert_eq!(w.pending_between(t - 10_000, t), 2);
        assert_eq!(w.pending_between(t + 1000, t + 10_000), 0);
        drop(w);
        let w = TimerWheel::open(&path, 1000).unwrap();
        assert_eq!(w.slot(t).num, 2);
        // Big-endian, RocketMQ's layout: the period at the slot's start.
        let bytes = std::fs::read(&path).unwrap();
        let at = usize::try_from((t / 1000) % (SLOTS_TOTAL * 2)).unwrap() * SLOT_SIZE;
        assert_eq!(Slot::decode(&bytes[at..]).unwrap(), w.slot(t));
    }

    #[test]
    fn a_wheel_of_another_size_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timerwheel");
        std::fs::write(&path, [0u8; 64]).unwrap();
        assert!(TimerWheel::open(&path, 1000).is_err());
    }
}
