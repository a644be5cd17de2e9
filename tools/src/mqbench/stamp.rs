//! Microsecond send stamps in message bodies (`mqbench producer --stamp`): the born
//! timestamp clients put in a message has millisecond resolution, too coarse for
//! end-to-end latencies around a millisecond. A stamped body starts with [`MAGIC`] and
//! the send time in microseconds since the Unix epoch (little endian), then filler.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{BufMut, Bytes, BytesMut};

/// First bytes of a stamped body.
pub const MAGIC: &[u8; 8] = b"MQBSTAMP";
/// Smallest stamped body: the magic and the stamp.
pub const MIN_SIZE: usize = 16;

/// Now, in microseconds since the Unix epoch.
#[must_use]
pub fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// A body of `size` bytes (at least [`MIN_SIZE`]) stamped with `micros`.
#[must_use]
pub fn stamped(size: usize, micros: i64) -> Bytes {
    let mut b = BytesMut::with_capacity(size.max(MIN_SIZE));
    b.put_slice(MAGIC);
    b.put_i64_le(micros);
    b.resize(size.max(MIN_SIZE), b'x');
    b.freeze()
}

/// The stamp of a stamped body.
#[must_use]
pub fn read(body: &[u8]) -> Option<i64> {
    let rest = body.strip_prefix(MAGIC.as_slice())?;
    let stamp: [u8; 8] = rest.get(..8)?.try_into().ok()?;
    Some(i64::from_le_bytes(stamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip_and_plain_bodies_have_none() {
        let b = stamped(1024, 1_700_000_000_123_456);
        assert_eq!(b.len(), 1024);
        assert_eq!(read(&b), Some(1_700_000_000_123_456));
        assert_eq!(stamped(4, 7).len(), MIN_SIZE);
        assert_eq!(read(&[b'x'; 64]), None);
        assert_eq!(read(b"MQBSTAMP123"), None);
    }
}
