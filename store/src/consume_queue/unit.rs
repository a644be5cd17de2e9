//! The consume-queue unit codec (sans-io): 20 bytes per message.

/// Size of one unit (RocketMQ `CQ_STORE_UNIT_SIZE`).
pub const CQ_STORE_UNIT_SIZE: usize = 20;
/// `size` of a blank unit (`Integer.MAX_VALUE`).
pub const BLANK_UNIT_SIZE: i32 = i32::MAX;

/// One consume-queue unit.
///
/// | off | size | field |
/// |---|---|---|
/// | 0 | 8 | commitLogOffset: i64 BE, where the record starts |
/// | 8 | 4 | size: i32 BE, the record's TOTALSIZE |
/// | 12 | 8 | tagsCode: i64 BE, Java `String.hashCode()` of TAGS (0 if none), or the deliver time for `SCHEDULE_TOPIC_XXXX` |
///
/// A blank unit is `(0, Integer.MAX_VALUE, 0)`; an all-zero unit is not written yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CqUnit {
    /// CommitLog offset of the record.
    pub commit_log_offset: u64,
    /// Record size.
    pub size: u32,
    /// Tags code.
    pub tags_code: i64,
}

/// What the 20 bytes at one queue offset hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CqSlot {
    /// A message.
    Unit(CqUnit),
    /// A blank placeholder (before the first unit of a queue that starts mid-stream).
    Blank,
    /// Nothing written (size ≤ 0 or a negative offset): the end of the queue.
    Empty,
}

impl CqUnit {
    /// The 20 bytes of this unit.
    #[must_use]
    pub fn encode(&self) -> [u8; CQ_STORE_UNIT_SIZE] {
        encode_raw(
            self.commit_log_offset as i64,
            self.size as i32,
            self.tags_code,
        )
    }

    /// Offset just past the record.
    #[must_use]
    pub fn end(&self) -> u64 {
        self.commit_log_offset + u64::from(self.size)
    }
}

fn encode_raw(offset: i64, size: i32, tags_code: i64) -> [u8; CQ_STORE_UNIT_SIZE] {
    let mut out = [0u8; CQ_STORE_UNIT_SIZE];
    out[..8].copy_from_slice(&offset.to_be_bytes());
    out[8..12].copy_from_slice(&size.to_be_bytes());
    out[12..].copy_from_slice(&tags_code.to_be_bytes());
    out
}

/// The bytes of a blank unit.
#[must_use]
pub fn encode_blank() -> [u8; CQ_STORE_UNIT_SIZE] {
    encode_raw(0, BLANK_UNIT_SIZE, 0)
}

/// Decodes the unit at the start of `b`; `None` if `b` is shorter than 20 bytes.
#[must_use]
pub fn decode(b: &[u8]) -> Option<CqSlot> {
    let b = b.get(..CQ_STORE_UNIT_SIZE)?;
    let offset = i64::from_be_bytes(b[..8].try_into().ok()?);
    let size = i32::from_be_bytes(b[8..12].try_into().ok()?);
    let tags_code = i64::from_be_bytes(b[12..].try_into().ok()?);
    Some(if offset < 0 || size <= 0 {
        CqSlot::Empty
    } else if size == BLANK_UNIT_SIZE {
        CqSlot::Blank
    } else {
        CqSlot::Unit(CqUnit {
            commit_log_offset: offset as u64,
            size: size as u32,
            tags_code,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn unit_layout_and_blank() {
        let u = CqUnit {
            commit_log_offset: 0x0102_0304_0506_0708,
            size: 0x1122_3344,
            tags_code: -1,
        };
        let b = u.encode();
        assert_eq!(&b[..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&b[8..12], &[0x11, 0x22, 0x33, 0x44]);
        assert_eq!(&b[12..], &[0xFF; 8]);
        assert_eq!(decode(&b), Some(CqSlot::Unit(u)));
        assert_eq!(decode(&encode_blank()), Some(CqSlot::Blank));
        assert_eq!(&encode_blank()[8..12], &[0x7F, 0xFF, 0xFF, 0xFF]);
        assert_eq!(decode(&[0u8; 20]), Some(CqSlot::Empty));
        assert_eq!(decode(&[0u8; 19]), None);
    }

    proptest! {
        #[test]
        fn decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&b);
        }

        #[test]
        fn unit_roundtrip(phy in 0u64..i64::MAX as u64, size in 1u32..i32::MAX as u32, tags in any::<i64>()) {
            let u = CqUnit { commit_log_offset: phy, size, tags_code: tags };
            prop_assert_eq!(decode(&u.encode()), Some(CqSlot::Unit(u)));
        }

    }
}
