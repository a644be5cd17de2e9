//! One slot of `timerwheel` (RocketMQ `Slot`): big-endian, 32 bytes.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | the slot's time divided by `timerPrecisionMs` (its period number) |
//! | 8 | 8 | first unit's position in the timer log (−1: none) |
//! | 16 | 8 | last unit's position (the head of the `prev_pos` list) |
//! | 24 | 4 | number of units |
//! | 28 | 4 | magic (reserved) |

/// Bytes per slot.
pub const SLOT_SIZE: usize = 32;

/// One decoded slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// The slot's period: its time divided by `timerPrecisionMs`, as RocketMQ stores it
    /// (5.x kept 4.x's seconds when precision became configurable). A slot whose period
    /// is not the one looked up is empty.
    pub period: i64,
    /// First unit's position (−1: none).
    pub first_pos: i64,
    /// Last unit's position (−1: none).
    pub last_pos: i64,
    /// Units in the slot.
    pub num: i32,
    /// Reserved.
    pub magic: i32,
}

impl Slot {
    /// An empty slot of `period`.
    #[must_use]
    pub fn empty(period: i64) -> Self {
        Slot {
            period,
            first_pos: -1,
            last_pos: -1,
            num: 0,
            magic: 0,
        }
    }

    /// The 32 bytes of the slot.
    #[must_use]
    pub fn encode(&self) -> [u8; SLOT_SIZE] {
        let mut b = [0u8; SLOT_SIZE];
        b[0..8].copy_from_slice(&self.period.to_be_bytes());
        b[8..16].copy_from_slice(&self.first_pos.to_be_bytes());
        b[16..24].copy_from_slice(&self.last_pos.to_be_bytes());
        b[24..28].copy_from_slice(&self.num.to_be_bytes());
        b[28..32].copy_from_slice(&self.magic.to_be_bytes());
        b
    }

    /// The slot at the start of `bytes`; `None` when fewer than [`SLOT_SIZE`] bytes.
    #[must_use]
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let b: &[u8; SLOT_SIZE] = bytes.get(..SLOT_SIZE)?.try_into().ok()?;
        let i64_at = |at: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[at..at + 8]);
            i64::from_be_bytes(x)
        };
        let i32_at = |at: usize| {
            let mut x = [0u8; 4];
            x.copy_from_slice(&b[at..at + 4]);
            i32::from_be_bytes(x)
        };
        Some(Slot {
            period: i64_at(0),
            first_pos: i64_at(8),
            last_pos: i64_at(16),
            num: i32_at(24),
            magic: i32_at(28),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_slot_has_the_java_layout() {
        let s = Slot {
            period: 1_764_600_000,
            first_pos: 52,
            last_pos: 104,
            num: 2,
            magic: 0,
        };
        let b = s.encode();
        assert_eq!(&b[8..16], &52i64.to_be_bytes());
        assert_eq!(&b[16..24], &104i64.to_be_bytes());
        assert_eq!(&b[24..28], &2i32.to_be_bytes());
        assert_eq!(Slot::decode(&b), Some(s));
        assert_eq!(Slot::decode(&b[..31]), None);
        assert_eq!(Slot::empty(5).first_pos, -1);
    }

    proptest! {
        #[test]
        fn slots_round_trip(t in any::<i64>(), f in any::<i64>(), l in any::<i64>(), n in any::<i32>(), m in any::<i32>()) {
            let s = Slot { period: t, first_pos: f, last_pos: l, num: n, magic: m };
            prop_assert_eq!(Slot::decode(&s.encode()), Some(s));
        }
    }
}
