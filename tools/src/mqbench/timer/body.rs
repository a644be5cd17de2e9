//! The body of an `mqbench timer` message: which run and which message it is, when it
//! is due and when it was sent, so the consumer can tell lateness, earliness, duplicates
//! and messages of other runs apart without any state shared with the producer.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | [`MAGIC`] `MQBTIMER` |
//! | 8 | 8 | run id (u64 LE) |
//! | 16 | 8 | index of the message in its run, `0..N` (u64 LE) |
//! | 24 | 8 | due time, epoch ms, as sent in `TIMER_DELIVER_MS` (i64 LE) |
//! | 32 | 8 | send time, epoch µs (i64 LE) |
//! | 40 | .. | filler `x` up to `--size` |

use bytes::{BufMut, Bytes, BytesMut};

/// First bytes of a timer body.
pub const MAGIC: &[u8; 8] = b"MQBTIMER";
/// Smallest timer body.
pub const MIN_SIZE: usize = 40;

/// What a timer body says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerStamp {
    /// The run it belongs to.
    pub run_id: u64,
    /// Its index in the run.
    pub index: u64,
    /// When it is due (epoch ms).
    pub due_ms: i64,
    /// When it was sent (epoch µs).
    pub sent_us: i64,
}

impl TimerStamp {
    /// A body of `size` bytes (at least [`MIN_SIZE`]).
    #[must_use]
    pub fn encode(&self, size: usize) -> Bytes {
        let mut b = BytesMut::with_capacity(size.max(MIN_SIZE));
        b.put_slice(MAGIC);
        b.put_u64_le(self.run_id);
        b.put_u64_le(self.index);
        b.put_i64_le(self.due_ms);
        b.put_i64_le(self.sent_us);
        b.resize(size.max(MIN_SIZE), b'x');
        b.freeze()
    }

    /// The stamp of a timer body; `None` for any other body.
    #[must_use]
    pub fn decode(body: &[u8]) -> Option<Self> {
        let rest = body.strip_prefix(MAGIC.as_slice())?;
        let word = |i: usize| -> Option<[u8; 8]> { rest.get(i * 8..i * 8 + 8)?.try_into().ok() };
        Some(TimerStamp {
            run_id: u64::from_le_bytes(word(0)?),
            index: u64::from_le_bytes(word(1)?),
            due_ms: i64::from_le_bytes(word(2)?),
            sent_us: i64::from_le_bytes(word(3)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn stamps_round_trip_and_other_bodies_have_none() {
        let s = TimerStamp {
            run_id: 7,
            index: 99_999,
            due_ms: 1_764_600_000_123,
            sent_us: 1_764_599_990_000_456,
        };
        let b = s.encode(128);
        assert_eq!(b.len(), 128);
        assert_eq!(TimerStamp::decode(&b), Some(s));
        assert_eq!(s.encode(1).len(), MIN_SIZE);
        assert_eq!(TimerStamp::decode(&b[..MIN_SIZE - 1]), None);
        assert_eq!(TimerStamp::decode(&[b'x'; 64]), None);
        assert_eq!(
            TimerStamp::decode(b"MQBSTAMP0123456789012345678901234567890123"),
            None
        );
    }

    proptest! {
        #[test]
        fn decoding_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut body = MAGIC.to_vec();
            body.extend(&bytes);
            let _ = TimerStamp::decode(&body);
            let _ = TimerStamp::decode(&bytes);
        }
    }
}
