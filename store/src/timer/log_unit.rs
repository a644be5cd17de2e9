//! One unit of `timerlog/` (RocketMQ `TimerLog`): big-endian, 52 bytes.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | size (52) |
//! | 4 | 8 | prev pos: the slot's previous unit, −1 for none |
//! | 12 | 4 | magic: [`MAGIC_DEFAULT`] \| [`MAGIC_ROLL`] \| [`MAGIC_DELETE`] |
//! | 16 | 8 | write time (ms) the unit was written at |
//! | 24 | 4 | delayed time: delivery time − write time (ms) |
//! | 28 | 8 | CommitLog offset of the timer message |
//! | 36 | 4 | its size |
//! | 40 | 4 | hash code of its real topic (metrics) |
//! | 44 | 8 | reserved |
//!
//! A file's tail too short for a unit plus a blank holds a blank record: its length
//! (4), 8 bytes of zero, [`BLANK_MAGIC`] (4).

/// Bytes per unit.
pub const UNIT_SIZE: usize = 52;
/// Bytes of a blank record's header.
pub const MIN_BLANK_LEN: usize = 4 + 8 + 4;
/// The blank record's magic (`0xBBCCDDEE ^ (1880681586 + 8)` as Java computes it on ints).
#[allow(clippy::cast_possible_wrap, reason = "Java's int literal 0xBBCCDDEE")]
pub const BLANK_MAGIC: i32 = (0xBBCC_DDEE_u32 as i32) ^ (1_880_681_586 + 8);
/// An ordinary unit.
pub const MAGIC_DEFAULT: i32 = 1;
/// The message is parked again (its delay is beyond the roll window).
pub const MAGIC_ROLL: i32 = 1 << 1;
/// A recall: the unit cancels an earlier one of the same message.
pub const MAGIC_DELETE: i32 = 1 << 2;

/// Whether a unit with `magic` is a recall marker (delete, not rolled): it is never
/// delivered, it removes the message it names from its slot.
#[must_use]
pub fn is_recall_marker(magic: i32) -> bool {
    magic & MAGIC_DELETE != 0 && magic & MAGIC_ROLL == 0
}

/// One decoded unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerLogUnit {
    /// The slot's previous unit (its position in the timer log), −1 for none.
    pub prev_pos: i64,
    /// [`MAGIC_DEFAULT`], [`MAGIC_ROLL`], [`MAGIC_DELETE`] bits.
    pub magic: i32,
    /// When the unit was written (ms).
    pub write_time_ms: i64,
    /// Delivery time minus write time (ms).
    pub delayed_ms: i32,
    /// CommitLog offset of the timer message.
    pub commit_log_offset: i64,
    /// Its size in the CommitLog.
    pub size: i32,
    /// Hash code of its real topic.
    pub topic_hash: i32,
    /// Reserved (0).
    pub reserved: i64,
}

/// Why bytes are not a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnitError {
    /// Fewer than [`UNIT_SIZE`] bytes.
    #[error("timer log unit cut short: {0} bytes")]
    Short(usize),
    /// The size field is not [`UNIT_SIZE`] (and it is not a blank).
    #[error("timer log unit of size {0}")]
    BadSize(i32),
}

/// What is at a position of the timer log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// A unit.
    Unit(TimerLogUnit),
    /// The blank end of a file, this many bytes long.
    Blank(i32),
}

impl TimerLogUnit {
    /// The delivery time (ms).
    #[must_use]
    pub fn delivery_ms(&self) -> i64 {
        self.write_time_ms + i64::from(self.delayed_ms)
    }

    /// The 52 bytes of the unit.
    #[must_use]
    pub fn encode(&self) -> [u8; UNIT_SIZE] {
        let mut b = [0u8; UNIT_SIZE];
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_possible_wrap,
            reason = "52"
        )]
        b[0..4].copy_from_slice(&(UNIT_SIZE as i32).to_be_bytes());
        b[4..12].copy_from_slice(&self.prev_pos.to_be_bytes());
        b[12..16].copy_from_slice(&self.magic.to_be_bytes());
        b[16..24].copy_from_slice(&self.write_time_ms.to_be_bytes());
        b[24..28].copy_from_slice(&self.delayed_ms.to_be_bytes());
        b[28..36].copy_from_slice(&self.commit_log_offset.to_be_bytes());
        b[36..40].copy_from_slice(&self.size.to_be_bytes());
        b[40..44].copy_from_slice(&self.topic_hash.to_be_bytes());
        b[44..52].copy_from_slice(&self.reserved.to_be_bytes());
        b
    }
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    i32::from_be_bytes(x)
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(x)
}

/// Decodes the entry at the start of `bytes`.
///
/// # Errors
/// Too short, or a size that is neither a unit's nor a blank's.
pub fn decode(bytes: &[u8]) -> Result<Entry, UnitError> {
    if bytes.len() >= MIN_BLANK_LEN && i32_at(bytes, 12) == BLANK_MAGIC {
        return Ok(Entry::Blank(i32_at(bytes, 0)));
    }
    if bytes.len() < UNIT_SIZE {
        return Err(UnitError::Short(bytes.len()));
    }
    let size = i32_at(bytes, 0);
    if usize::try_from(size).ok() != Some(UNIT_SIZE) {
        return Err(UnitError::BadSize(size));
    }
    Ok(Entry::Unit(TimerLogUnit {
        prev_pos: i64_at(bytes, 4),
        magic: i32_at(bytes, 12),
        write_time_ms: i64_at(bytes, 16),
        delayed_ms: i32_at(bytes, 24),
        commit_log_offset: i64_at(bytes, 28),
        size: i32_at(bytes, 36),
        topic_hash: i32_at(bytes, 40),
        reserved: i64_at(bytes, 44),
    }))
}

/// The blank record that ends a file with `len` bytes left.
#[must_use]
pub fn encode_blank(len: i32) -> [u8; MIN_BLANK_LEN] {
    let mut b = [0u8; MIN_BLANK_LEN];
    b[0..4].copy_from_slice(&len.to_be_bytes());
    b[12..16].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
    b
}

/// Where the last unit of a `file_size` file can start (RocketMQ's
/// `getOffsetForLastUnit`: room is always left for a blank).
#[must_use]
pub fn offset_for_last_unit(file_size: usize) -> Option<usize> {
    let usable = file_size.checked_sub(MIN_BLANK_LEN)?;
    (file_size - usable % UNIT_SIZE)
        .checked_sub(MIN_BLANK_LEN)?
        .checked_sub(UNIT_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn unit() -> TimerLogUnit {
        TimerLogUnit {
            prev_pos: -1,
            magic: MAGIC_DEFAULT | MAGIC_ROLL,
            write_time_ms: 1_764_600_000_000,
            delayed_ms: 10_000,
            commit_log_offset: 0x0102_0304_0506,
            size: 321,
            topic_hash: -7,
            reserved: 0,
        }
    }

    #[test]
    fn a_unit_has_the_java_layout() {
        let b = unit().encode();
        assert_eq!(&b[0..4], &52i32.to_be_bytes());
        assert_eq!(&b[4..12], &(-1i64).to_be_bytes());
        assert_eq!(&b[12..16], &3i32.to_be_bytes());
        assert_eq!(&b[24..28], &10_000i32.to_be_bytes());
        assert_eq!(&b[28..36], &0x0102_0304_0506i64.to_be_bytes());
        assert_eq!(&b[36..40], &321i32.to_be_bytes());
        assert_eq!(decode(&b), Ok(Entry::Unit(unit())));
        assert_eq!(unit().delivery_ms(), 1_764_600_010_000);
    }

    #[test]
    fn blanks_and_the_last_unit_offset_match_rocketmq() {
        // Java: 0xBBCCDDEE ^ 1880681594 on ints.
        assert_eq!(BLANK_MAGIC, -1_144_201_746 ^ 1_880_681_594);
        assert_eq!(decode(&encode_blank(40)), Ok(Entry::Blank(40)));
        // RocketMQ's default timerlog file: 100 MiB.
        let size = 100 * 1024 * 1024;
        let last = offset_for_last_unit(size).unwrap();
        assert_eq!(last, size - (size - 16) % 52 - 16 - 52);
        assert!(last + UNIT_SIZE + MIN_BLANK_LEN <= size);
        assert_eq!(offset_for_last_unit(10), None);
    }

    proptest! {
        #[test]
        fn units_round_trip_and_garbage_never_panics(
            prev in any::<i64>(), magic in any::<i32>(), t in any::<i64>(), d in any::<i32>(),
            off in any::<i64>(), size in any::<i32>(), hash in any::<i32>(),
            garbage in proptest::collection::vec(any::<u8>(), 0..80),
        ) {
            let u = TimerLogUnit {
                prev_pos: prev, magic, write_time_ms: t, delayed_ms: d,
                commit_log_offset: off, size, topic_hash: hash, reserved: 0,
            };
            if magic != BLANK_MAGIC {
                prop_assert_eq!(decode(&u.encode()), Ok(Entry::Unit(u)));
            }
            let _ = decode(&garbage);
            let _ = offset_for_last_unit(garbage.len());
        }
    }
}
