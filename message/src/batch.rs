//! The SEND_BATCH_MESSAGE body (`MessageDecoder.encodeMessages`): tools encode it, the
//! store splits it into one record per entry. Messages back to back, each:
//!
//! | off | size | field |
//! |---|---|---|
//! | 0 | 4 | TOTALSIZE = 22 + bodyLen + propLen (this field included; not relied upon) |
//! | 4 | 4 | MAGICCODE, 0 |
//! | 8 | 4 | BODYCRC, 0 (the broker computes it) |
//! | 12 | 4 | FLAG |
//! | 16 | 4 | bodyLen, then the body (never compressed in a batch) |
//! | 20+bodyLen | 2 | propLen, then the properties string ([`crate::properties`]) |
//!
//! [`decode`] reads it as RocketMQ 4.9's broker does (TOTALSIZE, MAGICCODE and BODYCRC
//! skipped), without copying: entries are ranges into the body, which the put path
//! encodes straight into the CommitLog.

use std::ops::Range;

use bytes::{BufMut, BytesMut};
use thiserror::Error;

use crate::properties::PROPERTY_SEPARATOR;
use crate::record::{MAX_PROPERTIES_LEN, body_crc};

/// Fixed bytes of one entry besides body and properties.
pub const ENTRY_OVERHEAD: usize = 22;

/// One message of a batch to encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchEntry<'a> {
    /// User flag.
    pub flag: i32,
    /// Body.
    pub body: &'a [u8],
    /// Its own properties string (UNIQ_KEY, KEYS, TAGS, WAIT, ...).
    pub properties: &'a str,
}

/// A batch entry that cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BatchEncodeError {
    /// Properties over 32 767 bytes.
    #[error("properties of batch entry {index} are {len} bytes, more than {MAX_PROPERTIES_LEN}")]
    PropertiesTooLong {
        /// Entry index.
        index: usize,
        /// Their length.
        len: usize,
    },
    /// An entry larger than an int32 can say.
    #[error("batch entry {index} is too large")]
    TooLarge {
        /// Entry index.
        index: usize,
    },
}

/// The exact encoded size of `entries`.
#[must_use]
pub fn encoded_len(entries: &[BatchEntry<'_>]) -> usize {
    entries
        .iter()
        .map(|e| ENTRY_OVERHEAD + e.body.len() + e.properties.len())
        .sum()
}

/// Appends the batch body for `entries` to `buf`; `buf` is unchanged on error.
///
/// # Errors
/// An entry's properties are longer than 32 767 bytes or the entry exceeds `i32::MAX`.
pub fn encode(entries: &[BatchEntry<'_>], buf: &mut BytesMut) -> Result<(), BatchEncodeError> {
    let mut sizes = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let len = entry.properties.len();
        let prop_len = u16::try_from(len)
            .ok()
            .filter(|l| usize::from(*l) <= MAX_PROPERTIES_LEN)
            .ok_or(BatchEncodeError::PropertiesTooLong { index, len })?;
        let total = i32::try_from(ENTRY_OVERHEAD + entry.body.len() + len)
            .map_err(|_| BatchEncodeError::TooLarge { index })?;
        let body_len =
            i32::try_from(entry.body.len()).map_err(|_| BatchEncodeError::TooLarge { index })?;
        sizes.push((total, body_len, prop_len));
    }
    buf.reserve(encoded_len(entries));
    for (entry, (total, body_len, prop_len)) in entries.iter().zip(sizes) {
        buf.put_i32(total);
        buf.put_i32(0);
        buf.put_i32(0);
        buf.put_i32(entry.flag);
        buf.put_i32(body_len);
        buf.put_slice(entry.body);
        buf.put_u16(prop_len);
        buf.put_slice(entry.properties.as_bytes());
    }
    Ok(())
}

/// One entry of a decoded batch body: ranges into the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntrySpan {
    /// FLAG.
    pub flag: i32,
    /// Where its body is.
    pub body: Range<usize>,
    /// Where its properties string is.
    pub properties: Range<usize>,
    /// CRC of its body ([`body_crc`]), computed here, outside the put lock.
    pub body_crc: u32,
    /// Whether a separator goes between the entry's properties and the batch's.
    pub separator: bool,
}

/// Why a batch body was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BatchDecodeError {
    /// An entry's lengths run past the body, or are negative.
    #[error("a batch entry's lengths run past the body")]
    Malformed,
    /// An entry's properties plus the batch's exceed 32767 bytes.
    #[error("a batch entry's properties and the batch's exceed {MAX_PROPERTIES_LEN} bytes")]
    PropertiesTooLong,
    /// No entries.
    #[error("empty batch")]
    Empty,
}

/// Splits a batch body into entries. Each entry's record gets the entry's properties,
/// then a separator if needed, then the batch's own (`batch_props_len` bytes, e.g.
/// `CLUSTER`), as RocketMQ 4.9 does; `separator` says whether it is needed.
///
/// # Errors
/// See [`BatchDecodeError`].
pub fn decode(body: &[u8], batch_props_len: usize) -> Result<Vec<EntrySpan>, BatchDecodeError> {
    let mut entries = Vec::new();
    let mut pos = 0usize;
    let field = |pos: usize, n: usize| {
        pos.checked_add(n)
            .and_then(|end| body.get(pos..end))
            .ok_or(BatchDecodeError::Malformed)
    };
    let int = |pos: usize| -> Result<i32, BatchDecodeError> {
        let b = field(pos, 4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    while pos < body.len() {
        // TOTALSIZE, MAGICCODE, BODYCRC are skipped, as RocketMQ does.
        let flag = int(pos + 12)?;
        let body_len = usize::try_from(int(pos + 16)?).map_err(|_| BatchDecodeError::Malformed)?;
        let body_start = pos + 20;
        let b = field(body_start, body_len)?;
        let props_pos = body_start + body_len;
        let len = field(props_pos, 2)?;
        let props_len = usize::try_from(i16::from_be_bytes([len[0], len[1]]))
            .map_err(|_| BatchDecodeError::Malformed)?;
        let props_start = props_pos + 2;
        let p = field(props_start, props_len)?;
        let separator =
            props_len > 0 && batch_props_len > 0 && p.last() != Some(&(PROPERTY_SEPARATOR as u8));
        if props_len + usize::from(separator) + batch_props_len > MAX_PROPERTIES_LEN {
            return Err(BatchDecodeError::PropertiesTooLong);
        }
        entries.push(EntrySpan {
            flag,
            body: body_start..body_start + body_len,
            properties: props_start..props_start + props_len,
            body_crc: body_crc(b),
            separator,
        });
        pos = props_start + props_len;
    }
    if entries.is_empty() {
        return Err(BatchDecodeError::Empty);
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encoded(entries: &[BatchEntry<'_>]) -> Vec<u8> {
        let mut buf = BytesMut::new();
        encode(entries, &mut buf).unwrap();
        buf.to_vec()
    }

    fn entry<'a>(flag: i32, body: &'a [u8], properties: &'a str) -> BatchEntry<'a> {
        BatchEntry {
            flag,
            body,
            properties,
        }
    }

    #[test]
    fn golden_layout() {
        let e = entry(7, b"hi", "WAIT\u{1}true");
        let buf = encoded(&[e, e]);
        let one: Vec<u8> = [
            &[0, 0, 0, 33][..], // 22 + 2 + 9
            &[0, 0, 0, 0],      // magic
            &[0, 0, 0, 0],      // crc
            &[0, 0, 0, 7],      // flag
            &[0, 0, 0, 2],      // body length
            b"hi",
            &[0, 9],
            b"WAIT\x01true",
        ]
        .concat();
        assert_eq!(buf, [one.clone(), one].concat());
        assert_eq!(encoded_len(&[e, e]), buf.len());
        let spans = decode(&buf, 0).unwrap();
        assert_eq!(spans.len(), 2);
        assert_eq!(
            spans[1],
            EntrySpan {
                flag: 7,
                body: 53..55,
                properties: 57..66,
                body_crc: body_crc(b"hi"),
                separator: false,
            }
        );
    }

    #[test]
    fn batch_roundtrip_and_separator_rule() {
        let body = encoded(&[
            entry(1, b"one", "TAGS\u{1}a"),
            entry(2, b"", ""),
            entry(3, b"3", "K\u{1}v\u{2}"),
        ]);
        let e = decode(&body, 10).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(&body[e[0].body.clone()], b"one");
        assert_eq!(e[0].flag, 1);
        assert!(e[0].separator);
        assert!(!e[1].separator, "no entry properties, no separator");
        assert!(!e[2].separator, "already ends with a separator");
        assert_eq!(e[0].body_crc, body_crc(b"one"));
        assert!(!decode(&body, 0).unwrap()[0].separator);
    }

    #[test]
    fn malformed_batches_are_refused() {
        let body = encoded(&[entry(1, b"one", "")]);
        for cut in 1..body.len() {
            assert_eq!(
                decode(&body[..cut], 0),
                Err(BatchDecodeError::Malformed),
                "cut {cut}"
            );
        }
        assert_eq!(decode(&[], 0), Err(BatchDecodeError::Empty));
        let mut neg = body.clone();
        neg[16..20].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(decode(&neg, 0), Err(BatchDecodeError::Malformed));
        // The batch's properties count against the limit of each entry's.
        let body = encoded(&[entry(1, b"", "K\u{1}v")]);
        assert!(decode(&body, MAX_PROPERTIES_LEN - 4).is_ok());
        assert_eq!(
            decode(&body, MAX_PROPERTIES_LEN - 3),
            Err(BatchDecodeError::PropertiesTooLong)
        );
    }

    #[test]
    fn too_long_properties_leave_buffer_alone() {
        let props = format!("K\u{1}{}", "v".repeat(40_000));
        let mut buf = BytesMut::from(&b"x"[..]);
        assert!(matches!(
            encode(&[entry(0, b"", &props)], &mut buf),
            Err(BatchEncodeError::PropertiesTooLong { index: 0, .. })
        ));
        assert_eq!(&buf[..], b"x");
    }

    proptest! {
        #[test]
        fn round_trip(entries in proptest::collection::vec(
            (any::<i32>(), proptest::collection::vec(any::<u8>(), 0..64), "[^\u{1}\u{2}]{1,6}\u{1}[^\u{1}\u{2}]{1,10}"),
            1..6,
        )) {
            let batch: Vec<BatchEntry<'_>> =
                entries.iter().map(|(flag, body, props)| entry(*flag, body, props)).collect();
            let buf = encoded(&batch);
            let spans = decode(&buf, 0).unwrap();
            prop_assert_eq!(spans.len(), batch.len());
            for (span, e) in spans.iter().zip(&batch) {
                prop_assert_eq!(span.flag, e.flag);
                prop_assert_eq!(&buf[span.body.clone()], e.body);
                prop_assert_eq!(&buf[span.properties.clone()], e.properties.as_bytes());
            }
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128), props in 0..40_000usize) {
            let _ = decode(&bytes, props);
        }
    }
}
